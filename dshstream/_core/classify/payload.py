"""Payload extraction: the facts in an error body (JSON, SSE-wrapped JSON, HTML or text).

Contract: stdlib + :mod:`~dshstream._core.headers` and :mod:`~dshstream._core.strict_json` only,
sans-IO, pure, never raises (hostile ``__repr__``, cycles, deep nesting and huge bodies
included). Decides what the upstream said, not what it means: :class:`ErrorFacts` carries
the message, type, code, status words and hints to :mod:`.decision`, and the upstream
text to the failure's ``detail``.

1. **Where the error is.** ``error`` (an object or a string), else ``response.error``
   (Responses ``response.failed``), else the document itself; a list is searched in its
   first four items. The message is the first non-blank of ``message``, ``detail``,
   ``error_description``, ``msg``, ``error_message`` (of the error, then of the top); a
   string ``error`` is the message, followed by the OAuth ``error_description``.
2. **Codes.** ``type`` (other than ``"error"``) is a hint; a numeric ``code`` or
   ``status`` (``500``, ``"429"``, ``429.0``) is an HTTP status when it lies in 100-599;
   any other ``code`` is a hint; an UPPER_SNAKE ``status`` is a Google status word.
3. **Gemini details.** ``details[].reason`` are hints, ``retryDelay`` (``"27s"``) is the
   wait, ``violations[].quotaId``/``quotaMetric`` name the quota.
4. **OpenRouter.** ``metadata.provider_name`` is the serving provider, ``metadata.raw``
   the upstream text; Groq's ``failed_generation`` is kept for the detail. **Azure.**
   ``innererror.code`` (``ResponsibleAIPolicyViolation``) is a hint, and the categories
   its ``content_filter_result`` marks ``filtered`` go into the detail
   (:func:`content_filter_summary`: ``hate (severity: high), jailbreak (detected)``).
5. **Double encoding.** A message that is itself a JSON error document is read too
   (nested at most four deep), its facts taking precedence.
6. **Request id.** A top-level ``request_id`` counts only when it is a plain id
   (:func:`~dshstream._core.headers.is_plain_id`).
7. **Text.** A text is JSON when it starts with ``{``/``[``, SSE when it starts with
   ``data:``/``event:`` (its ``data:`` lines joined); one longer than :data:`MAX_PARSE`
   characters is not parsed. Text that carries no facts is itself the wording and the
   detail (an HTTP body: only its first :data:`MAX_PARSE` characters are matched).
8. **HTTP bodies.** An HTML page (or an ``html`` content type) yields no wording, only its
   visible text as detail; an empty body yields nothing.
"""

from __future__ import annotations

import html
import json
import math
import re
import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from ..headers import is_plain_id
from ..strict_json import loads_or_none
from .lexicon import collapse

__all__ = [
    "MAX_PARSE",
    "ErrorFacts",
    "Reading",
    "content_filter_summary",
    "facts_from",
    "read_http_body",
    "read_payload",
]

#: characters of a body that are parsed as JSON or matched as wording
MAX_PARSE = 1_000_000

_PER_MINUTE = re.compile(r"per[\s_\-]*(?:minute|second)", re.IGNORECASE)
_PER_DAY = re.compile(r"per[\s_\-]*day", re.IGNORECASE)
_DELAY = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")
_GOOGLE_STATUS = re.compile(r"[A-Z][A-Z_]{2,60}")
_THREE_DIGITS = re.compile(r"\s*\d{3}\s*")
_HTML = re.compile(r"\s*<(?:!doctype|html|head|body|\?xml|title|center|h1)\b", re.IGNORECASE)
_SCRIPT = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]{0,2000}>")


@dataclass
class ErrorFacts:

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
        """The type, code, Google status and reasons, lower-cased."""
        words = [self.type, self.code, self.gstatus, *self.reasons]
        return frozenset(w.strip().lower() for w in words if w)

    def wording(self) -> str:
        """Everything the predicates read: message, type, code, status, reasons, raw."""
        parts = [self.message, self.type, self.code, self.gstatus, *self.reasons, self.raw]
        return collapse(" ".join(p for p in parts if p))

    def per_minute_quota(self) -> bool:
        """A Google ``RESOURCE_EXHAUSTED`` (Gemini API or Vertex AI) whose quota is per
        minute or per second — by its quota ids (``QuotaFailure`` violations, an
        ``ErrorInfo``'s ``quota_limit``) or its message (Vertex: *Quota exceeded for
        aiplatform.googleapis.com/generate_content_requests_per_minute_...*) — and
        nowhere per day: Google documents it as retry-with-backoff, a rate limit."""
        if (self.gstatus or "").upper() != "RESOURCE_EXHAUSTED":
            return False
        said = [*self.quota_ids, self.message or ""]
        if any(_PER_DAY.search(text) for text in said):
            return False  # a daily quota waits for tomorrow, not for a backoff
        return any(_PER_MINUTE.search(text) for text in said)

    def detail(self) -> str | None:
        """The message tagged with the type/code/status/reasons it does not already
        mention, then the upstream text and the extra."""
        base = self.message or ""
        lower = base.lower()
        tags = [
            f"{name}: {value}"
            for name, value in (
                ("type", self.type),
                ("code", self.code if self.code is not None else self.code_num),
                ("status", self.gstatus),
            )
            if value is not None and str(value).lower() not in lower
        ]
        if self.reasons:
            tags.append("reason: " + ", ".join(r for r in self.reasons if r.lower() not in lower))
        text = base
        tags = [t for t in tags if not t.endswith(": ")]
        if tags:
            text = f"{text} [{'; '.join(tags)}]" if text else "; ".join(tags)
        if self.raw:
            text = f"{text} | upstream: {self.raw}"
        if self.extra:
            text = f"{text} | {self.extra}"
        return text or None

    def absorb(self, inner: ErrorFacts) -> None:
        """Take the facts of a double-encoded inner document (rule 5)."""
        self.message = inner.message or self.message
        self.type = inner.type or self.type
        self.code = inner.code or self.code
        self.code_num = inner.code_num or self.code_num
        self.gstatus = inner.gstatus or self.gstatus
        self.reasons.extend(inner.reasons)
        self.quota_ids.extend(inner.quota_ids)
        self.retry_delay = inner.retry_delay or self.retry_delay
        self.serving_provider = self.serving_provider or inner.serving_provider
        self.request_id = self.request_id or inner.request_id


class Reading(NamedTuple):
    """What a body says: its facts (``None`` when it is no error document), the wording
    the predicates read, and the upstream text for ``detail`` (before redaction)."""

    facts: ErrorFacts | None
    wording: str
    detail: str | None


def _as_text(value: object) -> str | None:
    """``value`` as text: itself if a string, else compact JSON, else a bounded repr."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except Exception:  # noqa: BLE001 - circular, too deep, or a hostile __str__
        try:
            return reprlib.repr(value)
        except Exception:  # noqa: BLE001 - a hostile __repr__ must not break classification
            return "<unrenderable value>"


def _status_from_code(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if 100 <= value <= 599 else None
    if isinstance(value, str) and _THREE_DIGITS.fullmatch(value):
        number = int(value)
        return number if 100 <= number <= 599 else None
    return None


def _read_details(facts: ErrorFacts, details: list[object]) -> None:
    for item in details[:16]:
        if not isinstance(item, Mapping):
            continue
        reason = item.get("reason")
        if isinstance(reason, str) and reason:
            facts.reasons.append(reason[:100])
        delay = item.get("retryDelay")
        if isinstance(delay, str):
            match = _DELAY.fullmatch(delay)
            if match:
                seconds = float(match.group(1))
                if math.isfinite(seconds) and seconds > 0:
                    facts.retry_delay = seconds
        violations = item.get("violations")
        if isinstance(violations, list):
            for violation in violations[:16]:
                if isinstance(violation, Mapping):
                    for key in ("quotaId", "quotaMetric"):
                        value = violation.get(key)
                        if isinstance(value, str):
                            facts.quota_ids.append(value)
        metadata = item.get("metadata")
        if isinstance(metadata, Mapping):  # an ErrorInfo names the quota too
            for key in ("quota_limit", "quota_metric"):
                value = metadata.get(key)
                if isinstance(value, str):
                    facts.quota_ids.append(value[:200])


def facts_from(payload: object, depth: int = 0) -> ErrorFacts | None:
    """The facts of a parsed error document, or ``None`` when it carries none."""
    if depth > 4:
        return None
    if isinstance(payload, (list, tuple)):
        for item in payload[:4]:
            if isinstance(item, Mapping):
                found = facts_from(item, depth + 1)
                if found is not None:
                    return found
        return None
    if not isinstance(payload, Mapping):
        return None

    top = payload
    facts = ErrorFacts()
    rid = top.get("request_id")
    if is_plain_id(rid):
        facts.request_id = str(rid)

    source: Mapping[str, object] = top
    err = top.get("error")
    response = top.get("response")
    if not isinstance(err, (Mapping, str)) and isinstance(response, Mapping):
        err = response.get("error")
    if isinstance(err, Mapping):
        source = err
    elif isinstance(err, str) and err.strip():
        facts.message = err
        description = top.get("error_description")  # OAuth 2.0 (RFC 6749 §5.2)
        if isinstance(description, str) and description.strip():
            facts.message = f"{err}: {description}"

    message_was_text = facts.message is not None
    if facts.message is None:
        for key in ("message", "detail", "error_description", "msg", "error_message"):
            value = source.get(key)
            if value is None and source is not top:
                value = top.get(key)
            text = _as_text(value)
            if text and text.strip():
                facts.message = text
                message_was_text = isinstance(value, str)
                break

    kind = source.get("type")
    if isinstance(kind, str) and kind and kind != "error" and len(kind) <= 100:
        facts.type = kind
    code = source.get("code")
    number = _status_from_code(code)
    if number is not None:
        facts.code_num = number
    elif isinstance(code, (str, int)) and not isinstance(code, bool) and str(code).strip():
        facts.code = str(code)[:100]
    status = source.get("status")
    if isinstance(status, str) and _GOOGLE_STATUS.fullmatch(status):
        facts.gstatus = status
    elif facts.code_num is None:
        facts.code_num = _status_from_code(status)

    details = source.get("details")
    if isinstance(details, list):
        _read_details(facts, details)

    metadata = source.get("metadata")
    if isinstance(metadata, Mapping):
        name = metadata.get("provider_name")
        if isinstance(name, str) and name.strip():
            facts.serving_provider = name.strip()[:100]
        facts.raw = _as_text(metadata.get("raw"))
    failed = source.get("failed_generation")
    if isinstance(failed, str) and failed:
        facts.extra = f"failed_generation: {failed}"
    inner_error = source.get("innererror")
    if isinstance(inner_error, Mapping):  # Azure OpenAI
        inner_code = inner_error.get("code")
        if isinstance(inner_code, str) and inner_code.strip():
            facts.reasons.append(inner_code.strip()[:100])
        summary = content_filter_summary(
            inner_error.get("content_filter_result", inner_error.get("content_filter_results"))
        )
        if summary:
            facts.extra = f"{facts.extra} | {summary}" if facts.extra else summary

    # Gemini sometimes double-encodes: error.message is itself a JSON error document.
    if message_was_text and facts.message and facts.message.lstrip()[:1] in ("{", "["):
        inner = facts_from(_loads(facts.message), depth + 1)
        if inner is not None:
            facts.absorb(inner)
    if not any((facts.message, facts.type, facts.code, facts.code_num, facts.gstatus, facts.reasons)):
        return None
    return facts


_MAX_CATEGORIES = 16


def content_filter_summary(results: object) -> str | None:
    """The categories an Azure ``content_filter_result(s)`` object marks ``filtered``, as
    ``"content filter: hate (severity: high), jailbreak (detected)"``; ``None`` when none
    is (bounded: at most 16 categories, names and values cut to 60 characters)."""
    if not isinstance(results, Mapping):
        return None
    named: list[str] = []
    for name, verdict in list(results.items())[:64]:
        if not isinstance(name, str) or not isinstance(verdict, Mapping) or verdict.get("filtered") is not True:
            continue
        facts = []
        severity = verdict.get("severity")
        if isinstance(severity, str) and severity:
            facts.append(f"severity: {severity[:60]}")
        if verdict.get("detected") is True:
            facts.append("detected")
        details = verdict.get("details")
        ids = [
            str(entry.get("id"))[:60]
            for entry in (details[:8] if isinstance(details, list) else [])
            if isinstance(entry, Mapping) and entry.get("filtered") is True and entry.get("id") is not None
        ]
        if ids:
            facts.append("ids: " + ", ".join(ids))
        named.append(f"{name[:60]} ({', '.join(facts)})" if facts else name[:60])
        if len(named) >= _MAX_CATEGORIES:
            break
    return "content filter: " + ", ".join(named) if named else None


def _loads(text: str) -> object:
    """JSON of ``text`` (``NaN``/``Infinity`` accepted, as providers' bodies may carry
    them), or ``None`` when it is longer than :data:`MAX_PARSE`, too deep or not JSON."""
    return loads_or_none(text, max_chars=MAX_PARSE, allow_nan=True)


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


def _html_text(text: str) -> str:
    text = _SCRIPT.sub(" ", text)
    text = _TAG.sub(" ", text)
    return collapse(html.unescape(text))


def read_http_body(text: str, content_type: str = "") -> Reading:
    """What a non-2xx body says (rules 7 and 8): nothing when empty, only its visible text
    when HTML, else the facts of its JSON, else its text."""
    if not text.strip():
        return Reading(None, "", None)
    if _HTML.match(text) or "html" in content_type.lower():
        return Reading(None, "", _html_text(text))
    facts = facts_from(_parse_body(text))
    if facts is None:
        return Reading(None, collapse(text[:MAX_PARSE]), text)
    return Reading(facts, facts.wording(), facts.detail() or text)


def read_payload(payload: object) -> Reading:
    """What an in-band error says: ``payload`` is parsed JSON, or its text/bytes (JSON or
    SSE-wrapped JSON); when it carries no facts its text is the wording and the detail."""
    if isinstance(payload, (bytes, bytearray)):
        payload = bytes(payload).decode("utf-8", "replace")
    if isinstance(payload, str):
        raw: str | None = payload
        facts = facts_from(_parse_body(payload))
    else:
        facts = facts_from(payload)
        raw = _as_text(payload) if facts is None else None
    if facts is None:
        return Reading(None, collapse(raw or ""), raw)
    return Reading(facts, facts.wording(), facts.detail())
