"""Failure classification: one module for HTTP errors, in-band error payloads and foreign
exception text, so the same upstream problem always gets the same code and class.

Contract: stdlib only, sans-IO, pure functions (apart from reading the secret registry).

* :func:`classify_http_error` — a non-2xx response (status, body, headers).
* :func:`classify_error_payload` — an error object that arrived in the body of a 200
  (SSE ``error`` events, OpenAI/Anthropic/Gemini/OpenRouter/Responses/Groq shapes).
* :func:`classify_exception_text` — the text of a foreign exception (``str(exc)``).

Every result is an :class:`~dshstream.types.LlmFailure` built with
:func:`~dshstream.errors.make_failure`. ``message`` is a headline built here from the
provider name, the code and the status (``"openai: rate limited (RATE_LIMIT, HTTP 429)"``)
and never contains upstream text. ``detail`` is the upstream text (the error message with
its type/code, or the raw body) after :func:`~dshstream.redaction.redact` with the given
secrets **and** every registered secret, at most 2,000 characters. The other fields that
come from upstream are cleaned the same way: ``request_id`` (from headers or the payload)
is kept only when it is a short plain token that redaction leaves unchanged (else the
next candidate, else ``None``), and ``serving_provider`` is redacted, stripped of control
characters and bounded to 100 characters.

Precedence (first match wins; "wording" means the predicates below applied to the error
message together with its type, code, status and reasons):

1. 401/403, auth types (``authentication_error``, ``PERMISSION_DENIED`` ...) or bad-key
   wording (``API key not valid``) → ``AUTH``.
2. model wording (any status), or a 404 / ``not_found_error`` / ``NOT_FOUND`` that
   mentions a model → ``MODEL_NOT_FOUND`` (category ``model_error``).
3. balance wording → ``QUOTA``; 4. affordability wording → ``CREDIT_LIMIT``; a bare
   402 → ``QUOTA``. Gemini ``RESOURCE_EXHAUSTED`` whose ``QuotaFailure`` names a
   per-minute/per-second quota is a rate limit even with "exceeded your current quota"
   wording.
5. 429 (or a rate-limit type) → ``RATE_LIMIT`` with ``retry_after``; rate-limit wording
   counts when there is no status or a 5xx.
6. 413 → ``INVALID_REQUEST``.
7. any other 4xx (or no status) with overflow wording → ``CONTEXT_WINDOW_EXCEEDED``.
8. content-filter codes or wording (4xx or no status) → ``CONTENT_FILTER``.
9. 400/422 (or an invalid-request type) → ``INVALID_REQUEST``.
10. 408/504, ``DEADLINE_EXCEEDED``, timeout wording without status → ``TIMEOUT``.
11. 529, ``overloaded_error``, ``UNAVAILABLE`` or overloaded wording → ``OVERLOADED``.
12. 500/502/503 or a server-error type → ``SERVER`` (``provider_overloaded``, retryable).
13. exception text only: connection wording → ``TRANSPORT``.
14. any other status → ``HTTP_<status>`` (a bare 404 is ``HTTP_404``); else ``UNKNOWN``.

HTML and empty bodies are classified by status alone. Word predicates match on word
boundaries where ``_`` and ``-`` count as separators, case-insensitively, with
whitespace collapsed: ``StreamGenerateContent`` and ``moderate`` are not rate limits.
"""

from __future__ import annotations

import ast
import email.utils
import html
import json
import math
import re
import reprlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import make_failure
from .redaction import known_secrets, redact, truncate
from .types import LlmFailure

__all__ = [
    "classify_error_payload",
    "classify_exception_text",
    "classify_http_error",
    "format_error_code_for_display",
    "is_context_overflow",
    "is_credit_limit",
    "is_model_not_found",
    "is_quota_exhausted",
    "is_rate_limit_text",
    "parse_retry_after",
    "request_id_from",
]

_DETAIL_MAX = 2000
_DETAIL_KEEP = 1960  # leaves room for "…[truncated N chars]"
_MAX_PARSE = 1_000_000  # bytes of a body we try to parse as JSON


# --------------------------------------------------------------------------- word predicates

_B = r"(?<![a-z0-9])"
_E = r"(?![a-z0-9])"
_S = r"[\s_\-]*"  # optional separator
_S1 = r"[\s_\-]+"  # required separator


def _rx(*alternatives: str) -> re.Pattern[str]:
    body = "|".join(f"(?:{a})" for a in alternatives)
    return re.compile(f"{_B}(?:{body}){_E}", re.IGNORECASE)


def _collapse(text: str) -> str:
    return " ".join(text.split())


_OVERFLOW_STRONG = _rx(
    rf"context{_S}(?:length|window){_S}(?:(?:is|was|has been|been){_S1})?"
    rf"(?:exceeded|exceeds|exceed|overflow|overflowed|overflows|limit{_S}exceeded)",
    rf"max(?:imum)?{_S}(?:allowed{_S1}|supported{_S1})?context{_S}(?:length|window)",
    r"(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:large|long)\s+for\s+"
    r"(?:the\s+|this\s+)?(?:model(?:'s)?\s+)?context",
    r"(?:input|prompt|request)\s+(?:is\s+)?too\s+(?:long|large)\s+for\s+(?:this|the|requested)\s+model",
    r"(?:input|prompt|request|messages?)(?![a-z0-9]).{0,40}?(?<![a-z0-9])"
    r"(?:exceeds?|exceeded|overflows|is larger than)(?![a-z0-9]).{0,40}?(?<![a-z0-9])context",
    r"prompt\s+is\s+too\s+long",
    r"exceed(?:s|ed)?\s+(?:the\s+)?(?:model(?:'s)?\s+)?context\s+(?:window|limit|length)",
    r"input\s+token\s+count.{0,40}?exceeds\s+the\s+maximum",
    r"maximum\s+prompt\s+length\s+is\s+\d+",
    r"reduce\s+the\s+length\s+of",
    r"token\s+count\s+of\s+\d+\s+exceeds\s+the\s+limit\s+of\s+\d+",
    r"exceeds?\s+the\s+available\s+context\s+size",
    r"greater\s+than\s+the\s+context\s+length",
    r"exceeded\s+model\s+token\s+limit",
    r"context\s+length\s+(?:is|of)\s+\d+",
    r"too\s+much\s+context",
)
# Generic phrasings that are also used for throttling ("Too many tokens, rate limit reached").
_OVERFLOW_WEAK = _rx(r"too\s+many\s+tokens", rf"tokens?{_S}limit{_S}exceeded")

_QUOTA = _rx(
    rf"insufficient{_S1}(?:user{_S1})?(?:quota|balance|funds)",
    rf"(?:quota|usage{_S1}limit){_S1}(?:(?:has\s+been|have\s+been|is|was|been)\s+)?(?:exceeded|exhausted|reached)",
    r"exceed(?:ed|s)?\s+(?:your\s+|the\s+)?(?:current\s+)?quota",
    r"(?:balance|credits?)\s+(?:(?:has\s+been|have\s+been|is|are|was|were)\s+)?(?:exhausted|depleted)",
    rf"out{_S1}of{_S1}(?:credits?|budget|funds|quota)",
    r"balance\s+is\s+(?:insufficient|too\s+low)",
    r"credit\s+balance\s+is\s+too\s+low",
    r"no\s+resource\s+package",
    r"please\s+recharge",
    rf"billing{_S1}hard{_S1}limit",
)

_CREDIT = _rx(
    r"can\s+only\s+afford",
    rf"fewer\s+max{_S}tokens",
    r"requires?\s+more\s+credits?",
    rf"insufficient{_S1}credits?",
    r"not\s+enough\s+credits?",
)

_MODEL_WORD = _rx(r"models?")
_MODEL_STRONG = _rx(
    r"unsupported\s+model",
    r"(?:invalid|unknown|unrecognized|unrecognised|nonexistent|non-existent)\s+model",
    rf"model{_S1}not{_S1}found",
    r"no\s+such\s+model",
    r"models?\s+(?!(?:is|was|are|has|have|been|the|a|an|you|your|that|this|it|currently|temporarily)\s)"
    r"[`'\"]?[\w.:/@\-]{1,160}[`'\"]?\s+(?:is\s+|was\s+|has\s+been\s+|have\s+been\s+)?"
    r"(?:not\s+supported|unsupported|not\s+found|unavailable|not\s+available|invalid|"
    r"does\s+not\s+exist|deprecated|retired|decommissioned)",
    r"model\s+(?:does\s+not\s+exist|is\s+not\s+available|not\s+available)",
    r"not\s+found\s+for\s+account",
    rf"reached\s+(?:its\s+)?end{_S1}of{_S1}life",
    r"models?/[\w.\-]+\s+is\s+not\s+found",
)
# Lifecycle words count only after "model" in the same sentence ("the model x has been
# retired"), so "the `functions` parameter is deprecated for this model" is no model error.
_MODEL_WEAK = _rx(
    r"models?(?![a-z0-9])[^.]{0,80}?(?<![a-z0-9])(?:does\s+not\s+exist|deprecated|retired|"
    rf"decommissioned|end{_S1}of{_S1}life|no\s+longer\s+(?:available|supported))"
)

_RATE = _rx(
    rf"rate{_S}limit(?:ed|s|ing|error|exception|exceeded)?",
    r"rate\s+exceeded",
    r"too\s+many\s+requests",
    r"throttl(?:e|ed|es|ing)(?:exception)?",
    r"(?:requests?|tokens?)\s+per\s+(?:minute|min|second|sec)",
    rf"resource{_S}exhausted",
)

_AUTH = _rx(
    rf"(?:invalid|incorrect|missing|bad|revoked|expired|wrong|no)(?:{_S1}x)?{_S1}api{_S}key",
    rf"api{_S}key\s+(?:is\s+)?(?:not\s+valid|invalid|missing|expired|revoked|incorrect|required)",
    rf"api{_S}key{_S}invalid",
    rf"invalid{_S1}(?:authentication|credentials|bearer\s+token)",
    rf"authentication{_S}(?:error|failed|failure|required)",
    r"unauthenticated",
    r"unauthori[sz]ed",
    rf"permission{_S}denied",
)

_CONTENT = _rx(
    rf"content{_S}(?:filter(?:ed|ing)?|policy|management\s+policy)",
    rf"responsible{_S}ai",
    r"safety\s+(?:system|filters?|settings)",
    rf"prohibited{_S1}content",
    r"blocked\s+(?:due\s+to|by)\s+(?:safety|content|moderation)",
)

_OVERLOADED = _rx(r"overload(?:ed)?", r"over\s+capacity", r"at\s+capacity")

_TIMEOUT = _rx(
    rf"(?:read|connect|connection|write|pool|socket|gateway)?{_S}time{_S}outs?(?:error|exception)?",
    r"timed\s+out",
    rf"deadline{_S}exceeded",
)

_TRANSPORT = _rx(
    r"econn(?:reset|refused|aborted)",
    r"enotfound|eai_again|ehostunreach|enetunreach|epipe",
    rf"connection{_S}(?:reset|refused|aborted|closed|error|failed|broken|lost)(?:error|exception)?",
    rf"network{_S}(?:error|failure|is\s+unreachable|unreachable)",
    r"socket(?:\s+hang\s+up|\s+closed|\s+error)?",
    r"fetch\s+failed",
    r"other\s+side\s+closed",
    r"premature\s+close",
    r"stream\s+ended\s+(?:before|without)",
    r"http2\s+request\s+did\s+not\s+get\s+a\s+response",
    r"websocket\s+closed\s+unexpectedly",
    r"broken\s+pipe",
    r"remote\s+end\s+closed\s+connection|remotedisconnected",
    r"max\s+retries\s+exceeded\s+with\s+url",
    r"name\s+or\s+service\s+not\s+known|temporary\s+failure\s+in\s+name\s+resolution|getaddrinfo",
    r"certificate\s+verify\s+failed|ssl(?:error|\s+error|eoferror)",
    rf"incomplete{_S}read|chunked{_S}encoding{_S}error",
)
_TERMINATED = re.compile(r"^\W*terminated\W*$", re.IGNORECASE)

_INVALID_TEXT = _rx(
    rf"invalid{_S1}request",
    r"bad\s+request",
    r"payload\s+too\s+large",
    r"request\s+(?:body|entity)\s+too\s+large",
    r"failed\s+to\s+buffer\s+the\s+request\s+body:\s+length\s+limit\s+exceeded",
    r"unprocessable\s+entity",
)
_SERVER_TEXT = _rx(
    rf"internal{_S1}server{_S1}error",
    r"bad\s+gateway",
    r"service\s+unavailable",
    rf"(?:internal|server|upstream){_S1}error",
)


def is_context_overflow(text: str) -> bool:
    """True when ``text`` says the prompt does not fit the model's context window.

    Generic phrasings ("too many tokens", "token limit exceeded") count only when the text
    is not rate-limit wording: ``ThrottlingException: Too many tokens, rate limit reached``
    is a rate limit.
    """
    text = _collapse(text)
    if _OVERFLOW_STRONG.search(text):
        return True
    return bool(_OVERFLOW_WEAK.search(text)) and not _RATE.search(text)


def is_quota_exhausted(text: str) -> bool:
    """True when ``text`` says the account's quota or balance is exhausted (nothing can
    succeed until it is topped up); never true for throttling ("rate limit reached",
    "quota resets in one minute")."""
    return bool(_QUOTA.search(_collapse(text)))


def is_credit_limit(text: str) -> bool:
    """True when ``text`` says the request cannot be afforded but a smaller one can
    ("can only afford", "fewer max_tokens", "requires more credits", "insufficient
    credits"). Mutually exclusive with :func:`is_quota_exhausted`, which wins."""
    text = _collapse(text)
    return bool(_CREDIT.search(text)) and not _QUOTA.search(text)


def is_model_not_found(text: str) -> bool:
    """True when ``text`` says the model is unknown, unsupported, retired or deprecated.

    A bare "not found" is not enough: the wording must name a model.
    """
    text = _collapse(text)
    return bool(_MODEL_STRONG.search(text) or _MODEL_WEAK.search(text))


def is_rate_limit_text(text: str) -> bool:
    """True for throttling wording ("rate limit", "too many requests", "throttled",
    ``RESOURCE_EXHAUSTED``), on word boundaries: ``StreamGenerateContent`` is not."""
    return bool(_RATE.search(_collapse(text)))


# --------------------------------------------------------------------------- display codes

_DISPLAY_CODE = re.compile(r"\d{3}(?:_[a-z]+)*|[A-Z]+(?:_(?:[A-Z]+|\d{3}))*|[a-z]+(?:_[a-z]+)*")


def format_error_code_for_display(code: object) -> str:
    """``code`` if it is safe to show a user, else ``"unknown"``.

    Safe: at most 40 characters and one of a 3-digit status optionally followed by
    ``_lowercase`` segments (``429``, ``429_balance``), an UPPER_SNAKE word
    (``ECONNREFUSED``; dshstream's own ``HTTP_404`` too) or a lower_snake word
    (``invalid_request_error``). Integers are shown as their digits.
    """
    if isinstance(code, bool):
        return "unknown"
    if isinstance(code, int):
        code = str(code)
    if not isinstance(code, str) or not code or len(code) > 40:
        return "unknown"
    return code if _DISPLAY_CODE.fullmatch(code) else "unknown"


# --------------------------------------------------------------------------- headers


def _lower_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    if not headers:
        return {}
    out: dict[str, str] = {}
    try:
        for key, value in headers.items():
            out[str(key).strip().lower()] = str(value)
    except Exception:
        return {}
    return out


_SECONDS = re.compile(r"\s*\d+(?:\.\d+)?\s*")


def _positive_seconds(value: str) -> float | None:
    if not _SECONDS.fullmatch(value):
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) and seconds > 0 else None


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait before retrying, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after-ms`` (milliseconds) wins when valid. ``retry-after`` is either digits
    (decimal seconds allowed) or an HTTP date in the future (relative to ``now``, a Unix
    time, default the current time). Zero, negative, garbage, overflowing and past values
    give ``None``. Header names are case-insensitive.
    """
    lowered = _lower_headers(headers)
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        value = _positive_seconds(millis)
        if value is not None and value / 1000.0 > 0:
            return value / 1000.0
    raw = lowered.get("retry-after")
    if raw is None or not raw.strip():
        return None
    if re.fullmatch(r"\s*[+-]?\d+(?:\.\d+)?\s*", raw):
        return _positive_seconds(raw)
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        from datetime import timezone

        when = when.replace(tzinfo=timezone.utc)
    try:
        delta = when.timestamp() - (time.time() if now is None else now)
    except (OverflowError, OSError, ValueError):
        return None
    return delta if math.isfinite(delta) and delta > 0 else None


# Most specific first; cf-ray (a Cloudflare edge id, not the provider's) is the last resort.
_REQUEST_ID_HEADERS = (
    "x-request-id",  # OpenAI, Groq, DeepSeek, Mistral, most OpenAI-compatible servers
    "request-id",  # Anthropic
    "x-amzn-requestid",  # Bedrock
    "x-amz-request-id",
    "x-deepseek-request-id",
    "x-groq-id",
    "x-goog-request-id",
    "mistral-correlation-id",
    "x-kong-request-id",
    "apim-request-id",  # Azure
    "x-ms-request-id",
    "x-correlation-id",
    "cf-ray",
)
_SAFE_ID = re.compile(r"[A-Za-z0-9_.:/=+\-]{1,200}")


def request_id_from(headers: Mapping[str, str] | None, secrets: Iterable[str] = ()) -> str | None:
    """The provider's request id from ``headers``, checking in order ``x-request-id``,
    ``request-id``, ``x-amzn-requestid``, ``x-amz-request-id``, ``x-deepseek-request-id``,
    ``x-groq-id``, ``x-goog-request-id``, ``mistral-correlation-id``, ``x-kong-request-id``,
    ``apim-request-id``, ``x-ms-request-id``, ``x-correlation-id`` and finally ``cf-ray``.

    Values that are not short plain tokens (at most 200 characters of
    ``[A-Za-z0-9_.:/=+-]``) are skipped, and so is any value that redaction would change:
    one that contains ``secrets``, a registered secret (:func:`known_secrets`) or its
    encodings, or looks like a credential. A server reflecting the API key in a header
    therefore never puts it in ``failure.request_id``."""
    lowered = _lower_headers(headers)
    all_secrets = _all_secrets(secrets)
    for name in _REQUEST_ID_HEADERS:
        value = lowered.get(name, "").strip()
        if _safe_id(value, all_secrets):
            return value
    return None


def _safe_id(value: object, secrets: tuple[str, ...] | None = None) -> bool:
    """Whether ``value`` is a plain token that redaction leaves alone."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value):
        return False
    return redact(value, _all_secrets(()) if secrets is None else secrets) == value


# --------------------------------------------------------------------------- payload extraction


@dataclass
class _Info:
    """Facts dug out of an error payload."""

    message: str | None = None
    type: str | None = None
    code: str | None = None
    code_num: int | None = None
    gstatus: str | None = None
    reasons: list[str] = field(default_factory=list)
    quota_ids: list[str] = field(default_factory=list)
    retry_delay: float | None = None
    serving_provider: str | None = None
    raw: str | None = None
    extra: str | None = None
    request_id: str | None = None

    def hints(self) -> frozenset[str]:
        words = [self.type, self.code, self.gstatus, *self.reasons]
        return frozenset(w.strip().lower() for w in words if w)

    def wording(self) -> str:
        parts = [self.message, self.type, self.code, self.gstatus, *self.reasons, self.raw]
        return _collapse(" ".join(p for p in parts if p))


def _as_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except Exception:  # circular, too deep, or a hostile __str__
        pass
    try:
        return reprlib.repr(value)
    except Exception:  # a hostile __repr__ must not break classification
        return "<unrenderable value>"


def _status_from_code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if 100 <= value <= 599 else None
    if isinstance(value, str) and re.fullmatch(r"\s*\d{3}\s*", value):
        number = int(value)
        return number if 100 <= number <= 599 else None
    return None


_DELAY = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")


def _extract(payload: object, depth: int = 0) -> _Info | None:
    if depth > 4:
        return None
    if isinstance(payload, (list, tuple)):
        for item in payload[:4]:
            if isinstance(item, Mapping):
                found = _extract(item, depth + 1)
                if found is not None:
                    return found
        return None
    if not isinstance(payload, Mapping):
        return None

    top = payload
    info = _Info()
    rid = top.get("request_id")
    if _safe_id(rid):
        info.request_id = str(rid)

    source: Mapping[str, object] = top
    err = top.get("error")
    response = top.get("response")
    if not isinstance(err, (Mapping, str)) and isinstance(response, Mapping):
        err = response.get("error")
    if isinstance(err, Mapping):
        source = err
    elif isinstance(err, str) and err.strip():
        info.message = err

    message_was_text = info.message is not None
    if info.message is None:
        for key in ("message", "detail", "error_description", "msg", "error_message"):
            value = source.get(key)
            if value is None and source is not top:
                value = top.get(key)
            text = _as_text(value)
            if text and text.strip():
                info.message = text
                message_was_text = isinstance(value, str)
                break

    kind = source.get("type")
    if isinstance(kind, str) and kind and kind != "error" and len(kind) <= 100:
        info.type = kind
    code = source.get("code")
    number = _status_from_code(code)
    if number is not None:
        info.code_num = number
    elif isinstance(code, (str, int)) and not isinstance(code, bool) and str(code).strip():
        info.code = str(code)[:100]
    status = source.get("status")
    if isinstance(status, str) and re.fullmatch(r"[A-Z][A-Z_]{2,60}", status):
        info.gstatus = status
    elif info.code_num is None:
        info.code_num = _status_from_code(status)

    details = source.get("details")
    if isinstance(details, list):
        for item in details[:16]:
            if not isinstance(item, Mapping):
                continue
            reason = item.get("reason")
            if isinstance(reason, str) and reason:
                info.reasons.append(reason[:100])
            delay = item.get("retryDelay")
            if isinstance(delay, str):
                match = _DELAY.fullmatch(delay)
                if match:
                    seconds = float(match.group(1))
                    if math.isfinite(seconds) and seconds > 0:
                        info.retry_delay = seconds
            violations = item.get("violations")
            if isinstance(violations, list):
                for violation in violations[:16]:
                    if isinstance(violation, Mapping):
                        for key in ("quotaId", "quotaMetric"):
                            value = violation.get(key)
                            if isinstance(value, str):
                                info.quota_ids.append(value)

    metadata = source.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("provider_name")
        if isinstance(name, str) and name.strip():
            info.serving_provider = name.strip()[:100]
        info.raw = _as_text(metadata.get("raw"))
    failed = source.get("failed_generation")
    if isinstance(failed, str) and failed:
        info.extra = f"failed_generation: {failed}"

    # Gemini sometimes double-encodes: error.message is itself a JSON error document.
    if message_was_text and info.message and info.message.lstrip()[:1] in ("{", "["):
        inner = _extract(_loads(info.message), depth + 1)
        if inner is not None:
            info.message = inner.message or info.message
            info.type = inner.type or info.type
            info.code = inner.code or info.code
            info.code_num = inner.code_num or info.code_num
            info.gstatus = inner.gstatus or info.gstatus
            info.reasons.extend(inner.reasons)
            info.quota_ids.extend(inner.quota_ids)
            info.retry_delay = inner.retry_delay or info.retry_delay
            info.serving_provider = info.serving_provider or inner.serving_provider
            info.request_id = info.request_id or inner.request_id
    if not any((info.message, info.type, info.code, info.code_num, info.gstatus, info.reasons)):
        return None
    return info


def _loads(text: str) -> object:
    if len(text) > _MAX_PARSE:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _parse_body(text: str) -> object:
    """JSON of a body, also when it came as SSE (``event: error`` / ``data: {...}``)."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        return _loads(stripped)
    if stripped.startswith(("data:", "event:")):
        data = [line[5:].lstrip() for line in stripped.splitlines() if line.startswith("data:")]
        if data:
            return _loads("\n".join(data))
    return None


def _embedded_payload(text: str) -> object:
    """A JSON (or Python-repr) error document embedded in exception text, if any."""
    start = text.find("{")
    end = text.rfind("}")
    if start < 0 or end <= start or end - start > 200_000:
        return None
    snippet = text[start : end + 1]
    parsed = _loads(snippet)
    if parsed is not None:
        return parsed
    try:
        return ast.literal_eval(snippet)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


_HTML = re.compile(r"\s*<(?:!doctype|html|head|body|\?xml|title|center|h1)\b", re.IGNORECASE)
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]{0,2000}>")


def _html_text(text: str) -> str:
    text = _SCRIPT.sub(" ", text)
    text = _TAG.sub(" ", text)
    return _collapse(html.unescape(text))


# --------------------------------------------------------------------------- decision

_IMPLIED_STATUS: dict[str, int] = {
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
_PER_MINUTE = re.compile(r"per[\s_\-]*(?:minute|second)", re.IGNORECASE)


def _decide(
    status: int | None,
    hints: frozenset[str],
    text: str,
    *,
    per_minute_quota: bool = False,
    loose: bool = False,
) -> str:
    """The failure code for the facts; see the module docstring for the precedence."""
    eff = status
    if eff is None:
        for hint in sorted(hints):
            if hint in _IMPLIED_STATUS:
                eff = _IMPLIED_STATUS[hint]
                break
    client = eff is None or 400 <= eff < 500

    if eff in (401, 403) or hints & _AUTH_HINTS or _AUTH.search(text):
        return "AUTH"
    if "model_not_found" in hints or is_model_not_found(text):
        return "MODEL_NOT_FOUND"
    if (eff == 404 or hints & {"not_found_error", "not_found"}) and _MODEL_WORD.search(text):
        return "MODEL_NOT_FOUND"
    if not per_minute_quota and is_quota_exhausted(text):
        return "QUOTA"
    if is_credit_limit(text):
        return "CREDIT_LIMIT"
    if eff == 402:
        return "QUOTA"
    if eff == 429 or hints & _RATE_HINTS or per_minute_quota:
        return "RATE_LIMIT"
    if (eff is None or eff >= 500) and is_rate_limit_text(text):
        return "RATE_LIMIT"
    if eff == 413:
        return "INVALID_REQUEST"
    if client and is_context_overflow(text):
        return "CONTEXT_WINDOW_EXCEEDED"
    if client and (hints & _CONTENT_HINTS or _CONTENT.search(text)):
        return "CONTENT_FILTER"
    if eff in (400, 422) or hints & _INVALID_HINTS:
        return "INVALID_REQUEST"
    if eff is None and _INVALID_TEXT.search(text):
        return "INVALID_REQUEST"
    if eff in (408, 504) or hints & _TIMEOUT_HINTS or (eff is None and _TIMEOUT.search(text)):
        return "TIMEOUT"
    if eff == 529 or hints & _OVERLOADED_HINTS or _OVERLOADED.search(text):
        return "OVERLOADED"
    if eff in (500, 502, 503) or hints & _SERVER_HINTS:
        return "SERVER"
    if eff is None and _SERVER_TEXT.search(text):
        return "SERVER"
    if loose and eff is not None and eff >= 500:
        return "SERVER"
    if loose and (_TRANSPORT.search(text) or _TERMINATED.match(text)):
        return "TRANSPORT"
    if eff is not None and eff >= 400:
        return f"HTTP_{eff}"
    return "UNKNOWN"


# --------------------------------------------------------------------------- building failures

_PHRASES: dict[str, str] = {
    "AUTH": "authentication failed",
    "QUOTA": "quota or balance exhausted",
    "CREDIT_LIMIT": "not enough credits for the requested output",
    "CONTEXT_WINDOW_EXCEEDED": "context window exceeded",
    "INVALID_REQUEST": "invalid request",
    "RATE_LIMIT": "rate limited",
    "MODEL_NOT_FOUND": "model not found",
    "CONTENT_FILTER": "content blocked",
    "SERVER": "server error",
    "OVERLOADED": "overloaded",
    "TIMEOUT": "timed out",
    "TRANSPORT": "connection failed",
    "UNKNOWN": "unclassified error",
}
_SAFE_PROVIDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/ ]{0,63}")


def _headline(provider: str | None, code: str, status: int | None) -> str:
    phrase = _PHRASES.get(code, "HTTP error" if code.startswith("HTTP_") else "error")
    facts = code if status is None else f"{code}, HTTP {status}"
    head = f"{phrase} ({facts})"
    if provider and _SAFE_PROVIDER.fullmatch(provider) and redact(provider) == provider:
        return f"{provider}: {head}"
    return head


def _all_secrets(secrets: Iterable[str]) -> tuple[str, ...]:
    given: list[object] = list(secrets)  # tolerate None for an unset key
    return (*(s for s in given if isinstance(s, str)), *known_secrets())


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _detail(text: str | None, secrets: tuple[str, ...]) -> str | None:
    if text is None or not text.strip():
        return None
    cleaned = _LONE_SURROGATE.sub("\ufffd", redact(text.strip(), secrets))
    if len(cleaned) > _DETAIL_MAX:
        cleaned = truncate(cleaned, _DETAIL_KEEP)
    return cleaned


def _info_detail(info: _Info) -> str | None:
    base = info.message or ""
    lower = base.lower()
    tags = [
        f"{name}: {value}"
        for name, value in (
            ("type", info.type),
            ("code", info.code if info.code is not None else info.code_num),
            ("status", info.gstatus),
        )
        if value is not None and str(value).lower() not in lower
    ]
    if info.reasons:
        tags.append("reason: " + ", ".join(r for r in info.reasons if r.lower() not in lower))
    text = base
    tags = [t for t in tags if not t.endswith(": ")]
    if tags:
        text = f"{text} [{'; '.join(tags)}]" if text else "; ".join(tags)
    if info.raw:
        text = f"{text} | upstream: {info.raw}"
    if info.extra:
        text = f"{text} | {info.extra}"
    return text or None


_TRY_AGAIN = re.compile(
    r"(?:try\s+again|retry)\s+(?:in|after)\s+(?:(\d+)\s*m\s*)?(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?)\b",
    re.IGNORECASE,
)


def _retry_from_text(text: str) -> float | None:
    match = _TRY_AGAIN.search(text)
    if not match:
        return None
    minutes = float(match.group(1)) if match.group(1) else 0.0
    amount = float(match.group(2))
    seconds = amount / 1000.0 if match.group(3).lower() == "ms" else amount
    total = minutes * 60.0 + seconds
    return total if math.isfinite(total) and total > 0 else None


_CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f]")


def _build(
    code: str,
    *,
    provider: str | None,
    status: int | None,
    detail: str | None,
    retry_after: float | None,
    request_id: str | None,
    serving_provider: str | None,
    secrets: tuple[str, ...],
) -> LlmFailure:
    if serving_provider is not None:
        serving_provider = _CONTROL_CHARS.sub(" ", redact(serving_provider, secrets, limit=100))
        serving_provider = _LONE_SURROGATE.sub("\ufffd", serving_provider).strip() or None
    if request_id is not None and not _safe_id(request_id, secrets):
        request_id = None
    return make_failure(
        code,
        _headline(provider, code, status),
        status=status,
        retry_after=retry_after,
        request_id=request_id,
        provider=provider,
        serving_provider=serving_provider,
        detail=_detail(detail, secrets),
    )


def _valid_status(status: int | None) -> int | None:
    if isinstance(status, bool) or not isinstance(status, int):
        return None
    return status if 100 <= status <= 599 else None


def _per_minute(info: _Info | None) -> bool:
    if info is None or (info.gstatus or "").upper() != "RESOURCE_EXHAUSTED":
        return False
    return any(_PER_MINUTE.search(q) for q in info.quota_ids)


# --------------------------------------------------------------------------- public classifiers


def classify_http_error(
    status: int,
    body: bytes | str | None,
    headers: Mapping[str, str] | None = None,
    *,
    provider: str | None = None,
    secrets: Iterable[str] = (),
    now: float | None = None,
) -> LlmFailure:
    """Classify a non-2xx HTTP response (see the module docstring for the precedence)."""
    all_secrets = _all_secrets(secrets)
    lowered = _lower_headers(headers)
    reported = _valid_status(status)

    if isinstance(body, (bytes, bytearray)):
        text = bytes(body).decode("utf-8", "replace")
    else:
        text = body or ""
    info: _Info | None = None
    wording = ""
    detail: str | None = None
    if not text.strip():
        detail = None
    elif _HTML.match(text) or "html" in lowered.get("content-type", "").lower():
        detail = _html_text(text)
    else:
        info = _extract(_parse_body(text))
        if info is not None:
            wording = info.wording()
            detail = _info_detail(info) or text
        else:
            wording = _collapse(text[:_MAX_PARSE])
            detail = text

    hints = info.hints() if info is not None else frozenset()
    code = _decide(reported, hints, wording, per_minute_quota=_per_minute(info))
    retry_after = parse_retry_after(lowered, now)
    if retry_after is None and info is not None:
        retry_after = info.retry_delay
    if retry_after is None and code == "RATE_LIMIT":
        retry_after = _retry_from_text(wording)
    return _build(
        code,
        provider=provider,
        status=reported,
        detail=detail,
        retry_after=retry_after,
        request_id=request_id_from(lowered, all_secrets) or (info.request_id if info else None),
        serving_provider=info.serving_provider if info else None,
        secrets=all_secrets,
    )


def classify_error_payload(
    payload: object,
    *,
    provider: str | None = None,
    status: int | None = None,
    secrets: Iterable[str] = (),
) -> LlmFailure:
    """Classify an in-band error object (already-parsed JSON, or its text/bytes).

    Understands OpenAI ``{"error": {...}}`` (``error`` may be a string, ``code`` numeric),
    Anthropic ``{"type": "error", "error": {"type": ...}}``, Gemini ``{"error": {"code",
    "status", "details"}}`` (also double-encoded, also wrapped in a list), OpenRouter
    error chunks (``metadata.provider_name`` → ``serving_provider``), Responses API
    ``{"type": "error", "code": ...}`` and ``response.failed`` events, Groq
    ``tool_use_failed``. A numeric ``code`` (``500``, ``"429"``) is used as the status when
    ``status`` is not given (or is below 400).
    """
    all_secrets = _all_secrets(secrets)
    reported = _valid_status(status)
    if reported is not None and reported < 400:
        reported = None
    if isinstance(payload, (bytes, bytearray)):
        payload = bytes(payload).decode("utf-8", "replace")
    info: _Info | None
    raw_text: str | None = None
    if isinstance(payload, str):
        raw_text = payload
        info = _extract(_parse_body(payload))
    else:
        info = _extract(payload)
        if info is None:
            raw_text = _as_text(payload)
    if info is None:
        wording = _collapse(raw_text or "")
        code = _decide(reported, frozenset(), wording)
        return _build(
            code,
            provider=provider,
            status=reported,
            detail=raw_text,
            retry_after=_retry_from_text(wording) if code == "RATE_LIMIT" else None,
            request_id=None,
            serving_provider=None,
            secrets=all_secrets,
        )
    if reported is None:
        reported = info.code_num
    wording = info.wording()
    code = _decide(reported, info.hints(), wording, per_minute_quota=_per_minute(info))
    retry_after = info.retry_delay
    if retry_after is None and code == "RATE_LIMIT":
        retry_after = _retry_from_text(wording)
    return _build(
        code,
        provider=provider,
        status=reported,
        detail=_info_detail(info),
        retry_after=retry_after,
        request_id=info.request_id,
        serving_provider=info.serving_provider,
        secrets=all_secrets,
    )


_STATUS_IN_TEXT = (
    re.compile(
        r"(?<![a-z0-9])(?:https?(?:/\d(?:\.\d)?)?|status(?:[\s_-]*code)?|error[\s_-]*code|code)"
        r"\s*[:=]?\s*\(?([45]\d\d)(?![\d.])",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?<![\d.])([45]\d\d)[\s:,-]+(?:bad request|unauthorized|payment required|forbidden|not found|"
        r"request timeout|payload too large|request entity too large|unprocessable entity|"
        r"too many requests|internal server error|bad gateway|service unavailable|"
        r"gateway time-?out|client error|server error|resource_exhausted|invalid_argument|"
        r"unavailable|permission_denied|unauthenticated|not_found|internal|deadline_exceeded)",
        re.IGNORECASE,
    ),
    re.compile(r"^\W{0,3}([45]\d\d)(?=[\s:.,)\]]|$)"),
)


def _status_from_text(text: str) -> int | None:
    for pattern in _STATUS_IN_TEXT:
        match = pattern.search(text)
        if match:
            number = int(match.group(1))
            if 100 <= number <= 599:
                return number
    return None


def classify_exception_text(
    text: str,
    *,
    provider: str | None = None,
    secrets: Iterable[str] = (),
) -> LlmFailure:
    """Classify the text of a foreign exception (an SDK error flattened to a string).

    A status is read from phrasings like ``HTTP 429``, ``Error code: 400``,
    ``503 Service Unavailable``; a JSON or Python-repr error document embedded in the text
    is used like :func:`classify_error_payload`. Besides the HTTP precedence, timeout and
    connection wording (``timed out``, ``ECONNRESET``, ``Premature close``, a bare
    ``terminated`` ...) give ``TIMEOUT``/``TRANSPORT``; anything else is ``UNKNOWN``.
    """
    all_secrets = _all_secrets(secrets)
    text = text if isinstance(text, str) else str(text)
    info = _extract(_embedded_payload(text))
    wording = _collapse(text[:_MAX_PARSE])
    status = _status_from_text(wording)
    if status is None and info is not None:
        status = info.code_num
    hints = info.hints() if info is not None else frozenset()
    code = _decide(status, hints, wording, per_minute_quota=_per_minute(info), loose=True)
    retry_after = info.retry_delay if info is not None else None
    if retry_after is None and code == "RATE_LIMIT":
        retry_after = _retry_from_text(wording)
    return _build(
        code,
        provider=provider,
        status=status,
        detail=text,
        retry_after=retry_after,
        request_id=info.request_id if info is not None else None,
        serving_provider=info.serving_provider if info is not None else None,
        secrets=all_secrets,
    )
