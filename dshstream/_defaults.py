"""The ready-made service: an adapter for every provider whose key is in the environment,
plus the keyless local servers, and :func:`stream` as the one-line entry point.

Contract: reads the environment only when called; builds a fresh service each time
:func:`default_service` is called (``stream`` caches one per process, rebuilt on demand).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

from ._core.request import GenerateOptions, Message
from ._service import LlmService
from ._chunk_stream import ChunkStream

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


def _key(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def default_service(**service_options: Any) -> LlmService:
    """A service with an adapter per provider whose key is set, plus local servers."""
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
    for provider in LOCAL_PROVIDERS:
        service.register_adapter([provider], OpenAIChatAdapter(dialect=provider))
    return service


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
