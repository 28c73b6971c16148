"""Foreign exceptions: what ``requests``, ``urllib3`` and sockets raise, mapped once.

Contract: every exception a send or a body read raises is mapped here into an
:class:`~dshstream._core.errors.LlmError` of a stable code, whose message names only the
provider and what failed, and whose ``detail`` is the exception's type and text redacted
with the request's credentials (at most 1,900 characters). Callers raise the result
``from None``: a foreign exception is never chained raw (its text can carry a key in a
URL).

1. **A send** (before headers): an invalid or schemeless URL is ``INVALID_OPTIONS``; a
   connect timeout is ``TIMEOUT`` ("connect timed out"); another timeout is ``TIMEOUT``
   ("no response before the timeout"); any other ``requests`` exception, ``OSError`` or
   ``ValueError`` is ``TRANSPORT``; anything else is ``UNKNOWN``. Each is logged once, at
   WARNING, without its detail.
2. **A read** (the body, mid-stream): a timeout anywhere in the exception's cause chain is
   ``TIMEOUT`` ("read timed out"), anything else ``TRANSPORT`` ("the response body failed
   mid-stream"); the failure carries the stream's request id.
"""

from __future__ import annotations

import socket

import requests

from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.redact import redact

__all__ = ["is_timeout", "read_failure", "send_failure"]

log = get_logger("dshstream.transport")


def send_failure(exc: BaseException, request: HttpRequest, provider: str) -> LlmError:
    """The error for a send that raised ``exc`` (rule 1)."""
    if isinstance(exc, requests.exceptions.InvalidURL) or isinstance(
        exc, (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)
    ):
        code, what = "INVALID_OPTIONS", "the base URL is not valid"
    elif isinstance(exc, requests.exceptions.ConnectTimeout):
        code, what = "TIMEOUT", "connect timed out"
    elif isinstance(exc, requests.exceptions.Timeout):
        code, what = "TIMEOUT", "no response before the timeout"
    elif isinstance(exc, (requests.exceptions.RequestException, OSError, ValueError)):
        code, what = "TRANSPORT", "request failed"
    else:
        code, what = "UNKNOWN", "request failed unexpectedly"
    detail = redact(f"{type(exc).__name__}: {exc}", request.secrets, limit=1900)
    log.warning("%s: %s (%s)", provider, what, code)
    return error_for(make_failure(code, f"{provider}: {what} ({code})", provider=provider, detail=detail))


def read_failure(
    exc: BaseException, secrets: tuple[str, ...], provider: str, request_id: str | None
) -> LlmError:
    """The error for a body read that raised ``exc`` (rule 2)."""
    detail = redact(f"{type(exc).__name__}: {exc}", secrets, limit=1900)
    if is_timeout(exc):
        code, what = "TIMEOUT", "read timed out"
    else:
        code, what = "TRANSPORT", "the response body failed mid-stream"
    return error_for(
        make_failure(
            code,
            f"{provider}: {what} ({code})",
            provider=provider,
            request_id=request_id,
            detail=detail,
        )
    )


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` or anything in its cause chain is a timeout."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (TimeoutError, socket.timeout, requests.Timeout)):
            return True
        if "timed out" in str(current).lower() or "timeout" in type(current).__name__.lower():
            return True
        current = current.__cause__ or current.__context__
    return False
