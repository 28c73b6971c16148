"""CohereAdapter and CohereWire (dshstream/_adapters/cohere.py): the Chat v2 request, the
history in Cohere's form, the adapter over loopback HTTP with real recorded streams
(tests/fixtures/real/cohere), the route and the model list."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream import GenerateOptions, JsonMode, JsonSchema, LlmService, Message, ToolSpec
from dshstream._core.assembler import assemble
from dshstream._core.decode import decode
from dshstream._core.errors import LlmError
from dshstream.adapters import CohereAdapter, CohereWire
from dshstream.testing import ReplayServer, Route
from helpers import fixture_bytes

KEY = "co-test-0000000000000000"  # CANARY: a fake key
WEATHER = ToolSpec(
    "weather",
    "Gets current weather for a location",
    {
        "type": "object",
        "properties": {
            "latitude": {"type": "string", "description": "Latitude (e.g., 52.5200)"},
            "longitude": {"type": "string", "description": "Longitude (e.g., 13.4050)"},
        },
        "required": ["latitude", "longitude"],
        "additionalProperties": False,
    },
)
QUESTION = "What's the weather in Berlin? (52.5200, 13.4050)"
RESULT = "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h"


def wire() -> CohereWire:
    return CohereAdapter(api_key=KEY, base_url="http://127.0.0.1:9").wire


def opts(*messages: Message, **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="cohere", model="command-a-03-2025", messages=messages, **fields)


def test_a_plain_request() -> None:
    body = wire().build_body(opts(Message.system("Be brief."), Message.user("Hi"), max_tokens=50, temperature=0.2,
                                  stop=("\n\n",)))
    assert body == {
        "model": "command-a-03-2025",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "stream": True,
        "max_tokens": 50,
        "temperature": 0.2,
        "stop_sequences": ["\n\n"],
    }
    assert wire().endpoint(opts(Message.user("Hi"))) == "http://127.0.0.1:9/v2/chat"


@pytest.mark.parametrize(
    ("effort", "thinking"),
    [("off", {"type": "disabled"}), ("low", {"type": "enabled", "token_budget": 2048}),
     ("max", {"type": "enabled", "token_budget": 24576})],
)
def test_reasoning_effort_is_thinking(effort: str, thinking: dict[str, Any]) -> None:
    assert wire().build_body(opts(Message.user("Hi"), reasoning_effort=effort))["thinking"] == thinking


def test_thinking_budgets_are_the_callers() -> None:
    adapter = CohereAdapter(api_key=KEY, thinking_budgets={"low": 500})
    assert adapter.wire.build_body(opts(Message.user("Hi"), reasoning_effort="low"))["thinking"]["token_budget"] == 500


def test_response_formats() -> None:
    schema = {"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"]}
    body = wire().build_body(opts(Message.user("sqrt 64?"), response_format=JsonSchema("answer", schema)))
    assert body["response_format"] == {"type": "json_object", "json_schema": schema}
    assert wire().build_body(opts(Message.user("x"), response_format=JsonMode()))["response_format"] == {
        "type": "json_object"}


def test_extra_body_goes_last_for_documents() -> None:
    documents = [{"id": "doc:0", "data": {"title": "facts.txt", "text": "Ruby was created by Matz."}}]
    body = wire().build_body(opts(Message.user("Who?"), extra_body={"documents": documents}))
    assert body["documents"] == documents


def test_the_recorded_conversation_is_rebuilt_from_the_assembled_turn() -> None:
    # ruby_llm's second request of the recording (the call answered) is what Cohere took;
    # the assembled turn goes back the same, with its tool plan and no empty text part
    first = assemble(list(decode(fixture_bytes("cohere/command_a_tool_plan_tool_call.sse"), wire="cohere")))
    turn = first.message()
    (call,) = turn.tool_calls
    history = (Message.user(QUESTION), turn, Message.tool_result(call.id, RESULT))
    body = wire().build_body(opts(*history, tools=[WEATHER]))
    recorded_tools = [{"type": "function", "function": {
        "name": "weather", "description": WEATHER.description, "parameters": dict(WEATHER.parameters)}}]
    assert body["tools"] == recorded_tools
    user, assistant, tool = body["messages"]
    assert user == {"role": "user", "content": QUESTION}
    assert assistant == {
        "role": "assistant",
        "tool_plan": "I will use the weather tool to find the weather in Berlin.",
        "tool_calls": [{"id": "weather_vvavrb8p34fk", "type": "function",
                        "function": {"name": "weather", "arguments": call.arguments}}],
    }
    assert json.loads(call.arguments) == {"latitude": "52.5200", "longitude": "13.4050"}
    assert tool == {"role": "tool", "tool_call_id": "weather_vvavrb8p34fk", "content": RESULT}


def test_thinking_goes_back_only_to_cohere() -> None:
    answer = assemble(list(decode(fixture_bytes("cohere/command_a_plus_thinking_document_citations.sse"),
                                  wire="cohere")))
    (sent,) = wire().convert_message(answer.message())
    assert [part["type"] for part in sent["content"]] == ["thinking", "text"]
    assert sent["content"][0]["thinking"] == answer.reasoning
    foreign = Message.assistant(answer.blocks)  # the same blocks without Cohere's replay state
    (plain,) = wire().convert_message(foreign)
    assert plain == {"role": "assistant", "content": [{"type": "text", "text": answer.text}]}


def test_images_go_as_image_urls_and_documents_are_refused() -> None:
    from dshstream import DocumentPart, ImagePart

    png = ImagePart.from_url("https://example.com/chart.png")
    (message,) = wire().convert_message(Message.user("What does it show?", png))
    assert message["content"] == [
        {"type": "text", "text": "What does it show?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}},
    ]
    pdf = DocumentPart.from_bytes(b"%PDF-1.4\n%%EOF\n", name="report.pdf")
    with pytest.raises(LlmError, match="Cohere does not take document parts"):
        wire().build_body(opts(Message.user("Read it", pdf)))


def test_prompt_caching_is_automatic_and_cache_points_are_refused() -> None:
    from dshstream.adapters import PromptCache
    from dshstream import CachePoint

    body = wire().build_body(opts(Message.user("Hi"), prompt_cache=PromptCache(automatic=True)))
    assert "cache" not in json.dumps(body)
    with pytest.raises(LlmError, match="Cohere"):
        wire().build_body(opts(Message.user("Hi", cache=CachePoint())))


def test_streams_over_http_with_bearer_auth() -> None:
    with ReplayServer({"/v2/chat": fixture_bytes("cohere/command_a_tool_result_citation.sse")}) as server:
        service = LlmService()
        service.register_adapter(["cohere"], CohereAdapter(api_key=KEY, base_url=server.url))
        with service.stream(opts(Message.user("Weather?"))) as stream:
            result = stream.result()
        (request,) = server.requests
    assert request.path == "/v2/chat"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body["stream"] is True and request.body["model"] == "command-a-03-2025"
    assert result.text == "The current weather in Berlin is 15°C with winds of 10 km/h."
    assert result.citations[0].kind == "tool"


def test_an_http_error_is_classified_and_the_key_never_shows() -> None:
    body = json.dumps({"id": "e1", "message": f"invalid api token {KEY}"}).encode()
    route = Route(body=body, status=401, content_type="application/json")
    with ReplayServer({"/v2/chat": route}) as server:
        service = LlmService()
        service.register_adapter(["cohere"], CohereAdapter(api_key=KEY, base_url=server.url))
        with service.stream(opts(Message.user("Hi"))) as stream:
            result = stream.result()
    assert result.failure is not None and result.failure.code == "AUTH"
    assert KEY not in repr(result.failure)


def test_the_model_list() -> None:
    listing = {"models": [{"name": "command-a-03-2025", "endpoints": ["chat"]},
                          {"name": "command-a-vision-07-2025", "endpoints": ["chat"]}]}
    route = Route(body=json.dumps(listing).encode(), content_type="application/json")
    with ReplayServer({"/v1/models": route}) as server:
        models = CohereAdapter(api_key=KEY, base_url=server.url).list_models("cohere")
        (request,) = server.requests
    assert [m.id for m in models] == ["command-a-03-2025", "command-a-vision-07-2025"]
    assert request.path == "/v1/models?endpoint=chat"


@pytest.mark.parametrize("variable", ["COHERE_API_KEY", "CO_API_KEY"])
def test_the_route_from_the_environment(variable: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from dshstream import default_service

    for name in ("COHERE_API_KEY", "CO_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, KEY)
    adapter = default_service().adapter_for("cohere")
    assert isinstance(adapter, CohereAdapter) and adapter.base_url == "https://api.cohere.com"
