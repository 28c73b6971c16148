"""Foreign exceptions: what ``requests``, ``urllib3`` and sockets raise, mapped once.

Contract: every exception a send or a body read raises is mapped here into an
:class:`~dshstream._core.errors.LlmError` of a stable code, whose message names only the
provider and what failed, and whose ``detail`` is the exception's type and text redacted
with the request's credentials (at most 1,900 characters). Callers raise the result
``from None``: a foreign exception is never chained raw (its text can carry a key in a
URL).

1. **A send** (before headers): an invalid or schemeless URL is ``INVALID_OPTIONS``; a
   connect timeout is ``TIMEOUT`` ("connect timed out"); another timeout is ``TIMEOUT``
   ("no response before the timeout"); a proxy that answered its ``CONNECT`` with 407 is
   ``PROXY_AUTH`` (rule 3); a TLS failure is ``TLS`` (rule 4); any other ``requests`` exception, ``OSError`` or
   ``ValueError`` is ``TRANSPORT``; anything else is ``UNKNOWN``. Each is logged once, at
   WARNING, without its detail.
2. **A read** (the body, mid-stream): a timeout anywhere in the exception's cause chain is
   ``TIMEOUT`` ("read timed out"), anything else ``TRANSPORT`` ("the response body failed
   mid-stream"); the failure carries the stream's request id.
3. **Proxy credentials.** ``PROXY_AUTH``'s headline says the proxy wants credentials and
   where they go (``user:password@`` in the proxy URL: ``HTTPS_PROXY`` or ``proxies=``),
   never what was sent; every detail is redacted with the registered secrets too (a
   proxy's password, :mod:`~dshstream._transport.tls` rule 4).
4. **TLS.** A certificate that did not verify says what to set: ``verify=`` (a CA
   bundle), ``REQUESTS_CA_BUNDLE``, or the ``truststore`` extra with
   ``trust_store="system"``; another handshake failure names ``client_cert=`` too. Not
   retryable: the same server fails the same way.
"""

from __future__ import annotations

import socket
import ssl

import requests

from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.redact import known_secrets, redact
from .answers import PROXY_AUTH_HEADLINE

__all__ = ["PROXY_AUTH_HEADLINE", "TLS_VERIFY_HEADLINE", "is_timeout", "read_failure", "send_failure"]

#: what to set when the server's certificate is not trusted (rule 4)
TLS_VERIFY_HEADLINE = (
    "the server's TLS certificate is not trusted: pass verify= a CA bundle path, set "
    'REQUESTS_CA_BUNDLE, or install dshstream[truststore] and pass trust_store="system"'
)
_TLS_HANDSHAKE_HEADLINE = (
    "the TLS handshake failed: check client_cert= (if the server asks for a client "
    "certificate) and verify="
)

log = get_logger("dshstream.transport")


def send_failure(exc: BaseException, request: HttpRequest, provider: str) -> LlmError:
    """The error for a send that raised ``exc`` (rule 1)."""
    if isinstance(exc, requests.exceptions.InvalidURL) or isinstance(
        exc, (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)
    ):
        code, what = "INVALID_OPTIONS", "the base URL is not valid"
    elif isinstance(exc, requests.exceptions.ConnectTimeout):
        code, what = "TIMEOUT", "connect timed out"
    elif isinstance(exc, (requests.exceptions.Timeout, TimeoutError)):
        code, what = "TIMEOUT", "no response before the timeout"
    elif isinstance(exc, requests.exceptions.ProxyError) and "407" in str(exc):
        code, what = "PROXY_AUTH", PROXY_AUTH_HEADLINE  # rule 3
    elif isinstance(exc, (requests.exceptions.SSLError, ssl.SSLError)):  # ssl's own: a WebSocket
        code = "TLS"  # rule 4
        what = TLS_VERIFY_HEADLINE if _is_verify_failure(exc) else _TLS_HANDSHAKE_HEADLINE
    elif isinstance(exc, (requests.exceptions.RequestException, OSError, ValueError)):
        code, what = "TRANSPORT", "request failed"
    else:
        code, what = "UNKNOWN", "request failed unexpectedly"
    detail = redact(f"{type(exc).__name__}: {exc}", (*request.secrets, *known_secrets()), limit=1900)
    log.warning("%s: %s (%s)", provider, what, code)
    return error_for(make_failure(code, f"{provider}: {what} ({code})", provider=provider, detail=detail))


def read_failure(
    exc: BaseException, secrets: tuple[str, ...], provider: str, request_id: str | None
) -> LlmError:
    """The error for a body read that raised ``exc`` (rule 2)."""
    detail = redact(f"{type(exc).__name__}: {exc}", (*secrets, *known_secrets()), limit=1900)
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


def _is_verify_failure(exc: BaseException) -> bool:
    """Whether a TLS failure is the server's certificate not verifying (rule 4)."""
    text = str(exc)
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text.lower()
