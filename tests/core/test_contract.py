"""check_contract: every breach of the adapter contract raises CONTRACT_VIOLATION."""

from __future__ import annotations

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dshstream.sansio import check_contract
from dshstream._core.errors import LlmError, make_failure

STOP = Finish(reason=FinishReason(kind="stop"))
GOOD: list[StreamChunk] = [
    BlockStart(index=0, block_type="text"),
    TextDelta(index=0, text="hi"),
    BlockEnd(index=0, block=TextBlock("hi")),
    BlockStart(index=1, block_type="tool-call"),
    ToolCallDelta(index=1, id="c", name="t", arguments_delta="{}"),
    BlockEnd(index=1, block=ToolCallBlock(id="c", name="t", arguments="{}")),
    UsageChunk(usage=TokenUsage(1, 1)),
    Finish(reason=FinishReason(kind="tool-calls")),
]


def test_valid_stream_passes_through_unchanged() -> None:
    assert list(check_contract(GOOD)) == GOOD


BAD: dict[str, list[StreamChunk]] = {
    "after finish": [*GOOD, UsageChunk(usage=TokenUsage(1, 1))],
    "no finish": GOOD[:-1],
    "index gap": [BlockStart(index=1, block_type="text"), STOP],
    "delta before start": [TextDelta(index=0, text="x"), STOP],
    "wrong delta type": [BlockStart(index=0, block_type="reasoning"), TextDelta(index=0, text="x"), STOP],
    "empty delta": [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="")],
    "end wrong type": [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="x"),
        BlockEnd(index=0, block=ToolCallBlock(id="c", name="t", arguments="{}")),
    ],
    "stop with open block": [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="x"), STOP],
    "two usage": [UsageChunk(usage=TokenUsage(1, 1)), UsageChunk(usage=TokenUsage(1, 1))],
    "empty stop": [STOP],
    "not a chunk": ["text"],  # type: ignore[list-item]
}


@pytest.mark.parametrize("name", list(BAD))
def test_breaches_raise(name: str) -> None:
    with pytest.raises(LlmError) as info:
        list(check_contract(BAD[name]))
    assert info.value.failure.code == "CONTRACT_VIOLATION"


def test_error_finish_may_leave_blocks_open() -> None:
    failure = make_failure("STREAM_CLOSED", "cut")
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="partial"),
        Finish(reason=FinishReason(kind="error", failure=failure)),
    ]
    assert list(check_contract(chunks)) == chunks
