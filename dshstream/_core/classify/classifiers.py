"""The entry points: a non-2xx HTTP response, or an error that arrived in-band, → an
:class:`~dshstream._core.types.LlmFailure`.

Contract: stdlib + ``headers`` only, sans-IO, pure (apart from reading the secret
registry and, for an HTTP-date ``Retry-After`` with no ``now``, the clock); never raises.
Each entry point only decides which status counts and what the headers say, reads its
input with :mod:`.payload`, and hands both to the one builder (:mod:`.builder`).

1. **HTTP.** The reported status counts when it is an integer in 100-599; the body is
   read by :func:`~.payload.read_http_body` (HTML and empty bodies: status alone);
   ``Retry-After`` and the request id come from the headers first; a ``429`` without a
   ``Retry-After`` waits for its rate-limit reset headers
   (:func:`~dshstream._core.headers.parse_rate_limit_reset`: OpenAI's
   ``x-ratelimit-reset-*``, Anthropic's ``anthropic-ratelimit-*-reset``).
2. **In-band.** A ``status`` below 400 (the 200 the error arrived in) does not count;
   then a numeric ``code``/``status`` in the payload is the status.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..headers import all_secrets, lower_headers, parse_rate_limit_reset, parse_retry_after, request_id_from
from ..types import LlmFailure
from .builder import build_failure
from .payload import read_http_body, read_payload

__all__ = ["classify_error_payload", "classify_http_error"]


def _valid_status(status: int | None) -> int | None:
    if isinstance(status, bool) or not isinstance(status, int):
        return None
    return status if 100 <= status <= 599 else None


def classify_http_error(
    status: int,
    body: bytes | str | None,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    secrets: Iterable[str] = (),
    now: float | None = None,
) -> LlmFailure:
    """Classify a non-2xx HTTP response (see :mod:`.decision` for the precedence)."""
    every_secret = all_secrets(secrets)
    lowered = lower_headers(headers)
    if isinstance(body, (bytes, bytearray)):
        text = bytes(body).decode("utf-8", "replace")
    else:
        text = body or ""
    reported = _valid_status(status)
    retry_after = parse_retry_after(lowered, now)
    if retry_after is None and reported == 429:  # rule 1: the reset headers say when
        retry_after = parse_rate_limit_reset(lowered, now)
    return build_failure(
        reported,
        read_http_body(text, lowered.get("content-type", "")),
        provider=provider,
        secrets=every_secret,
        retry_after=retry_after,
        request_id=request_id_from(lowered, every_secret),
    )


def classify_error_payload(
    payload: object,
    *,
    provider: str | None = None,
    status: int | None = None,
    secrets: Iterable[str] = (),
) -> LlmFailure:
    """Classify an in-band error object (already-parsed JSON, or its text/bytes): the
    shapes :mod:`.payload` reads (its rules 1-5); a numeric ``code`` is the status when
    ``status`` is not given or is below 400 (rule 2)."""
    reported = _valid_status(status)
    if reported is not None and reported < 400:
        reported = None
    reading = read_payload(payload)
    if reported is None and reading.facts is not None:
        reported = reading.facts.code_num
    return build_failure(reported, reading, provider=provider, secrets=all_secrets(secrets))
