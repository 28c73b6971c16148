"""Answers judged: which status and which 2xx bodies a transport hands on, and the
failure for every other one.

Contract: no ``requests``, no sockets; these functions read an :class:`Answer` (any
transport's stream) and return it or raise the classified
:class:`~dshstream._core.errors.LlmError`, closing it first. Both built-in transports
judge every answer here (through :class:`~dshstream._transport.base.BaseTransport`), so an
in-memory answer fails exactly as the same bytes over HTTP would.

1. **Bounded bodies.** A 2xx answer is handed on. A non-2xx body is read up to
   :data:`ERROR_BODY_LIMIT` bytes and classified
   (:func:`~dshstream._core.classify.classify_http_error`, the request's credentials
   redacted); a body that fails to read counts as empty. A 1xx that is not followed by a
   final answer is a ``MALFORMED_RESPONSE`` failure.
2. **No redirects.** Redirects are never followed (a credential goes only to the host it
   was configured for): a 3xx answer is a ``REDIRECT`` failure (not retryable) naming the
   ``base_url`` to check; the ``Location`` goes, redacted, into ``detail``. A 407 (a
   proxy on a plain-HTTP path that wants credentials) is ``PROXY_AUTH``
   (:mod:`~dshstream._transport.failures` rule 3).
3. **Not a stream.** A 2xx answer to a stream request labelled JSON is read (the first
   read alone when it does not start like a JSON document; at most ``ERROR_BODY_LIMIT``
   bytes) and, if it is JSON, raised as the in-band error it carries
   (:func:`~dshstream._core.classify.classify_error_payload`) or as
   ``MALFORMED_RESPONSE`` (a server that ignored ``stream: true``); anything else read is
   handed on first (an event stream with a wrong label is not delayed). A 2xx HTML page
   (captive portal, proxy login, wrong path) is a ``MALFORMED_RESPONSE`` failure saying
   so.
4. **JSON answers.** A JSON answer (``get_json``, ``post_form``) is read to at most its
   ``limit``: a larger one, or one that is not JSON, is ``MALFORMED_RESPONSE``. A byte
   answer (``get_bytes``) is bounded the same way and handed on as bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypeVar

from .._core.classify import classify_error_payload, classify_http_error
from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.redact import redact
from .._core.types import LlmFailure

#: the most bytes read from an error body
ERROR_BODY_LIMIT = 65536
#: what a 407 means and where the credentials go (rule 2)
PROXY_AUTH_HEADLINE = (
    "the proxy wants credentials (HTTP 407): put user:password@ in the proxy URL "
    "(HTTPS_PROXY / HTTP_PROXY or proxies=)"
)

__all__ = ["ERROR_BODY_LIMIT", "PROXY_AUTH_HEADLINE", "Answer", "bytes_answer", "json_answer", "refuse_non_stream", "settle"]


class Answer(Protocol):
    """An answer as judged here: a transport's stream, headers in."""

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...

    @property
    def request_id(self) -> str | None: ...

    prefix: bytes  # bytes read ahead while judging, handed out first

    def __iter__(self) -> Iterator[bytes]: ...

    def read_bounded(self, limit: int) -> tuple[bytes, bool]: ...

    def close(self) -> None: ...


A = TypeVar("A", bound=Answer)


def settle(stream: A, request: HttpRequest, provider: str) -> A:
    """``stream`` when its status is 2xx; else closed, and its failure raised (rules 1, 2)."""
    status = stream.status
    if 200 <= status < 300:
        return stream
    if status < 200:
        stream.close()
        raise error_for(
            make_failure(
                "MALFORMED_RESPONSE",
                f"{provider}: the server answered HTTP {status}, not a response (MALFORMED_RESPONSE)",
                provider=provider,
                status=status,
            )
        )
    try:
        body, _ = stream.read_bounded(ERROR_BODY_LIMIT)
    except LlmError:
        body = b""
    finally:
        stream.close()
    if status < 400:
        raise error_for(_redirect_failure(status, stream, request, provider))
    if status == 407:  # rule 2: the proxy's answer, not the provider's
        raise error_for(
            make_failure(
                "PROXY_AUTH",
                f"{provider}: {PROXY_AUTH_HEADLINE} (PROXY_AUTH)",
                status=status,
                provider=provider,
            )
        )
    raise error_for(
        classify_http_error(status, body, stream.headers, provider=provider, secrets=request.secrets)
    )


def refuse_non_stream(stream: Answer, request: HttpRequest, provider: str) -> None:
    """Raise for a 2xx JSON document or HTML page where an event stream belongs (rule 3)."""
    content_type = (stream.headers.get("content-type") or stream.headers.get("Content-Type") or "").lower()
    if "event-stream" not in content_type and "eventstream" not in content_type:
        if "json" in content_type:
            _refuse_json_body(stream, request, provider)
        elif "html" in content_type:
            _refuse_html_body(stream, request, provider)


def bytes_answer(stream: Answer, provider: str, limit: int) -> bytes:
    """The body of a 2xx answer read to at most ``limit`` bytes (then closed; rule 4)."""
    try:
        body, more = stream.read_bounded(limit)
    finally:
        stream.close()
    if more:
        raise error_for(
            make_failure(
                "MALFORMED_RESPONSE",
                f"{provider}: the answer is larger than {limit} bytes (MALFORMED_RESPONSE)",
                provider=provider,
                request_id=stream.request_id,
            )
        )
    return body


def json_answer(stream: Answer, provider: str, limit: int) -> Any:
    """The JSON of a 2xx answer read to at most ``limit`` bytes (then closed; rule 4)."""
    body = bytes_answer(stream, provider, limit)
    try:
        return json.loads(body)
    except ValueError:
        raise error_for(
            make_failure(
                "MALFORMED_RESPONSE",
                f"{provider}: the answer is not JSON (MALFORMED_RESPONSE)",
                provider=provider,
                request_id=stream.request_id,
            )
        ) from None


def _redirect_failure(status: int, stream: Answer, request: HttpRequest, provider: str) -> LlmFailure:
    location = stream.headers.get("location") or stream.headers.get("Location")
    detail = redact(f"Location: {location}", request.secrets, limit=1900) if location else None
    return make_failure(
        "REDIRECT",
        f"{provider}: the endpoint answered HTTP {status} (moved); redirects are not followed — "
        "check base_url (REDIRECT)",
        category="api_error",
        retryable=False,
        status=status,
        provider=provider,
        request_id=stream.request_id,
        detail=detail,
    )


def _refuse_json_body(stream: Answer, request: HttpRequest, provider: str) -> None:
    """A 2xx answer labelled JSON: some servers report errors that way, others ignore
    ``stream: true``. Raise a classified error for a JSON document; hand anything else
    (an event stream with a wrong label) on to the reader unchanged."""
    pieces = iter(stream)
    head = next(pieces, b"")  # one read: a mislabelled event stream must not be delayed
    if head.lstrip()[:1] not in (b"{", b"["):
        stream.prefix = head
        return
    size = len(head)
    rest = [head]
    for piece in pieces:
        rest.append(piece)
        size += len(piece)
        if size >= ERROR_BODY_LIMIT:
            break
    head = b"".join(rest)
    try:
        payload = json.loads(head)
    except ValueError:
        stream.prefix = head
        return
    stream.close()
    if _has_error(payload):
        raise error_for(classify_error_payload(payload, provider=provider, secrets=request.secrets))
    raise error_for(
        make_failure(
            "MALFORMED_RESPONSE",
            f"{provider}: the server answered with a JSON document instead of an event stream "
            "(MALFORMED_RESPONSE)",
            provider=provider,
            request_id=stream.request_id,
            detail=redact(head.decode("utf-8", "replace"), request.secrets, limit=1900),
        )
    )


def _refuse_html_body(stream: Answer, request: HttpRequest, provider: str) -> None:
    """A 2xx HTML page where an event stream belongs: a captive portal, a proxy's login
    page or a web server at the wrong path. Never a stream; say so."""
    try:
        body, _ = stream.read_bounded(2000)
    except LlmError:
        body = b""
    stream.close()
    raise error_for(
        make_failure(
            "MALFORMED_RESPONSE",
            f"{provider}: the server answered with an HTML page, not an event stream (a captive "
            "portal, proxy login or wrong base_url?) (MALFORMED_RESPONSE)",
            provider=provider,
            status=stream.status,
            request_id=stream.request_id,
            detail=redact(body.decode("utf-8", "replace"), request.secrets, limit=1900),
        )
    )


def _has_error(payload: Any) -> bool:
    if isinstance(payload, list) and payload:
        payload = payload[0]
    return isinstance(payload, dict) and (payload.get("error") is not None or payload.get("type") == "error")
