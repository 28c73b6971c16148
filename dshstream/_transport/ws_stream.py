"""WsStream: one Responses turn over a WebSocket, read as the byte pump reads any body.

Contract: a :class:`WsStream` is the :class:`~dshstream._transport.interface.ResponseStream`
that :class:`~dshstream._transport.ws_transport.WebSocketTransport` returns. It exists
before its socket is connected or its message sent, is registered with the
:mod:`~dshstream._transport.watchdog` from then until it is closed or released, and is
always closed — exactly as an HTTP stream.

1. **The body is the events.** Each server message is one Responses event (the same JSON
   as an SSE event's data): iteration hands the pump the messages of each read written as
   SSE events (``data:`` lines and a blank line), so the SSE framer, the Responses
   translator, the assembler and every limit of the HTTP path apply unchanged, and one
   message per read is one event per read, as over HTTP.
2. **It knows its end.** A message whose top-level ``type`` is ``response.completed``,
   ``response.incomplete``, ``response.failed`` or ``error`` is the turn's last:
   iteration stops after it (the socket is not read further: the next message is the
   next turn's). The connection ending first ends iteration — a close frame with code
   1000, or EOF, as the end of an HTTP body (the translator then says ``STREAM_CLOSED``);
   another close code is ``TRANSPORT`` naming it.
3. **Limits and abort** are every stream's (watchdog rule 3): an abort — the watchdog's
   limits, a cancel, :meth:`WsStream.abort` or a ``close()`` from another thread — shuts
   the socket down, so a blocked connect, handshake or read returns at once and the
   caller raises ``ABORTED`` or ``TIMEOUT``, never a transport failure. A read that fails
   otherwise is mapped once (:mod:`~dshstream._transport.failures` rule 2).
4. **Back to the session, or closed.** :meth:`WsStream.release` (the pump, after the
   terminal marker) hands the socket back for the next turn when the turn's last message
   was read and nothing ended the stream — not after an ``error`` event mid-turn, which the
   response's own end may still follow; :meth:`WsStream.close` before that closes the
   socket (the server is still sending this turn: the connection is not reusable). Either
   way the transport hears it once (``done(socket, reusable)``).
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.redact import redact
from .._core.strict_json import loads_or_none
from .base import BaseStream
from .failures import read_failure
from .sockets import shutdown_socket
from .watchdog import Limits, watchdog
from .websocket import WebSocket

__all__ = ["WsStream", "as_event", "is_last"]

#: a turn's last event types (rule 2); matched cheaply first, then checked on the parsed JSON
_LAST_TYPES = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
_LAST = re.compile(rb'"type"\s*:\s*"(?:response\.(?:completed|incomplete|failed)|error)"')
#: the close codes that end a connection normally (section 7.4.1): no failure of their own
_NORMAL_CLOSE = frozenset({1000, 1005, 1006})


def as_event(message: bytes) -> bytes:
    """One message as one SSE event (rule 1)."""
    if b"\n" not in message and b"\r" not in message:
        return b"data: " + message + b"\n\n"
    lines = message.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    return b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"


def terminal(message: bytes) -> dict[str, Any] | None:
    """The parsed event when ``message`` is a turn's last (rule 2), else ``None``."""
    if _LAST.search(message) is None:
        return None
    payload = loads_or_none(message.decode("utf-8"))  # UTF-8: the framer checked it
    return payload if isinstance(payload, dict) and payload.get("type") in _LAST_TYPES else None


def is_last(message: bytes) -> bool:
    """Whether ``message`` is a turn's last event (rule 2)."""
    return terminal(message) is not None


Done = Callable[["WsStream", WebSocket, bool], None]


class WsStream(BaseStream):
    """One turn on a WebSocket: iterate for SSE-framed events; always closed."""

    def __init__(self, request: HttpRequest, limits: Limits, started: float, done: Done) -> None:
        super().__init__(request, limits, started)
        self.status = 101
        self._done = done
        self._ws: WebSocket | None = None
        self._sock: socket.socket | None = None  # what an abort shuts down (rule 3)
        #: the turn's last event was read (rule 2)
        self.ended = False
        #: that event, parsed (a ``response.completed`` carries the response: chaining)
        self.last_event: dict[str, Any] | None = None
        #: the ``response.create`` body sent whole (before any chaining)
        self.sent_body: dict[str, Any] | None = None
        self._told = False
        watchdog.add(self)

    # ------------------------------------------------------------------ set-up

    def attach(self, sock: socket.socket) -> bool:
        """The socket being connected, made known to :meth:`abort`; ``False`` once the
        stream is stopped (nothing more may be done with it)."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return False
            self._sock = sock
            return True

    def bind(self, ws: WebSocket) -> bool:
        """The connection this turn goes over; ``False`` once the stream is stopped."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return False
            self._ws = ws
            self._sock = ws.sock
            return True

    def unbind(self) -> None:
        """The connection is given up before the turn began (a stale one, the cap): the
        stream may be bound to a fresh one."""
        with self._lock:
            self._ws = None
            self._sock = None

    def first(self, message: bytes) -> None:
        """The turn's first message, read while opening: handed out first."""
        self.prefix = as_event(message)
        self._check_last(message)

    def _check_last(self, message: bytes) -> None:
        event = terminal(message)
        if event is not None:
            self.last_event = event
            self.ended = True

    # ------------------------------------------------------------------ control

    def _hold(self) -> socket.socket | None:
        return self._sock

    def _interrupt(self, held: socket.socket | None) -> None:
        shutdown_socket(held)

    def release(self) -> None:
        """The turn reached its terminal marker: the socket back to the session (rule 4)."""
        with self._lock:
            if self._closed:
                return
            # After an ``error`` event mid-turn the server may still send the response's
            # own end (``response.failed``): that socket is not the next turn's.
            errored = self.last_event is not None and self.last_event.get("type") == "error"
            reusable = self.ended and self._abort_code is None and not errored
            self._closed = True
        watchdog.remove(self)
        self._tell(reusable)

    def close(self) -> None:
        """End the turn (idempotent, never raises): before its end the socket is closed
        (rule 4); closed before it was connected, the connect is cut off (rule 3)."""
        with self._lock:
            if self._closed:
                return
            if self._ws is None and self._abort_code is None:
                self._abort_closed()
            self._closed = True
            sock = self._sock
        watchdog.remove(self)
        # Before the turn's end the socket is done for: shutting it down also wakes a read
        # blocked in another thread (closing a socket alone does not).
        shutdown_socket(sock)
        self._tell(False)

    def _tell(self, reusable: bool) -> None:
        ws = self._ws
        if ws is None or self._told:
            return
        self._told = True
        try:
            self._done(self, ws, reusable and ws.open)
        except Exception:  # noqa: BLE001 - closing never raises
            pass

    # ------------------------------------------------------------------ reading

    def read_message(self) -> bytes | None:
        """The next message of this turn (opening reads the first one with it); ``None``:
        the connection ended. Failures mapped as in rule 3."""
        ws = self._ws
        assert ws is not None
        try:
            return ws.next_message()
        except LlmError:
            self.raise_if_aborted()
            raise
        except (OSError, ValueError) as exc:
            self.raise_if_aborted()
            raise read_failure(exc, self._request.secrets, self._provider, self.request_id) from None

    def __iter__(self) -> Iterator[bytes]:
        if self.prefix:
            prefix, self.prefix = self.prefix, b""
            yield prefix
        ws = self._ws
        if ws is None:
            return
        while not self.ended:
            message = self.read_message()
            if message is None:
                self.raise_if_aborted()
                self._ended_early(ws)
                return
            pieces = [as_event(message)]
            self._check_last(message)
            while not self.ended and ws.buffered:  # what one read brought: one piece
                more = ws.next_message()
                assert more is not None
                pieces.append(as_event(more))
                self._check_last(more)
            yield pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def _ended_early(self, ws: WebSocket) -> None:
        """The connection ended before the turn's last event (rule 2)."""
        code = ws.close_code
        if code is None or code in _NORMAL_CLOSE:
            return  # as an HTTP body's early end: the translator says STREAM_CLOSED
        # the server's own words, redacted: never a key it might echo
        reason = f": {redact(ws.close_reason, self._request.secrets, limit=120)}" if ws.close_reason else ""
        raise error_for(
            make_failure(
                "TRANSPORT",
                f"{self._provider}: the WebSocket was closed by the server mid-response "
                f"(code {code}{reason}) (TRANSPORT)",
                provider=self._provider,
                request_id=self.request_id,
            )
        )
