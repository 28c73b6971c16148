"""The transport interface: what an adapter sends with, and what it reads back.

Contract: stdlib and the core only (no ``requests``, no sockets); declarations and the
defaults they share, no behaviour. :class:`Transport` is what an adapter calls —
:class:`~dshstream._transport.client.HttpTransport` over ``requests``,
:class:`~dshstream._transport.memory.MemoryTransport` in memory,
:class:`~dshstream._transport.ws_transport.WebSocketTransport` with Responses turns on a
kept WebSocket — and
:class:`ResponseStream` is what :meth:`Transport.open` returns: the byte pump's
:class:`~dshstream._core.pump.Body` plus the answer's status, headers and request id.
Every transport keeps these rules (both built-in ones get them from
:class:`~dshstream._transport.base.BaseTransport`):

1. **One outcome per call.** ``open`` returns the stream of a 2xx answer that may be an
   event stream, or raises the classified :class:`~dshstream._core.errors.LlmError`
   (what answers are refused and why: :mod:`~dshstream._transport.answers`). ``get_json``,
   ``post_form`` and ``post_json`` return the parsed JSON of a 2xx answer of at most ``limit`` bytes
   read within ``timeout`` seconds in all, or raise.
2. **The limits hold from the call on.** ``cancel`` (an event another thread may set),
   ``deadline`` (a ``time.monotonic()`` value) and ``idle_timeout`` (seconds without
   content; the clock runs from ``started``, default the call) end a call at any phase —
   before it is sent, while it waits for headers, between and during body reads — with
   ``ABORTED`` or ``TIMEOUT``; so do the stream's ``abort()`` and ``close()`` from any
   thread. Content is what the consumer says it is: it calls ``touch()`` when a read
   produced chunks (keep-alives are liveness, not content), and ``quiet(True)`` while the
   provider is known to work without content — then ``quiet_timeout`` applies instead of
   ``idle_timeout``. ``longest_silence`` is the longest stretch without content so far.
3. **Always closed.** A stream is a context manager; ``close()`` is idempotent and never
   raises; ``release()`` after the wire's terminal marker may hand a connection back for
   reuse (bounded in time), or just close.
4. **Two methods.** ``open`` POSTs the request's body by default; ``method="GET"`` sends
   no body (continuing a stored stream: a Responses ``GET .../responses/{id}?stream=true``).
   Either way the answer is judged the same (rule 1).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

from .._core.http_request import HttpRequest
from .._core.pump import Body

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_JSON_TIMEOUT",
    "DEFAULT_QUIET_TIMEOUT",
    "ERROR_BODY_LIMIT",
    "JSON_BODY_LIMIT",
    "ResponseStream",
    "Transport",
]

#: seconds without content before a stream is a ``TIMEOUT`` (the default ``idle_timeout``)
DEFAULT_IDLE_TIMEOUT = 300.0
#: seconds without content while the provider is known to be working — a tool input being
#: buffered, a server tool running, a reasoning item — (the default ``quiet_timeout``)
DEFAULT_QUIET_TIMEOUT = 900.0
#: total time limit of a non-streamed JSON request (``list_models``), seconds
DEFAULT_JSON_TIMEOUT = 30.0
#: the most bytes read from an error body
ERROR_BODY_LIMIT = 65536
#: the most bytes read from a non-streamed JSON body (a model list)
JSON_BODY_LIMIT = 16 * 1024 * 1024


class ResponseStream(Body, Protocol):
    """An open 2xx answer: iterate for its body's byte pieces (the pump's
    :class:`~dshstream._core.pump.Body`); always closed (rule 3)."""

    @property
    def status(self) -> int:
        """The HTTP status (2xx)."""

    @property
    def headers(self) -> Mapping[str, str]:
        """The response headers as received."""

    @property
    def request_id(self) -> str | None:
        """The provider's request id (never one that echoes a credential)."""

    @property
    def aborted(self) -> bool:
        """Whether ``abort()`` (or a limit) ended the stream."""

    @property
    def longest_silence(self) -> float:
        """The longest stretch without content so far, in seconds (rule 2)."""

    def close(self) -> None:
        """Release the connection (idempotent, never raises)."""

    def __enter__(self) -> ResponseStream: ...

    def __exit__(self, *exc: object) -> None: ...


class Transport(Protocol):
    """Sends :class:`~dshstream._core.http_request.HttpRequest` values (rules 1-3)."""

    def open(
        self,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        deadline: float | None = None,
        started: float | None = None,
        quiet_timeout: float | None = None,
        method: str = "POST",
    ) -> ResponseStream:
        """POST ``request`` (``method="GET"``: GET it, no body; rule 4) and return the open
        stream, or raise a classified LlmError."""

    def get_json(
        self,
        url: str,
        headers: dict[str, str],
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """GET ``url`` and return its JSON, or raise a classified LlmError."""

    def post_form(
        self,
        url: str,
        form: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """POST ``form`` (URL-encoded) to ``url`` and return the JSON answer, or raise."""

    def post_json(
        self,
        url: str,
        body: Mapping[str, Any],
        headers: Mapping[str, str] | None = None,
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """POST ``body`` as JSON to ``url`` (not a stream: a token count) and return the
        JSON answer, or raise a classified LlmError."""
