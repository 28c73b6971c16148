"""AnthropicAdapter's request options over loopback HTTP: server-side fallback (``fallbacks=``
and its beta header), the code-execution container sent back on the next turn, the
compatible servers (``dialect=``: DeepSeek, LM Studio, Ollama) and structured output on the
forced-tool path with a sentence before the tool call (a real Claude recording); and the
Messages settings every Claude route's adapter hands to its wire (``ClaudeSettings``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.claude_aws import ClaudePlatformAwsAdapter
from dshstream._adapters.messages_body import MessagesBody
from dshstream._adapters.vertex import VertexAnthropicAdapter
from dshstream._core.errors import ConfigurationError
from dshstream._core.parts import ImagePart
from dshstream._core.partial_json import partial_json
from dshstream._core.request import GenerateOptions, Message
from dshstream._core.response_format import JsonSchema
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import fake_key, fixture_bytes, routed_session

KEY = fake_key("sk-ant-api03-", 40, seed=41)
CONTAINER = "container_01Qh1LG5zm6onKQjYrHnhrvi"  # the id the recording below carries


def serve(server: ReplayServer, *names: str) -> None:
    server.add("/v1/messages", [Route(body=fixture_bytes(f"anthropic/{name}")) for name in names])


def service_for(adapter: AnthropicAdapter, route: str = "anthropic") -> LlmService:
    service = LlmService(check_contract=True)
    service.register_adapter([route], adapter)
    return service


def options(*messages: Message, provider: str = "anthropic", model: str = "claude-sonnet-4-6", **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=messages or (Message.user("Hi"),), **fields)


def headers(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {k.lower(): v for k, v in server.requests[index].headers.items()}


# --------------------------------------------------------------------------- server-side fallback


def test_fallbacks_go_in_the_body_with_the_beta_header(server: ReplayServer) -> None:
    serve(server, "text.sse")
    chain = [{"model": "claude-opus-4-8", "max_tokens": 8000, "thinking": {"type": "adaptive"}, "speed": "standard"}]
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url, fallbacks=chain)
    chain[0]["model"] = "changed later"  # the adapter kept its own copy
    service_for(adapter).stream(options()).result()
    body = server.requests[-1].body
    assert body["fallbacks"] == [{"model": "claude-opus-4-8", "max_tokens": 8000, "thinking": {"type": "adaptive"}, "speed": "standard"}]
    assert headers(server)["anthropic-beta"] == "server-side-fallback-2026-07-01"


def test_a_callers_beta_header_is_joined_not_replaced(server: ReplayServer) -> None:
    serve(server, "text.sse", "text.sse")
    adapter = AnthropicAdapter(
        api_key=KEY, base_url=server.url, fallbacks="default", headers={"Anthropic-Beta": "context-1m-2025-08-07"}
    )
    service_for(adapter).stream(options()).result()
    assert headers(server)["anthropic-beta"] == "context-1m-2025-08-07,server-side-fallback-2026-07-01"
    assert server.requests[-1].body["fallbacks"] == "default"
    plain = AnthropicAdapter(api_key=KEY, base_url=server.url)
    service_for(plain).stream(options()).result()
    assert "anthropic-beta" not in headers(server) and "fallbacks" not in server.requests[-1].body


def test_count_tokens_leaves_the_chain_out(server: ReplayServer) -> None:
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url, fallbacks="default")
    assert "fallbacks" not in adapter.wire.count_tokens_body(options())


@pytest.mark.parametrize(
    ("chain", "field"),
    [
        ("fallback", "AnthropicAdapter.fallbacks"),
        ([], "AnthropicAdapter.fallbacks"),
        ([{"max_tokens": 10}], "AnthropicAdapter.fallbacks[0].model"),
        ([{"model": "m", "temperature": 1}], "AnthropicAdapter.fallbacks[0] has unknown key 'temperature'"),
        ([{"model": "m"}, {"model": "n", "max_tokens": 0}], "AnthropicAdapter.fallbacks[1].max_tokens"),
        ([{"model": "m", "speed": "turbo"}], "AnthropicAdapter.fallbacks[0].speed"),
        ([{"model": "m", "thinking": "adaptive"}], "AnthropicAdapter.fallbacks[0].thinking"),
        (["claude-opus-4-8"], "AnthropicAdapter.fallbacks[0]"),
    ],
)
def test_a_malformed_chain_is_refused_naming_the_field(chain: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        AnthropicAdapter(api_key=KEY, fallbacks=chain)
    assert field in caught.value.failure.message


# --------------------------------------------------------------------------- containers


def test_the_next_turn_reuses_the_container(server: ReplayServer) -> None:
    serve(server, "cache_creation_and_read_code_execution.sse", "text.sse", "text.sse")
    service = service_for(AnthropicAdapter(api_key=KEY, base_url=server.url))
    first = service.stream(options(Message.user("Sum the squares of 1..12 with code."))).result()
    assert first.metadata is not None and first.metadata.container is not None
    assert first.metadata.container["id"] == CONTAINER
    assert "container" not in server.requests[0].body
    history = (Message.user("Sum the squares of 1..12 with code."), first.message(), Message.user("Now cubes."))
    service.stream(options(*history)).result()
    second = server.requests[1].body
    assert second["container"] == CONTAINER
    # the turn itself goes back as received: server tool blocks, results and the text
    assert [b["type"] for b in second["messages"][1]["content"]] == [
        "server_tool_use", "bash_code_execution_tool_result", "server_tool_use", "bash_code_execution_tool_result", "text",
    ]
    service.stream(options(*history, extra_body={"container": "container_other"})).result()
    assert server.requests[2].body["container"] == "container_other"  # the caller's wins


def test_vertex_sends_no_container() -> None:
    replay = {"wire": "anthropic", "content": [{"type": "text", "text": "ok"}], "container": CONTAINER}
    adapter = VertexAnthropicAdapter(project="p", location="us-east5", api_key="token-for-test")
    history = (Message.user("a"), Message(role="assistant", content="ok", replay_state=replay), Message.user("b"))
    assert "container" not in adapter.wire.build_body(options(*history, provider="vertex-anthropic"))


# --------------------------------------------------------------------------- compatible servers


def test_deepseek_preset(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    key = fake_key("sk-", 32, seed=42)
    monkeypatch.setenv("DEEPSEEK_API_KEY", key)
    home = AnthropicAdapter(dialect="deepseek")
    assert home.base_url == "https://api.deepseek.com/anthropic" and home.title == "DeepSeek"
    assert home.credential.value == key  # its own host: the variable is read
    assert key not in repr(home)
    assert home.wire.models_url() is None and home.wire.count_tokens_url(options()) is None
    server.add("/anthropic/v1/messages", Route(body=fixture_bytes("anthropic/tool_use_with_args.sse")))
    session: Any = routed_session("https://api.deepseek.com", server.url)
    adapter = AnthropicAdapter(dialect="deepseek", session=session)
    result = service_for(adapter, "deepseek-anthropic").stream(
        options(model="deepseek-v4-flash", provider="deepseek-anthropic", response_format=JsonSchema("json", {"type": "object"}, strict=False))
    ).result()
    recorded = server.requests[-1]
    assert recorded.path == "/anthropic/v1/messages"
    assert headers(server)["x-api-key"] == key
    # no output_config.format there: the schema goes as a forced tool
    assert recorded.body["tool_choice"] == {"type": "tool", "name": "json"}
    assert "output_config" not in recorded.body
    assert json.loads(result.text)["elements"][0]["condition"] == "sunny"


def test_deepseek_refuses_what_it_does_not_take(server: ReplayServer) -> None:
    adapter = AnthropicAdapter(dialect="deepseek", api_key="k", base_url=server.url)
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
    with pytest.raises(ConfigurationError, match="images, documents or audio"):
        adapter.build_request(options(Message.user("Look:", ImagePart.from_bytes(png, "image/png"))))
    with pytest.raises(ConfigurationError, match="AnthropicAdapter.fallbacks: DeepSeek ignores anthropic-beta"):
        AnthropicAdapter(dialect="deepseek", api_key="k", fallbacks="default")
    with pytest.raises(ConfigurationError, match="AnthropicAdapter.dialect"):
        AnthropicAdapter(dialect="deepseak", api_key="k")
    assert server.requests == []


def test_local_presets_and_the_key_ollama_ignores(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # never sent to a compatible server
    lmstudio = AnthropicAdapter(dialect="lmstudio")
    ollama = AnthropicAdapter(dialect="ollama")
    assert (lmstudio.base_url, lmstudio.title) == ("http://127.0.0.1:1234", "LM Studio")
    assert (ollama.base_url, ollama.title) == ("http://127.0.0.1:11434", "Ollama")
    serve(server, "text.sse", "text.sse")
    service_for(AnthropicAdapter(dialect="ollama", base_url=server.url), "ollama-anthropic").stream(
        options(provider="ollama-anthropic", model="qwen3-coder")
    ).result()
    assert headers(server)["x-api-key"] == "ollama"  # "required but ignored"
    service_for(AnthropicAdapter(dialect="lmstudio", base_url=server.url), "lmstudio-anthropic").stream(
        options(provider="lmstudio-anthropic", model="ibm/granite-4-micro")
    ).result()
    assert "x-api-key" not in headers(server)
    assert all(KEY not in json.dumps(r.headers) for r in server.requests)


# --------------------------------------------------------------------------- structured output


def test_a_forced_tool_answer_with_a_sentence_before_it_is_json_only(server: ReplayServer) -> None:
    serve(server, "tool_use_with_args.sse")
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url, structured_output="tool")
    stream = service_for(adapter).stream(
        options(model="claude-haiku-4-5", response_format=JsonSchema("json", {"type": "object"}, strict=False))
    )
    chunks = list(stream)
    result = stream.result()
    assert json.loads(result.text) == {
        "elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]
    }
    assert result.finish.kind == "stop"
    assert result.metadata is not None and result.metadata.commentary == "I'll invoke the JSON response tool."
    snapshots = list(partial_json(chunks))
    assert snapshots[-1].done and snapshots[-1].value == json.loads(result.text)


# --------------------------------------------------------------------------- the Messages settings


CLAUDE_ROUTES: dict[str, Callable[..., AnthropicAdapter | ClaudePlatformAwsAdapter]] = {
    "anthropic": lambda **given: AnthropicAdapter(api_key=KEY, **given),
    "vertex": lambda **given: VertexAnthropicAdapter(project="p", location="us-east5", api_key="token-for-test", **given),
    "aws": lambda **given: ClaudePlatformAwsAdapter(region="us-east-1", workspace_id="wrkspc_01", api_key="aws-key-for-test",
                                                    **given),
}


@pytest.mark.parametrize("route", sorted(CLAUDE_ROUTES))
def test_every_claude_route_hands_the_messages_settings_to_its_wire(route: str) -> None:
    build = CLAUDE_ROUTES[route]
    plain = build().wire
    defaults = MessagesBody()
    assert (plain.default_max_tokens, plain.thinking_mode, plain.structured_output, plain.eager_input_streaming) == (
        defaults.default_max_tokens, defaults.thinking_mode, defaults.structured_output, defaults.eager_input_streaming)
    wire = build(default_max_tokens=77, thinking_budgets={"claude-x": 2048}, thinking_mode="enabled",
                 structured_output="tool", eager_input_streaming=False).wire
    assert (wire.default_max_tokens, wire.thinking_mode, wire.structured_output, wire.eager_input_streaming) == (
        77, "enabled", "tool", False)
    assert wire.thinking_budgets["claude-x"] == 2048
    with pytest.raises(ConfigurationError, match="unknown adapter setting 'thinking_mod'"):
        build(thinking_mod="enabled")
