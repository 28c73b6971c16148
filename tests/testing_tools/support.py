"""What the cassette and web tests share: the recorded fixtures served as a provider on
127.0.0.1, the tools some tests need (Node with the AI SDK, Chromium with chromedriver),
and the rule for when they are missing.

A test that needs Node or Chromium skips, saying what is missing and how to get it, when
the tool is absent — unless ``DSHSTREAM_REQUIRE_BROWSER=1`` (``.ci/run`` sets it, with the
tools installed), where it fails instead: CI never passes by skipping them. Where the tools
are: ``DSHSTREAM_NODE`` (default: ``node`` on the PATH), ``DSHSTREAM_JS_DIR`` (a directory
where ``npm ci`` installed ``tests/js/package-lock.json``; default ``tests/js`` itself),
``DSHSTREAM_CHROMIUM`` and ``DSHSTREAM_CHROMEDRIVER`` (default: ``chromium``/``chromedriver``
on the PATH).
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import wsgiref.simple_server
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dshstream._replay_server import shut_down_now

ROOT = Path(__file__).resolve().parent.parent.parent
JS_DIR = ROOT / "tests" / "js"
REQUIRE = os.environ.get("DSHSTREAM_REQUIRE_BROWSER", "") == "1"


def missing(what: str, how: str) -> None:
    """Skip (or, with ``DSHSTREAM_REQUIRE_BROWSER=1``, fail) for a missing tool."""
    message = f"{what} is not available ({how})"
    if REQUIRE:
        pytest.fail(f"DSHSTREAM_REQUIRE_BROWSER=1 but {message}", pytrace=False)
    pytest.skip(message)


def node() -> tuple[str, Path]:
    """The node binary, and the directory whose ``node_modules`` has the AI SDK, with the
    reader script in it (copied there when it is not ``tests/js``); or skip/fail."""
    binary = os.environ.get("DSHSTREAM_NODE") or shutil.which("node")
    if not binary or not Path(binary).exists():
        missing("node", "install Node.js 18 or later, or set DSHSTREAM_NODE")
    where = Path(os.environ.get("DSHSTREAM_JS_DIR") or JS_DIR)
    modules = where / "node_modules"
    if not (modules / "ai" / "package.json").is_file() or not (modules / "ai-v5" / "package.json").is_file():
        missing(f"the AI SDK in {modules}", "run `npm ci` in tests/js, or set DSHSTREAM_JS_DIR")
    if where.resolve() != JS_DIR.resolve():  # the script resolves `ai` from where it lies
        shutil.copy(JS_DIR / "read_ui_stream.mjs", where / "read_ui_stream.mjs")
    assert binary is not None
    return binary, where


def chromium() -> tuple[str, str]:
    """Chromium and its chromedriver, and selenium, or skip/fail."""
    binary = os.environ.get("DSHSTREAM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    driver = os.environ.get("DSHSTREAM_CHROMEDRIVER") or shutil.which("chromedriver")
    if not binary or not driver or not Path(binary).exists() or not Path(driver).exists():
        missing("Chromium with chromedriver", "apt-get install chromium chromium-driver, or set DSHSTREAM_CHROMIUM and DSHSTREAM_CHROMEDRIVER")
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing("selenium", "pip install -e '.[test]'")
    assert binary is not None and driver is not None
    return binary, driver


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    disable_nagle_algorithm = True  # each response is several small writes: no delayed-ACK wait
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


class _ThreadingServer(wsgiref.simple_server.WSGIServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._handle, args=(request, client_address), daemon=True)
        thread.start()

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001 - a client that went away
            pass
        finally:
            self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@contextmanager
def wsgi_server(app: Callable[..., Any]) -> Iterator[str]:
    """``app`` served by the standard library's WSGI server on 127.0.0.1 (a free port, a
    thread per request); yields its URL."""
    server = wsgiref.simple_server.make_server(
        "127.0.0.1", 0, app, server_class=_ThreadingServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        shut_down_now(server)
        server.server_close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
