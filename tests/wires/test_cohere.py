"""The Cohere Chat v2 wire (dshstream/_core/wires/cohere.py) on real recordings
(tests/fixtures/real/cohere, from crmne/ruby_llm's cassettes: PROVENANCE.md) and on the
event shapes of the published types (cohere-python ``v2chat_stream_response``) the
recordings lack. The corpus tests feed the recordings at every split."""

from __future__ import annotations

import json
from typing import Any

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode, detect_wire
from dshstream._core.types import (
    Citation,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from helpers import fixture_bytes

WIRE = "cohere"


def run(data: bytes) -> tuple[list[StreamChunk], AssembledResponse]:
    chunks = list(check_contract(decode(data, wire=WIRE)))
    return chunks, assemble(chunks)


def sse(*payloads: dict[str, Any], done: bool = True) -> bytes:
    body = b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)
    return body + (b"data: [DONE]\n\n" if done else b"")


def end(reason: str, **delta: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, **delta}}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": {"text": text}}}}


def test_recorded_text_with_cached_tokens() -> None:
    data = fixture_bytes("cohere/command_a_text_cached_tokens.sse")
    assert detect_wire(data) == WIRE
    _, result = run(data)
    assert result.text == "Sure! Here's counting from 1 to 3:\n\n1, 2, 3."
    assert (result.finish.kind, result.finish.raw) == ("stop", "COMPLETE")
    # tokens 502 in (448 of them cached) / 24 out; billed_units (7/21) stay in raw_usage
    assert result.usage == TokenUsage(54, 24, cache_read_tokens=448)
    assert result.metadata is not None and result.metadata.response_id == "7b4baae1-3fac-4977-85fd-618d9c9a8cc7"
    assert result.metadata.raw_usage is not None and result.metadata.raw_usage["billed_units"] == {
        "input_tokens": 7, "output_tokens": 21}


def test_recorded_tool_plan_is_reasoning_and_replayed_with_the_call() -> None:
    _, result = run(fixture_bytes("cohere/command_a_tool_plan_tool_call.sse"))
    plan, call = result.blocks
    assert plan == ReasoningBlock("I will use the weather tool to find the weather in Berlin.")
    assert isinstance(call, ToolCallBlock)
    assert (call.id, call.name) == ("weather_vvavrb8p34fk", "weather")
    assert json.loads(call.arguments) == {"latitude": "52.5200", "longitude": "13.4050"}
    assert (result.finish.kind, result.finish.raw) == ("tool-calls", "TOOL_CALL")
    assert result.replay_state == {"wire": WIRE, "tool_plan": plan.text}


def test_recorded_parallel_calls_after_one_plan() -> None:
    _, result = run(fixture_bytes("cohere/command_parallel_tool_calls_vercel.sse"))
    plan, weather, attractions = result.blocks
    assert isinstance(plan, ReasoningBlock) and plan.text.endswith("cityAttractions tool to find attractions in San Francisco.")
    assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
        ("weather_e8p4pn45zt0t", "weather", {"location": "San Francisco"}),
        ("cityAttractions_pyxssbwnq9fq", "cityAttractions", {"city": "San Francisco"}),
    ]
    assert isinstance(weather, ToolCallBlock) and isinstance(attractions, ToolCallBlock)
    assert result.usage == TokenUsage(45, 95, cache_read_tokens=1504)


def test_recorded_call_without_arguments_is_an_empty_object() -> None:
    _, result = run(fixture_bytes("cohere/command_a_no_argument_tool_call.sse"))
    (call,) = result.blocks
    assert isinstance(call, ToolCallBlock) and call.name == "best_language_to_learn"
    assert call.arguments == "{}" and not call.arguments_truncated
    assert result.replay_state is None


def test_recorded_tool_result_citation() -> None:
    _, result = run(fixture_bytes("cohere/command_a_tool_result_citation.sse"))
    (block,) = result.blocks
    assert isinstance(block, TextBlock)
    assert block.text == "The current weather in Berlin is 15°C with winds of 10 km/h."
    (citation,) = block.citations
    assert citation == Citation("tool", cited_text="15°C with winds of 10 km/h.", location="weather_vvavrb8p34fk:0",
                                start=33, end=60)
    assert block.text[33:60] == citation.cited_text  # the span is in the block's own text


def test_recorded_thinking_and_document_citations() -> None:
    chunks, result = run(fixture_bytes("cohere/command_a_plus_thinking_document_citations.sse"))
    thinking, text = result.blocks
    assert isinstance(thinking, ReasoningBlock) and thinking.text.startswith("The document clearly states")
    assert any(isinstance(c, ReasoningDelta) for c in chunks)
    assert isinstance(text, TextBlock)
    assert [(c.kind, c.title, c.location, c.cited_text) for c in text.citations] == [
        ("document", "facts.txt", "doc:0", "Yukihiro Matsumoto"),
        ("document", "facts.txt", "doc:0", "1993."),
    ]
    assert all(text.text[c.start:c.end] == c.cited_text for c in text.citations)
    assert result.usage == TokenUsage(364, 86, cache_read_tokens=144, reasoning_tokens=28)
    assert result.replay_state == {"wire": WIRE, "thinking": [thinking.text]}


def test_finish_words() -> None:
    cases = {
        "STOP_SEQUENCE": ("stop", None),
        "MAX_TOKENS": ("max-tokens", None),
        "CONTENT_BLOCKED": ("error", "CONTENT_FILTER"),
        "TIMEOUT": ("error", "TIMEOUT"),
        "ERROR_LIMIT": ("error", "ERROR_LIMIT"),
        "complete": ("stop", None),  # the published types spell them in lower case
    }
    for word, (kind, code) in cases.items():
        _, result = run(sse(text_delta(0, "Hi"), end(word)))
        assert result.finish.kind == kind, word
        assert result.finish.raw == word
        assert (result.failure.code if result.failure else None) == code, word
        assert result.text == "Hi"


def test_error_finish_keeps_its_detail_and_the_partial_text() -> None:
    _, result = run(sse(text_delta(0, "Part"), end("ERROR", error="the model crashed")))
    assert result.finish.kind == "error" and result.text == "Part"
    assert result.failure is not None and result.failure.code == "ERROR"
    assert result.failure.detail == "the model crashed"


def test_cut_after_message_end_completes_and_before_it_is_stream_closed() -> None:
    _, done = run(sse(text_delta(0, "Hi"), end("COMPLETE"), done=False))
    assert done.finish.kind == "stop"
    _, cut = run(sse(text_delta(0, "Hi"), done=False))
    assert cut.failure is not None and cut.failure.code == "STREAM_CLOSED" and cut.text == "Hi"


def test_error_event_is_a_classified_failure() -> None:
    data = sse(text_delta(0, "Hi"), done=False) + b'event: error\ndata: {"message": "too many requests"}\n\n'
    _, result = run(data)
    assert result.finish.kind == "error" and result.text == "Hi"
    assert result.failure is not None and "too many requests" in (result.failure.detail or "")


def test_thinking_citations_and_unknown_events_are_not_kept() -> None:
    thinking_citation = {"type": "citation-start", "index": 0, "delta": {"message": {"citations": {
        "start": 0, "end": 2, "text": "Hi", "type": "THINKING_CONTENT",
        "sources": [{"type": "document", "id": "doc:0", "document": {"id": "doc:0"}}]}}}}
    _, result = run(sse(text_delta(0, "Hi"), thinking_citation, {"type": "debug", "prompt": "..."},
                        {"type": "citation-end", "index": 0}, end("COMPLETE")))
    assert result.blocks == (TextBlock("Hi"),)


def test_web_document_source_is_a_url_citation() -> None:
    cite = {"type": "citation-start", "index": 0, "delta": {"message": {"citations": {
        "start": 0, "end": 2, "text": "Hi", "type": "TEXT_CONTENT",
        "sources": [{"type": "document", "id": "web:1", "document": {"id": "web:1", "title": "A page",
                                                                      "url": "https://example.com/a"}}]}}}}
    _, result = run(sse(text_delta(0, "Hi"), cite, end("COMPLETE")))
    assert result.citations == (
        Citation("url", url="https://example.com/a", title="A page", cited_text="Hi", location="web:1", start=0, end=2),
    )
