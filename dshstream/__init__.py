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
with ``dshstream.testing.ReplayServer``; an ``LlmService`` of your own routes provider
names to adapters (``OpenAIChatAdapter``, ``AnthropicAdapter``, ``GeminiAdapter``; the
clouds' are in ``dshstream.adapters``), and a chain's name to its ``Target`` s in order
(``service.register_chain``: the next target serves when one can't, before any content). One service may be shared by many threads; each
``ChunkStream`` is read by one, and closed or cancelled from any.

The package root holds what a caller needs to stream, read the result and catch failures;
the rest lives in named sub-namespaces, each a public module with its own ``__all__``:

- ``dshstream.adapters``: the clouds' and the other adapters, and the parts to configure
  or write one (``HttpAdapter``, ``HttpSettings``, ``RetryPolicy``, ``AppIdentity``...);
- ``dshstream.errors``: the rest of the exception tree, and showing a failure safely
  (``recovery_tips``, ``may_view_detail``, ``redact``);
- ``dshstream.observe``: the ``Observer`` and the records it hears;
- ``dshstream.sansio``: the sans-IO core: framers, translators, filters, JSON readers,
  the assembler, the contract checker;
- ``dshstream.testing``: ``ReplayServer`` and ``Route``; ``MemoryTransport`` and
  ``MemoryAnswer``; cassettes (``use_cassette``, and a pytest plugin);
- ``dshstream.tool_loop``: what ``run_tools`` returns;
- ``dshstream.web``: a stream to a browser from a WSGI app (the AI SDK's UI message
  stream, server-sent events, NDJSON).

For maintainers: every public name is listed once, with its home and the private module
that defines it, in :data:`dshstream._exports.SURFACE`; ``__all__`` and lazy loading come
from that table, and the imports below name the same (the vocabulary's for real, the rest
for type checkers only; a test keeps them in agreement). Only the vocabulary — the chunk,
block and failure types and the exception tree — is imported with the package; everything
else (and all that touches ``requests``: adapters, the service, the transport) is imported
on first use, so ``import dshstream`` stays fast. Public classes and functions carry their
public home as their ``__module__`` (``dshstream.TextDelta``,
``dshstream.sansio.SSEDecoder``; not the private path), in ``repr``, tracebacks and
pickles. A name that left the root (the flat layout had them all there) still resolves as
``dshstream.NAME``, with a ``DeprecationWarning`` naming its home.
The package tree, module by module, is the Layout section of CONTRIBUTING.rst.
"""

import typing as _typing

from . import _exports
from ._version import __version__ as __version__
from ._core.errors import (
    AuthenticationError as AuthenticationError,
    ConfigurationError as ConfigurationError,
    ContextWindowExceededError as ContextWindowExceededError,
    LlmError as LlmError,
    NetworkError as NetworkError,
    ProviderError as ProviderError,
    RateLimitError as RateLimitError,
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
)

if _typing.TYPE_CHECKING:
    from ._adapters.anthropic import AnthropicAdapter as AnthropicAdapter
    from ._adapters.gemini import GeminiAdapter as GeminiAdapter
    from ._adapters.openai_chat import OpenAIChatAdapter as OpenAIChatAdapter
    from ._adapters.openai_responses import OpenAIResponsesAdapter as OpenAIResponsesAdapter
    from ._chunk_stream import ChunkStream as ChunkStream
    from ._core.chain import Target as Target
    from ._core.assembler import AssembledResponse as AssembledResponse
    from ._core.parts import (
        AudioPart as AudioPart,
        DocumentPart as DocumentPart,
        ImagePart as ImagePart,
        MediaPart as MediaPart,
    )
    from ._core.prompt_cache import CachePoint as CachePoint
    from ._core.request import (
        GenerateOptions as GenerateOptions,
        Message as Message,
        ToolSpec as ToolSpec,
    )
    from ._core.response_format import JsonMode as JsonMode, JsonSchema as JsonSchema
    from ._defaults import default_service as default_service, stream as stream
    from ._service import LlmService as LlmService
    from ._tool_loop import run_tools as run_tools

__all__ = _exports.public_names("")
_exports.publish_eager()


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("", name)


def __dir__() -> list[str]:
    return _exports.dir_of("")
