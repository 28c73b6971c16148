"""The UI message stream read by the Vercel AI SDK's own reader, in Node: the stream a WSGI
server sends (``dshstream.web.ui_message_stream``) is fetched by ``read_ui_stream.mjs``,
parsed with ``parseJsonEventStream`` and ``uiMessageChunkSchema`` (what ``useChat``'s
transport runs) and built into a message with ``readUIMessageStream`` — with ``ai`` 6.0.264
and with ``ai`` 5.0.100, whose schemas reject any key they do not declare.

The streams are the recorded provider streams of tests/fixtures/real: every one decoded
(whole, and cut off halfway), and a set streamed for real through the adapters from a
loopback provider; the message each must give is the one our assembler builds.
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from dshstream import (
    AnthropicAdapter,
    BlockEnd,
    BlockStart,
    FileBlock,
    GeminiAdapter,
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    StreamChunk,
    TextDelta,
    ToolSpec,
    run_tools,
)
from dshstream._core.assembler import AssembledResponse, assemble
from dshstream.adapters import AwsCredentials, BedrockAdapter
from dshstream.sansio import decode
from dshstream.testing import ReplayServer, Route
from dshstream.web import WsgiStream, ui_message_stream
from helpers import all_fixtures, fixture_bytes, fixture_wire

from .support import node, wsgi_server

#: fixtures streamed through the real adapters: (provider, fixture, model)
LIVE = [
    ("openai", "openai/parallel_tool_calls.sse", "gpt-4o"),
    ("deepseek", "deepseek/reasoner_reasoning_content_then_content.sse", "deepseek-reasoner"),
    ("groq", "groq/midstream_error_tool_use_failed.sse", "openai/gpt-oss-120b"),
    ("openrouter", "openrouter/midstream_error_chunk.sse", "x"),
    ("responses", "openai-responses/reasoning_summary_then_function_call_codex.sse", "gpt-5-codex"),
    ("anthropic", "anthropic/web_search_server_tool_citations.sse", "claude-opus-4-1"),
    ("gemini", "gemini/grounding_web_search.sse", "gemini-2.5-flash"),
    ("bedrock", "bedrock/claude_sonnet4_reasoning_signature.eventstream", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
]


def _service(url: str) -> LlmService:
    service = LlmService()
    for provider, dialect in (("openai", "openai"), ("deepseek", "deepseek"), ("groq", "groq"), ("openrouter", "openrouter")):
        service.register_adapter([provider], OpenAIChatAdapter(dialect=dialect, api_key="placeholder",
                                                               base_url=f"{url}/{provider}/v1"))
    service.register_adapter(["responses"], OpenAIResponsesAdapter(api_key="placeholder", base_url=f"{url}/responses/v1"))
    service.register_adapter(["anthropic"], AnthropicAdapter(api_key="placeholder", base_url=f"{url}/anthropic"))
    service.register_adapter(["gemini"], GeminiAdapter(api_key="placeholder", base_url=f"{url}/gemini"))
    service.register_adapter(["bedrock"], BedrockAdapter(region="us-east-1", base_url=f"{url}/bedrock",
                                                         credentials=AwsCredentials("AKIDEXAMPLE", "example-secret")))
    return service


def _tool_loop(url: str) -> Iterable[StreamChunk]:
    service = LlmService()
    service.register_adapter(["loop"], OpenAIChatAdapter(api_key="placeholder", base_url=f"{url}/loop/v1"))
    weather = ToolSpec("GetWeatherArgs", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    return run_tools(service, GenerateOptions(provider="loop", model="gpt-4o", tools=(weather,),
                                              messages=(Message.user("Weather in Edinburgh?"),)),
                     {"GetWeatherArgs": lambda city, country, units: f"12{units.upper()} in {city}"})


ANSWER = (b'data: {"choices":[{"index":0,"delta":{"content":"It is 12C in Edinburgh."}}]}\n\n'
          b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452")


class Cases:
    """Each case: a path the WSGI app serves, the chunks' source, the response we expect."""

    def __init__(self, provider_url: str) -> None:
        self.sources: dict[str, Callable[[], Iterable[StreamChunk]]] = {}
        self.expected: dict[str, AssembledResponse | None] = {}
        for number, name in enumerate(all_fixtures()):
            for cut in (None, 0.5):
                data = fixture_bytes(name)
                data = data if cut is None else data[: int(len(data) * cut)]
                chunks = list(decode(data, wire=fixture_wire(name)))
                path = f"/decoded/{number}{'-cut' if cut else ''}"
                self.sources[path] = partial(iter, chunks)
                self.expected[path] = assemble(chunks)
        service = _service(provider_url)
        for provider, name, model in LIVE:
            options = GenerateOptions(provider=provider, model=model, messages=(Message.user("Hi"),))
            path = f"/live/{provider}"
            self.sources[path] = partial(service.stream, options)
            self.expected[path] = assemble(decode(fixture_bytes(name), wire=fixture_wire(name)))
        self.sources["/loop"] = lambda: _tool_loop(provider_url)
        self.expected["/loop"] = None
        file_chunks: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "A picture:"), BlockStart(1, "file"),
                                          BlockEnd(1, FileBlock("image/png", PNG))]
        self.sources["/file"] = lambda: iter(file_chunks)
        self.expected["/file"] = assemble(file_chunks)

    def app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ["PATH_INFO"] == "/extra-key":  # the reader's strictness, checked
            parts = [{"type": "start"}, {"type": "start-step"}, {"type": "text-start", "id": "t", "extra": 1},
                     {"type": "text-end", "id": "t"}, {"type": "finish-step"}, {"type": "finish"}]
            body = [b"data: " + json.dumps(part).encode() + b"\n\n" for part in parts]
            return WsgiStream(body, headers={"content-type": "text/event-stream"})(environ, start_response)
        return ui_message_stream(self.sources[environ["PATH_INFO"]](), message_id="msg-1")(environ, start_response)


@dataclass
class Read:
    """What the AI SDK's reader made of each path (``seen[package][path]``), and what each
    should be (``expected[path]``)."""

    seen: dict[str, dict[str, dict[str, Any]]]
    expected: dict[str, AssembledResponse | None]

    def __getitem__(self, package: str) -> dict[str, dict[str, Any]]:
        return self.seen[package]


@pytest.fixture(scope="module")
def read() -> Iterator[Read]:
    """package -> path -> what the AI SDK's reader made of it."""
    binary, js_dir = node()
    routes: dict[str, Any] = {f"/{p}/": Route(body=fixture_bytes(n), content_type=(
        "application/vnd.amazon.eventstream" if n.endswith(".eventstream") else "text/event-stream"))
        for p, n, _ in LIVE}
    with ReplayServer(routes) as provider:
        cases = Cases(provider.url)
        with wsgi_server(cases.app) as url:
            out: dict[str, dict[str, dict[str, Any]]] = {}
            for package in ("ai", "ai-v5"):
                # the loop's two answers, afresh for each reader
                provider.add("/loop/", [Route(body=fixture_bytes("openai/single_tool_call.sse")), Route(body=ANSWER)])
                paths = [*cases.sources, "/extra-key"]
                proc = subprocess.run([binary, "read_ui_stream.mjs", package, *(url + path for path in paths)],
                                      cwd=js_dir, capture_output=True, text=True, timeout=300)
                assert proc.returncode == 0, proc.stderr[-3000:]
                lines = [json.loads(line) for line in proc.stdout.splitlines()]
                out[package] = {line["url"][len(url):]: line for line in lines}
    yield Read(out, cases.expected)


def _check(seen: dict[str, Any], expected: AssembledResponse) -> None:
    assert seen["status"] == 200 and seen["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert seen["headers"]["content-type"] == "text/event-stream" and seen["headers"]["x-accel-buffering"] == "no"
    assert seen["invalid"] == [], "every part passed the AI SDK's schema"
    message = seen["message"]
    assert message["id"] == "msg-1" and message["role"] == "assistant"
    parts = message["parts"]
    assert all(p.get("state") == "done" for p in parts if p["type"] in ("text", "reasoning")), "every part closed"
    assert "".join(p["text"] for p in parts if p["type"] == "text") == expected.text
    assert "".join(p["text"] for p in parts if p["type"] == "reasoning") == expected.reasoning
    tools = {p["toolCallId"]: p for p in parts if p["type"].startswith("tool-")}
    for call in expected.tool_calls:
        tool = tools[call.id]
        assert tool["type"] == f"tool-{call.name}"
        if call.arguments_truncated:
            assert tool["state"] == "output-error"
        else:
            assert tool["state"] == "input-available" and tool["input"] == json.loads(call.arguments or "{}")
    urls = [c.url for b in expected.blocks if type(b).__name__ == "TextBlock" for c in b.citations if c.url]  # type: ignore[union-attr]
    assert [p["url"] for p in parts if p["type"] == "source-url"] == list(dict.fromkeys(urls))
    assert seen["errors"] == ([expected.failure.message] if expected.failure is not None else [])


@pytest.mark.parametrize("package", ["ai", "ai-v5"])
def test_every_recorded_stream_reads_as_the_message_we_assemble(read: Read, package: str) -> None:
    decoded = {path: seen for path, seen in read[package].items() if path.startswith("/decoded/")}
    assert len(decoded) == 2 * len(all_fixtures())
    for path, seen in decoded.items():
        try:
            expected = read.expected[path]
            assert expected is not None
            _check(seen, expected)
        except AssertionError as exc:
            raise AssertionError(f"{path} ({all_fixtures()[int(path.split('/')[2].split('-')[0])]}): {exc}") from exc


@pytest.mark.parametrize("package", ["ai", "ai-v5"])
@pytest.mark.parametrize("provider", [provider for provider, _, _ in LIVE])
def test_a_stream_through_the_adapters_reads_as_the_recorded_answer(read: Read, package: str, provider: str) -> None:
    expected = read.expected[f"/live/{provider}"]
    assert expected is not None
    _check(read[package][f"/live/{provider}"], expected)


@pytest.mark.parametrize("package", ["ai", "ai-v5"])
def test_a_tool_loop_reads_as_one_message_with_the_tool_output(read: Read, package: str) -> None:
    seen = read[package]["/loop"]
    assert seen["invalid"] == [] and seen["errors"] == []
    parts = seen["message"]["parts"]
    assert [p["type"] for p in parts] == ["step-start", "tool-GetWeatherArgs", "step-start", "text"]
    tool = parts[1]
    assert tool["state"] == "output-available" and tool["output"] == "12C in Edinburgh"
    assert tool["input"] == {"city": "Edinburgh", "country": "UK", "units": "c"}
    assert parts[3] == {"type": "text", "text": "It is 12C in Edinburgh.", "state": "done"}


@pytest.mark.parametrize("package", ["ai", "ai-v5"])
def test_a_generated_file_reads_as_a_file_part(read: Read, package: str) -> None:
    seen = read[package]["/file"]
    assert seen["invalid"] == []
    file_part = [p for p in seen["message"]["parts"] if p["type"] == "file"]
    assert file_part == [{"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}]


def test_the_older_reader_rejects_a_key_its_schema_lacks(read: Read) -> None:
    """What makes the ai-v5 runs a check of 'only the documented keys'."""
    assert read["ai"]["/extra-key"]["invalid"] == []
    assert read["ai-v5"]["/extra-key"]["invalid"] and "extra" in read["ai-v5"]["/extra-key"]["invalid"][0]
