"""WebSocketTransport: Responses turns over one kept WebSocket, behind the transport seam.

Contract: a :class:`WebSocketTransport` is a :class:`~dshstream._transport.interface.Transport`
wrapped around the adapter's HTTP transport. An adapter sends with it exactly as with
HTTP — the same :class:`~dshstream._core.http_request.HttpRequest`, the same limits — and
reads a :class:`~dshstream._transport.ws_stream.WsStream` as it reads an HTTP stream.

1. **What goes over the socket.** A streamed ``POST`` to the Responses endpoint is sent as
   one ``{"type": "response.create", ...}`` text message: the request's body less
   ``stream``, ``background`` and ``stream_options`` (transport fields the socket does
   not take, or is not documented to: every turn streams). Everything else goes over
   HTTP, unchanged: ``GET`` (continuing a stored stream), a ``background`` request
   (resumable: its cut is continued over HTTP),
   every non-stream call (``send_call``: ``get_json``, ``post_form``, ``post_json``, the
   byte calls), a turn while another is in flight on the
   socket (one response at a time on a connection), and any exchange while a cassette
   intercepts the HTTP transport (:mod:`~dshstream._transport.intercept`: it records and
   replays HTTP).
2. **Where, and with what.** The socket goes to the request's own URL, ``https`` as
   ``wss`` (``http`` as ``ws``: loopback), with the request's headers (its credential
   included) at the upgrade only; a redirect is never followed; TLS has the HTTP
   transport's trust (:meth:`~dshstream._transport.tls.ConnectionSettings.ssl_context`).
   When a proxy applies to the URL (``proxies=`` or the environment, as requests
   decides), the socket is a ``CONNECT`` tunnel through it (an ``http://`` proxy,
   :mod:`~dshstream._transport.websocket` rule 2); through any other (``https://``,
   ``socks5://``) every turn goes over HTTP, which requests tunnels.
3. **Limits as over HTTP.** Nothing starts past a limit (base rule 1); from the call on,
   the stream is watched (cancel, deadline, idle and quiet clocks), while connecting,
   upgrading, sending and reading; the connect is capped by ``connect_timeout`` and the
   deadline; a message is at most ``max_message_size`` bytes and an event at most the
   decoder's ``max_event_size``.
4. **Accepted when the first event is in.** The first message answers the turn as the
   status answers an HTTP request: a ``response.*`` event hands the stream on; an
   ``error`` event is raised as its classified failure (its ``status`` and ``error``
   object, :func:`~dshstream._core.classify.classifiers.classify_error_payload`), before
   anything was accepted, so the attempt loop may retry it as it retries a non-2xx — except
   ``websocket_connection_limit_reached`` (the server's cap on a connection's age), which
   is answered by reconnecting and sending the turn again at once, once. A kept socket
   that the server closed while idle (found without blocking before sending, or closed
   before the first event) is replaced the same way, once.
5. **Kept, replaced, given up.** After a turn that read its last event the socket is kept
   for the next; a turn closed early, aborted or cut closes it, and the next turn
   connects afresh. A socket older than ``max_age`` seconds (default 55 minutes: OpenAI
   closes one at 60) is replaced before a turn. A failed connect is retried at the next
   turn after a backoff (0.5 s doubling to 8 s, jittered: openai-python's), at most
   ``max_reconnects`` times in a row (default 5); then, and at once when the server
   answers the upgrade with a status below 400 other than 101 (a plain HTTP server, a
   redirect) or with 400, 404, 405, 426 or 501 (no WebSocket there), the transport stays
   on HTTP. Meanwhile, with ``fallback`` (the default), each turn that
   cannot have the socket goes over HTTP; without it, the connect's failure is raised
   (``TRANSPORT``, ``TLS``, ``TIMEOUT``: the attempt loop's retry policy applies). An
   upgrade answered with another status (401, 403, 429, 5xx) is raised as that HTTP
   answer's classified failure, as over HTTP.
6. **Counted.** :attr:`WebSocketTransport.stats` counts connects, turns over the socket,
   turns over HTTP and replaced sockets; :meth:`WebSocketTransport.close` closes the
   socket (close handshake, bounded) and keeps the transport usable (the next turn
   connects again).

7. **Chained, on request.** With ``chain`` (``connect(chain=True)``) a turn that exactly
   continues the socket's last completed response is sent as ``previous_response_id``
   plus its new input items (:mod:`~dshstream._transport.ws_chain`); anything else, and
   every turn after a new socket, is sent whole.

Wire facts, and where they come from: the URL is the API root with a ``ws(s)`` scheme plus
``/responses``, the credential in the upgrade request's headers, and a redirect to another
origin refused (openai-python, ``ResponsesConnectionManager._prepare_url`` and
``_connect_ws``, ``lib/_websocket.py``); a turn is ``{"type": "response.create", ...}``
with the create body less ``stream`` and ``background``, answered by the SSE stream's
``response.*`` events; a connection is capped at 60 minutes
(``websocket_connection_limit_reached``); ``previous_response_id`` chains turns on one
connection, also with ``store: false`` (OpenAI's WebSocket-mode guide). The reconnect
backoff is openai-python's (``max_retries=5``, 0.5 s doubling to 8 s, jitter 0.75-1).
Requests with one ``stream_id`` run FIFO on a connection (openai-python
``ResponsesClientEvent.stream_id``); this transport never sends one, and never has two
turns in flight on a socket.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlsplit

from .._core.classify.classifiers import classify_error_payload
from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest, encode_json_body
from .._core.log import get_logger
from .._core.strict_json import loads_or_none
from .._core.ws_frames import DEFAULT_MAX_MESSAGE_SIZE
from .._core.ws_handshake import socket_url
from . import intercept
from .answers import settle
from .sockets import shutdown_socket
from .interface import Call, ResponseStream, Transport
from .tls import ConnectionSettings
from .watchdog import Limits
from .websocket import Refusal, WebSocket, open_socket
from .ws_chain import NOT_FOUND_CODE, Chain, continuation
from .ws_stream import WsStream

__all__ = ["CONNECTION_LIMIT_CODE", "DEFAULT_MAX_AGE", "SocketStats", "WebSocketTransport"]

log = get_logger("dshstream.transport")

#: the error code of a connection past the server's age cap (rule 4)
CONNECTION_LIMIT_CODE = "websocket_connection_limit_reached"
#: seconds a socket is kept before it is replaced (rule 5; OpenAI's cap is 60 minutes)
DEFAULT_MAX_AGE = 55 * 60.0
#: upgrade answers that say there is no WebSocket here (rule 5)
_NO_SOCKET_STATUSES = frozenset({400, 404, 405, 426, 501})
T = TypeVar("T")
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0


@dataclass
class SocketStats:
    """What a transport did (rule 6)."""

    #: upgrades that succeeded
    connects: int = 0
    #: turns sent over the socket
    socket_turns: int = 0
    #: turns sent over HTTP (rule 1 and the fallback of rule 5)
    http_turns: int = 0
    #: sockets replaced before a turn: closed while idle, too old, or capped (rules 4, 5)
    replaced: int = 0
    #: connects that failed
    failed_connects: int = 0
    #: turns sent as ``previous_response_id`` + new items (rule 7)
    chained_turns: int = 0


class _NoSocket(Exception):
    """This turn cannot have the socket: it goes over HTTP (rule 5)."""


class WebSocketTransport(Transport):
    """Streams Responses turns over one kept WebSocket, everything else over ``http``."""

    def __init__(
        self,
        http: Transport,
        *,
        connection: ConnectionSettings | None = None,
        connect_timeout: float = 10.0,
        fallback: bool = True,
        max_reconnects: int = 5,
        max_age: float = DEFAULT_MAX_AGE,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        trust_env: bool = True,
        chain: bool = False,
    ) -> None:
        self.http = http
        #: send a continuation as ``previous_response_id`` + new items (rule 7)
        self.chain = chain
        self.connection = connection if connection is not None else ConnectionSettings()
        self.connect_timeout = connect_timeout
        self.fallback = fallback
        self.max_reconnects = max_reconnects
        self.max_age = max_age
        self.max_message_size = max_message_size
        self.trust_env = trust_env
        self.stats = SocketStats()
        self._lock = threading.Lock()
        self._ws: WebSocket | None = None
        self._busy = False
        self._failures = 0  # connects failed in a row (rule 5)
        self._retry_at = 0.0
        self._given_up: str | None = None  # why the socket is not tried any more
        #: the socket's last completed turn, for chaining (ws_chain rule 3)
        self._chain: tuple[WebSocket, Chain] | None = None
        self._context: Any = None

    def __repr__(self) -> str:
        return f"WebSocketTransport(http={self.http!r}, fallback={self.fallback!r})"

    @property
    def connected(self) -> bool:
        """Whether a socket is open and kept for the next turn."""
        ws = self._ws
        return ws is not None and ws.open

    @property
    def given_up(self) -> str | None:
        """Why every turn goes over HTTP now, or ``None`` (rule 5)."""
        return self._given_up

    # ------------------------------------------------------------------ the seam

    def send_stream(self, method: str, request: HttpRequest, limits: Limits, started: float | None) -> ResponseStream:
        """A turn over the socket (rules 1-5), or over HTTP."""
        if method != "POST" or request.body.get("background") or intercept.current() is not None:
            return self._over_http(method, request, limits, started)
        with self._lock:
            if self._busy or self._given_up is not None:
                busy = True
            else:
                busy = False
                self._busy = True
        if busy:
            return self._over_http(method, request, limits, started)
        try:
            stream = self._turn(request, limits, started)
        except _NoSocket as why:
            self._idle()
            log.info("%s: this turn goes over HTTP (%s)", limits.provider, why)
            return self._over_http(method, request, limits, started)
        except BaseException:
            self._idle()
            raise
        self.stats.socket_turns += 1
        return stream

    def _over_http(self, method: str, request: HttpRequest, limits: Limits, started: float | None) -> ResponseStream:
        self.stats.http_turns += 1
        return self.http.send_stream(method, request, limits, started)

    def send_call(
        self, method: str, request: HttpRequest, data: bytes | None, call: Call, read: Callable[[ResponseStream], T]
    ) -> T:
        """Over HTTP, always (rule 1)."""
        return self.http.send_call(method, request, data, call, read)

    def close(self) -> None:
        """Close the kept socket (rule 6); the next turn connects again. A turn in flight on
        it (another thread's) is cut: its read returns at once and the turn ends as a cut
        connection ends."""
        with self._lock:
            ws, self._ws = self._ws, None
            busy = self._busy
        if ws is None:
            return
        if busy:
            shutdown_socket(ws.sock)  # wakes the reader; closing alone would not
            ws.close(wait=False)
        else:
            ws.close()

    # ------------------------------------------------------------------ one turn

    def _turn(self, request: HttpRequest, limits: Limits, started: float | None) -> WsStream:
        started = limits.start(started, time.monotonic())  # base rule 1: nothing starts past a limit
        body = _create_body(request)
        stream = WsStream(request, limits, started, self._done)
        stream.sent_body = body
        again = False  # a socket was replaced once already (rule 4)
        whole = not self.chain  # send the whole body (ws_chain rule 3: the server lost the chain)
        try:
            for _ in range(3):
                ws, fresh = self._socket(request, stream, limits)
                if not stream.bind(ws):
                    stream.raise_if_aborted()
                ws.sock.settimeout(_read_timeout(limits))  # a backstop to the watchdog (rule 3)
                chain = self._chain if self._chain is not None and self._chain[0] is ws else None
                chained = None if whole or chain is None else continuation(chain[1], body)
                message = encode_json_body({"type": "response.create", **(chained or body)})
                try:
                    ws.send_text(message)
                    first = stream.read_message()
                except LlmError as exc:
                    if stream.aborted or fresh or again or exc.failure.code != "TRANSPORT":
                        raise
                    first = None
                except OSError:
                    stream.raise_if_aborted()
                    if fresh or again:
                        raise error_for(
                            make_failure(
                                "TRANSPORT",
                                f"{limits.provider}: the WebSocket failed while sending (TRANSPORT)",
                                provider=limits.provider,
                            )
                        ) from None
                    first = None
                if first is None:
                    stream.raise_if_aborted()
                    self._drop(ws)
                    stream.unbind()
                    if fresh or again:
                        raise error_for(
                            make_failure(
                                "TRANSPORT",
                                f"{limits.provider}: the WebSocket closed before the response began (TRANSPORT)",
                                provider=limits.provider,
                            )
                        )
                    self.stats.replaced += 1
                    again = True
                    continue  # rule 4: a kept socket closed while idle, once more afresh
                payload = loads_or_none(first.decode("utf-8")) if first.lstrip()[:1] == b"{" else None
                if isinstance(payload, dict) and payload.get("type") == "error":
                    failure = _error_code(payload)
                    if failure == CONNECTION_LIMIT_CODE and not again:
                        self._drop(ws)
                        stream.unbind()
                        self.stats.replaced += 1
                        again = True
                        continue  # rule 4: the age cap, once more on a fresh socket
                    if failure == NOT_FOUND_CODE and chained is not None:
                        self._chain = None
                        whole = True
                        continue  # ws_chain rule 3: once more, whole, on the same socket
                    stream.ended = True
                    stream.release()  # nothing of the turn began: the socket stays
                    raise error_for(
                        classify_error_payload(
                            payload,
                            provider=limits.provider,
                            status=payload.get("status") if isinstance(payload.get("status"), int) else None,
                            secrets=request.secrets,
                        )
                    )
                stream.first(first)
                if chained is not None:
                    self.stats.chained_turns += 1
                return stream
            raise AssertionError("unreachable")  # pragma: no cover - every pass returns, raises or is one of 2 retries
        except BaseException:
            stream.close()
            raise

    def _socket(self, request: HttpRequest, stream: WsStream, limits: Limits) -> tuple[WebSocket, bool]:
        """The kept socket, or a fresh one (rule 5); ``fresh`` says which."""
        ws = self._ws
        if ws is not None:
            if ws.open and time.monotonic() - ws.opened < self.max_age and not ws.stale():
                return ws, False
            self._drop(ws)
            self.stats.replaced += 1
        return self._connect(request, stream, limits), True

    def _connect(self, request: HttpRequest, stream: WsStream, limits: Limits) -> WebSocket:
        provider = limits.provider
        now = time.monotonic()
        if self._failures and now < self._retry_at:
            self._unavailable(provider, "a reconnect is backing off")
        where = socket_url(request.url)
        proxy = self.connection.proxy_for(request.url, self.trust_env)
        if proxy is not None and urlsplit(proxy).scheme.lower() != "http":
            why = f"a {urlsplit(proxy).scheme.lower()} proxy applies to the URL"
            self._give_up(why)
            raise _NoSocket(why)
        timeout = self.connect_timeout
        if limits.deadline is not None:
            timeout = max(0.001, min(timeout, limits.deadline - now))
        try:
            if where.secure and self._context is None:
                self._context = self.connection.ssl_context(self.trust_env)
            outcome = open_socket(
                where,
                request,
                context=self._context if where.secure else None,
                timeout=timeout,
                attach=stream.attach,
                provider=provider,
                max_message_size=self.max_message_size,
                proxy=proxy,
            )
        except LlmError as exc:
            stream.raise_if_aborted()
            self._failed(provider, exc)
            raise AssertionError("unreachable") from None  # pragma: no cover - _failed raises
        except (OSError, ValueError) as exc:  # the TLS context itself (a bad bundle)
            stream.raise_if_aborted()
            self._failed(provider, error_for(make_failure("TLS", f"{provider}: {type(exc).__name__} (TLS)")))
            raise AssertionError("unreachable") from None  # pragma: no cover
        if isinstance(outcome, Refusal):
            self._refused(outcome, request, provider)
        self._failures = 0
        self.stats.connects += 1
        with self._lock:
            self._ws = outcome
        return outcome

    def _refused(self, refusal: Refusal, request: HttpRequest, provider: str) -> NoReturn:
        """An upgrade answered with another status (rule 5)."""
        status = refusal.status
        if status < 400 or status in _NO_SOCKET_STATUSES:
            why = f"the server answered the WebSocket upgrade with HTTP {status}"
            self._give_up(why)
            if self.fallback:
                raise _NoSocket(why)
            if status < 300:  # a plain HTTP server that ignored the upgrade
                raise error_for(
                    make_failure("MALFORMED_RESPONSE", f"{provider}: {why}, not 101 (MALFORMED_RESPONSE)", provider=provider)
                )
        settle(_RefusalAnswer(refusal), request, provider)  # raises its classified failure
        raise AssertionError("unreachable")  # pragma: no cover - settle raises for non-2xx

    def _failed(self, provider: str, exc: LlmError) -> None:
        """A connect failed (rule 5): back off, maybe give up; over HTTP or raised."""
        self.stats.failed_connects += 1
        self._failures += 1
        delay = min(_INITIAL_DELAY * 2 ** (self._failures - 1), _MAX_DELAY) * (0.75 + random.random() * 0.25)
        self._retry_at = time.monotonic() + delay
        if self._failures > self.max_reconnects:
            self._give_up(f"{self._failures} connects failed in a row")
        if self.fallback and exc.failure.code not in ("ABORTED",):
            raise _NoSocket(f"the WebSocket connect failed ({exc.failure.code})")
        raise exc

    def _unavailable(self, provider: str, why: str) -> None:
        if self.fallback:
            raise _NoSocket(why)
        raise error_for(make_failure("TRANSPORT", f"{provider}: no WebSocket: {why} (TRANSPORT)", provider=provider))

    def _give_up(self, why: str) -> None:
        if self._given_up is None:
            log.warning("the WebSocket is given up for this transport: %s; turns go over HTTP", why)
        self._given_up = why

    # ------------------------------------------------------------------ bookkeeping

    def _done(self, stream: WsStream, ws: WebSocket, reusable: bool) -> None:
        """A turn's stream ended (ws_stream rule 4): keep the socket, or close it; with
        ``chain``, remember the response it completed (ws_chain rule 3)."""
        if not reusable:
            self._drop(ws, wait=False)
        elif self.chain:
            self._chain = _chain_of(stream, ws)
        self._idle()

    def _drop(self, ws: WebSocket, *, wait: bool = True) -> None:
        with self._lock:
            if self._ws is ws:
                self._ws = None
        ws.close(wait=wait)

    def _idle(self) -> None:
        with self._lock:
            self._busy = False


def _create_body(request: HttpRequest) -> dict[str, Any]:
    """The ``response.create`` body of a request (rule 1)."""
    return {key: value for key, value in request.body.items() if key not in _HTTP_ONLY}


#: the body fields of an HTTP stream that ``response.create`` does not carry (rule 1)
_HTTP_ONLY = ("stream", "background", "stream_options")


def _chain_of(stream: WsStream, ws: WebSocket) -> tuple[WebSocket, Chain] | None:
    """The chain a completed turn leaves on its socket (ws_chain rule 3), or none."""
    event = stream.last_event
    response = event.get("response") if event is not None and event.get("type") == "response.completed" else None
    if not isinstance(response, dict) or stream.sent_body is None:
        return None
    response_id, output = response.get("id"), response.get("output")
    if not isinstance(response_id, str) or not isinstance(output, list):
        return None
    if not all(isinstance(item, dict) for item in output):
        return None
    return ws, Chain(stream.sent_body, response_id, output)


def _read_timeout(limits: Limits) -> float | None:
    timeout = limits.read_timeout
    if limits.deadline is not None:
        left = max(0.001, limits.deadline - time.monotonic())
        timeout = left if timeout is None else min(timeout, left)
    return timeout


def _error_code(payload: Mapping[str, Any]) -> str | None:
    error = payload.get("error")
    code = error.get("code") if isinstance(error, Mapping) else payload.get("code")
    return code if isinstance(code, str) else None


class _RefusalAnswer:
    """A refused upgrade as an HTTP answer, for :func:`~dshstream._transport.answers.settle`."""

    def __init__(self, refusal: Refusal) -> None:
        self.status = refusal.status
        self.headers = refusal.headers
        self.request_id: str | None = None
        self.prefix = b""
        self._body = refusal.body

    def __iter__(self) -> Iterator[bytes]:
        yield self._body

    def read_bounded(self, limit: int) -> tuple[bytes, bool]:
        return self._body[:limit], len(self._body) > limit

    def close(self) -> None:
        pass
