"""The Anthropic Messages request body, built from :class:`GenerateOptions` — shared by
every route that speaks it: the Anthropic API's wire
(:class:`~dshstream._adapters.anthropic.AnthropicWire` is built on it), Claude on Vertex
AI's (``rawPredict``, a subclass of that wire) and Bedrock's InvokeModel (which holds one
and sends the same body less ``model`` and ``stream``). A neutral module, so no provider
module imports another for it, and a part of wires only: no adapter is one.

Contract: pure (options in, a JSON-ready dict out); no I/O, no credentials.

1. System messages are joined into ``system``; ``max_tokens`` is always sent (the API
   requires it: ``default_max_tokens``, plus the thinking budget when thinking is on);
   ``stop`` as ``stop_sequences``; ``extra_body`` last.
2. Tools go as ``input_schema`` with ``eager_input_streaming: true`` (fine-grained tool
   streaming, generally available on the Claude API, Bedrock and Vertex: the input streams
   as it is written instead of arriving after minutes of silence, possibly as invalid or
   partial JSON, which JSON repair and ``arguments_truncated`` cover);
   ``eager_input_streaming=False`` switches it off.
3. Tool results are ``tool_result`` blocks in a user turn (consecutive tool results and
   user text merged into one user message); media parts are ``image``/``document`` blocks
   in the user turn, in order (:meth:`MessagesBody.media_block`; audio is refused).
4. ``reasoning_effort`` is adaptive thinking (``thinking: {type: "adaptive"}`` plus
   ``output_config.effort``) on models that have it — Claude 4.6 and later, where budgets
   are deprecated, and required from Opus 4.7 — else ``thinking: {type: "enabled",
   budget_tokens}`` (``thinking_mode=`` forces either; ``off`` omits thinking;
   ``temperature`` is not sent with thinking, which only accepts the default).
5. ``response_format`` is ``output_config.format`` on models with native structured
   outputs (Claude 4.5 and later), else one forced tool whose arguments the translator
   writes as text (``structured_output=`` forces either; the rules and refusals are
   :mod:`~dshstream._adapters.structured_output`'s).
6. History replay: an assistant turn that carries this wire's replay state goes back as
   the content blocks exactly as received (thinking with its signature, redacted_thinking
   with its data, server tool blocks, citations), minus any ``tool_use`` without a
   matching :class:`ToolCallBlock` in the message (the assembler drops tool calls cut by
   max-tokens). Without replay state the turn is rebuilt from its blocks (signed
   reasoning, text, ``tool_use`` with parsed arguments; unsigned reasoning is left out,
   since the API refuses it).
7. Prompt caching: a cache point is ``cache_control: {type: "ephemeral", ttl}`` on the
   last block of its message (a cached system prompt goes as text blocks, one per system
   message), on its tool's definition; ``PromptCache(automatic=True)`` is the top-level
   ``cache_control`` (where the host serves it: :attr:`MessagesBody.automatic_cache_host`).
   At most 4 points, ``1h`` ones before ``5m`` ones (:mod:`~dshstream._adapters.prompt_cache`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict

from .._core.errors import error_for, make_failure
from .._core.media_support import ANTHROPIC, MediaSupport
from .._core.parts import MediaPart
from .._core.prompt_cache import CachePoint
from .._core.request import GenerateOptions, Message
from .._core.response_format import JsonMode, JsonSchema
from .._core.strict_json import parse_json_object
from .._core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .._core.validate import invalid
from .._core.wires.anthropic import WIRE
from .prompt_cache import NO_CACHING, CacheSupport, anthropic_cache_control, check_prompt_cache
from .wire import replay_names
from .structured_output import (
    STRUCTURED_MODES,
    StructuredMode,
    claude_native,
    forced_tool,
    refuse,
    schema_of,
)

__all__ = [
    "DEFAULT_MAX_TOKENS", "MIN_THINKING_BUDGET", "THINKING_BUDGETS", "MessagesBody", "MessagesSettings", "claude_version",
]

DEFAULT_MAX_TOKENS = 4096
MIN_THINKING_BUDGET = 1024
# Claude model ids name the version after the family: claude-opus-4-7, claude-sonnet-4-6-...
_CLAUDE_VERSION = re.compile(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?!\d)")
_ADAPTIVE_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "max": "max"}
THINKING_BUDGETS: dict[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "max": 24576,
}


def claude_version(model: str) -> tuple[int, int] | None:
    """A Claude model id's (major, minor) version (``claude-opus-4-7`` -> ``(4, 7)``;
    ``None`` when the id names none)."""
    match = _CLAUDE_VERSION.search(model)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2) or 0)


class MessagesSettings(TypedDict, total=False):
    """What shapes a Messages body, as every Claude route's adapter takes it (the
    defaults are :class:`MessagesBody`'s)."""

    default_max_tokens: int
    thinking_budgets: Mapping[str, int] | None
    thinking_mode: Literal["auto", "adaptive", "enabled"]
    structured_output: StructuredMode
    eager_input_streaming: bool


class MessagesBody:
    """Builds Anthropic Messages request bodies from :class:`GenerateOptions` (rules 1-7).
    ``label`` names the route in refusals; :attr:`media` may be set per instance."""

    #: whether the host serves native structured outputs (``output_config.format``)
    native_structured_host = True
    #: what the host takes of media parts (images and documents; no audio)
    media: MediaSupport | None = ANTHROPIC
    #: whether the host serves the top-level ``cache_control`` (automatic caching; rule 7)
    automatic_cache_host = True
    #: whether the host takes ``cache_control`` at all (a compatible server may not; rule 7)
    caches_prompts = True

    def __init__(
        self,
        *,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budgets: Mapping[str, int] | None = None,
        thinking_mode: Literal["auto", "adaptive", "enabled"] = "auto",
        structured_output: StructuredMode = "auto",
        eager_input_streaming: bool = True,
        label: str = "the Anthropic Messages API",
    ) -> None:
        if default_max_tokens < 1:
            raise ValueError("default_max_tokens must be positive")
        if structured_output not in STRUCTURED_MODES:
            raise ValueError(f"structured_output must be one of {', '.join(STRUCTURED_MODES)}")
        self.default_max_tokens = default_max_tokens
        self.thinking_budgets = {**THINKING_BUDGETS, **(thinking_budgets or {})}
        self.thinking_mode = thinking_mode
        self.structured_output: StructuredMode = structured_output
        self.eager_input_streaming = eager_input_streaming
        self.label = label

    def adaptive_thinking(self, model: str) -> bool:
        """Whether ``model`` takes adaptive thinking (Claude 4.6 and later, Mythos)."""
        if self.thinking_mode != "auto":
            return self.thinking_mode == "adaptive"
        if "mythos" in model:
            return True
        version = claude_version(model)
        return version is not None and version >= (4, 6)

    def structured_native(self, model: str) -> bool:
        """Whether a response format for ``model`` goes as ``output_config.format`` (else as
        a forced tool): ``structured_output=`` decides, ``auto`` by the model's version."""
        version = claude_version(model)
        return claude_native(version, self.structured_output, host_has_it=self.native_structured_host)

    def forced_tool_name(self, options: GenerateOptions) -> str | None:
        """The name of the forced tool whose call the translator writes as text (``None``:
        no forced tool)."""
        fmt = options.response_format
        if isinstance(fmt, JsonSchema) and not self.structured_native(options.model):
            return fmt.name
        return None

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        support = (
            CacheSupport(points=True, automatic=self.automatic_cache_host, max_points=4, longest_first=True)
            if self.caches_prompts
            else NO_CACHING
        )
        check_prompt_cache(options, support, self.label)
        body: dict[str, Any] = {"model": options.model}
        budget = self.thinking_budget(options)
        if options.max_tokens is not None:
            max_tokens = options.max_tokens
        elif budget is not None:
            max_tokens = budget + self.default_max_tokens
        else:
            max_tokens = self.default_max_tokens
        body["max_tokens"] = max_tokens
        systems = [m for m in options.messages if m.role == "system" and m.text]
        if any(m.cache is not None for m in systems):  # rule 7: blocks carry the breakpoints
            body["system"] = [self._cached({"type": "text", "text": m.text}, m.cache) for m in systems]
        elif systems:
            body["system"] = "\n\n".join(m.text for m in systems)
        body["messages"] = self.convert_messages(options.messages)
        replay_names(body["messages"], options)  # wire rule 10
        body["stream"] = True
        if options.tools:
            body["tools"] = [
                self._cached(self.tool_definition(tool.name, tool.description, dict(tool.parameters)), tool.cache)
                for tool in options.tools
            ]
        settings = options.prompt_cache
        if settings is not None and settings.automatic:
            body["cache_control"] = anthropic_cache_control(CachePoint(settings.ttl))
        if budget is not None:
            if self.adaptive_thinking(options.model):
                body["thinking"] = {"type": "adaptive"}
                effort = options.reasoning_effort
                body["output_config"] = {"effort": _ADAPTIVE_EFFORT.get(effort or "", "high")}
            else:
                body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        elif options.temperature is not None:
            body["temperature"] = options.temperature
        if options.response_format is not None:
            self.add_response_format(body, options, thinking=budget is not None)
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        if options.extra_body:
            body.update(options.extra_body)
        return body

    @staticmethod
    def _cached(block: dict[str, Any], point: CachePoint | None) -> dict[str, Any]:
        """``block`` with the ``cache_control`` of ``point`` (rule 7), or as it is."""
        if point is not None:
            block["cache_control"] = anthropic_cache_control(point)
        return block

    def tool_definition(self, name: str, description: str | None, schema: dict[str, Any]) -> dict[str, Any]:
        """One client tool of ``tools`` (rule 2): its input streamed as it is written
        (``eager_input_streaming``) unless switched off."""
        tool: dict[str, Any] = {"name": name}
        if description:
            tool["description"] = description
        tool["input_schema"] = schema
        if self.eager_input_streaming:
            tool["eager_input_streaming"] = True
        return tool

    def add_response_format(
        self, body: dict[str, Any], options: GenerateOptions, *, thinking: bool
    ) -> None:
        """``options.response_format`` into ``body``: ``output_config.format``, or one forced
        tool (``tools`` + ``tool_choice``)."""
        fmt = options.response_format
        if self.structured_native(options.model):
            if isinstance(fmt, JsonMode) or fmt is None:
                raise refuse(
                    options,
                    self.label,
                    "JSON mode is not available (Claude has none)",
                    'ask for a schema: JsonSchema("answer", {"type": "object"})',
                )
            output_format = {"type": "json_schema", "schema": schema_of(fmt)}
            body.setdefault("output_config", {})["format"] = output_format
            return
        tool = forced_tool(options, self.label, thinking=thinking)
        body["tools"] = [self.tool_definition(tool.name, tool.description, tool.schema)]
        body["tool_choice"] = {"type": "tool", "name": tool.name}

    def thinking_budget(self, options: GenerateOptions) -> int | None:
        """The ``budget_tokens`` for ``options.reasoning_effort`` (``None``: no thinking).

        With an explicit ``max_tokens`` the budget is capped at half of it (at least the
        API's minimum of 1,024), so the answer keeps room; a ``max_tokens`` too small for
        any thinking is an ``INVALID_OPTIONS`` error.
        """
        effort = options.reasoning_effort
        if effort is None or effort == "off":
            return None
        budget = max(MIN_THINKING_BUDGET, self.thinking_budgets.get(effort, THINKING_BUDGETS["medium"]))
        if options.max_tokens is not None:
            if options.max_tokens <= MIN_THINKING_BUDGET:
                raise error_for(
                    make_failure(
                        "INVALID_OPTIONS",
                        f"{options.provider}: max_tokens must exceed {MIN_THINKING_BUDGET} "
                        "when reasoning_effort enables extended thinking",
                        provider=options.provider,
                    )
                )
            budget = max(MIN_THINKING_BUDGET, min(budget, options.max_tokens // 2))
        return budget

    def convert_messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The ``messages`` array: user/assistant turns, tool results in user turns."""
        out: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                continue
            if message.role == "assistant":
                content = self.assistant_content(message)
                if content:
                    self._cache_last(content, message)
                    out.append({"role": "assistant", "content": content})
                elif message.cache is not None:
                    raise invalid(f"{self.label}: a cache point on an empty assistant turn caches nothing")
                continue
            blocks: list[dict[str, Any]] = []
            text = message.content
            if type(text) is str:  # plain text: its one text block, Message.parts not asked
                if text:
                    blocks.append({"type": "text", "text": text})
            for block in () if type(text) is str else message.parts:
                if isinstance(block, MediaPart):
                    blocks.append(self.media_block(block))
                elif isinstance(block, ToolResultBlock):
                    result: dict[str, Any] = {
                        "type": "tool_result",
                        "tool_use_id": block.call_id,
                        "content": block.content,
                    }
                    if block.is_error:
                        result["is_error"] = True
                    blocks.append(result)
                elif isinstance(block, TextBlock) and block.text:
                    blocks.append({"type": "text", "text": block.text})
            if not blocks:
                if message.cache is not None:
                    raise invalid(f"{self.label}: a cache point on an empty {message.role} turn caches nothing")
                continue
            self._cache_last(blocks, message)
            previous = out[-1] if out else None
            if previous is not None and previous["role"] == "user":
                content = previous["content"]
                if isinstance(content, str):
                    previous["content"] = content = [{"type": "text", "text": content}]
                content.extend(blocks)
            elif len(blocks) == 1 and blocks[0]["type"] == "text" and message.cache is None:
                out.append({"role": "user", "content": blocks[0]["text"]})
            else:
                out.append({"role": "user", "content": blocks})
        return out

    def _cache_last(self, blocks: list[dict[str, Any]], message: Message) -> None:
        """The message's cache point on its last block (rule 7; a replayed block is copied
        first, so the replay state is never changed)."""
        if message.cache is not None:
            blocks[-1] = self._cached(dict(blocks[-1]), message.cache)

    def media_block(self, part: MediaPart) -> dict[str, Any]:
        """An ``image`` or ``document`` block: a ``base64`` source, a ``url`` source, or
        for a text document a ``text`` source (``text/plain``, the part decoded as UTF-8);
        a document's ``name`` is its ``title``."""
        support = self.media or ANTHROPIC
        wire = support.accept(part)
        source: dict[str, Any]
        if part.url is not None:
            source = {"type": "url", "url": part.url}
        elif wire == "text/plain":
            try:
                text = (part.data or b"").decode("utf-8")
            except UnicodeDecodeError:
                raise invalid(f"{support.provider} takes text documents as UTF-8; {part!r} is not") from None
            source = {"type": "text", "media_type": "text/plain", "data": text}
        else:
            source = {"type": "base64", "media_type": wire, "data": part.base64}
        block: dict[str, Any] = {"type": part.kind, "source": source}
        if part.kind == "document" and part.name:
            block["title"] = part.name
        return block

    def assistant_content(self, message: Message) -> list[dict[str, Any]]:
        """An assistant turn's content blocks: replay state if it has ours, else its blocks."""
        replay = message.replay_state
        if isinstance(replay, dict) and replay.get("wire") == WIRE and isinstance(replay.get("content"), list):
            kept = {call.id for call in message.tool_calls}
            return [
                dict(entry)
                for entry in replay["content"]
                if isinstance(entry, dict) and (entry.get("type") != "tool_use" or entry.get("id") in kept)
            ]
        content: list[dict[str, Any]] = []
        for block in message.blocks:
            if isinstance(block, TextBlock):
                if block.text:
                    content.append({"type": "text", "text": block.text})
            elif isinstance(block, ReasoningBlock):
                if block.signature:
                    content.append({"type": "thinking", "thinking": block.text, "signature": block.signature})
            elif isinstance(block, ToolCallBlock):
                content.append(
                    {
                        "type": "tool_use",
                        "id": block.id,
                        "name": block.name,
                        "input": parse_json_object(block.arguments),
                    }
                )
        return content
