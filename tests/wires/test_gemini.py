"""The Gemini wire (dshstream._core.wires.gemini) over real recorded transcripts.

Every fixture under tests/fixtures/real/gemini (Gemini API and Vertex AI captures, CRLF
framing) decodes to a contract-valid stream (split invariance of every fixture is
tests/robustness/test_corpus.py's); each one's text, reasoning, signatures (in replay state,
bound to their parts), tool calls, usage and finish are asserted against values read from
its raw events. Synthetic streams cover EOF cuts, in-band errors, blocked content, usage
rules and partialArgs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import (
    Finish,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
)
from dshstream._core.wires.gemini import parse_json_path
from helpers import FIXTURES, fixture_bytes

WIRE = "gemini"
FILES = sorted(p.name for p in (FIXTURES / "gemini").glob("*.sse"))


def run(data: bytes | list[bytes], **options: Any) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=WIRE, **options)))


def load(name: str) -> bytes:
    return fixture_bytes(f"gemini/{name}")


def sse(*payloads: dict[str, Any]) -> bytes:
    """Gemini ``alt=sse`` framing (CRLF, data only, no terminator)."""
    return b"".join(b"data: " + json.dumps(p).encode() + b"\r\n\r\n" for p in payloads)


def raw_events(name: str) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:])
        for line in load(name).decode("utf-8").splitlines()
        if line.startswith("data: ")
    ]


def raw_parts(name: str) -> list[dict[str, Any]]:
    return [
        part
        for event in raw_events(name)
        for candidate in event.get("candidates", [])[:1]
        for part in candidate.get("content", {}).get("parts", [])
    ]


# --------------------------------------------------------------------------- every fixture


def test_every_fixture_is_present() -> None:
    assert len(FILES) == 20


@pytest.mark.parametrize("name", FILES)
def test_fixture_decodes_to_a_contract_valid_stream(name: str) -> None:
    chunks = list(check_contract(decode(load(name), wire=WIRE)))
    assert isinstance(chunks[-1], Finish)


@pytest.mark.parametrize("name", FILES)
def test_fixture_matches_the_raw_parts(name: str) -> None:
    """A naive reference: join the raw parts' texts and collect their signatures."""
    parts = raw_parts(name)
    result = run(load(name))
    visible = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
    thoughts = "".join(p["text"] for p in parts if "text" in p and p.get("thought"))
    assert result.text == visible
    assert result.reasoning == thoughts
    signatures = [p["thoughtSignature"] for p in parts if "thoughtSignature" in p]
    replayed = [p["thoughtSignature"] for p in (result.replay_state or {}).get("parts", []) if "thoughtSignature" in p]
    assert replayed == signatures


# --------------------------------------------------------------------------- explicit values


@dataclass(frozen=True)
class Snip:
    """A long string given by its length, beginning and end."""

    length: int
    head: str
    tail: str

    def matches(self, value: str) -> bool:
        return len(value) == self.length and value.startswith(self.head) and value.endswith(self.tail)


def same(value: str, expected: str | Snip) -> bool:
    return expected.matches(value) if isinstance(expected, Snip) else value == expected


@dataclass(frozen=True)
class Expect:
    blocks: tuple[str, ...]
    text: str | Snip
    usage: TokenUsage
    finish: str
    raw: str
    response_id: str
    model: str
    reasoning: str | Snip = ""
    tools: tuple[tuple[str, str, str], ...] = ()  # id, name, JSON arguments
    # replay parts: (kind, signature head or None) in order
    replay: tuple[tuple[str, str | None], ...] = ()
    failure: str | None = None


def naive_partial_args(name: str) -> dict[str, Any]:
    """The arguments a recording's ``partialArgs`` spell, read naively: each ``jsonPath``
    (``$.a.b[0].c``) set to its value, string pieces appended."""
    args: dict[str, Any] = {}
    for part in raw_parts(name):
        for piece in part.get("functionCall", {}).get("partialArgs", []):
            steps = [int(s) if s.isdigit() else s for s in piece["jsonPath"][2:].replace("]", "").replace("[", ".").split(".")]
            node: Any = args
            for step, after in zip(steps, steps[1:]):
                if isinstance(node, list):
                    while len(node) <= step:
                        node.append(None)
                    if node[step] is None:
                        node[step] = [] if isinstance(after, int) else {}
                    node = node[step]
                else:
                    node = node.setdefault(step, [] if isinstance(after, int) else {})
            last = steps[-1]
            if isinstance(node, list):
                while len(node) <= last:
                    node.append(None)
            if "stringValue" in piece:
                current = node[last] if isinstance(node, list) else node.get(last)
                node[last] = (current or "") + piece["stringValue"]
            else:
                node[last] = next(v for k, v in piece.items() if k.endswith("Value"))
    return args


NESTED_ARGS = naive_partial_args("vertex_function_call_partial_args_nested.sse")


EXPECTED: dict[str, Expect] = {
    "text.sse": Expect(
        blocks=("text",),
        text="The capital of France is Paris.\n",
        usage=TokenUsage(13, 8),
        finish="stop",
        raw="STOP",
        response_id="w1peaMz6INOvnvgPgYfPiQY",
        model="gemini-2.0-flash-exp",
        replay=(("text", None),),
    ),
    "function_call.sse": Expect(
        blocks=("tool",),
        text="",
        usage=TokenUsage(52, 5),
        finish="tool-calls",
        raw="STOP",
        response_id="1lpeaMTxIpW1nvgP-O3vwQY",
        model="gemini-2.0-flash",
        tools=(("call-0", "get_capital", '{"country":"France"}'),),
        replay=(("functionCall", None),),
    ),
    "function_call_thought_signature_gemini3.sse": Expect(
        blocks=("tool",),
        text="",
        usage=TokenUsage(29, 10 + 202, reasoning_tokens=202),
        finish="tool-calls",
        raw="STOP",
        response_id="QUVVadTSNJ6_qtsPvN7J8Q0",
        model="gemini-3-pro-preview",
        tools=(("call-0", "get_country", "{}"),),
        replay=(("functionCall", "EpwICpkIAXLI2nxlU6gs"),),
    ),
    # gemini-3.5-flash: the server gives each call an id of its own; they are the call ids
    "function_call_ids_thought_signature_gemini35.sse": Expect(
        blocks=("tool", "tool"),
        text="",
        usage=TokenUsage(71, 33 + 93, reasoning_tokens=93),
        finish="tool-calls",
        raw="STOP",
        response_id="FyIhav7bJNyw4-EP6eCsqA0",
        model="gemini-3.5-flash",
        tools=(
            ("dv8szvqe", "get_weather", '{"location":"Boston"}'),
            ("j80tal12", "get_weather", '{"location":"New Delhi"}'),
        ),
        replay=(("functionCall", "EvsDCvgDAQw51sfOm202"), ("functionCall", None)),
    ),
    # Google Search grounding on gemini-3-flash: 16 supports whose offsets count UTF-8 bytes;
    # the search results fed back are toolUsePromptTokenCount (37441), billed as input
    "gemini3_flash_grounding_supports_byte_offsets_tool_use_prompt_tokens.sse": Expect(
        blocks=("text",),
        text=Snip(4111, "This week (January 21–28, 2026) saw a massive wave", 'backing cybersecurity platforms built for "cloud risk."'),
        usage=TokenUsage(106 + 37441, 918 + 2472, reasoning_tokens=2472),
        finish="stop",
        raw="STOP",
        response_id="jXZ5ac20I8fh_uMP2ZS6uAY",
        model="gemini-3-flash-preview",
        replay=(("text", None), ("text", "Et0oCtooAXLI2nz0vhTi")),
    ),
    "empty_text_thought_signature_gemini3.sse": Expect(
        blocks=("text",),
        text='There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.',
        usage=TokenUsage(9, 29 + 256, reasoning_tokens=256),
        finish="stop",
        raw="STOP",
        response_id="dX6LadKVC7SZ28oPr9yJoQs",
        model="gemini-3-pro-preview",
        replay=(("text", None), ("text", "Eo0HCooHAb4+9vutXdtK")),
    ),
    "vertex_text_thought_signature.sse": Expect(
        blocks=("text",),
        text="OK",
        usage=TokenUsage(5, 1 + 100, reasoning_tokens=100),
        finish="stop",
        raw="STOP",
        response_id="a9--aa6MOKL4vdIPz7X2iQ4",
        model="gemini-3-flash-preview",
        replay=(("text", "CiQBjz1rX+z7CAOCNB0a"),),
    ),
    "usage_thoughts_service_tier.sse": Expect(
        blocks=("text",),
        text="".join(f"{n}\n" for n in range(1, 30)) + "30",
        usage=TokenUsage(18, 80 + 35, reasoning_tokens=35),
        finish="stop",
        raw="STOP",
        response_id="ru1garvBEoOiqtsP2fznmQw",
        model="gemini-2.5-flash",
        replay=(("text", None),),
    ),
    "thought_parts_with_signature.sse": Expect(
        blocks=("reasoning", "text"),
        text=Snip(
            1938,
            "This is a great question! Safely crossing the street is all about being aware and predictable.",
            "The most important rule is to **stay alert and be predictable**. Always assume a driver might not see you.",
        ),
        reasoning=Snip(1575, "**Clarifying User Goals**\n\nI'm currently focused on defining", "regardless of specific circumstances or locations.\n\n\n"),
        usage=TokenUsage(34, 469 + 787, reasoning_tokens=787),
        finish="stop",
        raw="STOP",
        response_id="beHBaJfEMIi-qtsP3769-Q8",
        model="gemini-2.5-pro",
        replay=(("thought", None), ("text", "CiIB0e2Kb6Syj1a961Ef"), ("text", None)),
    ),
    "vertex_thought_then_max_tokens.sse": Expect(
        blocks=("reasoning", "text"),
        text="We",
        reasoning=(
            "**Exploring Solutions**\n\nI've begun by considering the properties of the Diophantine "
            "equation $x^2 + y^2 + z^2 = 3xyz$. My initial focus is on identifying any trivial or simple "
            "solutions, and then I plan to investigate the equation’s behavior more broadly.\n\n"
        ),
        usage=TokenUsage(28, 1 + 59, reasoning_tokens=59),
        finish="max-tokens",
        raw="MAX_TOKENS",
        response_id="RFPIapGQMtKCidsPmcai6AM",
        model="gemini-2.5-flash",
        replay=(("thought", None), ("text", None)),
    ),
    "vertex_malformed_function_call.sse": Expect(
        blocks=(),
        text="",
        usage=TokenUsage(34, 0),
        finish="error",
        raw="MALFORMED_FUNCTION_CALL",
        response_id="rFHIasmZJPCXgLUP6vbpsAc",
        model="gemini-2.5-flash",
        failure="MALFORMED_FUNCTION_CALL",
    ),
    "vertex_function_call_partial_args.sse": Expect(
        blocks=("tool", "tool"),
        text="",
        usage=TokenUsage(26, 23 + 132, reasoning_tokens=132),
        finish="tool-calls",
        raw="STOP",
        response_id="dqHOab6xGLzWodAPkPuViA4",
        model="gemini-3.1-pro-preview",
        tools=(
            ("call-0", "getWeather", '{"location":"Boston"}'),
            ("call-1", "getWeather", '{"location":"San Francisco"}'),
        ),
        replay=(("functionCall", "CiMBjz1rX25KieIB4d4A"), ("functionCall", None)),
    ),
    "vertex_thought_then_no_args_function_calls.sse": Expect(
        blocks=("reasoning", "tool", "tool", "tool", "tool"),
        text="",
        reasoning=Snip(320, "**Processing User Requests**\n\n", 'proceeding with "B" and "C" in parallel as instructed.\n\n\n'),
        usage=TokenUsage(249, 58 + 183, reasoning_tokens=183),
        finish="tool-calls",
        raw="STOP",
        response_id="_vr4aYiWEJnYodAPkujX0QM",
        model="gemini-3-flash-preview",
        tools=(
            ("call-1", "read_theme", "{}"),
            ("call-2", "read_screen", '{"id":"A"}'),
            ("call-3", "read_screen", '{"id":"B"}'),
            ("call-4", "read_screen", '{"id":"C"}'),
        ),
        replay=(
            ("thought", None),
            ("functionCall", "AY89a18a8/Loc2wl5oft"),
            ("functionCall", None),
            ("functionCall", None),
            ("functionCall", None),
        ),
    ),
    "code_execution.sse": Expect(
        blocks=("text",),
        text="The result of $65465 - 6544 \\times 65464 - 6 + 1.02255$ is **-428,330,955.97745**.",
        usage=TokenUsage(147 + 360, 108 + 168, reasoning_tokens=168),
        finish="stop",
        raw="STOP",
        response_id="n1P6abvRFaKdz7IPkcuQ2Aw",
        model="gemini-3-flash-preview",
        replay=(
            ("executableCode", "EqADCp0DAQw51sctaTt6"),
            ("codeExecutionResult", None),
            ("text", None),
            ("text", "EoECCv4BAQw51segR8LG"),
        ),
    ),
    "grounding_web_search.sse": Expect(
        blocks=("text",),
        text=Snip(
            926,
            "### Weather in San Francisco is Mild and Partly Cloudy Today\n\n**San Francisco, CA**",
            "The chance of rain remains low throughout the day.",
        ),
        usage=TokenUsage(17 + 102, 241 + 412, reasoning_tokens=412),
        finish="stop",
        raw="STOP",
        response_id="ftnJaMmAMcm-qtsPwvCCoAo",
        model="gemini-2.5-pro",
        replay=(("text", None),),
    ),
    "function_call_array_partial_args_no_terminal_call.sse": Expect(
        # the arguments stream as partialArgs into an array of objects; the last chunk is an
        # empty text part with the finish, not the usual terminal empty functionCall
        blocks=("tool",),
        text="",
        usage=TokenUsage(54, 74 + 121, reasoning_tokens=121),
        finish="tool-calls",
        raw="STOP",
        response_id="3noMaojQL_2s6tkPiO26qQ4",
        model="gemini-3-flash-preview",
        tools=(
            (
                "call-0",
                "writeItems",
                '{"operations":[{"action":"add","description":"Fresh red apple","itemid":"apple_001","price":0.5},'
                '{"action":"add","description":"Ripe yellow banana","itemid":"banana_001","price":0.3}]}',
            ),
        ),
        replay=(("functionCall", "AY89a19ZkXSMGh/bSOlw"),),
    ),
    "url_context_metadata_web_fetch.sse": Expect(
        blocks=("text",),
        text="Pydantic AI Gateway is now available!",
        # the fetched page's tokens are toolUsePromptTokenCount: input
        usage=TokenUsage(32 + 4610, 25 + 37, reasoning_tokens=37),
        finish="stop",
        raw="STOP",
        response_id="oRIhaZOoA8L-jrEPzfDTmQc",
        model="gemini-2.5-flash",
        replay=(("text", None),),
    ),
    "file_search_retrieved_context_citations.sse": Expect(
        blocks=("text",),
        text="The capital of France is Paris. The city is well-known for its famous landmarks, including the Eiffel Tower.",
        usage=TokenUsage(15 + 770, 37 + 742, reasoning_tokens=742),
        finish="stop",
        raw="STOP",
        response_id="6hkqaYC5BbGEz7IPwb3ggA8",
        model="gemini-2.5-pro",
        replay=(("executableCode", None), ("text", None)),
    ),
    # tools: [{mcpServers: [...]}]: the server ran the call and answered it in the same
    # response (functionResponse in the model's content), then the model wrote its answer
    "server_side_mcp_function_call_response_text.sse": Expect(
        blocks=("text",),
        text="On February 2nd, 2026, the weather in New York will range from a low of -13°C at 8:00 AM "
        "to a high of 0.9°C at 7:00 PM.",
        usage=TokenUsage(22 + 124, 101 + 573, reasoning_tokens=573),
        finish="stop",
        raw="STOP",
        response_id="QGiSafzoFOuRjrEPw4nssAI",
        model="gemini-2.5-flash",
        replay=(("functionCall", None), ("functionResponse", None), ("text", None)),
    ),
    "vertex_function_call_partial_args_nested.sse": Expect(
        blocks=("tool",),
        text="",
        usage=TokenUsage(31, 684 + 1026, reasoning_tokens=1026),
        finish="tool-calls",
        raw="STOP",
        response_id="tjXVaYaxFISTq8YP_MWiyAo",
        model="gemini-3.1-pro-preview",
        tools=(("call-0", "cookRecipe", json.dumps(NESTED_ARGS, ensure_ascii=False, separators=(",", ":"))),),
        replay=(("functionCall", "CmIBjz1rX0OQAtrZnJaE"),),
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


def _part_kind(part: dict[str, Any]) -> str:
    if part.get("thought"):
        return "thought"
    return next(k for k in part if k != "thoughtSignature")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_values(name: str) -> None:
    expect = EXPECTED[name]
    result = run(load(name))
    assert tuple(_kind(b) for b in result.blocks) == expect.blocks
    assert same(result.text, expect.text)
    assert same(result.reasoning, expect.reasoning)
    assert all(b.signature is None for b in result.blocks if isinstance(b, ReasoningBlock))
    assert tuple((c.id, c.name, c.arguments) for c in result.tool_calls) == expect.tools
    assert all(not c.arguments_truncated for c in result.tool_calls)
    assert result.usage == expect.usage
    assert (result.finish.kind, result.finish.raw) == (expect.finish, expect.raw)
    if expect.failure is None:
        assert result.finish.failure is None
    else:
        assert result.finish.failure is not None and result.finish.failure.code == expect.failure
    assert result.metadata is not None
    assert (result.metadata.response_id, result.metadata.model) == (expect.response_id, expect.model)
    parts = (result.replay_state or {"parts": []})["parts"]
    got = tuple(
        (_part_kind(p), p["thoughtSignature"][:20] if "thoughtSignature" in p else None) for p in parts
    )
    assert got == expect.replay
    if result.replay_state is not None:
        assert result.replay_state["wire"] == "gemini"
        client_calls = [c for c in result.replay_state.get("call_ids", []) if c is not None]  # None: server-run
        assert client_calls == [c.id for c in result.tool_calls]


def test_whole_function_call_is_start_one_delta_end() -> None:
    chunks = list(decode(load("function_call.sse"), wire=WIRE))
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert [(d.id, d.name, d.arguments_delta) for d in deltas] == [
        ("call-0", "get_capital", '{"country":"France"}')
    ]


def test_signatures_stay_on_their_exact_parts() -> None:
    name = "thought_parts_with_signature.sse"
    signed_raw = next(p for p in raw_parts(name) if "thoughtSignature" in p)
    parts = run(load(name)).replay_state["parts"]
    assert parts[1] == signed_raw  # the signed part exactly as received, never merged
    assert parts[2]["text"].startswith(" guide that is widely taught for safety")
    assert "thoughtSignature" not in parts[2]
    # the signature on an empty text part is kept, on that part
    empty = run(load("empty_text_thought_signature_gemini3.sse")).replay_state["parts"]
    assert empty[-1] == raw_parts("empty_text_thought_signature_gemini3.sse")[-1]
    assert empty[-1]["text"] == ""
    # the first streamed call carries the signature its first piece came with
    vertex = run(load("vertex_function_call_partial_args.sse")).replay_state["parts"]
    assert vertex[0]["thoughtSignature"] == raw_parts("vertex_function_call_partial_args.sse")[0]["thoughtSignature"]
    assert vertex[0]["functionCall"] == {"name": "getWeather", "args": {"location": "Boston"}}


def test_code_execution_parts_are_replayed_verbatim() -> None:
    name = "code_execution.sse"
    parts = run(load(name)).replay_state["parts"]
    raw = raw_parts(name)
    assert parts[0] == raw[0] and parts[1] == raw[2]


# --------------------------------------------------------------------------- synthetic streams


def candidate(parts: list[dict[str, Any]], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"content": {"role": "model", "parts": parts}, **extra}
    if finish is not None:
        body["finishReason"] = finish
    return {"candidates": [body], "modelVersion": "gemini-test", "responseId": "r1"}


def with_usage(payload: dict[str, Any], **usage: int) -> dict[str, Any]:
    return {**payload, "usageMetadata": usage}


def test_eof_before_a_finish_reason_is_stream_closed() -> None:
    raw = load("text.sse")
    cut = raw.rindex(b"data: ")
    result = run(raw[:cut])
    assert result.finish.kind == "error"
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    assert result.text == "The capital of France"


def test_eof_after_a_finish_reason_is_normal() -> None:
    result = run(load("text.sse"))
    assert result.finish.kind == "stop"


def test_eof_inside_a_streamed_call_marks_it_truncated() -> None:
    raw = load("vertex_function_call_partial_args.sse")
    cut = raw.index(b'"stringValue":"San Francisco"')
    cut = raw.index(b"\r\n\r\n", cut) + 4  # right after that event
    result = run(raw[:cut])
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"
    first, second = result.tool_calls
    assert (first.arguments, first.arguments_truncated) == ('{"location":"Boston"}', False)
    assert (second.arguments, second.arguments_truncated) == ('{"location":"San Francisco"}', True)


@pytest.mark.parametrize(
    ("error", "code", "category", "retryable"),
    [
        (
            {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"},
            "RATE_LIMIT",
            "rate_limit",
            True,
        ),
        (
            {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"},
            "OVERLOADED",
            "provider_overloaded",
            True,
        ),
        (
            {"code": 500, "message": "Internal error encountered in StreamGenerateContent.", "status": "INTERNAL"},
            "SERVER",
            "provider_overloaded",
            True,
        ),
    ],
)
def test_error_object_in_the_stream_keeps_partial_output(
    error: dict[str, Any], code: str, category: str, retryable: bool
) -> None:
    data = sse(
        with_usage(candidate([{"text": "Partial "}]), promptTokenCount=4, candidatesTokenCount=1),
        {"error": error},
        candidate([{"text": "never"}], "STOP"),
    )
    result = run(data, request_id="rq-1")
    assert result.finish.kind == "error"
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == (code, category, retryable)
    assert failure.request_id == "rq-1" and failure.provider == "gemini"
    assert error["message"] not in failure.message
    assert result.text == "Partial "
    assert result.usage == TokenUsage(4, 1)


@pytest.mark.parametrize(
    "reason", ["SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"]
)
def test_blocked_finish_reasons(reason: str) -> None:
    result = run(sse(candidate([{"text": "Some"}]), candidate([], reason)))
    assert (result.finish.kind, result.finish.raw) == ("error", reason)
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == ("CONTENT_FILTER", "content_blocked", False)
    assert result.text == "Some"


def test_prompt_feedback_block_reason() -> None:
    data = sse(
        {
            "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 12, "totalTokenCount": 12},
            "modelVersion": "gemini-2.5-flash",
        }
    )
    result = run(data)
    assert (result.finish.kind, result.finish.raw) == ("error", "PROHIBITED_CONTENT")
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == ("CONTENT_FILTER", "content_blocked", False)
    assert result.usage == TokenUsage(12, 0)


def test_malformed_function_call_fixture() -> None:
    result = run(load("vertex_malformed_function_call.sse"))
    failure = result.finish.failure
    assert failure is not None
    assert (failure.code, failure.category, failure.retryable) == ("MALFORMED_FUNCTION_CALL", "model_error", True)
    assert failure.detail is not None and failure.detail.startswith("Malformed function call")
    assert "Tokyo" not in failure.message


def test_usage_last_record_with_counts_wins_and_cache_is_subtracted() -> None:
    data = sse(
        with_usage(candidate([{"text": "a"}]), promptTokenCount=1000, candidatesTokenCount=1),
        {**candidate([{"text": "b"}]), "usageMetadata": {"trafficType": "ON_DEMAND"}},
        with_usage(
            candidate([{"text": "c"}], "STOP"),
            promptTokenCount=1000,
            cachedContentTokenCount=800,
            toolUsePromptTokenCount=50,
            candidatesTokenCount=7,
            thoughtsTokenCount=20,
        ),
        {"usageMetadata": {"trafficType": "ON_DEMAND"}},
    )
    result = run(data)
    assert result.usage == TokenUsage(250, 27, cache_read_tokens=800, reasoning_tokens=20)
    assert result.text == "abc"


def test_signed_thought_part_sets_the_reasoning_signature() -> None:
    data = sse(candidate([{"text": "hmm", "thought": True, "thoughtSignature": "c2ln"}, {"text": "Yes."}], "STOP"))
    result = run(data)
    assert result.blocks == (ReasoningBlock("hmm", signature="c2ln"), TextBlock("Yes."))


def test_kinds_interleave_as_separate_blocks() -> None:
    data = sse(
        candidate([{"text": "t1", "thought": True}]),
        candidate([{"text": "a1"}]),
        candidate([{"text": "t2", "thought": True}]),
        candidate([{"functionCall": {"name": "f", "args": {"x": 1}, "id": "fc_1"}}]),
        candidate([{"text": "a2"}], "STOP"),
    )
    result = run(data)
    assert [_kind(b) for b in result.blocks] == ["reasoning", "text", "reasoning", "tool", "text"]
    (call,) = result.tool_calls
    assert (call.id, call.arguments) == ("fc_1", '{"x":1}')
    assert result.finish.kind == "tool-calls"
    assert result.replay_state["call_ids"] == ["fc_1"]


def test_partial_args_nested_paths_and_value_types() -> None:
    data = sse(
        candidate([{"functionCall": {"name": "plan", "willContinue": True}, "thoughtSignature": "s1"}]),
        candidate([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.title", "stringValue": "Trip to ", "willContinue": True},
        ], "willContinue": True}}]),
        candidate([{"functionCall": {"partialArgs": [
            {"jsonPath": "$.title", "stringValue": "Zürich"},
            {"jsonPath": "$.days", "numberValue": 3},
            {"jsonPath": "$.flags.urgent", "boolValue": True},
            {"jsonPath": "$.stops[0].name", "stringValue": "Bern"},
            {"jsonPath": "$.stops[1].name", "stringValue": "Basel"},
            {"jsonPath": "$['odd key']", "nullValue": None},
        ], "willContinue": True}}]),
        candidate([{"functionCall": {}}], "STOP"),
    )
    result = run(data)
    (call,) = result.tool_calls
    assert json.loads(call.arguments) == {
        "title": "Trip to Zürich",
        "days": 3,
        "flags": {"urgent": True},
        "stops": [{"name": "Bern"}, {"name": "Basel"}],
        "odd key": None,
    }
    assert call.arguments == json.dumps(json.loads(call.arguments), ensure_ascii=False, separators=(",", ":"))
    (part,) = result.replay_state["parts"]
    assert part["thoughtSignature"] == "s1" and part["functionCall"]["args"]["days"] == 3


@pytest.mark.parametrize(
    "name", ["vertex_function_call_partial_args_nested.sse", "function_call_array_partial_args_no_terminal_call.sse"]
)
def test_recorded_partial_args_match_a_naive_path_reader(name: str) -> None:
    (call,) = run(load(name)).tool_calls
    assert json.loads(call.arguments) == naive_partial_args(name)


def test_recorded_url_context_retrievals_are_a_server_tool_summary() -> None:
    """``urlContextMetadata`` (recorded, url_context tool): which URLs the model fetched and
    whether each retrieval worked is a server tool's report, kept in ``server_tools``."""
    result = run(load("url_context_metadata_web_fetch.sse"))
    assert result.metadata is not None
    assert result.metadata.server_tools == (
        {"type": "url_context", "urls": [{"url": "https://ai.pydantic.dev", "status": "URL_RETRIEVAL_STATUS_SUCCESS"}]},
    )
    (block,) = result.blocks
    assert isinstance(block, TextBlock)
    assert [(c.kind, c.url, c.title) for c in block.citations] == [("url", "https://ai.pydantic.dev", "Pydantic AI")]


def test_a_call_the_server_ran_is_a_server_tool_not_the_clients_to_run() -> None:
    """Recorded (gemini-2.5-flash, server-side MCP): a functionCall with finishReason STOP,
    then the server's own functionResponse, then the answer. Nothing is left for the
    client to run: no tool call, a ``stop`` finish, the call in ``server_tools``, and both
    parts kept for the next turn (``call_ids`` None: not a call of the client's)."""
    result = run(load("server_side_mcp_function_call_response_text.sse"))
    assert result.tool_calls == () and result.finish.kind == "stop"
    assert result.metadata is not None
    assert result.metadata.server_tools == (
        {
            "type": "function_call",
            "name": "weather_server_get_weather",
            "arguments": {"endDate": "2026-02-02", "location": "New York", "startDate": "2026-02-02"},
        },
    )
    state = result.message().replay_state
    assert state["call_ids"] == [None]
    assert [next(iter(p)) for p in state["parts"]] == ["functionCall", "functionResponse", "text"]
    assert state["parts"][1] == raw_parts("server_side_mcp_function_call_response_text.sse")[1]
    # the first event's STOP ended the call's step: a stream cut after the server's answer
    # to it, before the model's, is cut short, not complete
    data = load("server_side_mcp_function_call_response_text.sse")
    events = data.split(b"\r\n\r\n")
    cut = run(b"\r\n\r\n".join(events[:2]) + b"\r\n\r\n")
    assert cut.finish.failure is not None and cut.finish.failure.code == "STREAM_CLOSED"
    assert cut.tool_calls == ()


def test_the_server_answers_a_call_by_id_and_the_others_stay_the_clients() -> None:
    data = sse(
        {"candidates": [{"content": {"parts": [
            {"functionCall": {"id": "a1", "name": "lookup", "args": {"q": "x"}}},
            {"functionCall": {"id": "b2", "name": "lookup", "args": {"q": "y"}}},
        ]}}]},
        {"candidates": [{"content": {"parts": [
            {"functionResponse": {"id": "b2", "name": "lookup", "response": {"result": "y!"}}},
        ]}, "finishReason": "STOP"}]},
    )
    result = run(data)
    assert [(c.id, c.arguments) for c in result.tool_calls] == [("a1", '{"q":"x"}')]
    assert result.finish.kind == "tool-calls"
    assert result.metadata is not None
    assert result.metadata.server_tools == ({"type": "function_call", "name": "lookup", "id": "b2", "arguments": {"q": "y"}},)
    assert result.message().replay_state["call_ids"] == ["a1", None]


def test_a_held_call_keeps_its_place_before_the_text_after_it() -> None:
    data = sse(
        {"candidates": [{"content": {"parts": [
            {"functionCall": {"name": "first", "args": {}}},
            {"functionCall": {"name": "second", "args": {"n": 2}}},
        ]}}]},
        {"candidates": [{"content": {"parts": [{"text": "and some text"}]}, "finishReason": "STOP"}]},
    )
    result = run(data)
    assert [type(b).__name__ for b in result.blocks] == ["ToolCallBlock", "ToolCallBlock", "TextBlock"]
    assert [(c.id, c.name) for c in result.tool_calls] == [("call-0", "first"), ("call-1", "second")]
    assert result.finish.kind == "tool-calls"
    assert result.metadata is None  # no server tool, no ids in these events


def test_failed_url_retrieval_is_reported_not_dropped() -> None:
    failed = {"urlMetadata": [{"retrievedUrl": "https://example.invalid", "urlRetrievalStatus": "URL_RETRIEVAL_STATUS_ERROR"}]}
    data = sse(
        {"candidates": [{"content": {"parts": [{"text": "I could not open it."}]}, "urlContextMetadata": failed}]},
        {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]},
    )
    result = run(data)
    assert result.metadata is not None
    assert result.metadata.server_tools == (
        {"type": "url_context", "urls": [{"url": "https://example.invalid", "status": "URL_RETRIEVAL_STATUS_ERROR"}]},
    )


def test_recorded_file_search_citations_name_the_store_and_the_supported_passages() -> None:
    result = run(load("file_search_retrieved_context_citations.sse"))
    (block,) = result.blocks
    assert isinstance(block, TextBlock)
    store = "fileSearchStores/testfilesearchstream-lsy34id7fwk0"
    assert [(c.kind, c.location, c.cited_text) for c in block.citations] == [
        ("document", store, "The capital of France is Paris"),
        ("document", store, "The city is well-known for its famous landmarks, including the Eiffel Tower"),
    ]
    # the file search ran as code: replayed, never text
    assert result.replay_state["parts"][0]["executableCode"]["code"].startswith("print(file_search.query(")


def test_parse_json_path() -> None:
    assert parse_json_path("$") == []
    assert parse_json_path("$.a.b[2]") == ["a", "b", 2]
    assert parse_json_path("$['x y'][0]") == ["x y", 0]
    assert parse_json_path('$["q\\"z"]') == ['q"z']
    assert parse_json_path("a.b") is None
    assert parse_json_path("$.a[") is None


def test_orphan_partial_args_and_unknown_parts_do_not_break() -> None:
    data = sse(
        candidate([{"functionCall": {"partialArgs": [{"jsonPath": "$.x", "stringValue": "y"}]}}]),
        candidate([{"inlineData": {"mimeType": "image/png", "data": "AAAA"}}, {"futurePart": {"a": 1}}]),
        candidate([{"text": "done"}], "STOP", groundingMetadata={"webSearchQueries": ["q"]}),
    )
    result = run(data)
    assert result.text == "done" and result.tool_calls == ()
    assert [_part_kind(p) for p in result.replay_state["parts"]] == ["inlineData", "futurePart", "text"]


def test_stop_without_content_is_empty_response() -> None:
    result = run(sse(candidate([{"text": ""}], "STOP")))
    assert result.finish.failure is not None and result.finish.failure.code == "EMPTY_RESPONSE"
