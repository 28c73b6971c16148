"""ReplayServer: serve recorded SSE transcripts on 127.0.0.1 for demos, tests and
benchmarks, through a real HTTP stack.

Contract: binds only to the loopback interface; one thread per connection; each POST is
answered with the transcript whose route prefix matches the path (longest prefix wins).
Bodies go out either chunked (HTTP/1.1 ``Transfer-Encoding: chunked``) or
close-delimited (no length, connection closed at the end), optionally pausing after the
first event so a client's time-to-first-chunk can be measured. A body may also end as a
broken connection would (``ending="cut"``: no chunked terminator, the connection closed) or
not at all (``ending="open"``: the connection held until the client or the server goes),
as a cassette recorded it. Requests are recorded (path, headers, JSON body) for
assertions. Stdlib only.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Route:
    """What to answer on one path prefix."""

    body: bytes
    status: int = 200
    chunked: bool = True
    content_type: str = "text/event-stream"
    headers: Mapping[str, str] = field(default_factory=dict)
    #: seconds to wait after the first event (measures time to first chunk)
    pause_after_first: float = 0.0
    #: write the body in pieces of this many bytes (0: one event per write)
    piece_size: int = 0
    #: instead of ``body``: bytes to write and float pauses (seconds), in order
    script: Sequence[bytes | float] | None = None
    #: how the body ends: ``"complete"``; ``"cut"``, the connection closed without the
    #: end of the body (no chunked terminator); ``"open"``, the connection held open, nothing
    #: more sent, until the client closes it or the server stops
    ending: str = "complete"


@dataclass
class RecordedRequest:

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class LoopbackHandler(BaseHTTPRequestHandler):
    """The loopback servers' request handler: keep-alive, no Nagle wait, no log lines."""

    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY the body waits
    # for the client's delayed ACK (~40 ms a response on a reused connection)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


class _Handler(LoopbackHandler):
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.owner.lock:
            self.server.owner.connections += 1

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._answer(None)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._answer(body)

    def _answer(self, body: Any) -> None:
        owner = self.server.owner
        owner.requests.append(
            RecordedRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        route = owner.route_for(self.path)
        if route is None:
            self.send_error(404, "no route")
            return
        try:
            self._send(route)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            owner.disconnects += 1

    def _send(self, route: Route) -> None:
        self.send_response(route.status)
        self.send_header("content-type", route.content_type)
        for name, value in route.headers.items():
            self.send_header(name, value)
        if route.chunked:
            self.send_header("transfer-encoding", "chunked")
        else:
            self.send_header("connection", "close")
            self.close_connection = True
        self.end_headers()
        steps: Sequence[bytes | float] = (
            route.script if route.script is not None else _pieces(route.body, route.piece_size)
        )
        written = 0
        for step in steps:
            if isinstance(step, float):
                self.wfile.flush()
                time.sleep(step)
                continue
            if not step:
                continue
            if route.chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(step), step))
            else:
                self.wfile.write(step)
            written += 1
            if written == 1 and route.pause_after_first:
                self.wfile.flush()
                time.sleep(route.pause_after_first)
        if route.ending == "cut":
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if route.ending == "open":
            self.wfile.flush()
            self.close_connection = True
            self._hold()
            return
        if route.chunked:
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _hold(self) -> None:
        """Keep the connection open, sending nothing, until the client closes it or the
        server stops (``ending="open"``)."""
        owner = self.server.owner
        self.connection.settimeout(_POLL_INTERVAL)
        while not owner.stopping:
            try:
                if not self.connection.recv(4096):
                    return
            except socket.timeout:
                continue
            except OSError:
                return


def _pieces(body: bytes, size: int) -> list[bytes]:
    if size > 0:
        return [body[i : i + size] for i in range(0, len(body), size)] or [b""]
    # One event per write: split after each blank line (LF or CRLF framing).
    out: list[bytes] = []
    start = 0
    while start < len(body):
        end = body.find(b"\n\n", start)
        end_crlf = body.find(b"\r\n\r\n", start)
        cands = [e + 2 for e in (end,) if e >= 0] + [e + 4 for e in (end_crlf,) if e >= 0]
        stop = min(cands) if cands else len(body)
        out.append(body[start:stop])
        start = stop
    return out or [b""]


#: how often the serving loop checks for shutdown (the stdlib's 0.5 s made every stop slow)
_POLL_INTERVAL = 0.02


def shut_down_now(server: socketserver.TCPServer) -> None:
    """``server.shutdown()`` without waiting out the serving loop's poll (up to
    ``poll_interval`` on every stop): the flag ``shutdown()`` sets first is set, then a
    connection wakes the loop's ``select``, which sees the flag and ends without accepting
    it (it goes with the listening socket). Call it only while ``serve_forever`` runs, like
    ``shutdown()``."""
    setattr(server, "_BaseServer__shutdown_request", True)  # socketserver.BaseServer's own flag
    host, port = server.server_address[:2]
    try:
        socket.create_connection((str(host), int(port)), timeout=1.0).close()
    except OSError:
        pass  # the loop still ends at its next poll
    server.shutdown()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256  # many clients may connect at once in concurrency tests
    owner: ReplayServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up early is normal here, not worth a traceback


class ReplayServer:
    """A loopback HTTP server answering POSTs with recorded transcripts."""

    def __init__(self, routes: Mapping[str, Route | bytes | Sequence[Route]] | None = None, port: int = 0) -> None:
        self.routes: dict[str, list[Route]] = {}
        self._served: dict[str, int] = {}
        for prefix, route in (routes or {}).items():
            self.add(prefix, route)
        self.requests: list[RecordedRequest] = []
        #: set by :meth:`stop`: held connections (``ending="open"``) end
        self.stopping = False
        self.disconnects = 0
        self.connections = 0
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    def add(self, prefix: str, route: Route | bytes | Sequence[Route]) -> None:
        """Answer paths starting with ``prefix`` with ``route``; a sequence of routes is
        served in order, its last one repeating."""
        if isinstance(route, bytes):
            routes = [Route(body=route)]
        elif isinstance(route, Route):
            routes = [route]
        else:
            routes = list(route)
        self.routes[prefix] = routes
        self._served[prefix] = 0

    def route_for(self, path: str) -> Route | None:
        """The next route for the longest prefix matching ``path``."""
        best = None
        for prefix in self.routes:
            if path.startswith(prefix) and (best is None or len(prefix) > len(best)):
                best = prefix
        if best is None:
            return None
        routes = self.routes[best]
        count = self._served[best]
        self._served[best] = count + 1
        return routes[min(count, len(routes) - 1)]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ReplayServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": _POLL_INTERVAL}, name="dshstream-replay", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self.stopping = True
        shut_down_now(self._server)
        self._server.server_close()

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
