"""The pytest plugin: one cassette per test — recorded once against the real provider,
replayed offline, deterministically, on the recorded bytes, ever after.

Contract: registered through the ``pytest11`` entry point ``dshstream`` (or ``-p
dshstream._pytest_plugin``); inert unless a test asks: importing it imports nothing of the
package, and a test that neither requests the fixture nor carries the marker is not
touched.

1. **Asked for by a test.** The ``dshstream_cassette`` fixture yields the
   :class:`~dshstream._cassettes.session.Cassette` in use for the test (its
   ``interactions``, ``misses``, ``unused``); the ``dshstream_cassette`` marker uses the
   fixture for the test it marks, and configures it:
   ``@pytest.mark.dshstream_cassette(name=None, *, match_on=("method", "url", "body"),
   redact_fields=(), timing=False, record=None)``. A wrong marker argument fails the test
   at setup, naming it. The cassette is in use from the test's setup (before its other
   fixtures, which may make requests) to its teardown, for every thread of the process.
2. **One file per test.** ``<the test file's directory>/cassettes/<module>/<test>.json``
   (a class's test is ``<Class>.<test>``; a parametrized one keeps its id; characters
   other than letters, digits, ``_``, ``.`` and ``-`` become ``_``); ``name`` picks another
   file name in that directory (tests may share one); the ini option
   ``dshstream_cassette_dir`` replaces ``cassettes`` (a path relative to the test file's
   directory).
3. **Replay unless asked to record.** ``--dshstream-record``, ``DSHSTREAM_RECORD=1`` or
   the marker's ``record=True`` records: real requests go through and the test's cassette
   is written when it ends. With ``pytest-xdist`` each worker records and replays the
   files of the tests it runs (one file per test: workers never write the same file
   unless tests share a ``name``; writes are atomic either way).
4. **Loud failures.** A request the cassette cannot answer — no cassette, a request that
   changed — fails the test (in its call phase, even if the code under test swallowed the
   failure), with the request, why nothing matched, and the command that records it again:
   ``python -m pytest --dshstream-record '<the test's node id>'``. When the test failed
   anyway, the misses are added to its report.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ._cassettes.session import Cassette

__all__ = ["dshstream_cassette"]

MARKER = "dshstream_cassette"
_OPTIONS = ("name", "match_on", "redact_fields", "timing", "record")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_CASSETTE = pytest.StashKey["Cassette"]()
_FAIL_LATE = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dshstream", "dshstream cassettes")
    group.addoption(
        "--dshstream-record",
        action="store_true",
        default=False,
        help="record the dshstream cassettes of the tests run (real requests), instead of replaying them",
    )
    parser.addini(
        "dshstream_cassette_dir",
        "where dshstream cassettes live, relative to each test file's directory (default: cassettes)",
        default="cassettes",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(name=None, *, match_on=('method', 'url', 'body'), redact_fields=(), timing=False, "
        "record=None): record this test's HTTP exchanges into a dshstream cassette, or replay them from it",
    )


def cassette_path(item: pytest.Item, name: str | None = None) -> Path:
    """Where ``item``'s cassette lives (rule 2)."""
    directory = item.config.getini("dshstream_cassette_dir") or "cassettes"
    test_file = Path(str(item.path))
    if name is None:
        name = item.nodeid.split("::", 1)[1] if "::" in item.nodeid else item.name
        name = name.replace("::", ".")
    return test_file.parent / directory / test_file.stem / f"{_UNSAFE.sub('_', name)}.json"


def _settings(item: pytest.Item) -> dict[str, Any]:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return {}
    if len(marker.args) > 1:
        pytest.fail(f"@pytest.mark.{MARKER} takes one positional argument (the cassette name)", pytrace=False)
    settings = dict(marker.kwargs)
    if marker.args:
        if "name" in settings:
            pytest.fail(f"@pytest.mark.{MARKER}: the name is given twice", pytrace=False)
        settings["name"] = marker.args[0]
    wrong = sorted(set(settings) - set(_OPTIONS))
    if wrong:
        pytest.fail(f"@pytest.mark.{MARKER} has no argument {wrong[0]!r} (it takes {', '.join(_OPTIONS)})", pytrace=False)
    name = settings.get("name")
    if name is not None and (not isinstance(name, str) or not name or "/" in name or "\\" in name):
        pytest.fail(f"@pytest.mark.{MARKER} name must be a file name (no directory), got {name!r}"[:200], pytrace=False)
    return settings


@pytest.fixture
def dshstream_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """The cassette of this test, in use from now to the test's end (rules 1-4)."""
    from ._cassettes.session import Cassette, record_from_environment
    from ._core.errors import LlmError

    item = request.node
    assert isinstance(item, pytest.Item)
    settings = _settings(item)
    record = settings.get("record")
    if record is None:
        record = True if request.config.getoption("dshstream_record") else None
    if record is None:
        try:
            record = record_from_environment()
        except LlmError as exc:
            pytest.fail(str(exc), pytrace=False)
    options: dict[str, Any] = {key: settings[key] for key in ("match_on", "redact_fields", "timing") if key in settings}
    try:
        cassette = Cassette(
            cassette_path(item, settings.get("name")),
            record=record,
            how_to_record=f"python -m pytest --dshstream-record '{item.nodeid}'",
            **options,
        )
        cassette.start()
    except LlmError as exc:
        pytest.fail(f"@pytest.mark.{MARKER}: {exc}", pytrace=False)
    item.stash[_CASSETTE] = cassette
    try:
        yield cassette
    finally:
        cassette.stop()
    if item.stash.get(_FAIL_LATE, False):
        pytest.fail(_misses(cassette), pytrace=False)


@pytest.fixture(autouse=True)
def _dshstream_cassette_marker(request: pytest.FixtureRequest) -> None:
    """The marker uses the fixture (rule 1); no marker, nothing happens."""
    if request.node.get_closest_marker(MARKER) is not None:
        request.getfixturevalue("dshstream_cassette")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, None]:
    """A miss fails the test (rule 4)."""
    outcome = yield
    cassette = item.stash.get(_CASSETTE, None)
    if cassette is None or not cassette.misses:
        return
    if outcome.excinfo is not None:
        item.add_report_section("call", "dshstream cassette", "\n".join(cassette.misses))
        return
    failure = pytest.fail.Exception(_misses(cassette), pytrace=False)
    force = getattr(outcome, "force_exception", None)  # pluggy >= 1.1
    if force is not None:
        force(failure)
    else:
        item.stash[_FAIL_LATE] = True  # the fixture's teardown fails it instead


def _misses(cassette: Cassette) -> str:
    more = f"\n(and {len(cassette.misses) - 1} more request(s) unanswered)" if len(cassette.misses) > 1 else ""
    return cassette.misses[0] + more
