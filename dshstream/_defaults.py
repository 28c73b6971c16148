"""The ready-made service: an adapter for every provider whose key is in the environment,
plus the keyless local servers, and :func:`stream` as the one-line entry point.

Contract: reads the environment only when called; builds a fresh service each time
:func:`default_service` is called (``stream`` caches one per process, rebuilt on demand).
The clouds are registered as their official SDKs configure them: ``azure`` (Azure OpenAI
chat) when ``AZURE_OPENAI_ENDPOINT`` and ``AZURE_OPENAI_API_KEY`` are set (with
``OPENAI_API_VERSION``, else the v1 API); ``vertex`` (Gemini) and ``vertex-anthropic``
(Claude) when ``GOOGLE_CLOUD_PROJECT`` is set and Application Default Credentials are an
``authorized_user`` file (``GOOGLE_APPLICATION_CREDENTIALS`` or gcloud's; location
``GOOGLE_CLOUD_LOCATION``, else ``global``); ``bedrock`` (Amazon Bedrock, Converse) when
a region (``AWS_REGION``/``AWS_DEFAULT_REGION``) and either ``AWS_BEARER_TOKEN_BEDROCK`` or
``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` are set. A cloud whose environment is
unusable (a service-account file, which needs the google-auth recipe) is left out with a
warning in the log, never an exception.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._core.errors import LlmError
from ._core.log import get_logger
from ._core.request import GenerateOptions, Message
from ._service import LlmService
from ._chunk_stream import ChunkStream

if TYPE_CHECKING:
    from ._adapters.http import HttpAdapter

log = get_logger("dshstream")

#: (provider id, environment variables holding its key)
KEYED_PROVIDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", ("OPENAI_API_KEY",)),
    ("anthropic", ("ANTHROPIC_API_KEY",)),
    ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    ("deepseek", ("DEEPSEEK_API_KEY",)),
    ("openrouter", ("OPENROUTER_API_KEY",)),
    ("groq", ("GROQ_API_KEY",)),
    ("mistral", ("MISTRAL_API_KEY",)),
    ("xai", ("XAI_API_KEY",)),
)
LOCAL_PROVIDERS = ("ollama", "llamacpp", "vllm")
#: cloud provider ids configured from their SDKs' environment (see the module docstring)
CLOUD_PROVIDERS = ("azure", "vertex", "vertex-anthropic", "bedrock")


def _key(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def default_service(**service_options: Any) -> LlmService:
    """A service with an adapter per provider whose key is set, the clouds the
    environment configures, and the local servers."""
    from ._adapters.openai_chat import OpenAIChatAdapter

    service = LlmService(**service_options)
    for provider, names in KEYED_PROVIDERS:
        key = _key(names)
        if key is None:
            continue
        if provider == "anthropic":
            from ._adapters.anthropic import AnthropicAdapter

            service.register_adapter([provider], AnthropicAdapter(api_key=key))
        elif provider == "gemini":
            from ._adapters.gemini import GeminiAdapter

            service.register_adapter([provider], GeminiAdapter(api_key=key))
        else:
            service.register_adapter([provider], OpenAIChatAdapter(api_key=key, dialect=provider))
    for provider in CLOUD_PROVIDERS:
        if not cloud_configured(provider):
            continue
        try:
            adapter = cloud_adapter(provider)
        except LlmError as exc:
            log.warning("%s: not registered (%s)", provider, exc.failure.message)
            continue
        service.register_adapter([provider], adapter)
    for provider in LOCAL_PROVIDERS:
        service.register_adapter([provider], OpenAIChatAdapter(dialect=provider))
    return service


def cloud_configured(provider: str) -> bool:
    """Whether the environment configures the cloud ``provider`` (the module docstring)."""
    if provider == "azure":
        return bool(os.environ.get("AZURE_OPENAI_ENDPOINT") and os.environ.get("AZURE_OPENAI_API_KEY"))
    if provider in ("vertex", "vertex-anthropic"):
        from ._adapters.google_oauth import default_credentials_file

        return bool(os.environ.get("GOOGLE_CLOUD_PROJECT")) and default_credentials_file() is not None
    if provider == "bedrock":
        region = _key(("AWS_REGION", "AWS_DEFAULT_REGION"))
        keys = bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"))
        return bool(region) and (keys or bool(os.environ.get("AWS_BEARER_TOKEN_BEDROCK")))
    return False


def cloud_adapter(provider: str, **settings: Any) -> HttpAdapter:
    """The adapter for the cloud ``provider`` from the environment (``settings`` go to it);
    raises :class:`~dshstream._core.errors.ConfigurationError` when it is unusable."""
    if provider == "azure":
        from ._adapters.azure import AzureOpenAIAdapter

        return AzureOpenAIAdapter(**settings)
    if provider == "vertex":
        from ._adapters.vertex import VertexGeminiAdapter

        return VertexGeminiAdapter(**settings)
    if provider == "vertex-anthropic":
        from ._adapters.vertex import VertexAnthropicAdapter

        return VertexAnthropicAdapter(**settings)
    if provider == "bedrock":
        from ._adapters.bedrock import BedrockAdapter

        return BedrockAdapter(**settings)
    raise KeyError(f"unknown cloud provider {provider!r}; known: {', '.join(CLOUD_PROVIDERS)}")


_service: LlmService | None = None
_lock = threading.Lock()


def _shared_service() -> LlmService:
    global _service
    with _lock:
        if _service is None:
            _service = default_service()
        return _service


def stream(
    provider: str,
    model: str,
    prompt_or_messages: str | Sequence[Message],
    *,
    system: str | None = None,
    service: LlmService | None = None,
    **options: Any,
) -> ChunkStream:
    """Stream one response: ``dshstream.stream("openai", "gpt-4o-mini", "Hi").result()``.

    ``options`` are :class:`GenerateOptions` fields (``max_tokens=``, ``tools=`` ...).
    """
    if isinstance(prompt_or_messages, str):
        messages: list[Message] = [Message.user(prompt_or_messages)]
    else:
        messages = list(prompt_or_messages)
    if system is not None:
        messages.insert(0, Message.system(system))
    request = GenerateOptions(provider=provider, model=model, messages=tuple(messages), **options)
    return (service or _shared_service()).stream(request)
