"""OpenAIResponsesAdapter (dshstream/_adapters/openai_responses.py): the request it builds
from ``GenerateOptions`` (instructions, input items, tools, reasoning, the encrypted
reasoning ``include``, item ids), every recorded Responses transcript streamed over
127.0.0.1 through the real HTTP path, replay state sent back on the next turn, the
``include`` fallback and ``list_models``.

The wire itself (events -> chunks) is tested in tests/wires/test_openai_responses.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import KNOWN_FINISH, all_fixtures, decode_all, fixture_bytes, fixture_wire

from dshstream._adapters.base import ModelInfo
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._core.assembler import assemble
from dshstream._replay_server import ReplayServer, Route
from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._service import LlmService
from dshstream._core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock

KEY = "sk-test-responses-0123456789"
PROVIDER = "openai-responses"
CALCULATOR = ToolSpec("calculator", "Arithmetic", {"type": "object", "properties": {"a": {"type": "number"}}})
TEXT_BODY = (
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
#: every recorded transcript of the Responses wire (OpenAI, DeepSeek, OpenRouter, xAI)
RESPONSES_FIXTURES = [rel for rel in all_fixtures() if fixture_wire(rel) == "openai-responses"]
INCLUDE = ["reasoning.encrypted_content"]


def adapter(**options: Any) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(api_key=KEY, key_env=None, **options)


def responses_service(server: ReplayServer, **options: Any) -> tuple[LlmService, OpenAIResponsesAdapter]:
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0, **options)
    service = LlmService(check_contract=True)
    service.register_adapter([PROVIDER], adapter)
    return service, adapter


def request(*messages: Message, **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider=PROVIDER, model="test-model", messages=messages, **fields)


def bodies(server: ReplayServer) -> list[dict[str, Any]]:
    return [r.body for r in server.requests]


def terminal_output(data: bytes) -> list[dict[str, Any]]:
    """The ``output`` items of the recording's terminal ``response.*`` event."""
    (response,) = [
        event["response"]
        for line in data.decode("utf-8").splitlines()
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
        for event in [json.loads(line[5:])]
        if event.get("type") in ("response.completed", "response.incomplete", "response.failed")
    ]
    output: list[dict[str, Any]] = response["output"]
    return output


# --------------------------------------------------------------------------- request body


def test_minimal_body() -> None:
    body = adapter().wire.build_body(request(Message.user("hi")))
    assert body == {
        "model": "test-model",
        "input": [{"role": "user", "content": "hi"}],
        "stream": True,
        "store": False,
        "include": INCLUDE,
        "stream_options": {"include_obfuscation": False},  # api.openai.com: wire rule 8
    }


def test_endpoint_and_default_base_url() -> None:
    assert adapter().wire.endpoint(request(Message.user("hi"))) == "https://api.openai.com/v1/responses"
    custom = adapter(base_url="http://127.0.0.1:9/api/v1")
    assert custom.wire.endpoint(request(Message.user("hi"))) == "http://127.0.0.1:9/api/v1/responses"


def test_leading_system_messages_are_instructions_later_ones_stay_in_input() -> None:
    body = adapter().wire.build_body(
        request(
            Message.system("You are terse."),
            Message.system(""),
            Message.system("Use metric units."),
            Message.user("hi"),
            Message.system("late note"),
        )
    )
    assert body["instructions"] == "You are terse.\n\nUse metric units."
    assert body["input"] == [{"role": "user", "content": "hi"}, {"role": "system", "content": "late note"}]


def test_tools_are_flat_functions_with_the_schema_untouched() -> None:
    strict_schema = {"type": "object", "properties": {}, "additionalProperties": False}
    other = ToolSpec("now", "The time", strict_schema)
    body = adapter().wire.build_body(request(Message.user("hi"), tools=(CALCULATOR, other)))
    assert body["tools"] == [
        {"type": "function", "name": "calculator", "description": "Arithmetic",
         "parameters": dict(CALCULATOR.parameters), "strict": False},
        {"type": "function", "name": "now", "description": "The time", "parameters": strict_schema, "strict": False},
    ]


@pytest.mark.parametrize(
    ("effort", "reasoning"),
    [
        ("off", {"effort": "none"}),
        ("minimal", {"effort": "minimal", "summary": "auto"}),
        ("low", {"effort": "low", "summary": "auto"}),
        ("medium", {"effort": "medium", "summary": "auto"}),
        ("high", {"effort": "high", "summary": "auto"}),
        ("max", {"effort": "high", "summary": "auto"}),
    ],
)
def test_reasoning_effort_spelling(effort: str, reasoning: dict[str, str]) -> None:
    body = adapter().wire.build_body(request(Message.user("hi"), reasoning_effort=effort))
    assert body["reasoning"] == reasoning


def test_reasoning_summary_setting() -> None:
    options = request(Message.user("hi"), reasoning_effort="low")
    assert adapter(reasoning_summary=None).wire.build_body(options)["reasoning"] == {"effort": "low"}
    assert adapter(reasoning_summary="detailed").wire.build_body(options)["reasoning"] == {
        "effort": "low", "summary": "detailed"}
    assert "reasoning" not in adapter().wire.build_body(request(Message.user("hi")))


def test_encrypted_reasoning_include_can_be_turned_off() -> None:
    assert "include" not in adapter(include_encrypted_reasoning=False).wire.build_body(request(Message.user("hi")))


def test_compaction_is_an_option_and_its_item_goes_back_verbatim() -> None:
    """``compact_threshold`` asks for server-side compaction (``context_management``); the
    ``compaction`` item it yields (shape from the API reference: its ``encrypted_content``
    carries the earlier context) is replayed as it came, in output order."""
    assert "context_management" not in adapter().wire.build_body(request(Message.user("hi")))
    compacting = adapter(compact_threshold=200_000)
    assert compacting.compact_threshold == 200_000
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-earlier-context"}
    state = {"wire": "openai-responses", "items": [compaction, {"type": "message", "id": "msg_1", "text_parts": 1}]}
    turn = Message("assistant", (TextBlock("Done."),), provider=PROVIDER, replay_state=state)
    body = compacting.wire.build_body(request(Message.user("hi"), turn, Message.user("next")))
    assert body["context_management"] == [{"type": "compaction", "compact_threshold": 200_000}]
    assert body["input"][1] == compaction
    assert body["input"][2]["type"] == "message" and body["input"][2]["content"] == [{"type": "output_text", "text": "Done."}]
    for wrong in (0, -5, True, "1000"):
        with pytest.raises(ConfigurationError, match="compact_threshold"):
            adapter(compact_threshold=wrong)


def test_limits_temperature_and_extra_body_but_no_stop() -> None:
    body = adapter().wire.build_body(
        request(Message.user("hi"), max_tokens=300, temperature=0.5, stop=("END",),
                extra_body={"service_tier": "flex", "store": True})
    )
    assert body["max_output_tokens"] == 300 and body["temperature"] == 0.5
    assert body["service_tier"] == "flex" and body["store"] is True  # extra_body goes last
    assert "stop" not in body and "max_tokens" not in body


def test_tool_results_are_function_call_outputs() -> None:
    results = Message("tool", (ToolResultBlock("c1", "19"), ToolResultBlock("c2", "oops", is_error=True)))
    assert adapter().wire.convert_message(results) == [
        {"type": "function_call_output", "call_id": "c1", "output": "19"},
        {"type": "function_call_output", "call_id": "c2", "output": "oops"},
    ]


def test_assistant_turn_without_replay_state_is_built_from_blocks() -> None:
    turn = Message.assistant([
        ReasoningBlock("thought"),  # nothing to replay it with: not sent
        TextBlock("first"),
        ToolCallBlock("c1", "calculator", '{"a": 1}'),
        TextBlock("second"),
        ToolCallBlock("c2", "calculator", ""),
    ])
    assert adapter().wire.convert_message(turn) == [
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "first"}, {"type": "output_text", "text": "second"}]},
        {"type": "function_call", "call_id": "c1", "name": "calculator", "arguments": '{"a": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "calculator", "arguments": "{}"},
    ]


REPLAY_STATE = {"wire": "openai-responses", "items": [
    {"type": "reasoning", "id": "rs_1", "encrypted_content": "E1", "summary": [{"type": "summary_text", "text": "s"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "calculator"},
]}


def test_item_ids_from_replay_state_are_sent_unless_turned_off() -> None:
    turn = Message("assistant", (ToolCallBlock("call_1", "calculator", '{"a": 2}'),), provider="p",
                   replay_state=REPLAY_STATE)
    assert adapter().wire.convert_message(turn) == [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}],
         "encrypted_content": "E1"},
        {"type": "function_call", "call_id": "call_1", "name": "calculator", "arguments": '{"a": 2}', "id": "fc_1"},
    ]
    assert adapter(send_item_ids=False).wire.convert_message(turn) == [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}], "encrypted_content": "E1"},
        {"type": "function_call", "call_id": "call_1", "name": "calculator", "arguments": '{"a": 2}'},
    ]


def test_reasoning_with_only_an_id_is_not_replayed() -> None:
    state = {"wire": "openai-responses", "items": [
        {"type": "reasoning", "id": "rs_1", "summary": []},  # store=false: an id alone can't be looked up
        {"type": "message", "id": "msg_1", "text_parts": 1},
    ]}
    turn = Message("assistant", (TextBlock("hi"),), provider="p", replay_state=state)
    assert adapter().wire.convert_message(turn) == [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
    ]


def test_replay_state_of_another_wire_is_ignored() -> None:
    state = {"wire": "anthropic", "items": REPLAY_STATE["items"]}
    turn = Message("assistant", (ToolCallBlock("call_1", "calculator", "{}"),), provider="p", replay_state=state)
    assert adapter().wire.convert_message(turn) == [
        {"type": "function_call", "call_id": "call_1", "name": "calculator", "arguments": "{}"},
    ]


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_reasoning_is_not_replayed_without_its_following_item() -> None:
    adapter = OpenAIResponsesAdapter(api_key=KEY, key_env=None)
    state = {"wire": "openai-responses", "items": [
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "E1", "summary": []},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f"},
        {"type": "reasoning", "id": "rs_2", "encrypted_content": "E2", "summary": []},
        {"type": "message", "id": "msg_1", "text_parts": 1},
        {"type": "reasoning", "id": "rs_3", "encrypted_content": "E3", "summary": []},
    ]}
    # the tool call was dropped (max-tokens): its reasoning must go too; so must a trailing one
    message = Message("assistant", (TextBlock("partial"),), provider="p", replay_state=state)
    assert adapter.wire.convert_message(message) == [
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "E2"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "partial"}]},
    ]


# --------------------------------------------------------------------------- over loopback HTTP


def test_responses_request_body(server: ReplayServer) -> None:
    server.add("/v1/", fixture_bytes("openai-responses/text.sse"))
    service, _ = responses_service(server)
    result = service.stream(
        request(
            Message.system("You are terse."),
            Message.system("Use metric units."),
            Message.user("capital of France?"),
            tools=(CALCULATOR,),
            max_tokens=300,
            temperature=0.5,
            reasoning_effort="medium",
            extra_body={"service_tier": "flex"},
        )
    ).result()
    assert result.text == "The capital of France is Paris."
    (recorded,) = server.requests
    assert recorded.method == "POST" and recorded.path == "/v1/responses"
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    assert recorded.headers["user-agent"].startswith("dshstream/")
    assert recorded.body == {
        "model": "test-model",
        "input": [{"role": "user", "content": "capital of France?"}],
        "stream": True,
        "store": False,
        "instructions": "You are terse.\n\nUse metric units.",
        "tools": [{"type": "function", "name": "calculator", "description": "Arithmetic",
                   "parameters": dict(CALCULATOR.parameters), "strict": False}],
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": INCLUDE,
        "max_output_tokens": 300,
        "temperature": 0.5,
        "service_tier": "flex",
    }


@pytest.mark.parametrize("rel", RESPONSES_FIXTURES)
def test_every_recording_streams_over_loopback_as_it_decodes(server: ReplayServer, rel: str) -> None:
    data = fixture_bytes(rel)
    server.add("/v1/", data)
    service, _ = responses_service(server)
    result = service.stream(request(Message.user("hi"))).result()
    offline = assemble(decode_all(data, "openai-responses", provider=PROVIDER), provider=PROVIDER, model="test-model")
    assert result == offline
    expected = KNOWN_FINISH[rel]
    code = result.failure.code if result.failure is not None else None
    assert (result.finish.kind, result.finish.raw, code) == expected
    assert len(server.requests) == 1


def _replayed(item: dict[str, Any]) -> list[dict[str, Any]]:
    """What the next request must carry for one output item of the recording."""
    kind = item["type"]
    if kind == "reasoning":
        if not item.get("encrypted_content") and not item.get("content"):
            return []
        out = {"type": "reasoning", "id": item["id"], "summary": item.get("summary") or []}
        if item.get("content"):
            out["content"] = item["content"]
        if item.get("encrypted_content"):
            out["encrypted_content"] = item["encrypted_content"]
        return [out]
    if kind == "message":
        parts = [{"type": "output_text", "text": p["text"]} for p in item["content"] if p["type"] == "output_text" and p["text"]]
        if not parts:
            return []  # an empty message (the image recording's) has nothing to send back
        message = {"type": "message", "role": "assistant", "content": parts}
        if item.get("phase"):  # commentary / final_answer goes back with the message
            message["phase"] = item["phase"]
        return [message]
    if kind == "function_call":
        call = {"type": "function_call", "call_id": item["call_id"], "name": item["name"],
                "arguments": item["arguments"], "id": item["id"]}
        call.update({k: item[k] for k in ("caller", "namespace") if item.get(k) is not None})
        return [call]
    # a built-in or server-side tool item goes back verbatim (tests/adapters/test_builtin_tools.py)
    return [item]


#: the item a tool result becomes, by the kind of call it answers (function_call otherwise)
_RESULT_ITEM = {
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "mcp_approval_request": "mcp_approval_response",
    "tool_search_call": "tool_search_output",
}


@pytest.mark.parametrize("rel", [rel for rel in RESPONSES_FIXTURES if KNOWN_FINISH[rel].kind != "error"])
def test_replay_state_round_trip(server: ReplayServer, rel: str) -> None:
    """The assistant turn of each recording goes back, on the next request, as exactly
    the recording's own output items (ids, encrypted reasoning, summaries, call ids)."""
    data = fixture_bytes(rel)
    server.add("/v1/", [Route(body=data), Route(body=fixture_bytes("openai-responses/text.sse"))])
    service, _ = responses_service(server)
    first = service.stream(request(Message.user("hi"))).result()
    history = [Message.user("hi"), first.message()]
    history += [Message.tool_result(call.id, "42") for call in first.tool_calls]
    history.append(Message.user("more"))
    assert service.stream(request(*history)).result().ok
    items = terminal_output(data)
    expected = [{"role": "user", "content": "hi"}]
    for item in items:
        expected += _replayed(item)
    answered = {item.get("call_id") or item.get("id"): item["type"] for item in items}
    results = [_RESULT_ITEM.get(answered.get(call.id, ""), "function_call_output") for call in first.tool_calls]
    sent = bodies(server)[1]["input"]
    assert sent[: len(expected)] == expected
    # their shapes: tests/adapters/test_builtin_tools.py
    assert [item.get("type") for item in sent[len(expected) : -1]] == results
    assert sent[-1] == {"role": "user", "content": "more"}
    plain = [c.id for c, kind in zip(first.tool_calls, results) if kind == "function_call_output"]
    assert [i for i in sent if i.get("type") == "function_call_output"] == [
        {"type": "function_call_output", "call_id": call_id, "output": "42"} for call_id in plain
    ]


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_two_turns_replay_reasoning_and_function_calls(server: ReplayServer) -> None:
    first_body = fixture_bytes("openai-responses/reasoning_summary_then_function_call_codex.sse")
    server.add("/v1/", [Route(body=first_body), Route(body=fixture_bytes("openai-responses/text_after_function_results.sse"))])
    service, _ = responses_service(server)
    history: list[Message] = [Message.system("Use the calculator."), Message.user("(12+7)*3*10?")]
    first = service.stream(request(*history, tools=(CALCULATOR,))).result()
    assert first.finish.kind == "tool-calls"
    (call,) = first.tool_calls
    history += [first.message(), Message.tool_result(call.id, "19")]
    second = service.stream(request(*history, tools=(CALCULATOR,))).result()
    assert second.text == "The final result is **570**."

    reasoning_item, call_item = terminal_output(first_body)
    sent = bodies(server)[1]
    assert sent["instructions"] == "Use the calculator."
    assert sent["input"] == [
        {"role": "user", "content": "(12+7)*3*10?"},
        {"type": "reasoning", "id": reasoning_item["id"], "summary": reasoning_item["summary"],
         "encrypted_content": reasoning_item["encrypted_content"]},
        {"type": "function_call", "call_id": call_item["call_id"], "name": "calculator",
         "arguments": call_item["arguments"], "id": call_item["id"]},
        {"type": "function_call_output", "call_id": call_item["call_id"], "output": "19"},
    ]


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_assistant_text_and_hand_written_turns(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=fixture_bytes("deepseek/responses_api_text.sse")), Route(body=TEXT_BODY)])
    service, _ = responses_service(server, send_item_ids=False)
    first = service.stream(request(Message.user("capital?"))).result()
    hand_written = Message.assistant([TextBlock("earlier"), ToolCallBlock("c9", "calculator", "")])
    service.stream(
        request(
            Message.user("hi"),
            hand_written,
            Message.tool_result("c9", "1"),
            Message.system("late system note"),
            Message.user("capital?"),
            first.message(),
            Message.user("sure?"),
        )
    ).result()
    sent = bodies(server)[1]
    assert "instructions" not in sent
    assert sent["input"] == [
        {"role": "user", "content": "hi"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "earlier"}]},
        {"type": "function_call", "call_id": "c9", "name": "calculator", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c9", "output": "1"},
        {"role": "system", "content": "late system note"},
        {"role": "user", "content": "capital?"},
        {"type": "reasoning", "summary": [],
         "content": [{"type": "reasoning_text", "text": "We need answer capital of France."}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "The capital of France is Paris."}], "phase": "final_answer"},
        {"role": "user", "content": "sure?"},
    ]


def test_replay_state_from_another_adapter_is_not_sent(server: ReplayServer) -> None:
    body = fixture_bytes("openai-responses/reasoning_item_then_function_call_gpt5.sse")
    server.add("/v1/", [Route(body=body), Route(body=fixture_bytes("openai-responses/text.sse"))])
    service, _ = responses_service(server)
    first = service.stream(request(Message.user("hi"))).result()
    other = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0)
    service.register_adapter(["other"], other)
    (call,) = first.tool_calls
    history = (Message.user("hi"), first.message(), Message.tool_result(call.id, "1"))
    service.stream(GenerateOptions(provider="other", model="m", messages=history)).result()
    assert bodies(server)[1]["input"][1:] == [
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": call.arguments},
        {"type": "function_call_output", "call_id": call.id, "output": "1"},
    ]


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_include_rejected_is_retried_without_and_remembered(server: ReplayServer) -> None:
    rejection = json.dumps({"error": {"message": "Encrypted content is not supported with this model.",
                                      "type": "invalid_request_error", "param": "include", "code": None}}).encode()
    server.add("/v1/", [
        Route(body=rejection, status=400, content_type="application/json"),
        Route(body=fixture_bytes("openai-responses/text.sse")),
    ])
    service, adapter = responses_service(server)
    assert service.stream(request(Message.user("hi"))).result().ok
    assert service.stream(request(Message.user("hi"))).result().ok
    sent = bodies(server)
    assert "include" in sent[0] and "include" not in sent[1] and "include" not in sent[2]
    assert adapter.wire.include_encrypted_reasoning is False and adapter.include_encrypted_reasoning is False


def test_other_400s_are_not_retried(server: ReplayServer) -> None:
    rejection = json.dumps({"error": {"message": "bad temperature", "type": "invalid_request_error"}}).encode()
    server.add("/v1/", Route(body=rejection, status=400, content_type="application/json"))
    service, adapter = responses_service(server)
    result = service.stream(request(Message.user("hi"))).result()
    assert result.failure is not None and result.failure.code == "INVALID_REQUEST"
    assert len(server.requests) == 1 and adapter.wire.include_encrypted_reasoning is True


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_in_band_quota_error_over_http(server: ReplayServer) -> None:
    server.add("/v1/", fixture_bytes("openai-responses/error_event_insufficient_quota.sse"))
    service, _ = responses_service(server)
    result = service.stream(request(Message.user("hi"))).result()
    assert result.failure is not None and result.failure.code == "QUOTA"
    assert result.failure.provider == PROVIDER
    assert len(server.requests) == 1


# moved from tests/adapters/test_openai_chat_dialects.py
def test_responses_openrouter_framing_over_http(server: ReplayServer) -> None:
    server.add("/api/v1/", fixture_bytes("openrouter/responses_api_reasoning_text_gpt_oss.sse"))
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/api/v1", key_env=None)
    service = LlmService(check_contract=True)
    service.register_adapter(["openrouter-responses"], adapter)
    result = service.stream(GenerateOptions(provider="openrouter-responses", model="m",
                                            messages=(Message.user("2+2?"),))).result()
    assert (result.reasoning.startswith("The user asks"), result.text) == (True, "4")
    assert server.requests[0].path == "/api/v1/responses"


# --------------------------------------------------------------------------- models


def test_list_models(server: ReplayServer) -> None:
    payload = {"object": "list", "data": [
        {"id": "gpt-5", "object": "model", "owned_by": "openai"},
        {"id": "o3-mini", "object": "model", "name": "o3 mini"},
        {"object": "model"},  # no id: skipped
    ]}
    server.add("/v1/models", Route(body=json.dumps(payload).encode(), content_type="application/json", chunked=False))
    service, _ = responses_service(server)
    assert service.list_models(PROVIDER) == [ModelInfo("gpt-5", "gpt-5"), ModelInfo("o3-mini", "o3 mini")]
    (recorded,) = server.requests
    assert recorded.method == "GET" and recorded.path == "/v1/models"
    assert recorded.headers["authorization"] == f"Bearer {KEY}"


def test_provider_info() -> None:
    service = LlmService()
    service.register_adapter([PROVIDER], adapter())
    assert [(p.id, p.name) for p in service.list_providers()] == [(PROVIDER, "OpenAI Responses")]
