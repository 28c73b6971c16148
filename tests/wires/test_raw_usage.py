"""``Finish.metadata.raw_usage``: the provider's own usage record, as sent, on every wire
that reports usage — for the fields ``TokenUsage`` has no place for — over recorded
streams, split anywhere; and out of equality, so a stream read twice is still equal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import all_fixtures, decode_all, fixture_bytes, fixture_wire

from dshstream._core.types import Finish, ResponseMetadata, UsageChunk, chunk_from_dict, chunk_to_dict


def _finish(rel: str, pieces: int = 1) -> tuple[Finish, bool]:
    data = fixture_bytes(rel)
    step = max(1, len(data) // pieces)
    chunks = decode_all([data[i : i + step] for i in range(0, len(data), step)], fixture_wire(rel))
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    return finish, any(isinstance(c, UsageChunk) for c in chunks)


@pytest.mark.parametrize(
    ("rel", "path", "value"),
    [
        ("openai/text_service_tier_obfuscation_gpt41nano.sse", ("completion_tokens_details", "accepted_prediction_tokens"), 0),
        ("openai/text_service_tier_obfuscation_gpt41nano.sse", ("prompt_tokens_details", "audio_tokens"), 0),
        ("anthropic/web_search_server_tool_citations.sse", ("server_tool_use", "web_search_requests"), 1),
        ("gemini/usage_thoughts_service_tier.sse", ("serviceTier",), "standard"),
        ("gemini/usage_thoughts_service_tier.sse", ("promptTokensDetails",), [{"modality": "TEXT", "tokenCount": 18}]),
        ("openai-responses/text.sse", ("total_tokens",), 287),
    ],
)
def test_fields_the_token_counts_have_no_place_for_are_there_as_sent(rel: str, path: tuple[str, ...], value: Any) -> None:
    for pieces in (1, 7, 101):
        finish, _ = _finish(rel, pieces)
        assert finish.metadata is not None
        found: Any = finish.metadata.raw_usage
        for step in path:
            found = found[step]
        assert found == value


def test_anthropic_keeps_message_start_usage_updated_by_message_delta() -> None:
    finish, _ = _finish("anthropic/cache_creation_and_read_code_execution.sse")
    assert finish.metadata is not None and finish.metadata.raw_usage is not None
    raw = finish.metadata.raw_usage
    # message_start's cache_creation breakdown, message_delta's final counts
    assert raw["cache_creation"]["ephemeral_5m_input_tokens"] == 3068
    assert raw["cache_creation_input_tokens"] == 3337 and raw["cache_read_input_tokens"] == 6289


@pytest.mark.parametrize("rel", [rel for rel in all_fixtures() if not rel.startswith("bedrock/invoke_")])
def test_every_stream_with_usage_carries_its_record_and_it_round_trips(rel: str) -> None:
    finish, has_usage = _finish(rel)
    raw = finish.metadata.raw_usage if finish.metadata is not None else None
    if has_usage:
        assert isinstance(raw, dict) and raw, rel
        json.dumps(raw)  # JSON values, as sent
    back = chunk_from_dict(json.loads(json.dumps(chunk_to_dict(finish))))
    assert isinstance(back, Finish) and back == finish
    assert (back.metadata.raw_usage if back.metadata is not None else None) == raw


def test_raw_usage_is_out_of_equality() -> None:
    assert ResponseMetadata(response_id="r", raw_usage={"a": 1}) == ResponseMetadata(response_id="r")
