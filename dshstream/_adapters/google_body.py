"""What the request bodies of Google's two Gemini APIs share: ``streamGenerateContent``
(:mod:`~dshstream._adapters.gemini`, Vertex too) and the Interactions API
(:mod:`~dshstream._adapters.gemini_interactions`). The field names differ in case; the
mapping from :class:`~dshstream._core.request.GenerateOptions` does not.

Contract:

1. **Function declarations.** Each tool, in order, as ``{"name", "description",
   "parameters"}``; ``description`` only when the tool has one, ``parameters`` a copy.
2. **Sampling.** ``max_tokens``, ``temperature`` and ``stop`` become the max output
   tokens, the temperature and the stop sequences, each only when set, in that order:
   camelCase for ``streamGenerateContent``, snake_case for Interactions.
3. **Replayed turns.** A model turn's replay state holds the wire's items (parts or
   steps) and ``call_ids``: the call id the assembler gave each function call, by
   position. :func:`kept_replay` yields the items in order, each function call with its
   call id; a call the assembler dropped (max-tokens), or one without an id, is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from .._core.request import GenerateOptions, ToolSpec

__all__ = ["function_declaration", "kept_replay", "sampling_config"]


def function_declaration(tool: ToolSpec) -> dict[str, Any]:
    """One tool's declaration (rule 1)."""
    return {
        "name": tool.name,
        **({"description": tool.description} if tool.description else {}),
        "parameters": dict(tool.parameters),
    }


def sampling_config(options: GenerateOptions, *, snake: bool) -> dict[str, Any]:
    """The sampling fields of a generation config, in the API's case (rule 2)."""
    config: dict[str, Any] = {}
    if options.max_tokens is not None:
        config["max_output_tokens" if snake else "maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.stop:
        config["stop_sequences" if snake else "stopSequences"] = list(options.stop)
    return config


def kept_replay(
    replay: Mapping[str, Any], key: str, kept: Collection[str], is_call: Callable[[dict[str, Any]], bool]
) -> Iterator[tuple[dict[str, Any], str | None]]:
    """The replayed items under ``key`` with each function call's call id (``None`` for
    other items); calls not in ``kept`` are left out (rule 3)."""
    call_ids = replay.get("call_ids")
    call_ids = call_ids if isinstance(call_ids, list) else []
    position = 0
    for item in replay[key]:
        if not isinstance(item, dict):
            continue
        call_id = None
        if is_call(item):
            call_id = call_ids[position] if position < len(call_ids) else None
            position += 1
            if not isinstance(call_id, str) or call_id not in kept:
                continue  # dropped by the assembler (max-tokens)
        yield item, call_id
