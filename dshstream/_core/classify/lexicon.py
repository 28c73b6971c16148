"""The word lexicon: the wording of provider errors, as patterns and predicates (the
counterpart of h11's ``_abnf``).

Contract: stdlib only, pure. Decides nothing about codes; :mod:`.decision` weighs these
matches against the status and the provider's type/code.

1. Every pattern matches on word boundaries, where ``_`` and ``-`` count as separators
   and letters and digits do not, case-insensitively: ``StreamGenerateContent`` and
   ``moderate`` are not rate limits.
2. Text is matched after :func:`collapse` (whitespace folded to one space). The
   predicates collapse for themselves; callers of the bare patterns pass collapsed text.
3. Throttling is never quota exhaustion or a context overflow: ``is_quota_exhausted``
   needs exhaustion wording ("quota exceeded", "insufficient balance"), and the generic
   overflow phrasings ("too many tokens") count only without rate-limit wording.
4. Quota wins over affordability: :func:`is_credit_limit` is false whenever
   :func:`is_quota_exhausted` is true.
5. A model error must name a model; lifecycle words (deprecated, retired ...) count only
   after "model" in the same sentence.
6. :data:`SERVER_CONTEXT_FULL` is the wording of a local engine whose context filled up —
   llama.cpp's "Context size has been exceeded." (LM Studio's too) and "KV cache is full",
   llama-box's "... increasing context size" — which comes with a 500: an overflow
   however the status reads (``is_context_overflow`` counts it as well).
"""

from __future__ import annotations

import math
import re

__all__ = [
    "AUTH",
    "CONTENT_FILTER",
    "INVALID_REQUEST",
    "MODEL",
    "OVERLOADED",
    "SERVER_CONTEXT_FULL",
    "SERVER_ERROR",
    "UNSUPPORTED_INPUT",
    "TIMEOUT",
    "collapse",
    "is_context_overflow",
    "is_credit_limit",
    "is_model_not_found",
    "is_quota_exhausted",
    "is_rate_limit_text",
    "retry_after_in_text",
]

_B = r"(?<![a-z0-9])"
_E = r"(?![a-z0-9])"
_S = r"[\s_\-]*"  # optional separator
_S1 = r"[\s_\-]+"  # required separator


def _rx(*alternatives: str) -> re.Pattern[str]:
    body = "|".join(f"(?:{a})" for a in alternatives)
    return re.compile(f"{_B}(?:{body}){_E}", re.IGNORECASE)


def collapse(text: str) -> str:
    """``text`` with every run of whitespace folded to one space, ends stripped."""
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

MODEL = _rx(r"models?")
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

AUTH = _rx(
    rf"(?:invalid|incorrect|missing|bad|revoked|expired|wrong|no)(?:{_S1}x)?{_S1}api{_S}key",
    rf"api{_S}key\s+(?:is\s+)?(?:not\s+valid|invalid|missing|expired|revoked|incorrect|required)",
    rf"api{_S}key{_S}invalid",
    rf"invalid{_S1}(?:authentication|credentials|bearer\s+token)",
    rf"authentication{_S}(?:error|failed|failure|required)",
    r"unauthenticated",
    r"unauthori[sz]ed",
    rf"permission{_S}denied",
)

CONTENT_FILTER = _rx(
    rf"content{_S}(?:filter(?:ed|ing)?|policy|management\s+policy)",
    rf"responsible{_S}ai",
    r"safety\s+(?:system|filters?|settings)",
    rf"prohibited{_S1}content",
    r"blocked\s+(?:due\s+to|by)\s+(?:safety|content|moderation)",
)

OVERLOADED = _rx(r"overload(?:ed)?", r"over\s+capacity", r"at\s+capacity")

TIMEOUT = _rx(
    rf"(?:read|connect|connection|write|pool|socket|gateway)?{_S}time{_S}outs?(?:error|exception)?",
    r"timed\s+out",
    rf"deadline{_S}exceeded",
)

INVALID_REQUEST = _rx(
    rf"invalid{_S1}request",
    r"bad\s+request",
    r"payload\s+too\s+large",
    r"request\s+(?:body|entity)\s+too\s+large",
    r"failed\s+to\s+buffer\s+the\s+request\s+body:\s+length\s+limit\s+exceeded",
    r"unprocessable\s+entity",
)
#: an input kind the model or server cannot take: a capability refusal, never transient
UNSUPPORTED_INPUT = _rx(
    r"(?:image|audio|video|vision|multimodal|pdf|file)\s+(?:input\s+|inputs\s+)?(?:is|are)\s+not\s+supported",
    r"does\s+not\s+support\s+(?:image|audio|video|vision|pdf|file)",
    r"support\s+(?:image|audio|video)\s+input",
    r"failed\s+to\s+load\s+image\s+or\s+audio",
)
SERVER_CONTEXT_FULL = _rx(
    r"context\s+size\s+has\s+been\s+exceeded",
    rf"kv{_S}cache\s+is\s+full",
    r"increasing\s+(?:the\s+)?context\s+size",
)
SERVER_ERROR = _rx(
    rf"internal{_S1}server{_S1}error",
    r"bad\s+gateway",
    r"service\s+unavailable",
    rf"(?:internal|server|upstream){_S1}error",
)


def is_context_overflow(text: str) -> bool:
    """True when ``text`` says the prompt does not fit the model's context window; generic
    phrasings count only without rate-limit wording (rule 3: ``ThrottlingException: Too
    many tokens, rate limit reached`` is a rate limit)."""
    text = collapse(text)
    if _OVERFLOW_STRONG.search(text) or SERVER_CONTEXT_FULL.search(text):
        return True
    return bool(_OVERFLOW_WEAK.search(text)) and not _RATE.search(text)


def is_quota_exhausted(text: str) -> bool:
    """True when ``text`` says the account's quota or balance is exhausted (nothing can
    succeed until it is topped up); never true for throttling ("rate limit reached",
    "quota resets in one minute")."""
    return bool(_QUOTA.search(collapse(text)))


def is_credit_limit(text: str) -> bool:
    """True when ``text`` says the request cannot be afforded but a smaller one can
    ("can only afford", "fewer max_tokens", "requires more credits", "insufficient
    credits"); rule 4."""
    text = collapse(text)
    return bool(_CREDIT.search(text)) and not _QUOTA.search(text)


def is_model_not_found(text: str) -> bool:
    """True when ``text`` says the model is unknown, unsupported, retired or deprecated
    (rule 5: the wording must name a model)."""
    text = collapse(text)
    return bool(_MODEL_STRONG.search(text) or _MODEL_WEAK.search(text))


def is_rate_limit_text(text: str) -> bool:
    """True for throttling wording ("rate limit", "too many requests", "throttled",
    ``RESOURCE_EXHAUSTED``), on word boundaries: ``StreamGenerateContent`` is not."""
    return bool(_RATE.search(collapse(text)))


_TRY_AGAIN = re.compile(
    r"(?:try\s+again|retry)\s+(?:in|after)\s+(?:(\d+)\s*m\s*)?(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|seconds?)\b",
    re.IGNORECASE,
)


def retry_after_in_text(text: str) -> float | None:
    """Seconds from "try again in 2s" / "retry after 1m 30s" / "... in 750ms" wording."""
    match = _TRY_AGAIN.search(text)
    if not match:
        return None
    minutes = float(match.group(1)) if match.group(1) else 0.0
    amount = float(match.group(2))
    seconds = amount / 1000.0 if match.group(3).lower() == "ms" else amount
    total = minutes * 60.0 + seconds
    return total if math.isfinite(total) and total > 0 else None
