"""Shared fixtures: a fresh loopback replay server per test (starting and stopping one
takes a few milliseconds), and a hermetic environment: no provider key or cloud setting of
the machine running the suite reaches a test (each test sets what it needs), and no proxy
variable of the machine reaches this process or what it starts (every test talks to
127.0.0.1; a peer SDK, Node or a subprocess would send it to a corporate proxy; the tests
of proxies set their own).

Also the order ``--dist loadfile`` hands the files out in (see :data:`LONGEST_FIRST`)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


def _rewrite_asserts_of_the_tests_only() -> None:
    """pytest rewrites the asserts of every package that ships a pytest plugin (an entry
    point), not only of the plugin: all of dshstream (150 modules; its plugin is the
    cassette one), Hypothesis and AnyIO, on every run when ``PYTHONDONTWRITEBYTECODE`` is
    set (no rewritten ``.pyc`` is kept), about 3 s per xdist worker at collection. Their
    asserts are internal invariants, never a test's; the tests themselves, ``conftest.py``
    files and the plugin modules already loaded stay rewritten. Run before anything below
    imports dshstream's modules; a pytest without this (private) set is left alone."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if isinstance(marked, set) and isinstance(cache, dict):
            marked.difference_update({"dshstream", "hypothesis", "anyio"})
            cache.clear()


_rewrite_asserts_of_the_tests_only()

from dshstream._core.dialects import DIALECTS  # noqa: E402 - after the rewrite hook is told
from dshstream._replay_server import ReplayServer  # noqa: E402

_PROVIDER_VARIABLES = {
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_AD_TOKEN",
    "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "ANTHROPIC_AWS_API_KEY", "ANTHROPIC_AWS_WORKSPACE_ID", "ANTHROPIC_AWS_BASE_URL",
    "DSHSTREAM_DEBUG",
} | {d.key_env for d in DIALECTS.values() if d.key_env}


# At import, before any fixture starts a server or a subprocess (module-scoped ones too).
for _name in [name for name in os.environ if name.lower().endswith("_proxy")]:
    del os.environ[_name]


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in _PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # gcloud's application-default login is found through this (else ~/.config/gcloud)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.getbasetemp() / "no-gcloud"))
    # and the AWS profile through these (else ~/.aws/credentials and ~/.aws/config)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path_factory.getbasetemp() / "no-aws" / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path_factory.getbasetemp() / "no-aws" / "config"))


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """A :class:`ReplayServer` on 127.0.0.1 with no routes; add them with ``server.add``."""
    with ReplayServer() as srv:
        yield srv


# --------------------------------------------------------------------------- loadfile order

#: ``-n 2 --dist loadfile`` (the README's command) hands out one file at a time, by
#: default the files with the most tests first, so a slow file with few tests (a LiteLLM
#: import, subprocesses, a Jupyter kernel) would start last and end long after the other
#: worker. These are handed out first, longest first (a few seconds each or more on two
#: cores); every other file follows in xdist's own order. Only the order changes: each
#: file still runs whole, on one worker.
LONGEST_FIRST = (
    "tests/service/test_ray_data.py",
    "tests/adapters/test_litellm.py",
    "tests/robustness/test_fuzz.py",
    "tests/robustness/test_size_bounds.py",
    "tests/robustness/test_every_field.py",
    "tests/surface/test_examples.py",
    "tests/robustness/test_corpus.py",
    "tests/cli/test_terminal.py",
    "tests/cli/test_cli.py",
    "tests/robustness/test_faults.py",
    "tests/cli/test_model_server_script.py",
    "tests/cli/test_notebook.py",
    "tests/surface/test_vendoring.py",
    "tests/adapters/test_credentials.py",
    "tests/core/test_sse.py",
    "tests/core/test_partial_json.py",
    "tests/surface/test_public_api.py",
    "tests/transport/test_http.py",
    "tests/transport/test_websocket.py",
)
#: Files handed out with another file as one unit (one worker runs them one after the
#: other), because they import what it imports: LiteLLM (seconds to import) and the
#: official SDKs' request types, then imported once, not once per worker.
SAME_WORKER = {
    "tests/adapters/test_litellm_boundaries.py": "tests/adapters/test_litellm.py",
    "tests/adapters/test_media_requests.py": "tests/adapters/test_litellm.py",
    "tests/adapters/test_key_pool.py": "tests/adapters/test_litellm.py",  # its LiteLLM pool test
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` in the order above; any other mode is xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    base: Any = importlib.import_module("xdist.scheduler").LoadFileScheduling

    class LongestFirst(base):  # type: ignore[misc]  # xdist ships no types: base is Any
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            scope: str = super()._split_scope(nodeid)
            return SAME_WORKER.get(scope, scope)

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ordered:  # the work queue is complete at the first assignment
                self.ordered = True
                rank = {scope: i for i, scope in enumerate(LONGEST_FIRST)}
                units = sorted(self.workqueue.items(), key=lambda unit: rank.get(unit[0], len(rank)))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return LongestFirst(config, log)
