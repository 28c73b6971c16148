"""The transport interface: what an adapter sends with, and what it reads back.

Contract: stdlib, the core, the watchdog's :class:`~dshstream._transport.watchdog.Limits`
and the answer readers (no ``requests``, no sockets). :class:`Transport` is what an
adapter calls —
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
5. **Written once, over two primitives.** The methods an adapter calls are written here,
   once, and a transport inherits them by subclassing :class:`Transport` (httpx's model:
   one ``handle_request`` under the convenience calls). It writes two primitives:
   :meth:`Transport.send_stream` (one stream request under its
   :class:`~dshstream._transport.watchdog.Limits`) and :meth:`Transport.send_call` (one
   non-stream request under a :class:`Call`, its answer handed to a reader). A
   non-stream call's optional keywords are declared once, as :class:`CallOptions`, and
   become one :class:`Call` value.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, TypeVar
from urllib.parse import urlencode

from .._core.http_request import HttpRequest
from .._core.pump import Body
from .._core.validate import invalid
from .answers import ERROR_BODY_LIMIT, bytes_answer, json_answer
from .watchdog import Limits

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_JSON_TIMEOUT",
    "DEFAULT_QUIET_TIMEOUT",
    "ERROR_BODY_LIMIT",
    "JSON_BODY_LIMIT",
    "Call",
    "CallOptions",
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
#: the most bytes read from a non-streamed JSON body (a model list)
JSON_BODY_LIMIT = 16 * 1024 * 1024

T = TypeVar("T")


class CallOptions(TypedDict, total=False):
    """The optional keywords of every non-stream call (rule 5), each defaulting to
    :class:`Call`'s."""

    #: credentials redacted from a failure (a form's refresh token, the request's key)
    secrets: tuple[str, ...]
    #: seconds in all, from the call on (``None``: no limit)
    timeout: float | None
    #: an event another thread may set: ``ABORTED``
    cancel: threading.Event | None
    #: the most bytes read of the answer (not of an open ``get_stream`` answer)
    limit: int


@dataclass(frozen=True)
class Call:
    """A non-stream call's options (rules 1, 5): the provider its failures name, the
    credentials redacted from them, the total time limit, the caller's cancel and the most
    bytes read."""

    provider: str
    secrets: tuple[str, ...] = ()
    #: seconds in all, from the call on (``None``: no limit)
    timeout: float | None = DEFAULT_JSON_TIMEOUT
    cancel: threading.Event | None = None
    limit: int = JSON_BODY_LIMIT

    def limits(self) -> Limits:
        """The call's limits: ``timeout`` seconds in all from now, no idle clock (rule 1)."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        return Limits(self.provider, cancel=self.cancel, deadline=deadline)


class ResponseStream(Body, Protocol):
    """An open 2xx answer: iterate for its body's byte pieces (the pump's
    :class:`~dshstream._core.pump.Body`); always closed (rule 3)."""

    #: bytes read ahead while the answer was judged, handed out first
    prefix: bytes

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

    def __iter__(self) -> Iterator[bytes]: ...

    def read_bounded(self, limit: int) -> tuple[bytes, bool]:
        """The body up to ``limit`` bytes, and whether more was there."""

    def close(self) -> None:
        """Release the connection (idempotent, never raises)."""

    def __enter__(self) -> ResponseStream: ...

    def __exit__(self, *exc: object) -> None: ...


class Transport(Protocol):
    """Sends :class:`~dshstream._core.http_request.HttpRequest` values (rules 1-5): a
    transport subclasses it and writes the two primitives."""

    def send_stream(self, method: str, request: HttpRequest, limits: Limits, started: float | None) -> ResponseStream:
        """Send a stream request (``POST`` with its body, or ``GET``) under ``limits``, the
        idle clock running from ``started`` (default now); return the open 2xx stream, or
        raise a classified LlmError (rules 1, 2)."""

    def send_call(
        self, method: str, request: HttpRequest, data: bytes | None, call: Call, read: Callable[[ResponseStream], T]
    ) -> T:
        """Send a non-stream request (``data`` its body; ``None`` for a ``GET``) under
        ``call``'s limits and return ``read`` of its 2xx answer, or raise a classified
        LlmError (rule 1)."""

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
        """POST ``request`` (``method="GET"``: GET it, without a body; rule 4) and return
        the open stream, or raise a classified LlmError. ``started`` (``time.monotonic()``,
        default now) is when the attempt began: its idle clock runs from there (a
        credential fetch before it counts). ``quiet_timeout`` replaces ``idle_timeout``
        while the stream is in a quiet phase (watchdog rule 2)."""
        if method not in ("POST", "GET"):
            raise invalid(f"Transport.open method must be 'POST' or 'GET', got {method!r}")
        limits = Limits(
            provider, cancel=cancel, deadline=deadline, idle_timeout=idle_timeout, quiet_timeout=quiet_timeout
        )
        return self.send_stream(method, request, limits, started)

    def get_json(self, url: str, headers: dict[str, str], *, provider: str, **options: Unpack[CallOptions]) -> Any:
        """GET ``url`` and return its JSON — at most ``limit`` bytes, within ``timeout``
        seconds in all — or raise a classified LlmError (rule 1)."""
        call = Call(provider, **options)
        return self.send_call("GET", _request(url, headers, call), None, call, _json(call))

    def post_form(
        self, url: str, form: Mapping[str, str], headers: Mapping[str, str] | None = None, *, provider: str,
        **options: Unpack[CallOptions],
    ) -> Any:
        """POST ``form`` (``application/x-www-form-urlencoded``) to ``url`` and return the
        JSON answer, read as :meth:`get_json` reads one (``secrets``: the form's
        credentials, redacted from a failure)."""
        call = Call(provider, **options)
        sent = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json", **(headers or {})}
        return self.send_call("POST", _request(url, sent, call), urlencode(dict(form)).encode("ascii"), call, _json(call))

    def post_json(
        self, url: str, body: Mapping[str, Any], headers: Mapping[str, str] | None = None, *, provider: str,
        **options: Unpack[CallOptions],
    ) -> Any:
        """POST ``body`` as JSON to ``url`` (not a stream: a token count, a batch) and
        return the JSON answer."""
        call = Call(provider, **options)
        sent = {"content-type": "application/json", "accept": "application/json", **(headers or {})}
        request = HttpRequest(url=url, headers=sent, body=dict(body), secrets=call.secrets)
        return self.send_call("POST", request, request.body_bytes(), call, _json(call))

    def post_bytes(
        self, url: str, data: bytes, content_type: str, headers: Mapping[str, str] | None = None, *, provider: str,
        **options: Unpack[CallOptions],
    ) -> Any:
        """POST ``data`` (already encoded, labelled ``content_type``: a multipart upload)
        to ``url`` and return the JSON answer."""
        call = Call(provider, **options)
        sent = {"accept": "application/json", **(headers or {}), "content-type": content_type}
        return self.send_call("POST", _request(url, sent, call), data, call, _json(call))

    def get_bytes(self, url: str, headers: Mapping[str, str], *, provider: str, **options: Unpack[CallOptions]) -> bytes:
        """GET ``url`` and return its body, at most ``limit`` bytes (a larger body is
        ``MALFORMED_RESPONSE``, never cut silently)."""
        call = Call(provider, **options)
        return self.send_call("GET", _request(url, headers, call), None, call,
                              lambda stream: bytes_answer(stream, call.provider, call.limit))

    def get_stream(
        self, url: str, headers: Mapping[str, str], *, provider: str, **options: Unpack[CallOptions]
    ) -> ResponseStream:
        """GET ``url`` and return its open 2xx answer for the caller to read piece by piece
        and close (a result file read as it arrives, never held whole; the caller bounds
        it)."""
        call = Call(provider, **options)
        return self.send_call("GET", _request(url, headers, call), None, call, _handed_on)


def _request(url: str, headers: Mapping[str, str], call: Call) -> HttpRequest:
    """A request without a JSON body: a GET's, or a POST's whose bytes are given."""
    return HttpRequest(url=url, headers=dict(headers), body={}, secrets=call.secrets)


def _json(call: Call) -> Callable[[ResponseStream], Any]:
    """The reader of a JSON answer of at most ``call.limit`` bytes."""
    return lambda stream: json_answer(stream, call.provider, call.limit)


def _handed_on(stream: ResponseStream) -> ResponseStream:
    return stream
