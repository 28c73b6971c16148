"""Failure classification: HTTP errors and in-band error payloads get the same code and
class for the same upstream problem.

Contract: stdlib only (plus dshstream's own ``errors``, ``headers``, ``redaction``,
``strict_json`` and ``types``), sans-IO, pure functions (apart from reading the secret
registry).

* :func:`classify_http_error` — a non-2xx response (status, body, headers).
* :func:`classify_error_payload` — an error object that arrived in the body of a 200
  (SSE ``error`` events, OpenAI/Anthropic/Gemini/OpenRouter/Responses/Groq shapes).
* the word predicates (:func:`is_context_overflow`, :func:`is_quota_exhausted`,
  :func:`is_credit_limit`, :func:`is_model_not_found`, :func:`is_rate_limit_text`).
* :func:`content_filter_summary` — the categories an Azure content-filter verdict
  blocked, for a failure's detail.

Every result is an :class:`~dshstream._core.types.LlmFailure` built by :mod:`.builder`,
whose rules say what of the upstream text a failure may carry: ``message`` is a headline
of facts (``"openai: rate limited (RATE_LIMIT, HTTP 429)"``), never upstream text;
``detail`` is the upstream text redacted with the given and every registered secret.

Order: HTTP status, then the provider's error type/code, then wording (word-boundary
matches); the numbered rules are in :mod:`.decision`. One concern per module, in the
order a failure is built:

* :mod:`.lexicon` — the wording: patterns and predicates (h11's ``_abnf``).
* :mod:`.payload` — the facts in a JSON/SSE/HTML/text body or a parsed payload.
* :mod:`.decision` — the decision table (status, type/code hints, wording → code).
* :mod:`.builder` — the one builder both entry points share (code, wait, headline,
  redacted detail, request id).
* :mod:`.classifiers` — the two entry points.

Header parsing (``Retry-After``, request ids) lives in :mod:`dshstream._core.headers`
(the transport reads request ids there too); the display formatter for codes in
:mod:`dshstream._render`.
"""

from __future__ import annotations

from .classifiers import classify_error_payload, classify_http_error
from .payload import content_filter_summary
from .lexicon import (
    is_context_overflow,
    is_credit_limit,
    is_model_not_found,
    is_quota_exhausted,
    is_rate_limit_text,
)

__all__ = [
    "classify_error_payload",
    "classify_http_error",
    "content_filter_summary",
    "is_context_overflow",
    "is_credit_limit",
    "is_model_not_found",
    "is_quota_exhausted",
    "is_rate_limit_text",
]
