"""Usage belongs to the model that produced it (issue #15, rule 2).

Anthropic ``usage.iterations``: the responding model's entries (``message``,
``compaction``) are summed into the response's usage; an entry that names another model
(``advisor_message``, a declined fallback) is that model's usage, reported in
``Finish.metadata["usage_by_model"]`` and never added. The same rule applies where a
gateway relays such entries (OpenRouter chat, Responses). The compaction stream is
recorded; the advisor and fallback entries are built from the Messages API usage schema
(``BetaAdvisorMessageIterationUsage``: ``type``, ``model``, the four token counts).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import fixture_bytes

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import (
    Finish,
    FinishReason,
    ResponseMetadata,
    TokenUsage,
    chunk_from_dict,
    chunk_to_dict,
)

SONNET = "claude-sonnet-4-6"
OPUS = "claude-opus-4-7"


def run(data: bytes, wire: str) -> AssembledResponse:
    return assemble(check_contract(decode(data, wire=wire)))


def anthropic_stream(usage: dict[str, Any], *, model: str = SONNET, deltas: int = 1) -> bytes:
    payloads: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": model, "role": "assistant", "content": [],
                                              "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Answer."}},
        {"type": "content_block_stop", "index": 0},
    ]
    payloads += [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}] * deltas
    payloads.append({"type": "message_stop"})
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def iteration(kind: str, inp: int, out: int, read: int = 0, write: int = 0, **extra: Any) -> dict[str, Any]:
    return {"type": kind, "input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "cache_creation": {"ephemeral_5m_input_tokens": write, "ephemeral_1h_input_tokens": 0}, **extra}


ADVISED = {
    "input_tokens": 2,
    "output_tokens": 491,
    "cache_read_input_tokens": 226584,
    "cache_creation_input_tokens": 7853,
    "iterations": [
        iteration("message", 1, 45, 109696, 7192),
        iteration("advisor_message", 159419, 7805, 1200, 300, model=OPUS),
        iteration("message", 1, 446, 116888, 661),
    ],
}


def test_recorded_compaction_is_summed_and_names_no_other_model() -> None:
    result = run(fixture_bytes("anthropic/cache_read_compaction.sse"), "anthropic")
    # compaction (100 in, 83 out, 55096 cache read) + message (181 in, 8 out)
    assert result.usage == TokenUsage(input_tokens=281, output_tokens=91, cache_read_tokens=55096, cache_write_tokens=0)
    assert result.metadata is not None and result.metadata.usage_by_model is None
    assert "usage_by_model" not in result.metadata


def test_an_advisor_iteration_is_the_advisors_usage() -> None:
    result = run(anthropic_stream(ADVISED), "anthropic")
    assert result.usage == TokenUsage(input_tokens=2, output_tokens=491, cache_read_tokens=226584,
                                      cache_write_tokens=7853)
    meta = result.metadata
    assert meta is not None and meta.model == SONNET
    assert meta["usage_by_model"] == {
        OPUS: TokenUsage(input_tokens=159419, output_tokens=7805, cache_read_tokens=1200, cache_write_tokens=300)
    }
    assert meta.usage_by_model == meta["usage_by_model"]


def test_repeated_cumulative_usage_is_not_counted_twice() -> None:
    result = run(anthropic_stream(ADVISED, deltas=3), "anthropic")
    assert result.usage is not None and result.usage.output_tokens == 491
    assert result.metadata is not None and result.metadata.usage_by_model is not None
    assert result.metadata.usage_by_model[OPUS].output_tokens == 7805


def test_entries_of_one_other_model_are_summed_and_the_own_model_is_own() -> None:
    usage = {
        "input_tokens": 3,
        "output_tokens": 30,
        "iterations": [
            iteration("advisor_message", 100, 10, model=OPUS),
            iteration("message", 1, 10, model=SONNET),  # names the responding model: own
            iteration("advisor_message", 50, 5, model=OPUS),
            iteration("message", 2, 20),
        ],
    }
    result = run(anthropic_stream(usage), "anthropic")
    assert result.usage == TokenUsage(input_tokens=3, output_tokens=30, cache_read_tokens=0, cache_write_tokens=0)
    assert result.metadata is not None
    assert result.metadata.usage_by_model == {
        OPUS: TokenUsage(input_tokens=150, output_tokens=15, cache_read_tokens=0, cache_write_tokens=0),
    }


def test_a_fallback_message_entry_is_the_serving_models_and_the_declined_one_is_apart() -> None:
    # server-side fallback (BetaFallbackMessageIterationUsage): message_start names the
    # requested model, which declined (its ``message`` entry); the ``fallback_message``
    # entry is the model that served, billed as the response's usage
    usage = {
        "input_tokens": 3,
        "output_tokens": 30,
        "iterations": [
            iteration("message", 1, 10, model=SONNET),  # declined
            iteration("advisor_message", 100, 10, model=OPUS),
            iteration("fallback_message", 40, 4, model="claude-opus-4-1"),  # served
            iteration("message", 2, 20),  # names no model: the serving model's
        ],
    }
    result = run(anthropic_stream(usage), "anthropic")
    assert result.usage == TokenUsage(input_tokens=42, output_tokens=24, cache_read_tokens=0, cache_write_tokens=0)
    assert result.metadata is not None
    assert result.metadata.model == "claude-opus-4-1"
    assert result.metadata.usage_by_model == {
        SONNET: TokenUsage(input_tokens=1, output_tokens=10, cache_read_tokens=0, cache_write_tokens=0),
        OPUS: TokenUsage(input_tokens=100, output_tokens=10, cache_read_tokens=0, cache_write_tokens=0),
    }


def test_openrouter_relayed_iterations_follow_the_same_rule() -> None:
    usage = {
        "prompt_tokens": 20,
        "completion_tokens": 7,
        "total_tokens": 27,
        "cost": 0.0004,
        "iterations": [
            {"type": "message", "prompt_tokens": 20, "completion_tokens": 7},
            {"type": "advisor_message", "model": "anthropic/claude-opus-4.7", "prompt_tokens": 900,
             "completion_tokens": 60, "prompt_tokens_details": {"cached_tokens": 100}},
        ],
    }
    chunks = [
        {"id": "gen-1", "model": "anthropic/claude-sonnet-4.6", "provider": "Anthropic",
         "choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": None}]},
        {"id": "gen-1", "model": "anthropic/claude-sonnet-4.6",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "native_finish_reason": "end_turn"}],
         "usage": usage},
    ]
    data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n"
    result = run(data, "openrouter")
    assert result.usage == TokenUsage(input_tokens=20, output_tokens=7, cost=0.0004)
    assert result.metadata is not None
    assert result.metadata["usage_by_model"] == {
        "anthropic/claude-opus-4.7": TokenUsage(input_tokens=800, output_tokens=60, cache_read_tokens=100)
    }


def test_responses_relayed_iterations_follow_the_same_rule() -> None:
    usage = {
        "input_tokens": 50,
        "output_tokens": 9,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
        "iterations": [{"type": "advisor_message", "model": "o3", "input_tokens": 300, "output_tokens": 40,
                        "input_tokens_details": {"cached_tokens": 0}}],
    }
    payloads = [
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": "m", "delta": "Hi"},
        {"type": "response.completed",
         "response": {"id": "resp_1", "model": "gpt-5", "status": "completed", "usage": usage, "output": []}},
    ]
    data = b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads)
    result = run(data, "openai-responses")
    assert result.usage == TokenUsage(input_tokens=50, output_tokens=9, cache_read_tokens=0, reasoning_tokens=0)
    assert result.metadata is not None
    assert result.metadata.usage_by_model == {"o3": TokenUsage(input_tokens=300, output_tokens=40, cache_read_tokens=0)}


def test_usage_by_model_and_server_tools_round_trip_through_json() -> None:
    finish = Finish(
        reason=FinishReason(kind="stop", raw="end_turn"),
        metadata=ResponseMetadata(
            response_id="msg_1",
            model=SONNET,
            usage_by_model={OPUS: TokenUsage(input_tokens=10, output_tokens=2, cache_read_tokens=1)},
            server_tools=({"type": "web_search_call", "id": "ws_1", "status": "completed"},),
        ),
    )
    data = chunk_to_dict(finish)
    assert data["metadata"]["usage_by_model"] == {OPUS: {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 1}}
    assert chunk_from_dict(json.loads(json.dumps(data))) == finish


def test_metadata_reads_like_a_mapping_of_its_present_fields() -> None:
    meta = ResponseMetadata(response_id="r", model="m")
    assert meta["model"] == "m" and meta.get("model") == "m"
    assert "usage_by_model" not in meta and "server_tools" not in meta and "nonsense" not in meta
    assert meta.get("usage_by_model", {}) == {}
    with pytest.raises(KeyError):
        meta["usage_by_model"]
    with pytest.raises(KeyError):
        meta["__class__"]
    hash(meta)  # still hashable
