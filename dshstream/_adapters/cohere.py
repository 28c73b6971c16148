"""Cohere Chat v2: the wire (``POST {base_url}/v2/chat``, ``"stream": true``) and its
adapter.

Contract:

1. **The wire.** :class:`CohereWire` is pure (wire rule 1). The body: ``model``,
   ``messages`` (rule 3), ``stream: true``, ``tools`` (the OpenAI function form, which
   Cohere takes as it is), ``max_tokens``, ``temperature``, ``stop_sequences``,
   ``thinking`` (``reasoning_effort``: ``off`` is ``{"type": "disabled"}``, any other
   effort ``{"type": "enabled", "token_budget": n}`` from ``thinking_budgets``, the
   Messages budgets by default), ``response_format`` (``{"type": "json_object"}``, with
   a :class:`~dshstream._core.response_format.JsonSchema`'s schema as ``json_schema``),
   then ``extra_body`` (``documents`` for grounded answers, ``citation_options``,
   ``safety_mode``...). The stream is decoded by
   :class:`~dshstream._core.wires.cohere.CohereTranslator`.
2. **The adapter.** :class:`CohereAdapter` is that wire + ``Authorization: Bearer`` with
   the key (``COHERE_API_KEY``, else the SDK's ``CO_API_KEY``, read for Cohere's own
   host only) + the attempt loop; the model list is ``GET /v1/models?endpoint=chat``.
   Cohere caches prompts by itself (``cached_tokens`` in the usage): an automatic
   ``PromptCache`` is accepted and sends nothing, cache points are refused before
   sending.
3. **History.** System and user turns as ``content`` (text, or ``text`` and
   ``image_url`` parts: Cohere's media table, images only); a tool turn as one
   ``{"role": "tool", "tool_call_id", "content"}`` per result; an assistant turn as its
   text in ``content``, its calls in ``tool_calls`` (no ``content`` beside calls alone),
   and, from this wire's replay state, its ``thinking`` items before the text and its
   ``tool_plan`` — reasoning of another provider is not sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._core.media_support import COHERE
from .._core.request import GenerateOptions, Message
from .._core.response_format import JsonSchema
from .._core.types import ToolResultBlock
from .._core.wires.cohere import WIRE, CohereTranslator
from .http import HttpAdapter
from .messages_body import THINKING_BUDGETS
from .openai_parts import chat_content_parts
from .prompt_cache import CacheSupport, check_prompt_cache
from .settings import HttpSettings
from .structured_output import schema_of
from .wire import ModelListFormat, Wire, replay_names

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["CohereAdapter", "CohereWire", "DEFAULT_BASE_URL"]

DEFAULT_BASE_URL = "https://api.cohere.com"
#: Cohere caches on its own: nothing to mark, nothing to send (rule 2)
_CACHING = CacheSupport(automatic=True, points_tip="Cohere caches repeated prompt prefixes by itself")


class CohereWire(Wire):
    """The Chat v2 request and translator (rules 1, 3)."""

    media = COHERE
    models_path = "/v1/models?endpoint=chat"
    models_format = ModelListFormat(list_key="models", id_key="name")
    provider_name = "cohere"

    def __init__(self, base_url: str, title: str, *, thinking_budgets: Mapping[str, int] | None = None) -> None:
        super().__init__(base_url, title)
        #: ``reasoning_effort`` -> ``thinking.token_budget`` (rule 1)
        self.thinking_budgets = {**THINKING_BUDGETS, **(thinking_budgets or {})}

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/v2/chat"

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        check_prompt_cache(options, _CACHING, self.title)
        messages: list[dict[str, Any]] = []
        for message in options.messages:
            messages.extend(self.convert_message(message))
        replay_names(messages, options)  # wire rule 10
        body: dict[str, Any] = {"model": options.model, "messages": messages, "stream": True}
        if options.tools:
            body["tools"] = [tool.to_openai() for tool in options.tools]
        if options.max_tokens is not None:
            body["max_tokens"] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        effort = options.reasoning_effort
        if effort is not None:
            body["thinking"] = (
                {"type": "disabled"} if effort == "off"
                else {"type": "enabled", "token_budget": self.thinking_budgets[effort]}
            )
        fmt = options.response_format
        if fmt is not None:
            body["response_format"] = (
                {"type": "json_object", "json_schema": schema_of(fmt)} if isinstance(fmt, JsonSchema)
                else {"type": "json_object"}
            )
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def convert_message(self, message: Message) -> list[dict[str, Any]]:
        """One history message in Chat v2 form (rule 3; a tool turn may become several)."""
        role = message.role
        if role == "tool":
            return [
                {"role": "tool", "tool_call_id": block.call_id, "content": block.content}
                for block in message.blocks
                if isinstance(block, ToolResultBlock)
            ]
        if role != "assistant":
            if role == "user" and message.attachments:
                return [{"role": role, "content": chat_content_parts(message, COHERE)}]
            return [{"role": role, "content": message.text}]
        out: dict[str, Any] = {"role": "assistant"}
        replay = message.replay_state if isinstance(message.replay_state, dict) else {}
        own = replay.get("wire") == WIRE
        content: list[dict[str, Any]] = []
        if own:
            content.extend({"type": "thinking", "thinking": t} for t in replay.get("thinking") or () if t)
        if message.text:
            content.append({"type": "text", "text": message.text})
        if content:
            out["content"] = content
        calls = message.tool_calls
        if calls:
            plan = replay.get("tool_plan") if own else None
            if isinstance(plan, str) and plan:
                out["tool_plan"] = plan
            out["tool_calls"] = [
                {"id": call.id, "type": "function",
                 "function": {"name": call.name, "arguments": call.arguments or "{}"}}
                for call in calls
            ]
        if len(out) == 1:
            out["content"] = [{"type": "text", "text": ""}]
        return [out]

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> CohereTranslator:
        return CohereTranslator(provider=options.provider, request_id=request_id, max_tokens=options.max_tokens)


class CohereAdapter(HttpAdapter):
    """Stream from Cohere's Chat v2 API: the Cohere wire + ``Bearer`` auth + the attempt
    loop (rule 2)."""

    default_name = "Cohere"
    default_base_url = DEFAULT_BASE_URL
    key_env = ("COHERE_API_KEY", "CO_API_KEY")

    def __init__(
        self, *, thinking_budgets: Mapping[str, int] | None = None, **settings: Unpack[HttpSettings]
    ) -> None:
        super().__init__(**settings)
        self.wire: CohereWire = CohereWire(self.base_url, self.title, thinking_budgets=thinking_budgets)
