"""BaseTransport: what every transport does around one exchange.

Contract: no ``requests``, no sockets. A transport subclasses :class:`BaseTransport` and
writes one method, :meth:`BaseTransport._exchange` (send one request and return its
stream with the status and headers in, or raise the classified failure); the base gives
it the :class:`~dshstream._transport.interface.Transport` methods, the same for every
transport:

1. **Nothing starts past a limit.** Before an exchange, the caller's cancel, the total
   deadline and the idle clock (running from ``started``, at most now) are checked
   (:func:`~dshstream._transport.watchdog.limit_reached`): an exhausted one raises
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
   this layer's; so are form POSTs (``post_form``: an OAuth token refresh).
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import urlencode

from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .answers import Answer, json_answer, refuse_non_stream, settle
from .interface import DEFAULT_IDLE_TIMEOUT, DEFAULT_JSON_TIMEOUT, JSON_BODY_LIMIT
from .watchdog import limit_reached

__all__ = ["BaseTransport"]

log = get_logger("dshstream.transport")

S = TypeVar("S", bound=Answer)


class BaseTransport(ABC, Generic[S]):
    """A transport over :meth:`_exchange`, whose streams are ``S`` (rules 1-3)."""

    @abstractmethod
    def _exchange(
        self,
        method: str,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        data: bytes | None,
        started: float,
        now: float,
    ) -> S:
        """Send ``request`` (``data`` is its body) and return its stream, headers in, under
        the limits; or raise the classified failure (including the limits' own)."""

    def open(
        self,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        deadline: float | None = None,
        started: float | None = None,
    ) -> S:
        """POST ``request`` and return the open stream, or raise a classified LlmError.
        ``started`` (``time.monotonic()``, default now) is when the attempt began: its idle
        clock runs from there (a credential fetch before it counts)."""
        stream = self._send(
            "POST",
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=idle_timeout,
            deadline=deadline,
            data=request.body_bytes(),
            started=started,
        )
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
        deadline = time.monotonic() + timeout if timeout is not None else None
        for last in (False, True):
            try:
                stream = self._send(
                    "GET", request, provider=provider, cancel=cancel, idle_timeout=None, deadline=deadline
                )
                return json_answer(stream, provider, limit)
            except LlmError as exc:  # rule 3: once more on a fresh connection
                if (
                    last
                    or exc.failure.code != "TRANSPORT"
                    or (cancel is not None and cancel.is_set())
                    or (deadline is not None and time.monotonic() >= deadline)
                ):
                    raise
                log.info("%s: GET failed (%s); trying once more", provider, exc.failure.code)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

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
        request = HttpRequest(
            url=url,
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "accept": "application/json",
                **(headers or {}),
            },
            body={},
            secrets=secrets,
        )
        deadline = time.monotonic() + timeout if timeout is not None else None
        stream = self._send(
            "POST",
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=None,
            deadline=deadline,
            data=urlencode(dict(form)).encode("ascii"),
        )
        return json_answer(stream, provider, limit)

    def _send(
        self,
        method: str,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        data: bytes | None = None,
        started: float | None = None,
    ) -> S:
        """Send ``request`` under its limits; return the stream of a 2xx answer, or raise
        the classified failure (rules 1, 2)."""
        now = time.monotonic()
        started = now if started is None else min(started, now)
        reached = limit_reached(provider, cancel, deadline, idle_timeout, started, now)
        if reached is not None:
            raise error_for(make_failure(*reached, provider=provider))
        stream = self._exchange(
            method,
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=idle_timeout,
            deadline=deadline,
            data=data,
            started=started,
            now=now,
        )
        return settle(stream, request, provider)
