"""Real forwarding proxies for the tests: proxy.py (a PyPI package, the ``proxy`` module)
in subprocesses on ephemeral ports of 127.0.0.1, one open and one wanting basic auth.
Both start at once (an import of proxy.py takes about a second) and both stop when the
block ends; a machine without proxy.py skips the test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: the auth proxy's user and password (``PASSWORD`` must never show in a message)
USER, PASSWORD = "alice", "pr0xy-s3cret-pw"


@contextmanager
def forwarding_proxies(folder: Path) -> Iterator[tuple[int, int]]:
    """``(open_port, auth_port)``: an open proxy and one that wants ``USER:PASSWORD``."""
    pytest.importorskip("proxy")
    started: list[tuple[subprocess.Popen[bytes], Path]] = []
    try:
        for name, extra in (("open", ()), ("auth", ("--basic-auth", f"{USER}:{PASSWORD}"))):
            port_file = folder / f"proxy-{name}.port"
            process = subprocess.Popen(
                [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0", "--port-file",
                 str(port_file), "--num-workers", "1", "--num-acceptors", "1", "--threaded", "--log-level", "e",
                 *extra],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own group: proxy.py forks workers a kill of it would orphan
            )
            started.append((process, port_file))
        ports = [_port(process, port_file) for process, port_file in started]
        yield ports[0], ports[1]
    finally:
        for process, _ in started:  # nothing to flush: SIGKILL, not a second of shutdown
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the workers too, not only the parent
            except ProcessLookupError:
                pass
            process.wait(10)


def _port(process: subprocess.Popen[bytes], port_file: Path) -> int:
    end = time.monotonic() + 30
    while time.monotonic() < end:
        text = port_file.read_text().strip() if port_file.exists() else ""
        if text:
            return int(text)
        if process.poll() is not None:
            break
        time.sleep(0.02)
    pytest.skip("proxy.py did not start")
