"""Finish words no client should trust blindly (issue #15, rule 5).

A ``tool-calls`` finish whose call arguments are truncated or invalid JSON is
``max-tokens`` when the usage shows the output limit was reached (vLLM says
``tool_calls`` for a call it cut at ``length``). Gemini's ``MALFORMED_FUNCTION_CALL``,
``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS`` and any future word other than ``STOP``
never become ``stop`` — on the Gemini wire, and relayed by a gateway as its native
finish word. Streams are built in each server's wire format, except the recorded Vertex
``MALFORMED_FUNCTION_CALL``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import fixture_bytes

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import BlockEnd, StreamChunk, ToolCallBlock


def run(data: bytes, wire: str, **options: Any) -> tuple[list[StreamChunk], AssembledResponse]:
    chunks = list(check_contract(decode(data, wire=wire, **options)))
    return chunks, assemble(chunks)


def calls_in(chunks: list[StreamChunk]) -> list[ToolCallBlock]:
    return [c.block for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]


def vllm(arguments: list[str], completion_tokens: int, finish: str = "tool_calls") -> bytes:
    """vLLM's OpenAI-compatible stream: a tool call in fragments, then the finish and usage."""
    base = {"id": "chatcmpl-7f3", "object": "chat.completion.chunk", "created": 1760000000,
            "model": "Qwen/Qwen3-8B"}
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"id": "chatcmpl-tool-1", "type": "function",
                                                                    "index": 0, "function": {"name": "write_file",
                                                                                             "arguments": ""}}]},
                              "finish_reason": None}]},
    ]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]},
                                     "finish_reason": None}]} for a in arguments]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish, "stop_reason": None}],
                   "usage": {"prompt_tokens": 50, "completion_tokens": completion_tokens,
                             "total_tokens": 50 + completion_tokens}})
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


CUT = ['{"path": "notes.md", ', '"content": "# Notes\\n\\nThe first sec']
WHOLE = ['{"path": "notes.md", ', '"content": "# Notes"}']


def test_vllm_tool_calls_cut_at_the_limit_is_max_tokens() -> None:
    chunks, result = run(vllm(CUT, completion_tokens=64), "vllm", max_tokens=64)
    assert result.finish.kind == "max-tokens" and result.finish.raw == "tool_calls"
    (call,) = calls_in(chunks)
    assert call.arguments_truncated
    assert result.tool_calls == ()  # a truncated call is never handed out to run


@pytest.mark.parametrize(
    ("arguments", "completion_tokens", "max_tokens"),
    [
        (CUT, 64, None),  # the limit is unknown: the word stands (the call is still flagged)
        (CUT, 40, 64),  # below the limit: not a cut at the limit
        (WHOLE, 64, 64),  # at the limit but the call is whole
    ],
)
def test_tool_calls_stays_otherwise(arguments: list[str], completion_tokens: int, max_tokens: int | None) -> None:
    chunks, result = run(vllm(arguments, completion_tokens), "vllm", max_tokens=max_tokens)
    assert result.finish.kind == "tool-calls"
    (call,) = calls_in(chunks)
    assert call.arguments_truncated is (arguments is CUT)


def test_invalid_json_arguments_at_the_limit_are_max_tokens() -> None:
    _, result = run(vllm(['{"path": notes.md}'], completion_tokens=20), "vllm", max_tokens=20)
    assert result.finish.kind == "max-tokens"


def test_responses_function_call_cut_at_the_limit() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "write_file",
            "arguments": '{"path": "a.md", "content": "abc'}
    payload = {"type": "response.completed", "response": {
        "id": "resp_1", "model": "m", "status": "completed", "output": [item],
        "usage": {"input_tokens": 10, "output_tokens": 100}}}
    data = f"event: response.completed\ndata: {json.dumps(payload)}\n\n".encode()
    _, result = run(data, "openai-responses", max_tokens=100)
    assert (result.finish.kind, result.finish.raw) == ("max-tokens", "completed")


# --------------------------------------------------------------------------- Gemini


def test_recorded_malformed_function_call_is_an_error() -> None:
    _, result = run(fixture_bytes("gemini/vertex_malformed_function_call.sse"), "gemini")
    failure = result.failure
    assert result.finish.kind == "error" and result.finish.raw == "MALFORMED_FUNCTION_CALL"
    assert failure is not None and failure.code == "MALFORMED_FUNCTION_CALL"
    assert failure.category == "model_error" and failure.retryable


def gemini(*reasons: str, text: str = "Let me check.") -> bytes:
    events: list[dict[str, Any]] = [{"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}],
               "modelVersion": "gemini-2.5-flash", "responseId": "r1"}]
    events += [{"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": reason,
                                "index": 0}], "modelVersion": "gemini-2.5-flash", "responseId": "r1",
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 3}} for reason in reasons]
    return b"".join(f"data: {json.dumps(e)}\r\n\r\n".encode() for e in events)


@pytest.mark.parametrize(
    ("reason", "category", "retryable"),
    [
        ("MALFORMED_FUNCTION_CALL", "model_error", True),
        ("UNEXPECTED_TOOL_CALL", "model_error", True),
        ("TOO_MANY_TOOL_CALLS", "model_error", False),
        ("MISSING_THOUGHT_SIGNATURE", "unknown", False),
        ("A_WORD_FROM_THE_FUTURE", "unknown", False),
    ],
)
def test_gemini_words_other_than_stop_are_errors(reason: str, category: str, retryable: bool) -> None:
    _, result = run(gemini(reason), "gemini")
    failure = result.failure
    assert result.finish.kind == "error" and result.finish.raw == reason
    assert failure is not None and failure.code == reason
    assert (failure.category, failure.retryable) == (category, retryable)
    assert result.text == "Let me check."  # the partial answer is kept


def test_a_later_stop_never_hides_a_failure_word() -> None:
    _, result = run(gemini("UNEXPECTED_TOOL_CALL", "STOP"), "gemini")
    assert result.failure is not None and result.failure.code == "UNEXPECTED_TOOL_CALL"


def test_plain_stop_is_still_stop() -> None:
    _, result = run(gemini("STOP"), "gemini")
    assert (result.finish.kind, result.finish.raw) == ("stop", "STOP")


def openrouter(finish: str, native: str) -> bytes:
    base = {"id": "gen-1", "model": "google/gemini-2.5-flash", "provider": "Google AI Studio",
            "object": "chat.completion.chunk"}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Calling it."}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish, "native_finish_reason": native}],
         "usage": {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}},
    ]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


@pytest.mark.parametrize(
    ("finish", "native", "code"),
    [
        ("stop", "MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
        ("stop", "UNEXPECTED_TOOL_CALL", "UNEXPECTED_TOOL_CALL"),
        ("error", "TOO_MANY_TOOL_CALLS", "TOO_MANY_TOOL_CALLS"),
        ("stop", "SAFETY", "CONTENT_FILTER"),
    ],
)
def test_a_gateway_relaying_a_gemini_failure_word(finish: str, native: str, code: str) -> None:
    _, result = run(openrouter(finish, native), "openrouter")
    assert result.finish.kind == "error" and result.finish.raw == native
    assert result.failure is not None and result.failure.code == code


def test_a_gateway_relaying_gemini_stop_is_stop() -> None:
    _, result = run(openrouter("stop", "STOP"), "openrouter")
    assert (result.finish.kind, result.finish.raw) == ("stop", "STOP")
