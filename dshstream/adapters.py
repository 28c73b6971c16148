"""dshstream.adapters: the adapters beyond the root's four, and the parts to configure or
write one.

Contract: an adapter turns ``GenerateOptions`` into one provider request and its response
into chunks that keep the adapter contract (``dshstream.sansio.check_contract``); it is
registered on an ``LlmService`` (``register_adapter`` returns a :class:`Registration`).
The package root holds the four adapters for the providers' own APIs
(``OpenAIChatAdapter`` — also every OpenAI-compatible server —, ``OpenAIResponsesAdapter``,
``AnthropicAdapter``, ``GeminiAdapter``); this namespace holds the rest:

- the clouds: :class:`AzureOpenAIAdapter`, :class:`AzureOpenAIResponsesAdapter`,
  :class:`VertexGeminiAdapter`, :class:`VertexAnthropicAdapter`, :class:`BedrockAdapter`,
  :class:`BedrockMantleAdapter` (Bedrock's OpenAI-compatible models on the Responses API),
  :class:`ClaudePlatformAwsAdapter` (Claude Platform on AWS: the Anthropic API in AWS);
  :class:`XAIAdapter` (xAI's Responses API, the ``xai`` route); and
  :class:`CohereAdapter` (Cohere's Chat v2 API on :class:`CohereWire`: tool plans,
  thinking, citations of documents and tool results; the ``cohere`` route);
- Gemini's Interactions API: :class:`GeminiInteractionsAdapter` (steps, streamed function
  arguments, resumable background interactions) on :class:`GeminiInteractionsWire`;
- the bridges: :class:`LiteLLMAdapter` (the ``litellm`` extra, imported on the first
  stream) and :class:`CustomAdapter` (tools in the prompt, calls parsed from prose);
- writing one: :class:`LlmAdapter` (the interface), :class:`HttpAdapter` (every HTTP
  adapter: a wire, an auth flow and the attempt loop), :class:`Wire` (a provider API's
  request and translator) with :class:`ModelListFormat`, the built-in wires to extend
  (:class:`OpenAIChatWire`, :class:`OpenAIResponsesWire`, :class:`AnthropicWire`,
  :class:`GeminiWire`), the auth flows :class:`AuthFlow`, :class:`HeaderAuth`,
  :class:`SigV4Auth`, :class:`NoAuth`, and :class:`ModelInfo`, :class:`ProviderInfo`;
- configuring one: :class:`HttpSettings` (the settings every HTTP adapter takes),
  :class:`RetryPolicy`, :class:`AppIdentity` and :func:`attribution_headers` (the one
  ``User-Agent``), :class:`MediaSupport` (which parts a provider takes),
  :class:`PromptCache` (request-wide prompt caching: automatic mode, OpenAI's cache key
  and retention, a Gemini cached content);
- credentials: :class:`AwsCredentials` (SigV4) and :class:`AuthorizedUserCredentials`
  (Google Application Default Credentials without google-auth); every ``api_key=`` also
  takes a zero-argument callable, asked before each attempt, or a :class:`KeyPool` —
  several keys, shared by every stream and adapter given it: a rate-limited key cools
  down, a rejected one is parked, the attempt moves to the next key at once; its
  :meth:`KeyPool.state` is one :class:`KeyState` per key, for dashboards;
- sessions: :class:`ResponsesSession` (``OpenAIResponsesAdapter.connect()``), the Responses
  adapter with its turns on one kept WebSocket, HTTP when the socket cannot be had.

Importing this module imports nothing more; each name loads its own module (and
``requests``, for the adapters) on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._adapters.azure import (
        AzureOpenAIAdapter as AzureOpenAIAdapter,
        AzureOpenAIResponsesAdapter as AzureOpenAIResponsesAdapter,
    )
    from ._adapters.base import (
        LlmAdapter as LlmAdapter,
        ModelInfo as ModelInfo,
        ProviderInfo as ProviderInfo,
    )
    from ._adapters.bedrock import BedrockAdapter as BedrockAdapter
    from ._adapters.bedrock_mantle import BedrockMantleAdapter as BedrockMantleAdapter
    from ._adapters.claude_aws import ClaudePlatformAwsAdapter as ClaudePlatformAwsAdapter
    from ._adapters.cohere import CohereAdapter as CohereAdapter, CohereWire as CohereWire
    from ._adapters.custom import CustomAdapter as CustomAdapter
    from ._adapters.google_oauth import AuthorizedUserCredentials as AuthorizedUserCredentials
    from ._adapters.gemini_interactions import (
        GeminiInteractionsAdapter as GeminiInteractionsAdapter,
        GeminiInteractionsWire as GeminiInteractionsWire,
    )
    from ._adapters.auth import (
        AuthFlow as AuthFlow,
        HeaderAuth as HeaderAuth,
        NoAuth as NoAuth,
        SigV4Auth as SigV4Auth,
    )
    from ._adapters.http import HttpAdapter as HttpAdapter
    from ._adapters.key_pool import KeyPool as KeyPool, KeyState as KeyState
    from ._adapters.anthropic import AnthropicWire as AnthropicWire
    from ._adapters.gemini import GeminiWire as GeminiWire
    from ._adapters.openai_chat import OpenAIChatWire as OpenAIChatWire
    from ._adapters.openai_responses import OpenAIResponsesWire as OpenAIResponsesWire
    from ._adapters.wire import ModelListFormat as ModelListFormat, Wire as Wire
    from ._adapters.litellm import LiteLLMAdapter as LiteLLMAdapter
    from ._adapters.responses_session import ResponsesSession as ResponsesSession
    from ._adapters.settings import HttpSettings as HttpSettings
    from ._adapters.vertex import (
        VertexAnthropicAdapter as VertexAnthropicAdapter,
        VertexGeminiAdapter as VertexGeminiAdapter,
    )
    from ._adapters.xai import XAIAdapter as XAIAdapter
    from ._core.attribution import (
        AppIdentity as AppIdentity,
        attribution_headers as attribution_headers,
    )
    from ._core.media_support import MediaSupport as MediaSupport
    from ._core.prompt_cache import PromptCache as PromptCache
    from ._core.retry import RetryPolicy as RetryPolicy
    from ._core.sigv4 import AwsCredentials as AwsCredentials
    from ._service import Registration as Registration

__all__ = _exports.public_names("adapters")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("adapters", name)


def __dir__() -> list[str]:
    return _exports.dir_of("adapters")
