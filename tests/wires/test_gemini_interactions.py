"""The Gemini Interactions wire (dshstream._core.wires.gemini_interactions).

The streams under tests/fixtures/real/gemini-interactions are written from the documented
shapes (PROVENANCE.md says so), but the three ``recorded_*`` ones, recorded from the live
API (gemini-2.5-flash); each decodes to a contract-valid stream whose text,
reasoning, signatures, calls, usage and finish are asserted against the values in its
events, whole, byte by byte and at random split points (hypothesis). Synthetic streams
cover the position rules (event ids, a continuation replayed from the start), cuts, errors,
unknown events, annotations and usage arithmetic.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import StreamDecoder, decode
from dshstream._core.types import FileBlock, ReasoningBlock, TextBlock, TokenUsage, ToolCallBlock, ToolCallDelta
from dshstream._core.wires.gemini_interactions import GeminiInteractionsTranslator, interactions_usage
from helpers import FIXTURES, fixture_bytes, split_at

WIRE = "gemini-interactions"
FILES = sorted(p.name for p in (FIXTURES / WIRE).glob("*.sse"))


def run(data: bytes | list[bytes], **options: Any) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=WIRE, **options)))


def load(name: str) -> bytes:
    return fixture_bytes(f"{WIRE}/{name}")


def events(name: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in load(name).decode().splitlines()
            if line.startswith("data: {")]


def sse(*payloads: dict[str, Any], done: bool = True) -> bytes:
    """Interactions framing: ``event: <event_type>`` + compact data, then ``[DONE]``."""
    out = b"".join(
        f"event: {p['event_type']}\ndata: {json.dumps(p, separators=(',', ':'))}\n\n".encode() for p in payloads
    )
    return out + (b"event: done\ndata: [DONE]\n\n" if done else b"")


def start(index: int, step: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"index": index, "step": step, "event_type": "step.start", **extra}


def delta(index: int, body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"index": index, "delta": body, "event_type": "step.delta", **extra}


def stop(index: int, **extra: Any) -> dict[str, Any]:
    return {"index": index, "event_type": "step.stop", **extra}


def completed(status: str = "completed", usage: dict[str, Any] | None = None) -> dict[str, Any]:
    interaction: dict[str, Any] = {"id": "v1_x", "status": status}
    if usage is not None:
        interaction["usage"] = usage
    return {"interaction": interaction, "event_type": "interaction.completed"}


CREATED = {"interaction": {"id": "v1_x", "status": "in_progress", "model": "gemini-3-flash-preview"},
           "event_type": "interaction.created"}


def text_stream(*pieces: str) -> list[dict[str, Any]]:
    return [CREATED, start(0, {"type": "model_output"}),
            *(delta(0, {"type": "text", "text": p}) for p in pieces), stop(0), completed()]


# --------------------------------------------------------------------------- the fixtures


def test_every_fixture_is_here() -> None:
    assert FILES == [
        "error_gateway_timeout.sse",
        "google_search_then_function_call.sse",
        "image_text_incomplete.sse",
        "parallel_function_calls_streamed_args.sse",
        "recorded_basic_text.sse",
        "recorded_function_call.sse",
        "recorded_google_search.sse",
        "recorded_image_input_incomplete_flash_lite.sse",
        "recorded_thinking_summary_event_metadata_usage.sse",
        "text_thought_signature.sse",
        "thinking_summary.sse",
    ]


def test_documented_text_stream() -> None:
    name = "text_thought_signature.sse"
    raw = events(name)
    result = run(load(name))
    text = "".join(e["delta"]["text"] for e in raw if e["event_type"] == "step.delta" and e["delta"]["type"] == "text")
    signature = next(e["delta"]["signature"] for e in raw if e["event_type"] == "step.delta"
                     and e["delta"]["type"] == "thought_signature")
    assert result.text == text and text.startswith("1, 2, 3") and text.endswith("24, 25")
    assert [type(b) for b in result.blocks] == [ReasoningBlock, TextBlock]
    assert result.blocks[0] == ReasoningBlock("", signature=signature)
    usage = raw[-1]["interaction"]["usage"]
    assert result.usage == TokenUsage(
        input_tokens=usage["total_input_tokens"],
        output_tokens=usage["total_output_tokens"] + usage["total_thought_tokens"],
        cache_read_tokens=0,
        reasoning_tokens=usage["total_thought_tokens"],
    )
    # the documented total is the sum of the disjoint counts
    assert usage["total_tokens"] == result.usage.input_tokens + result.usage.output_tokens
    assert (result.finish.kind, result.finish.raw) == ("stop", "completed")
    assert result.metadata is not None
    assert result.metadata.response_id == raw[0]["interaction"]["id"]
    assert result.metadata.model == "gemini-3-flash-preview"
    assert result.replay_state == {
        "wire": WIRE,
        "interaction_id": raw[0]["interaction"]["id"],
        "steps": [{"type": "thought", "signature": signature},
                  {"type": "model_output", "content": [{"type": "text", "text": text}]}],
    }


def _recorded_usage(raw: list[dict[str, Any]]) -> TokenUsage:
    usage = raw[-1]["interaction"]["usage"]
    return TokenUsage(
        input_tokens=usage["total_input_tokens"] + usage["total_tool_use_tokens"],
        output_tokens=usage["total_output_tokens"] + usage["total_thought_tokens"],
        cache_read_tokens=usage["total_cached_tokens"],
        reasoning_tokens=usage["total_thought_tokens"],
    )


def test_recorded_text_with_a_thought_signature() -> None:
    name = "recorded_basic_text.sse"
    raw = events(name)
    result = run(load(name))
    assert result.text == "I'm doing great, thank you for asking!\n\nHow are you doing today? And what can I do for you?"
    signature = raw[3]["delta"]["signature"]
    assert result.blocks[0] == ReasoningBlock("", signature=signature)
    assert result.usage == _recorded_usage(raw) == TokenUsage(7, 26 + 115, cache_read_tokens=0, reasoning_tokens=115)
    assert raw[-1]["interaction"]["usage"]["total_tokens"] == 148 == result.usage.input_tokens + result.usage.output_tokens
    assert (result.finish.kind, result.finish.raw) == ("stop", "completed")
    assert result.metadata is not None and result.metadata.model == "gemini-2.5-flash"
    assert result.replay_state["interaction_id"] == raw[0]["interaction"]["id"]


def test_recorded_thinking_summaries_are_the_reasoning_and_the_last_signature_is_kept() -> None:
    """Recorded (gemini-2.5-flash, ``thinking_summaries: auto``): two summary deltas and
    empty signature deltas in one thought step, then the answer."""
    name = "recorded_thinking_summary_event_metadata_usage.sse"
    raw = events(name)
    result = run(load(name))
    summaries = [
        e["delta"]["content"]["text"]
        for e in raw
        if e["event_type"] == "step.delta" and e["delta"].get("type") == "thought_summary"
    ]
    assert len(summaries) == 2 and result.reasoning == "".join(summaries)
    signatures = [e["delta"]["signature"] for e in raw if e["event_type"] == "step.delta" and e["delta"].get("signature")]
    thought = result.blocks[0]
    assert isinstance(thought, ReasoningBlock) and thought.signature == signatures[-1]
    assert result.text.startswith("The sky is blue because tiny air molecules scatter blue light")
    assert result.usage == _recorded_usage(raw) == TokenUsage(11, 42 + 126, cache_read_tokens=0, reasoning_tokens=126)
    assert (result.finish.kind, result.finish.raw) == ("stop", "completed")


def test_a_recorded_incomplete_interaction_is_cut_at_the_output_limit() -> None:
    name = "recorded_image_input_incomplete_flash_lite.sse"
    raw = events(name)
    result = run(load(name))
    assert raw[-1]["interaction"]["status"] == "incomplete"
    assert result.text == "The image displays"
    assert (result.finish.kind, result.finish.raw) == ("max-tokens", "incomplete")
    assert result.usage == _recorded_usage(raw) == TokenUsage(266, 3 + 57, cache_read_tokens=0, reasoning_tokens=57)


def test_recorded_function_call_with_start_arguments_and_one_delta() -> None:
    """The start carries ``"arguments": {}`` and one ``arguments_delta`` the whole JSON."""
    name = "recorded_function_call.sse"
    raw = events(name)
    result = run(load(name))
    assert raw[5]["step"]["arguments"] == {}
    assert result.tool_calls == (ToolCallBlock(id="61nzpsv4", name="getWeather", arguments='{"location":"San Francisco"}'),)
    assert (result.finish.kind, result.finish.raw) == ("tool-calls", "requires_action")
    assert result.usage == _recorded_usage(raw) == TokenUsage(53, 15 + 65, cache_read_tokens=0, reasoning_tokens=65)
    assert result.replay_state["call_ids"] == ["61nzpsv4"]


def test_recorded_google_search_after_the_text_keeps_its_citations() -> None:
    """Recorded: the search steps come after the answer's step; the answer's annotations
    arrive in one delta after its text; tool-use prompt tokens are input."""
    name = "recorded_google_search.sse"
    raw = events(name)
    result = run(load(name))
    annotations = [a for e in raw if e["event_type"] == "step.delta" for a in e["delta"].get("annotations", [])]
    assert len(annotations) == 14
    (text,) = [b for b in result.blocks if isinstance(b, TextBlock)]
    assert [(c.kind, c.url, c.title, c.start, c.end) for c in text.citations] == [
        ("url", a["url"], a["title"], a["start_index"], a["end_index"]) for a in annotations
    ]
    assert result.metadata is not None
    (search,) = result.metadata.server_tools
    assert (search["type"], search["id"]) == ("google_search_call", "7xveqyd2") and len(search["queries"]) == 4
    assert [s["type"] for s in result.replay_state["steps"]] == [
        "thought", "model_output", "google_search_call", "google_search_result",
    ]
    assert result.usage == _recorded_usage(raw)
    assert raw[-1]["interaction"]["usage"]["total_tokens"] == result.usage.input_tokens + result.usage.output_tokens
    assert (result.finish.kind, result.finish.raw) == ("stop", "completed")


def test_thought_summaries_are_reasoning_with_the_signature() -> None:
    name = "thinking_summary.sse"
    raw = events(name)
    summary = "".join(e["delta"]["content"]["text"] for e in raw
                      if e["event_type"] == "step.delta" and e["delta"]["type"] == "thought_summary")
    signature = next(e["delta"]["signature"] for e in raw if e["event_type"] == "step.delta"
                     and e["delta"]["type"] == "thought_signature")
    result = run(load(name))
    assert result.reasoning == summary and "Euclidean" in summary
    assert result.blocks[0] == ReasoningBlock(summary, signature=signature)
    assert "**21**" in result.text
    thought = result.replay_state["steps"][0]
    assert thought == {"type": "thought", "signature": signature, "summary": [{"type": "text", "text": summary}]}
    assert result.usage is not None and result.usage.reasoning_tokens == 441


def test_server_search_then_function_call() -> None:
    name = "google_search_then_function_call.sse"
    raw = events(name)
    result = run(load(name))
    call_start = next(e["step"] for e in raw if e["event_type"] == "step.start" and e["step"]["type"] == "function_call")
    arguments = "".join(e["delta"]["arguments"] for e in raw
                        if e["event_type"] == "step.delta" and e["delta"]["type"] == "arguments_delta")
    assert result.tool_calls == (ToolCallBlock(id=call_start["id"], name=call_start["name"], arguments=arguments),)
    assert (result.finish.kind, result.finish.raw) == ("tool-calls", "requires_action")
    assert result.metadata is not None
    assert result.metadata.server_tools == (
        {"type": "google_search_call", "id": "mkutnkgn", "queries": ["largest mountain in Europe"]},
    )
    steps = result.replay_state["steps"]
    assert [s["type"] for s in steps] == ["google_search_call", "google_search_result", "thought", "function_call"]
    # a server step is its start plus its deltas' fields: the signature the delta carried
    assert steps[0]["signature"] == raw[3]["delta"]["signature"] and steps[0]["arguments"] == raw[3]["delta"]["arguments"]
    assert steps[3] == {"type": "function_call", "id": "ktr5aysg", "name": "get_weather",
                        "arguments": {"location": "Mount Elbrus, Russia"}}
    assert result.replay_state["call_ids"] == ["ktr5aysg"]


def test_arguments_stream_as_fragments() -> None:
    name = "parallel_function_calls_streamed_args.sse"
    chunks = list(decode(load(name), wire=WIRE))
    fragments = [c.arguments_delta for c in chunks if isinstance(c, ToolCallDelta) and c.arguments_delta]
    raw_fragments = [e["delta"]["arguments"] for e in events(name)
                     if e["event_type"] == "step.delta" and e["delta"]["type"] == "arguments_delta"]
    assert fragments == raw_fragments and len(fragments) == 7  # streamed, not buffered
    result = assemble(chunks)
    assert [(c.id, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("p4wq0c2n", {"location": "Paris, France", "unit": "celsius"}),
        ("z8hd1m3r", {"location": "Lyon, France", "unit": "celsius"}),
    ]
    assert result.text == "I'll check both cities."
    # cached tokens are taken out of the input count, never counted twice
    assert result.usage == TokenUsage(input_tokens=1187 - 1024, output_tokens=41 + 82, cache_read_tokens=1024,
                                      reasoning_tokens=82)


def test_documented_error_event_keeps_partial_text() -> None:
    result = run(load("error_gateway_timeout.sse"))
    assert result.text == "Here is the first part of the guide."
    failure = result.finish.failure
    assert result.finish.kind == "error" and failure is not None
    assert failure.code == "TIMEOUT" and failure.retryable
    assert failure.detail is not None and "Deadline expired" in failure.detail


def test_image_between_text_is_a_file_block() -> None:
    result = run(load("image_text_incomplete.sse"))
    assert [type(b) for b in result.blocks] == [TextBlock, FileBlock, TextBlock]
    image = result.blocks[1]
    assert isinstance(image, FileBlock) and image.media_type == "image/png" and image.data.startswith(b"\x89PNG")
    assert (result.finish.kind, result.finish.raw) == ("max-tokens", "incomplete")
    content = result.replay_state["steps"][0]["content"]
    assert [c["type"] for c in content] == ["text", "image", "text"]


@pytest.mark.parametrize("name", FILES)
def test_byte_by_byte_is_whole(name: str) -> None:
    data = load(name)
    whole = list(decode(data, wire=WIRE))
    assert list(decode([data[i : i + 1] for i in range(len(data))], wire=WIRE)) == whole


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FILES), st.lists(st.integers(min_value=1, max_value=4000), max_size=40))
def test_random_splits_are_whole(name: str, cuts: list[int]) -> None:
    data = load(name)
    assert list(decode(split_at(data, cuts), wire=WIRE)) == list(decode(data, wire=WIRE))


# --------------------------------------------------------------------------- position (rule 5)


def numbered(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**p, "event_id": f"e{i}"} for i, p in enumerate(payloads)]


def test_position_is_the_last_event_and_its_id() -> None:
    payloads = numbered(text_stream("a", "b"))
    translator = GeminiInteractionsTranslator()
    decoder = StreamDecoder(translator)
    decoder.feed(sse(*payloads[:3], done=False))
    assert (translator.last_sequence, translator.last_event_id) == (2, "e2")


def test_continuation_after_an_event_id_reads_on() -> None:
    payloads = numbered(text_stream("Hel", "lo", "!"))
    translator = GeminiInteractionsTranslator()
    decoder = StreamDecoder(translator)
    first = decoder.feed(sse(*payloads[:3], done=False))
    translator.begin_continuation()
    decoder.reframe()
    rest = decoder.feed(sse(*payloads[3:])) + decoder.close()
    assert assemble(first + rest) == run(sse(*payloads))


def test_continuation_without_event_ids_drops_the_replayed_events() -> None:
    payloads = text_stream("Hel", "lo", "!")  # no event ids: the continuation starts over
    translator = GeminiInteractionsTranslator()
    decoder = StreamDecoder(translator)
    first = decoder.feed(sse(*payloads[:3], done=False) + b"event: step.delta\ndata: {\"ind")  # cut in an event
    assert translator.last_event_id is None
    translator.begin_continuation()
    decoder.reframe()
    rest = decoder.feed(sse(*payloads)) + decoder.close()
    assert first + rest == list(decode(sse(*payloads), wire=WIRE))


def test_continuation_after_an_id_drops_the_id_less_events_read_past_it() -> None:
    payloads = text_stream("Hel", "lo", "!", "?")
    payloads[3] = {**payloads[3], "event_id": "e3"}  # only one event carries an id
    translator = GeminiInteractionsTranslator()
    decoder = StreamDecoder(translator)
    first = decoder.feed(sse(*payloads[:6], done=False))  # two id-less events read after it
    assert translator.last_event_id == "e3"
    translator.begin_continuation()
    decoder.reframe()
    rest = decoder.feed(sse(*payloads[4:])) + decoder.close()  # the server replays after e3
    assert first + rest == list(decode(sse(*payloads), wire=WIRE))


# --------------------------------------------------------------------------- endings and rules


def test_done_before_completed_is_stream_closed() -> None:
    result = run(sse(CREATED, start(0, {"type": "model_output"}), delta(0, {"type": "text", "text": "par"})))
    assert result.text == "par"
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"


def test_cut_inside_a_call_is_truncated() -> None:
    data = sse(CREATED, start(0, {"type": "function_call", "id": "c1", "name": "f", "arguments": {}}),
               delta(0, {"type": "arguments_delta", "arguments": '{"city": "Par'}), done=False)
    result = run(data)
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    (call,) = result.tool_calls
    assert call.arguments_truncated and call.id == "c1" and call.raw_arguments == '{"city": "Par'


def test_call_without_argument_deltas_uses_the_start_arguments() -> None:
    data = sse(CREATED, start(0, {"type": "function_call", "id": "c1", "name": "f", "arguments": {"x": 1}}), stop(0),
               start(1, {"type": "function_call", "id": "c2", "name": "g"}), stop(1), completed("requires_action"))
    result = run(data)
    assert [(c.id, c.arguments, c.arguments_truncated) for c in result.tool_calls] == [
        ("c1", '{"x":1}', False), ("c2", "{}", False)]


@pytest.mark.parametrize(("status", "code"), [("failed", "FAILED"), ("cancelled", "CANCELLED"),
                                              ("budget_exceeded", "BUDGET_EXCEEDED"), ("a_new_word", "A_NEW_WORD")])
def test_other_statuses_are_error_finishes_with_their_word(status: str, code: str) -> None:
    result = run(sse(*text_stream("x")[:-1], completed(status)))
    assert result.text == "x"
    assert result.finish.kind == "error" and result.finish.raw == status
    assert result.finish.failure is not None and result.finish.failure.code == code


def test_completed_with_nothing_is_an_empty_response() -> None:
    result = run(sse(CREATED, completed(usage={"total_input_tokens": 5, "total_output_tokens": 0})))
    assert result.finish.failure is not None and result.finish.failure.code == "EMPTY_RESPONSE"
    assert result.finish.failure.diagnostics["input_tokens"] == 5  # type: ignore[index]


def test_unknown_events_and_deltas_are_skipped() -> None:
    data = sse(CREATED, {"event_type": "interaction.something_new", "x": 1},
               start(0, {"type": "model_output"}), delta(0, {"type": "hologram", "data": "?"}),
               delta(0, {"type": "text", "text": "ok"}), stop(0), completed())
    assert run(data).text == "ok"


def test_delta_without_its_start_opens_the_step_it_implies() -> None:
    data = sse(CREATED, delta(0, {"type": "thought_summary", "content": {"type": "text", "text": "hm"}}),
               delta(1, {"type": "text", "text": "ok"}), completed())
    result = run(data)
    assert (result.reasoning, result.text) == ("hm", "ok")


def test_annotations_become_citations_of_the_text() -> None:
    annotation = {"type": "url_citation", "url": "https://example.org/a", "title": "A", "start_index": 0,
                  "end_index": 2}
    data = sse(CREATED, start(0, {"type": "model_output"}), delta(0, {"type": "text", "text": "ok"}),
               delta(0, {"type": "text_annotation_delta", "annotations": [annotation, {"type": "unknown"}]}),
               stop(0), completed())
    (block,) = run(data).blocks
    assert isinstance(block, TextBlock)
    assert [(c.kind, c.url, c.title, c.start, c.end) for c in block.citations] == [
        ("url", "https://example.org/a", "A", 0, 2)]


def test_quiet_while_a_server_tool_runs() -> None:
    translator = GeminiInteractionsTranslator()
    decoder = StreamDecoder(translator)
    decoder.feed(sse(CREATED, start(0, {"type": "code_execution_call", "id": "x"}), stop(0), done=False))
    assert translator.quiet is True
    decoder.feed(sse(start(1, {"type": "code_execution_result", "call_id": "x"}), done=False))
    assert translator.quiet is False


def test_agent_step_stop_usage_is_a_running_total() -> None:
    data = sse(CREATED, start(0, {"type": "model_output"}), delta(0, {"type": "text", "text": "a"}),
               stop(0, usage={"total_input_tokens": 31, "total_output_tokens": 3}, step_usage={"total_input_tokens": 1}),
               {"interaction": {"id": "v1_x", "status": "completed"}, "event_type": "interaction.completed"})
    assert run(data).usage == TokenUsage(input_tokens=31, output_tokens=3)


def test_not_json_is_malformed() -> None:
    data = sse(CREATED, done=False) + b"event: step.start\ndata: {not json\n\n"
    result = run(data)
    assert result.finish.failure is not None and result.finish.failure.code == "MALFORMED_RESPONSE"


def test_usage_arithmetic() -> None:
    assert interactions_usage({"total_tokens": 3}) is None
    assert interactions_usage({"total_input_tokens": 10, "total_tool_use_tokens": 4, "total_cached_tokens": 6,
                               "total_output_tokens": 2, "total_thought_tokens": 5}) == TokenUsage(
        input_tokens=8, output_tokens=7, cache_read_tokens=6, reasoning_tokens=5)
