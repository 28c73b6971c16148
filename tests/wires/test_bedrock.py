"""The Bedrock ConverseStream wire: recorded bodies, synthetic exception frames, stop
reasons, usage and replay state."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from helpers import fake_key

from dshstream._core.contract import check_contract
from dshstream._core.decode import StreamDecoder, decode, detect_wire, translator_for
from dshstream._core.eventstream import encode_message
from dshstream._core.types import (
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    UsageChunk,
)

from helpers import FIXTURES, fixture_bytes

WIRE = "bedrock-converse"


def _run(data: bytes | list[bytes]) -> list[StreamChunk]:
    return list(check_contract(list(decode(data, wire=WIRE))))


def _blocks(chunks: list[StreamChunk]) -> list[Any]:
    return [c.block for c in chunks if isinstance(c, BlockEnd)]


def _finish(chunks: list[StreamChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    return encode_message(
        {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
        json.dumps(payload).encode(),
    )


def _exception(kind: str, message: str) -> bytes:
    return encode_message(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


START = _event("messageStart", {"role": "assistant"})


def _text(index: int, text: str) -> bytes:
    return _event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}})


def _stop(reason: str) -> bytes:
    return _event("messageStop", {"stopReason": reason})


END = _event("metadata", {"usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}, "metrics": {"latencyMs": 9}})


def test_detect_wire_recognises_the_binary_framing() -> None:
    for path in (FIXTURES / "bedrock").glob("*.eventstream"):
        expected = "bedrock-invoke" if path.name.startswith("invoke_") else WIRE
        assert detect_wire(path.read_bytes()) == expected
    assert detect_wire(b"\x00\x00\x00\x10\x00\x00\x00\x00" + b"\x00" * 8) != WIRE  # bad CRC


def test_decoder_picks_eventstream_framing_only_for_bedrock() -> None:
    from dshstream._core.eventstream import EventStreamDecoder
    from dshstream._core.sse import SSEDecoder

    assert isinstance(StreamDecoder(translator_for(WIRE)).framer, EventStreamDecoder)
    assert isinstance(StreamDecoder(translator_for("anthropic")).framer, SSEDecoder)


def test_text_usage_latency() -> None:
    chunks = _run(fixture_bytes("bedrock/nova_micro_text.eventstream"))
    (block,) = _blocks(chunks)
    assert isinstance(block, TextBlock) and block.text.startswith("The capital of France is Paris.")
    usage = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert usage == [TokenUsage(13, 82)]
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw) == ("stop", "end_turn")
    assert finish.metadata is not None and finish.metadata.latency_ms == 522
    assert finish.replay_state == {"wire": WIRE, "content": [{"text": block.text}]}


def test_cache_counts_are_disjoint() -> None:
    write = _run(fixture_bytes("bedrock/claude37_cache_write.eventstream"))
    read = _run(fixture_bytes("bedrock/claude37_cache_read.eventstream"))
    assert [c.usage for c in write if isinstance(c, UsageChunk)] == [TokenUsage(11, 236, 0, 1028)]
    assert [c.usage for c in read if isinstance(c, UsageChunk)] == [TokenUsage(12, 250, 1028, 0)]


def test_tool_use_fragments_concatenate() -> None:
    chunks = _run(fixture_bytes("bedrock/claude3_sonnet_tool_use_first.eventstream"))
    (call,) = _blocks(chunks)
    assert isinstance(call, ToolCallBlock)
    assert call.name == "get_cities_list" and call.id.startswith("tooluse_")
    assert not call.arguments_truncated
    assert isinstance(json.loads(call.arguments), dict)
    finish = _finish(chunks)
    assert finish.reason.kind == "tool-calls"
    assert finish.replay_state["content"][0]["toolUse"]["input"] == json.loads(call.arguments)


def test_two_tool_uses_get_one_block_each() -> None:
    blocks = _blocks(_run(fixture_bytes("bedrock/nova_micro_two_tool_uses.eventstream")))
    assert [type(b) for b in blocks] == [TextBlock, ToolCallBlock, ToolCallBlock]
    assert blocks[1].id != blocks[2].id


def test_reasoning_signature_is_kept_for_replay() -> None:
    chunks = _run(fixture_bytes("bedrock/claude_sonnet4_reasoning_signature.eventstream"))
    reasoning, text = _blocks(chunks)
    assert isinstance(reasoning, ReasoningBlock) and reasoning.signature and reasoning.text
    assert isinstance(text, TextBlock)
    content = _finish(chunks).replay_state["content"]
    assert content[0] == {"reasoningContent": {"reasoningText": {"text": reasoning.text, "signature": reasoning.signature}}}
    assert content[1] == {"text": text.text}


def test_redacted_reasoning_is_replay_only() -> None:
    chunks = _run(fixture_bytes("bedrock/claude37_redacted_reasoning.eventstream"))
    assert [type(b) for b in _blocks(chunks)] == [TextBlock]
    content = _finish(chunks).replay_state["content"]
    assert [list(entry) for entry in content] == [["reasoningContent"], ["reasoningContent"], ["text"]]
    assert all(entry["reasoningContent"]["redactedContent"] for entry in content[:2])


def test_reasoning_without_signature() -> None:
    reasoning, text = _blocks(_run(fixture_bytes("bedrock/deepseek_r1_reasoning_no_signature.eventstream")))
    assert isinstance(reasoning, ReasoningBlock) and reasoning.signature is None
    assert isinstance(text, TextBlock)


def test_gpt_oss_empty_text_block_then_reasoning_then_text() -> None:
    """openai.gpt-oss-120b on ConverseStream (recorded): block 0 is one empty text delta,
    block 1 reasoning without a signature, block 2 the answer; the empty block is neither a
    block nor replayed (the API refuses empty text)."""
    chunks = _run(fixture_bytes("bedrock/gpt_oss_120b_reasoning_empty_text_delta.eventstream"))
    reasoning, text = _blocks(chunks)
    assert isinstance(reasoning, ReasoningBlock) and reasoning.signature is None
    assert reasoning.text.startswith('The user just says "Hi".')
    assert isinstance(text, TextBlock) and text.text == "Hello! How can I help you today?"
    assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [TokenUsage(70, 43)]
    finish = _finish(chunks)
    assert (finish.reason.kind, finish.reason.raw) == ("stop", "end_turn")
    assert finish.metadata is not None and finish.metadata.latency_ms == 753
    assert finish.replay_state["content"] == [
        {"reasoningContent": {"reasoningText": {"text": reasoning.text}}},
        {"text": text.text},
    ]


def test_citations_ride_in_the_text_block() -> None:
    (block,) = _blocks(_run(fixture_bytes("bedrock/claude_sonnet45_document_citations.eventstream")))
    assert isinstance(block, TextBlock)
    (citation,) = block.citations
    assert citation.kind == "document" and citation.title == "Document 1"
    assert citation.location == "document 0, chars 0-47"
    assert citation.cited_text == "The return window is thirty days from purchase."


def test_server_tools_are_summarized_not_called() -> None:
    chunks = _run(fixture_bytes("bedrock/nova2_lite_code_interpreter_server_tool.eventstream"))
    (call,) = _blocks(chunks)
    assert isinstance(call, ToolCallBlock) and call.name == "final_result"
    finish = _finish(chunks)
    assert finish.metadata is not None
    assert [t["name"] for t in finish.metadata.server_tools] == ["nova_code_interpreter"]
    kinds = [next(iter(entry)) for entry in finish.replay_state["content"]]
    assert kinds == ["toolUse", "toolResult", "toolUse"]
    assert finish.replay_state["content"][1]["toolResult"]["content"][0]["json"]["stdOut"] == "7006652"


def test_metadata_before_message_stop_waits_for_it() -> None:
    # a relay that reorders the last two messages (vercel/ai's Bedrock fixtures have this
    # order): the stop reason still counts, and the stream ends at messageStop
    from dshstream._core.eventstream import EventStreamDecoder

    messages = EventStreamDecoder().feed(fixture_bytes("bedrock/claude3_sonnet_text_then_tool_use.eventstream"))
    kinds = [m.headers[":event-type"] for m in messages]
    assert kinds[-2:] == ["messageStop", "metadata"]
    swapped = [*messages[:-2], messages[-1], messages[-2]]
    body = b"".join(encode_message(dict(m.headers), m.payload) for m in swapped)
    chunks = _run(body)
    straight = _run(fixture_bytes("bedrock/claude3_sonnet_text_then_tool_use.eventstream"))
    assert _finish(chunks).reason == _finish(straight).reason and _finish(chunks).reason.raw == "tool_use"
    usage = [c for c in chunks if isinstance(c, UsageChunk)]
    assert usage and usage == [c for c in straight if isinstance(c, UsageChunk)]
    cut = _run(b"".join(encode_message(dict(m.headers), m.payload) for m in swapped[:-1]))
    failure = _finish(cut).reason.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"


def test_nova_web_grounding_citation_blocks_cite_the_text_before_them() -> None:
    # Nova's web grounding: text blocks 2, 4 and 6, and after 2 and 4 a block of its own
    # holding only ``citation`` deltas (location.web: domain, url) for the text just ended
    chunks = _run(fixture_bytes("bedrock/nova2_lite_web_grounding_citation_blocks.eventstream"))
    first, second, last = _blocks(chunks)
    assert isinstance(first, TextBlock) and first.text == "The latest stable Ruby version is 4.0.6"
    assert [(c.kind, c.url, c.title) for c in first.citations] == [
        ("url", "https://www.ruby-lang.org/en/downloads/", "ruby-lang.org"),
        ("url", "https://mac.install.guide/ruby/", "install.guide"),
    ]
    assert isinstance(second, TextBlock) and second.text.startswith(". \n\nRuby 4.0.6 was released on July 14, 2026.")
    assert [c.url for c in second.citations] == ["https://www.ruby-lang.org/en/downloads/"]
    assert last == TextBlock(".")
    finish = _finish(chunks)
    assert finish.metadata is not None
    assert [t["name"] for t in finish.metadata.server_tools] == ["nova_grounding"]
    kinds = [next(iter(entry)) for entry in finish.replay_state["content"]]
    assert kinds == ["toolUse", "toolResult", "text", "text", "text"]
    # a held text block still ends before the next one starts
    ends = [i for i, c in enumerate(chunks) if isinstance(c, BlockEnd) and isinstance(c.block, TextBlock)]
    starts = [i for i, c in enumerate(chunks) if isinstance(c, BlockStart) and c.block_type == "text"]
    assert all(end < start for end, start in zip(ends, starts[1:]))


@pytest.mark.parametrize(
    ("reason", "kind", "code"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", None),
        ("max_tokens", "max-tokens", None),
        ("model_context_window_exceeded", "max-tokens", None),
        ("guardrail_intervened", "error", "CONTENT_FILTER"),
        ("content_filtered", "error", "CONTENT_FILTER"),
        ("malformed_model_output", "error", "MALFORMED_MODEL_OUTPUT"),
        ("something_new", "stop", None),
    ],
)
def test_stop_reasons(reason: str, kind: str, code: str | None) -> None:
    finish = _finish(_run(START + _text(0, "hi") + _stop(reason) + END))
    assert (finish.reason.kind, finish.reason.raw) == (kind, reason)
    assert (finish.reason.failure.code if finish.reason.failure else None) == code


@pytest.mark.parametrize(
    ("exception", "code", "retryable"),
    [
        ("throttlingException", "RATE_LIMIT", True),
        ("serviceUnavailableException", "OVERLOADED", True),
        ("modelStreamErrorException", "SERVER", True),
        ("internalServerException", "SERVER", True),
        ("modelTimeoutException", "TIMEOUT", True),
        ("validationException", "INVALID_REQUEST", False),
        ("accessDeniedException", "AUTH", False),
        ("ThrottlingException", "RATE_LIMIT", True),
    ],
)
def test_exception_frames_are_classified_in_band(exception: str, code: str, retryable: bool) -> None:
    secret = fake_key("AKIA", 16, string.ascii_uppercase + string.digits)
    chunks = _run(START + _text(0, "partial") + _exception(exception, f"upstream says no {secret}"))
    finish = _finish(chunks)
    failure = finish.reason.failure
    assert finish.reason.kind == "error" and failure is not None
    assert (failure.code, failure.retryable) == (code, retryable)
    assert "upstream" not in failure.message and exception in failure.message
    assert failure.detail is not None and "upstream says no" in failure.detail
    assert [b.text for b in _blocks(chunks)] == ["partial"]  # partial output kept


def test_validation_exception_about_context_is_context_window() -> None:
    message = "Input is too long for requested model."
    failure = _finish(_run(START + _exception("validationException", message))).reason.failure
    assert failure is not None and failure.code in ("CONTEXT_WINDOW_EXCEEDED", "INVALID_REQUEST")


def test_error_message_type_uses_its_headers() -> None:
    frame = encode_message({":message-type": "error", ":error-code": "InternalFailure", ":error-message": "boom"})
    failure = _finish(_run(START + frame)).reason.failure
    assert failure is not None and failure.code != "STREAM_CLOSED"


def test_cut_after_message_stop_completes_before_is_stream_closed() -> None:
    body = START + _text(0, "hi") + _stop("end_turn")
    assert _finish(_run(body)).reason.kind == "stop"
    failure = _finish(_run(START + _text(0, "hi"))).reason.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"


def test_empty_reply_is_empty_response_with_token_counts() -> None:
    failure = _finish(_run(START + _stop("end_turn") + END)).reason.failure
    assert failure is not None and failure.code == "EMPTY_RESPONSE"
    assert failure.diagnostics is not None
    assert (failure.diagnostics["input_tokens"], failure.diagnostics["output_tokens"]) == (3, 4)


def test_padding_non_json_and_unknown_events() -> None:
    unknown = _event("somethingNew", {"x": 1})
    finish = _finish(_run(START + unknown + _text(0, "a") + _stop("end_turn") + END))
    assert finish.reason.kind == "stop"
    bad = encode_message({":event-type": "contentBlockDelta", ":message-type": "event"}, b"{not json")
    failure = _finish(list(decode(START + bad, wire=WIRE))).reason.failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"


_ODD_VALUES: list[Any] = [None, True, 0, -1, 10**30, 1.5, "", "x", [], {}, [1, "a"], {"a": {"b": None}}]


def _mutate(value: Any, rng: Any) -> Any:
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        choice = rng.random()
        if choice < 0.2:
            return {k: v for k, v in value.items() if k != key}
        if choice < 0.6:
            return {**value, key: rng.choice(_ODD_VALUES)}
        return {**value, key: _mutate(value[key], rng)}
    return rng.choice(_ODD_VALUES)


@pytest.mark.parametrize("name", ["nova2_lite_code_interpreter_server_tool", "claude_sonnet4_reasoning_signature", "claude3_sonnet_text_then_tool_use", "claude37_redacted_reasoning"])
def test_fuzz_mutated_payloads_keep_the_contract(name: str) -> None:
    import random

    from dshstream._core.assembler import BlockAssembler
    from dshstream._core.errors import LlmError
    from dshstream._core.eventstream import EventStreamDecoder
    from dshstream._core.types import chunk_to_dict

    messages = EventStreamDecoder().feed(fixture_bytes(f"bedrock/{name}.eventstream"))
    rng = random.Random(name)
    for _ in range(150):
        frames = []
        for message in messages:
            headers = dict(message.headers)
            payload: Any = json.loads(message.payload)
            roll = rng.random()
            if roll < 0.15:
                payload = _mutate(payload, rng)
            elif roll < 0.18:
                continue  # dropped
            elif roll < 0.2:
                headers[":event-type"] = rng.choice(["contentBlockStart", "metadata", "messageStop", "x"])
            frames.append(encode_message(headers, json.dumps(payload).encode()))
        body = b"".join(frames)
        try:
            chunks = list(decode(body, wire=WIRE))
        except LlmError:
            continue
        list(check_contract(chunks))
        assembler = BlockAssembler()
        for chunk in chunks:
            assembler.push(chunk)
            json.dumps(chunk_to_dict(chunk))


def _forced(pieces: list[bytes], tool: str) -> list[StreamChunk]:
    from dshstream._core.wires.bedrock import BedrockConverseTranslator

    translator = BedrockConverseTranslator()
    translator.unwrap_tool_call(tool)
    decoder = StreamDecoder(translator)
    chunks: list[StreamChunk] = []
    for piece in pieces:
        chunks.extend(decoder.feed(piece))
    chunks.extend(decoder.close())
    return list(check_contract(chunks))


def test_a_sentence_before_a_forced_tool_is_commentary_not_part_of_the_json() -> None:
    # a real recording: Claude writes a sentence, then calls fetch_concept; as the forced
    # structured-output tool its arguments are the answer, and the sentence stays apart
    data = fixture_bytes("bedrock/claude3_sonnet_text_then_tool_use.eventstream")
    chunks = _forced([data], "fetch_concept")
    finish = _finish(chunks)
    (block,) = _blocks(chunks)
    assert isinstance(block, TextBlock) and json.loads(block.text) == {"concept": "distributed tracing"}
    assert finish.reason.kind == "stop"
    sentence = "Okay, let me use the tool to fetch an expert explanation for the concept of distributed tracing."
    assert finish.metadata is not None and finish.metadata.commentary == sentence
    assert finish.replay_state["content"] == [{"text": sentence}, {"text": block.text}]
    assert _forced([data[i : i + 1] for i in range(len(data))], "fetch_concept") == chunks
