"""An empty reply explains itself (issue #15, rule 4).

An ``EMPTY_RESPONSE`` failure carries ``diagnostics`` with ``finish_raw``,
``input_tokens``/``output_tokens`` (the provider's own counts; missing, negative or
non-integer counts are ``None``, never 0), ``reasoning_present``, ``max_tokens`` (the
request's output limit, ``None`` when not set) and ``response_id``; ``request_id`` falls
back to the stream's id when no header gave one. The streams are built in each
provider's published wire format (DeepSeek chat completions, Responses, Anthropic,
Gemini); the last tests go through the real HTTP path, where the adapter's failure record
is merged in.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.request import GenerateOptions, Message
from dshstream._core.types import LlmFailure
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

KEY = "sk-test-empty-0123456789"


def run(data: bytes, wire: str, **options: Any) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=wire, **options)))


def empty_failure(result: AssembledResponse) -> LlmFailure:
    failure = result.failure
    assert result.finish.kind == "error" and failure is not None and failure.code == "EMPTY_RESPONSE"
    assert failure.diagnostics is not None
    return failure


def deepseek_empty(usage: dict[str, Any] | None) -> bytes:
    """DeepSeek's empty reply: a role delta, an empty content delta with ``stop`` and usage."""
    base = {"id": "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90", "object": "chat.completion.chunk", "created": 1760000000,
            "model": "deepseek-chat", "system_fingerprint": "fp_ffc7281d48_prod0820_fp8_kvcache"}
    last: dict[str, Any] = {**base, "choices": [{"index": 0, "delta": {"content": ""}, "logprobs": None,
                                                 "finish_reason": "stop"}]}
    if usage is not None:
        last["usage"] = usage
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                                    "finish_reason": None}]}, last]
    return b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"


DEEPSEEK_USAGE = {"prompt_tokens": 31, "completion_tokens": 0, "total_tokens": 31, "prompt_tokens_details":
                  {"cached_tokens": 0}, "prompt_cache_hit_tokens": 0, "prompt_cache_miss_tokens": 31}


def test_a_deepseek_empty_reply_explains_itself() -> None:
    result = run(deepseek_empty(DEEPSEEK_USAGE), "deepseek", max_tokens=512)
    failure = empty_failure(result)
    assert failure.diagnostics == {
        "finish_raw": "stop",
        "input_tokens": 31,
        "output_tokens": 0,
        "reasoning_present": False,
        "max_tokens": 512,
        "response_id": "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90",
    }
    assert failure.request_id == "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90"  # no header: the stream's id


def test_a_request_id_from_a_header_wins() -> None:
    result = run(deepseek_empty(DEEPSEEK_USAGE), "deepseek", request_id="req_from_header")
    failure = empty_failure(result)
    assert failure.request_id == "req_from_header"
    assert failure.diagnostics is not None and failure.diagnostics["max_tokens"] is None  # not set


@pytest.mark.parametrize(
    ("usage", "counts"),
    [
        (None, (None, None)),  # no usage at all
        ({"prompt_tokens": 31}, (31, None)),  # missing
        ({"prompt_tokens": -1, "completion_tokens": -3}, (None, None)),  # negative
        ({"prompt_tokens": 12.5, "completion_tokens": "7"}, (None, None)),  # non-integer
        ({"prompt_tokens": True, "completion_tokens": 2.0}, (None, 2)),  # a bool is not a count; 2.0 is 2
    ],
)
def test_unknown_counts_are_none_never_zero(usage: dict[str, Any] | None, counts: tuple[int | None, int | None]) -> None:
    failure = empty_failure(run(deepseek_empty(usage), "deepseek"))
    assert failure.diagnostics is not None
    assert (failure.diagnostics["input_tokens"], failure.diagnostics["output_tokens"]) == counts


def gemini_empty(usage: dict[str, Any]) -> bytes:
    """A Gemini reply with no parts, ``STOP`` and ``usageMetadata`` (the documented shape)."""
    event = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": usage, "modelVersion": "gemini-2.5-flash", "responseId": "resp-gemini-1"}
    return f"data: {json.dumps(event)}\r\n\r\n".encode()


@pytest.mark.parametrize(
    ("usage", "counts"),
    [
        ({"promptTokenCount": 12, "candidatesTokenCount": 0, "thoughtsTokenCount": 5}, (12, 5)),  # thoughts bill as output
        ({"promptTokenCount": 12, "thoughtsTokenCount": 5}, (12, 5)),
        ({"promptTokenCount": 12, "candidatesTokenCount": 3}, (12, 3)),
        ({"promptTokenCount": 12}, (12, None)),  # no output field: unknown, never zero
        ({"candidatesTokenCount": "3", "thoughtsTokenCount": -1}, (None, None)),
    ],
)
def test_a_gemini_empty_reply_counts_its_thoughts_as_output(
    usage: dict[str, Any], counts: tuple[int | None, int | None]
) -> None:
    failure = empty_failure(run(gemini_empty(usage), "gemini"))
    assert failure.diagnostics is not None
    assert (failure.diagnostics["input_tokens"], failure.diagnostics["output_tokens"]) == counts


def test_responses_hidden_reasoning_and_nothing_else() -> None:
    """A Responses reply that only reasoned (encrypted, no summary): reasoning present."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    usage = {"input_tokens": 40, "output_tokens": 256, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 256}}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_9", "model": "o4-mini"}},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.completed", "response": {"id": "resp_9", "model": "o4-mini", "status": "completed",
                                                    "output": [reasoning], "usage": usage}},
    ]
    data = b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)
    failure = empty_failure(run(data, "openai-responses", max_tokens=256))
    assert failure.diagnostics == {"finish_raw": "completed", "input_tokens": 40, "output_tokens": 256,
                                   "reasoning_present": True, "max_tokens": 256, "response_id": "resp_9"}
    assert failure.request_id == "resp_9"


def test_anthropic_redacted_thinking_only() -> None:
    payloads: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_7", "model": "claude-sonnet-4-5", "content": [],
                                              "usage": {"input_tokens": 18, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwK"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 90}},
        {"type": "message_stop"},
    ]
    data = b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)
    failure = empty_failure(run(data, "anthropic", max_tokens=1024))
    assert failure.diagnostics == {"finish_raw": "end_turn", "input_tokens": 18, "output_tokens": 90,
                                   "reasoning_present": True, "max_tokens": 1024, "response_id": "msg_7"}


def test_gemini_omitted_candidate_count_is_unknown() -> None:
    response = {"candidates": [{"content": {"role": "model"}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9},
                "modelVersion": "gemini-2.5-flash", "responseId": "gem_resp_1"}
    failure = empty_failure(run(f"data: {json.dumps(response)}\r\n\r\n".encode(), "gemini"))
    assert failure.diagnostics == {"finish_raw": "STOP", "input_tokens": 9, "output_tokens": None,
                                   "reasoning_present": False, "max_tokens": None, "response_id": "gem_resp_1"}


# --------------------------------------------------------------------------- over the real HTTP path


def deepseek_service(server: ReplayServer) -> LlmService:
    service = LlmService(check_contract=True)
    service.register_adapter(
        ["deepseek"], OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", dialect="deepseek", max_retries=0)
    )
    return service


def ask(service: LlmService, **fields: Any) -> AssembledResponse:
    options = GenerateOptions(provider="deepseek", model="deepseek-chat", messages=(Message.user("hi"),), **fields)
    return service.stream(options).result()


def test_the_adapter_passes_max_tokens_and_keeps_the_diagnostics(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=deepseek_empty(DEEPSEEK_USAGE))])
    failure = empty_failure(ask(deepseek_service(server), max_tokens=64))
    diagnostics = failure.diagnostics
    assert diagnostics is not None
    assert {k: diagnostics[k] for k in ("finish_raw", "input_tokens", "output_tokens", "reasoning_present",
                                        "max_tokens", "response_id")} == {
        "finish_raw": "stop", "input_tokens": 31, "output_tokens": 0, "reasoning_present": False,
        "max_tokens": 64, "response_id": "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90"}
    # the adapter's own failure record is there too
    assert diagnostics["provider"] == "deepseek" and diagnostics["model"] == "deepseek-chat"
    assert failure.request_id == "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90"


def test_the_header_request_id_wins_over_the_stream_id(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=deepseek_empty(DEEPSEEK_USAGE), headers={"x-request-id": "req_header_1"})])
    failure = empty_failure(ask(deepseek_service(server)))
    assert failure.request_id == "req_header_1"
    assert failure.diagnostics is not None and failure.diagnostics["response_id"] == "8f1c2e7a-5d1b-4f0e-9c3a-2b7d6e4f1a90"
