"""BaseTransport and BaseStream: what every transport does around one exchange, and what
every transport's stream holds of its answer.

Contract: no ``requests``, no sockets. A transport subclasses :class:`BaseTransport` and
writes one method, :meth:`BaseTransport._exchange` (send one request and return its
stream with the status and headers in, or raise the classified failure); the base writes
the two primitives of :class:`~dshstream._transport.interface.Transport` over it (whose
methods, the same for every transport, turn their arguments into the call's one
:class:`~dshstream._transport.watchdog.Limits`, which is all an exchange and its stream
are given of them):

1. **Nothing starts past a limit.** Before an exchange, the caller's cancel, the total
   deadline and the idle clock (running from ``started``, at most now) are checked
   (:meth:`~dshstream._transport.watchdog.Limits.reached`): an exhausted one raises
   ``ABORTED`` or ``TIMEOUT`` and nothing is sent.
2. **The answer judged.** A non-2xx answer is raised as its classified failure
   (:func:`~dshstream._transport.answers.settle`); a stream answer that is a JSON
   document or an HTML page is refused (answers rule 3); a JSON answer is bounded (answers
   rule 4).
3. **A GET is tried twice.** ``get_json`` (an idempotent GET: model lists, metadata) that
   fails with ``TRANSPORT`` — typically a pooled keep-alive connection the server had
   already closed (llama.cpp's server closes idle ones after 5 s) — is sent once more at
   once on a fresh connection, within the same total time limit, unless the caller
   cancelled meanwhile. Streams are POSTs: their retries are the adapter's policy, never
   this layer's; so are form POSTs (``post_form``: an OAuth token refresh), JSON POSTs
   (``post_json``: a token count) and raw-body POSTs (``post_bytes``: a multipart file
   upload), which are read exactly as ``get_json`` reads an answer. ``get_bytes`` (a
   provider batch's result file) is a GET like ``get_json``, tried twice the same way, and
   returns the body's bytes, at most ``limit`` of them (a larger body is
   ``MALFORMED_RESPONSE``, never cut silently); ``get_stream`` is the same GET returning the
   open answer, for a caller that reads a large body as it arrives (bounding it itself).
4. **One answer shape.** A transport's stream subclasses :class:`BaseStream` (a
   :class:`~dshstream._transport.watchdog.WatchedStream`) and writes how it waits for the
   answer and reads the body (``__iter__``, :attr:`BaseStream.prefix` first); the base
   keeps the status and headers as received and the request id taken from them (never
   one that echoes a credential), and reads a body to a bound (``read_bounded``), the same
   for every transport.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

from .._core.errors import LlmError
from .._core.headers import request_id_from
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .answers import refuse_non_stream, settle
from .interface import Call, Transport
from .watchdog import Limits, WatchedStream

__all__ = ["BaseStream", "BaseTransport"]

log = get_logger("dshstream.transport")


class BaseStream(WatchedStream):
    """What every transport's stream holds of its answer (rule 4), besides the limits and
    abort state of every stream (:mod:`~dshstream._transport.watchdog` rule 3)."""

    def __init__(self, request: HttpRequest, limits: Limits, started: float) -> None:
        super().__init__(limits, started)
        self.status = 0
        self.headers: dict[str, str] = {}
        #: bytes read ahead (while checking what the body is), handed out first
        self.prefix = b""
        self._request = request

    def _answered(self, status: int, headers: Mapping[str, str]) -> None:
        """The status and headers are in, kept as received; the request id comes from them
        (dropped when it echoes a credential: a server echoing the key back must not put
        it in a repr)."""
        self.status = status
        self.headers = dict(headers)
        self.request_id = request_id_from(self.headers, self._request.secrets)

    def read_bounded(self, limit: int) -> tuple[bytes, bool]:
        """The body up to ``limit`` bytes, and whether more was there."""
        pieces: list[bytes] = []
        size = 0
        for piece in self:
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                return b"".join(pieces)[:limit], True
        return b"".join(pieces), False

    def __iter__(self) -> Iterator[bytes]:
        """The body's pieces, :attr:`prefix` first: each transport's own."""
        raise NotImplementedError

    def release(self) -> None:
        """After the wire's terminal marker: the connection handed back, or closed
        (interface rule 3): each transport's own."""
        raise NotImplementedError


S = TypeVar("S", bound=BaseStream)
T = TypeVar("T")


class BaseTransport(Transport, ABC, Generic[S]):
    """A transport over :meth:`_exchange`, whose streams are ``S`` (rules 1-3); the
    methods an adapter calls come from :class:`~dshstream._transport.interface.Transport`
    (interface rule 5)."""

    @abstractmethod
    def _exchange(
        self, method: str, request: HttpRequest, data: bytes | None, limits: Limits, started: float, now: float
    ) -> S:
        """Send ``request`` (``data`` is its body) and return its stream, headers in, under
        ``limits`` (the idle clock running from ``started``; ``now`` is the time of the
        check, rule 1); or raise the classified failure (including the limits' own)."""

    def send_stream(self, method: str, request: HttpRequest, limits: Limits, started: float | None) -> S:
        """The open stream of a 2xx answer that may be an event stream (rule 2)."""
        data = request.body_bytes() if method == "POST" else None
        stream = self._send(method, request, data, limits, started)
        refuse_non_stream(stream, request, limits.provider)
        return stream

    def send_call(
        self, method: str, request: HttpRequest, data: bytes | None, call: Call, read: Callable[[S], T]
    ) -> T:
        """``read`` of the answer; a GET that fails with ``TRANSPORT`` sent once more at once
        (rule 3), any other request once."""
        limits = call.limits()
        if method != "GET":  # rule 3: a POST is never resent here
            return read(self._send(method, request, data, limits))
        for last in (False, True):
            try:
                return read(self._send(method, request, None, limits))
            except LlmError as exc:  # rule 3: once more on a fresh connection
                now = time.monotonic()  # cancelled meanwhile, or out of time: no second try
                if last or exc.failure.code != "TRANSPORT" or limits.reached(now, now) is not None:
                    raise
                log.info("%s: GET failed (%s); trying once more", limits.provider, exc.failure.code)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _send(
        self, method: str, request: HttpRequest, data: bytes | None, limits: Limits, started: float | None = None
    ) -> S:
        """Send ``request`` under ``limits``, the idle clock running from ``started`` (at
        most now; default now); return the stream of a 2xx answer, or raise the classified
        failure (rules 1, 2)."""
        now = time.monotonic()
        started = limits.start(started, now)
        return settle(self._exchange(method, request, data, limits, started, now), request, limits.provider)
