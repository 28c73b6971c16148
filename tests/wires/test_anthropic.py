"""The Anthropic Messages wire (dshstream._core.wires.anthropic) over real recorded transcripts.

Every fixture under tests/fixtures/real/anthropic decodes to a contract-valid stream
(split invariance of every fixture is tests/robustness/test_corpus.py's); each one's assembled
text, reasoning, signatures, tool calls, usage and finish are asserted against values read
from its raw events (written out below), and a naive line-by-line reference reader of the
raw events checks the full texts. Synthetic streams cover EOF cuts, in-band errors,
refusal, cumulative usage and replay state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import (
    BlockEnd,
    Finish,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
)
from helpers import FIXTURES, KNOWN_FINISH, fixture_bytes

WIRE = "anthropic"
FILES = sorted(p.name for p in (FIXTURES / "anthropic").glob("*.sse"))


def run(data: bytes | list[bytes], **options: Any) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=WIRE, **options)))


def load(name: str) -> bytes:
    return fixture_bytes(f"anthropic/{name}")


def sse(*events: dict[str, Any]) -> bytes:
    """Anthropic framing: ``event: <type>`` then ``data: <json>``."""
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
    )


# --------------------------------------------------------------------------- every fixture


def test_every_fixture_is_present() -> None:
    assert len(FILES) == 30


@pytest.mark.parametrize("name", FILES)
def test_fixture_decodes_to_a_contract_valid_stream(name: str) -> None:
    chunks = list(check_contract(decode(load(name), wire=WIRE)))
    assert isinstance(chunks[-1], Finish)
    known = KNOWN_FINISH[f"anthropic/{name}"]
    assert (chunks[-1].reason.kind, chunks[-1].reason.raw) == (known.kind, known.raw)


# --------------------------------------------------------------------------- a reference reader


@dataclass
class Reference:
    """What the raw events say, read naively line by line (each data line is one event)."""

    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    signatures: list[str] = field(default_factory=list)
    tool_inputs: list[str] = field(default_factory=list)


def reference(raw: bytes) -> Reference:
    ref = Reference()
    kinds: dict[int, str] = {}
    pieces: dict[int, list[str]] = {}
    signatures: dict[int, str] = {}
    inputs: dict[int, Any] = {}
    for line in raw.decode("utf-8").splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        # a message_start may hold whole blocks already (a programmatic tool call's turn)
        starts = list(enumerate(event["message"]["content"])) if event["type"] == "message_start" else []
        if event["type"] == "content_block_start":
            starts = [(event["index"], event["content_block"])]
        for index, block in starts:
            kinds[index] = block["type"]
            pieces[index] = [block["text"]] if block["type"] == "text" else []
            inputs[index] = block.get("input")
        if event["type"] == "message_start":
            for index, _ in starts:
                ref_stop(ref, kinds, pieces, signatures, inputs, index)
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            for key in ("text", "thinking", "partial_json"):
                if key in delta:
                    pieces[event["index"]].append(delta[key])
            if "signature" in delta:
                signatures[event["index"]] = delta["signature"]
        elif event["type"] == "content_block_stop":
            ref_stop(ref, kinds, pieces, signatures, inputs, event["index"])
        elif event["type"] == "completion":  # the legacy Text Completions stream: one text
            completion = pieces.setdefault(-1, [])
            completion.append(event["completion"])
            if event["stop_reason"]:
                ref.texts.append("".join(completion))
    return ref


def ref_stop(
    ref: Reference,
    kinds: dict[int, str],
    pieces: dict[int, list[str]],
    signatures: dict[int, str],
    inputs: dict[int, Any],
    index: int,
) -> None:
    joined = "".join(pieces[index])
    if kinds[index] == "text" and joined:
        ref.texts.append(joined)
    elif kinds[index] == "thinking":
        ref.thinking.append(joined)
        ref.signatures.append(signatures.get(index, ""))
    elif kinds[index] == "tool_use":
        # input given whole at the start (no deltas) is the arguments, compact JSON
        whole = json.dumps(inputs[index], separators=(",", ":")) if inputs[index] else "{}"
        ref.tool_inputs.append(joined or whole)


@pytest.mark.parametrize("name", FILES)
def test_fixture_matches_the_reference_reader(name: str) -> None:
    raw = load(name)
    result = run(raw)
    ref = reference(raw)
    assert [b.text for b in result.blocks if isinstance(b, TextBlock)] == ref.texts
    assert [b.text for b in result.blocks if isinstance(b, ReasoningBlock)] == ref.thinking
    assert [b.signature for b in result.blocks if isinstance(b, ReasoningBlock)] == ref.signatures
    assert [c.arguments for c in result.tool_calls] == ref.tool_inputs


# --------------------------------------------------------------------------- explicit values


@dataclass(frozen=True)
class Snip:
    """A long string given by its length, beginning and end."""

    length: int
    head: str
    tail: str

    def matches(self, value: str | None) -> bool:
        return (
            value is not None
            and len(value) == self.length
            and value.startswith(self.head)
            and value.endswith(self.tail)
        )


def same(value: str | None, expected: str | Snip | None) -> bool:
    if isinstance(expected, Snip):
        return expected.matches(value)
    return value == expected


@dataclass(frozen=True)
class Expect:
    blocks: tuple[str, ...]  # block kinds in order: text / reasoning / tool
    text: str | Snip
    usage: TokenUsage | None
    finish: str
    raw: str
    response_id: str
    model: str
    reasoning: str | Snip = ""
    signatures: tuple[str | Snip, ...] = ()
    tools: tuple[tuple[str, str, str], ...] = ()  # id, name, arguments
    replay: tuple[str, ...] = ()  # replay content block types


EXPECTED: dict[str, Expect] = {
    "text.sse": Expect(
        blocks=("text",),
        text="Hello",
        usage=TokenUsage(10, 4, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01T8kTq7cYyYJeQ5DxcVUc6D",
        model="claude-haiku-4-5-20251001",
        replay=("text",),
    ),
    # the legacy Text Completions stream (POST /v1/complete, claude-2.1): completion events,
    # the last one with the stop reason; no message_* events and no usage
    "legacy_text_completion_claude21.sse": Expect(
        blocks=("text",),
        text=" Light scatters blue.",
        usage=None,
        finish="stop",
        raw="stop_sequence",
        response_id="compl_015dfgyiT7JLszAiMbGMtgeG",
        model="claude-2.1",
    ),
    # output_config.format json_schema (recorded by anthropic-sdk-python): the JSON is the text
    "structured_output_json_schema_sonnet45.sse": Expect(
        blocks=("text",),
        text="[12345,67890]",
        usage=TokenUsage(135, 10, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01LtFpmR8SbmiK2kRA5sWXNi",
        model="claude-sonnet-4-5-20250929",
        replay=("text",),
    ),
    # Claude on Vertex AI (streamRawPredict; msg_vrtx_ ids) and on Azure AI Foundry's
    # /anthropic/v1/messages: the Messages stream, its JSON padded with spaces (req_llm)
    "vertex_streamrawpredict_haiku45_tool_use.sse": Expect(
        blocks=("tool",),
        text="",
        usage=TokenUsage(725, 69, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_vrtx_01VChf85BrZXgqe4LgzpFduH",
        model="claude-haiku-4-5-20251001",
        tools=(("toolu_vrtx_01UmBZQPG2Jv68ibq2ABA8Yj", "structured_output",
                '{"name": "Alex Johnson", "age": 32, "occupation": "Software Engineer"}'),),
        replay=("tool_use",),
    ),
    "vertex_streamrawpredict_sonnet45_thinking_padded_json.sse": Expect(
        blocks=("reasoning", "text"),
        text="**Approach:** Simple multiplication of 15 × 3.\n\n**Answer:** 45",
        usage=TokenUsage(66, 115, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_vrtx_01TSFcWEcVYQKgFMparwhTnp",
        model="claude-sonnet-4-5-20250929",
        reasoning=Snip(158, "This is a straightforward multiplication problem: 15 × 3", "Or simply: 15 × 3 = 45"),
        signatures=(Snip(456, "EtACCkgICRACGAIqQJRH", "qJpx80mlc/yvT8N0GAE="),),
        replay=("thinking", "text"),
    ),
    "azure_foundry_messages_opus45_thinking_padded_json.sse": Expect(
        blocks=("reasoning", "text"),
        text="**Approach:** I'll multiply 15 by 3. I can think of this as (10 × 3) + (5 × 3) = 30 + 15.\n\n"
        "**Answer:** 15 × 3 = **45**",
        usage=TokenUsage(67, 164, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01M3yuk1qMnrsQLqRPnp3u5g",
        model="claude-opus-4-5-20251101",
        reasoning=Snip(191, "The user is asking me to calculate 15 multiplied by 3.", "Or simply: 15 * 3 = 45"),
        signatures=(Snip(480, "EuECCkYIChgCKkDbWsHi", "sNnwIk3NFY+htT8YAQ=="),),
        replay=("thinking", "text"),
    ),
    "stop_sequence_prefill.sse": Expect(
        blocks=("text",),
        text='\ndef pelican():\n    return "A large waterbird with a long bill and a throat pouch for catching fish."\n',
        usage=TokenUsage(16, 28, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="stop_sequence",
        response_id="msg_01KozUDYHvRtgs3NLgG7jzN9",
        model="claude-haiku-4-5-20251001",
        replay=("text",),
    ),
    "tool_use_empty_input.sse": Expect(
        blocks=("tool",),
        text="",
        usage=TokenUsage(543, 40, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01BnVamfF7ccY9Qt3nZHAyaG",
        model="claude-haiku-4-5-20251001",
        tools=(("toolu_01CzN6riCPqw4pVSuTd9Dwn7", "pelican_name_generator", "{}"),),
        replay=("tool_use",),
    ),
    "parallel_tool_use.sse": Expect(
        blocks=("tool", "tool"),
        text="",
        usage=TokenUsage(542, 62, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01V2noLbAb2NgKnjaNw6Cn3w",
        model="claude-haiku-4-5-20251001",
        tools=(
            ("toolu_01LtHJmixrs9NcWQkK8hu8hj", "pelican_name_generator", "{}"),
            ("toolu_01N8a4jWyf116qKTMqKKmjyt", "pelican_name_generator", "{}"),
        ),
        replay=("tool_use", "tool_use"),
    ),
    "tool_use_with_args.sse": Expect(
        blocks=("text", "tool"),
        text="I'll invoke the JSON response tool.",
        usage=TokenUsage(849, 47, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01K2JbSUMYhez5RHoK9ZCj9U",
        model="claude-haiku-4-5-20251001",
        tools=(
            (
                "toolu_01KFbKqPYSuAKujiL6mTfzYA",
                "json",
                '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}',
            ),
        ),
        replay=("text", "tool_use"),
    ),
    "thinking_then_tool_use.sse": Expect(
        blocks=("reasoning", "tool"),
        text="",
        usage=TokenUsage(598, 92, cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=53),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01JdU4xqNHXL9QCFWkwCDKGr",
        model="claude-haiku-4-5-20251001",
        reasoning=(
            "The user wants me to:\n1. Use the fixed_version tool\n2. Tell them the version\n"
            "3. Make a short joke about it\n\nLet me first call the fixed_version tool to see what "
            "version it returns."
        ),
        signatures=(Snip(524, "EoQDCm0IDhgCKkCDzGs2", "WRjSBwUxgB"),),
        tools=(("toolu_01825dXWLSoJwCst1qTsiWdb", "fixed_version", "{}"),),
        replay=("thinking", "tool_use"),
    ),
    "thinking_signature_delta.sse": Expect(
        blocks=("reasoning", "text"),
        text='1. **Pouch** - references their iconic bill pouch\n2. **Pelé** - playful take on "pelican"',
        usage=TokenUsage(46, 133, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01Eg56TYRnKCEgWtZu2yjR1t",
        model="claude-haiku-4-5-20251001",
        reasoning=Snip(289, "The user wants two names for a pet pelican", "Let me give two brief, catchy names:"),
        signatures=(Snip(656, "EuYDCmMIDBgCKkC05Zda", "Q4FjZiGAE="),),
        replay=("thinking", "text"),
    ),
    "thinking_signature_context_management.sse": Expect(
        blocks=("reasoning", "text"),
        text="925 ÷ 5 = 185",
        usage=TokenUsage(69, 53, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01Y6V41gqPaKWEw7iPouH7iW",
        model="claude-sonnet-4-5-20250929",
        reasoning="The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
        signatures=(Snip(332, "EvQBCkYICxgCKkAxhD4N", "hT6Ca17BgB"),),
        replay=("thinking", "text"),
    ),
    "thinking_long_sonnet4.sse": Expect(
        blocks=("reasoning", "text"),
        text=Snip(
            1021,
            "Here are the basic steps for safely crossing the street:\n\n**At intersections with traffic lights:**",
            "Always prioritize safety over speed when crossing streets.",
        ),
        usage=TokenUsage(43, 282, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01ALwQ87pTS7hH1PjSdC9wJD",
        model="claude-sonnet-4-20250514",
        reasoning=(
            "This is a straightforward question about pedestrian safety. I should provide clear, "
            "helpful advice about how to safely cross a street. This is basic safety information "
            "that could help prevent accidents."
        ),
        signatures=(Snip(504, "EvMCCkYICxgCKkCHP2cS", "UhjfQYAQ=="),),
        replay=("thinking", "text"),
    ),
    "adaptive_thinking_interleaved_opus46.sse": Expect(
        blocks=("text", "reasoning", "text"),
        text="\n\n1. **Captain Scoop**\n2. **Gullet**",
        usage=TokenUsage(34, 44, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_016xaB3rMXQHTBuAJvtvxaQx",
        model="claude-opus-4-6",
        reasoning="Brief answer with two pet pelican names.",
        signatures=(Snip(284, "EtABCkYICxgCKkCVRmhl", "NhIz4SWxgB"),),
        replay=("text", "thinking", "text"),
    ),
    "redacted_thinking.sse": Expect(
        blocks=("text",),
        text=Snip(
            359,
            "I notice that you've sent what appears to be some kind of test string or command.",
            "How can I assist you today with a legitimate task or question?",
        ),
        usage=TokenUsage(92, 189, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_018XZkwvj9asBiffg3fXt88s",
        model="claude-sonnet-4-5-20250929",
        replay=("redacted_thinking", "redacted_thinking", "text"),
    ),
    "mcp_tool_use.sse": Expect(
        blocks=("reasoning", "text"),
        text=Snip(
            806,
            "**Pydantic-AI** is a framework for building Generative AI applications with type safety.",
            "production-ready AI agents while abstracting away provider-specific complexities.",
        ),
        usage=TokenUsage(3042, 354, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01Xf6SmUVY1mDrSwFc5RsY3n",
        model="claude-sonnet-4-5-20250929",
        reasoning=(
            "The user is asking about the pydantic/pydantic-ai repository. They want a short answer "
            "about the repo. I should use the deepwiki_ask_question function to get information "
            "about this repository."
        ),
        signatures=(Snip(492, "EuoCCkYICBgCKkDPqznn", "5dw/IYAQ=="),),
        replay=("thinking", "mcp_tool_use", "mcp_tool_result", "text"),
    ),
    "text_and_tool_use_plus_server_tool_use.sse": Expect(
        blocks=("text", "tool"),
        text=(
            "I'll help you with this task. Let me start by reading the note tree to see the current "
            "structure, and then search for the right tools to add a bullet point."
        ),
        usage=TokenUsage(879, 177, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01WUP4eZFC22KbkesuJGqVAw",
        model="claude-sonnet-4-5-20250929",
        tools=(
            (
                "toolu_01U8pzAHj2vNdPCA2Kf8JjeN",
                "readNoteTree",
                '{"noteId": "d10aa585-982b-4bd9-984e-420f9b3717f7"}',
            ),
        ),
        replay=("text", "tool_use", "server_tool_use"),
    ),
    "cache_creation_and_read_code_execution.sse": Expect(
        blocks=("text",),
        text="The sum of the squares of the numbers 1 through 12 is **650**.",
        usage=TokenUsage(6, 198, cache_read_tokens=6289, cache_write_tokens=3337, reasoning_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_011CdYfpjpVtBoXyXCQD1tQP",
        model="claude-sonnet-5",
        replay=(
            "server_tool_use",
            "bash_code_execution_tool_result",
            "server_tool_use",
            "bash_code_execution_tool_result",
            "text",
        ),
    ),
    "cache_read_compaction.sse": Expect(
        blocks=("text",),
        text="Hello! 👋",
        # usage.iterations present: billed usage is the sum over both iterations
        usage=TokenUsage(100 + 181, 83 + 8, cache_read_tokens=55096, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_011CduoCRono7pFKoTWpPAia",
        model="claude-sonnet-4-6",
        replay=("compaction", "text"),
    ),
    "web_search_server_tool_citations.sse": Expect(
        blocks=("text",) * 10,
        text=Snip(
            650,
            "Based on the search results, here's the current weather in San Francisco:\n\nToday (November 15, 2025)",
            "a Level 1 storm system bringing periods of rain this weekend.",
        ),
        usage=TokenUsage(10423, 341, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01TRpkkgb2QsnyjsGSVdRtGr",
        model="claude-opus-4-1-20250805",
        replay=("server_tool_use", "web_search_tool_result") + ("text",) * 10,
    ),
    "advisor_tool_result_iterations.sse": Expect(
        blocks=("text",),
        text=Snip(
            11250,
            "# Concurrent Worker Pool in Go — Design & Implementation\n\n##",
            " detector (go test -race) with concurrent Submit + Stop.\n```",
        ),
        # usage.iterations: the two message iterations; the advisor's (claude-opus-4-7)
        # is usage_by_model, never added
        usage=TokenUsage(1051 + 3676, 35 + 3356, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_018nU8ajizC7AoofHJbGncAW",
        model="claude-sonnet-4-6",
        replay=("server_tool_use", "advisor_tool_result", "text"),
    ),
    "code_execution_bash_and_text_editor_results.sse": Expect(
        blocks=("text", "text", "text"),
        text=Snip(
            795,
            "I'll create a Python script to calculate Fibonacci numbers a",
            "e previous two numbers: 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, ...",
        ),
        usage=TokenUsage(8050, 771, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01LEsrXVCLpf7xHaFdFTZNEJ",
        model="claude-sonnet-4-5-20250929",
        replay=(
            "text",
            "server_tool_use",
            "text_editor_code_execution_tool_result",
            "text",
            "server_tool_use",
            "bash_code_execution_tool_result",
            "text",
        ),
    ),
    "compaction_delta_iterations_opus46.sse": Expect(
        blocks=("text",),
        text=Snip(
            8512,
            "Based on the conversation history, you asked me to summarize",
            "walk through a particular problem, or cover another section?",
        ),
        # usage.iterations: the compaction iteration (60385 in, 522 out) is billed too;
        # the top-level usage (612, 2819) counts only the message iteration
        usage=TokenUsage(60385 + 612, 522 + 2819, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01WJn2D9FrjipEZ9u51siJHC",
        model="claude-opus-4-6",
        replay=("compaction", "text"),
    ),
    "programmatic_code_execution_result_then_text.sse": Expect(
        blocks=("text",),
        text=Snip(
            675,
            "## Game Results\n\n**Player 2 wins the game 3-2!** 🏆\n\nThe game",
            "he decisive 7th round with a roll of 3 against Player 1's 2.",
        ),
        usage=TokenUsage(4551, 197, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01CfmDducyrt61n4Q7QS8VFK",
        model="claude-sonnet-4-5-20250929",
        replay=("code_execution_tool_result", "text"),
    ),
    "programmatic_code_execution_then_tool_use_with_caller.sse": Expect(
        blocks=("text", "tool"),
        text=Snip(
            157,
            "I'll help you simulate this game between two players where o",
            " out the game round by round until one player wins 3 rounds.",
        ),
        usage=TokenUsage(3369, 725, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01ERcBqAvLTHWQDk9c9qJLWC",
        model="claude-sonnet-4-5-20250929",
        tools=(
            ("toolu_019jKkXz4jAdwHweHBw92CVY", "rollDie", '{"player":"player1"}'),
        ),
        replay=("text", "server_tool_use", "tool_use"),
    ),
    "tool_search_regex_result_then_tool_use.sse": Expect(
        blocks=("text", "tool"),
        text=Snip(
            85,
            "Great! I found a weather tool. Let me get the current weathe",
            "tool. Let me get the current weather data for San Francisco.",
        ),
        usage=TokenUsage(1681, 163, cache_read_tokens=0, cache_write_tokens=0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01A4vjL51mNRof8JMvA9CFph",
        model="claude-sonnet-4-5-20250929",
        tools=(
            ("toolu_01UmPwkecewaEpMupy2ywk8b", "get_temp_data", '{"location": "San Francisco, CA"}'),
        ),
        replay=("server_tool_use", "tool_search_tool_result", "text", "tool_use"),
    ),
    "web_fetch_20260209_dynamic_filtering_container.sse": Expect(
        blocks=("text",),
        text=Snip(
            194,
            "The page at **example.com** is a simple placeholder page exp",
            "examples and does not require prior permission to reference.",
        ),
        usage=TokenUsage(7172, 144, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01VYExUoD2gEMU8ZX5j5XBEZ",
        model="claude-sonnet-4-6",
        replay=(
            "server_tool_use",
            "server_tool_use",
            "web_fetch_tool_result",
            "code_execution_tool_result",
            "text",
        ),
    ),
    "web_fetch_tool_result_sonnet4.sse": Expect(
        blocks=("text", "text"),
        text=Snip(
            1664,
            "I'll fetch the content from that Wikipedia page to tell you ",
            "of their territory was later submerged by rising sea levels.",
        ),
        usage=TokenUsage(4230, 446, cache_read_tokens=0, cache_write_tokens=0),
        finish="stop",
        raw="end_turn",
        response_id="msg_01GpfwV1W5Ase72fzb8F45bX",
        model="claude-sonnet-4-20250514",
        replay=("text", "server_tool_use", "web_fetch_tool_result", "text"),
    ),
    "programmatic_tool_call_in_message_start.sse": Expect(
        # a programmatic tool call's continuation: the whole message (one tool_use whose
        # caller is the code execution, stop_reason, container) is in message_start
        blocks=("tool",),
        text="",
        usage=TokenUsage(0, 0),
        finish="tool-calls",
        raw="tool_use",
        response_id="msg_01KSVw3xmXbMNJPNMt46BC5W",
        model="claude-sonnet-4-5-20250929",
        tools=(("toolu_015dGLMbwBKv1ZRQr6KdJzeH", "rollDie", '{"player":"player2"}'),),
        replay=("tool_use",),
    ),
}


def test_every_fixture_has_expectations() -> None:
    assert sorted(EXPECTED) == FILES


def _kind(block: object) -> str:
    if isinstance(block, TextBlock):
        return "text"
    if isinstance(block, ReasoningBlock):
        return "reasoning"
    assert isinstance(block, ToolCallBlock)
    return "tool"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_values(name: str) -> None:
    expect = EXPECTED[name]
    result = run(load(name))
    assert tuple(_kind(b) for b in result.blocks) == expect.blocks
    assert same(result.text, expect.text)
    assert same(result.reasoning, expect.reasoning)
    signatures = [b.signature for b in result.blocks if isinstance(b, ReasoningBlock)]
    assert len(signatures) == len(expect.signatures)
    for actual, wanted in zip(signatures, expect.signatures):
        assert same(actual, wanted)
    assert tuple((c.id, c.name, c.arguments) for c in result.tool_calls) == expect.tools
    assert all(not c.arguments_truncated for c in result.tool_calls)
    for call in result.tool_calls:
        assert isinstance(json.loads(call.arguments), dict)
    assert result.usage == expect.usage
    assert result.finish.kind == expect.finish
    assert result.finish.raw == expect.raw
    assert result.finish.failure is None
    assert result.metadata is not None
    assert result.metadata.response_id == expect.response_id
    assert result.metadata.model == expect.model
    state = result.replay_state
    if not expect.replay:  # Text Completions: nothing to replay but the text
        assert state is None
        return
    assert isinstance(state, dict) and state["wire"] == "anthropic"
    assert tuple(entry["type"] for entry in state["content"]) == expect.replay


def test_request_id_and_provider_reach_the_metadata() -> None:
    result = run(load("text.sse"), provider="claude-route", request_id="req_42")
    assert result.metadata is not None and result.metadata.request_id == "req_42"


def test_tool_call_arguments_stream_as_raw_fragments() -> None:
    chunks = list(decode(load("tool_use_with_args.sse"), wire=WIRE))
    deltas = [c.arguments_delta for c in chunks if isinstance(c, ToolCallDelta)]
    assert deltas == [
        "",
        '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]',
        "}",
    ]
    first = next(c for c in chunks if isinstance(c, ToolCallDelta))
    assert first.id == "toolu_01KFbKqPYSuAKujiL6mTfzYA" and first.name == "json"


# --------------------------------------------------------------------------- replay state


def _raw_events(name: str) -> list[dict[str, Any]]:
    out = []
    for line in load(name).decode("utf-8").splitlines():
        if line.startswith("data: "):
            out.append(json.loads(line[6:]))
    return out


def test_replay_keeps_thinking_with_its_signature_and_tool_use_with_parsed_input() -> None:
    result = run(load("thinking_then_tool_use.sse"))
    thinking, tool_use = result.replay_state["content"]
    signature = next(
        e["delta"]["signature"] for e in _raw_events("thinking_then_tool_use.sse")
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "signature_delta"
    )
    assert thinking == {"type": "thinking", "thinking": result.reasoning, "signature": signature}
    assert tool_use == {
        "type": "tool_use",
        "id": "toolu_01825dXWLSoJwCst1qTsiWdb",
        "name": "fixed_version",
        "input": {},
        "caller": {"type": "direct"},
    }
    with_args = run(load("tool_use_with_args.sse")).replay_state["content"][1]
    assert with_args["input"] == {
        "elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]
    }


def test_replay_keeps_redacted_thinking_data_exactly() -> None:
    result = run(load("redacted_thinking.sse"))
    raw_blocks = [
        e["content_block"] for e in _raw_events("redacted_thinking.sse")
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "redacted_thinking"
    ]
    assert len(raw_blocks) == 2
    assert result.replay_state["content"][:2] == raw_blocks
    assert not any(isinstance(b, ReasoningBlock) for b in result.blocks)


def test_replay_keeps_server_tool_blocks_and_citations() -> None:
    name = "web_search_server_tool_citations.sse"
    result = run(load(name))
    content = result.replay_state["content"]
    assert content[0] == {
        "type": "server_tool_use",
        "id": "srvtoolu_01SPfvT38PDPAFnkcrMNGUrM",
        "name": "web_search",
        "input": {"query": "San Francisco weather today"},
    }
    raw_result = next(
        e["content_block"] for e in _raw_events(name)
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "web_search_tool_result"
    )
    assert content[1] == raw_result
    raw_citations = [
        e["delta"]["citation"] for e in _raw_events(name)
        if e["type"] == "content_block_delta" and e["delta"]["type"] == "citations_delta"
    ]
    replayed = [c for entry in content[2:] for c in entry.get("citations", [])]
    assert replayed == raw_citations and len(replayed) == 5
    # server tools are never client tool calls
    assert result.tool_calls == ()
    assert "".join(e["text"] for e in content[2:]) == result.text


def test_replay_keeps_compaction_and_code_execution_blocks() -> None:
    compaction = run(load("cache_read_compaction.sse")).replay_state["content"][0]
    assert compaction["type"] == "compaction"
    assert compaction["content"].startswith("The user provided a very long context")
    assert compaction["content"].endswith("Next step: Say hello to the user.")
    code = run(load("cache_creation_and_read_code_execution.sse")).replay_state["content"]
    assert code[0]["input"] == {"command": 'for n in $(seq 1 12); do echo "$n: $((n*n))"; done'}
    assert code[1]["content"]["stdout"].endswith("12: 144\n")
    assert code[3]["tool_use_id"] == "srvtoolu_013eUksWZnfcjFk1iarJsYgM"


def test_server_tool_use_is_not_a_client_tool_call() -> None:
    result = run(load("text_and_tool_use_plus_server_tool_use.sse"))
    assert [c.name for c in result.tool_calls] == ["readNoteTree"]
    server = result.replay_state["content"][2]
    assert server["name"] == "tool_search_tool_bm25"
    assert server["input"] == {"query": "add bullet point insert text editor", "limit": 5}


def test_tool_call_held_whole_in_message_start_is_a_call_not_an_empty_response() -> None:
    """A programmatic tool call's continuation turn (recorded): message_start already holds
    the message — a tool_use whose ``caller`` is the code execution, ``stop_reason`` and
    ``container`` — and no block event or message_delta follows (rule 1)."""
    result = run(load("programmatic_tool_call_in_message_start.sse"))
    assert result.failure is None
    assert (result.finish.kind, result.finish.raw) == ("tool-calls", "tool_use")
    (call,) = result.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "toolu_015dGLMbwBKv1ZRQr6KdJzeH",
        "rollDie",
        {"player": "player2"},
    )
    assert result.metadata is not None and result.metadata.container == {
        "id": "container_011CWHPPTDTn1XufeRB9uHeH",
        "expires_at": "2025-12-20T05:33:37.969567Z",
    }
    # replayed as sent, caller included: the API matches the result to the running code
    state = result.replay_state
    assert state["container"] == "container_011CWHPPTDTn1XufeRB9uHeH"
    (entry,) = state["content"]
    assert entry["caller"] == {"type": "code_execution_20250825", "tool_id": "srvtoolu_01MzSrFWsmzBdcoQkGWLyRjK"}
    assert entry["input"] == {"player": "player2"}


def test_message_start_content_then_streamed_blocks_keep_wire_order() -> None:
    """Blocks held in message_start come first; a later message_delta's stop reason wins."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "model": "claude-test",
            "content": [{"type": "text", "text": "Before. "}],
            "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    data = sse(
        start,
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "After."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}},
        STOP,
    )
    result = run(data)
    assert [b.text for b in result.blocks if isinstance(b, TextBlock)] == ["Before. ", "After."]
    assert (result.finish.kind, result.finish.raw) == ("stop", "end_turn")
    assert [e["text"] for e in result.replay_state["content"]] == ["Before. ", "After."]


def test_recorded_programmatic_call_keeps_its_caller_and_the_code_execution_block() -> None:
    result = run(load("programmatic_code_execution_then_tool_use_with_caller.sse"))
    content = result.replay_state["content"]
    (server,) = [e for e in content if e["type"] == "server_tool_use"]
    (tool,) = [e for e in content if e["type"] == "tool_use"]
    assert server["name"] == "code_execution" and "rollDie" in server["input"]["code"]
    assert tool["caller"] == {"type": "code_execution_20250825", "tool_id": server["id"]}
    assert result.metadata is not None
    assert [t["name"] for t in result.metadata.server_tools] == ["code_execution"]


def test_recorded_web_fetch_and_code_execution_results_are_replayed_and_summarized() -> None:
    fetch = run(load("web_fetch_tool_result_sonnet4.sse"))
    (fetched,) = [e for e in fetch.replay_state["content"] if e["type"] == "web_fetch_tool_result"]
    assert fetched["content"]["type"] == "web_fetch_result"
    assert fetched["content"]["url"].startswith("https://en.wikipedia.org/")
    assert fetch.metadata is not None and [t["name"] for t in fetch.metadata.server_tools] == ["web_fetch"]
    code = run(load("code_execution_bash_and_text_editor_results.sse"))
    kinds = [e["type"] for e in code.replay_state["content"]]
    assert "text_editor_code_execution_tool_result" in kinds and "bash_code_execution_tool_result" in kinds
    (bash,) = [e for e in code.replay_state["content"] if e["type"] == "bash_code_execution_tool_result"]
    assert bash["content"]["type"] == "bash_code_execution_result" and "34" in bash["content"]["stdout"]
    assert code.metadata is not None and code.metadata.container is not None
    assert code.metadata.container["id"] == "container_011CU6pTr2hLT47seQ5Xs4yj"


def test_recorded_advisor_usage_is_split_by_model() -> None:
    result = run(load("advisor_tool_result_iterations.sse"))
    assert result.metadata is not None and result.metadata.usage_by_model == {
        "claude-opus-4-7": TokenUsage(2728, 3880, cache_read_tokens=0, cache_write_tokens=0)
    }
    assert [e["type"] for e in result.replay_state["content"]][:2] == ["server_tool_use", "advisor_tool_result"]


def test_mcp_blocks_are_replay_only() -> None:
    result = run(load("mcp_tool_use.sse"))
    assert result.tool_calls == ()
    mcp_use = result.replay_state["content"][1]
    assert mcp_use["type"] == "mcp_tool_use" and mcp_use["server_name"] == "deepwiki"
    assert mcp_use["input"]["repoName"] == "pydantic/pydantic-ai"


# --------------------------------------------------------------------------- synthetic streams

START = {
    "type": "message_start",
    "message": {
        "id": "msg_1",
        "model": "claude-x",
        "usage": {
            "input_tokens": 20,
            "cache_read_input_tokens": 5,
            "cache_creation_input_tokens": 7,
            "output_tokens": 1,
        },
    },
}


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def delta(reason: str | None, **usage: Any) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": usage}


STOP = {"type": "message_stop"}


def test_cumulative_usage_replaces_and_never_adds() -> None:
    data = sse(
        START,
        *text_block(0, "hi"),
        delta(None, output_tokens=10),
        delta("end_turn", output_tokens=15, cache_read_input_tokens=9),
        STOP,
    )
    result = run(data)
    assert result.usage == TokenUsage(20, 15, cache_read_tokens=9, cache_write_tokens=7)


def test_iterations_sum_is_the_billed_usage() -> None:
    iterations = [
        {"input_tokens": 10, "output_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 1},
        {"input_tokens": 4, "output_tokens": 6, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 2},
    ]
    data = sse(START, *text_block(0, "ok"), delta("end_turn", output_tokens=6, iterations=iterations), STOP)
    assert run(data).usage == TokenUsage(14, 9, cache_read_tokens=100, cache_write_tokens=3)


def test_eof_before_message_stop_is_stream_closed_even_after_message_delta() -> None:
    data = sse(START, *text_block(0, "partial"), delta("end_turn", output_tokens=4))
    result = run(data)
    assert result.finish.kind == "error"
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    assert result.text == "partial"
    assert result.usage == TokenUsage(20, 4, cache_read_tokens=5, cache_write_tokens=7)


def test_eof_inside_a_tool_call_marks_it_truncated() -> None:
    raw = load("tool_use_with_args.sse")
    cut = raw.index(b'"partial_json":"}"')  # before the closing brace arrives
    cut = raw.rindex(b"event: content_block_delta", 0, cut)
    result = run(raw[:cut])
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    assert result.finish.failure.retryable
    assert result.text == "I'll invoke the JSON response tool."
    (call,) = result.tool_calls
    assert call.arguments_truncated
    assert json.loads(call.arguments) == {
        "elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]
    }
    assert call.raw_arguments == (
        '{"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]'
    )


def test_eof_right_after_tool_use_start_is_truncated_not_empty_object() -> None:
    raw = load("tool_use_empty_input.sse")
    cut = raw.index(b"event: ping")
    result = run(raw[:cut])
    (call,) = result.tool_calls
    assert call.arguments == "{}" and call.arguments_truncated


@pytest.mark.parametrize(
    ("error", "code", "category", "retryable"),
    [
        ({"type": "overloaded_error", "message": "Overloaded"}, "OVERLOADED", "provider_overloaded", True),
        (
            {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"},
            "RATE_LIMIT",
            "rate_limit",
            True,
        ),
        ({"type": "api_error", "message": "Internal server error"}, "SERVER", "provider_overloaded", True),
        (
            {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"},
            "CONTEXT_WINDOW_EXCEEDED",
            "api_error",
            False,
        ),
    ],
)
def test_in_band_error_event_keeps_partial_output(
    error: dict[str, str], code: str, category: str, retryable: bool
) -> None:
    data = sse(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Half an ans"}},
        {"type": "error", "error": error},
        *text_block(1, "never seen"),
    )
    result = run(data, request_id="req_9")
    assert result.finish.kind == "error"
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == (code, category, retryable)
    assert failure.provider == "anthropic" and failure.request_id == "req_9"
    assert error["message"] not in failure.message  # headline only; upstream text in detail
    assert failure.detail is not None and error["message"] in failure.detail
    assert result.text == "Half an ans"
    assert result.usage == TokenUsage(20, 1, cache_read_tokens=5, cache_write_tokens=7)


def test_refusal_is_a_content_blocked_error_finish() -> None:
    data = sse(START, *text_block(0, "I can't help with that."), delta("refusal", output_tokens=8), STOP)
    result = run(data)
    assert result.finish.kind == "error" and result.finish.raw == "refusal"
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == ("CONTENT_FILTER", "content_blocked", False)
    assert result.text == "I can't help with that."


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("max_tokens", "max-tokens"),
        ("model_context_window_exceeded", "max-tokens"),
        ("some_future_reason", "stop"),
    ],
)
def test_stop_reasons(reason: str, kind: str) -> None:
    result = run(sse(START, *text_block(0, "x"), delta(reason, output_tokens=2), STOP))
    assert (result.finish.kind, result.finish.raw) == (kind, reason)


def test_max_tokens_inside_a_tool_call_drops_it_and_prunes_nothing_else() -> None:
    data = sse(
        START,
        *text_block(0, "Let me call it."),
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_x", "name": "search", "input": {}},
        },
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"q": "ab'}},
        {"type": "content_block_stop", "index": 1},
        delta("max_tokens", output_tokens=30),
        STOP,
    )
    chunks = list(check_contract(decode(data, wire=WIRE)))
    ended = [c.block for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert len(ended) == 1 and isinstance(ended[0], ToolCallBlock) and ended[0].arguments_truncated
    result = assemble(chunks)
    assert result.finish.kind == "max-tokens"
    assert result.tool_calls == ()  # the assembler drops cut tool calls
    assert [e["type"] for e in result.replay_state["content"]] == ["text", "tool_use"]


def test_thinking_block_without_text_keeps_its_signature() -> None:
    data = sse(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
        {"type": "content_block_stop", "index": 0},
        *text_block(1, "answer"),
        delta("end_turn", output_tokens=3),
        STOP,
    )
    result = run(data)
    assert result.blocks == (ReasoningBlock("", signature="sig=="), TextBlock("answer"))
    assert result.replay_state["content"][0] == {"type": "thinking", "thinking": "", "signature": "sig=="}


def test_unknown_blocks_deltas_and_events_do_not_break_the_stream() -> None:
    data = sse(
        START,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "future_block", "payload": [1, 2]}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "future_delta", "x": 1}},
        {"type": "content_block_stop", "index": 0},
        {"type": "brand_new_event"},
        {"type": "ping"},
        *text_block(1, "fine"),
        delta("end_turn", output_tokens=3),
        STOP,
    )
    result = run(data)
    assert result.text == "fine" and result.finish.kind == "stop"
    assert result.replay_state["content"][0] == {"type": "future_block", "payload": [1, 2]}


def test_empty_text_blocks_are_not_replayed() -> None:
    data = sse(START, *text_block(0), *text_block(1, "x"), delta("end_turn", output_tokens=1), STOP)
    result = run(data)
    assert result.replay_state["content"] == [{"type": "text", "text": "x"}]


def test_only_server_blocks_and_no_content_is_empty_response() -> None:
    data = sse(START, *text_block(0), delta("end_turn", output_tokens=1), STOP)
    result = run(data)
    assert result.finish.failure is not None and result.finish.failure.code == "EMPTY_RESPONSE"


def test_malformed_json_ends_the_stream_malformed() -> None:
    chunks = list(decode(b"event: message_start\ndata: {not json\n\n", wire=WIRE))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == "MALFORMED_RESPONSE"


def test_fixture_paths_are_real_files() -> None:
    for name in FILES:
        assert Path(FIXTURES / "anthropic" / name).stat().st_size > 0


# ------------------------------------------------------------------ one message per stream

DOCUMENTED = Path(__file__).resolve().parent.parent / "fixtures" / "documented" / "anthropic"


def _every_split(data: bytes) -> list[list[bytes]]:
    """``data`` whole, a byte at a time, and cut at every 7th offset."""
    return [[data], [data[i : i + 1] for i in range(len(data))], [data[i : i + 7] for i in range(0, len(data), 7)]]


def test_a_second_generation_spliced_into_the_stream_is_not_merged_into_the_first() -> None:
    """vercel/ai#18402's stream: ``message_start`` msg_second arrives while msg_first is
    open. Merged, the replay state would pair msg_first's cut tool call with msg_second's
    signed thinking and the next turn would be refused; the stream ends in band instead,
    msg_first's output kept (rule 1)."""
    data = (DOCUMENTED / "vercel_spliced_message_start.sse").read_bytes()
    for pieces in _every_split(data):
        result = run(pieces)
        assert result.finish.kind == "error"
        assert result.failure is not None and result.failure.code == "MALFORMED_RESPONSE"
        assert "msg_second began before message msg_first ended" in result.failure.message
        assert result.metadata is not None and result.metadata.response_id == "msg_first"
        assert [(b.text, b.signature) for b in result.blocks if isinstance(b, ReasoningBlock)] == [
            ("I will call the tool.", "sig-first")
        ]
        (call,) = result.tool_calls
        assert (call.id, call.arguments_truncated) == ("toolu_first", True)
        assert "toolu_second" not in json.dumps(result.replay_state) and "sig-second" not in json.dumps(result.replay_state)


def test_the_same_message_started_twice_is_one_message() -> None:
    data = (DOCUMENTED / "vercel_duplicate_message_start.sse").read_bytes()
    for pieces in _every_split(data):
        result = run(pieces)
        assert result.failure is None and (result.finish.kind, result.finish.raw) == ("stop", "end_turn")
        assert [b.text for b in result.blocks if isinstance(b, TextBlock)] == ["Hello, World!"]
        assert result.usage == TokenUsage(input_tokens=17, output_tokens=227)


def test_a_repeated_message_start_with_content_does_not_repeat_the_content() -> None:
    """A programmatic tool call's turn held whole in ``message_start`` (rule 1), sent twice:
    one call; a repeat that names no id is the open message too."""
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_p",
            "model": "claude-test",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"n": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 1},
        },
    }
    anonymous = {"type": "message_start", "message": {"model": "claude-test"}}
    result = run(sse(start, start, anonymous, STOP))
    assert result.failure is None and result.finish.kind == "tool-calls"
    assert [c.id for c in result.tool_calls] == ["toolu_1"]
    assert [e["id"] for e in result.replay_state["content"]] == ["toolu_1"]
