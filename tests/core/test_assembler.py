"""BlockAssembler: the seed's fold rules (research/seed_systems.md §2)."""

from __future__ import annotations

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dshstream.sansio import BlockAssembler, assemble
from dshstream._core.errors import LlmError, make_failure


def test_folds_reasoning_text_and_tool_call_in_first_seen_order() -> None:
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="thinking…"),
        BlockEnd(index=0, block=ReasoningBlock("thinking…")),
        BlockStart(index=1, block_type="text"),
        TextDelta(index=1, text="Hello"),
        TextDelta(index=1, text=" world"),
        BlockStart(index=2, block_type="tool-call"),
        ToolCallDelta(index=2, id="call-1", name="echo", arguments_delta='{"text":'),
        ToolCallDelta(index=2, id="call-1", name=None, arguments_delta='"hi"}'),
        UsageChunk(usage=TokenUsage(input_tokens=10, output_tokens=5)),
        Finish(reason=FinishReason(kind="tool-calls")),
    ]
    result = assemble(chunks)
    assert result.blocks == (
        ReasoningBlock("thinking…"),
        TextBlock("Hello world"),
        ToolCallBlock(id="call-1", name="echo", arguments='{"text":"hi"}'),
    )
    assert result.usage == TokenUsage(10, 5)
    assert result.finish.kind == "tool-calls"
    assert result.text == "Hello world"
    assert result.reasoning == "thinking…"


def test_implicit_block_from_a_lone_delta() -> None:
    result = assemble([TextDelta(index=0, text="implicit")])
    assert result.blocks == (TextBlock("implicit"),)
    assert result.finish == FinishReason(kind="stop")
    assert result.usage is None


def test_open_tool_call_without_id_or_name() -> None:
    result = assemble([ToolCallDelta(index=0, id="", name=None, arguments_delta="{}")])
    assert result.blocks == (ToolCallBlock(id="call-0", name="", arguments="{}"),)


def test_straggler_after_block_end_is_ignored() -> None:
    done = ToolCallBlock(id="a", name="good", arguments="{}")
    result = assemble(
        [
            ToolCallDelta(index=0, id="a", name="good", arguments_delta="{}"),
            BlockEnd(index=0, block=done),
            ToolCallDelta(index=0, id="a", name="evil", arguments_delta="oops"),
        ]
    )
    assert result.blocks == (done,)


def test_first_block_end_wins() -> None:
    result = assemble(
        [
            BlockEnd(index=0, block=ReasoningBlock("first")),
            BlockEnd(index=0, block=TextBlock("second")),
        ]
    )
    assert result.blocks == (ReasoningBlock("first"),)


def test_duplicate_block_start_keeps_text() -> None:
    result = assemble(
        [
            BlockStart(index=0, block_type="text"),
            TextDelta(index=0, text="kept"),
            BlockStart(index=0, block_type="text"),
        ]
    )
    assert result.blocks == (TextBlock("kept"),)


def test_tool_call_id_is_last_wins_and_name_only_when_non_empty() -> None:
    result = assemble(
        [
            ToolCallDelta(index=0, id="first", name="tool", arguments_delta="{"),
            ToolCallDelta(index=0, id="second", name="", arguments_delta="}"),
        ]
    )
    assert result.blocks == (ToolCallBlock(id="second", name="tool", arguments="{}"),)


def test_max_tokens_drops_tool_calls_and_prunes_replay_entries() -> None:
    state = {"response": "r", "blocks": ["m0", "m1", "m2"]}
    result = assemble(
        [
            TextDelta(index=0, text="lead"),
            ToolCallDelta(index=1, id="c", name="t", arguments_delta='{"a":'),
            ReasoningDelta(index=2, text="tail"),
            Finish(reason=FinishReason(kind="max-tokens"), replay_state=state),
        ]
    )
    assert result.blocks == (TextBlock("lead"), ReasoningBlock("tail"))
    assert result.replay_state == {"response": "r", "blocks": ["m0", "m2"]}


def test_replay_state_misaligned_with_blocks_is_dropped() -> None:
    result = assemble(
        [
            TextDelta(index=0, text="a"),
            TextDelta(index=1, text="b"),
            Finish(reason=FinishReason(kind="stop"), replay_state={"response": 1, "blocks": ["x"]}),
        ]
    )
    assert len(result.blocks) == 2
    assert result.replay_state is None


def test_max_tokens_with_envelope_without_blocks_passes_it_unchanged() -> None:
    state = {"response": "r"}
    assembler = BlockAssembler()
    assembler.push(ToolCallDelta(index=0, id="c", name="t", arguments_delta="{"))
    assembler.push(Finish(reason=FinishReason(kind="max-tokens"), replay_state=state))
    assert assembler.blocks() == []
    assert assembler.replay_state is state


def test_interrupted_blocks_keep_only_meaningful_text() -> None:
    assembler = BlockAssembler()
    assembler.push(TextDelta(index=0, text="  \n"))
    assembler.push(BlockStart(index=1, block_type="tool-result"))
    assembler.push(BlockStart(index=2, block_type="reasoning"))
    assembler.push(ToolCallDelta(index=3, id="x", name="t", arguments_delta="{}"))
    assert assembler.interrupted_blocks() == []
    assembler.push(TextDelta(index=4, text="partial answer"))
    assert assembler.interrupted_blocks() == [TextBlock("partial answer")]


def test_open_block_of_unassemblable_type_raises() -> None:
    assembler = BlockAssembler()
    assembler.push(BlockStart(index=0, block_type="tool-result"))
    with pytest.raises(LlmError, match="cannot assemble incomplete block of type 'tool-result'"):
        assembler.blocks()


def test_unknown_object_raises_naming_push() -> None:
    with pytest.raises(TypeError, match="BlockAssembler.push"):
        BlockAssembler().push({"type": "rogue"})  # type: ignore[arg-type]


def test_usage_is_last_wins() -> None:
    result = assemble(
        [
            UsageChunk(usage=TokenUsage(1, 1)),
            TextDelta(index=0, text="x"),
            UsageChunk(usage=TokenUsage(2, 3)),
        ]
    )
    assert result.usage == TokenUsage(2, 3)


def test_message_carries_provider_model_and_replay_state() -> None:
    failure = make_failure("RATE_LIMIT", "p: rate limited")
    result = assemble(
        [
            TextDelta(index=0, text="hi"),
            Finish(reason=FinishReason(kind="error", failure=failure), replay_state={"k": 1}),
        ],
        provider="p",
        model="m",
    )
    message = result.message()
    assert (message.role, message.provider, message.model, message.replay_state) == (
        "assistant",
        "p",
        "m",
        {"k": 1},
    )
    assert message.text == "hi"
    assert not result.ok
    with pytest.raises(LlmError):
        result.raise_for_failure()


def test_linear_cost_structure_joins_once() -> None:
    # 50,000 fragments must fold by appending (a quadratic fold would take seconds).
    assembler = BlockAssembler()
    for _ in range(50_000):
        assembler.push(TextDelta(index=0, text="ab"))
    assert len(assembler.result().text) == 100_000
