"""The Bedrock InvokeModelWithResponseStream wire: the recorded Claude, Titan, Llama,
Cohere, Claude-text and Nova bodies (whole, byte by byte, at random split points), synthetic
streams in the documented shapes, exception frames, usage from
``amazon-bedrock-invocationMetrics``, Nova's one-block-per-delta text merged, and the clear
failure of an unsupported family."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from helpers import fixture_bytes, split_at
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.contract import check_contract
from dshstream._core.decode import StreamDecoder, decode, detect_wire, translator_for
from dshstream._core.eventstream import EventStreamDecoder, encode_message
from dshstream._core.types import (
    BlockEnd,
    Finish,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    UsageChunk,
)

WIRE = "bedrock-invoke"
CLAUDE = "bedrock/invoke_claude3_sonnet_messages.eventstream"
METRICS = {"inputTokenCount": 5, "outputTokenCount": 7, "invocationLatency": 100, "firstByteLatency": 50}


def _run(data: bytes | list[bytes]) -> list[StreamChunk]:
    return list(check_contract(list(decode(data, wire=WIRE))))


def _finish(chunks: list[StreamChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def _usage(chunks: list[StreamChunk]) -> list[TokenUsage]:
    return [c.usage for c in chunks if isinstance(c, UsageChunk)]


def _chunk(event: dict[str, Any]) -> bytes:
    """One invoke ``chunk`` message wrapping ``event`` (base64 JSON, with padding)."""
    inner = base64.b64encode(json.dumps(event).encode()).decode()
    return encode_message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"},
        json.dumps({"bytes": inner, "p": "abcdefgh"}).encode(),
    )


def _exception(kind: str, message: str) -> bytes:
    return encode_message(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


# Nova's native invoke stream (AWS "Invoke Amazon Nova models with streaming"): each chunk
# is one Converse event keyed by its name; the last adds the invocation metrics.
NOVA: list[dict[str, Any]] = [
    {"messageStart": {"role": "assistant"}},
    {"contentBlockDelta": {"delta": {"text": "Hello"}, "contentBlockIndex": 0}},
    {"contentBlockDelta": {"delta": {"text": " there"}, "contentBlockIndex": 0}},
    {"contentBlockStop": {"contentBlockIndex": 0}},
    {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}, "contentBlockIndex": 1}},
    {"contentBlockDelta": {"delta": {"toolUse": {"input": '{"city":'}}, "contentBlockIndex": 1}},
    {"contentBlockDelta": {"delta": {"toolUse": {"input": '"Paris"}'}}, "contentBlockIndex": 1}},
    {"contentBlockStop": {"contentBlockIndex": 1}},
    {"messageStop": {"stopReason": "tool_use"}},
]


def _nova(metadata: dict[str, Any]) -> bytes:
    return b"".join(_chunk(e) for e in NOVA) + _chunk(metadata)


def test_recorded_claude_stream() -> None:
    chunks = _run(fixture_bytes(CLAUDE))
    (block,) = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert isinstance(block, TextBlock)
    assert block.text == "Hobbits embark on epic quest to destroy powerful ring, battling dark forces."
    assert _usage(chunks) == [TokenUsage(21, 22)]
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw) == ("stop", "end_turn")
    assert finish.metadata is not None and finish.metadata.model == "claude-3-sonnet-28k-20240229"
    # the inner wire's replay state: an invoke request body carries Anthropic content
    assert finish.replay_state == {"wire": "anthropic", "content": [{"type": "text", "text": block.text}]}


def test_split_invariant() -> None:
    data = fixture_bytes(CLAUDE)
    whole = [repr(c) for c in decode(data, wire=WIRE)]
    for cuts in ([1], [7, 13, 200], list(range(0, len(data), 97))):
        assert [repr(c) for c in decode(split_at(data, cuts), wire=WIRE)] == whole


def test_detect_wire_and_framing() -> None:
    from dshstream._core.eventstream import EventStreamDecoder as Framer

    assert detect_wire(fixture_bytes(CLAUDE)) == WIRE
    assert detect_wire(_nova({"metadata": {}})) == WIRE
    assert detect_wire(fixture_bytes("bedrock/nova_micro_text.eventstream")) == "bedrock-converse"
    assert isinstance(StreamDecoder(translator_for(WIRE)).framer, Framer)


def test_synthetic_nova_stream_uses_the_converse_handlers() -> None:
    usage = {"inputTokens": 11, "outputTokens": 13}
    chunks = _run(_nova({"metadata": {"usage": usage, "metrics": {}, "trace": {}}, "amazon-bedrock-invocationMetrics": METRICS}))
    blocks = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert isinstance(blocks[0], TextBlock) and blocks[0].text == "Hello there"
    assert isinstance(blocks[1], ToolCallBlock)
    assert (blocks[1].id, blocks[1].name, json.loads(blocks[1].arguments)) == ("t1", "get_weather", {"city": "Paris"})
    assert _usage(chunks) == [TokenUsage(11, 13)]  # the inner usage wins over the metrics
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw) == ("tool-calls", "tool_use")
    assert finish.replay_state is not None and finish.replay_state["wire"] == "bedrock-converse"


def test_usage_from_invocation_metrics_when_inner_events_carry_none() -> None:
    metrics = {**METRICS, "cacheReadInputTokenCount": 2, "cacheWriteInputTokenCount": 3}
    chunks = _run(_nova({"metadata": {"metrics": {}}, "amazon-bedrock-invocationMetrics": metrics}))
    assert _usage(chunks) == [TokenUsage(5, 7, cache_read_tokens=2, cache_write_tokens=3)]
    claude: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m1", "model": "claude"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}},
        {"type": "message_stop", "amazon-bedrock-invocationMetrics": METRICS},
    ]
    chunks = _run(b"".join(_chunk(e) for e in claude))
    assert _usage(chunks) == [TokenUsage(5, 7)]
    assert _finish(chunks).reason.kind == "stop"


@pytest.mark.parametrize(
    ("exception", "code"),
    [
        ("throttlingException", "RATE_LIMIT"),
        ("modelStreamErrorException", "SERVER"),
        ("modelTimeoutException", "TIMEOUT"),
        ("validationException", "INVALID_REQUEST"),
    ],
)
def test_exception_frames_keep_partial_output(exception: str, code: str) -> None:
    frames = EventStreamDecoder().feed(fixture_bytes(CLAUDE))
    head = b"".join(encode_message(dict(m.headers), m.payload) for m in frames[:6])
    chunks = _run(head + _exception(exception, "upstream says no"))
    finish = _finish(chunks)
    failure = finish.reason.failure
    assert finish.reason.kind == "error" and failure is not None and failure.code == code
    assert failure.detail is not None and "upstream says no" in failure.detail
    (block,) = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert isinstance(block, TextBlock) and block.text == "Hobbits emb"


def test_exception_before_any_event() -> None:
    failure = _finish(_run(_exception("throttlingException", "slow down"))).reason.failure
    assert failure is not None and failure.code == "RATE_LIMIT"


def test_cut_stream_unknown_family_and_malformed_bytes() -> None:
    failure = _finish(_run(b"".join(_chunk(e) for e in NOVA[:3]))).reason.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"
    llama = _chunk({"generation": "hi", "stop_reason": None})
    failure = _finish(_run(llama)).reason.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"
    for payload in (b'{"bytes":"!!not base64!!"}', json.dumps({"bytes": base64.b64encode(b"{nope").decode()}).encode()):
        bad = encode_message({":event-type": "chunk", ":message-type": "event"}, payload)
        failure = _finish(list(decode(bad, wire=WIRE))).reason.failure
        assert failure is not None and failure.code == "MALFORMED_RESPONSE"


# --------------------------------------------------------------------------- text-completion families
# Bodies built from the streaming response shapes AWS documents per family (Titan text,
# Meta Llama, Mistral), no public recording found (tests/fixtures/real/PROVENANCE.md).

TITAN = [
    {"outputText": "Hello", "index": 0, "totalOutputTextTokenCount": 1, "completionReason": None,
     "inputTextTokenCount": 4},
    {"outputText": " world", "index": 0, "totalOutputTextTokenCount": 2, "completionReason": "FINISH",
     "inputTextTokenCount": 4, "amazon-bedrock-invocationMetrics": METRICS},
]
LLAMA = [
    {"generation": "Hel", "prompt_token_count": 9, "generation_token_count": 1, "stop_reason": None},
    {"generation": "lo", "prompt_token_count": None, "generation_token_count": 2, "stop_reason": "length"},
]
MISTRAL = [
    {"outputs": [{"text": "Bon", "stop_reason": None}]},
    {"outputs": [{"text": "jour", "stop_reason": "stop"}], "amazon-bedrock-invocationMetrics": METRICS},
]


def _text(chunks: list[StreamChunk]) -> str:
    from dshstream._core.assembler import BlockAssembler

    assembler = BlockAssembler()
    assembler.extend(chunks)
    return assembler.result().text


@pytest.mark.parametrize(
    ("events", "text", "kind", "raw", "usage"),
    [
        (TITAN, "Hello world", "stop", "FINISH", TokenUsage(input_tokens=5, output_tokens=7)),
        (LLAMA, "Hello", "max-tokens", "length", TokenUsage(input_tokens=9, output_tokens=2)),
        (MISTRAL, "Bonjour", "stop", "stop", TokenUsage(input_tokens=5, output_tokens=7)),
    ],
)
def test_text_completion_families(events: list[dict[str, Any]], text: str, kind: str, raw: str,
                                  usage: TokenUsage) -> None:
    data = b"".join(_chunk(e) for e in events)
    for pieces in ([data], [data[i:i + 1] for i in range(len(data))], split_at(data, [7, len(data) // 2, len(data) - 3])):
        chunks = _run(pieces)
        finish = _finish(chunks)
        assert (finish.reason.kind, finish.reason.raw, finish.reason.failure) == (kind, raw, None)
        assert _text(chunks) == text
        assert _usage(chunks) == [usage]


def test_titan_length_and_content_filter() -> None:
    length = _finish(_run(_chunk({"outputText": "x", "completionReason": "LENGTH"})))
    assert length.reason.kind == "max-tokens"
    blocked = _finish(_run(_chunk({"outputText": "", "completionReason": "CONTENT_FILTERED"}))).reason.failure
    assert blocked is not None and blocked.code == "CONTENT_FILTER"


# --------------------------------------------------------------------------- recorded families
# Public recordings of each family on invoke-with-response-stream (PROVENANCE.md rows).

TITAN_LENGTH = "bedrock/invoke_titan_tg1_large_length.eventstream"
LLAMA_LENGTH = "bedrock/invoke_llama2_13b_chat_length.eventstream"
COHERE_ONE = "bedrock/invoke_cohere_command_light_text.eventstream"
COHERE_TWO = "bedrock/invoke_cohere_command_light_two_generations.eventstream"
CLAUDE_TEXT = "bedrock/invoke_claude_instant_text_completion.eventstream"
TITAN_MASKED = "bedrock/invoke_titan_express_guardrail_masked.eventstream"
TITAN_BLOCKED = "bedrock/invoke_titan_express_guardrail_input_blocked.eventstream"
NOVA_PER_DELTA = "bedrock/invoke_nova_lite_block_per_delta.eventstream"
RECORDED = [TITAN_LENGTH, LLAMA_LENGTH, COHERE_ONE, COHERE_TWO, CLAUDE_TEXT, TITAN_MASKED, TITAN_BLOCKED, NOVA_PER_DELTA]


def _inner_events(rel: str) -> list[dict[str, Any]]:
    """A recording's decoded inner events, read without the wire (the expected values)."""
    return [json.loads(base64.b64decode(json.loads(m.payload)["bytes"])) for m in EventStreamDecoder().feed(fixture_bytes(rel))]


def _texts(chunks: list[StreamChunk]) -> list[str]:
    return [c.block.text for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, TextBlock)]


@pytest.mark.parametrize(
    ("rel", "field", "kind", "raw", "usage"),
    [
        (TITAN_LENGTH, "outputText", "max-tokens", "LENGTH", TokenUsage(18, 51)),
        (LLAMA_LENGTH, "generation", "max-tokens", "length", TokenUsage(10, 60)),
        (COHERE_ONE, "text", "max-tokens", "MAX_TOKENS", TokenUsage(20, 10)),
        (TITAN_MASKED, "outputText", "stop", "FINISH", TokenUsage(28, 188)),
    ],
)
def test_recorded_text_families_finish_with_their_word_and_usage(
    rel: str, field: str, kind: str, raw: str, usage: TokenUsage
) -> None:
    chunks = _run(fixture_bytes(rel))
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw, finish.reason.failure) == (kind, raw, None)
    assert _texts(chunks) == ["".join(e.get(field) or "" for e in _inner_events(rel))]
    assert _usage(chunks) == [usage]
    assert finish.replay_state is None  # text completion: nothing to send back


def test_recorded_llama_and_titan_read_as_the_recordings_say() -> None:
    (titan,) = _texts(_run(fixture_bytes(TITAN_LENGTH)))
    assert titan.startswith("\nDatadog is a monitoring and analytics platform") and titan.endswith("identify performance")
    (llama,) = _texts(_run(fixture_bytes(LLAMA_LENGTH)))
    assert llama.startswith("\n\nThe phrase \"lorem ipsum\" is") and llama.endswith("Richard McClintock.")
    # the guardrail masked a number; the trace on the last event does not change the finish
    (masked,) = _texts(_run(fixture_bytes(TITAN_MASKED)))
    assert "{Account Number}" in masked and "1234561666" not in masked


def test_recorded_cohere_generations_are_one_block_each() -> None:
    chunks = _run(fixture_bytes(COHERE_TWO))
    assert _texts(chunks) == [
        " In machine learning and natural language processing, Long Short",
        " A large language model (LLM) chain refers",
    ]
    assert _usage(chunks) == [TokenUsage(40, 20)]
    assert (_finish(chunks).reason.kind, _finish(chunks).reason.raw) == ("max-tokens", "MAX_TOKENS")
    assert _texts(_run(fixture_bytes(COHERE_ONE))) == [" I am very happy to assist you! A Long"]


def test_recorded_guardrail_block_is_a_content_filter_not_a_cut() -> None:
    chunks = _run(fixture_bytes(TITAN_BLOCKED))
    finish = _finish(chunks)
    failure = finish.reason.failure
    assert (finish.reason.kind, finish.reason.raw) == ("error", "INTERVENED")
    assert failure is not None and failure.code == "CONTENT_FILTER"
    assert failure.detail == "Guardrail blocked."
    assert _texts(chunks) == ["Input blocked"]  # the guardrail's answer is kept
    assert _usage(chunks) == [TokenUsage(6, 3)]  # Titan's own counts: no invocation metrics here


def test_recorded_claude_text_completion_is_decoded() -> None:
    # Claude Instant stopped on its stop sequence at once: an empty completion, reported so
    finish = _finish(chunks := _run(fixture_bytes(CLAUDE_TEXT)))
    assert (finish.reason.kind, finish.reason.raw) == ("error", "stop_sequence")
    assert finish.reason.failure is not None and finish.reason.failure.code == "EMPTY_RESPONSE"
    assert _usage(chunks) == [TokenUsage(25, 4)]


def test_recorded_nova_gives_one_text_block_not_one_per_delta() -> None:
    events = _inner_events(NOVA_PER_DELTA)
    indices = {e["contentBlockDelta"]["contentBlockIndex"] for e in events if "contentBlockDelta" in e}
    assert len(indices) == 56  # the recording: every delta has its own block index
    chunks = _run(fixture_bytes(NOVA_PER_DELTA))
    expected = "".join(e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e)
    assert _texts(chunks) == [expected]
    assert expected.startswith("On their first night in the wilderness,") and expected.endswith("survival kit.")
    assert _usage(chunks) == [TokenUsage(30, 55, cache_read_tokens=0, cache_write_tokens=0)]
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw) == ("stop", "end_turn")
    assert finish.replay_state == {"wire": "bedrock-converse", "content": [{"text": expected}]}


@pytest.mark.parametrize("rel", RECORDED)
def test_recorded_families_byte_by_byte_are_whole(rel: str) -> None:
    data = fixture_bytes(rel)
    whole = list(decode(data, wire=WIRE))
    assert detect_wire(data) == WIRE
    assert list(decode([data[i : i + 1] for i in range(len(data))], wire=WIRE)) == whole


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(RECORDED), st.lists(st.integers(min_value=1, max_value=31000), max_size=40))
def test_recorded_families_random_splits_are_whole(rel: str, cuts: list[int]) -> None:
    data = fixture_bytes(rel)
    assert list(decode(split_at(data, cuts), wire=WIRE)) == list(decode(data, wire=WIRE))


# --------------------------------------------------------------------------- documented shapes
# No public recording found (PROVENANCE.md): Cohere Command R's event_type stream, the
# Cohere answer in one ``generations`` event, a Claude text completion with text, Nova
# per-delta blocks next to a tool block.

COMMAND_R = [
    {"is_finished": False, "event_type": "stream-start", "generation_id": "g1"},
    {"is_finished": False, "event_type": "text-generation", "text": "Bon"},
    {"is_finished": False, "event_type": "text-generation", "text": "jour"},
    {"is_finished": True, "event_type": "stream-end", "finish_reason": "COMPLETE",
     "response": {"text": "Bonjour", "generation_id": "g1", "finish_reason": "COMPLETE"},
     "amazon-bedrock-invocationMetrics": METRICS},
]
COHERE_WHOLE = [{"generations": [{"id": "g", "text": " Hi! How can I help?", "finish_reason": "COMPLETE"}],
                 "amazon-bedrock-invocationMetrics": METRICS}]
CLAUDE_TEXT_EVENTS = [
    {"completion": " Hello", "stop_reason": None, "stop": None},
    {"completion": " there", "stop_reason": "max_tokens", "stop": None, "amazon-bedrock-invocationMetrics": METRICS},
]


@pytest.mark.parametrize(
    ("events", "texts", "kind", "raw"),
    [
        (COMMAND_R, ["Bonjour"], "stop", "COMPLETE"),  # the response's repeated text is not read twice
        (COHERE_WHOLE, [" Hi! How can I help?"], "stop", "COMPLETE"),
        (CLAUDE_TEXT_EVENTS, [" Hello there"], "max-tokens", "max_tokens"),
    ],
)
def test_documented_cohere_and_claude_text_shapes(events: list[dict[str, Any]], texts: list[str], kind: str,
                                                  raw: str) -> None:
    data = b"".join(_chunk(e) for e in events)
    for pieces in ([data], [data[i:i + 1] for i in range(len(data))], split_at(data, [5, len(data) // 3, len(data) - 2])):
        chunks = _run(pieces)
        finish = _finish(chunks)
        assert (finish.reason.kind, finish.reason.raw, finish.reason.failure) == (kind, raw, None)
        assert _texts(chunks) == texts
        assert _usage(chunks) == [TokenUsage(5, 7)]


def test_cohere_toxic_and_error_words() -> None:
    toxic = _finish(_run(_chunk({"is_finished": True, "finish_reason": "ERROR_TOXIC"}))).reason.failure
    assert toxic is not None and toxic.code == "CONTENT_FILTER"
    error = _finish(_run(_chunk({"is_finished": True, "finish_reason": "ERROR"}))).reason
    assert error.kind == "error" and error.failure is not None and error.failure.code == "ERROR"


def test_nova_per_delta_blocks_merge_around_a_tool_block_but_not_across_it() -> None:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    for index, text in enumerate(["Let", " me", " look."]):
        events += [{"contentBlockDelta": {"delta": {"text": text}, "contentBlockIndex": index}},
                   {"contentBlockStop": {"contentBlockIndex": index}}]
    events += [
        {"contentBlockStart": {"start": {"toolUse": {"toolUseId": "t1", "name": "find"}}, "contentBlockIndex": 3}},
        {"contentBlockDelta": {"delta": {"toolUse": {"input": "{}"}}, "contentBlockIndex": 3}},
        {"contentBlockStop": {"contentBlockIndex": 3}},
        {"contentBlockDelta": {"delta": {"text": "Done"}, "contentBlockIndex": 4}},
        {"contentBlockStop": {"contentBlockIndex": 4}},
        {"contentBlockDelta": {"delta": {"text": "."}, "contentBlockIndex": 5}},
        {"contentBlockStop": {"contentBlockIndex": 5}},
        {"messageStop": {"stopReason": "tool_use"}},
        {"metadata": {"usage": {"inputTokens": 3, "outputTokens": 4}}},
    ]
    data = b"".join(_chunk(e) for e in events)
    for pieces in ([data], [data[i:i + 1] for i in range(len(data))]):
        chunks = _run(pieces)
        blocks = [c.block for c in chunks if isinstance(c, BlockEnd)]
        assert [type(b).__name__ for b in blocks] == ["TextBlock", "ToolCallBlock", "TextBlock"]
        assert _texts(chunks) == ["Let me look.", "Done."]
        replay = _finish(chunks).replay_state
        assert replay is not None and replay["content"] == [
            {"text": "Let me look."}, {"toolUse": {"toolUseId": "t1", "name": "find", "input": {}}}, {"text": "Done."}]


def test_nova_cut_after_a_held_stop_keeps_the_text() -> None:
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}},
              {"contentBlockDelta": {"delta": {"text": "a"}, "contentBlockIndex": 0}},
              {"contentBlockStop": {"contentBlockIndex": 0}},
              {"contentBlockDelta": {"delta": {"text": "b"}, "contentBlockIndex": 1}},
              {"contentBlockStop": {"contentBlockIndex": 1}}]
    chunks = _run(b"".join(_chunk(e) for e in events))
    failure = _finish(chunks).reason.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"
    assert _texts(chunks) == ["ab"]


# --------------------------------------------------------------------------- unsupported families


@pytest.mark.parametrize(
    ("event", "family"),
    [
        ({"completions": [{"data": {"text": "hi"}}], "id": 1}, "AI21 Jurassic"),
        ({"foo": {"bar": 1}}, "unknown"),
    ],
)
def test_unsupported_family_is_a_clear_failure_not_a_cut(event: dict[str, Any], family: str) -> None:
    data = _chunk(event) + _chunk({"more": True})
    for pieces in ([data], [data[i:i + 1] for i in range(len(data))]):
        chunks = _run(pieces)
        failure = _finish(chunks).reason.failure
        assert failure is not None and failure.code == "MALFORMED_RESPONSE"
        assert "unsupported model family" in failure.message and family in failure.message
        assert 'api="converse"' in failure.message


def test_the_billed_counts_are_kept_beside_the_models_own() -> None:
    """Recorded (Arize-ai/openinference, Claude 3.5 Sonnet on invoke): the Messages events
    say 130 output tokens, Bedrock's invocation metrics bill 98. The model's count is the
    usage (rule 3); the metrics are kept as sent in ``metadata.raw_usage``."""
    chunks = _run(fixture_bytes("bedrock/invoke_claude35_sonnet_text_two_tool_uses.eventstream"))
    finish = _finish(chunks)
    (usage,) = _usage(chunks)
    assert (usage.input_tokens, usage.output_tokens) == (702, 130)
    assert finish.metadata is not None and finish.metadata.raw_usage is not None
    billed = finish.metadata.raw_usage["amazon-bedrock-invocationMetrics"]
    assert (billed["inputTokenCount"], billed["outputTokenCount"]) == (702, 98)
    assert [c.block.name for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)] == [
        "get_current_weather_info", "get_current_population_info",
    ]
