"""Response headers: how long to wait (``Retry-After``) and which request this was (its id).

Contract: stdlib + :mod:`~dshstream._core.redact` only, sans-IO, pure functions (apart from
reading the secret registry and, for an HTTP-date ``Retry-After`` with no ``now``, the
clock). Header names are compared case-insensitively; a mapping that can't be read
counts as no headers. Used by the transport (the request id of every response) and by
:mod:`~dshstream._core.classify` (``retry_after`` and ``request_id`` of a failure).

:func:`parse_retry_after` decides the wait:

1. ``retry-after-ms`` (milliseconds) wins when it is a positive decimal number.
2. Else ``retry-after``: digits (decimal seconds allowed) are seconds; anything else is
   read as an HTTP date and gives the seconds from ``now`` until then.
3. Zero, negative, garbage, overflowing and past values give ``None``.

:func:`parse_rate_limit_reset` reads when a rate limit resets, for a ``429`` that says
nothing in ``Retry-After`` (the classifier falls back to it):

4. OpenAI's ``x-ratelimit-reset-requests`` / ``-tokens`` (durations: ``1s``, ``6m0s``,
   ``20ms``, ``1h2m3.5s``) and Anthropic's ``anthropic-ratelimit-{requests,tokens,
   input-tokens,output-tokens}-reset`` (RFC 3339 times, from ``now``). The limits whose
   ``remaining`` header says ``0`` are the ones hit: the latest of their resets; when no
   remaining count is exhausted (or none is sent), the earliest reset. Nothing readable,
   or only past times, gives ``None`` (values as in rule 3).

:func:`keep_alive_seconds` reads how long the server keeps an idle connection open:

5. ``Keep-Alive: timeout=N`` (RFC 7230 A.1.2's legacy header, sent by llama.cpp, Node
   and Apache): ``N`` seconds when it is a positive decimal number of at most a day; any
   other value, a missing parameter or no header gives ``None``.

:func:`request_id_from` decides the id:

1. Headers are tried in the order of :data:`REQUEST_ID_HEADERS`, most specific first;
   ``cf-ray`` (a Cloudflare edge id, not the provider's) is the last resort.
2. A value counts only when it is a plain id (:func:`is_plain_id`): at most 200
   characters of ``[A-Za-z0-9_.:/=+-]`` that redaction leaves unchanged, so a server
   echoing a key (or its encodings) in a header never puts it in ``request_id``.
3. Else ``None``.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone

from .redact import known_secrets, redact

__all__ = [
    "REQUEST_ID_HEADERS",
    "all_secrets",
    "is_plain_id",
    "keep_alive_seconds",
    "lower_headers",
    "parse_rate_limit_reset",
    "parse_retry_after",
    "request_id_from",
]

#: Request-id headers, most specific first.
REQUEST_ID_HEADERS = (
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
    "x-debug-trace-id",  # Cohere
    "cf-ray",
)
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:/=+\-]{1,200}")
_SECONDS = re.compile(r"\s*\d+(?:\.\d+)?\s*")
_SIGNED_NUMBER = re.compile(r"\s*[+-]?\d+(?:\.\d+)?\s*")


def lower_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` with stripped, lower-cased names (``{}`` when they can't be read)."""
    if not headers:
        return {}
    out: dict[str, str] = {}
    try:
        for key, value in headers.items():
            out[str(key).strip().lower()] = str(value)
    except Exception:  # noqa: BLE001 - a hostile mapping counts as no headers
        return {}
    return out


def all_secrets(secrets: Iterable[str]) -> tuple[str, ...]:
    """The given ``secrets`` (non-strings, such as ``None`` for an unset key, dropped)
    plus every registered one (:func:`~dshstream._core.redact.known_secrets`)."""
    given: list[object] = list(secrets)
    return (*(s for s in given if isinstance(s, str)), *known_secrets())


def is_plain_id(value: object, secrets: tuple[str, ...] | None = None) -> bool:
    """Whether ``value`` is a short plain token that redaction with ``secrets`` (default:
    the registered ones) leaves unchanged."""
    if not isinstance(value, str) or not _PLAIN_ID.fullmatch(value):
        return False
    return redact(value, all_secrets(()) if secrets is None else secrets) == value


def _positive_seconds(value: str) -> float | None:
    if not _SECONDS.fullmatch(value):
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) and seconds > 0 else None


_KEEP_ALIVE_TIMEOUT = re.compile(r"(?:^|[,;\s])timeout\s*=\s*([0-9]{1,6}(?:\.[0-9]{1,6})?)\s*(?:[,;]|$)", re.IGNORECASE)


def keep_alive_seconds(value: str | None) -> float | None:
    """Rule 5: the idle seconds after which the server said it closes the connection,
    from a ``Keep-Alive`` header's value."""
    match = _KEEP_ALIVE_TIMEOUT.search(value) if isinstance(value, str) and value else None
    if match is None:
        return None
    seconds = float(match.group(1))
    return seconds if 0 < seconds <= 86400 else None


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait before retrying (rules 1-3), ``None`` when the headers don't say;
    ``now`` is a Unix time (default the current time)."""
    lowered = lower_headers(headers)
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        value = _positive_seconds(millis)
        if value is not None and value / 1000.0 > 0:
            return value / 1000.0
    raw = lowered.get("retry-after")
    if raw is None or not raw.strip():
        return None
    if _SIGNED_NUMBER.fullmatch(raw):
        return _positive_seconds(raw)
    try:
        when = email.utils.parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    try:
        delta = when.timestamp() - (time.time() if now is None else now)
    except (OverflowError, OSError, ValueError):
        return None
    return delta if math.isfinite(delta) and delta > 0 else None


#: (reset header, remaining header) of each rate limit a provider reports (rule 4)
RESET_HEADERS: tuple[tuple[str, str], ...] = (
    ("x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"),
    ("x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"),
    *(
        (f"anthropic-ratelimit-{limit}-reset", f"anthropic-ratelimit-{limit}-remaining")
        for limit in ("requests", "tokens", "input-tokens", "output-tokens")
    ),
)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(h|ms|us|µs|ns|m|s)")
_DURATION_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_RFC3339 = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|z|[+-]\d{2}:\d{2})"
)


def _duration(value: str) -> float | None:
    """Seconds of a Go-style duration (``6m0s``, ``20ms``, ``1.5s``), or ``None``."""
    text = value.strip()
    if not text:
        return None
    if _SECONDS.fullmatch(text):  # a bare number: seconds
        return _positive_seconds(text)
    total, at = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != at:
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        at = match.end()
    if at != len(text):
        return None
    return total if math.isfinite(total) and total > 0 else None


def _until_time(value: str, now: float) -> float | None:
    """Seconds from ``now`` (a Unix time) until an RFC 3339 time, or ``None``."""
    match = _RFC3339.fullmatch(value.strip())
    if match is None:
        return None
    day, clock, fraction, zone = match.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        when = datetime.fromisoformat(f"{day}T{clock}{zone}")
        delta = when.timestamp() + (float(fraction) if fraction else 0.0) - now
    except (ValueError, OverflowError, OSError):
        return None
    return delta if math.isfinite(delta) and delta > 0 else None


def parse_rate_limit_reset(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds until the rate limit that was hit resets, from OpenAI's and Anthropic's
    reset headers (rule 4); ``now`` is a Unix time (default the current time)."""
    lowered = lower_headers(headers)
    when = time.time() if now is None else now
    hit: list[float] = []
    other: list[float] = []
    for reset_name, remaining_name in RESET_HEADERS:
        raw = lowered.get(reset_name)
        if raw is None:
            continue
        seconds = _duration(raw) if reset_name.startswith("x-") else _until_time(raw, when)
        if seconds is None:
            continue
        (hit if lowered.get(remaining_name, "").strip() == "0" else other).append(seconds)
    if hit:
        return max(hit)
    return min(other) if other else None


def request_id_from(headers: Mapping[str, str] | None, secrets: Iterable[str] = ()) -> str | None:
    """The provider's request id from ``headers`` (the id rules 1-3: the
    :data:`REQUEST_ID_HEADERS` in order, a plain id only), or ``None``; ``secrets`` are
    checked besides the registered ones, so a server reflecting the API key in a header
    never puts it in ``failure.request_id``."""
    lowered = lower_headers(headers)
    every_secret: tuple[str, ...] | None = None
    for name in REQUEST_ID_HEADERS:
        value = lowered.get(name, "").strip()
        if not _PLAIN_ID.fullmatch(value):
            continue  # is_plain_id's first test: no secret to compare with (rule 2)
        if every_secret is None:  # the registry read only for a candidate
            every_secret = all_secrets(secrets)
        if is_plain_id(value, every_secret):
            return value
    return None
