"""GeminiInteractionsAdapter over loopback HTTP: the request (``POST /v1beta/interactions``,
the key only in ``x-goog-api-key``, the pinned ``Api-Revision``), the history as steps, a
second turn that sends every signature back on its step, ``previous_interaction_id``, an
error mid-stream, and resumption of a cut background interaction (``GET
/v1beta/interactions/{id}?stream=true&last_event_id=...``, the cursor, the cancel).

The streams are the written ones of tests/fixtures/real/gemini-interactions (PROVENANCE.md)."""

from __future__ import annotations

import json
from dataclasses import replace
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from dshstream._adapters import resumption
from dshstream._adapters.gemini_interactions import API_REVISION, GeminiInteractionsAdapter
from dshstream._core.assembler import assemble
from dshstream._core.errors import ConfigurationError
from dshstream._core.parts import ImagePart
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._core.response_format import JsonSchema
from dshstream._core.types import Finish, ReasoningBlock, StreamChunk, TextBlock, ToolCallBlock
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._transport.memory import MemoryAnswer, MemoryTransport, SentRequest
from helpers import SkippedSleeps, fake_key, fixture_bytes

KEY = fake_key("AIzaSy", 33)  # CANARY: a Google-shaped fake key, built at run time
PROVIDER = "gemini-interactions"
WEATHER = ToolSpec(
    name="get_weather",
    description="Get the current weather in a given location",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
)
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000")


def setup(server: ReplayServer, **adapter_options: Any) -> tuple[LlmService, GeminiInteractionsAdapter]:
    adapter = GeminiInteractionsAdapter(api_key=KEY, base_url=server.url, **adapter_options)
    service = LlmService(check_contract=True)
    service.register_adapter([PROVIDER], adapter)
    return service, adapter


def options(messages: list[Message], **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider=PROVIDER, model="gemini-3-flash-preview", messages=tuple(messages), **fields)


def serve(server: ReplayServer, *names: str) -> None:
    server.add("/v1beta/interactions", [Route(body=fixture_bytes(f"gemini-interactions/{name}")) for name in names])


def test_first_turn_request_and_headers(server: ReplayServer) -> None:
    serve(server, "google_search_then_function_call.sse")
    service, _ = setup(server)
    history = [Message.system("You are terse."), Message.user("What is the weather on the highest peak?")]
    result = service.stream(
        options(history, tools=(WEATHER,), reasoning_effort="high", max_tokens=1000, temperature=0.4, stop=("END",),
                extra_body={"service_tier": "flex"})
    ).result()
    assert result.finish.kind == "tool-calls"
    assert [c.name for c in result.tool_calls] == ["get_weather"]
    recorded = server.requests[-1]
    assert (recorded.method, recorded.path) == ("POST", "/v1beta/interactions")
    assert recorded.headers["x-goog-api-key"] == KEY
    assert recorded.headers["api-revision"] == API_REVISION == "2026-05-20"
    assert recorded.headers["accept"] == "text/event-stream"
    assert "authorization" not in recorded.headers and KEY not in recorded.path
    assert recorded.body == {
        "model": "gemini-3-flash-preview",
        "stream": True,
        "input": [{"type": "user_input", "content": [{"type": "text", "text": "What is the weather on the highest peak?"}]}],
        "system_instruction": "You are terse.",
        "tools": [{"type": "function", "name": "get_weather", "description": WEATHER.description,
                   "parameters": dict(WEATHER.parameters)}],
        "generation_config": {"max_output_tokens": 1000, "temperature": 0.4, "stop_sequences": ["END"],
                              "thinking_level": "high", "thinking_summaries": "auto"},
        "service_tier": "flex",
    }


@pytest.mark.parametrize(("effort", "config"), [
    ("off", {"thinking_level": "minimal"}),
    ("minimal", {"thinking_level": "minimal", "thinking_summaries": "auto"}),
    ("max", {"thinking_level": "high", "thinking_summaries": "auto"}),
])
def test_reasoning_effort(effort: str, config: dict[str, Any]) -> None:
    adapter = GeminiInteractionsAdapter(api_key=KEY)
    body = adapter.wire.build_body(options([Message.user("hi")], reasoning_effort=effort))
    assert body["generation_config"] == config


def test_response_format_and_model_prefix() -> None:
    adapter = GeminiInteractionsAdapter(api_key=KEY, api_revision=None)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    body = adapter.wire.build_body(
        GenerateOptions(provider=PROVIDER, model="models/gemini-3-flash-preview", messages=(Message.user("hi"),),
                        response_format=JsonSchema(name="answer", schema=schema))
    )
    assert body["model"] == "gemini-3-flash-preview"
    assert body["response_format"] == {"type": "text", "mime_type": "application/json", "schema": schema}
    assert adapter.wire.protocol_headers() == {}


def test_history_without_replay_state_is_rebuilt_as_steps() -> None:
    adapter = GeminiInteractionsAdapter(api_key=KEY)
    history = [
        Message.user("Look:", ImagePart(data=PNG, media_type="image/png")),
        Message.assistant([ReasoningBlock("unsigned"), ReasoningBlock("Think.", signature="sig-1"),
                           TextBlock("Checking."),
                           ToolCallBlock(id="c1", name="get_weather", arguments='{"location": "Paris"}')]),
        Message.tool_result("c1", '{"temp": 21}'),
        Message.tool_result("c1", "boom", is_error=True),
        Message.user("And now?"),
    ]
    steps = adapter.wire.build_body(options(history))["input"]
    assert steps == [
        {"type": "user_input", "content": [{"type": "text", "text": "Look:"},
                                           {"type": "image", "data": ImagePart(data=PNG, media_type="image/png").base64,
                                            "mime_type": "image/png"}]},
        {"type": "thought", "signature": "sig-1", "summary": [{"type": "text", "text": "Think."}]},
        {"type": "model_output", "content": [{"type": "text", "text": "Checking."}]},
        {"type": "function_call", "id": "c1", "name": "get_weather", "arguments": {"location": "Paris"}},
        {"type": "function_result", "call_id": "c1", "result": '{"temp": 21}', "name": "get_weather"},
        {"type": "function_result", "call_id": "c1", "result": "boom", "name": "get_weather", "is_error": True},
        {"type": "user_input", "content": [{"type": "text", "text": "And now?"}]},
    ]


def test_a_replayed_call_the_assembler_dropped_is_not_sent_and_a_kept_one_names_its_result() -> None:
    adapter = GeminiInteractionsAdapter(api_key=KEY)
    replay = {
        "wire": "gemini-interactions",
        "steps": [
            {"type": "thought", "signature": "sig-1"},
            "not a step",
            {"type": "function_call", "id": "w1", "name": "get_weather", "arguments": {"location": "Paris"}},
            {"type": "function_call", "id": "w2", "name": "get_weather", "arguments": {"location": "Oslo"}},
        ],
        "call_ids": ["c1", "c2"],
    }
    kept = ToolCallBlock(id="c1", name="get_weather", arguments='{"location": "Paris"}')
    assistant = Message("assistant", (kept,), provider=PROVIDER, replay_state=replay)
    history = [Message.user("Weather?"), assistant, Message.tool_result("c1", '{"temp": 21}')]
    steps = adapter.wire.build_body(options(history))["input"]
    assert steps == [
        {"type": "user_input", "content": [{"type": "text", "text": "Weather?"}]},
        {"type": "thought", "signature": "sig-1"},
        {"type": "function_call", "id": "w1", "name": "get_weather", "arguments": {"location": "Paris"}},
        {"type": "function_result", "call_id": "w1", "result": '{"temp": 21}', "name": "get_weather"},
    ]  # c2 was dropped (max-tokens); c1's result goes to its wire id


def test_list_models_and_the_api_version_in_its_path(server: ReplayServer) -> None:
    payload = {"models": [{"name": "models/gemini-3-flash-preview", "displayName": "Gemini 3 Flash"}]}
    server.add("/v1alpha/models", Route(body=json.dumps(payload).encode(), content_type="application/json", chunked=False))
    service, adapter = setup(server, api_version="/v1alpha/")
    assert adapter.api_version == "v1alpha"
    assert [(m.id, m.name) for m in service.list_models(PROVIDER)] == [("gemini-3-flash-preview", "Gemini 3 Flash")]
    recorded = server.requests[-1]
    assert recorded.method == "GET" and recorded.path == "/v1alpha/models?pageSize=1000"
    assert recorded.headers["x-goog-api-key"] == KEY


def test_second_turn_sends_every_signature_back_on_its_step(server: ReplayServer) -> None:
    serve(server, "google_search_then_function_call.sse", "text_thought_signature.sse")
    service, _ = setup(server)
    first = service.stream(options([Message.user("Weather on the highest peak?")], tools=(WEATHER,))).result()
    (call,) = first.tool_calls
    history = [Message.user("Weather on the highest peak?"), first.message(),
               Message.tool_result(call.id, '{"weather": "Sunny"}')]
    second = service.stream(options(history, tools=(WEATHER,))).result()
    assert second.text.startswith("1, 2, 3")
    sent = server.requests[-1].body["input"]
    assert sent[1:] == [*first.replay_state["steps"],
                        {"type": "function_result", "call_id": "ktr5aysg", "result": '{"weather": "Sunny"}',
                         "name": "get_weather"}]
    signatures = [step.get("signature") for step in sent[1:4]]
    assert all(signatures) and len(set(signatures)) == 2  # the search call's and the thought's
    assert "previous_interaction_id" not in server.requests[-1].body


def test_previous_interaction_sends_only_the_new_turn(server: ReplayServer) -> None:
    serve(server, "google_search_then_function_call.sse", "text_thought_signature.sse")
    service, _ = setup(server, previous_interaction=True)
    first = service.stream(options([Message.user("Weather?")], tools=(WEATHER,))).result()
    (call,) = first.tool_calls
    history = [Message.system("Be brief."), Message.user("Weather?"), first.message(),
               Message.tool_result(call.id, "sunny")]
    service.stream(options(history, tools=(WEATHER,))).result()
    body = server.requests[-1].body
    assert body["previous_interaction_id"] == first.replay_state["interaction_id"]
    assert body["input"] == [{"type": "function_result", "call_id": call.id, "result": "sunny", "name": "get_weather"}]
    assert body["system_instruction"] == "Be brief." and body["tools"][0]["name"] == "get_weather"


def test_error_event_mid_stream_over_http(server: ReplayServer) -> None:
    serve(server, "error_gateway_timeout.sse")
    service, _ = setup(server, max_retries=0)
    result = service.stream(options([Message.user("Write a guide.")])).result()
    assert result.text == "Here is the first part of the guide."
    assert result.finish.failure is not None and result.finish.failure.code == "TIMEOUT"
    assert len(server.requests) == 1  # content arrived: never resent


def test_bad_settings_are_rejected_naming_the_field() -> None:
    with pytest.raises(ConfigurationError, match="api_revision"):
        GeminiInteractionsAdapter(api_key=KEY, api_revision="  ")
    with pytest.raises(ConfigurationError, match="previous_interaction"):
        GeminiInteractionsAdapter(api_key=KEY, previous_interaction="yes")  # type: ignore[arg-type]


def test_diagnostics_hold_no_text() -> None:
    adapter = GeminiInteractionsAdapter(api_key=KEY)
    summary = adapter.wire.diagnostics(options([Message.user("a secret prompt")], tools=(WEATHER,)))
    assert summary["last_steps"] == ["user_input"] and summary["tool_count"] == 1
    assert "secret" not in json.dumps(summary)


# --------------------------------------------------------------------------- resumption


def events_of(name: str) -> list[bytes]:
    data = fixture_bytes(f"gemini-interactions/{name}")
    return [part + b"\n\n" for part in data.split(b"\n\n") if part.strip()]


def event_id(event: bytes) -> str | None:
    found = re.search(rb'"event_id":"([^"]+)"', event)
    return found.group(1).decode() if found is not None else None


INTERACTION = "v1_ChdnR3ZxYWZpSW9JZWxqTWNQLTh6eXNRZxIXZ0d2cWFmaUlvSWVsak1jUC04enlzUWc"


class Background:
    """A loopback background interaction: the POST stream cut after ``cut`` events; a GET
    with ``stream=true`` continues after its ``last_event_id`` (from the start without
    one); cancels counted."""

    def __init__(self, events: list[bytes], cut: int, *, cut_again: int | None = None) -> None:
        self.events = events
        self.cut = cut
        self.cut_again = cut_again
        self.gets: list[str | None] = []
        self.cancels = 0
        self.transport = MemoryTransport(handler=self.handle)

    def handle(self, sent: SentRequest) -> MemoryAnswer:
        if sent.method == "POST" and sent.url.endswith("/cancel"):
            self.cancels += 1
            return MemoryAnswer.of_json({"id": INTERACTION, "status": "cancelled"})
        if sent.method == "POST":
            return MemoryAnswer(self.events[: self.cut])
        query = parse_qs(urlsplit(sent.url).query)
        assert query["stream"] == ["true"]
        after = query.get("last_event_id", [None])[0]
        self.gets.append(after)
        ids = [event_id(e) for e in self.events]
        rest = self.events[ids.index(after) + 1 :] if after is not None else self.events
        if self.cut_again is not None and len(self.gets) == 1:
            rest = rest[: self.cut_again]
        return MemoryAnswer(rest)


def adapter(transport: MemoryTransport) -> GeminiInteractionsAdapter:
    return GeminiInteractionsAdapter(api_key=KEY, transport=transport, max_retries=0)


def resumable(**extra: Any) -> GenerateOptions:
    return options([Message.user("hi")], resumable=True, **extra)


def uncut(name: str) -> list[StreamChunk]:
    events = events_of(name)
    return list(adapter(Background(events, len(events)).transport).stream(resumable()))


@pytest.mark.parametrize("name", ["parallel_function_calls_streamed_args.sse", "thinking_summary.sse",
                                  "text_thought_signature.sse"])
def test_every_cut_point_delivers_the_uncut_stream_once(name: str) -> None:
    events = events_of(name)
    expected = uncut(name)
    assert type(expected[-1]) is Finish and expected[-1].reason.failure is None
    completed = next(i for i, e in enumerate(events) if b"interaction.completed" in e)
    for cut in range(1, len(events)):
        server = Background(events, cut)
        got = list(adapter(server.transport).stream(resumable()))
        assert got == expected, cut
        assert server.cancels == 0
        if cut > completed:  # the completed event ended the stream: nothing to resume
            assert server.gets == []
            continue
        # after the last event id read; with none in the stream, from its start
        assert server.gets == [event_id(events[cut - 1])]
        assert [r.method for r in server.transport.requests] == ["POST", "GET"]  # never resent
        url = server.transport.requests[1].url
        assert url.startswith(f"https://generativelanguage.googleapis.com/v1beta/interactions/{INTERACTION}?")


def test_request_is_background_and_stored_only_when_resumable() -> None:
    events = events_of("thinking_summary.sse")
    server = Background(events, len(events))
    list(adapter(server.transport).stream(resumable()))
    body = server.transport.requests[0].json()
    assert body["background"] is True and body["store"] is True
    server = Background(events, len(events))
    list(adapter(server.transport).stream(options([Message.user("hi")])))
    body = server.transport.requests[0].json()
    assert "background" not in body and "store" not in body


def test_a_cut_continuation_is_resumed_again() -> None:
    name = "parallel_function_calls_streamed_args.sse"
    events = events_of(name)
    server = Background(events, 4, cut_again=5)
    assert list(adapter(server.transport).stream(resumable())) == uncut(name)
    assert server.gets == [event_id(events[3]), event_id(events[8])]


def test_unresumable_end_carries_a_cursor_that_service_resume_continues(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps = SkippedSleeps()  # the backoffs between resume tries recorded, not slept
    monkeypatch.setattr(resumption, "time", sleeps)
    name = "parallel_function_calls_streamed_args.sse"
    events = events_of(name)
    cut = 9
    dead = MemoryTransport(handler=lambda sent: MemoryAnswer(events[:cut]) if sent.method == "POST"
                           else MemoryAnswer(b"", status=503))
    got = list(adapter(dead).stream(resumable()))
    assert [r.method for r in dead.requests] == ["POST"] + ["GET"] * resumption.MAX_TRIES
    assert sleeps.slept[:4] == [0.25, 0.5, 1.0, 2.0]  # a doubling backoff between the tries
    finish = got[-1]
    assert type(finish) is Finish and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"
    cursor = finish.metadata.resume_cursor  # type: ignore[union-attr]
    assert cursor == finish.reason.failure.diagnostics["resume_cursor"]  # type: ignore[index]
    assert cursor == {
        "provider": PROVIDER,
        "response_id": INTERACTION,
        "sequence_number": cut - 1,
        "wire": "gemini-interactions",
        "base_url": "https://generativelanguage.googleapis.com",
        "event_id": event_id(events[cut - 1]),
    }
    assert KEY not in json.dumps(cursor)
    cursor = json.loads(json.dumps(cursor))  # another process
    server = Background(events, len(events))
    service = LlmService()
    service.register_adapter([PROVIDER], adapter(server.transport))
    rest = list(service.resume(cursor))
    assert server.gets == [cursor["event_id"]]
    assert [r.method for r in server.transport.requests] == ["GET"]
    # the continuation holds the rest only: the first call's arguments (its start was read
    # before the cut, so its id is not known here), the second call whole, the same finish
    whole = assemble(uncut(name))
    resumed = assemble(rest)
    assert resumed.finish == whole.finish and resumed.usage == whole.usage
    assert [c.arguments for c in resumed.tool_calls] == [c.arguments for c in whole.tool_calls]
    assert resumed.tool_calls[1] == whole.tool_calls[1]


def test_a_cursor_without_an_event_id_replays_past_what_was_read() -> None:
    name = "text_thought_signature.sse"  # no event ids
    events = events_of(name)
    server = Background(events, len(events))
    cursor = {"provider": PROVIDER, "response_id": INTERACTION, "sequence_number": 6, "wire": PROVIDER}
    rest = assemble([chunk for batch in adapter(server.transport).resume(cursor) for chunk in batch])
    assert server.gets == [None]
    whole = assemble(uncut(name))
    assert whole.text.endswith(rest.text) and len(rest.text) < len(whole.text)
    assert rest.finish == whole.finish


def test_a_cursor_of_another_wire_is_rejected() -> None:
    responses = {"provider": PROVIDER, "response_id": "resp_1", "sequence_number": 1, "wire": "openai-responses"}
    with pytest.raises(ConfigurationError, match="wire"):
        adapter(MemoryTransport(MemoryAnswer(b""))).resume(responses)
    with pytest.raises(ConfigurationError, match="event_id"):
        LlmService().resume({**responses, "wire": PROVIDER, "event_id": 7})


def test_close_of_an_unfinished_stream_cancels_once() -> None:
    events = events_of("thinking_summary.sse")
    server = Background(events, len(events))
    stream = adapter(server.transport).stream(resumable())
    next(stream)
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    assert server.cancels == 1
    assert server.transport.requests[-1].url.endswith(f"/v1beta/interactions/{INTERACTION}/cancel")


def test_resumable_false_keeps_the_cut() -> None:
    events = events_of("thinking_summary.sse")
    server = Background(events, 5)
    got = list(adapter(server.transport).stream(options([Message.user("hi")])))
    assert got[-1].reason.failure.code == "STREAM_CLOSED"  # type: ignore[union-attr]
    assert server.gets == [] and got[-1].metadata.resume_cursor is None  # type: ignore[union-attr]


def test_resume_over_http_get() -> None:
    name = "thinking_summary.sse"
    events = events_of(name)
    cut = 6
    after = event_id(events[cut - 1])
    rest = b"".join(events[cut:])
    routes = {"/v1beta/interactions": Route(body=b"", script=events[:cut]),
              f"/v1beta/interactions/{INTERACTION}": Route(body=rest)}
    with ReplayServer(routes) as server:
        live = GeminiInteractionsAdapter(api_key=KEY, base_url=server.url, max_retries=0)
        got = list(live.stream(resumable()))
        methods = [(r.method, r.path) for r in server.requests]
        headers = server.requests[1].headers
    assert assemble(got) == assemble(uncut(name))
    assert methods == [("POST", "/v1beta/interactions"),
                       ("GET", f"/v1beta/interactions/{INTERACTION}?stream=true&last_event_id={after}")]
    assert headers["x-goog-api-key"] == KEY and headers["api-revision"] == API_REVISION


def test_a_model_refusing_minimal_thinking_is_asked_again_with_low_and_remembered(server: ReplayServer) -> None:
    """Gemini Flash 3.7 and later refuse ``thinking_level: minimal`` with a 400
    (vercel/ai#19031; the message's wording here is ours, the match needs only
    "thinking" and "minimal"): asked once more with ``low``, which the model keeps."""
    refusal = json.dumps({"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                    "message": "Thinking level MINIMAL is not supported for this model."}}).encode()
    text = fixture_bytes("gemini-interactions/recorded_basic_text.sse")
    server.add("/v1beta/interactions", [Route(body=refusal, status=400, content_type="application/json"),
                                        Route(body=text), Route(body=text), Route(body=text)])
    service, adapter = setup(server, max_retries=0)
    flash = replace(options([Message.user("hi")], reasoning_effort="minimal"), model="gemini-3.7-flash")
    assert service.stream(flash).result().ok
    assert service.stream(flash).result().ok
    assert service.stream(replace(flash, model="gemini-3-flash-preview")).result().ok
    levels = [r.body["generation_config"]["thinking_level"] for r in server.requests]
    assert levels == ["minimal", "low", "low", "minimal"]
    assert adapter.wire.no_minimal == {"gemini-3.7-flash"}


def test_another_400_about_thinking_is_not_retried(server: ReplayServer) -> None:
    refusal = json.dumps({"error": {"code": 400, "message": "Thinking budget is out of range."}}).encode()
    server.add("/v1beta/interactions", Route(body=refusal, status=400, content_type="application/json"))
    service, adapter = setup(server, max_retries=0)
    result = service.stream(options([Message.user("hi")], reasoning_effort="high")).result()
    assert not result.ok and len(server.requests) == 1 and adapter.wire.no_minimal == set()
