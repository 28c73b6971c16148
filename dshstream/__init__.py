"""dshstream: stream LLM responses from every provider as one typed chunk protocol.

Only the vocabulary (the chunk, block and failure types and the exception tree) is imported
with the package; everything else — the assembler, decoders, filters, and all that touches
``requests`` (adapters, the service, the transport) — is imported on first use, so
``import dshstream`` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import (
    AbortedError,
    AuthenticationError,
    ConfigurationError,
    ContentBlockedError,
    ContextWindowExceededError,
    EmptyResponseError,
    InvalidRequestError,
    LlmError,
    ModelNotFoundError,
    OverloadedError,
    ProtocolError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
    StreamClosedError,
    StreamTimeoutError,
    ToolArgumentsError,
    TransportError,
)
from .types import (
    Block,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    ResponseMetadata,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    UsageChunk,
    chunk_from_dict,
    chunk_to_dict,
)

if TYPE_CHECKING:
    from .assembler import AssembledResponse, BlockAssembler, assemble
    from .attribution import AppIdentity, attribution_headers
    from .contract import check_contract
    from .request import GenerateOptions, Message, ToolSpec
    from .adapters.anthropic import AnthropicAdapter
    from .adapters.base import LlmAdapter, ModelInfo, ProviderInfo
    from .adapters.custom import CustomAdapter
    from .adapters.http import HttpAdapter, ModelListFormat
    from .adapters.settings import HttpSettings
    from .retry import RetryPolicy
    from .adapters.gemini import GeminiAdapter
    from .adapters.openai_responses import OpenAIResponsesAdapter
    from .adapters.openai_chat import OpenAIChatAdapter
    from .render import format_error_code_for_display
    from .decoding import decode
    from .defaults import default_service, stream
    from .filters.json_repair import parse_tool_arguments, repair_incomplete_json
    from .filters.spill_guard import ReasoningSpillGuard
    from .filters.think_tags import ThinkTagStripper
    from .filters.verbatim_tools import VerbatimToolCallParser
    from .redaction import redact
    from .service import LlmService, Registration
    from .sse import ServerSentEvent, SSEComment, SSEDecoder
    from .chunk_stream import ChunkStream

_LAZY: dict[str, str] = {
    "AppIdentity": ".attribution",
    "AssembledResponse": ".assembler",
    "BlockAssembler": ".assembler",
    "GenerateOptions": ".request",
    "Message": ".request",
    "ToolSpec": ".request",
    "assemble": ".assembler",
    "attribution_headers": ".attribution",
    "check_contract": ".contract",
    "AnthropicAdapter": ".adapters.anthropic",
    "CustomAdapter": ".adapters.custom",
    "GeminiAdapter": ".adapters.gemini",
    "HttpAdapter": ".adapters.http",
    "HttpSettings": ".adapters.settings",
    "ModelListFormat": ".adapters.http",
    "RetryPolicy": ".retry",
    "OpenAIResponsesAdapter": ".adapters.openai_responses",
    "ChunkStream": ".chunk_stream",
    "LlmAdapter": ".adapters.base",
    "LlmService": ".service",
    "ModelInfo": ".adapters.base",
    "OpenAIChatAdapter": ".adapters.openai_chat",
    "ProviderInfo": ".adapters.base",
    "ReasoningSpillGuard": ".filters.spill_guard",
    "Registration": ".service",
    "SSEComment": ".sse",
    "SSEDecoder": ".sse",
    "ServerSentEvent": ".sse",
    "ThinkTagStripper": ".filters.think_tags",
    "VerbatimToolCallParser": ".filters.verbatim_tools",
    "decode": ".decoding",
    "default_service": ".defaults",
    "stream": ".defaults",
    "format_error_code_for_display": ".render",
    "parse_tool_arguments": ".filters.json_repair",
    "redact": ".redaction",
    "repair_incomplete_json": ".filters.json_repair",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dshstream' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AbortedError",
    "AnthropicAdapter",
    "AppIdentity",
    "AssembledResponse",
    "AuthenticationError",
    "Block",
    "BlockAssembler",
    "BlockEnd",
    "BlockStart",
    "ChunkStream",
    "ConfigurationError",
    "ContentBlockedError",
    "ContextWindowExceededError",
    "CustomAdapter",
    "EmptyResponseError",
    "Finish",
    "FinishReason",
    "GeminiAdapter",
    "GenerateOptions",
    "HttpAdapter",
    "HttpSettings",
    "InvalidRequestError",
    "LlmAdapter",
    "LlmError",
    "LlmFailure",
    "LlmService",
    "Message",
    "ModelInfo",
    "ModelListFormat",
    "ModelNotFoundError",
    "OpenAIChatAdapter",
    "OpenAIResponsesAdapter",
    "OverloadedError",
    "ProtocolError",
    "ProviderInfo",
    "QuotaExceededError",
    "RateLimitError",
    "ReasoningBlock",
    "ReasoningDelta",
    "ReasoningSpillGuard",
    "Registration",
    "ResponseMetadata",
    "RetryPolicy",
    "SSEComment",
    "SSEDecoder",
    "ServerError",
    "ServerSentEvent",
    "StreamChunk",
    "StreamClosedError",
    "StreamTimeoutError",
    "TextBlock",
    "TextDelta",
    "ThinkTagStripper",
    "TokenUsage",
    "ToolArgumentsError",
    "ToolCallBlock",
    "ToolCallDelta",
    "ToolResultBlock",
    "ToolSpec",
    "TransportError",
    "UsageChunk",
    "VerbatimToolCallParser",
    "__version__",
    "assemble",
    "attribution_headers",
    "check_contract",
    "chunk_from_dict",
    "chunk_to_dict",
    "decode",
    "default_service",
    "format_error_code_for_display",
    "parse_tool_arguments",
    "redact",
    "repair_incomplete_json",
    "stream",
]
