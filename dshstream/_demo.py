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

_WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


@dataclass(frozen=True)
class Demo:
    """One bundled transcript and how to ask for it."""

    title: str
    file: str
    provider: str
    model: str
    prompt: str
    make_adapter: Callable[[str], LlmAdapter]


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
        "How many r's are in strawberry?",
        _openai("deepseek"),
    ),
    Demo(
        "OpenAI gpt-4o-mini: a tool call and usage",
        "openai_tool_call.sse",
        "openai",
        "gpt-4o-mini",
        "What's the weather in Paris?",
        _openai("openai"),
    ),
    Demo(
        "Anthropic Claude: signed thinking, then a tool call",
        "anthropic_thinking_tool_use.sse",
        "anthropic",
        "claude-sonnet-4-5",
        "Use a tool to answer.",
        _anthropic,
    ),
    Demo(
        "Google Gemini 2.5 Pro: thought parts with signatures",
        "gemini_thoughts.sse",
        "gemini",
        "gemini-2.5-pro",
        "Think it through.",
        _gemini,
    ),
    Demo(
        "OpenRouter (Claude via a gateway): reasoning_details, cost, serving provider",
        "openrouter_reasoning.sse",
        "openrouter",
        "anthropic/claude-sonnet-4.5",
        "What is 2+2?",
        _openai("openrouter"),
    ),
)


def load_transcript(name: str) -> bytes:
    """The bytes of a bundled demo transcript."""
    return resources.files(_PACKAGE).joinpath("demo_data", name).read_bytes()


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
            options = GenerateOptions(
                provider=demo.provider,
                model=demo.model,
                messages=(Message.user(demo.prompt),),
                tools=(_WEATHER,),
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
