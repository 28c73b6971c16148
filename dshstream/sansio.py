"""dshstream.sansio: the sans-IO core — bytes, strings and dicts in, typed values out.

Contract: nothing here touches a socket, a clock, a thread or the environment, and nothing
here imports ``requests``. Every decoder and filter is incremental: ``feed(piece)`` returns
what is complete so far and ``close()`` the rest; the output is the same however the input
is split, one byte at a time included. Inputs are bounded (``max_event_size``, the
filters' buffers) and every malformed input ends in a structured failure, never a foreign
exception.

- Framing: :class:`SSEDecoder` (``text/event-stream``: :class:`ServerSentEvent`,
  :class:`SSEComment`) and :class:`EventStreamDecoder` (AWS's binary event stream, both
  CRCs checked: :class:`EventStreamMessage`).
- Wires: one :class:`Translator` per provider format, events in, chunks out
  (:class:`OpenAIChatTranslator` with every OpenAI-compatible dialect,
  :class:`OpenAIResponsesTranslator`, :class:`AnthropicTranslator`,
  :class:`GeminiTranslator`, :class:`GeminiInteractionsTranslator`,
  :class:`BedrockConverseTranslator`), written on
  :class:`ChunkWriter` (blocks, held usage and finish: the adapter contract).
  :class:`StreamDecoder` joins a framer to a translator; :func:`decode` runs it over
  recorded bytes, :func:`detect_wire` names the wire of a recording and
  :func:`translator_for` builds a wire's translator.
- Text filters: :class:`ThinkTagStripper` (``<think>`` tags to reasoning),
  :class:`ReasoningSpillGuard` (tagless reasoning glued onto the answer),
  :class:`ToolMarkupParser` (``<tool_call>`` template markup left in the text) and
  :class:`VerbatimToolCallParser` (tool calls written in prose).
- JSON: :func:`repair_incomplete_json` and :func:`parse_tool_arguments` for truncated or
  invalid tool arguments; :class:`PartialJsonReader` and :func:`partial_json` read JSON
  while it streams, as :class:`JsonSnapshot` values that never change type.
- Chunks: :class:`BlockAssembler` and :func:`assemble` fold chunks into an
  ``AssembledResponse`` in one pass; :func:`check_contract` checks a chunk stream against
  the adapter contract; :func:`chunk_to_dict` and :func:`chunk_from_dict` are the lossless
  JSON form of a chunk (``dshstream replay --format jsonl``).

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._core.assembler import BlockAssembler as BlockAssembler, assemble as assemble
    from ._core.contract import check_contract as check_contract
    from ._core.decode import (
        StreamDecoder as StreamDecoder,
        decode as decode,
        detect_wire as detect_wire,
        translator_for as translator_for,
    )
    from ._core.eventstream import (
        EventStreamDecoder as EventStreamDecoder,
        EventStreamMessage as EventStreamMessage,
    )
    from ._core.filters.json_repair import (
        parse_tool_arguments as parse_tool_arguments,
        repair_incomplete_json as repair_incomplete_json,
    )
    from ._core.filters.spill_guard import ReasoningSpillGuard as ReasoningSpillGuard
    from ._core.filters.think_tags import ThinkTagStripper as ThinkTagStripper
    from ._core.filters.tool_markup import ToolMarkupParser as ToolMarkupParser
    from ._core.filters.verbatim_tools import VerbatimToolCallParser as VerbatimToolCallParser
    from ._core.partial_json import partial_json as partial_json
    from ._core.partial_json_reader import (
        JsonSnapshot as JsonSnapshot,
        PartialJsonReader as PartialJsonReader,
    )
    from ._core.sse import (
        SSEComment as SSEComment,
        SSEDecoder as SSEDecoder,
        ServerSentEvent as ServerSentEvent,
    )
    from ._core.types import chunk_from_dict as chunk_from_dict, chunk_to_dict as chunk_to_dict
    from ._core.wires.anthropic import AnthropicTranslator as AnthropicTranslator
    from ._core.wires.bedrock import BedrockConverseTranslator as BedrockConverseTranslator
    from ._core.wires.gemini import GeminiTranslator as GeminiTranslator
    from ._core.wires.gemini_interactions import GeminiInteractionsTranslator as GeminiInteractionsTranslator
    from ._core.wires.openai_chat import OpenAIChatTranslator as OpenAIChatTranslator
    from ._core.wires.openai_responses import OpenAIResponsesTranslator as OpenAIResponsesTranslator
    from ._core.wires.translator import Translator as Translator
    from ._core.wires.writer import ChunkWriter as ChunkWriter

__all__ = _exports.public_names("sansio")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("sansio", name)


def __dir__() -> list[str]:
    return _exports.dir_of("sansio")
