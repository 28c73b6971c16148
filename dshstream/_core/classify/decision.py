"""The decision table: HTTP status, then the provider's error type/code, then wording →
one failure code.

Contract: stdlib only, pure. :func:`decide` takes facts already extracted (a status, the
lower-cased type/code/status/reason *hints*, collapsed *wording*) and returns the code;
it never sees raw bodies or secrets.

"Status" below is the reported status, or when there is none the status a hint implies
(``rate_limit_error`` → 429, ``UNAVAILABLE`` → 503 ...: :data:`IMPLIED_STATUS`). "Wording"
is the :mod:`.lexicon` match. First match wins:

1. 401/403, an auth hint or auth wording → ``AUTH``.
2. Wording that says an input kind is not supported (*image input is not supported*,
   *does not support image input*, any status: llama.cpp answers it with a 500) →
   ``INVALID_REQUEST``: the same request can never succeed, so it is not retried.
3. A ``model_not_found`` hint (also Azure's ``DeploymentNotFound``) or model wording (any
   status), or a 404/``not_found`` hint with wording that mentions a model →
   ``MODEL_NOT_FOUND``.
4. Quota wording → ``QUOTA``, unless a Google (Gemini API or Vertex AI) quota is per
   minute/second and nowhere per day (then rule 7: Google documents a per-minute
   ``RESOURCE_EXHAUSTED`` as retry-with-backoff).
5. Affordability wording → ``CREDIT_LIMIT``.
6. 402 → ``QUOTA``.
7. 429, a rate-limit hint or a per-minute quota → ``RATE_LIMIT``; so is rate-limit
   wording with no status or a 5xx.
8. 413 → ``INVALID_REQUEST``.
9. Overflow wording with a 4xx or no status, or a local engine's full context at any
   status (lexicon rule 6: llama.cpp answers it with a 500) → ``CONTEXT_WINDOW_EXCEEDED``.
10. A content-filter hint or wording with a 4xx or no status → ``CONTENT_FILTER``.
11. 400/422 or an invalid-request hint → ``INVALID_REQUEST``; so is invalid-request
    wording with no status.
12. 408/504 or a timeout hint → ``TIMEOUT``; so is timeout wording with no status.
13. 529, an overloaded hint or overloaded wording → ``OVERLOADED``.
14. 500/502/503 or a server-error hint → ``SERVER``; so is server-error wording with no
    status.
15. Any other status ≥ 400 → ``HTTP_<status>`` (a bare 404 is ``HTTP_404``); else
    ``UNKNOWN``.
"""

from __future__ import annotations

from . import lexicon

__all__ = ["IMPLIED_STATUS", "decide"]

#: the status a hint stands for when no status was reported
IMPLIED_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "invalid_argument": 400,
    "failed_precondition": 400,
    "authentication_error": 401,
    "unauthenticated": 401,
    "invalid_api_key": 401,
    "permission_error": 403,
    "permission_denied": 403,
    "not_found_error": 404,
    "not_found": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "rate_limit_exceeded": 429,
    "resource_exhausted": 429,
    "api_error": 500,
    "server_error": 500,
    "internal": 500,
    "internal_error": 500,
    "internal_server_error": 500,
    "unavailable": 503,
    "deadline_exceeded": 504,
    "overloaded_error": 529,
}
_AUTH_HINTS = frozenset(
    {
        "authentication_error",
        "permission_error",
        "invalid_api_key",
        "unauthenticated",
        "permission_denied",
        "api_key_invalid",
        "unauthorized",
        "invalid_authentication",
        "authentication_failed",
    }
)
_NOT_FOUND_HINTS = frozenset({"not_found_error", "not_found"})
_MODEL_HINTS = frozenset({"model_not_found", "deploymentnotfound", "deployment_not_found"})
_RATE_HINTS = frozenset(
    {"rate_limit_error", "rate_limit_exceeded", "rate_limit", "resource_exhausted", "too_many_requests"}
)
_CONTENT_HINTS = frozenset(
    {
        "content_filter",
        "content_policy_violation",
        "responsibleaipolicyviolation",
        "safety",
        "prohibited_content",
        "blocklist",
        "spii",
        "image_safety",
        "recitation",
    }
)
_INVALID_HINTS = frozenset(
    {
        "invalid_request_error",
        "invalid_argument",
        "failed_precondition",
        "invalid_request",
        "bad_request",
        "tool_use_failed",
        "validation_error",
        "invalid_request_message_error",
    }
)
_TIMEOUT_HINTS = frozenset({"deadline_exceeded", "timeout", "request_timeout"})
_OVERLOADED_HINTS = frozenset({"overloaded_error", "overloaded", "unavailable"})
_SERVER_HINTS = frozenset(
    {"api_error", "server_error", "internal", "internal_error", "internal_server_error", "bad_gateway"}
)


def _effective_status(status: int | None, hints: frozenset[str]) -> int | None:
    if status is not None:
        return status
    for hint in sorted(hints):
        if hint in IMPLIED_STATUS:
            return IMPLIED_STATUS[hint]
    return None


def decide(status: int | None, hints: frozenset[str], text: str, *, per_minute_quota: bool = False) -> str:
    """The failure code for the facts (the module docstring's rules, in order); ``text``
    is collapsed wording."""
    eff = _effective_status(status, hints)
    client = eff is None or 400 <= eff < 500

    if eff in (401, 403) or hints & _AUTH_HINTS or lexicon.AUTH.search(text):
        return "AUTH"
    if lexicon.UNSUPPORTED_INPUT.search(text):
        return "INVALID_REQUEST"
    if hints & _MODEL_HINTS or lexicon.is_model_not_found(text):
        return "MODEL_NOT_FOUND"
    if (eff == 404 or hints & _NOT_FOUND_HINTS) and lexicon.MODEL.search(text):
        return "MODEL_NOT_FOUND"
    if not per_minute_quota and lexicon.is_quota_exhausted(text):
        return "QUOTA"
    if lexicon.is_credit_limit(text):
        return "CREDIT_LIMIT"
    if eff == 402:
        return "QUOTA"
    if eff == 429 or hints & _RATE_HINTS or per_minute_quota:
        return "RATE_LIMIT"
    if (eff is None or eff >= 500) and lexicon.is_rate_limit_text(text):
        return "RATE_LIMIT"
    if eff == 413:
        return "INVALID_REQUEST"
    if (client and lexicon.is_context_overflow(text)) or lexicon.SERVER_CONTEXT_FULL.search(text):
        return "CONTEXT_WINDOW_EXCEEDED"
    if client and (hints & _CONTENT_HINTS or lexicon.CONTENT_FILTER.search(text)):
        return "CONTENT_FILTER"
    if eff in (400, 422) or hints & _INVALID_HINTS:
        return "INVALID_REQUEST"
    if eff is None and lexicon.INVALID_REQUEST.search(text):
        return "INVALID_REQUEST"
    if eff in (408, 504) or hints & _TIMEOUT_HINTS or (eff is None and lexicon.TIMEOUT.search(text)):
        return "TIMEOUT"
    if eff == 529 or hints & _OVERLOADED_HINTS or lexicon.OVERLOADED.search(text):
        return "OVERLOADED"
    if eff in (500, 502, 503) or hints & _SERVER_HINTS:
        return "SERVER"
    if eff is None and lexicon.SERVER_ERROR.search(text):
        return "SERVER"
    if eff is not None and eff >= 400:
        return f"HTTP_{eff}"
    return "UNKNOWN"
