"""Shared fixtures: a fresh loopback replay server per test (starting and stopping one
takes a few milliseconds), and the test-support modules on the import path."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dshstream._replay_server import ReplayServer


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    """A :class:`ReplayServer` on 127.0.0.1 with no routes; add them with ``server.add``."""
    with ReplayServer() as srv:
        yield srv
