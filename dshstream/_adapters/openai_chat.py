"""OpenAI chat completions: the wire (``POST {base_url}/chat/completions`` with ``stream:
true``) and its adapter, for OpenAI and every OpenAI-compatible server (dialects: see
:mod:`dshstream._core.dialects`; a :class:`~dshstream._core.dialects.Dialect` value may be
passed instead of a name, as Azure OpenAI's adapter does).

Contract: :class:`OpenAIChatWire` builds the request body from :class:`GenerateOptions` (messages with tool calls
and tool results, tools, ``stream_options`` (``include_usage``; ``include_obfuscation``
as wire rule 9 says: ``false`` on OpenAI's host by default), max tokens, temperature, stop,
reasoning effort in the dialect's spelling, ``response_format`` in the dialect's spelling,
``extra_body`` last) and decodes the stream
with :class:`~dshstream._core.wires.openai_chat.OpenAIChatTranslator`. History replay: reasoning
goes back as ``reasoning_content`` where the dialect needs it, OpenRouter
``reasoning_details`` and Gemini-compat tool ``thought_signature`` go back from replay
state. A user turn with media parts becomes a list of content parts (text, ``image_url``,
``input_audio``, ``file``: :func:`chat_content_parts`). A server that rejects ``stream_options`` with a 400 is asked once more without it
(both of its fields), and the wire remembers that. :class:`OpenAIChatAdapter` is that wire + ``Bearer`` auth +
the attempt loop (:mod:`~dshstream._adapters.http`). Prompt caching: on OpenAI's own
dialect (and Azure's) a cache point is ``prompt_cache_breakpoint`` on its turn's last
content part, with ``prompt_cache_key``/``prompt_cache_retention``
(:mod:`~dshstream._adapters.prompt_cache` rule 4); on OpenRouter's, ``cache_control`` on
that part and at the top level for the automatic mode (rule 5); other servers refuse
caching requests. Tool calls a local server left as ``<tool_call>`` markup in the text
(its dialect's ``tool_markup``, or ``tool_markup=True`` for any server) are read as calls
of the request's tools.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from .._core.dialects import Dialect, get_dialect
from .._core.errors import LlmError
from .._core.media_support import OPENAI_CHAT, MediaSupport
from .._core.prompt_cache import CachePoint
from .._core.request import GenerateOptions, Message
from .._core.validate import check_bool_or_none
from .._core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .._core.validate import invalid
from .._core.wires.translator import Translator
from .._core.wires.openai_chat import OpenAIChatTranslator
from .http import HttpAdapter
from .openai_parts import chat_content_parts
from .prompt_cache import (
    NO_CACHING,
    OPENAI_CACHING,
    OPENROUTER_CACHING,
    anthropic_cache_control,
    check_prompt_cache,
    openai_cache_fields,
    openai_mark,
)
from .settings import HttpSettings
from .structured_output import chat_fields
from .wire import Wire, obfuscation_field, replay_names

if TYPE_CHECKING:
    from typing_extensions import Unpack


def chat_turns(
    message: Message, support: MediaSupport, assistant: Callable[[AssistantTurn, dict[str, Any]], None]
) -> list[dict[str, Any]]:
    """The chat-completions form of one history message (a tool turn may become several; a
    user turn with media is content parts). An assistant turn is its role and
    :attr:`AssistantTurn.content`, then what ``assistant`` adds: the rest differs by who
    reads it (this wire's dialects, LiteLLM)."""
    content = message.content
    if type(content) is str:  # plain text: its attachments none, its text itself (no property asked)
        if message.role in ("system", "user"):
            return [{"role": message.role, "content": content}]
    elif message.role == "user" and message.attachments:
        return [{"role": "user", "content": chat_content_parts(message, support)}]
    if message.role in ("system", "user"):
        return [{"role": message.role, "content": message.text}]
    if message.role == "tool":
        return [
            {"role": "tool", "tool_call_id": block.call_id, "content": block.content}
            for block in message.blocks
            if isinstance(block, ToolResultBlock)
        ]
    turn = AssistantTurn.of(message)
    out: dict[str, Any] = {"role": "assistant", "content": turn.content}
    assistant(turn, out)
    return [out]


def chat_tool_call(call: ToolCallBlock) -> dict[str, Any]:
    """One ``tool_calls`` entry of an assistant turn."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments or "{}"}}


class AssistantTurn(NamedTuple):
    """What an assistant turn sends back in a chat-completions form (this wire's, or
    LiteLLM's): its text, its reasoning joined, its tool calls and its replay state
    (``{}`` without one)."""

    text: str
    reasoning: str
    calls: tuple[ToolCallBlock, ...]
    replay: dict[str, Any]

    @classmethod
    def of(cls, message: Message) -> AssistantTurn:
        replay = message.replay_state if isinstance(message.replay_state, dict) else {}
        reasoning = "".join(b.text for b in message.blocks if isinstance(b, ReasoningBlock))
        return cls(message.text, reasoning, message.tool_calls, replay)

    @property
    def content(self) -> str | None:
        """The turn's ``content``: its text, or ``null`` for tool calls alone (OpenAI
        documents it optional beside ``tool_calls``; an empty string is an empty text block
        to a gateway relaying to Bedrock, which refuses it)."""
        return self.text if self.text or not self.calls else None


class OpenAIChatWire(Wire):
    """The chat-completions request and translator, in one dialect's spelling."""

    models_path: str | None = "/models"
    media: MediaSupport | None = OPENAI_CHAT
    #: read ``<tool_call>`` markup in the text as calls (``None``: as the dialect says)
    tool_markup: bool | None = None

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        dialect: Dialect,
        think_tags: bool | None = None,
        include_usage: bool = True,
        include_obfuscation: bool | None = None,
    ) -> None:
        super().__init__(base_url, title)
        self.dialect = dialect
        self.models_path = dialect.models_path
        self.think_tags = think_tags
        self.include_usage = include_usage
        #: the ``stream_options.include_obfuscation`` sent (``None``: none; wire rule 9)
        self.include_obfuscation = obfuscation_field(base_url, include_obfuscation)

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/chat/completions"

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body for ``options``."""
        own = self.dialect.name == "openai"
        router = self.dialect.name == "openrouter"
        check_prompt_cache(
            options, OPENAI_CACHING if own else OPENROUTER_CACHING if router else NO_CACHING, self.title
        )
        messages: list[dict[str, Any]] = []
        for message in options.messages:
            converted = self.convert_message(message)
            if message.cache is not None:
                if not converted:
                    raise invalid(f"{self.title}: a cache point on an empty {message.role} turn caches nothing")
                converted[-1] = dict(converted[-1])
                marker = ("cache_control", anthropic_cache_control(message.cache)) if router else None
                openai_mark(converted[-1], "text", self.title, marker)
            messages.extend(converted)
        replay_names(messages, options)  # wire rule 10
        body: dict[str, Any] = {"model": options.model, "messages": messages, "stream": True}
        settings = options.prompt_cache
        if own and settings is not None:  # openai_cache_fields adds nothing without settings
            body.update(openai_cache_fields(options))
        if router and settings is not None and settings.automatic:
            body["cache_control"] = anthropic_cache_control(CachePoint(settings.ttl))
        stream_options: dict[str, bool] = {}
        if self.include_usage:
            stream_options["include_usage"] = True
        if self.include_obfuscation is not None:
            stream_options["include_obfuscation"] = self.include_obfuscation
        if stream_options:
            body["stream_options"] = stream_options
        if options.tools:
            body["tools"] = [tool.to_openai() for tool in options.tools]
        if options.max_tokens is not None:
            body[self.max_tokens_field()] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.stop:
            body["stop"] = list(options.stop)
        if options.reasoning_effort is not None:
            body.update(self.reasoning_fields(options.reasoning_effort))
        if options.response_format is not None:
            body.update(self.response_format_fields(options))
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def response_format_fields(self, options: GenerateOptions) -> dict[str, Any]:
        """The dialect's spelling of ``options.response_format`` (``response_format``, or
        llama.cpp's top-level ``json_schema``; refused where the dialect has no such mode:
        :mod:`~dshstream._adapters.structured_output`)."""
        return chat_fields(options, self.dialect, self.title)

    def max_tokens_field(self) -> str:
        """The body field of ``max_tokens``: OpenAI's ``max_completion_tokens`` (the only one
        its reasoning models take), the classic ``max_tokens`` elsewhere."""
        return "max_completion_tokens" if self.dialect.name == "openai" else "max_tokens"

    def reasoning_fields(self, effort: str) -> dict[str, Any]:
        """The dialect's spelling of a reasoning-effort request."""
        name = self.dialect.name
        if name == "deepseek":
            if effort == "off":
                return {"thinking": {"type": "disabled"}}
            level = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "max": "max"}[effort]
            return {"thinking": {"type": "enabled"}, "reasoning_effort": level}
        if name == "openrouter":
            if effort == "off":
                return {"reasoning": {"enabled": False}}
            return {"reasoning": {"effort": "high" if effort == "max" else effort}}
        if effort == "off":
            return {}
        return {"reasoning_effort": "high" if effort == "max" else effort}

    def convert_message(self, message: Message) -> list[dict[str, Any]]:
        """One history message in chat-completions form (a tool turn may become several)."""
        return chat_turns(message, self.media or OPENAI_CHAT, self._assistant_fields)

    def _assistant_fields(self, turn: AssistantTurn, out: dict[str, Any]) -> None:
        """What an assistant turn sends back to this dialect: reasoning where it takes it,
        tool calls with Gemini's thought signatures."""
        _, reasoning, calls, replay = turn
        if reasoning and self.dialect.reasoning_content_passback:
            out["reasoning_content"] = reasoning
        details = replay.get("reasoning_details")
        if details and self.dialect.reasoning_details_passback:
            out["reasoning_details"] = details
        if calls:
            signatures = replay.get("tool_signatures") or {}
            entries = []
            for position, call in enumerate(calls):
                entry = chat_tool_call(call)
                signature = signatures.get(call.id) or signatures.get(f"#{position}")
                if signature:
                    entry["extra_content"] = {"google": {"thought_signature": signature}}
                entries.append(entry)
            out["tool_calls"] = entries

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        failure = error.failure
        if (
            (self.include_usage or self.include_obfuscation is not None)
            and failure.status == 400
            and "stream_options" in (failure.detail or "")
        ):
            with self.lock:
                self.include_usage = False
                self.include_obfuscation = None
            return True
        return False

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return OpenAIChatTranslator(
            dialect=self.dialect.name,
            provider=options.provider,
            request_id=request_id,
            think_tags=self.think_tags,
            verbatim_tools=self.prose_tools(options),
            max_tokens=options.max_tokens,
            client_tools=self.client_tools(options),
            tool_markup=self.tool_markup,
        )

    @staticmethod
    def client_tools(options: GenerateOptions) -> frozenset[str]:
        """The names of the tools the request declares (``extra_body``'s ``tools`` when it
        replaces them): what a parallel wrapper's calls are checked against (wire rule 3)."""
        extra = (options.extra_body or {}).get("tools")
        if not isinstance(extra, list):
            return frozenset(tool.name for tool in options.tools)
        names = set()
        for tool in extra:
            function = tool.get("function") if isinstance(tool, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if isinstance(name, str):
                names.add(name)
        return frozenset(names)

    def prose_tools(self, options: GenerateOptions) -> list[dict[str, Any]]:
        """Tools whose calls the model writes in prose, to parse out of its text (none:
        this API calls tools natively)."""
        return []



class OpenAIChatAdapter(HttpAdapter):
    """Stream chat completions from OpenAI or any OpenAI-compatible server."""

    #: the wire this adapter builds (a subclass of :class:`OpenAIChatWire`)
    wire_class: type[OpenAIChatWire] = OpenAIChatWire

    def __init__(
        self,
        *,
        dialect: str | Dialect = "openai",
        think_tags: bool | None = None,
        include_usage: bool = True,
        include_obfuscation: bool | None = None,
        tool_markup: bool | None = None,
        **settings: Unpack[HttpSettings],
    ) -> None:
        chosen = dialect if isinstance(dialect, Dialect) else get_dialect(dialect)
        settings.setdefault("title", chosen.title)
        super().__init__(
            default_base_url=chosen.base_url,
            key_env=(chosen.key_env,) if chosen.key_env else (),
            **settings,
        )
        choice = check_bool_or_none(include_obfuscation, f"{type(self).__name__}.include_obfuscation")
        self.wire: OpenAIChatWire = self.wire_class(
            self.base_url, self.title, dialect=chosen, think_tags=think_tags, include_usage=include_usage
        )
        if choice is not None:  # set after: a wire subclass's __init__ need not take it
            self.wire.include_obfuscation = choice
        self.wire.tool_markup = check_bool_or_none(tool_markup, f"{type(self).__name__}.tool_markup")

    @property
    def dialect(self) -> Dialect:
        """The dialect requests are spelled in."""
        return self.wire.dialect
