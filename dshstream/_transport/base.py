"""BaseTransport and BaseStream: what every transport does around one exchange, and what
every transport's stream holds of its answer.

Contract: no ``requests``, no sockets. A transport subclasses :class:`BaseTransport` and
writes one method, :meth:`BaseTransport._exchange` (send one request and return its
stream with the status and headers in, or raise the classified failure); the base gives
it the :class:`~dshstream._transport.interface.Transport` methods, the same for every
transport, and turns their arguments into the call's one
:class:`~dshstream._transport.watchdog.Limits`, which is all an exchange and its stream
are given of them:

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

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from .._core.errors import LlmError, error_for, make_failure
from .._core.headers import request_id_from
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.validate import invalid
from .answers import bytes_answer, json_answer, refuse_non_stream, settle
from .interface import DEFAULT_IDLE_TIMEOUT, DEFAULT_JSON_TIMEOUT, JSON_BODY_LIMIT
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


S = TypeVar("S", bound=BaseStream)
T = TypeVar("T")


class BaseTransport(ABC, Generic[S]):
    """A transport over :meth:`_exchange`, whose streams are ``S`` (rules 1-3)."""

    @abstractmethod
    def _exchange(
        self, method: str, request: HttpRequest, data: bytes | None, limits: Limits, started: float, now: float
    ) -> S:
        """Send ``request`` (``data`` is its body) and return its stream, headers in, under
        ``limits`` (the idle clock running from ``started``; ``now`` is the time of the
        check, rule 1); or raise the classified failure (including the limits' own)."""

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
    ) -> S:
        """POST ``request`` (``method="GET"``: GET it, without a body; interface rule 4)
        and return the open stream, or raise a classified LlmError.
        ``started`` (``time.monotonic()``, default now) is when the attempt began: its idle
        clock runs from there (a credential fetch before it counts). ``quiet_timeout``
        replaces ``idle_timeout`` while the stream is in a quiet phase (watchdog rule 2)."""
        if method not in ("POST", "GET"):
            raise invalid(f"Transport.open method must be 'POST' or 'GET', got {method!r}")
        limits = Limits(
            provider, cancel=cancel, deadline=deadline, idle_timeout=idle_timeout, quiet_timeout=quiet_timeout
        )
        data = request.body_bytes() if method == "POST" else None
        stream = self._send(method, request, data, limits, started)
        refuse_non_stream(stream, request, provider)
        return stream

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
        """GET ``url`` and return its JSON — at most ``limit`` bytes, within ``timeout``
        seconds in all — or raise a classified LlmError."""
        request = HttpRequest(url=url, headers=headers, body={}, secrets=secrets)
        return self._get_twice(request, _json_limits(provider, timeout, cancel),
                               lambda s: json_answer(s, provider, limit))

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
        """POST ``form`` (``application/x-www-form-urlencoded``) to ``url`` and return the
        JSON answer, exactly as :meth:`get_json` reads one: no redirects, at most
        ``limit`` bytes within ``timeout`` seconds in all, a non-2xx answer classified with
        ``secrets`` (the form's credentials) redacted — or raise a classified LlmError."""
        data = urlencode(dict(form)).encode("ascii")
        fixed = {"content-type": "application/x-www-form-urlencoded", "accept": "application/json"}
        return self._post(url, data, {**fixed, **(headers or {})}, provider, secrets, timeout, cancel, limit)

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
        """POST ``body`` as JSON to ``url`` and return the JSON answer, read as
        :meth:`post_form` reads one (rule 3: never resent here) — or raise."""
        fixed = {"content-type": "application/json", "accept": "application/json"}
        return self._post(url, None, {**fixed, **(headers or {})}, provider, secrets, timeout, cancel, limit, dict(body))

    def post_bytes(
        self,
        url: str,
        data: bytes,
        content_type: str,
        headers: Mapping[str, str] | None = None,
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """POST ``data`` (already encoded, labelled ``content_type``: a multipart upload) to
        ``url`` and return the JSON answer, read as :meth:`post_form` reads one (rule 3)."""
        sent = {"accept": "application/json", **(headers or {}), "content-type": content_type}
        return self._post(url, data, sent, provider, secrets, timeout, cancel, limit)

    def get_bytes(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> bytes:
        """GET ``url`` and return its body, at most ``limit`` bytes within ``timeout``
        seconds in all, tried twice as :meth:`get_json` is (rule 3) — or raise."""
        request = HttpRequest(url=url, headers=dict(headers), body={}, secrets=secrets)
        return self._get_twice(request, _json_limits(provider, timeout, cancel),
                               lambda s: bytes_answer(s, provider, limit))

    def get_stream(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
    ) -> S:
        """GET ``url`` and return its open 2xx answer for the caller to read piece by piece
        and close (a result file read as it arrives, never held whole), within ``timeout``
        seconds in all; tried twice as :meth:`get_json` is (rule 3), before any body byte
        is read."""
        request = HttpRequest(url=url, headers=dict(headers), body={}, secrets=secrets)
        return self._get_twice(request, _json_limits(provider, timeout, cancel), lambda s: s)

    def _post(
        self,
        url: str,
        data: bytes | None,
        headers: dict[str, str],
        provider: str,
        secrets: tuple[str, ...],
        timeout: float | None,
        cancel: threading.Event | None,
        limit: int,
        body: dict[str, Any] | None = None,
    ) -> Any:
        """POST ``data`` (``None``: ``body`` as JSON) with ``headers`` and read the JSON
        answer: what :meth:`post_form`, :meth:`post_json` and :meth:`post_bytes` share
        (rule 3: never resent here)."""
        request = HttpRequest(url=url, headers=headers, body=body or {}, secrets=secrets)
        limits = _json_limits(provider, timeout, cancel)
        sent = request.body_bytes() if data is None else data
        return json_answer(self._send("POST", request, sent, limits), provider, limit)

    def _get_twice(self, request: HttpRequest, limits: Limits, read: Callable[[S], T]) -> T:
        """``read`` of the GET's answer; a ``TRANSPORT`` failure sent once more at once (rule 3)."""
        for last in (False, True):
            try:
                return read(self._send("GET", request, None, limits))
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
        started = now if started is None else min(started, now)
        reached = limits.reached(started, now)
        if reached is not None:
            raise error_for(make_failure(*reached, provider=limits.provider))
        return settle(self._exchange(method, request, data, limits, started, now), request, limits.provider)


def _json_limits(provider: str, timeout: float | None, cancel: threading.Event | None) -> Limits:
    """The limits of a JSON request: ``timeout`` seconds in all from now, no idle clock."""
    return Limits(provider, cancel=cancel, deadline=time.monotonic() + timeout if timeout is not None else None)
