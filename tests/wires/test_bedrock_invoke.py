"""The Bedrock InvokeModelWithResponseStream wire: the recorded Claude body, a synthetic
Nova stream in AWS's documented shape, exception frames, and usage from
``amazon-bedrock-invocationMetrics``."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from helpers import fixture_bytes, split_at

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


def test_unknown_family_is_a_clear_failure_not_a_cut() -> None:
    cohere = _chunk({"generations": [{"text": "hi", "finish_reason": "COMPLETE"}], "is_finished": True})
    failure = _finish(_run(cohere)).reason.failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"
    assert "Cohere" in failure.message and "Converse" in failure.message
