"""Chunk types: frozen, slotted, a closed union with a JSON-safe round trip."""

from __future__ import annotations

import dataclasses
import json

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    ResponseMetadata,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    UsageChunk,
)
from dshstream.sansio import chunk_from_dict, chunk_to_dict
from dshstream._core.errors import (
    AuthenticationError,
    OverloadedError,
    RateLimitError,
    ServerError,
    error_for,
    make_failure,
)

CHUNKS: list[StreamChunk] = [
    BlockStart(index=0, block_type="reasoning"),
    ReasoningDelta(index=0, text="hmm"),
    BlockEnd(index=0, block=ReasoningBlock("hmm", signature="sig")),
    TextDelta(index=1, text="héllo\u2028"),
    BlockEnd(index=1, block=TextBlock("héllo")),
    ToolCallDelta(index=2, id="", name=None, arguments_delta='{"a"'),
    BlockEnd(
        index=2,
        block=ToolCallBlock(id="c", name="t", arguments="{}", arguments_truncated=True, raw_arguments='{"a'),
    ),
    BlockEnd(index=3, block=ToolResultBlock(call_id="c", content="42", is_error=True)),
    UsageChunk(usage=TokenUsage(1, 2, cache_read_tokens=3, reasoning_tokens=1, cost=0.5)),
    Finish(
        reason=FinishReason(
            kind="error",
            failure=make_failure("RATE_LIMIT", "x: rate limited", status=429, retry_after=2.0),
            raw="error",
        ),
        replay_state={"blocks": [1, {"a": None}]},
        metadata=ResponseMetadata(response_id="r", model="m"),
    ),
]


@pytest.mark.parametrize("chunk", CHUNKS, ids=lambda c: type(c).__name__)
def test_chunk_dict_round_trip_through_json(chunk: StreamChunk) -> None:
    data = json.loads(json.dumps(chunk_to_dict(chunk)))
    assert chunk_from_dict(data) == chunk


def test_wire_names() -> None:
    assert [chunk_to_dict(c)["type"] for c in CHUNKS[:4]] == [
        "block-start",
        "reasoning-delta",
        "block-end",
        "text-delta",
    ]
    assert chunk_to_dict(CHUNKS[5])["type"] == "tool-call-delta"
    assert chunk_to_dict(CHUNKS[8])["type"] == "usage"
    assert chunk_to_dict(CHUNKS[9])["type"] == "finish"


def test_unknown_type_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown chunk type"):
        chunk_from_dict({"type": "image"})


def test_chunks_are_frozen_and_slotted() -> None:
    chunk = TextDelta(index=0, text="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunk.text = "y"  # type: ignore[misc]
    assert not hasattr(chunk, "__dict__")


def test_failure_validation() -> None:
    with pytest.raises(ValueError):
        LlmFailure(code="", message="m", category="unknown", retryable=False)
    with pytest.raises(ValueError):
        LlmFailure(code="X", message="m", category="unknown", retryable=False, status=99)
    with pytest.raises(ValueError):
        LlmFailure(code="X", message="m", category="unknown", retryable=False, retry_after=0)
    with pytest.raises(ValueError):
        FinishReason(kind="error")


def test_usage_is_disjoint() -> None:
    usage = TokenUsage(input_tokens=27, output_tokens=69, cache_read_tokens=256, reasoning_tokens=24)
    assert usage.total_input_tokens == 283
    assert usage.total_tokens == 352


def test_error_classes_by_code() -> None:
    assert isinstance(error_for(make_failure("AUTH", "a")), AuthenticationError)
    assert isinstance(error_for(make_failure("RATE_LIMIT", "a")), RateLimitError)
    overloaded = error_for(make_failure("OVERLOADED", "a"))
    assert isinstance(overloaded, OverloadedError) and isinstance(overloaded, ServerError)
    assert isinstance(error_for(make_failure("HTTP_502", "a")), ServerError)
    assert error_for(make_failure("TIMEOUT", "t")).failure.category == "timeout"
