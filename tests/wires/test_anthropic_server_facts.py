"""What the Anthropic Messages wire says besides content: server-side fallback hops (the
``fallback`` block and the ``fallback_message`` iteration), a refusal's ``stop_details``,
the code-execution container, and prose beside a forced tool's structured answer.

Streams: the anthropic-sdk-python test fixtures and a stream written from the SDK's
published types (tests/fixtures/documented/PROVENANCE.md: no live recording of a fallback
is public), and the real recordings of tests/fixtures/real (a code-execution container, a
sentence written before the forced ``json`` tool). Each new path is decoded whole, byte
by byte and at random split points.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import StreamDecoder, decode
from dshstream._core.partial_json import partial_json
from dshstream._core.types import Finish, ReasoningBlock, StreamChunk, TextBlock, TextDelta, TokenUsage
from dshstream._core.wires.anthropic import AnthropicTranslator
from helpers import TESTS, fixture_bytes, split_at

WIRE = "anthropic"
DOCUMENTED = TESTS / "fixtures" / "documented" / "anthropic"


def documented(name: str) -> bytes:
    return (DOCUMENTED / name).read_bytes()


def run(data: bytes | list[bytes]) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=WIRE)))


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def start(model: str = "claude-fable-5") -> dict[str, Any]:
    usage = {"input_tokens": 10, "output_tokens": 1}
    return {"type": "message_start", "message": {"id": "msg_x", "model": model, "usage": usage}}


def text_block(index: int, text: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": index},
    ]


STOP = {"type": "message_stop"}


# --------------------------------------------------------------------------- server-side fallback


def test_a_fallback_block_is_a_metadata_fact_not_text_and_the_served_model_is_named() -> None:
    result = run(documented("sdk_fallback_block.sse"))
    assert result.text == "Hello there!"
    assert [type(block) for block in result.blocks] == [TextBlock]
    assert result.metadata is not None
    assert result.metadata.server_fallbacks == (
        {"from": "claude-opus-4-7", "to": "claude-sonnet-4-5", "trigger": "refusal"},
    )
    # message_start named the requested model; the fallback block names the one that served
    assert result.metadata.model == "claude-sonnet-4-5"
    assert result.finish.kind == "stop"


def test_a_fallback_block_is_replayed_verbatim_in_its_place() -> None:
    raw = documented("sdk_fallback_block.sse")
    sent = next(
        json.loads(line[6:])["content_block"]
        for line in raw.decode().splitlines()
        if line.startswith("data: ") and '"type":"fallback"' in line
    )
    content = run(raw).replay_state["content"]
    assert content == [sent, {"type": "text", "text": "Hello there!"}]


def test_the_fallback_message_iteration_is_billed_and_the_declining_model_is_not() -> None:
    result = run(documented("fallback_served_iterations.sse"))
    assert result.usage == TokenUsage(40, 90, cache_read_tokens=30, cache_write_tokens=0)
    assert result.metadata is not None
    assert result.metadata.usage_by_model == {"claude-fable-5": TokenUsage(40, 12, cache_read_tokens=0, cache_write_tokens=0)}
    assert result.metadata.model == "claude-opus-4-8"
    assert result.metadata.server_fallbacks == (
        {"from": "claude-fable-5", "to": "claude-opus-4-8", "trigger": "refusal", "category": "cyber"},
    )
    assert result.text == "A port scanner sends probes and reports which ports answer."
    signatures = [b.signature for b in result.blocks if isinstance(b, ReasoningBlock)]
    assert len(signatures) == 2 and all(signatures)
    # both thinking runs flank the fallback block: the API needs it in place to validate them
    kinds = [entry["type"] for entry in result.replay_state["content"]]
    assert kinds == ["thinking", "fallback", "thinking", "text"]


def test_a_fallback_message_without_a_fallback_block_still_names_who_served() -> None:
    # no preceding model ran this turn, so there is no boundary block (BetaFallbackBlock's
    # docstring): the fallback_message entry alone says a fallback model served
    iterations = [{"type": "fallback_message", "model": "claude-opus-4-8", "input_tokens": 7, "output_tokens": 5}]
    usage = {"output_tokens": 5, "iterations": iterations}
    data = sse(start(), *text_block(0, "ok"), {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}, STOP)
    result = run(data)
    assert result.usage == TokenUsage(7, 5, cache_read_tokens=0, cache_write_tokens=0)
    assert result.metadata is not None
    assert result.metadata.model == "claude-opus-4-8"
    assert result.metadata.usage_by_model is None


def test_a_refusal_keeps_its_stop_details_and_no_message_shows_the_credit_token() -> None:
    result = run(documented("sdk_refusal_fallback_credit.sse"))
    assert result.finish.kind == "error"
    failure = result.finish.failure
    assert failure is not None and failure.code == "CONTENT_FILTER"
    assert result.metadata is not None
    details = result.metadata.stop_details
    assert details is not None
    assert details["fallback_credit_token"] == "tok_synthetic_fixture_a"
    assert details["fallback_has_prefill_claim"] is True
    assert "tok_synthetic" not in failure.message
    assert result.text == "Hi"  # partial output kept


def test_a_refusal_names_the_recommended_model() -> None:
    details = {"type": "refusal", "category": "bio", "fallback_credit_token": "tok_x", "recommended_model": "claude-opus-4-8"}
    data = sse(start(), *text_block(0, "I can't"), {"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_details": details}, "usage": {"output_tokens": 3}}, STOP)
    result = run(data)
    assert result.metadata is not None and result.metadata.stop_details == details
    failure = result.finish.failure
    assert failure is not None and "claude-opus-4-8" in failure.message and "tok_x" not in failure.message


# --------------------------------------------------------------------------- containers


def test_the_code_execution_container_is_kept_and_replayed() -> None:
    result = run(fixture_bytes("anthropic/cache_creation_and_read_code_execution.sse"))
    assert result.metadata is not None
    assert result.metadata.container == {
        "id": "container_01Qh1LG5zm6onKQjYrHnhrvi",
        "expires_at": "2026-07-30T18:54:08.960841Z",
    }
    assert result.replay_state["container"] == "container_01Qh1LG5zm6onKQjYrHnhrvi"


def test_metadata_facts_survive_the_dict_round_trip() -> None:
    from dshstream._core.types import metadata_from_dict, metadata_to_dict

    for data in (documented("fallback_served_iterations.sse"), fixture_bytes("anthropic/cache_creation_and_read_code_execution.sse")):
        metadata = run(data).metadata
        assert metadata is not None
        assert metadata_from_dict(json.loads(json.dumps(metadata_to_dict(metadata)))) == metadata


# --------------------------------------------------------------------------- structured output


def forced(data: bytes | list[bytes], tool: str = "json") -> list[StreamChunk]:
    translator = AnthropicTranslator()
    translator.unwrap_tool_call(tool)
    decoder = StreamDecoder(translator)
    chunks: list[StreamChunk] = []
    for piece in [data] if isinstance(data, bytes) else data:
        chunks.extend(decoder.feed(piece))
    chunks.extend(decoder.close())
    return list(check_contract(chunks))


PREAMBLE = "I'll invoke the JSON response tool."


def test_a_sentence_before_the_forced_tool_is_commentary_never_glued_to_the_json() -> None:
    chunks = forced(fixture_bytes("anthropic/tool_use_with_args.sse"))
    result = assemble(chunks)
    answer = json.loads(result.text)  # the text is the JSON document only
    assert answer["elements"][0]["location"] == "San Francisco"
    assert PREAMBLE not in result.text
    assert not any(isinstance(c, TextDelta) and PREAMBLE in c.text for c in chunks)
    assert result.metadata is not None and result.metadata.commentary == PREAMBLE
    assert result.finish.kind == "stop"
    assert result.tool_calls == ()
    snapshots = list(partial_json(chunks))  # raised before: the text was not JSON
    assert snapshots[-1].done and snapshots[-1].value == answer
    # the replay keeps what the model wrote, in order: its sentence, then the answer as text
    assert result.replay_state["content"] == [
        {"type": "text", "text": PREAMBLE},
        {"type": "text", "text": result.text},
    ]


def test_prose_with_no_forced_call_after_it_is_the_text_after_all() -> None:
    data = sse(start(), *text_block(0, "I cannot answer in that format."), {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 6}}, STOP)
    chunks = forced(data)
    result = assemble(chunks)
    assert result.text == "I cannot answer in that format."
    assert result.finish.kind == "stop"
    assert result.metadata is not None and result.metadata.commentary is None


def test_prose_of_a_cut_stream_is_kept_as_text() -> None:
    chunks = forced(sse(start(), *text_block(0, "Let me think")))
    result = assemble(chunks)
    assert result.text == "Let me think"
    assert result.finish.failure is not None and result.finish.failure.code == "STREAM_CLOSED"


# --------------------------------------------------------------------------- split anywhere

SPLIT_CASES = (
    ("documented", "sdk_fallback_block.sse"),
    ("documented", "fallback_served_iterations.sse"),
    ("documented", "sdk_refusal_fallback_credit.sse"),
    ("real", "anthropic/cache_creation_and_read_code_execution.sse"),
)


def _bytes(where: str, name: str) -> bytes:
    return documented(name) if where == "documented" else fixture_bytes(name)


def test_new_paths_decode_the_same_byte_by_byte() -> None:
    for where, name in SPLIT_CASES:
        data = _bytes(where, name)
        whole = list(decode(data, wire=WIRE))
        assert isinstance(whole[-1], Finish)
        assert list(decode([data[i : i + 1] for i in range(len(data))], wire=WIRE)) == whole, name
    data = fixture_bytes("anthropic/tool_use_with_args.sse")
    assert forced([data[i : i + 1] for i in range(len(data))]) == forced(data)


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(SPLIT_CASES), cuts=st.lists(st.integers(min_value=1, max_value=8000), max_size=40))
def test_new_paths_decode_the_same_at_any_split(case: tuple[str, str], cuts: list[int]) -> None:
    data = _bytes(*case)
    assert list(decode(split_at(data, cuts), wire=WIRE)) == list(decode(data, wire=WIRE))


@settings(max_examples=40, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=2000), max_size=40))
def test_the_forced_answer_path_is_split_invariant(cuts: list[int]) -> None:
    data = fixture_bytes("anthropic/tool_use_with_args.sse")
    assert forced(split_at(data, cuts)) == forced(data)
