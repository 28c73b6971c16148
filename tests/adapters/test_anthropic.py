"""AnthropicAdapter over loopback HTTP: request bodies and headers, and a second turn that
sends replay state (thinking signatures, redacted thinking) back exactly as received."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._core.attribution import DEFAULT_IDENTITY, AppIdentity
from dshstream._replay_server import ReplayServer, Route
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._service import LlmService
from dshstream._core.types import LlmFailure, ReasoningBlock, TextBlock, ToolCallBlock
from helpers import fixture_bytes, routed_session

KEY = "sk-ant-api03-loopback-test-key-0123456789"  # CANARY: a fake key for the test
WEATHER = ToolSpec(
    name="fixed_version",
    description="Returns the version",
    parameters={"type": "object", "properties": {}},
)
# the signature_delta of tests/fixtures/real/anthropic/thinking_then_tool_use.sse
SIGNATURE = (
    "EoQDCm0IDhgCKkCDzGs2kL2PgnDCZU/nM2wG2P1VIXCRHVnhDDzBQxNF1fl4QBXEKLxRItNJ2MwFdW9eeZPhsxSQIxD54cv3z"
    "s29MhljbGF1ZGUtaGFpa3UtNC01LTIwMjUxMDAxOABCCHRoaW5raW5nEgy/OWlwTmmqUjC6L70aDJ4P0R5NfuIe9U5zAiIwCxPd"
    "uXS2UxCNxJCee3i91qK3cAyAgxCjL2wkQ5UD56iX1hXGOyuNaiH5k+dF5OCQKsQBxiAo+NjC61hV8nRYtaiP+C4inOcuMKuTG9Z1"
    "rysxTXkKBTl3oMiOlnEPHHPpKpg4sYF2G5VoTg8JTon20hdZw4GfTEVupnU1qAmnMqyAgke9SoV7HBW/PyA/FxL/q33xJ2gKFiD+"
    "BsgI9Z0koMmFKCvm2MoYE6u+ONEwKdFQXL1FKRW6t/bYbJGrLJLwxilsL82h9j4xjggjMn8Npvpn+zsrDPW/8PuLd4Pu+/Esjo"
    "neYwyxQQtUVgzhVGhhANWRjSBwUxgB"
)



def setup(server: ReplayServer, **adapter_options: Any) -> tuple[LlmService, AnthropicAdapter]:
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url, **adapter_options)
    service = LlmService(check_contract=True)
    service.register_adapter(["anthropic"], adapter)
    return service, adapter


def options(messages: list[Message], **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="anthropic", model="claude-haiku-4-5", messages=tuple(messages), **fields)


def serve(server: ReplayServer, *names: str) -> None:
    server.add("/v1/messages", [Route(body=fixture_bytes(f"anthropic/{name}")) for name in names])


def assert_no_key_in_urls(server: ReplayServer) -> None:
    for recorded in server.requests:
        assert KEY not in recorded.path


def test_first_turn_request_and_headers(server: ReplayServer) -> None:
    serve(server, "thinking_then_tool_use.sse")
    service, _ = setup(server)
    history = [
        Message.system("Be brief."),
        Message.system("Use tools."),
        Message.user("Which version? Then a joke."),
    ]
    result = service.stream(
        options(history, tools=(WEATHER,), reasoning_effort="medium", temperature=0.2, stop=("END",),
                extra_body={"metadata": {"user_id": "u-1"}})
    ).result()
    assert result.finish.kind == "tool-calls"
    recorded = server.requests[-1]
    assert recorded.method == "POST" and recorded.path == "/v1/messages"
    assert recorded.headers["x-api-key"] == KEY
    assert recorded.headers["anthropic-version"] == "2023-06-01"
    assert recorded.headers["user-agent"] == DEFAULT_IDENTITY.user_agent
    assert recorded.headers["content-type"] == "application/json"
    assert "authorization" not in recorded.headers
    assert recorded.body == {
        "model": "claude-haiku-4-5",
        "max_tokens": 8192 + 4096,
        "system": "Be brief.\n\nUse tools.",
        "messages": [{"role": "user", "content": "Which version? Then a joke."}],
        "stream": True,
        "tools": [
            {
                "name": "fixed_version",
                "description": "Returns the version",
                "input_schema": {"type": "object", "properties": {}},
                "eager_input_streaming": True,  # fine-grained tool streaming, on by default
            }
        ],
        "thinking": {"type": "enabled", "budget_tokens": 8192},  # no temperature with thinking
        "stop_sequences": ["END"],
        "metadata": {"user_id": "u-1"},
    }
    assert_no_key_in_urls(server)


def test_second_turn_sends_thinking_and_tool_use_back_exactly(server: ReplayServer) -> None:
    serve(server, "thinking_then_tool_use.sse", "text.sse")
    service, _ = setup(server)
    history = [Message.user("Which version?")]
    first = service.stream(options(history, tools=(WEATHER,), reasoning_effort="low")).result()
    assert first.blocks[0] == ReasoningBlock(first.reasoning, signature=SIGNATURE)
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", "{}")
    assistant = first.message()
    assert assistant.provider == "anthropic" and assistant.replay_state is not None
    history += [assistant, Message.tool_result(call.id, "1.2.3"), Message.user("And the joke?")]
    second = service.stream(options(history, tools=(WEATHER,), reasoning_effort="low")).result()
    assert second.text == "Hello"
    body = server.requests[-1].body
    assert body["messages"] == [
        {"role": "user", "content": "Which version?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": first.reasoning, "signature": SIGNATURE},
                {
                    "type": "tool_use",
                    "id": "toolu_01825dXWLSoJwCst1qTsiWdb",
                    "name": "fixed_version",
                    "input": {},
                    "caller": {"type": "direct"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01825dXWLSoJwCst1qTsiWdb", "content": "1.2.3"},
                {"type": "text", "text": "And the joke?"},
            ],
        },
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert_no_key_in_urls(server)


def test_redacted_thinking_goes_back_with_its_data(server: ReplayServer) -> None:
    serve(server, "redacted_thinking.sse", "text.sse")
    service, _ = setup(server)
    history = [Message.user("ANTHROPIC_MAGIC_STRING_TRIGGER_REDACTED_THINKING")]
    first = service.stream(options(history, reasoning_effort="high")).result()
    raw = fixture_bytes("anthropic/redacted_thinking.sse").decode()
    datas = [
        json.loads(line[6:])["content_block"]["data"]
        for line in raw.splitlines()
        if line.startswith("data: ") and '"redacted_thinking"' in line
    ]
    history += [first.message(), Message.user("ok")]
    service.stream(options(history, reasoning_effort="high")).result()
    sent = server.requests[-1].body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["redacted_thinking", "redacted_thinking", "text"]
    assert [b["data"] for b in sent[:2]] == datas
    assert sent[2] == {"type": "text", "text": first.text}


def test_parallel_tool_results_merge_into_one_user_turn(server: ReplayServer) -> None:
    serve(server, "parallel_tool_use.sse", "text.sse")
    service, _ = setup(server)
    history = [Message.user("Two names please")]
    first = service.stream(options(history)).result()
    a, b = first.tool_calls
    history += [first.message(), Message.tool_result(a.id, "Pete"), Message.tool_result(b.id, "oops", is_error=True)]
    service.stream(options(history)).result()
    messages = server.requests[-1].body["messages"]
    assert len(messages) == 3
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": a.id, "content": "Pete"},
            {"type": "tool_result", "tool_use_id": b.id, "content": "oops", "is_error": True},
        ],
    }


def test_history_without_replay_state_is_built_from_blocks(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    assistant = Message.assistant(
        [
            ReasoningBlock("unsigned thoughts"),  # the API refuses unsigned thinking: left out
            ReasoningBlock("signed thoughts", signature="c2lnbmF0dXJl"),
            TextBlock("Calling."),
            ToolCallBlock(id="toolu_9", name="lookup", arguments='{"q": "x"}'),
            ToolCallBlock(id="toolu_10", name="broken", arguments="{not json"),
        ]
    )
    history = [Message.user("hi"), assistant, Message.tool_result("toolu_9", "found")]
    service.stream(options(history, temperature=0.3, max_tokens=100)).result()
    body = server.requests[-1].body
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "signed thoughts", "signature": "c2lnbmF0dXJl"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": {"q": "x"}},
            {"type": "tool_use", "id": "toolu_10", "name": "broken", "input": {}},
        ],
    }
    assert body["temperature"] == 0.3 and body["max_tokens"] == 100 and "thinking" not in body


def test_tool_use_dropped_by_the_assembler_is_not_sent(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    replay = {
        "wire": "anthropic",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_cut", "name": "search", "input": {"q": "a"}},
        ],
    }
    # what AssembledResponse.message() gives after a max-tokens finish: no ToolCallBlock
    assistant = Message("assistant", (TextBlock("Let me look."),), provider="anthropic", replay_state=replay)
    service.stream(options([Message.user("q"), assistant, Message.user("go on")])).result()
    assert server.requests[-1].body["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me look."}],
    }


def test_replay_state_from_another_adapter_is_not_used(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    foreign = Message(
        "assistant",
        (TextBlock("from elsewhere"),),
        provider="someone-else",
        replay_state={"wire": "anthropic", "content": [{"type": "text", "text": "WRONG"}]},
    )
    service.stream(options([Message.user("q"), foreign, Message.user("next")])).result()
    assert server.requests[-1].body["messages"][1]["content"] == [{"type": "text", "text": "from elsewhere"}]


@pytest.mark.parametrize(
    ("effort", "max_tokens", "expected_thinking", "expected_max"),
    [
        ("off", None, None, 4096),
        ("minimal", None, 1024, 1024 + 4096),
        ("max", None, 24576, 24576 + 4096),
        ("high", 3000, 1500, 3000),
        ("high", 1500, 1024, 1500),
    ],
)
def test_thinking_budget_and_max_tokens(
    server: ReplayServer, effort: str, max_tokens: int | None, expected_thinking: int | None, expected_max: int
) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    service.stream(
        options([Message.user("x")], reasoning_effort=effort, max_tokens=max_tokens, temperature=0.7)
    ).result()
    body = server.requests[-1].body
    assert body["max_tokens"] == expected_max
    if expected_thinking is None:
        assert "thinking" not in body and body["temperature"] == 0.7
    else:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": expected_thinking}
        assert "temperature" not in body


def test_max_tokens_too_small_for_thinking_is_invalid_options(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    result = service.stream(options([Message.user("x")], reasoning_effort="low", max_tokens=800)).result()
    assert result.finish.failure is not None and result.finish.failure.code == "INVALID_OPTIONS"
    assert server.requests == []


def test_key_from_environment_and_identity(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    serve(server, "text.sse")
    identity = AppIdentity("pelican-app", "1.0", "https://example.com/pelican")
    # The environment key goes to Anthropic's own host (routed to loopback here) ...
    adapter = AnthropicAdapter(
        identity=identity,
        headers={"User-Agent": "mine", "anthropic-beta": "x-2025"},
        session=routed_session("https://api.anthropic.com", server.url),  # type: ignore[arg-type]
    )
    assert KEY not in repr(adapter)
    service = LlmService()
    service.register_adapter(["anthropic"], adapter)
    service.stream(options([Message.user("x")])).result()
    headers = server.requests[-1].headers
    assert headers["x-api-key"] == KEY
    assert headers["user-agent"] == "pelican-app/1.0 (+https://example.com/pelican)"
    assert headers["anthropic-beta"] == "x-2025"
    # ... and never to a base_url pointed elsewhere, unless passed as api_key=.
    service = LlmService()
    service.register_adapter(["anthropic"], AnthropicAdapter(base_url=server.url))
    service.stream(options([Message.user("x")])).result()
    assert "x-api-key" not in server.requests[-1].headers


def test_no_key_sends_no_key_header(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    serve(server, "text.sse")
    service = LlmService()
    service.register_adapter(["anthropic"], AnthropicAdapter(base_url=server.url))
    assert service.stream(options([Message.user("x")])).result().text == "Hello"
    assert "x-api-key" not in server.requests[-1].headers


def test_http_errors_are_classified_and_overload_is_retried(server: ReplayServer) -> None:
    overloaded = Route(
        body=b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
        status=529,
        content_type="application/json",
        chunked=False,
    )
    server.add("/v1/messages", [overloaded, Route(body=fixture_bytes("anthropic/text.sse"))])
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    service, _ = setup(server, max_retries=1, failure_reporter=lambda f, r: reports.append((f, r)))
    result = service.stream(options([Message.user("x")])).result()
    assert result.text == "Hello" and len(server.requests) == 2
    assert [f.code for f, _ in reports] == ["OVERLOADED"]

    auth = Route(
        body=b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
        status=401,
        content_type="application/json",
        chunked=False,
    )
    server.add("/v1/messages", auth)
    failed = service.stream(options([Message.user("x")])).result()
    failure = failed.finish.failure
    assert failure is not None and failure.code == "AUTH" and not failure.retryable
    assert KEY not in repr(failure)


def test_in_band_overloaded_error_after_output(server: ReplayServer) -> None:
    body = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":3,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    server.add("/v1/messages", Route(body=body))
    service, _ = setup(server, max_retries=2)
    result = service.stream(options([Message.user("x")])).result()
    failure = result.finish.failure
    assert failure is not None and failure.code == "OVERLOADED" and failure.retryable
    assert result.text == "Hi"
    assert len(server.requests) == 1  # output already streamed: no retry


def test_list_models(server: ReplayServer) -> None:
    payload = {"data": [{"id": "claude-haiku-4-5", "display_name": "Claude Haiku 4.5", "type": "model"}]}
    server.add("/v1/models", Route(body=json.dumps(payload).encode(), content_type="application/json", chunked=False))
    service, _ = setup(server)
    models = service.list_models("anthropic")
    assert [(m.id, m.name) for m in models] == [("claude-haiku-4-5", "Claude Haiku 4.5")]
    recorded = server.requests[-1]
    assert recorded.method == "GET" and recorded.headers["x-api-key"] == KEY
    assert recorded.headers["anthropic-version"] == "2023-06-01"
    assert_no_key_in_urls(server)


def test_thinking_mode_follows_the_model_generation() -> None:
    from dshstream import AnthropicAdapter, GenerateOptions, Message

    adapter = AnthropicAdapter(api_key="k-1234567")
    cases = {
        "claude-opus-4-7": True,
        "claude-sonnet-4-6": True,
        "claude-mythos-preview": True,
        "claude-sonnet-4-5-20250929": False,
        "claude-sonnet-4-20250514": False,
        "claude-3-7-sonnet-20250219": False,
        "claude-haiku-4-5": False,
    }
    for model, adaptive in cases.items():
        body = adapter.wire.build_body(
            GenerateOptions(provider="anthropic", model=model, messages=(Message.user("hi"),),
                            reasoning_effort="medium", temperature=0.3)
        )
        assert "temperature" not in body
        if adaptive:
            assert body["thinking"] == {"type": "adaptive"}, model
            assert body["output_config"] == {"effort": "medium"}
        else:
            assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] >= 1024, model
            assert "output_config" not in body
    forced = AnthropicAdapter(api_key="k-1234567", thinking_mode="enabled")
    body = forced.wire.build_body(GenerateOptions(provider="anthropic", model="claude-opus-4-7",
                                             messages=(Message.user("hi"),), reasoning_effort="high"))
    assert body["thinking"]["type"] == "enabled"


@pytest.mark.parametrize("eager", [True, False])
def test_tool_inputs_stream_eagerly_on_every_anthropic_route(eager: bool) -> None:
    # Fine-grained tool streaming: without it Anthropic buffers a tool's whole input and
    # sends nothing for minutes (a 35.9k-token input was measured at 329 s of silence).
    # The Claude API, Claude on Vertex and Bedrock's InvokeModel take the same field.
    from dshstream.adapters import BedrockAdapter, VertexAnthropicAdapter
    from dshstream._core.sigv4 import AwsCredentials

    adapters = [
        AnthropicAdapter(api_key=KEY, eager_input_streaming=eager),
        VertexAnthropicAdapter(project="p", location="us-east5", api_key=lambda: "token",
                               eager_input_streaming=eager),
        BedrockAdapter(region="us-east-1", api="invoke", credentials=AwsCredentials("AKIDEXAMPLE", "secret"),
                       eager_input_streaming=eager),
    ]
    for adapter in adapters:
        body = adapter.wire.build_body(options([Message.user("Weather?")], tools=(WEATHER,)))
        tool = body["tools"][0]
        assert tool["name"] == WEATHER.name and "input_schema" in tool
        assert tool.get("eager_input_streaming", False) is eager, type(adapter).__name__
