"""The chat-completions wire and its dialects against every recorded chat-family transcript.

Each fixture is decoded under its dialect's wire; the stream must satisfy the adapter
contract (split invariance of every fixture is tests/robustness/test_corpus.py's), and its
assembled result must agree with a small independent reading of the raw events (text,
reasoning, tool calls, usage with cost and cache, serving provider, finish). Then the seed vectors and the per-dialect specifics, with synthetic streams.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from dshstream._core.assembler import AssembledResponse, BlockAssembler
from dshstream._core.contract import check_contract
from dshstream._core.types import (
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dshstream._core.dialects import DIALECTS
from helpers import FIXTURES, decode_all, fixture_bytes

DIALECT_OF_FOLDER = {
    "openai": "openai",
    "azure": "openai-chat",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral",
    "xai": "xai",
    "vllm": "vllm",
    "alibaba": "openai-chat",
    "zai": "openai-chat",
    "huggingface": "openai-chat",
    "llamacpp": "llamacpp",
    "openrouter": "openrouter",
    "snowflake": "openai-chat",
    "perplexity": "perplexity",
    "together": "together",
    "cerebras": "openai-chat",
    "fireworks": "openai-chat",
    "novita": "openai-chat",
    "sambanova": "openai-chat",
    "avian": "openai-chat",
    "cohere-compat": "openai-chat",
    "hyper": "openai-chat",
    "vercel": "openai-chat",
    "ollama": "ollama",
}
CHAT_FIXTURES = sorted(
    f"{path.parent.name}/{path.name}"
    for folder in DIALECT_OF_FOLDER
    for path in (FIXTURES / folder).glob("*.sse")
    if not path.name.startswith("responses_api")
)


def wire_of(rel: str) -> str:
    return DIALECT_OF_FOLDER[rel.split("/")[0]]


def assemble(chunks: list[StreamChunk]) -> AssembledResponse:
    assembler = BlockAssembler()
    assembler.extend(chunks)
    return assembler.result()


def decode_checked(data: bytes | list[bytes], wire: str, **options: Any) -> list[StreamChunk]:
    pieces = [data] if isinstance(data, bytes) else data
    return list(check_contract(decode_all(pieces, wire, **options)))


# --------------------------------------------------------------------------- reference reading


def raw_payloads(data: bytes) -> list[tuple[str, Any]]:
    """(event name, parsed data) of every event, by a deliberately naive framing."""
    out: list[tuple[str, Any]] = []
    text = data.decode("utf-8").replace("\r\n", "\n")
    for frame in text.split("\n\n"):
        name = "message"
        lines = []
        for line in frame.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if not lines:
            continue
        joined = "\n".join(lines)
        out.append((name, joined if joined == "[DONE]" else json.loads(joined)))
    return out


@dataclass
class ChatReference:
    """What a plain reading of the raw chunks says the response is."""

    text: str = ""
    reasoning: str = ""
    calls: list[dict[str, str]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    provider: str | None = None
    finish_reason: str | None = None
    native: str | None = None
    error: bool = False


def read_chat(data: bytes) -> ChatReference:
    ref = ChatReference()
    by_index: dict[Any, dict[str, str]] = {}
    for name, payload in raw_payloads(data):
        if payload == "[DONE]":
            break
        if not isinstance(payload, dict):
            continue
        if ref.provider is None and payload.get("provider"):
            ref.provider = payload["provider"]
        usage = payload.get("usage") or (payload.get("x_groq") or {}).get("usage")
        if usage:
            ref.usage = usage
        if ref.error:  # after the error only usage counts (OpenRouter sends it next)
            continue
        for choice in payload.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta is None:
                ref.text += choice.get("text") or ""
                delta = {}
            # a route that streams reasoning only in reasoning_details (Snowflake Cortex)
            detailed = "".join(
                d.get("text") or "" for d in delta.get("reasoning_details") or [] if d.get("type") == "reasoning.text"
            )
            ref.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or detailed
            content = delta.get("content")
            if isinstance(content, str):
                ref.text += content
            elif isinstance(content, list):
                for part in content:
                    if part.get("type") == "text":
                        ref.text += part["text"]
                    elif part.get("type") == "thinking":
                        ref.reasoning += "".join(p.get("text", "") for p in part["thinking"])
            ref.text += delta.get("refusal") or ""
            for call in delta.get("tool_calls") or []:
                key = call.get("index", call.get("id"))
                entry = by_index.get(key)
                if entry is not None and call.get("id") and entry["id"] and call["id"] != entry["id"]:
                    try:  # another id at an index whose call is whole: another call (vLLM, Gemini)
                        json.loads(entry["arguments"])
                        entry = None
                    except ValueError:
                        pass
                if entry is None:
                    entry = by_index[key] = {"id": "", "name": "", "arguments": ""}
                    ref.calls.append(entry)
                entry["id"] = call.get("id") or entry["id"]
                function = call.get("function") or {}
                entry["name"] = function.get("name") or entry["name"]
                entry["arguments"] += function.get("arguments") or ""
            routing = (((delta.get("provider_metadata") or {}).get("gateway") or {}).get("routing") or {})
            if ref.provider is None and routing.get("finalProvider"):  # Vercel's AI Gateway
                ref.provider = routing["finalProvider"]
            if choice.get("finish_reason"):
                ref.finish_reason = choice["finish_reason"]
                ref.native = choice.get("native_finish_reason")
        if payload.get("error") is not None or name == "error":
            ref.error = True
    return ref


def expected_usage(usage: dict[str, Any]) -> TokenUsage:
    prompt = usage.get("prompt_tokens") or 0
    completion = usage.get("completion_tokens") or 0
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens")
    if cached is None:
        cached = usage.get("prompt_cache_hit_tokens")
    if cached is None:
        cached = usage.get("cached_tokens")  # Together, Moonshot: at the top level
    write = details.get("cache_write_tokens")
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if reasoning is None:
        reasoning = usage.get("reasoning_tokens")  # Perplexity: beside the other counts
    output = completion
    # reasoning counted apart from completion: the total says so, or there is more of it
    # than completion tokens (which could not hold it)
    if reasoning and (usage.get("total_tokens") == prompt + completion + reasoning or reasoning > completion):
        output += reasoning
    cost = usage.get("cost")
    if isinstance(cost, dict):  # Perplexity: the parts and their total; Charm's Hyper: usd
        cost = cost.get("total_cost", cost.get("usd"))
    if cost is None and usage.get("cost_in_usd_ticks") is not None:
        cost = usage["cost_in_usd_ticks"] / 1e10
    uncached = prompt - (cached or 0) - (write or 0)
    return TokenUsage(
        input_tokens=uncached if uncached >= 0 else prompt,  # cached counted apart (Grok on Azure)
        output_tokens=output,
        cache_read_tokens=cached,
        cache_write_tokens=write,
        reasoning_tokens=reasoning,
        cost=float(cost) if cost is not None else None,
    )


# --------------------------------------------------------------------------- every fixture


@pytest.mark.parametrize("rel", CHAT_FIXTURES)
def test_fixture_matches_raw_events(rel: str) -> None:
    data = fixture_bytes(rel)
    result = assemble(decode_checked(data, wire_of(rel)))
    ref = read_chat(data)
    text, reasoning = ref.text, ref.reasoning
    dialect = DIALECTS.get(wire_of(rel))
    if "<think>" in text and dialect is not None and dialect.think_tags:
        # a server without a reasoning parser: the dialect strips the tags
        inside = re.findall(r"<think>(.*?)</think>", text, flags=re.S)
        text = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
        reasoning += "".join(inside)
        assert inside and result.reasoning.strip()
    assert result.text == text
    assert result.reasoning == reasoning
    calls = [(c.id, c.name) for c in result.tool_calls]
    assert calls == [(c["id"], c["name"]) for c in ref.calls]
    for call, raw in zip(result.tool_calls, ref.calls):
        assert json.loads(call.arguments) == json.loads(raw["arguments"] or "{}")
        assert not call.arguments_truncated
    assert result.usage == (expected_usage(ref.usage) if ref.usage else None)
    meta = result.metadata
    assert meta is not None
    assert meta.serving_provider == ref.provider
    finish = result.finish
    if ref.error:
        assert finish.kind == "error" and finish.failure is not None
        assert finish.failure.serving_provider == ref.provider
    elif ref.finish_reason is None and not (ref.text or ref.reasoning or ref.calls):
        # nothing at all, and no finish word (MiniMax via OpenRouter): EMPTY_RESPONSE, explained
        assert finish.kind == "error" and finish.failure is not None and finish.failure.code == "EMPTY_RESPONSE"
    elif ref.finish_reason is None:
        assert finish.kind == ("tool-calls" if ref.calls else "stop") and finish.raw is None
    else:
        kinds = {"stop": "stop", "tool_calls": "tool-calls", "length": "max-tokens", "eos": "stop"}
        # a forced (named) tool choice ends its calls with "stop" (recorded, gpt-4-0125)
        stop_with_calls = ref.finish_reason == "stop" and bool(ref.calls)
        assert finish.kind == ("tool-calls" if stop_with_calls else kinds[ref.finish_reason])
        assert finish.raw == (ref.native or ref.finish_reason)


def test_every_chat_family_folder_is_covered() -> None:
    folders = {rel.split("/")[0] for rel in CHAT_FIXTURES}
    assert folders == set(DIALECT_OF_FOLDER)
    assert len(CHAT_FIXTURES) >= 45


# --------------------------------------------------------------------------- exact expectations


EXACT: dict[str, tuple[TokenUsage | None, str, str | None, str | None]] = {
    # fixture: (usage, finish kind, finish raw, serving provider)
    "deepseek/reasoner_tool_call_cache_hit.sse": (
        TokenUsage(19, 83, cache_read_tokens=320, reasoning_tokens=39), "tool-calls", "tool_calls", None),
    "deepseek/chat_text_finish_length.sse": (
        TokenUsage(13, 400, cache_read_tokens=0), "max-tokens", "length", None),
    "xai/grok3mini_reasoning_content_text.sse": (
        TokenUsage(1, 342, cache_read_tokens=11, reasoning_tokens=340, cost=0.000172125), "stop", "stop", None),
    "xai/grok3mini_reasoning_tool_call.sse": (
        TokenUsage(1, 253, cache_read_tokens=306, reasoning_tokens=227, cost=0.00014975),
        "tool-calls", "tool_calls", None),
    "groq/tool_call_llama33.sse": (TokenUsage(210, 15), "tool-calls", "tool_calls", None),
    "groq/text_llama33_x_groq_usage.sse": (TokenUsage(45, 662), "stop", "stop", None),
    # the last chunk's usage (its cost object's total_cost), the chat.completion.done object's finish
    "perplexity/sonar_search_results_cost_done_object.sse": (TokenUsage(8, 5, cost=0.00501), "stop", "stop", None),
    "openrouter/cache_usage_bedrock_claude.sse": (
        TokenUsage(254, 5, cache_read_tokens=0, cache_write_tokens=0, reasoning_tokens=0, cost=0.000837),
        "stop", "stop", "Amazon Bedrock"),
    "openrouter/reasoning_grok4.sse": (
        TokenUsage(8, 187, cache_read_tokens=679, reasoning_tokens=118, cost=0.00333825), "stop", "completed", "xAI"),
    "openrouter/tool_call_kimi_k2_novita.sse": (
        TokenUsage(57, 17, cache_read_tokens=0, reasoning_tokens=0, cost=7.159e-05), "tool-calls", None, "Novita"),
    # the usage comes in a chunk after the error chunk (and 15 calls all at index 0)
    "openrouter/gemini25_flash_lite_15_same_index_tool_calls_then_malformed_function_call_error_trailing_usage.sse": (
        TokenUsage(41, 243, cache_read_tokens=0, reasoning_tokens=72, cost=0.0001013),
        "error", "MALFORMED_FUNCTION_CALL", "Google"),
    # 11 reasoning tokens beside 10 completion tokens: counted apart, so output is 21
    "openrouter/midstream_error_chunk.sse": (
        TokenUsage(43, 10 + 11, cache_read_tokens=0, reasoning_tokens=11, cost=0.0), "error", "length", "Minimax"),
    "vllm/crusoe_llama33_text_usage.sse": (TokenUsage(46, 14, cache_read_tokens=0), "stop", "stop", None),
    "mistral/magistral_small_p_padding.sse": (TokenUsage(28, 4, cache_read_tokens=0), "stop", "stop", None),
    "llamacpp/llamaserver_qwen_midstream_error.sse": (None, "error", None, None),
    "groq/midstream_error_tool_use_failed.sse": (None, "error", None, None),
}


@pytest.mark.parametrize("rel", sorted(EXACT))
def test_exact_usage_finish_and_serving_provider(rel: str) -> None:
    usage, kind, raw, served = EXACT[rel]
    result = assemble(decode_checked(fixture_bytes(rel), wire_of(rel)))
    assert result.usage == usage
    assert result.finish.kind == kind
    assert result.finish.raw == raw
    assert result.metadata is not None and result.metadata.serving_provider == served


def test_openrouter_midstream_error_keeps_partial_reasoning_and_usage() -> None:
    result = assemble(decode_checked(fixture_bytes("openrouter/midstream_error_chunk.sse"), "openrouter"))
    failure = result.failure
    assert failure is not None and failure.status == 400
    assert failure.serving_provider == "Minimax" and failure.provider == "openrouter"
    assert "Token limit reached" in (failure.detail or "")
    assert result.reasoning == "We need to respond to a greeting. The user"
    assert result.usage is not None and result.usage.reasoning_tokens == 11


def test_openrouter_reasoning_details_signature_reaches_block_and_replay() -> None:
    result = assemble(decode_checked(fixture_bytes("openrouter/reasoning_details_claude.sse"), "openrouter"))
    block = result.blocks[0]
    assert isinstance(block, ReasoningBlock)
    assert block.text == "This is a simple arithmetic question. 2+2 equals 4."
    assert block.signature is not None and block.signature.startswith("Et0BCkgIChACGAIqQA2s")
    state = result.replay_state
    assert state["wire"] == "openai-chat"
    (detail,) = state["reasoning_details"]
    assert detail["type"] == "reasoning.text" and detail["format"] == "anthropic-claude-v1"
    assert detail["text"] == block.text and detail["signature"] == block.signature
    assert json.loads(json.dumps(state)) == state


@pytest.mark.parametrize("rel", ["openrouter/reasoning_grok4.sse", "openrouter/reasoning_o3.sse"])
def test_openrouter_encrypted_reasoning_goes_to_replay_only(rel: str) -> None:
    result = assemble(decode_checked(fixture_bytes(rel), "openrouter"))
    assert not any(isinstance(b, ReasoningBlock) for b in result.blocks)
    details = result.replay_state["reasoning_details"]
    assert [d["type"] for d in details] == ["reasoning.encrypted"]
    assert len(details[0]["data"]) > 100


def test_openrouter_keepalive_comments_are_not_events() -> None:
    data = fixture_bytes("openrouter/reasoning_details_claude.sse")
    stripped = b"".join(
        line for line in data.splitlines(keepends=True) if not line.startswith(b": OPENROUTER")
    )
    assert decode_checked(stripped, "openrouter") == decode_checked(data, "openrouter")


def test_xai_reasoning_outside_completion_and_usd_ticks() -> None:
    result = assemble(decode_checked(fixture_bytes("xai/grok3mini_reasoning_content_text.sse"), "xai"))
    usage = result.usage
    assert usage is not None
    assert usage.output_tokens == 2 + 340 and usage.reasoning_tokens == 340
    assert usage.cost == pytest.approx(1721250 / 1e10)
    assert usage.total_tokens == 354


def test_groq_event_error_frame_is_a_classified_error_finish() -> None:
    result = assemble(decode_checked(fixture_bytes("groq/midstream_error_tool_use_failed.sse"), "groq"))
    failure = result.failure
    assert failure is not None and failure.code == "INVALID_REQUEST"
    assert "tool_use_failed" in (failure.detail or "")
    assert result.reasoning.startswith("We need to call the tool")
    assert result.tool_calls == ()


def test_llama_box_error_line_ends_the_stream_with_its_text() -> None:
    # llama-box writes a mid-stream failure as an ``error:`` line, not ``data:`` (the SSE
    # decoder's one extension): its text, not a bare cut, ends the stream
    from core.test_sse import LLAMA_BOX_END

    result = assemble(decode_checked(LLAMA_BOX_END, "vllm"))
    assert result.finish.kind == "error" and result.text == " of"
    failure = result.failure
    assert failure is not None and failure.code == "CONTEXT_WINDOW_EXCEEDED"  # not a bare STREAM_CLOSED
    assert "increasing context size" in (failure.detail or "")


def test_groq_executed_tools_are_server_tools() -> None:
    """groq/compound (recorded): the search it ran arrives as ``delta.executed_tools``, twice
    under one index (arguments, then the output too); one server tool, never a call."""
    data = fixture_bytes("groq/compound_web_search_executed_tools.sse")
    ran = [t for _, p in raw_payloads(data) if isinstance(p, dict)
           for c in p["choices"] for t in c["delta"].get("executed_tools", [])]
    assert [t["index"] for t in ran] == [0, 0] and "output" in ran[1]
    result = assemble(decode_checked(data, "groq"))
    assert not result.tool_calls and result.finish.kind == "stop"
    assert result.metadata is not None
    assert result.metadata.server_tools == (
        {"type": "search", "index": 0, "arguments": '{"query": "What is the weather in San Francisco today?"}'},
    )
    assert result.text.startswith("The weather in San Francisco today is partly cloudy")


def test_executed_tools_keep_their_index_order_and_last_arguments() -> None:
    data = sse(
        chunk({"executed_tools": [{"index": 1, "type": "visit", "arguments": '{"url": "u"}'}]}),
        chunk({"executed_tools": [{"index": 0, "type": "search", "arguments": '{"query": "q"}'}]}),
        chunk({"executed_tools": [{"index": 1, "type": "visit", "arguments": '{"url": "v"}', "output": "page"}]}),
        chunk({"content": "done"}, "stop"),
    )
    result = assemble(decode_checked(data, "groq"))
    assert result.metadata is not None
    assert [(t["index"], t["type"], t["arguments"]) for t in result.metadata.server_tools] == [
        (0, "search", '{"query": "q"}'),
        (1, "visit", '{"url": "v"}'),
    ]


def test_snowflake_cortex_reasoning_only_in_details_and_no_finish_reason() -> None:
    """Snowflake Cortex (claude-sonnet-4-6, recorded): reasoning only as
    ``reasoning_details`` ``reasoning.text`` entries, empty ids, no ``finish_reason``
    anywhere, usage in a trailing ``choices: []`` chunk, then ``[DONE]``."""
    data = fixture_bytes("snowflake/cortex_claude_reasoning_details_no_finish_reason.sse")
    result = assemble(decode_checked(data, "openai-chat"))
    assert result.reasoning == "15 * 27 = 405"
    assert result.text.startswith("15 × 27 = **405**")
    assert (result.finish.kind, result.finish.raw, result.failure) == ("stop", None, None)
    assert result.usage == TokenUsage(45, 73, cache_read_tokens=0, reasoning_tokens=0)
    assert result.replay_state["reasoning_details"][0]["format"] == "anthropic-claude-v1"


def test_openrouter_web_search_annotations_are_citations() -> None:
    data = fixture_bytes("openrouter/web_search_annotations_deepseek.sse")
    annotations = [a for _, p in raw_payloads(data) if isinstance(p, dict)
                   for c in p.get("choices", []) for a in c["delta"].get("annotations", [])]
    assert annotations and all(a["type"] == "url_citation" for a in annotations)
    result = assemble(decode_checked(data, "openrouter"))
    (block,) = [b for b in result.blocks if isinstance(b, TextBlock)]
    urls = list(dict.fromkeys(a["url_citation"]["url"] for a in annotations))
    assert [c.url for c in block.citations] == urls
    assert all(c.kind == "url" for c in block.citations)


def test_mistral_thinking_parts_become_reasoning() -> None:
    result = assemble(decode_checked(fixture_bytes("mistral/magistral_thinking_content_parts.sse"), "mistral"))
    assert [type(b) for b in result.blocks] == [ReasoningBlock, TextBlock]
    assert result.reasoning.startswith("Okay, the user is asking how to cross the street.")
    assert result.text.startswith("To cross the street safely")


def test_llamacpp_python_forced_tool_call_repeating_name_and_id() -> None:
    result = assemble(decode_checked(fixture_bytes("llamacpp/llamacpppython_qwen_tool_calls_forced.sse"), "llamacpp"))
    (call,) = result.tool_calls
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}


def test_eof_without_done_after_a_finish_reason_is_normal() -> None:
    data = fixture_bytes("mistral/text.sse").replace(b"data: [DONE]\n\n", b"")
    result = assemble(decode_checked(data, "mistral"))
    assert result.finish.kind == "stop" and result.text == "Hello, world! This is a test response."


def test_eof_before_any_finish_is_stream_closed_with_truncated_tool_call() -> None:
    data = fixture_bytes("openai/single_tool_call.sse")
    cut = data[: data.index(b'"finish_reason":"tool_calls"') - 300]
    cut = cut[: cut.rindex(b"\n\n") + 2]
    chunks = decode_checked(cut, "openai")
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert len(ends) == 1 and isinstance(ends[0], ToolCallBlock) and ends[0].arguments_truncated
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"


# --------------------------------------------------------------------------- synthetic streams


def sse(*payloads: Any, done: bool = True, event: str | None = None) -> bytes:
    out = b""
    for payload in payloads:
        if event is not None:
            out += f"event: {event}\n".encode()
        out += b"data: " + json.dumps(payload).encode() + b"\n\n"
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None and finish is None else [
        {"index": 0, "delta": delta or {}, "finish_reason": finish}
    ]
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": choices, **extra}


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (
            {"prompt_tokens": 283, "completion_tokens": 69, "prompt_cache_hit_tokens": 256,
             "prompt_cache_miss_tokens": 27, "completion_tokens_details": {"reasoning_tokens": 24}},
            TokenUsage(27, 69, cache_read_tokens=256, reasoning_tokens=24),
        ),
        ({"prompt_tokens": 10, "completion_tokens": 2, "prompt_cache_hit_tokens": 8}, TokenUsage(2, 2, cache_read_tokens=8)),
        ({"prompt_tokens": 10, "completion_tokens": 2}, TokenUsage(10, 2)),
        # Together and Moonshot put the cache read at the top level of usage
        ({"prompt_tokens": 41, "completion_tokens": 15, "total_tokens": 56, "cached_tokens": 30},
         TokenUsage(11, 15, cache_read_tokens=30)),
    ],
)
def test_seed_usage_vectors(usage: dict[str, Any], expected: TokenUsage) -> None:
    data = sse(chunk({"content": "hi"}, "stop"), chunk(None, usage=usage))
    result = assemble(decode_checked(data, "deepseek"))
    assert result.usage == expected


def test_seed_full_tool_call_vector() -> None:
    data = sse(
        chunk({"tool_calls": [{"index": 0, "id": "call_00_x", "type": "function",
                                "function": {"name": "get_weather", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ': "Paris"}'}}]}),
        chunk({}, "tool_calls", usage={"prompt_tokens": 28, "completion_tokens": 6}),
    )
    chunks = decode_checked(data, "deepseek")
    assert chunks[:-1] == [
        BlockStart(0, "tool-call"),
        ToolCallDelta(0, "call_00_x", "get_weather", ""),
        ToolCallDelta(0, "call_00_x", "get_weather", '{"city"'),
        ToolCallDelta(0, "call_00_x", "get_weather", ': "Paris"}'),
        BlockEnd(0, ToolCallBlock("call_00_x", "get_weather", '{"city": "Paris"}')),
        UsageChunk(TokenUsage(28, 6)),
    ]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "tool-calls" and finish.reason.raw == "tool_calls"


def test_seed_first_chunk_with_empty_reasoning_and_null_content_opens_nothing() -> None:
    data = sse(chunk({"role": "assistant", "reasoning_content": "", "content": None}), chunk({"content": "x"}, "stop"))
    chunks = decode_checked(data, "deepseek")
    assert chunks[0] == BlockStart(0, "text")


def test_groq_usage_in_x_groq_and_usage_is_counted_once() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    both = sse(chunk({"content": "a"}), chunk({}, "stop", usage=usage, x_groq={"usage": usage}))
    only_x_groq = sse(chunk({"content": "a"}), chunk({}, "stop", x_groq={"id": "r", "usage": usage}))
    split = sse(chunk({"content": "a"}), chunk({}, "stop", x_groq={"usage": usage}), chunk(None, usage=usage))
    for data in (both, only_x_groq, split):
        chunks = decode_checked(data, "groq")
        assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [TokenUsage(5, 3)]


def test_groq_whole_tool_call_in_one_chunk() -> None:
    data = sse(
        chunk({"tool_calls": [{"id": "a", "type": "function", "index": 0,
                                "function": {"name": "f", "arguments": '{"x": 1}'}},
                               {"id": "b", "type": "function", "index": 1,
                                "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    result = assemble(decode_checked(data, "groq"))
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("a", "f", '{"x": 1}'), ("b", "g", "{}")]


def test_ollama_tool_calls_without_index_and_empty_finish_reason() -> None:
    data = sse(
        chunk({"role": "assistant", "content": "", "reasoning": "think"}, ""),
        chunk({"content": "", "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": '{"a":1}'}}]}, ""),
        chunk({"content": "", "tool_calls": [{"id": "call_2", "function": {"name": "g", "arguments": '{"b":2}'}}]}, ""),
        chunk({"content": ""}, "tool_calls"),
    )
    result = assemble(decode_checked(data, "ollama"))
    assert result.reasoning == "think"
    assert [(c.id, c.name) for c in result.tool_calls] == [("call_1", "f"), ("call_2", "g")]
    assert result.finish.kind == "tool-calls"


def test_ollama_empty_finish_reason_everywhere_then_done_is_stop() -> None:
    data = sse(chunk({"content": "Hi"}, ""), chunk({"content": "!"}, ""))
    result = assemble(decode_checked(data, "ollama"))
    assert result.text == "Hi!" and result.finish.kind == "stop" and result.finish.raw is None


def test_vllm_continuous_usage_last_wins_and_both_reasoning_spellings() -> None:
    data = sse(
        chunk({"reasoning": "a"}, usage={"prompt_tokens": 4, "completion_tokens": 1}),
        chunk({"reasoning_content": "b"}, usage={"prompt_tokens": 4, "completion_tokens": 2}),
        chunk({"content": "c"}, "stop", usage={"prompt_tokens": 4, "completion_tokens": 3}),
    )
    chunks = decode_checked(data, "vllm")
    assert [c.usage for c in chunks if isinstance(c, UsageChunk)] == [TokenUsage(4, 3)]
    result = assemble(chunks)
    assert (result.reasoning, result.text) == ("ab", "c")


@pytest.mark.parametrize("dialect", ["llamacpp", "ollama", "vllm", "lmstudio", "custom"])
def test_think_tags_in_content_become_reasoning_for_local_servers(dialect: str) -> None:
    data = sse(chunk({"content": "<thi"}), chunk({"content": "nk>plan</think>"}), chunk({"content": "Answer"}, "stop"))
    result = assemble(decode_checked(data, dialect))
    assert (result.reasoning, result.text) == ("plan", "Answer")


def test_groqs_raw_reasoning_format_is_think_tags_in_the_content() -> None:
    """Recorded (Qwen 3 32B on Groq, no ``reasoning_format`` asked: Groq's ``raw``): the
    reasoning is a ``<think>`` section of the content."""
    result = assemble(decode_checked(fixture_bytes("groq/qwen3_32b_think_tags_in_content_raw_reasoning_format.sse"), "groq"))
    assert len(result.reasoning) == 419 and "<think>" not in result.text and "</think>" not in result.text
    assert result.text.strip().startswith("15 multiplied by 3 equals **45**.")
    assert result.usage == TokenUsage(42, 235) and result.finish.kind == "stop"


@pytest.mark.parametrize("dialect", ["openai", "deepseek", "openrouter"])
def test_think_tags_stay_text_for_native_reasoning_providers(dialect: str) -> None:
    data = sse(chunk({"content": "<think>plan</think>Answer"}, "stop"))
    result = assemble(decode_checked(data, dialect))
    assert result.text == "<think>plan</think>Answer"


def test_openrouter_error_chunk_with_finish_reason_error_keeps_usage() -> None:
    data = sse(
        chunk({"content": "partial"}, provider="Together"),
        {**chunk({}, "error"), "provider": "Together",
         "error": {"code": 502, "message": "upstream failed", "metadata": {"provider_name": "Together"}},
         "usage": {"prompt_tokens": 9, "completion_tokens": 1, "cost": 0.5}},
    )
    result = assemble(decode_checked(data, "openrouter"))
    assert result.text == "partial"
    failure = result.failure
    assert failure is not None and failure.serving_provider == "Together" and failure.retryable
    assert result.usage == TokenUsage(9, 1, cost=0.5)


def test_openrouter_finish_reason_error_without_payload() -> None:
    data = sse(chunk({"content": "x"}, provider="P"), chunk({}, "error", provider="Q"))
    result = assemble(decode_checked(data, "openrouter"))
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.serving_provider == "P"  # first non-empty provider wins


def test_openrouter_native_finish_reason_is_raw() -> None:
    payload = chunk({"content": "x"}, "stop")
    payload["choices"][0]["native_finish_reason"] = "end_turn"
    result = assemble(decode_checked(sse(payload), "openrouter"))
    assert result.finish == result.finish.__class__("stop", raw="end_turn")


def test_openrouter_done_without_finish_reason() -> None:
    text_only = sse(chunk({"content": "x"}))
    tool = sse(chunk({"tool_calls": [{"index": 0, "id": "t", "function": {"name": "f", "arguments": "{}"}}]}))
    assert assemble(decode_checked(text_only, "openrouter")).finish.kind == "stop"
    assert assemble(decode_checked(tool, "openrouter")).finish.kind == "tool-calls"


def test_content_filter_finish_is_a_classified_error() -> None:
    result = assemble(decode_checked(sse(chunk({"content": "x"}, "content_filter")), "openai"))
    assert result.failure is not None and result.failure.code == "CONTENT_FILTER"
    assert result.finish.raw == "content_filter"


def test_stop_with_no_content_is_empty_response() -> None:
    result = assemble(decode_checked(sse(chunk({"content": ""}, "stop")), "openai"))
    assert result.failure is not None and result.failure.code == "EMPTY_RESPONSE"


def test_legacy_completions_text_is_visible_text() -> None:
    result = assemble(decode_checked(fixture_bytes("openai/legacy_completions_text.sse"), "openai"))
    assert result.text.startswith('The holiday is called "Gratitude Day"')
    assert result.finish.kind == "max-tokens"


def _call(index: int, call_id: str, name: str | None = None, arguments: str = "") -> dict[str, Any]:
    function: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        function["name"] = name
    return {"tool_calls": [{"index": index, "id": call_id, "type": "function", "function": function}]}


@pytest.mark.parametrize(
    "server",
    [
        # vLLM: both calls at index 0, each opened with its own id, continued with id ""
        # (InternLM/lmdeploy#3412, the vLLM trace it quotes)
        [_call(0, "chatcmpl-tool-c9Z", "f"), _call(0, "", None, '{"city":'), _call(0, "", None, ' "Rome"}'),
         _call(0, "chatcmpl-tool-HfZ", "f"), _call(0, "", None, '{"city": "Paris"}')],
        # SGLang: both at index 0, ids "0" and "1" repeated on every delta (the same issue)
        [_call(0, "0", "f"), _call(0, "0", None, '{"city": "Rome"}'), _call(0, "1", "f"), _call(0, "1", None, '{"city": "Paris"}')],
    ],
    ids=["vllm", "sglang"],
)
def test_parallel_calls_all_at_index_0_stay_apart(server: list[dict[str, Any]]) -> None:
    data = sse(*(chunk(delta) for delta in server), chunk({}, "tool_calls"))
    for pieces in ([data], [data[i : i + 1] for i in range(len(data))]):
        result = assemble(decode_checked(pieces, "openai"))
        assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("f", {"city": "Rome"}), ("f", {"city": "Paris"})]
        assert len({c.id for c in result.tool_calls}) == 2 and result.finish.kind == "tool-calls"


def test_a_new_id_inside_unfinished_arguments_is_the_same_call() -> None:
    """A server that sends a fresh id with every delta of one call (the pattern vLLM's
    first harmony tool streaming had) still makes one call: its arguments are not whole yet."""
    data = sse(chunk(_call(0, "id-1", "f", '{"city":')), chunk(_call(0, "id-2", "f", ' "Rome"')),
               chunk(_call(0, "id-3", "f", "}")), chunk({}, "tool_calls"))
    result = assemble(decode_checked(data, "openai"))
    assert [(c.name, json.loads(c.arguments)) for c in result.tool_calls] == [("f", {"city": "Rome"})]


@pytest.mark.parametrize(("rel", "served"), [
    ("vercel/claude_sonnet4_reasoning_details_signature_tool_call.sse", "anthropic"),
    ("vercel/gemini3_pro_encrypted_reasoning_after_tool_call.sse", "vertex"),
    ("vercel/gpt5_reasoning_summary_details_tool_call.sse", "openai"),
])
def test_vercels_gateway_names_the_provider_that_served(rel: str, served: str) -> None:
    """Recorded (charmbracelet/fantasy): the finish chunk's provider_metadata carries the
    gateway's routing record; its finalProvider is the serving provider (rule 9)."""
    result = assemble(decode_checked(fixture_bytes(rel), "openai-chat"))
    assert result.metadata is not None and result.metadata.serving_provider == served
