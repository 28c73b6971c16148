"""dshstream: stream LLM responses from every provider as one typed chunk protocol.

Stream a reply from a provider whose key is in the environment (here ``OPENAI_API_KEY``)::

    import dshstream

    stream = dshstream.stream("openai", "gpt-4o-mini", "Write a haiku about rivers.")
    for text in stream.text_stream():       # the visible text, as it arrives
        print(text, end="", flush=True)
    result = stream.result()                # text, reasoning, tool calls, usage, finish
    if result.failure is not None:          # no key, a rate limit, a cut connection...
        print(result.failure.code, result.failure.message)

Iterate the stream itself for every typed chunk (``TextDelta``, ``ReasoningDelta``,
``ToolCallDelta``, ``BlockStart``/``BlockEnd``, ``UsageChunk``, ``Finish``). Nothing raises
while streaming: a failure is the last chunk's ``FinishReason``; ``result.raise_for_failure()``
raises it as an ``LlmError``. Without a key, ``dshstream demo`` (the shell) streams real
recorded responses served on 127.0.0.1, and README.rst's Quickstart does the same in Python
with ``ReplayServer``; an ``LlmService`` of your own routes provider names to adapters
(``OpenAIChatAdapter``, ``AnthropicAdapter``, ``GeminiAdapter``, the clouds' ...). One
service may be shared by many threads; each ``ChunkStream`` is read by one, and closed or
cancelled from any.

For maintainers: this module is the one public surface. Every public name is listed once,
in :data:`_EXPORTS`, with the private module that defines it; that table feeds lazy
loading, ``__all__`` and the ``TYPE_CHECKING`` imports below (a test keeps the three in
agreement). Only the vocabulary — the chunk, block and failure types and the exception
tree — is imported with the package; everything else (the assembler, decoders, filters,
and all that touches ``requests``: adapters, the service, the transport) is imported on
first use, so ``import dshstream`` stays fast. Public classes and functions carry this
package's name as their ``__module__`` (``dshstream.TextDelta``, not the private path),
in ``repr``, tracebacks and pickles. The package tree, module by module, is the Layout
section of CONTRIBUTING.rst.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from ._core.errors import (
    AbortedError as AbortedError,
    AuthenticationError as AuthenticationError,
    ConfigurationError as ConfigurationError,
    ConfigurationTypeError as ConfigurationTypeError,
    ContentBlockedError as ContentBlockedError,
    ContextWindowExceededError as ContextWindowExceededError,
    EmptyResponseError as EmptyResponseError,
    InvalidRequestError as InvalidRequestError,
    LlmError as LlmError,
    ModelNotFoundError as ModelNotFoundError,
    NetworkError as NetworkError,
    OverloadedError as OverloadedError,
    ProtocolError as ProtocolError,
    ProviderError as ProviderError,
    QuotaExceededError as QuotaExceededError,
    RateLimitError as RateLimitError,
    ServerError as ServerError,
    StreamClosedError as StreamClosedError,
    StreamTimeoutError as StreamTimeoutError,
    ToolArgumentsError as ToolArgumentsError,
    TransportError as TransportError,
)
from ._core.types import (
    Block as Block,
    BlockEnd as BlockEnd,
    BlockStart as BlockStart,
    Citation as Citation,
    FileBlock as FileBlock,
    Finish as Finish,
    FinishReason as FinishReason,
    LlmFailure as LlmFailure,
    ReasoningBlock as ReasoningBlock,
    ReasoningDelta as ReasoningDelta,
    ResponseMetadata as ResponseMetadata,
    StreamChunk as StreamChunk,
    TextBlock as TextBlock,
    TextDelta as TextDelta,
    TokenUsage as TokenUsage,
    ToolCallBlock as ToolCallBlock,
    ToolCallDelta as ToolCallDelta,
    ToolResultBlock as ToolResultBlock,
    UsageChunk as UsageChunk,
    chunk_from_dict as chunk_from_dict,
    chunk_to_dict as chunk_to_dict,
)

if TYPE_CHECKING:
    from ._adapters.anthropic import AnthropicAdapter as AnthropicAdapter
    from ._adapters.azure import (
        AzureOpenAIAdapter as AzureOpenAIAdapter,
        AzureOpenAIResponsesAdapter as AzureOpenAIResponsesAdapter,
    )
    from ._adapters.base import (
        LlmAdapter as LlmAdapter,
        ModelInfo as ModelInfo,
        ProviderInfo as ProviderInfo,
    )
    from ._adapters.custom import CustomAdapter as CustomAdapter
    from ._adapters.bedrock import BedrockAdapter as BedrockAdapter
    from ._adapters.gemini import GeminiAdapter as GeminiAdapter
    from ._adapters.google_oauth import AuthorizedUserCredentials as AuthorizedUserCredentials
    from ._adapters.http import HttpAdapter as HttpAdapter, ModelListFormat as ModelListFormat
    from ._adapters.litellm import LiteLLMAdapter as LiteLLMAdapter
    from ._adapters.openai_chat import OpenAIChatAdapter as OpenAIChatAdapter
    from ._adapters.openai_responses import OpenAIResponsesAdapter as OpenAIResponsesAdapter
    from ._adapters.settings import HttpSettings as HttpSettings
    from ._adapters.vertex import (
        VertexAnthropicAdapter as VertexAnthropicAdapter,
        VertexGeminiAdapter as VertexGeminiAdapter,
    )
    from ._chunk_stream import ChunkStream as ChunkStream
    from ._core.sigv4 import AwsCredentials as AwsCredentials
    from ._core.assembler import (
        AssembledResponse as AssembledResponse,
        BlockAssembler as BlockAssembler,
        assemble as assemble,
    )
    from ._core.attribution import (
        AppIdentity as AppIdentity,
        attribution_headers as attribution_headers,
    )
    from ._core.contract import check_contract as check_contract
    from ._core.decode import (
        StreamDecoder as StreamDecoder,
        decode as decode,
        detect_wire as detect_wire,
        translator_for as translator_for,
    )
    from ._core.filters.json_repair import (
        parse_tool_arguments as parse_tool_arguments,
        repair_incomplete_json as repair_incomplete_json,
    )
    from ._core.eventstream import (
        EventStreamDecoder as EventStreamDecoder,
        EventStreamMessage as EventStreamMessage,
    )
    from ._core.partial_json import partial_json as partial_json
    from ._core.partial_json_reader import JsonSnapshot as JsonSnapshot, PartialJsonReader as PartialJsonReader
    from ._core.filters.spill_guard import ReasoningSpillGuard as ReasoningSpillGuard
    from ._core.filters.think_tags import ThinkTagStripper as ThinkTagStripper
    from ._core.filters.verbatim_tools import VerbatimToolCallParser as VerbatimToolCallParser
    from ._core.recovery import (
        CredentialSource as CredentialSource,
        may_view_detail as may_view_detail,
        recovery_tips as recovery_tips,
    )
    from ._core.parts import (
        AudioPart as AudioPart,
        DocumentPart as DocumentPart,
        ImagePart as ImagePart,
        MediaPart as MediaPart,
    )
    from ._core.media_support import MediaSupport as MediaSupport
    from ._core.records import (
        AttemptRecord as AttemptRecord,
        FirstChunk as FirstChunk,
        Observer as Observer,
        ObserverRecord as ObserverRecord,
        RequestSettings as RequestSettings,
        StreamFinished as StreamFinished,
        StreamStarted as StreamStarted,
    )
    from ._core.redact import redact as redact
    from ._core.response_format import JsonMode as JsonMode, JsonSchema as JsonSchema
    from ._core.request import (
        GenerateOptions as GenerateOptions,
        Message as Message,
        ToolSpec as ToolSpec,
    )
    from ._core.retry import RetryPolicy as RetryPolicy
    from ._core.sse import (
        SSEComment as SSEComment,
        SSEDecoder as SSEDecoder,
        ServerSentEvent as ServerSentEvent,
    )
    from ._core.wires.anthropic import AnthropicTranslator as AnthropicTranslator
    from ._core.wires.bedrock import BedrockConverseTranslator as BedrockConverseTranslator
    from ._core.wires.gemini import GeminiTranslator as GeminiTranslator
    from ._core.wires.openai_chat import OpenAIChatTranslator as OpenAIChatTranslator
    from ._core.wires.openai_responses import OpenAIResponsesTranslator as OpenAIResponsesTranslator
    from ._core.wires.translator import Translator as Translator
    from ._core.wires.writer import ChunkWriter as ChunkWriter
    from ._defaults import default_service as default_service, stream as stream
    from ._render import format_error_code_for_display as format_error_code_for_display
    from ._replay_server import ReplayServer as ReplayServer, Route as Route
    from ._service import LlmService as LlmService, Registration as Registration
    from ._tool_loop import (
        ToolLoopError as ToolLoopError,
        ToolLoopResult as ToolLoopResult,
        ToolLoopStep as ToolLoopStep,
        ToolLoopStream as ToolLoopStream,
        ToolOutcome as ToolOutcome,
        run_tools as run_tools,
    )

#: every public name -> the private module (relative to this package) that defines it
_EXPORTS: dict[str, str] = {
    "AbortedError": "._core.errors",
    "AnthropicAdapter": "._adapters.anthropic",
    "AnthropicTranslator": "._core.wires.anthropic",
    "AppIdentity": "._core.attribution",
    "AssembledResponse": "._core.assembler",
    "AuthenticationError": "._core.errors",
    "AuthorizedUserCredentials": "._adapters.google_oauth",
    "AzureOpenAIAdapter": "._adapters.azure",
    "AzureOpenAIResponsesAdapter": "._adapters.azure",
    "BedrockConverseTranslator": "._core.wires.bedrock",
    "Block": "._core.types",
    "BlockAssembler": "._core.assembler",
    "BlockEnd": "._core.types",
    "BlockStart": "._core.types",
    "ChunkStream": "._chunk_stream",
    "ChunkWriter": "._core.wires.writer",
    "Citation": "._core.types",
    "CredentialSource": "._core.recovery",
    "ConfigurationError": "._core.errors",
    "ConfigurationTypeError": "._core.errors",
    "ContentBlockedError": "._core.errors",
    "ContextWindowExceededError": "._core.errors",
    "CustomAdapter": "._adapters.custom",
    "EmptyResponseError": "._core.errors",
    "EventStreamDecoder": "._core.eventstream",
    "EventStreamMessage": "._core.eventstream",
    "Finish": "._core.types",
    "FinishReason": "._core.types",
    "GeminiAdapter": "._adapters.gemini",
    "GeminiTranslator": "._core.wires.gemini",
    "GenerateOptions": "._core.request",
    "HttpAdapter": "._adapters.http",
    "HttpSettings": "._adapters.settings",
    "InvalidRequestError": "._core.errors",
    "JsonMode": "._core.response_format",
    "JsonSnapshot": "._core.partial_json_reader",
    "JsonSchema": "._core.response_format",
    "LiteLLMAdapter": "._adapters.litellm",
    "LlmAdapter": "._adapters.base",
    "LlmError": "._core.errors",
    "LlmFailure": "._core.types",
    "LlmService": "._service",
    "Message": "._core.request",
    "ModelInfo": "._adapters.base",
    "ModelListFormat": "._adapters.http",
    "ModelNotFoundError": "._core.errors",
    "NetworkError": "._core.errors",
    "OpenAIChatAdapter": "._adapters.openai_chat",
    "OpenAIChatTranslator": "._core.wires.openai_chat",
    "OpenAIResponsesAdapter": "._adapters.openai_responses",
    "OpenAIResponsesTranslator": "._core.wires.openai_responses",
    "OverloadedError": "._core.errors",
    "PartialJsonReader": "._core.partial_json_reader",
    "ProtocolError": "._core.errors",
    "ProviderError": "._core.errors",
    "ProviderInfo": "._adapters.base",
    "QuotaExceededError": "._core.errors",
    "RateLimitError": "._core.errors",
    "ReasoningBlock": "._core.types",
    "ReasoningDelta": "._core.types",
    "ReasoningSpillGuard": "._core.filters.spill_guard",
    "Registration": "._service",
    "ReplayServer": "._replay_server",
    "AttemptRecord": "._core.records",
    "FirstChunk": "._core.records",
    "Observer": "._core.records",
    "ObserverRecord": "._core.records",
    "RequestSettings": "._core.records",
    "StreamFinished": "._core.records",
    "StreamStarted": "._core.records",
    "ResponseMetadata": "._core.types",
    "RetryPolicy": "._core.retry",
    "Route": "._replay_server",
    "SSEComment": "._core.sse",
    "SSEDecoder": "._core.sse",
    "ServerError": "._core.errors",
    "ServerSentEvent": "._core.sse",
    "StreamChunk": "._core.types",
    "StreamClosedError": "._core.errors",
    "StreamDecoder": "._core.decode",
    "StreamTimeoutError": "._core.errors",
    "TextBlock": "._core.types",
    "FileBlock": "._core.types",
    "ImagePart": "._core.parts",
    "DocumentPart": "._core.parts",
    "AudioPart": "._core.parts",
    "MediaPart": "._core.parts",
    "MediaSupport": "._core.media_support",
    "TextDelta": "._core.types",
    "ThinkTagStripper": "._core.filters.think_tags",
    "TokenUsage": "._core.types",
    "ToolArgumentsError": "._core.errors",
    "ToolCallBlock": "._core.types",
    "ToolCallDelta": "._core.types",
    "ToolLoopError": "._tool_loop",
    "ToolLoopResult": "._tool_loop",
    "ToolLoopStep": "._tool_loop",
    "ToolLoopStream": "._tool_loop",
    "ToolOutcome": "._tool_loop",
    "ToolResultBlock": "._core.types",
    "ToolSpec": "._core.request",
    "Translator": "._core.wires.translator",
    "TransportError": "._core.errors",
    "UsageChunk": "._core.types",
    "VerbatimToolCallParser": "._core.filters.verbatim_tools",
    "AwsCredentials": "._core.sigv4",
    "BedrockAdapter": "._adapters.bedrock",
    "VertexAnthropicAdapter": "._adapters.vertex",
    "VertexGeminiAdapter": "._adapters.vertex",
    "assemble": "._core.assembler",
    "attribution_headers": "._core.attribution",
    "check_contract": "._core.contract",
    "chunk_from_dict": "._core.types",
    "chunk_to_dict": "._core.types",
    "decode": "._core.decode",
    "default_service": "._defaults",
    "detect_wire": "._core.decode",
    "format_error_code_for_display": "._render",
    "parse_tool_arguments": "._core.filters.json_repair",
    "partial_json": "._core.partial_json",
    "may_view_detail": "._core.recovery",
    "recovery_tips": "._core.recovery",
    "redact": "._core.redact",
    "repair_incomplete_json": "._core.filters.json_repair",
    "run_tools": "._tool_loop",
    "stream": "._defaults",
    "translator_for": "._core.decode",
}
#: modules imported with the package (the vocabulary); the rest load on first use
_EAGER = frozenset({"._core.errors", "._core.types"})

__all__ = sorted(["__version__", *_EXPORTS])


def _publish(value: Any) -> Any:
    """Show ``value`` under this package's public name (it may be a type alias that takes no
    attributes: then it is left as it is)."""
    if isinstance(value, type) or callable(value):
        try:
            value.__module__ = __name__
        except (AttributeError, TypeError):
            pass
    return value


for _name, _module in _EXPORTS.items():
    if _module in _EAGER:
        _publish(globals()[_name])
del _name, _module


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _publish(getattr(importlib.import_module(module, __name__), name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
