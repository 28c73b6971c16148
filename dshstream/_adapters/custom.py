"""CustomAdapter: OpenAI-compatible endpoints with no native tool calling.

Contract: tools are described in the system prompt instead of the ``tools`` field; the
model writes calls in prose (``get_weather({"city": "Paris"})``, fenced, inline or bare)
and :class:`~dshstream._core.filters.verbatim_tools.VerbatimToolCallParser` turns them into
tool-call blocks while the prose around them streams as text. History goes back in the
same convention: an assistant call becomes its verbatim text, a tool result a user turn.
Think-tag stripping is on (dialect ``custom``). A response format is sent as the dialect
spells it, and refused together with tools (prose tool calls can't live in a JSON answer).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._core.request import GenerateOptions, Message, ToolSpec
from .._core.types import TextBlock, ToolCallBlock, ToolResultBlock
from .prompt_cache import NO_CACHING, check_prompt_cache
from .openai_chat import OpenAIChatAdapter, OpenAIChatWire
from .settings import HttpSettings
from .structured_output import refuse

if TYPE_CHECKING:
    from typing_extensions import Unpack

TOOL_PROMPT = (
    "You can call tools. To call one, write the call exactly as\n"
    'tool_name({"argument": "value"})\n'
    "with a JSON object of arguments, then stop and wait for its result. Available tools:\n"
)


def describe_tools(tools: tuple[ToolSpec, ...]) -> str:
    """The system-prompt text that teaches the model the call convention."""
    lines = [TOOL_PROMPT]
    for tool in tools:
        schema = json.dumps(dict(tool.parameters), separators=(",", ":"), ensure_ascii=False)
        lines.append(f"- {tool.name}: {tool.description or 'no description'}; arguments schema: {schema}")
    return "\n".join(lines)


class CustomWire(OpenAIChatWire):
    """Chat completions with the tools in the system prompt and calls read from prose."""

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        check_prompt_cache(options, NO_CACHING, self.title)  # its prompt is rewritten: nothing to mark
        if not options.tools:
            return super().build_body(options)
        if options.response_format is not None:
            raise refuse(
                options,
                self.title,
                "tools can't be combined with a response format here (the model writes "
                "tool calls in prose, which a JSON-constrained answer can't hold)",
                "drop the tools or the response format",
            )
        prompt = describe_tools(options.tools)
        messages = list(options.messages)
        if messages and messages[0].role == "system":
            messages[0] = Message.system(f"{messages[0].text}\n\n{prompt}")
        else:
            messages.insert(0, Message.system(prompt))
        return super().build_body(replace(options, messages=tuple(messages), tools=()))

    def convert_message(self, message: Message) -> list[dict[str, Any]]:
        if message.role == "tool":
            results = [b for b in message.blocks if isinstance(b, ToolResultBlock)]
            return [
                {
                    "role": "user",
                    "content": f"Result of tool call {r.call_id}{' (error)' if r.is_error else ''}:\n{r.content}",
                }
                for r in results
            ]
        if message.role == "assistant" and message.tool_calls:
            parts = []
            for block in message.blocks:
                if isinstance(block, TextBlock):
                    parts.append(block.text)
                elif isinstance(block, ToolCallBlock):
                    parts.append(f"\n{block.name}({block.arguments or '{}'})\n")
            return [{"role": "assistant", "content": "".join(parts).strip()}]
        return super().convert_message(message)

    def prose_tools(self, options: GenerateOptions) -> list[dict[str, Any]]:
        return [tool.to_openai() for tool in options.tools]


class CustomAdapter(OpenAIChatAdapter):
    """An OpenAI-compatible endpoint whose model writes tool calls in prose: the tools are
    described in the system prompt, and ``name({...})`` in the answer becomes a tool call."""

    wire_class = CustomWire

    def __init__(self, *, dialect: str = "custom", think_tags: bool | None = None, **settings: Unpack[HttpSettings]) -> None:
        super().__init__(dialect=dialect, think_tags=think_tags, **settings)
