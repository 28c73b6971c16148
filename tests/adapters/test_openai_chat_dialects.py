"""OpenAIChatAdapter: request bodies per dialect and multi-turn replay, over loopback HTTP.

A :class:`~dshstream._replay_server.ReplayServer` on 127.0.0.1 records every request and
answers with a recorded transcript; the tests drive the real path (service, adapter,
transport, decoder) and assert on the JSON bodies the adapters sent. The dialect table
itself is tested in tests/core/test_dialect_table.py, the Responses adapter in
tests/adapters/test_openai_responses.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._core.dialects import DIALECTS
from dshstream._replay_server import ReplayServer, Route
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._service import LlmService
from dshstream._core.types import ReasoningBlock, TextBlock
from helpers import fixture_bytes, routed_session

KEY = "sk-test-dialects-0123456789"
WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
TEXT_BODY = (
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def chat_service(server: ReplayServer, dialect: str, **options: Any) -> tuple[LlmService, OpenAIChatAdapter]:
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", dialect=dialect, max_retries=0, **options)
    service = LlmService(check_contract=True)
    service.register_adapter([dialect], adapter)
    return service, adapter


def request(provider: str, *messages: Message, **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="test-model", messages=messages, **fields)


def bodies(server: ReplayServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]


# --------------------------------------------------------------------------- keys


def test_key_comes_from_the_dialect_environment_variable(monkeypatch: pytest.MonkeyPatch, server: ReplayServer) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-from-env-123456")
    server.add("/v1/", TEXT_BODY)
    service = LlmService()
    session = routed_session("https://api.groq.com", server.url)
    service.register_adapter(["groq"], OpenAIChatAdapter(dialect="groq", session=session))  # type: ignore[arg-type]
    service.stream(request("groq", Message.user("hi"))).result()
    assert server.requests[0].headers["authorization"] == "Bearer gsk-from-env-123456"
    # A base_url pointed elsewhere gets no environment key.
    service = LlmService()
    service.register_adapter(["groq"], OpenAIChatAdapter(dialect="groq", base_url=f"{server.url}/v1"))
    service.stream(request("groq", Message.user("hi"))).result()
    assert "authorization" not in server.requests[1].headers


# --------------------------------------------------------------------------- bodies per dialect


REASONING_FIELDS: dict[str, dict[str, Any]] = {
    "deepseek": {"thinking": {"type": "enabled"}, "reasoning_effort": "high"},
    "openrouter": {"reasoning": {"effort": "high"}},
}


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_request_body_per_dialect(server: ReplayServer, dialect: str) -> None:
    server.add("/v1/", TEXT_BODY)
    service, _ = chat_service(server, dialect)
    result = service.stream(
        request(
            dialect,
            Message.system("be brief"),
            Message.user("weather?"),
            tools=(WEATHER,),
            max_tokens=50,
            temperature=0.2,
            stop=("END",),
            reasoning_effort="high",
            extra_body={"seed": 7},
        )
    ).result()
    assert result.text == "ok"
    (recorded,) = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    assert recorded.headers["user-agent"].startswith("dshstream/")
    body = recorded.body
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
    ]
    assert body["tools"] == [WEATHER.to_openai()]
    max_key = "max_completion_tokens" if dialect == "openai" else "max_tokens"
    assert body[max_key] == 50
    assert body["temperature"] == 0.2 and body["stop"] == ["END"] and body["seed"] == 7
    for key, value in REASONING_FIELDS.get(dialect, {"reasoning_effort": "high"}).items():
        assert body[key] == value


@pytest.mark.parametrize(
    ("dialect", "effort", "fields"),
    [
        ("deepseek", "off", {"thinking": {"type": "disabled"}}),
        ("deepseek", "medium", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("deepseek", "low", {"thinking": {"type": "enabled"}, "reasoning_effort": "low"}),
        ("openrouter", "off", {"reasoning": {"enabled": False}}),
        ("openrouter", "max", {"reasoning": {"effort": "high"}}),
        ("groq", "low", {"reasoning_effort": "low"}),
    ],
)
def test_reasoning_effort_spelling(server: ReplayServer, dialect: str, effort: str, fields: dict[str, Any]) -> None:
    server.add("/v1/", TEXT_BODY)
    service, _ = chat_service(server, dialect)
    service.stream(request(dialect, Message.user("hi"), reasoning_effort=effort)).result()
    body = server.requests[0].body
    for key, value in fields.items():
        assert body[key] == value
    if effort == "off" and dialect == "deepseek":
        assert "reasoning_effort" not in body


def test_deepseek_request_id_header_reaches_metadata(server: ReplayServer) -> None:
    server.add("/", Route(body=TEXT_BODY, headers={"x-deepseek-request-id": "ds-req-42"}))
    service, _ = chat_service(server, "deepseek")
    result = service.stream(request("deepseek", Message.user("hi"))).result()
    assert result.metadata is not None and result.metadata.request_id == "ds-req-42"


# --------------------------------------------------------------------------- multi-turn replay


def test_deepseek_two_turns_send_reasoning_content_back(server: ReplayServer) -> None:
    server.add("/v1/", [
        Route(body=fixture_bytes("deepseek/reasoner_tool_call_cache_hit.sse")),
        Route(body=fixture_bytes("deepseek/reasoner_reasoning_content_then_content.sse")),
    ])
    service, _ = chat_service(server, "deepseek")
    history: list[Message] = [Message.user("weather in SF?")]
    first = service.stream(request("deepseek", *history, tools=(WEATHER,))).result()
    assert first.finish.kind == "tool-calls"
    (call,) = first.tool_calls
    history += [first.message(), Message.tool_result(call.id, "18C, sunny")]
    second = service.stream(request("deepseek", *history, tools=(WEATHER,))).result()
    assert second.text == "Hello there! 😊 How can I help you today?"
    history += [second.message(), Message.user("thanks")]
    service.stream(request("deepseek", *history)).result()

    turn2, turn3 = bodies(server)[1:]
    assistant = turn2["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": None,  # a turn of tool calls alone: null, never "" (Bedrock-backed gateways refuse an empty text block)
        "reasoning_content": first.reasoning,
        "tool_calls": [{"id": call.id, "type": "function",
                        "function": {"name": "weather", "arguments": '{"location": "San Francisco"}'}}],
    }
    assert turn2["messages"][2] == {"role": "tool", "tool_call_id": call.id, "content": "18C, sunny"}
    # every assistant turn that had reasoning carries it, tool turn or not
    assistants = [m for m in turn3["messages"] if m["role"] == "assistant"]
    assert [m["reasoning_content"] for m in assistants] == [first.reasoning, second.reasoning]
    assert assistants[1]["content"] == second.text and "tool_calls" not in assistants[1]


def test_reasoning_content_is_not_sent_to_dialects_that_do_not_want_it(server: ReplayServer) -> None:
    server.add("/v1/", TEXT_BODY)
    service, _ = chat_service(server, "openai")
    past = Message("assistant", (ReasoningBlock("thought"), TextBlock("answer")), provider="openai")
    service.stream(request("openai", Message.user("q"), past, Message.user("again"))).result()
    assert server.requests[0].body["messages"][1] == {"role": "assistant", "content": "answer"}


def test_openrouter_two_turns_send_reasoning_details_back(server: ReplayServer) -> None:
    server.add("/v1/", [
        Route(body=fixture_bytes("openrouter/reasoning_details_claude.sse")),
        Route(body=fixture_bytes("openrouter/cache_usage_bedrock_claude.sse")),
    ])
    service, _ = chat_service(server, "openrouter")
    first = service.stream(request("openrouter", Message.user("2+2?"), reasoning_effort="low")).result()
    assert first.metadata is not None and first.metadata.serving_provider == "Google"
    service.stream(request("openrouter", Message.user("2+2?"), first.message(), Message.user("and 3+3?"))).result()
    assistant = bodies(server)[1]["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == "2 + 2 = 4"
    (detail,) = assistant["reasoning_details"]
    assert detail["type"] == "reasoning.text"
    assert detail["text"] == "This is a simple arithmetic question. 2+2 equals 4."
    assert detail["signature"].startswith("Et0BCkgIChACGAIqQA2s")
    assert "reasoning_content" not in assistant


def test_replay_state_from_another_adapter_is_not_sent(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=fixture_bytes("openrouter/reasoning_details_claude.sse")), Route(body=TEXT_BODY)])
    service, _ = chat_service(server, "openrouter")
    first = service.stream(request("openrouter", Message.user("2+2?"))).result()
    other = OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", dialect="openrouter", max_retries=0)
    service.register_adapter(["openrouter-2"], other)
    service.stream(request("openrouter-2", Message.user("2+2?"), first.message(), Message.user("more"))).result()
    assert "reasoning_details" not in bodies(server)[1]["messages"][1]


def test_openrouter_in_band_failure_names_the_serving_provider(server: ReplayServer) -> None:
    server.add("/v1/", fixture_bytes("openrouter/midstream_error_chunk.sse"))
    service, _ = chat_service(server, "openrouter")
    result = service.stream(request("openrouter", Message.user("hi"))).result()
    assert result.failure is not None and result.failure.serving_provider == "Minimax"
    assert result.usage is not None and result.usage.output_tokens == 10 + 11  # reasoning counted apart


# --------------------------------------------------------------------------- stream_options fallback


def test_stream_options_rejected_is_retried_without_and_remembered(server: ReplayServer) -> None:
    rejection = json.dumps({"error": {"message": "Unrecognized request argument supplied: stream_options",
                                      "type": "invalid_request_error", "param": None, "code": None}}).encode()
    server.add("/v1/", [
        Route(body=rejection, status=400, content_type="application/json"),
        Route(body=TEXT_BODY),
    ])
    reports: list[str] = []
    service, adapter = chat_service(server, "vllm", failure_reporter=lambda failure, record: reports.append(failure.code))
    first = service.stream(request("vllm", Message.user("hi"))).result()
    assert first.text == "ok" and first.ok
    second = service.stream(request("vllm", Message.user("hi"))).result()
    assert second.text == "ok"
    sent = bodies(server)
    assert "stream_options" in sent[0]
    assert "stream_options" not in sent[1] and "stream_options" not in sent[2]
    assert adapter.wire.include_usage is False
    assert reports == ["INVALID_REQUEST"]


def test_other_400s_are_not_retried(server: ReplayServer) -> None:
    rejection = json.dumps({"error": {"message": "bad temperature", "type": "invalid_request_error"}}).encode()
    server.add("/v1/", Route(body=rejection, status=400, content_type="application/json"))
    service, adapter = chat_service(server, "openai")
    result = service.stream(request("openai", Message.user("hi"))).result()
    assert result.failure is not None and result.failure.code == "INVALID_REQUEST"
    assert len(server.requests) == 1 and adapter.wire.include_usage is True


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_turn_of_tool_calls_alone_has_null_content(dialect: str) -> None:
    """OpenAI documents ``content`` as optional beside ``tool_calls``; an empty string is an
    empty text block to a gateway relaying to Bedrock ("text content blocks must be
    non-empty", vercel/ai#13744). Text beside the calls is sent as it is."""
    from dshstream._core.types import ToolCallBlock

    wire = OpenAIChatAdapter(dialect=dialect, api_key="sk-test", base_url="http://127.0.0.1:9/v1").wire
    call = ToolCallBlock("call_1", "weather", '{"city": "Rome"}')
    (alone,) = wire.convert_message(Message.assistant([call]))
    (beside,) = wire.convert_message(Message.assistant([TextBlock("Checking."), call]))
    (empty,) = wire.convert_message(Message.assistant([TextBlock("")]))
    assert alone["content"] is None and alone["tool_calls"][0]["id"] == "call_1"
    assert beside["content"] == "Checking."
    assert empty["content"] == ""


# --------------------------------------------------------------------------- <tool_call> markup

DELIVERY = ToolSpec(
    "get_delivery_date", "When an order arrives.",
    {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
)


def test_a_local_servers_tool_call_markup_is_a_call_the_tool_loop_runs() -> None:
    """Recorded: Ollama's /v1 (2024) left qwen2.5's ``<tool_call>`` markup in the content.
    On the ollama dialect it is the call it names; the tool loop runs it and answers."""
    from dshstream import run_tools

    with ReplayServer() as server:
        server.add("/v1/chat/completions", [
            Route(body=fixture_bytes("ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse")),
            Route(body=fixture_bytes("llamacpp/llamaserver_qwen_basic.sse")),
        ])
        service, _ = chat_service(server, "ollama")
        asked = request("ollama", Message.user("When does order_12345 arrive?"), tools=(DELIVERY,))
        seen: list[str] = []

        def get_delivery_date(order_id: str) -> str:
            seen.append(order_id)
            return "2026-12-24"

        loop = run_tools(service, asked, {"get_delivery_date": get_delivery_date})
        result = loop.result()
        second = bodies(server)[1]
    assert seen == ["order_12345"]
    assert result.text  # the answer after the tool's result
    assistant, tool = second["messages"][1], second["messages"][2]
    assert assistant["tool_calls"][0]["function"] == {"name": "get_delivery_date", "arguments": '{"order_id":"order_12345"}'}
    assert tool == {"role": "tool", "tool_call_id": "call_markup_1", "content": "2026-12-24"}


def test_markup_is_text_without_tools_off_on_a_cloud_dialect_and_when_turned_off() -> None:
    markup = fixture_bytes("ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse")
    for dialect, options, tools in (("ollama", {}, ()), ("openai", {}, (DELIVERY,)),
                                    ("ollama", {"tool_markup": False}, (DELIVERY,))):
        with ReplayServer({"/v1/chat/completions": Route(body=markup)}) as server:
            service, _ = chat_service(server, dialect, **options)
            result = service.stream(request(dialect, Message.user("q"), tools=tools)).result()
        assert result.tool_calls == () and result.text.startswith("<tool_call>"), (dialect, options)
    with ReplayServer({"/v1/chat/completions": Route(body=markup)}) as server:
        service, _ = chat_service(server, "openai", tool_markup=True)
        result = service.stream(request("openai", Message.user("q"), tools=(DELIVERY,))).result()
    assert [c.name for c in result.tool_calls] == ["get_delivery_date"] and result.finish.kind == "tool-calls"
