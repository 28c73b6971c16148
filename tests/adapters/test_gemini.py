"""GeminiAdapter over loopback HTTP: the key only in ``x-goog-api-key`` (never a URL),
request bodies, a second turn that sends every thoughtSignature back on its exact part,
and the bounded diagnostic summary of a failed stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._adapters.gemini import FOREIGN_THOUGHT_SIGNATURE, GeminiAdapter
from dshstream._core.attribution import DEFAULT_IDENTITY
from dshstream._replay_server import ReplayServer, Route
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._service import LlmService
from dshstream._core.types import LlmFailure, ReasoningBlock, TextBlock, ToolCallBlock
from helpers import fake_key, fixture_bytes, routed_session

KEY = fake_key("AIzaSy", 33)  # CANARY: a Google-shaped fake key, built at run time
COUNTRY = ToolSpec(
    name="get_country",
    description="The user's country",
    parameters={"type": "object", "properties": {}},
)
WEATHER = ToolSpec(
    name="getWeather",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)



def setup(server: ReplayServer, **adapter_options: Any) -> tuple[LlmService, GeminiAdapter]:
    adapter = GeminiAdapter(api_key=KEY, base_url=server.url, **adapter_options)
    service = LlmService(check_contract=True)
    service.register_adapter(["gemini"], adapter)
    return service, adapter


def options(messages: list[Message], model: str = "gemini-3-pro-preview", **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="gemini", model=model, messages=tuple(messages), **fields)


def serve(server: ReplayServer, *names: str) -> None:
    server.add("/v1beta/models/", [Route(body=fixture_bytes(f"gemini/{name}")) for name in names])


def raw_parts(name: str) -> list[dict[str, Any]]:
    return [
        part
        for line in fixture_bytes(f"gemini/{name}").decode().splitlines()
        if line.startswith("data: ")
        for candidate in json.loads(line[6:]).get("candidates", [])[:1]
        for part in candidate.get("content", {}).get("parts", [])
    ]


def assert_no_key_in_urls(server: ReplayServer) -> None:
    assert server.requests
    for recorded in server.requests:
        assert KEY not in recorded.path and "key=" not in recorded.path


def test_first_turn_request_and_headers(server: ReplayServer) -> None:
    serve(server, "function_call_thought_signature_gemini3.sse")
    service, _ = setup(server)
    history = [Message.system("You are terse."), Message.user("Where am I?")]
    result = service.stream(
        options(history, tools=(COUNTRY,), reasoning_effort="high", max_tokens=1000, temperature=0.4, stop=("END",),
                extra_body={"safetySettings": []})
    ).result()
    assert result.finish.kind == "tool-calls"
    recorded = server.requests[-1]
    assert recorded.method == "POST"
    assert recorded.path == "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
    assert recorded.headers["x-goog-api-key"] == KEY
    assert recorded.headers["user-agent"] == DEFAULT_IDENTITY.user_agent
    assert "authorization" not in recorded.headers
    assert recorded.body == {
        "contents": [{"role": "user", "parts": [{"text": "Where am I?"}]}],
        "systemInstruction": {"parts": [{"text": "You are terse."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_country",
                        "description": "The user's country",
                        "parameters": {"type": "object", "properties": {}},
                    }
                ]
            }
        ],
        "generationConfig": {
            "maxOutputTokens": 1000,
            "temperature": 0.4,
            "stopSequences": ["END"],
            "thinkingConfig": {"includeThoughts": True, "thinkingLevel": "high"},
        },
        "safetySettings": [],
    }
    assert_no_key_in_urls(server)


def test_second_turn_sends_the_signed_function_call_back(server: ReplayServer) -> None:
    name = "function_call_thought_signature_gemini3.sse"
    serve(server, name, "text.sse")
    service, _ = setup(server)
    history = [Message.user("Where am I?")]
    first = service.stream(options(history, tools=(COUNTRY,))).result()
    (call,) = first.tool_calls
    assert (call.name, call.arguments) == ("get_country", "{}")
    history += [first.message(), Message.tool_result(call.id, "France")]
    second = service.stream(options(history, tools=(COUNTRY,))).result()
    assert second.text == "The capital of France is Paris.\n"
    contents = server.requests[-1].body["contents"]
    signature = raw_parts(name)[0]["thoughtSignature"]
    assert contents == [
        {"role": "user", "parts": [{"text": "Where am I?"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": signature}],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_country", "response": {"result": "France"}}}],
        },
    ]
    assert_no_key_in_urls(server)


def test_thought_and_text_signatures_go_back_on_their_exact_parts(server: ReplayServer) -> None:
    name = "thought_parts_with_signature.sse"
    serve(server, name, "text.sse")
    service, _ = setup(server)
    history = [Message.user("How do I cross the street?")]
    first = service.stream(options(history, model="gemini-2.5-pro", reasoning_effort="medium")).result()
    assert isinstance(first.blocks[0], ReasoningBlock) and isinstance(first.blocks[1], TextBlock)
    history += [first.message(), Message.user("Thanks!")]
    service.stream(options(history, model="gemini-2.5-pro")).result()
    model_turn = server.requests[-1].body["contents"][1]
    assert model_turn["role"] == "model"
    parts = model_turn["parts"]
    signed = next(p for p in raw_parts(name) if "thoughtSignature" in p)
    assert parts[0] == {"text": first.reasoning, "thought": True}
    assert parts[1] == signed  # exactly the part the signature came with
    assert "thoughtSignature" not in parts[2]
    assert signed["text"] + parts[2]["text"] == first.text


def test_empty_text_signature_part_goes_back(server: ReplayServer) -> None:
    name = "empty_text_thought_signature_gemini3.sse"
    serve(server, name, "text.sse")
    service, _ = setup(server)
    history = [Message.user("How many r in strawberry?")]
    first = service.stream(options(history)).result()
    history += [first.message(), Message.user("Sure?")]
    service.stream(options(history)).result()
    parts = server.requests[-1].body["contents"][1]["parts"]
    assert parts == [{"text": first.text}, raw_parts(name)[-1]]
    assert parts[1]["text"] == "" and parts[1]["thoughtSignature"].startswith("Eo0HCooH")


def test_streamed_vertex_calls_and_parallel_results(server: ReplayServer) -> None:
    name = "vertex_function_call_partial_args.sse"
    serve(server, name, "text.sse")
    service, _ = setup(server)
    history = [Message.user("Weather in Boston and San Francisco?")]
    first = service.stream(options(history, model="gemini-3.1-pro-preview", tools=(WEATHER,))).result()
    boston, sf = first.tool_calls
    assert (boston.arguments, sf.arguments) == ('{"location":"Boston"}', '{"location":"San Francisco"}')
    history += [
        first.message(),
        Message.tool_result(boston.id, '{"temp_f": 50}'),
        Message.tool_result(sf.id, "rain", is_error=True),
    ]
    service.stream(options(history, model="gemini-3.1-pro-preview", tools=(WEATHER,))).result()
    contents = server.requests[-1].body["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {
                "functionCall": {"name": "getWeather", "args": {"location": "Boston"}},
                "thoughtSignature": raw_parts(name)[0]["thoughtSignature"],
            },
            {"functionCall": {"name": "getWeather", "args": {"location": "San Francisco"}}},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "getWeather", "response": {"temp_f": 50}}},
            {"functionResponse": {"name": "getWeather", "response": {"error": "rain"}}},
        ],
    }


def test_function_call_dropped_by_the_assembler_is_not_sent(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    replay = {
        "wire": "gemini",
        "parts": [{"text": "Checking."}, {"functionCall": {"name": "f", "args": {"a": 1}}, "thoughtSignature": "s"}],
        "call_ids": ["call-1"],
    }
    assistant = Message("assistant", (TextBlock("Checking."),), provider="gemini", replay_state=replay)
    service.stream(options([Message.user("q"), assistant, Message.user("go on")])).result()
    assert server.requests[-1].body["contents"][1] == {"role": "model", "parts": [{"text": "Checking."}]}


def test_a_call_the_server_ran_goes_back_with_its_answer(server: ReplayServer) -> None:
    serve(server, "server_side_mcp_function_call_response_text.sse", "text.sse")
    service, _ = setup(server)
    first = service.stream(options([Message.user("Weather in New York on 2026-02-02?")])).result()
    assert first.tool_calls == ()
    service.stream(options([Message.user("Weather in New York on 2026-02-02?"), first.message(),
                            Message.user("Thanks")])).result()
    recorded = raw_parts("server_side_mcp_function_call_response_text.sse")
    assert server.requests[-1].body["contents"][1] == {
        "role": "model",
        "parts": [recorded[0], recorded[1], {"text": first.text}],
    }


def test_history_without_replay_state_is_built_from_blocks(server: ReplayServer) -> None:
    serve(server, "text.sse")
    service, _ = setup(server)
    assistant = Message.assistant(
        [
            ReasoningBlock("not sent back"),
            TextBlock("Let me check."),
            ToolCallBlock(id="call_a", name="lookup", arguments='{"q": "x"}'),
            ToolCallBlock(id="call_b", name="lookup", arguments='{"q": "y"}'),
        ]
    )
    history = [
        Message.user("hi"),
        assistant,
        Message.tool_result("call_a", "[1, 2]"),
        Message.tool_result("call_b", "plain text"),
    ]
    service.stream(options(history, reasoning_effort="off")).result()
    body = server.requests[-1].body
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "Let me check."},
                {"functionCall": {"name": "lookup", "args": {"q": "x"}}, "thoughtSignature": FOREIGN_THOUGHT_SIGNATURE},
                {"functionCall": {"name": "lookup", "args": {"q": "y"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "lookup", "response": {"result": [1, 2]}}},
                {"functionResponse": {"name": "lookup", "response": {"result": "plain text"}}},
            ],
        },
    ]
    assert body["generationConfig"] == {"thinkingConfig": {"includeThoughts": True, "thinkingLevel": "low"}}


def test_wire_call_ids_go_back_on_function_responses(server: ReplayServer) -> None:
    stream = (
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc-7","name":"lookup",'
        b'"args":{"q":"z"}},"thoughtSignature":"c2ln"}]},"finishReason":"STOP"}],'
        b'"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2}}\r\n\r\n'
    )
    server.add("/v1beta/models/", [Route(body=stream), Route(body=fixture_bytes("gemini/text.sse"))])
    service, _ = setup(server, foreign_thought_signature=None)
    history = [Message.user("q")]
    first = service.stream(options(history)).result()
    (call,) = first.tool_calls
    assert call.id == "fc-7"
    history += [first.message(), Message.tool_result("fc-7", '{"ok": true}')]
    service.stream(options(history)).result()
    contents = server.requests[-1].body["contents"]
    assert contents[1]["parts"] == [
        {"functionCall": {"id": "fc-7", "name": "lookup", "args": {"q": "z"}}, "thoughtSignature": "c2ln"}
    ]
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "lookup", "response": {"ok": True}, "id": "fc-7"}}
    ]


def test_failed_stream_reports_a_bounded_prompt_free_summary(server: ReplayServer) -> None:
    raw = fixture_bytes("gemini/text.sse")
    server.add("/v1beta/models/", Route(body=raw[: raw.rindex(b"data: ")]))  # no finishReason: cut
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    service, _ = setup(server, max_retries=0, failure_reporter=lambda f, r: reports.append((f, r)))
    secret_prompt = "my very private prompt text"
    history = [
        Message.system("system secret words"),
        Message.user(secret_prompt),
        Message.assistant([TextBlock("ok"), ToolCallBlock(id="c1", name="lookup", arguments='{"secret_arg": 1}')]),
        Message.tool_result("c1", "tool output secret"),
        Message.user("follow-up secret"),
        Message.assistant("more"),
        Message.user("last question secret"),
    ]
    result = service.stream(options(history, tools=(COUNTRY,))).result()
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    ((failure, record),) = reports
    assert failure.code == "STREAM_CLOSED"
    assert record["request_model"] == "gemini-3-pro-preview"
    assert record["last_roles"] == ["user", "model", "user", "model", "user"]
    assert record["final_turn_parts"] == {"text": 1}
    assert record["has_tool_history"] is True
    assert record["chunks_received"] > 0
    assert isinstance(record["elapsed_s"], float)
    dumped = json.dumps(record)
    for word in ("secret", "private", "lookup", "more"):
        assert word not in dumped
    assert KEY not in dumped


def test_key_from_environment(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    serve(server, "text.sse")
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "google-key-0123456789")
    assert GeminiAdapter().credential.value == "google-key-0123456789"
    assert GeminiAdapter(base_url=server.url).credential.value is None  # not Google's host
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    adapter = GeminiAdapter(
        session=routed_session("https://generativelanguage.googleapis.com", server.url)  # type: ignore[arg-type]
    )
    assert KEY not in repr(adapter)
    service = LlmService()
    service.register_adapter(["gemini"], adapter)
    service.stream(options([Message.user("x")], model="models/gemini-2.0-flash")).result()
    recorded = server.requests[-1]
    assert recorded.headers["x-goog-api-key"] == KEY
    assert recorded.path == "/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
    assert_no_key_in_urls(server)


def test_http_error_is_classified(server: ReplayServer) -> None:
    body = json.dumps(
        {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}}
    ).encode()
    server.add("/v1beta/models/", Route(body=body, status=429, content_type="application/json", chunked=False))
    service, _ = setup(server, max_retries=0)
    result = service.stream(options([Message.user("x")])).result()
    failure = result.finish.failure
    assert failure is not None and failure.code == "RATE_LIMIT" and failure.retryable


def test_list_models(server: ReplayServer) -> None:
    payload = {"models": [{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash"}]}
    server.add("/v1beta/models", Route(body=json.dumps(payload).encode(), content_type="application/json", chunked=False))
    service, _ = setup(server)
    assert [(m.id, m.name) for m in service.list_models("gemini")] == [("gemini-2.5-flash", "Gemini 2.5 Flash")]
    recorded = server.requests[-1]
    assert recorded.method == "GET" and recorded.headers["x-goog-api-key"] == KEY
    assert_no_key_in_urls(server)


def test_thinking_config_follows_the_model_generation() -> None:
    from dshstream import GeminiAdapter, GenerateOptions, Message

    adapter = GeminiAdapter(api_key="k-1234567")

    def config(model: str, effort: str) -> object:
        options = GenerateOptions(provider="gemini", model=model, messages=(Message.user("hi"),),
                                  reasoning_effort=effort)  # type: ignore[arg-type]
        return adapter.wire.build_body(options)["generationConfig"]["thinkingConfig"]

    assert config("gemini-3-pro-preview", "high") == {"includeThoughts": True, "thinkingLevel": "high"}
    assert config("gemini-3-flash", "off") == {"includeThoughts": True, "thinkingLevel": "low"}
    assert config("gemini-2.5-flash", "off") == {"thinkingBudget": 0}
    budget = config("gemini-2.5-pro", "high")
    assert isinstance(budget, dict) and budget["includeThoughts"] is True and budget["thinkingBudget"] > 0
