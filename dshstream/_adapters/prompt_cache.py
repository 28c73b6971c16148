"""Prompt caching on the wires: what each provider takes of the portable cache points and
:class:`~dshstream._core.prompt_cache.PromptCache` settings, checked before anything is
sent, and the small pieces every mapping shares.

Contract: pure (options in, a ``ConfigurationError`` or nothing out); no I/O.

1. **One check per wire.** A wire states what its provider can do as a
   :class:`CacheSupport` and calls :func:`check_prompt_cache` from ``build_body``; whatever
   was asked that the target cannot do is a ``ConfigurationError`` naming the field
   (``GenerateOptions.messages[2].cache``, ``GenerateOptions.prompt_cache.key``) and the
   provider, with what to use instead. Nothing is dropped silently. A request that asks
   for no caching at all (:func:`uses_prompt_cache`: no ``prompt_cache``, no cache point)
   passes at once.
2. **Limits.** ``max_points`` caps the cache points of one request (Anthropic and Bedrock:
   4); ``point_ttls`` lists the lifetimes a point may ask for; ``longest_first`` refuses a
   ``1h`` point after a ``5m`` one in prompt order (tools, system, messages), which
   Anthropic rejects.
3. Adapters that map nothing (LiteLLM, CustomAdapter, OpenAI-compatible servers other
   than OpenAI's) use :data:`NO_CACHING`.
4. **OpenAI.** A cache point is ``prompt_cache_breakpoint: {"mode": "explicit"}`` on the
   last content part of its turn (:func:`openai_mark`); ``key`` and ``retention`` are
   ``prompt_cache_key`` and ``prompt_cache_retention`` (``"in_memory"``/``"24h"``);
   ``automatic`` is OpenAI's default implicit breakpoint, so nothing is sent for it.
5. **OpenRouter.** A cache point is ``cache_control: {type: "ephemeral", ttl}`` on the last
   content part of its turn, ``automatic`` the top-level ``cache_control`` (OpenRouter's
   documented directive, converted for the provider it routes to); tools take none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._core.errors import ConfigurationError
from .._core.prompt_cache import CACHE_TTLS, CachePoint, CacheTtl
from .._core.request import GenerateOptions
from .._core.validate import invalid

__all__ = [
    "NO_CACHING",
    "CacheSupport",
    "anthropic_cache_control",
    "cache_points",
    "OPENAI_BREAKPOINT",
    "OPENAI_CACHING",
    "OPENROUTER_CACHING",
    "check_prompt_cache",
    "openai_cache_fields",
    "openai_mark",
    "uses_prompt_cache",
]


@dataclass(frozen=True, slots=True)
class CacheSupport:
    """What one target takes of prompt caching (rule 1)."""

    points: bool = False
    automatic: bool = False
    key: bool = False
    retention: bool = False
    cached_content: bool = False
    max_points: int | None = None
    point_ttls: tuple[CacheTtl, ...] = CACHE_TTLS
    longest_first: bool = False
    #: whether a cache point may sit on a tool (else only on messages)
    tool_points: bool = True
    #: what to use instead of a cache point, when :attr:`points` is false
    points_tip: str = ""


NO_CACHING = CacheSupport()


def cache_points(options: GenerateOptions) -> list[tuple[str, CachePoint]]:
    """Every cache point of ``options`` with its field, in prompt order: tools, system
    messages, then the other messages (the order Anthropic caches in)."""
    points = [(f"GenerateOptions.tools[{i}].cache", t.cache) for i, t in enumerate(options.tools) if t.cache]
    indexed = list(enumerate(options.messages))
    for system in (True, False):
        points.extend(
            (f"GenerateOptions.messages[{i}].cache", m.cache)
            for i, m in indexed
            if m.cache is not None and (m.role == "system") == system
        )
    return points


def uses_prompt_cache(options: GenerateOptions) -> bool:
    """Whether ``options`` asks for any prompt caching at all (the common case: no)."""
    if options.prompt_cache is not None:
        return True
    return any(m.cache is not None for m in options.messages) or any(t.cache is not None for t in options.tools)


def _refuse(who: str, field: str, what: str, tip: str = "") -> ConfigurationError:
    return invalid(f"{who} {what} ({field}){'; ' + tip if tip else ''}")


def check_prompt_cache(options: GenerateOptions, support: CacheSupport, who: str) -> None:
    """Refuse what ``options`` asks of prompt caching that ``support`` lacks (rules 1-2)."""
    if not uses_prompt_cache(options):
        return
    settings = options.prompt_cache
    if settings is not None:
        if settings.automatic and not support.automatic:
            raise _refuse(
                who, "GenerateOptions.prompt_cache.automatic", "has no automatic prompt caching",
                "mark what to cache with CachePoint() on a message or tool" if support.points else "",
            )
        if settings.key is not None and not support.key:
            raise _refuse(who, "GenerateOptions.prompt_cache.key", "takes no prompt cache key (an OpenAI setting)")
        if settings.retention is not None and not support.retention:
            raise _refuse(
                who, "GenerateOptions.prompt_cache.retention", "takes no prompt cache retention (an OpenAI setting)"
            )
        if settings.cached_content is not None and not support.cached_content:
            raise _refuse(
                who, "GenerateOptions.prompt_cache.cached_content", "takes no cached content reference (a Gemini setting)"
            )
        if settings.ttl is not None and settings.ttl not in support.point_ttls:
            raise _refuse(who, "GenerateOptions.prompt_cache.ttl", f"cannot keep a prompt cache for {settings.ttl}")
    points = cache_points(options)
    if not points:
        return
    if not support.points:
        field = points[0][0]
        raise _refuse(who, field, "takes no cache points", support.points_tip)
    if not support.tool_points and points[0][0].startswith("GenerateOptions.tools"):
        raise _refuse(
            who, points[0][0], "takes no cache point on a tool",
            "the tools are part of the cached prefix: put the cache point on a message",
        )
    if support.max_points is not None and len(points) > support.max_points:
        raise _refuse(
            who,
            ", ".join(field for field, _ in points[support.max_points :]),
            f"takes at most {support.max_points} cache points per request, {len(points)} were set",
            "keep the ones that end the longest stable prefixes",
        )
    seen_short = False
    for field, point in points:
        if point.ttl is not None and point.ttl not in support.point_ttls:
            raise _refuse(who, field, f"cannot keep a prompt cache for {point.ttl}")
        if support.longest_first:
            if point.ttl == "1h" and seen_short:
                raise _refuse(
                    who, field, "needs 1h cache points before 5m ones in prompt order (tools, system, messages)"
                )
            seen_short = seen_short or point.ttl != "1h"


def anthropic_cache_control(point: CachePoint) -> dict[str, Any]:
    """Anthropic's ``cache_control`` for ``point``: ``{"type": "ephemeral"}`` with its ``ttl``."""
    control: dict[str, Any] = {"type": "ephemeral"}
    if point.ttl is not None:
        control["ttl"] = point.ttl
    return control


#: what OpenAI (chat completions and Responses, Azure's too) takes of prompt caching
#: (rule 4): breakpoints whose lifetime is the request's (30 minutes at least, so a 5m
#: point is kept, a 1h one is not promised), the implicit breakpoint as "automatic", the
#: cache key and the retention
OPENAI_CACHING = CacheSupport(
    points=True, automatic=True, key=True, retention=True, point_ttls=("5m",), tool_points=False
)
#: OpenAI's ``prompt_cache_breakpoint`` on a content part (rule 4)
OPENAI_BREAKPOINT: dict[str, Any] = {"mode": "explicit"}


def openai_cache_fields(options: GenerateOptions) -> dict[str, Any]:
    """``prompt_cache_key`` and ``prompt_cache_retention`` for ``options`` (rule 4)."""
    settings = options.prompt_cache
    fields: dict[str, Any] = {}
    if settings is not None:
        if settings.key is not None:
            fields["prompt_cache_key"] = settings.key
        if settings.retention is not None:
            fields["prompt_cache_retention"] = settings.retention
    return fields


def openai_mark(
    item: dict[str, Any], text_type: str, who: str, marker: tuple[str, dict[str, Any]] | None = None
) -> None:
    """Put a breakpoint on the last content part of ``item`` (a text ``content`` becomes one
    ``text_type`` part first): OpenAI's ``prompt_cache_breakpoint`` (rule 4), or ``marker``
    (a field and its value: OpenRouter's ``cache_control``, rule 5)."""
    field, value = marker if marker is not None else ("prompt_cache_breakpoint", OPENAI_BREAKPOINT)
    content = item.get("content")
    if isinstance(content, str) and content:
        item["content"] = [{"type": text_type, "text": content, field: dict(value)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1] = {**content[-1], field: dict(value)}
    else:
        raise invalid(f"{who}: a cache point needs a turn with text or media content to end on")


#: what OpenRouter takes (rule 5): Anthropic-style ``cache_control`` on content parts and at
#: the top level (its automatic mode), converted by OpenRouter for the routed provider
OPENROUTER_CACHING = CacheSupport(points=True, automatic=True, tool_points=False)
