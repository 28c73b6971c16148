"""Prompt caching as a caller asks for it: :class:`CachePoint` ("cache the prompt up to
here") on a message, a system prompt or a tool, and :class:`PromptCache`, the request-wide
settings. Nothing here knows a provider's mechanism; the adapters map both
(:mod:`~dshstream._adapters.prompt_cache`) or refuse them before anything is sent.

Contract: stdlib, ``validate`` only; plain frozen values, checked where they are built.

1. A :class:`CachePoint` marks the end of a cacheable prefix: on a :class:`Message` it
   covers everything up to and including that message (a system prompt is a message),
   on a :class:`ToolSpec` the tool list up to and including that tool. ``ttl`` is
   ``None`` (the provider's default lifetime), ``"5m"`` or ``"1h"``.
2. :class:`PromptCache` holds what is set once per request: ``automatic`` (let the
   provider place a breakpoint itself, moving it forward as the conversation grows;
   ``ttl`` its lifetime), ``key`` (OpenAI's ``prompt_cache_key``: requests sharing a key
   are routed to the same cache), ``retention`` (OpenAI's ``prompt_cache_retention``:
   ``"in_memory"`` or ``"24h"``) and ``cached_content`` (the name of a Gemini cache
   created beforehand, ``cachedContents/...``).
3. A wrong type is a ``ConfigurationTypeError``, a bad value a ``ConfigurationError``;
   both name the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .validate import check_choice, check_str_or_none, describe, invalid

__all__ = ["CACHE_TTLS", "RETENTIONS", "CachePoint", "CacheTtl", "PromptCache", "Retention", "check_cache_point"]

CacheTtl: TypeAlias = Literal["5m", "1h"]
Retention: TypeAlias = Literal["in_memory", "24h"]
CACHE_TTLS: tuple[CacheTtl, ...] = ("5m", "1h")
RETENTIONS: tuple[Retention, ...] = ("in_memory", "24h")


@dataclass(frozen=True, slots=True)
class CachePoint:
    """Cache the prompt up to here (rule 1): ``Message.system(text, cache=CachePoint())``,
    ``ToolSpec(..., cache=CachePoint("1h"))``."""

    ttl: CacheTtl | None = None

    def __post_init__(self) -> None:
        if self.ttl is not None:
            check_choice(self.ttl, "CachePoint.ttl", CACHE_TTLS)


def check_cache_point(value: object, field: str) -> CachePoint | None:
    """``value`` if it is ``None`` or a :class:`CachePoint` (rule 3)."""
    if value is None or isinstance(value, CachePoint):
        return value
    raise invalid(f"{field} must be a CachePoint or None, got {describe(value)}", wrong_type=True)


@dataclass(frozen=True, slots=True)
class PromptCache:
    """Request-wide prompt caching (rule 2), as ``GenerateOptions.prompt_cache``."""

    automatic: bool = False
    ttl: CacheTtl | None = None
    key: str | None = None
    retention: Retention | None = None
    cached_content: str | None = None

    def __post_init__(self) -> None:
        if type(self.automatic) is not bool:
            raise invalid(f"PromptCache.automatic must be a bool, got {describe(self.automatic)}", wrong_type=True)
        if self.ttl is not None:
            check_choice(self.ttl, "PromptCache.ttl", CACHE_TTLS)
            if not self.automatic:  # a lifetime of nothing: the breakpoints carry their own
                raise invalid("PromptCache.ttl applies to automatic caching: set automatic=True too")
        check_str_or_none(self.key, "PromptCache.key")
        if self.key is not None and not self.key:
            raise invalid("PromptCache.key must not be empty")
        if self.retention is not None:
            check_choice(self.retention, "PromptCache.retention", RETENTIONS)
        check_str_or_none(self.cached_content, "PromptCache.cached_content")
        if self.cached_content is not None and not self.cached_content.strip():
            raise invalid("PromptCache.cached_content must name a cache (cachedContents/...)")
