"""WebSocket: one client connection (RFC 6455) over a standard-library socket — connected,
upgraded, framed, answered and closed.

Contract: stdlib sockets and ``ssl``, the core's sans-IO framing
(:mod:`~dshstream._core.ws_frames`) and handshake (:mod:`~dshstream._core.ws_handshake`);
no ``requests`` here beyond the trust settings it shares with the HTTP transport.

**Why the standard library and not the ``websocket-client`` extra.** The client this
library needs is small: one text message out per turn, text messages in, pings answered,
a close handshake — no extensions, no subprotocols. Written here it keeps the package's
one runtime dependency, and it gets for free what every HTTP stream already has and an
outside client would have to be wrapped into: the watchdog ends a blocked connect,
handshake or read by shutting *this* socket down (cancel from another thread, the idle
clock, the total deadline), sizes are bounded by an incremental framer tested at every
split point like the SSE framer, TLS is the transport's own trust (``verify``,
``client_cert``, ``trust_store``: :meth:`~dshstream._transport.tls.ConnectionSettings.ssl_context`),
and a redirect is never followed. ``websocket-client`` remains a test-only interoperability
check of the loopback server.

1. **Connect under the limits.** :func:`open_socket` resolves the host, creates each
   socket and hands it to ``attach`` *before* connecting (``False``: the stream was
   stopped meanwhile — nothing more is done), so an abort shuts a connect, the TLS
   handshake or the wait for the upgrade answer down at once; the socket timeout is the
   connect timeout capped by the deadline, a backstop to the watchdog. TLS uses SNI and
   checks the host name (unless ``verify=False``).
2. **The upgrade.** The upgrade request of :mod:`~dshstream._core.ws_handshake` (rule 2
   there) goes to the request's own host; a ``101`` is checked (its rule 4) and becomes a
   :class:`WebSocket`; any other answer is returned as a :class:`Refusal` — its status,
   headers and at most ``ERROR_BODY_LIMIT`` bytes of body — for the caller to judge as an
   HTTP answer (a redirect is never followed). Failures are mapped once
   (:mod:`~dshstream._transport.failures` rule 1: ``TLS``, ``TIMEOUT``, ``TRANSPORT``).
   Through an ``http://`` proxy the socket is a ``CONNECT`` tunnel to the host (with the
   proxy URL's ``user:password`` as ``Proxy-Authorization: Basic``, registered as secrets
   by the transport's settings); a ``407`` is ``PROXY_AUTH``, another refusal
   ``TRANSPORT``; TLS and the upgrade then run inside the tunnel, to the host.
3. **Frames.** :meth:`WebSocket.send_text` sends one masked text frame (a fresh mask per
   frame, under a send lock: a pong from the reading thread and a close from another
   never interleave with it). :meth:`WebSocket.next_message` returns the next text
   message, reading when none is buffered: a ping is answered with a pong carrying its
   payload, a pong is dropped, a binary message is ``MALFORMED_RESPONSE`` (the Responses
   API sends JSON text), a close frame is answered with a close frame and ends the
   connection (``None``, :attr:`WebSocket.close_code` set), so does EOF (code 1006).
4. **Closed once.** :meth:`WebSocket.close` sends a close frame (best effort, never
   blocking past :data:`CLOSE_WAIT`), waits that long at most for the server's, and closes
   the socket; idempotent, never raises. :meth:`WebSocket.stale` says, without blocking,
   whether the server has closed an idle connection (or sent anything unasked).
"""

from __future__ import annotations

import base64
import os
import select
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import NamedTuple
from urllib.parse import SplitResult, unquote, urlsplit

from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.ws_frames import (
    BINARY,
    CLOSE,
    DEFAULT_MAX_MESSAGE_SIZE,
    PING,
    TEXT,
    FrameDecoder,
    close_payload,
    encode_frame,
    read_close,
)
from .._core.ws_handshake import AnswerReader, HandshakeAnswer, SocketUrl, check_upgrade, new_key, upgrade_request
from .answers import PROXY_AUTH_HEADLINE
from .failures import send_failure
from .interface import ERROR_BODY_LIMIT

__all__ = ["CLOSE_WAIT", "Refusal", "WebSocket", "open_socket"]

#: the most seconds a close handshake waits for the server's close frame (rule 4)
CLOSE_WAIT = 0.25
_READ = 65536


class Refusal(NamedTuple):
    """A handshake answered with something else than ``101`` (rule 2)."""

    status: int
    headers: dict[str, str]
    body: bytes


class WebSocket:
    """One upgraded connection: text frames out, text messages in (rules 3, 4)."""

    def __init__(
        self,
        sock: socket.socket,
        where: SocketUrl,
        headers: Mapping[str, str],
        rest: bytes,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.sock = sock
        self.where = where
        #: the upgrade answer's headers (its request id names the connection)
        self.headers = dict(headers)
        #: when the connection was opened (``time.monotonic()``): the server caps its age
        self.opened = time.monotonic()
        #: the close code once the connection ended (1006: without a close frame)
        self.close_code: int | None = None
        self.close_reason = ""
        self._decoder = FrameDecoder(max_message_size=max_message_size)
        self._queue: deque[bytes] = deque()
        self._send_lock = threading.Lock()
        self._closed = False
        if rest:
            self._take(rest)

    @property
    def open(self) -> bool:
        """Whether the connection can still carry a turn."""
        return self.close_code is None and not self._closed

    @property
    def buffered(self) -> bool:
        """Whether a text message is waiting, read already."""
        return bool(self._queue)

    def send_text(self, data: bytes) -> None:
        """One masked text frame (rule 3); raises ``OSError`` when the socket fails."""
        frame = encode_frame(TEXT, data, os.urandom(4))
        with self._send_lock:
            self.sock.sendall(frame)

    def next_message(self) -> bytes | None:
        """The next text message, or ``None`` once the connection ended (rule 3); raises
        ``OSError`` when a read fails, ``LlmError`` when the frames break the protocol."""
        queue = self._queue
        while not queue:
            if self.close_code is not None:
                return None
            data = self.sock.recv(_READ)
            if not data:
                self.close_code = 1006
                return None
            self._take(data)
        return queue.popleft()

    def _take(self, data: bytes) -> None:
        for opcode, payload in self._decoder.feed(data):
            if opcode == TEXT:
                self._queue.append(payload)
            elif opcode == PING:
                self._send_control(0xA, payload)
            elif opcode == CLOSE:
                self.close_code, self.close_reason = read_close(payload)
                self._send_control(CLOSE, payload[:2])
                return  # nothing after a close frame counts (section 5.5.1)
            elif opcode == BINARY:
                raise error_for(
                    make_failure("MALFORMED_RESPONSE", "a binary WebSocket message, not JSON text (MALFORMED_RESPONSE)")
                )

    def _send_control(self, opcode: int, payload: bytes) -> None:
        try:
            with self._send_lock:
                self.sock.sendall(encode_frame(opcode, payload, os.urandom(4)))
        except OSError:  # the peer is gone: the next read says so
            pass

    def stale(self) -> bool:
        """Whether the server closed the idle connection or sent something unasked
        (rule 4): read without blocking what is already there."""
        if not self.open:
            return True
        if self._queue:
            return True
        try:
            # TLS may hold decrypted bytes that select() cannot see
            buffered = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending() > 0
            readable, _, _ = select.select([self.sock], [], [], 0) if not buffered else ([self.sock], [], [])
            if not readable:
                return False
            self.sock.setblocking(False)
            try:
                data = self.sock.recv(_READ)
            finally:
                self.sock.setblocking(True)
        except (OSError, ValueError):
            return True
        except LlmError:
            return True
        if not data:
            self.close_code = 1006
            return True
        try:
            self._take(data)
        except LlmError:
            return True
        return True  # anything unasked on an idle connection: start afresh

    def close(self, code: int = 1000, *, wait: bool = True) -> None:
        """The close handshake, bounded by :data:`CLOSE_WAIT`, then the socket closed
        (rule 4; idempotent, never raises). ``wait=False`` (a turn given up mid-response:
        the server is still sending it) sends the close frame and closes at once."""
        if self._closed:
            return
        self._closed = True
        sock = self.sock
        try:
            if self.close_code is None:
                sock.settimeout(CLOSE_WAIT)
                with self._send_lock:
                    sock.sendall(encode_frame(CLOSE, close_payload(code), os.urandom(4)))
                end = time.monotonic() + (CLOSE_WAIT if wait else 0.0)
                while self.close_code is None and time.monotonic() < end:
                    sock.settimeout(max(0.001, end - time.monotonic()))
                    data = sock.recv(_READ)
                    if not data:
                        break
                    self._take(data)
        except Exception:  # noqa: BLE001 - closing never raises
            pass
        try:
            sock.close()
        except OSError:
            pass


def open_socket(
    where: SocketUrl,
    request: HttpRequest,
    *,
    context: ssl.SSLContext | None,
    timeout: float,
    attach: Callable[[socket.socket], bool],
    provider: str,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    proxy: str | None = None,
) -> WebSocket | Refusal:
    """Connect to ``where`` (through the ``http://`` ``proxy``, when given) and upgrade
    (rules 1, 2): the connection, or the refusal."""
    sock: socket.socket | None = None
    via = urlsplit(proxy) if proxy is not None else None
    host, port = (via.hostname or "", via.port or 80) if via is not None else (where.host, where.port)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        last: OSError | None = None
        for family, kind, proto, _, address in infos:
            candidate = socket.socket(family, kind, proto)
            if not attach(candidate):
                candidate.close()
                raise _stopped()
            candidate.settimeout(timeout)
            try:
                candidate.connect(address)
            except OSError as exc:
                candidate.close()
                last = exc
                continue
            sock = candidate
            break
        if sock is None:
            raise last if last is not None else OSError(f"no address for {host}")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # a turn is one small frame
        if via is not None:
            _tunnel(sock, where, via, provider)
        if where.secure:
            assert context is not None
            sock = context.wrap_socket(sock, server_hostname=where.host, do_handshake_on_connect=False)
            if not attach(sock):
                raise _stopped()
            sock.do_handshake()
        key = new_key()
        sock.sendall(upgrade_request(where, request.headers, key))
        answer = _answer(sock, "the server closed the connection during the WebSocket handshake")
        if answer.status != 101:
            # only an error's body is read: it is classified (a 2xx may stream forever)
            body = _refusal_body(sock, answer.headers, answer.rest) if answer.status >= 400 else b""
            sock.close()
            return Refusal(answer.status, answer.headers, body)
        check_upgrade(answer, key)
        sock.settimeout(None)
        return WebSocket(sock, where, answer.headers, answer.rest, max_message_size)
    except LlmError:
        if sock is not None:
            sock.close()
        raise
    except (OSError, ValueError) as exc:
        if sock is not None:
            sock.close()
        raise send_failure(exc, request, provider) from None


def _stopped() -> OSError:
    return OSError("the stream was stopped while connecting")


def _tunnel(sock: socket.socket, where: SocketUrl, via: SplitResult, provider: str) -> None:
    """A ``CONNECT`` tunnel to ``where`` through the proxy (rule 2)."""
    authority = f"[{where.host}]:{where.port}" if ":" in where.host else f"{where.host}:{where.port}"
    lines = [f"CONNECT {authority} HTTP/1.1", f"Host: {authority}"]
    if via.username:
        pair = f"{unquote(via.username)}:{unquote(via.password or '')}"
        lines.append("Proxy-Authorization: Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii"))
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8"))
    answer = _answer(sock, "the proxy closed the connection during CONNECT")
    if answer.status == 407:
        raise error_for(
            make_failure("PROXY_AUTH", f"{provider}: {PROXY_AUTH_HEADLINE} (PROXY_AUTH)", status=407, provider=provider)
        )
    if not 200 <= answer.status < 300 or answer.rest:
        raise error_for(
            make_failure(
                "TRANSPORT",
                f"{provider}: the proxy refused the tunnel (HTTP {answer.status}) (TRANSPORT)",
                provider=provider,
                status=answer.status,
            )
        )


def _answer(sock: socket.socket, closed: str) -> HandshakeAnswer:
    """The status line and headers read off ``sock`` (an upgrade's or a ``CONNECT``'s
    answer, rule 2); the connection closed first is a ``ConnectionError`` saying ``closed``."""
    reader = AnswerReader()
    while True:
        data = sock.recv(_READ)
        if not data:
            raise ConnectionError(closed)
        answer = reader.feed(data)
        if answer is not None:
            return answer


def _refusal_body(sock: socket.socket, headers: Mapping[str, str], rest: bytes) -> bytes:
    """At most ``ERROR_BODY_LIMIT`` bytes of a refusal's body, within the socket timeout."""
    try:
        length = int(headers.get("content-length", "-1"))
    except ValueError:
        length = -1
    want = ERROR_BODY_LIMIT if length < 0 else min(length, ERROR_BODY_LIMIT)
    body = bytearray(rest[:want])
    try:
        while len(body) < want:
            data = sock.recv(min(_READ, want - len(body)))
            if not data:
                break
            body += data
    except OSError:
        pass
    return bytes(body)
