"""The public surface, name by name, and how a public namespace loads its names.

Contract: stdlib only. Nothing of the package is imported here at import time; a private
module is imported on first use of a name it defines, relative to this package, so a
vendored copy (``legacyapp._vendor.dshstream``) loads its own modules.

1. **Once.** :data:`SURFACE` lists every public name once: under its public home (``""``
   is the package itself, ``"sansio"`` is ``dshstream.sansio``, ...) and the private module
   that defines it. A name is public in exactly one place. ``__all__`` of every namespace
   is derived from it (:func:`public_names`); each namespace module states the same names
   again as static imports, for type checkers only (a test keeps the two in agreement).
2. **Lazy.** A namespace's ``__getattr__`` (:func:`load`) imports the defining module on
   first use and caches the value in the namespace. ``import dshstream`` imports only the
   vocabulary (:data:`EAGER`), and ``import dshstream.sansio`` (any namespace) nothing more.
3. **Public paths.** Every public class and function takes the ``__module__`` of its own
   public home (``dshstream.sansio.SSEDecoder``, ``dshstream.errors.ServerError``), so
   ``repr``, tracebacks and pickles name the public path: the vocabulary's when the package
   is imported (an exception always shows its public path), the others' when a name is
   first loaded through any namespace, for its module and every other module of the
   table imported by then, whichever namespace asked.
4. **Moved names.** A name that was public at the package root in the flat layout, before
   the namespaces (:data:`FORMER_ROOT`), and now lives in a namespace or was renamed
   (:data:`RENAMED`), still resolves as
   ``dshstream.NAME`` (old code, vendored code, old pickles) with a
   :class:`DeprecationWarning` naming its new home. It is in neither ``__all__`` nor
   ``dir()``.
"""

import importlib
import sys
import types
import warnings
from typing import Any

#: the package this module belongs to: ``"dshstream"``, or the vendored dotted name
PACKAGE = __name__.rpartition(".")[0]

#: public home -> {defining private module -> the names it publishes there}. ``NEW=OLD``
#: publishes the private name ``OLD`` as ``NEW``.
SURFACE: dict[str, dict[str, str]] = {
    # The package root: what a caller needs to stream, read the result and catch failures.
    "": {
        "._version": "__version__",
        "._defaults": "default_service stream",
        "._service": "LlmService",
        "._core.chain": "Target",
        "._chunk_stream": "ChunkStream",
        "._tool_loop": "run_tools",
        "._core.types": (
            "StreamChunk BlockStart TextDelta ReasoningDelta ToolCallDelta BlockEnd UsageChunk "
            "Finish "
            "Block TextBlock ReasoningBlock ToolCallBlock ToolResultBlock FileBlock Citation "
            "TokenUsage FinishReason LlmFailure ResponseMetadata"
        ),
        "._core.assembler": "AssembledResponse",
        "._core.request": "GenerateOptions Message ToolSpec",
        "._core.prompt_cache": "CachePoint",
        "._core.response_format": "JsonMode JsonSchema",
        "._core.parts": "AudioPart DocumentPart ImagePart MediaPart",
        "._core.errors": (
            "LlmError ProviderError NetworkError ConfigurationError "
            "AuthenticationError RateLimitError ContextWindowExceededError"
        ),
        "._adapters.openai_chat": "OpenAIChatAdapter",
        "._adapters.openai_responses": "OpenAIResponsesAdapter",
        "._adapters.anthropic": "AnthropicAdapter",
        "._adapters.gemini": "GeminiAdapter",
    },
    "adapters": {
        "._adapters.base": "LlmAdapter ModelInfo ProviderInfo",
        "._adapters.http": "HttpAdapter",
        "._adapters.wire": "Wire ModelListFormat",
        "._adapters.auth": "AuthFlow HeaderAuth SigV4Auth NoAuth",
        "._adapters.openai_chat": "OpenAIChatWire",
        "._adapters.openai_responses": "OpenAIResponsesWire",
        "._adapters.anthropic": "AnthropicWire",
        "._adapters.gemini": "GeminiWire",
        "._adapters.gemini_interactions": "GeminiInteractionsAdapter GeminiInteractionsWire",
        "._adapters.settings": "HttpSettings",
        "._adapters.custom": "CustomAdapter",
        "._adapters.azure": "AzureOpenAIAdapter AzureOpenAIResponsesAdapter",
        "._adapters.xai": "XAIAdapter",
        "._adapters.cohere": "CohereAdapter CohereWire",
        "._adapters.vertex": "VertexAnthropicAdapter VertexGeminiAdapter",
        "._adapters.bedrock": "BedrockAdapter",
        "._adapters.bedrock_mantle": "BedrockMantleAdapter",
        "._adapters.claude_aws": "ClaudePlatformAwsAdapter",
        "._adapters.litellm": "LiteLLMAdapter",
        "._adapters.google_oauth": "AuthorizedUserCredentials",
        "._adapters.key_pool": "KeyPool KeyState",
        "._adapters.responses_session": "ResponsesSession",
        "._core.sigv4": "AwsCredentials",
        "._core.retry": "RetryPolicy",
        "._core.attribution": "AppIdentity attribution_headers",
        "._core.media_support": "MediaSupport",
        "._core.prompt_cache": "PromptCache",
        "._service": "Registration",
    },
    "errors": {
        "._core.errors": (
            "QuotaExceededError ModelNotFoundError ContentBlockedError InvalidRequestError "
            "ServerError OverloadedError EmptyResponseError StreamTimeoutError TransportError "
            "StreamClosedError AbortedError ProtocolError ToolArgumentsError ConfigurationTypeError"
        ),
        "._tool_loop": "ToolLoopError",
        "._core.recovery": "CredentialOwner=CredentialSource recovery_tips may_view_detail",
        "._core.redact": "redact",
        "._render": "format_error_code_for_display",
    },
    "observe": {
        "._core.records": (
            "Observer ObserverRecord StreamStarted FirstChunkRecord AttemptRecord StreamFinished "
            "RequestSettings Telemetry"
        ),
        "._core.types": "TargetOutcome",
    },
    "sansio": {
        "._core.sse": "SSEDecoder ServerSentEvent SSEComment",
        "._core.eventstream": "EventStreamDecoder EventStreamMessage",
        "._core.decode": "StreamDecoder decode detect_wire translator_for",
        "._core.wires.translator": "Translator",
        "._core.wires.writer": "ChunkWriter",
        "._core.wires.openai_chat": "OpenAIChatTranslator",
        "._core.wires.openai_responses": "OpenAIResponsesTranslator",
        "._core.wires.anthropic": "AnthropicTranslator",
        "._core.wires.gemini": "GeminiTranslator",
        "._core.wires.gemini_interactions": "GeminiInteractionsTranslator",
        "._core.wires.bedrock": "BedrockConverseTranslator",
        "._core.filters.think_tags": "ThinkTagStripper",
        "._core.filters.spill_guard": "ReasoningSpillGuard",
        "._core.filters.tool_markup": "ToolMarkupParser",
        "._core.filters.verbatim_tools": "VerbatimToolCallParser",
        "._core.filters.json_repair": "parse_tool_arguments repair_incomplete_json",
        "._core.partial_json": "partial_json",
        "._core.partial_json_reader": "PartialJsonReader JsonSnapshot",
        "._core.assembler": "BlockAssembler assemble",
        "._core.contract": "check_contract",
        "._core.types": "chunk_to_dict chunk_from_dict",
    },
    "testing": {
        "._replay_server": "ReplayServer Route",
        "._transport.memory": "MemoryTransport MemoryAnswer",
        "._cassettes.session": "use_cassette Cassette",
        "._cassettes.format": "Interaction",
    },
    "tool_loop": {
        "._tool_loop": "ToolLoopStream ToolLoopResult ToolLoopStep ToolOutcome",
    },
    "batch": {
        "._batch.executor": "run_many",
        "._batch.records": "BatchResult",
        "._batch.limiter": "Limiter ProviderLimiter",
        "._batch.progress": "BatchProgress",
        "._batch.partition": "run_partition RESULT_COLUMNS SPARK_SCHEMA",
        "._batch.ray_data": "RayMapper",
        "._batch.ray_limiter": "RayLimiter",
        "._core.types": "RateLimits",
        "._batch.provider.runner": "submit_batch resume_batch ProviderBatch",
        "._batch.provider.api": "ProviderBatchStatus",
    },
    "web": {
        "._web.responses": "ui_message_stream chunk_sse_stream chunk_ndjson_stream",
        "._web.ui_stream": "ui_message_parts",
        "._web.wsgi": "WsgiStream",
    },
}

#: the private modules ``import dshstream`` imports: the chunk, block and failure types and
#: the exception tree
EAGER = ("._version", "._core.types", "._core.errors")

#: old root name -> its new name (in its new home); the old one resolves, deprecated
RENAMED = {
    "CredentialSource": "CredentialOwner",  # a Literal: who owns the key, not where it comes from
    "FirstChunk": "FirstChunkRecord",  # an observer record, not a chunk
}

#: every name public at the package root in the flat layout, before the namespaces
#: (``dshstream.NAME``): a record, never edited. Those that moved to a namespace or were
#: renamed still resolve there, deprecated (rule 4)
FORMER_ROOT = frozenset(
    """
    AbortedError AnthropicAdapter AnthropicTranslator AppIdentity AssembledResponse AttemptRecord
    AudioPart AuthenticationError AuthorizedUserCredentials AwsCredentials AzureOpenAIAdapter
    AzureOpenAIResponsesAdapter BedrockAdapter BedrockConverseTranslator Block BlockAssembler
    BlockEnd BlockStart ChunkStream ChunkWriter Citation ConfigurationError ConfigurationTypeError
    ContentBlockedError ContextWindowExceededError CredentialSource CustomAdapter DocumentPart
    EmptyResponseError EventStreamDecoder EventStreamMessage FileBlock Finish FinishReason
    FirstChunk GeminiAdapter GeminiTranslator GenerateOptions HttpAdapter HttpSettings ImagePart
    InvalidRequestError JsonMode JsonSchema JsonSnapshot LiteLLMAdapter LlmAdapter LlmError
    LlmFailure LlmService MediaPart MediaSupport Message ModelInfo ModelListFormat
    ModelNotFoundError NetworkError Observer ObserverRecord OpenAIChatAdapter OpenAIChatTranslator
    OpenAIResponsesAdapter OpenAIResponsesTranslator OverloadedError PartialJsonReader
    ProtocolError ProviderError ProviderInfo QuotaExceededError RateLimitError ReasoningBlock
    ReasoningDelta ReasoningSpillGuard Registration ReplayServer RequestSettings ResponseMetadata
    RetryPolicy Route SSEComment SSEDecoder ServerError ServerSentEvent StreamChunk
    StreamClosedError StreamDecoder StreamFinished StreamStarted StreamTimeoutError TextBlock
    TextDelta ThinkTagStripper TokenUsage ToolArgumentsError ToolCallBlock ToolCallDelta
    ToolLoopError ToolLoopResult ToolLoopStep ToolLoopStream ToolOutcome ToolResultBlock ToolSpec
    Translator TransportError UsageChunk VerbatimToolCallParser VertexAnthropicAdapter
    VertexGeminiAdapter __version__ assemble attribution_headers check_contract chunk_from_dict
    chunk_to_dict decode default_service detect_wire format_error_code_for_display
    may_view_detail parse_tool_arguments partial_json recovery_tips redact
    repair_incomplete_json run_tools stream translator_for
    """.split()
)

#: the public namespaces below the package root, in the order the documentation gives them
NAMESPACES = tuple(home for home in SURFACE if home)

#: (home, public name) -> (defining module, private name)
_WHERE: dict[tuple[str, str], tuple[str, str]] = {}
#: defining module -> [(home, private name)]: what loading it publishes
_DEFINES: dict[str, list[tuple[str, str]]] = {}
#: public name -> its home, for the names below the root
_HOME: dict[str, str] = {}
for _home, _modules in SURFACE.items():
    for _module, _names in _modules.items():
        for _entry in _names.split():
            _public, _, _private = _entry.partition("=")
            _WHERE[_home, _public] = (_module, _private or _public)
            _DEFINES.setdefault(_module, []).append((_home, _private or _public))
            if _home:
                _HOME[_public] = _home
del _home, _modules, _module, _names, _entry, _public, _private

#: the private modules whose names have been given their public paths
_published: set[str] = set()


def qualified(home: str) -> str:
    """The importable name of the namespace ``home`` (``""`` is the package itself)."""
    return f"{PACKAGE}.{home}" if home else PACKAGE


def public_names(home: str) -> list[str]:
    """``__all__`` of the namespace ``home``: its names, sorted."""
    return sorted(public for where, public in _WHERE if where == home)


def _publish(module_name: str, module: types.ModuleType) -> None:
    """Rule 3: give each class and function ``module`` publishes its public home's name."""
    entries = _DEFINES.get(module_name, ())
    if module_name in _published or not all(hasattr(module, private) for _, private in entries):
        return  # done already, or the module is still being imported
    for home, private in entries:
        value = getattr(module, private)
        # only what the module defines: a name it imports keeps its path (and a test fails)
        if isinstance(value, (type, types.FunctionType)) and value.__module__ == module.__name__:
            value.__module__ = qualified(home)
    _published.add(module_name)


def _publish_loaded() -> None:
    """Rule 3 for every module of the table imported so far (loading one name imports its
    module's own imports too: the records with the service, the framers with an adapter)."""
    for module_name in _DEFINES:
        if module_name not in _published:
            module = sys.modules.get(PACKAGE + module_name)
            if module is not None:
                _publish(module_name, module)


def publish_eager() -> None:
    """Rule 3 for :data:`EAGER`: the package calls this once, when it is imported."""
    for module_name in EAGER:
        importlib.import_module(module_name, PACKAGE)
    _publish_loaded()


def load(home: str, name: str) -> Any:
    """The value of ``name`` in the namespace ``home``, imported on first use and cached
    there (rule 2); for the package root also its public sub-namespaces and the moved
    names, deprecated (rule 4). Anything else is an :class:`AttributeError`."""
    where = _WHERE.get((home, name))
    if where is not None:
        module_name, private = where
        module = importlib.import_module(module_name, PACKAGE)
        _publish_loaded()
        value = getattr(module, private)
        vars(sys.modules[qualified(home)])[name] = value
        return value
    if not home:
        if name in NAMESPACES:
            return importlib.import_module(f".{name}", PACKAGE)
        new = RENAMED.get(name, name)
        if name in FORMER_ROOT and new in _HOME:
            new_home = qualified(_HOME[new])
            what = "moved to" if new == name else "is renamed"
            warnings.warn(
                f"{PACKAGE}.{name} {what} {new_home}.{new} (from {new_home} import {new});"
                f" {PACKAGE}.{name} will be removed",
                DeprecationWarning,
                stacklevel=3,
            )
            return getattr(importlib.import_module(new_home), new)
    raise AttributeError(f"module {qualified(home)!r} has no attribute {name!r}")


def dir_of(home: str) -> list[str]:
    """``dir()`` of the namespace ``home``: its public names, the root's namespaces and
    the module's own dunder attributes; never a moved name."""
    module = vars(sys.modules[qualified(home)])
    extra = NAMESPACES if not home else ()
    return sorted({*public_names(home), *extra, *(n for n in module if n.startswith("__"))})
