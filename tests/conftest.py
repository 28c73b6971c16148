"""Shared fixtures: a fresh loopback replay server per test (starting and stopping one
takes a few milliseconds), and a hermetic environment: no provider key or cloud setting of
the machine running the suite reaches a test (each test sets what it needs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dshstream._core.dialects import DIALECTS
from dshstream._replay_server import ReplayServer

_PROVIDER_VARIABLES = {
    "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY",
    "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION", "AZURE_OPENAI_AD_TOKEN",
    "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE",
    "DSHSTREAM_DEBUG",
} | {d.key_env for d in DIALECTS.values() if d.key_env}


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in _PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    # gcloud's application-default login is found through this (else ~/.config/gcloud)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path_factory.getbasetemp() / "no-gcloud"))


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """A :class:`ReplayServer` on 127.0.0.1 with no routes; add them with ``server.add``."""
    with ReplayServer() as srv:
        yield srv
