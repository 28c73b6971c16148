"""For every recording in the corpus with a non-streaming equivalent, the batch path's
assembled result equals the stream's: the non-streaming body the stream adds up to
(``service.batch_bodies``, built the way the SDKs accumulate a stream) is cut into
synthetic events (``dshstream._batch.provider.events``) and read by a fresh translator of
the same wire — the one the stream went through — then assembled."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from dshstream import AssembledResponse, ToolCallBlock
from dshstream._batch.provider.events import events_for
from dshstream._core.assembler import assemble
from dshstream._core.decode import translator_for
from helpers import all_fixtures, decode_all, fixture_bytes, fixture_wire
from service.batch_bodies import anthropic_body, chat_body, gemini_body, responses_body

BODIES: dict[str, Any] = {
    "anthropic": anthropic_body, "gemini": gemini_body, "openai-responses": responses_body,
}


def _builder(relative: str) -> Any:
    wire = fixture_wire(relative)
    if wire.startswith("bedrock") or wire in ("gemini-interactions", "cohere"):  # no batch API on these wires
        return None
    return BODIES.get(wire, chat_body)  # every other wire is chat completions in a dialect


CASES = [
    relative for relative in all_fixtures()
    if _builder(relative) is not None and _builder(relative)(fixture_bytes(relative)) is not None
]


def _json_arguments(response: AssembledResponse) -> AssembledResponse:
    """Tool arguments as JSON values: a non-streaming Anthropic message carries a tool's
    input as an object, so its text is the compact form of what the stream spelled."""
    blocks = tuple(
        replace(block, arguments=json.dumps(json.loads(block.arguments or "{}"), sort_keys=True))
        if isinstance(block, ToolCallBlock) and not block.arguments_truncated else block
        for block in response.blocks
    )
    return replace(response, blocks=blocks)


def test_the_corpus_has_cases_of_every_batch_wire() -> None:
    wires = {fixture_wire(case) for case in CASES}
    assert {"anthropic", "gemini", "openai-responses", "openai-chat"} <= wires
    assert len(CASES) >= 90


#: streams whose block order a non-streaming body cannot carry: GLM-4.6 (HF router) sends a
#: "\n" of content before its reasoning, so the stream's text block opens first; a
#: chat-completions message has one ``content`` and one ``reasoning_content``, reasoning read first
INTERLEAVED = {"huggingface/router_glm46_newline_content_before_reasoning.sse"}


@pytest.mark.parametrize("relative", CASES)
def test_a_batch_body_assembles_to_what_its_stream_did(relative: str) -> None:
    wire = fixture_wire(relative)
    data = fixture_bytes(relative)
    streamed = assemble(decode_all(data, wire))
    body = _builder(relative)(data)
    translator = translator_for(wire)
    batched = assemble(translator.feed_events(events_for(translator.wire, body)) + translator.close())
    if wire == "anthropic":
        streamed, batched = _json_arguments(streamed), _json_arguments(batched)
    if relative in INTERLEAVED:  # the same blocks, in the body's order
        assert sorted(map(repr, streamed.blocks)) == sorted(map(repr, batched.blocks))
        batched = replace(batched, blocks=streamed.blocks)
    assert batched.blocks == streamed.blocks
    assert batched.finish == streamed.finish
    assert batched.usage == streamed.usage
    assert batched.replay_state == streamed.replay_state
    if relative.startswith("vercel/"):
        # the gateway names who served in the delta's provider_metadata, which the body
        # built here (as the SDKs accumulate a stream) does not keep
        assert streamed.metadata is not None and streamed.metadata.serving_provider is not None
        assert batched.metadata is not None and batched.metadata.serving_provider is None
        batched = replace(batched, metadata=replace(batched.metadata, serving_provider=streamed.metadata.serving_provider))
    assert batched.metadata == streamed.metadata


def test_an_unknown_wire_and_a_body_that_is_not_an_object() -> None:
    with pytest.raises(ValueError, match="bedrock-converse"):
        events_for("bedrock-converse", {})
    translator = translator_for("anthropic")
    chunks = translator.feed_events(events_for("anthropic", ["not", "an", "object"])) + translator.close()
    result = assemble(chunks)
    assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
