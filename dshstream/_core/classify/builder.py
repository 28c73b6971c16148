"""The one failure builder: a status and a :class:`~.payload.Reading` → an
:class:`~dshstream._core.types.LlmFailure`, the same way for HTTP and in-band errors.

Contract: stdlib + ``errors``/``headers``/``redaction``/``strict_json``/``types``,
sans-IO, pure (apart from reading the secret registry through the ``secrets`` it is
given). Decides the code (:func:`~.decision.decide`), the wait, and what of the upstream
text may be shown:

1. **Code.** :func:`~.decision.decide` on the status, the reading's hints and wording,
   and whether a Gemini quota is per minute.
2. **Wait.** ``retry_after`` from the headers, else the payload's ``retryDelay``, else
   (for ``RATE_LIMIT`` only) "try again in 2s" wording.
3. **Headline.** ``message`` is built from facts only, never upstream text:
   ``"{provider}: {phrase} ({code}, HTTP {status})"``; the provider name is left out when
   it is not a plain name or redaction would change it.
4. **Detail.** The upstream text, redacted with ``secrets`` (which callers extend with
   every registered secret), lone surrogates replaced, at most 2,000 characters; blank
   text gives ``None``.
5. **Request id.** The one from the headers, else the payload's, kept only when it is a
   plain id that redaction with ``secrets`` leaves unchanged.
6. **Serving provider.** Redacted, control characters blanked, lone surrogates
   replaced, stripped, at most 100 characters; blank gives ``None``.
7. **Overflow figures.** A ``CONTEXT_WINDOW_EXCEEDED`` failure whose upstream text gives
   the window and the tokens needed (:func:`~.context_figures.context_figures`) carries
   them as ``context_limit``/``context_requested``, and its headline says by how much:
   ``"context window exceeded by 8473 tokens (208473 > 200000)"`` — figures, not text.
"""

from __future__ import annotations

import re

from ..errors import make_failure
from ..headers import is_plain_id
from ..redact import redact, truncate
from ..strict_json import fix_surrogates
from ..types import LlmFailure
from .context_figures import context_figures
from .decision import decide
from .lexicon import retry_after_in_text
from .payload import Reading

__all__ = ["build_failure"]

_DETAIL_MAX = 2000
_DETAIL_KEEP = 1960  # leaves room for "…[truncated N chars]"
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
    "UNKNOWN": "unclassified error",
}
_SAFE_PROVIDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/ ]{0,63}")
_CONTROL_CHARS = re.compile("[\x00-\x1f\x7f-\x9f]")


def _headline(provider: str | None, code: str, status: int | None, figures: tuple[int, int] | None = None) -> str:
    phrase = _PHRASES.get(code, "HTTP error" if code.startswith("HTTP_") else "error")
    if figures is not None:  # rule 7
        limit, requested = figures
        phrase = f"{phrase} by {requested - limit} tokens ({requested} > {limit})"
    facts = code if status is None else f"{code}, HTTP {status}"
    head = f"{phrase} ({facts})"
    if provider and _SAFE_PROVIDER.fullmatch(provider) and redact(provider) == provider:
        return f"{provider}: {head}"
    return head


def _detail(text: str | None, secrets: tuple[str, ...]) -> str | None:
    if text is None or not text.strip():
        return None
    cleaned: str = fix_surrogates(redact(text.strip(), secrets))
    if len(cleaned) > _DETAIL_MAX:
        cleaned = truncate(cleaned, _DETAIL_KEEP)
    return cleaned


def _serving_provider(name: str | None, secrets: tuple[str, ...]) -> str | None:
    if name is None:
        return None
    cleaned: str = fix_surrogates(_CONTROL_CHARS.sub(" ", redact(name, secrets, limit=100)))
    return cleaned.strip() or None


def build_failure(
    status: int | None,
    reading: Reading,
    *,
    provider: str | None,
    secrets: tuple[str, ...],
    retry_after: float | None = None,
    request_id: str | None = None,
) -> LlmFailure:
    """The failure for ``reading`` at ``status`` (the module docstring's rules);
    ``retry_after`` and ``request_id`` are what the headers said, if anything."""
    facts = reading.facts
    hints = facts.hints() if facts is not None else frozenset()
    per_minute = facts is not None and facts.per_minute_quota()
    code = decide(status, hints, reading.wording, per_minute_quota=per_minute)
    if retry_after is None and facts is not None:
        retry_after = facts.retry_delay
    if retry_after is None and code == "RATE_LIMIT":
        retry_after = retry_after_in_text(reading.wording)
    if request_id is None and facts is not None:
        request_id = facts.request_id
    if request_id is not None and not is_plain_id(request_id, secrets):
        request_id = None
    figures = context_figures(reading.detail or reading.wording) if code == "CONTEXT_WINDOW_EXCEEDED" else None
    return make_failure(
        code,
        _headline(provider, code, status, figures),
        status=status,
        retry_after=retry_after,
        request_id=request_id,
        provider=provider,
        serving_provider=_serving_provider(facts.serving_provider if facts is not None else None, secrets),
        detail=_detail(reading.detail, secrets),
        context_limit=figures[0] if figures is not None else None,
        context_requested=figures[1] if figures is not None else None,
    )
