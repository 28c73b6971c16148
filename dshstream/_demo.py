"""``dshstream demo``: bundled real transcripts of several providers, served on 127.0.0.1
and streamed through the real HTTP path (service → adapter → transport → SSE → translator
→ assembler). No key, no network.

Contract: binds only to loopback; returns the process exit code (0 when every stream
finished without an error).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TextIO

from ._adapters.base import LlmAdapter
from ._render import BOLD, RESET, TextRenderer, use_color
from ._replay_server import ReplayServer, Route
from ._core.request import GenerateOptions, Message, ToolSpec
from ._service import LlmService

# This package's own dotted name, never a literal: a vendored copy
# (``legacyapp._vendor.dshstream``) reads its own data, not an installed copy's.
_PACKAGE = __name__.rpartition(".")[0]

_GET_CAPITAL = ToolSpec(
    name="get_capital",
    parameters={
        "type": "object",
        "properties": {"country": {"type": "string"}},
        "required": ["country"],
        "additionalProperties": False,
    },
)
_FIXED_VERSION = ToolSpec(
    name="fixed_version",
    description="Return the fixed version number",
    parameters={"type": "object", "properties": {}},
)
_DUMMY = ToolSpec(name="dummy", parameters={"type": "object", "properties": {}, "additionalProperties": False})


@dataclass(frozen=True)
class Demo:
    """One bundled transcript and how to ask for it."""

    title: str
    file: str
    provider: str
    model: str
    #: the recorded request's user message (see demo_data/PROVENANCE.md)
    prompt: str
    make_adapter: Callable[[str], LlmAdapter]
    #: the tools the recorded request offered
    tools: tuple[ToolSpec, ...] = ()
    #: the recorded request's system prompt, if it had one
    system: str | None = None
    #: the recorded request asked for reasoning
    reasoning: bool = False


def _openai(dialect: str) -> Callable[[str], LlmAdapter]:
    def make(base_url: str) -> LlmAdapter:
        from ._adapters.openai_chat import OpenAIChatAdapter

        return OpenAIChatAdapter(api_key="demo-key", base_url=base_url, dialect=dialect, max_retries=0)

    return make


def _anthropic(base_url: str) -> LlmAdapter:
    from ._adapters.anthropic import AnthropicAdapter

    return AnthropicAdapter(api_key="demo-key", base_url=base_url, max_retries=0)


def _gemini(base_url: str) -> LlmAdapter:
    from ._adapters.gemini import GeminiAdapter

    return GeminiAdapter(api_key="demo-key", base_url=base_url, max_retries=0)


DEMOS: tuple[Demo, ...] = (
    Demo(
        "DeepSeek reasoner: reasoning_content, then the answer",
        "deepseek_reasoning.sse",
        "deepseek",
        "deepseek-reasoner",
        "Hello",
        _openai("deepseek"),
    ),
    Demo(
        "OpenAI gpt-4o-mini: a tool call and usage",
        "openai_tool_call.sse",
        "openai",
        "gpt-4o-mini",
        "What is the capital of the UK? Use the tool, then answer.",
        _openai("openai"),
        tools=(_GET_CAPITAL,),
    ),
    Demo(
        "Anthropic Claude: signed thinking, then a tool call",
        "anthropic_thinking_tool_use.sse",
        "anthropic",
        "claude-sonnet-4-5",
        "Use the fixed_version tool, tell me the version, and make a short joke about it.",
        _anthropic,
        tools=(_FIXED_VERSION,),
        reasoning=True,
    ),
    Demo(
        "Google Gemini 2.5 Pro: thought parts with signatures",
        "gemini_thoughts.sse",
        "gemini",
        "gemini-2.5-pro",
        "How do I cross the street?",
        _gemini,
        tools=(_DUMMY,),
        system="You are a helpful assistant.",
        reasoning=True,
    ),
    Demo(
        "OpenRouter (Claude via a gateway): reasoning_details, cost, serving provider",
        "openrouter_reasoning.sse",
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        "What is 2+2?",
        _openai("openrouter"),
        reasoning=True,
    ),
)


def load_transcript(name: str) -> bytes:
    return resources.files(_PACKAGE).joinpath("demo_data").joinpath(name).read_bytes()  # one step each: 3.10


def _describe_request(demo: Demo) -> str:
    """The recorded request, as the reader should see it before the reply."""
    lines = []
    if demo.system:
        lines.append(f"system: {demo.system}")
    lines.append(f"user: {demo.prompt}")
    if demo.tools:
        lines.append("tools: " + ", ".join(f"{tool.name}()" for tool in demo.tools))
    return "".join(f"{line}\n" for line in lines)


def run_demo(out: TextIO, err: TextIO) -> int:
    """Stream every bundled transcript over loopback HTTP and render it."""
    routes = {f"/{demo.provider}/": Route(body=load_transcript(demo.file)) for demo in DEMOS}
    failures = 0
    color = use_color(out)
    with ReplayServer(routes) as server:
        service = LlmService(check_contract=True)
        for demo in DEMOS:
            service.register_adapter([demo.provider], demo.make_adapter(f"{server.url}/{demo.provider}"))
        for demo in DEMOS:
            header = f"== {demo.title} [{demo.provider} · {demo.model}] =="
            out.write(f"\n{BOLD}{header}{RESET}\n" if color else f"\n{header}\n")
            out.write(_describe_request(demo))
            system = (Message.system(demo.system),) if demo.system else ()
            options = GenerateOptions(
                provider=demo.provider,
                model=demo.model,
                messages=(*system, Message.user(demo.prompt)),
                tools=demo.tools,
                reasoning_effort="medium" if demo.reasoning else None,
            )
            renderer = TextRenderer(out, err)
            stream = service.stream(options)
            for chunk in stream:
                renderer.feed(chunk)
            result = stream.result()
            meta = result.metadata
            if meta is not None and (meta.serving_provider or meta.response_id):
                served = f" served by {meta.serving_provider}" if meta.serving_provider else ""
                out.write(f"response {meta.response_id or '-'}{served}\n")
            if not result.ok:
                failures += 1
    out.write(f"\n{len(DEMOS) - failures}/{len(DEMOS)} streams completed over 127.0.0.1\n")
    return 1 if failures else 0
