"""The OpenAI Responses wire against every recorded Responses transcript (OpenAI, DeepSeek's
``/responses`` endpoint, OpenRouter's data-only framing), plus synthetic edge cases.
Split invariance of every fixture is tests/robustness/test_corpus.py's."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._core.assembler import AssembledResponse, BlockAssembler
from dshstream._core.contract import check_contract
from dshstream._core.types import (
    BlockEnd,
    Finish,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dshstream._core.wires.openai_responses import responses_usage
from helpers import FIXTURES, decode_all, fixture_bytes

WIRE = "openai-responses"
# Built-in tool recordings (openai-responses/builtin-tools/) are checked item by item in
# tests/adapters/test_builtin_tools.py; the corpus tests (helpers.all_fixtures) include
# them too.
RESPONSES_FIXTURES = sorted(
    [f"openai-responses/{p.name}" for p in (FIXTURES / "openai-responses").glob("*.sse")]
    + [f"deepseek/{p.name}" for p in (FIXTURES / "deepseek").glob("responses_api_*.sse")]
    + ["openrouter/responses_api_reasoning_text_gpt_oss.sse"]
    + [f"xai/{p.name}" for p in (FIXTURES / "xai").glob("responses_api_*.sse")]
    + [f"lmstudio/{p.name}" for p in (FIXTURES / "lmstudio").glob("responses_api_*.sse")]
)


def decode_checked(data: bytes | list[bytes], **options: Any) -> list[StreamChunk]:
    pieces = [data] if isinstance(data, bytes) else data
    return list(check_contract(decode_all(pieces, WIRE, **options)))


def assemble(chunks: list[StreamChunk]) -> AssembledResponse:
    assembler = BlockAssembler()
    assembler.extend(chunks)
    return assembler.result()


def events(data: bytes) -> list[dict[str, Any]]:
    """Every JSON payload, by a naive framing (event names are not needed: ``type`` is)."""
    out = []
    for frame in data.decode("utf-8").replace("\r\n", "\n").split("\n\n"):
        lines = [line[5:].removeprefix(" ") for line in frame.split("\n") if line.startswith("data:")]
        if lines and lines != ["[DONE]"]:
            out.append(json.loads("\n".join(lines)))
    return out


def terminal(data: bytes) -> dict[str, Any]:
    (last,) = [e for e in events(data) if e["type"] in ("response.completed", "response.incomplete", "response.failed")]
    return last


# --------------------------------------------------------------------------- every fixture


@pytest.mark.parametrize("rel", RESPONSES_FIXTURES)
def test_fixture_matches_raw_events(rel: str) -> None:
    data = fixture_bytes(rel)
    result = assemble(decode_checked(data))
    evs = events(data)
    text = "".join(e["delta"] for e in evs if e["type"] == "response.output_text.delta")
    reasoning = "".join(
        e["delta"]
        for e in evs
        if e["type"] in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
    )
    assert result.text == text
    assert result.reasoning == reasoning
    final = terminal(data)
    response = final["response"]
    output = response["output"]
    calls = [item for item in output if item["type"] == "function_call"]
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        (c["call_id"], c["name"], c["arguments"]) for c in calls
    ]
    meta = result.metadata
    assert meta is not None and meta.response_id == response["id"] and meta.model == response["model"]
    if final["type"] == "response.failed":
        assert result.finish.kind == "error"
        return
    usage = response["usage"]
    cached = usage["input_tokens_details"]["cached_tokens"]
    written = usage["input_tokens_details"].get("cache_write_tokens")  # Bedrock Mantle reports it
    assert result.usage == TokenUsage(
        input_tokens=usage["input_tokens"] - cached - (written or 0),
        output_tokens=usage["output_tokens"],
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=usage["output_tokens_details"]["reasoning_tokens"],
        # a gateway's cost, or xAI's in ticks of 1e-10 USD
        cost=usage.get("cost", usage["cost_in_usd_ticks"] / 1e10 if "cost_in_usd_ticks" in usage else None),
    )
    if final["type"] == "response.incomplete":  # cut at max_output_tokens: the text so far
        assert (result.finish.kind, result.finish.raw) == ("max-tokens", response["incomplete_details"]["reason"])
    else:
        assert result.finish.kind == ("tool-calls" if calls else "stop")
        assert result.finish.raw == "completed"
    # replay state: every item of the terminal response (server tool calls too), in order
    state = result.replay_state
    assert state["wire"] == WIRE
    replayed = [(i["type"], i.get("id")) for i in state["items"]]
    assert replayed == [(i["type"], i["id"]) for i in output]
    for entry, item in zip(state["items"], output):
        if item["type"] == "reasoning":
            assert entry.get("encrypted_content") == item.get("encrypted_content")
            assert entry["summary"] == item["summary"]
        if item["type"] == "function_call":
            assert entry["call_id"] == item["call_id"]
    assert json.loads(json.dumps(state)) == state


# --------------------------------------------------------------------------- specifics


def test_insufficient_quota_error_event_is_quota() -> None:
    result = assemble(decode_checked(fixture_bytes("openai-responses/error_event_insufficient_quota.sse")))
    failure = result.failure
    assert failure is not None and failure.code == "QUOTA" and not failure.retryable
    assert result.finish.kind == "error" and result.blocks == ()
    assert result.metadata is not None and result.metadata.model == "gpt-5-nano-2025-08-07"


def test_multi_part_summary_is_one_reasoning_block_per_part() -> None:
    result = assemble(decode_checked(fixture_bytes("openai-responses/reasoning_summary_multi_part_o3mini.sse")))
    kinds = [type(b) for b in result.blocks]
    assert kinds == [ReasoningBlock] * 4 + [TextBlock]
    assert all(b.signature is None for b in result.blocks if isinstance(b, ReasoningBlock))
    assert result.blocks[1].text.startswith("**Explaining street crossing safety**")  # type: ignore[union-attr]
    assert result.usage == TokenUsage(13, 1680, cache_read_tokens=0, reasoning_tokens=1408)


def test_encrypted_reasoning_without_summary_is_replay_only() -> None:
    data = fixture_bytes("openai-responses/reasoning_item_then_function_call_gpt5.sse")
    result = assemble(decode_checked(data))
    assert [type(b) for b in result.blocks] == [ToolCallBlock]
    reasoning, call = result.replay_state["items"]
    final_reasoning = terminal(data)["response"]["output"][0]
    # the encrypted content of output_item.added differs from the final one: the final wins
    assert reasoning["encrypted_content"] == final_reasoning["encrypted_content"]
    assert reasoning["id"].startswith("rs_") and call["id"].startswith("fc_")
    assert result.finish.kind == "tool-calls"


def test_openrouter_temporary_ids_are_replaced_by_the_terminal_ones() -> None:
    data = fixture_bytes("openrouter/responses_api_reasoning_text_gpt_oss.sse")
    result = assemble(decode_checked(data))
    assert [type(b) for b in result.blocks] == [ReasoningBlock, TextBlock]
    assert result.text == "4"
    reasoning = result.replay_state["items"][0]
    assert reasoning["id"] == "rs_tmp_ku4i7pagjwn"  # not rs_tmp_2kbe7x16sax from the events
    assert reasoning["content"][0]["type"] == "reasoning_text"
    assert result.usage is not None and result.usage.cost == pytest.approx(1.13e-05)


def test_deepseek_function_call_with_cache() -> None:
    result = assemble(decode_checked(fixture_bytes("deepseek/responses_api_function_call.sse")))
    (call,) = result.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "call_00_xjY8Z2BvSlzgEmmw0DtH0464", "get_temperature", {"city": "Tokyo"})
    assert result.usage == TokenUsage(110, 59, cache_read_tokens=256, reasoning_tokens=14)


def test_request_id_and_provider_are_attributed() -> None:
    result = assemble(decode_checked(fixture_bytes("openai-responses/text.sse"), provider="openai", request_id="req_1"))
    assert result.metadata is not None and result.metadata.request_id == "req_1"
    failed = assemble(
        decode_checked(fixture_bytes("openai-responses/error_event_insufficient_quota.sse"), provider="openai")
    )
    assert failed.failure is not None and failed.failure.provider == "openai"


# --------------------------------------------------------------------------- synthetic streams


def stream(*payloads: dict[str, Any], done: bool = False) -> bytes:
    out = b"".join(
        f"event: {p['type']}\n".encode() + b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads
    )
    return out + (b"data: [DONE]\n\n" if done else b"")


CREATED = {"type": "response.created", "response": {"id": "resp_1", "model": "m", "output": []}}


def completed(output: list[dict[str, Any]], status: str = "completed", **extra: Any) -> dict[str, Any]:
    kind = {"completed": "response.completed", "incomplete": "response.incomplete"}[status]
    response = {
        "id": "resp_1", "model": "m", "status": status, "output": output,
        "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4},
                  "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2}},
        **extra,
    }
    return {"type": kind, "response": response}


def test_usage_subtracts_cached_and_keeps_reasoning_inside_output() -> None:
    assert responses_usage(completed([])["response"]["usage"]) == TokenUsage(
        6, 7, cache_read_tokens=4, reasoning_tokens=2
    )
    assert responses_usage({}) is None


def test_incomplete_max_output_tokens_truncates_open_tool_call() -> None:
    data = stream(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0,
         "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_1", "delta": '{"a": [1, 2'},
        completed([{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": '{"a": [1, 2'}],
                  status="incomplete", incomplete_details={"reason": "max_output_tokens"}),
    )
    chunks = decode_checked(data)
    (end,) = [c for c in chunks if isinstance(c, BlockEnd)]
    assert isinstance(end.block, ToolCallBlock) and end.block.arguments_truncated
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "max-tokens"
    assert finish.reason.raw == "max_output_tokens"


def test_incomplete_content_filter_is_an_error() -> None:
    data = stream(
        CREATED,
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "m1", "content_index": 0, "delta": "Hi"},
        completed([], status="incomplete", incomplete_details={"reason": "content_filter"}),
    )
    result = assemble(decode_checked(data))
    assert result.text == "Hi"
    assert result.failure is not None and result.failure.code == "CONTENT_FILTER"
    assert result.usage is not None and result.usage.input_tokens == 6


def test_response_failed_is_a_classified_error_keeping_partial_text() -> None:
    data = stream(
        CREATED,
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "m1", "content_index": 0, "delta": "Hi"},
        {"type": "response.failed", "response": {"id": "resp_1", "status": "failed", "output": [],
                                                  "error": {"code": "server_error", "message": "boom"}}},
    )
    result = assemble(decode_checked(data))
    assert result.text == "Hi"
    assert result.failure is not None and result.failure.code == "SERVER" and result.failure.retryable
    assert result.finish.raw == "failed"


def test_flat_error_event_shape() -> None:
    data = stream(CREATED, {"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": None})
    result = assemble(decode_checked(data))
    assert result.failure is not None and result.failure.code == "RATE_LIMIT"


def test_text_known_only_from_done_events_is_emitted_once() -> None:
    data = stream(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "m1", "content": []}},
        {"type": "response.output_text.done", "output_index": 0, "item_id": "m1", "content_index": 0, "text": "Hello"},
        {"type": "response.content_part.done", "output_index": 0, "item_id": "m1", "content_index": 0,
         "part": {"type": "output_text", "text": "Hello"}},
        {"type": "response.output_item.done", "output_index": 0,
         "item": {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "Hello"}]}},
        completed([{"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "Hello"}]}]),
    )
    result = assemble(decode_checked(data))
    assert result.blocks == (TextBlock("Hello"),)


def test_items_only_in_the_terminal_response_are_emitted() -> None:
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "why"}], "encrypted_content": "E"},
        {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "Hi"}]},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": '{"x":1}'},
    ]
    result = assemble(decode_checked(stream(CREATED, completed(output))))
    assert result.blocks == (ReasoningBlock("why"), TextBlock("Hi"), ToolCallBlock("c1", "f", '{"x":1}'))
    assert result.finish.kind == "tool-calls"
    assert [i["type"] for i in result.replay_state["items"]] == ["reasoning", "message", "function_call"]


def test_refusal_is_visible_text() -> None:
    data = stream(
        CREATED,
        {"type": "response.refusal.delta", "output_index": 0, "item_id": "m1", "content_index": 0, "delta": "No."},
        {"type": "response.refusal.done", "output_index": 0, "item_id": "m1", "content_index": 0, "refusal": "No."},
        completed([{"type": "message", "id": "m1", "content": [{"type": "refusal", "refusal": "No."}]}]),
    )
    assert assemble(decode_checked(data)).text == "No."


def test_unknown_events_and_items_are_skipped() -> None:
    data = stream(
        CREATED,
        {"type": "response.web_search_call.searching", "output_index": 0, "item_id": "ws_1"},
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "web_search_call", "id": "ws_1"}},
        {"type": "response.output_item.done", "output_index": 0, "item": {"type": "web_search_call", "id": "ws_1"}},
        {"type": "response.output_text.delta", "output_index": 1, "item_id": "m1", "content_index": 0, "delta": "ok"},
        {"type": "response.something_new", "x": 1},
        completed([{"type": "web_search_call", "id": "ws_1"},
                   {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "ok"}]}]),
    )
    result = assemble(decode_checked(data))
    assert result.text == "ok" and result.finish.kind == "stop"


def test_done_or_eof_before_a_terminal_event_is_stream_closed() -> None:
    body = stream(
        CREATED,
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "m1", "content_index": 0, "delta": "Hi"},
    )
    for data in (body, body + b"data: [DONE]\n\n"):
        result = assemble(decode_checked(data))
        assert result.text == "Hi"
        assert result.failure is not None and result.failure.code == "STREAM_CLOSED"


def test_completed_without_content_is_empty_response() -> None:
    result = assemble(decode_checked(stream(CREATED, completed([]))))
    assert result.failure is not None and result.failure.code == "EMPTY_RESPONSE"


# --------------------------------------------------------------------------- replay keeps every item

def _split_checked(data: bytes, **options: Any) -> list[AssembledResponse]:
    """The stream decoded whole, byte by byte and at a few split points: all must agree."""
    pieces = [[data], [data[i:i + 1] for i in range(len(data))],
              [data[:len(data) // 3], data[len(data) // 3:2 * len(data) // 3], data[2 * len(data) // 3:]]]
    return [assemble(decode_checked(p, **options)) for p in pieces]


PHASED: dict[str, Any] = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "phase": "commentary",
          "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]}
COMPACTION: dict[str, Any] = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-opaque"}
PROGRAM: dict[str, Any] = {"type": "program", "id": "prg_1", "fingerprint": "fp_abc", "code": "print(1)", "status": "completed"}
PROGRAM_OUTPUT: dict[str, Any] = {"type": "program_output", "id": "prgo_1", "program_id": "prg_1", "output": "1"}
CALLED_BY_PROGRAM: dict[str, Any] = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
                     "arguments": "{}", "status": "completed", "caller": {"type": "program", "id": "prg_1"}}
UNKNOWN: dict[str, Any] = {"type": "brand_new_item", "id": "new_1", "payload": {"x": [1, 2]}}


def _items_stream(output: list[dict[str, Any]]) -> bytes:
    events: list[dict[str, Any]] = [CREATED]
    for index, item in enumerate(output):
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return stream(*events, completed(output))


def test_replay_keeps_phase_compaction_program_caller_and_unknown_items() -> None:
    output: list[dict[str, Any]] = [COMPACTION, PHASED, PROGRAM, PROGRAM_OUTPUT, CALLED_BY_PROGRAM, UNKNOWN]
    for result in _split_checked(_items_stream(output)):
        items = result.replay_state["items"]
        assert [i["type"] for i in items] == [i["type"] for i in output]
        assert items[0] == COMPACTION and items[2] == PROGRAM and items[3] == PROGRAM_OUTPUT and items[5] == UNKNOWN
        assert items[1]["phase"] == "commentary"
        assert items[4]["caller"] == {"type": "program", "id": "prg_1"}
        assert result.finish.kind == "tool-calls" and result.text == "Looking."


def test_usage_reads_cache_write_tokens() -> None:
    usage = responses_usage({"input_tokens": 100, "output_tokens": 5,
                             "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 50}})
    assert usage == TokenUsage(input_tokens=20, output_tokens=5, cache_read_tokens=30, cache_write_tokens=50)
    assert usage is not None and usage.total_input_tokens == 100


# --------------------------------------------------------------------------- who ran the tool

XAI_SUBSEARCH: dict[str, Any] = {"type": "custom_tool_call", "id": "ctc_1", "call_id": "xs_1", "name": "x_keyword_search",
                 "input": "{\"query\":\"dshstream\"}", "status": "completed"}
XAI_ANSWER: dict[str, Any] = {"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
              "content": [{"type": "output_text", "text": "Found it.", "annotations": []}]}


def test_custom_tool_call_the_request_did_not_declare_is_a_server_tool() -> None:
    data = _items_stream([XAI_SUBSEARCH, XAI_ANSWER])
    for result in _split_checked(data, client_tools=()):
        assert result.finish.kind == "stop" and not result.tool_calls and result.text == "Found it."
        assert result.metadata is not None
        (tool,) = result.metadata.server_tools
        assert tool["type"] == "custom_tool_call" and tool["name"] == "x_keyword_search"
        assert result.replay_state["items"][0] == XAI_SUBSEARCH
        assert result.replay_state["server_calls"] == ["xs_1"]
    # declared by the client: a call for the client
    declared = assemble(decode_checked(data, client_tools=("x_keyword_search",)))
    assert declared.finish.kind == "tool-calls" and [c.name for c in declared.tool_calls] == ["x_keyword_search"]


HOSTED_SHELL: dict[str, Any] = {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed",
                "action": {"commands": ["ls"]}, "environment": {"type": "container_reference", "container_id": "cntr_1"}}
HOSTED_SHELL_OUTPUT: dict[str, Any] = {"type": "shell_call_output", "id": "sho_1", "call_id": "call_sh", "status": "completed",
                       "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}


def test_shell_call_with_its_output_in_the_response_is_a_server_tool() -> None:
    for result in _split_checked(_items_stream([HOSTED_SHELL, HOSTED_SHELL_OUTPUT, XAI_ANSWER])):
        assert result.finish.kind == "stop" and not result.tool_calls
        assert result.metadata is not None
        assert [t["type"] for t in result.metadata.server_tools] == ["shell_call"]
        assert result.replay_state["items"][:2] == [HOSTED_SHELL, HOSTED_SHELL_OUTPUT]
    # without its output it is the client's to run
    alone = {k: v for k, v in HOSTED_SHELL.items() if k != "environment"}
    result = assemble(decode_checked(_items_stream([alone])))
    assert result.finish.kind == "tool-calls" and [c.name for c in result.tool_calls] == ["shell"]


CLIENT_SEARCH: dict[str, Any] = {"type": "tool_search_call", "id": "tsc_1", "call_id": "call_ts", "execution": "client",
                 "status": "completed", "arguments": {"query": "calendar"}}
SERVER_SEARCH: dict[str, Any] = {**CLIENT_SEARCH, "id": "tsc_2", "call_id": "call_ts2", "execution": "server"}
SERVER_SEARCH_OUTPUT: dict[str, Any] = {"type": "tool_search_output", "id": "tso_2", "call_id": "call_ts2", "execution": "server",
                        "status": "completed", "tools": []}


def test_client_tool_search_call_is_a_call_and_server_one_is_not() -> None:
    for result in _split_checked(_items_stream([CLIENT_SEARCH])):
        assert result.failure is None and result.finish.kind == "tool-calls"
        (call,) = result.tool_calls
        assert (call.id, call.name, json.loads(call.arguments)) == ("call_ts", "tool_search",
                                                                    {"arguments": {"query": "calendar"}})
    for result in _split_checked(_items_stream([SERVER_SEARCH, SERVER_SEARCH_OUTPUT, XAI_ANSWER])):
        assert result.finish.kind == "stop" and not result.tool_calls
        assert result.replay_state["items"][:2] == [SERVER_SEARCH, SERVER_SEARCH_OUTPUT]


# --------------------------------------------------------------------------- the same, on real recordings

PROGRAM_RECORDING = "openai-responses/builtin-tools/program_then_function_call_with_caller.sse"
CLIENT_SEARCH_RECORDING = "openai-responses/builtin-tools/tool_search_call_client_execution.sse"
SERVER_SEARCH_RECORDING = "openai-responses/builtin-tools/tool_search_server_then_function_call.sse"
XAI_RECORDING = "xai/responses_api_reasoning_encrypted_store_false.sse"


def _output(rel: str) -> list[dict[str, Any]]:
    output: list[dict[str, Any]] = terminal(fixture_bytes(rel))["response"]["output"]
    return output


def test_recorded_program_is_replayed_verbatim_and_its_call_keeps_the_caller() -> None:
    """gpt-5.6 programmatic tool calling: a ``program`` item (its ``fingerprint`` must go
    back) and a function call whose ``caller`` names the program."""
    reasoning, program, call = _output(PROGRAM_RECORDING)
    for result in _split_checked(fixture_bytes(PROGRAM_RECORDING)):
        assert result.finish.kind == "tool-calls"
        (tool_call,) = result.tool_calls
        assert (tool_call.id, tool_call.name, json.loads(tool_call.arguments)) == (call["call_id"], "getInventory", {"sku": "sku_123"})
        items = result.replay_state["items"]
        assert [i["type"] for i in items] == ["reasoning", "program", "function_call"]
        assert items[1] == program and items[1]["fingerprint"].startswith("gAAAAA")
        assert items[2]["caller"] == call["caller"] == {"type": "program", "caller_id": program["call_id"]}
        assert items[0]["encrypted_content"] == reasoning["encrypted_content"]
        assert result.usage is not None and result.usage.cache_write_tokens == 0


def test_recorded_client_tool_search_is_a_call_for_the_client() -> None:
    (search,) = _output(CLIENT_SEARCH_RECORDING)
    assert search["execution"] == "client"
    for result in _split_checked(fixture_bytes(CLIENT_SEARCH_RECORDING)):
        assert result.failure is None and result.finish.kind == "tool-calls"  # never EMPTY_RESPONSE
        (call,) = result.tool_calls
        assert (call.id, call.name) == (search["call_id"], "tool_search")
        assert json.loads(call.arguments) == {"arguments": search["arguments"]}
        assert result.replay_state["items"] == [search]


def test_recorded_hosted_tool_search_is_a_server_tool_and_the_function_call_after_it_a_call() -> None:
    search, found, weather = _output(SERVER_SEARCH_RECORDING)
    assert (search["execution"], found["type"]) == ("server", "tool_search_output")
    for result in _split_checked(fixture_bytes(SERVER_SEARCH_RECORDING)):
        assert result.finish.kind == "tool-calls" and [c.name for c in result.tool_calls] == ["get_weather"]
        assert result.metadata is not None
        assert [(t["type"], t["id"]) for t in result.metadata.server_tools] == [("tool_search_call", search["id"])]
        items = result.replay_state["items"]
        assert items[:2] == [search, found]  # the loaded tools go back: the next call may use them
        assert items[2]["call_id"] == weather["call_id"]


def test_recorded_xai_reasoning_keeps_its_encrypted_content_for_every_later_turn() -> None:
    """xAI's Responses API (grok-code-fast-1, ``store: false``): the reasoning item's
    ``encrypted_content`` is kept for replay; its summary is reasoning text."""
    reasoning, message = _output(XAI_RECORDING)
    result = assemble(decode_checked(fixture_bytes(XAI_RECORDING)))
    assert result.finish.kind == "stop" and result.text == message["content"][0]["text"]
    assert result.reasoning == reasoning["summary"][0]["text"]
    items = result.replay_state["items"]
    assert items[0]["encrypted_content"] == reasoning["encrypted_content"] and items[0]["id"] == reasoning["id"]
    assert result.usage == TokenUsage(input_tokens=216 - 192, output_tokens=831, cache_read_tokens=192, reasoning_tokens=253)


BUILTIN = "openai-responses/builtin-tools"


def test_recorded_file_search_cites_the_file_at_its_index() -> None:
    rel = f"{BUILTIN}/file_search_call_file_citations_gpt5.sse"
    search = [i for i in _output(rel) if i["type"] == "file_search_call"]
    for result in _split_checked(fixture_bytes(rel)):
        assert result.finish.kind == "stop" and not result.tool_calls
        (block,) = [b for b in result.blocks if isinstance(b, TextBlock)]
        assert [(c.kind, c.location, c.title, c.start) for c in block.citations] == [
            ("file", "file-Ebzhf8H4DPGPr9pUhr7n7v", "ai.pdf", 154),
            ("file", "file-Ebzhf8H4DPGPr9pUhr7n7v", "ai.pdf", 382),
        ]
        assert result.metadata is not None
        (summary,) = result.metadata.server_tools
        assert (summary["type"], summary["id"], summary["queries"]) == ("file_search_call", search[0]["id"], search[0]["queries"])
        assert search[0] in result.replay_state["items"]


def test_recorded_code_interpreter_calls_are_server_tools_and_the_csv_a_file_citation() -> None:
    rel = f"{BUILTIN}/code_interpreter_call_container_file_citation.sse"
    calls = [i for i in _output(rel) if i["type"] == "code_interpreter_call"]
    assert len(calls) == 3
    result = assemble(decode_checked(fixture_bytes(rel)))
    assert result.finish.kind == "stop" and not result.tool_calls
    assert result.metadata is not None
    assert [(t["type"], t["id"], t["container_id"]) for t in result.metadata.server_tools] == [
        ("code_interpreter_call", c["id"], c["container_id"]) for c in calls
    ]
    (block,) = [b for b in result.blocks if isinstance(b, TextBlock)]
    (citation,) = block.citations
    assert (citation.kind, citation.title, citation.start, citation.end) == ("file", "roll2dice_sums_10000.csv", 423, 465)
    assert citation.location is not None and citation.location.endswith("cfile_68c2e7084ab48191a67824aa1f4c90f1")
    # the code ran on the server: it goes back verbatim, streamed code deltas and all
    assert [i for i in result.replay_state["items"] if i["type"] == "code_interpreter_call"] == calls


def test_recorded_mcp_call_after_an_approval_is_a_server_tool() -> None:
    rel = f"{BUILTIN}/mcp_call_after_approval.sse"
    listed, call, _ = _output(rel)
    for result in _split_checked(fixture_bytes(rel)):
        assert result.finish.kind == "stop" and not result.tool_calls
        assert result.text.startswith("Done — here’s your shortened link:")
        assert result.metadata is not None
        assert [(t["type"], t["id"]) for t in result.metadata.server_tools] == [
            ("mcp_list_tools", listed["id"]),
            ("mcp_call", call["id"]),
        ]
        assert result.metadata.server_tools[1]["name"] == "create_short_url"
        assert result.replay_state["items"][:2] == [listed, call]


def test_recorded_hosted_shell_calls_with_their_outputs_are_server_tools() -> None:
    rel = f"{BUILTIN}/shell_call_hosted_output_skills.sse"
    output = _output(rel)
    assert [i["type"] for i in output] == ["shell_call", "shell_call_output", "shell_call", "shell_call_output", "message"]
    for result in _split_checked(fixture_bytes(rel)):
        assert result.finish.kind == "stop" and not result.tool_calls
        assert result.metadata is not None
        assert [(t["type"], t["id"]) for t in result.metadata.server_tools] == [
            ("shell_call", output[0]["id"]),
            ("shell_call", output[2]["id"]),
        ]
        assert result.replay_state["items"][:4] == output[:4]
        assert result.replay_state.get("server_calls") == [output[0]["call_id"], output[2]["call_id"]]


def test_a_cut_while_a_shell_call_is_held_hands_the_client_no_call() -> None:
    """Cut after a hosted ``shell_call`` is done but before its output item (which says the
    server ran it) is added: who runs it is unknown, so it is no call for the client (rule 3)."""
    data = fixture_bytes(f"{BUILTIN}/shell_call_hosted_output_skills.sse")
    marker = data.index(b'"type":"response.output_item.added","item":{"id":"sho_')
    cut = data.rindex(b"\n\n", 0, marker) + 2
    assert b'"type":"response.output_item.done","item":{"id":"sh_' in data[:cut]
    result = assemble(decode_checked(data[:cut]))
    assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
    assert not result.tool_calls


def test_recorded_program_output_is_replayed_verbatim() -> None:
    rel = f"{BUILTIN}/program_output_then_text.sse"
    program_output, message = _output(rel)
    for result in _split_checked(fixture_bytes(rel)):
        assert result.finish.kind == "stop" and result.failure is None
        assert result.text == message["content"][0]["text"]
        assert result.replay_state["items"][0] == program_output
        assert json.loads(program_output["result"])["inventory"]["availableUnits"] == 42


def test_recorded_azure_image_generation_is_one_file_not_one_per_partial_image() -> None:
    rel = f"{BUILTIN}/azure_image_generation_partial_image.sse"
    data = fixture_bytes(rel)
    assert b"response.image_generation_call.partial_image" in data
    (image, _) = _output(rel)
    for result in _split_checked(data):
        (file,) = result.files  # the partial preview is not a second image
        assert file.media_type == "image/png" and file.base64 == image["result"]
        assert result.metadata is not None
        (summary,) = result.metadata.server_tools
        assert (summary["type"], summary["id"], summary["status"]) == ("image_generation_call", image["id"], "generating")


def test_recorded_xai_web_search_citations_are_url_citations() -> None:
    rel = "xai/responses_api_web_search_call_citations.sse"
    search, _ = _output(rel)
    result = assemble(decode_checked(fixture_bytes(rel)))
    (block,) = [b for b in result.blocks if isinstance(b, TextBlock)]
    assert [c.url for c in block.citations] == [
        "https://en.wikipedia.org/wiki/XAI_%28company%29",
        "https://x.ai/company",
        "https://www.ibm.com/think/topics/explainable-ai",
        "https://www.owkin.com/a-z-of-ai-for-healthcare/xai",
        "https://x.ai/",
    ]
    assert result.metadata is not None
    assert [(t["type"], t["id"]) for t in result.metadata.server_tools] == [("web_search_call", search["id"])]


def test_recorded_lm_studio_reasoning_text_and_a_call_given_only_when_done() -> None:
    """LM Studio's /v1/responses (glm-4.7-flash): ``reasoning_text`` deltas, then a
    function call with no argument deltas, only ``function_call_arguments.done``."""
    rel = "lmstudio/responses_api_reasoning_text_function_call.sse"
    reasoning, _, call = _output(rel)
    assert not [e for e in events(fixture_bytes(rel)) if e["type"] == "response.function_call_arguments.delta"]
    for result in _split_checked(fixture_bytes(rel)):
        assert result.reasoning == reasoning["content"][0]["text"]
        (tool_call,) = result.tool_calls
        assert (tool_call.id, tool_call.name, tool_call.arguments) == (call["call_id"], "weather", call["arguments"])
        assert result.finish.kind == "tool-calls"


def test_recorded_mcp_list_tools_whose_done_never_came_is_summarized_from_the_terminal_output() -> None:
    """Three ``mcp_list_tools`` items are added, two get an ``output_item.done``; the third's
    tools are known only from ``response.completed``: all three are summarized."""
    rel = f"{BUILTIN}/mcp_list_tools_item_done_missing.sse"
    evs = events(fixture_bytes(rel))
    added = [e["item"]["id"] for e in evs if e["type"] == "response.output_item.added" and e["item"]["type"] == "mcp_list_tools"]
    done = [e["item"]["id"] for e in evs if e["type"] == "response.output_item.done" and e["item"]["type"] == "mcp_list_tools"]
    assert len(added) == 3 and len(done) < 3
    listed = [i for i in _output(rel) if i["type"] == "mcp_list_tools"]
    for result in _split_checked(fixture_bytes(rel)):
        assert result.finish.kind == "stop" and not result.tool_calls
        assert result.metadata is not None
        assert [(t["id"], t["server_label"], t["tools"]) for t in result.metadata.server_tools] == [
            (i["id"], i["server_label"], [tool["name"] for tool in i["tools"]]) for i in listed
        ]


def test_recorded_resumed_background_stream_starts_at_its_cursor() -> None:
    """``GET /responses/{id}?starting_after=0&stream=true`` (recorded): the continuation
    opens with ``response.queued``, not ``response.created``, and numbers from 1."""
    rel = "openai-responses/background_resumed_starting_after.sse"
    evs = events(fixture_bytes(rel))
    assert evs[0]["type"] == "response.queued" and evs[0]["sequence_number"] == 1
    result = assemble(decode_checked(fixture_bytes(rel), after=0))
    assert result.text == "2 + 2 equals 4." and result.finish.kind == "stop"
    assert result.metadata is not None and result.metadata.response_id == evs[0]["response"]["id"]


def test_recorded_bedrock_mantle_function_call_with_cache_write_count() -> None:
    """Bedrock's OpenAI-compatible Responses endpoint (bedrock-mantle, recorded)."""
    rel = "openai-responses/bedrock_mantle_gpt56_function_call.sse"
    (call,) = _output(rel)
    result = assemble(decode_checked(fixture_bytes(rel)))
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [(call["call_id"], call["name"], call["arguments"])]
    assert result.usage is not None and result.usage.cache_write_tokens == 0
    assert result.metadata is not None and result.metadata.model == "openai.gpt-5.6-luna"


def test_recorded_incomplete_response_keeps_the_partial_message() -> None:
    """gpt-4o with ``max_output_tokens: 16`` (recorded): the message item is done with
    ``status: incomplete``, then ``response.incomplete`` with ``max_output_tokens``."""
    rel = "openai-responses/incomplete_max_output_tokens_gpt4o.sse"
    (message,) = terminal(fixture_bytes(rel))["response"]["output"]
    for result in _split_checked(fixture_bytes(rel)):
        assert (result.finish.kind, result.finish.raw, result.failure) == ("max-tokens", "max_output_tokens", None)
        assert result.text == message["content"][0]["text"] and message["status"] == "incomplete"
        assert result.replay_state["items"][0]["id"] == message["id"]


# --------------------------------------------------------------------------- one response per stream

FIRST_CALL: dict[str, Any] = {"type": "function_call", "id": "fc_a", "call_id": "call_a", "name": "lookup",
                              "arguments": "{\"q\":\"one\"}", "status": "completed"}


def test_a_second_response_spliced_into_the_stream_is_not_merged_into_the_first() -> None:
    """A gateway that starts a second response in the same stream (the Responses form of
    vercel/ai#18402's spliced Anthropic messages): its items share ``output_index`` 0
    with the first's and would be merged into them. The stream ends in band instead,
    the first response's output kept (rule 1)."""
    second = {"type": "response.created", "response": {"id": "resp_2", "model": "m", "output": []}}
    data = stream(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": {**FIRST_CALL, "arguments": ""}},
        {"type": "response.function_call_arguments.delta", "output_index": 0, "item_id": "fc_a", "delta": "{\"q\":"},
        second,
        {"type": "response.output_item.added", "output_index": 0, "item": {**FIRST_CALL, "id": "fc_b", "call_id": "call_b"}},
        {"type": "response.output_item.done", "output_index": 0, "item": {**FIRST_CALL, "id": "fc_b", "call_id": "call_b"}},
        completed([{**FIRST_CALL, "id": "fc_b", "call_id": "call_b"}]),
    )
    for result in _split_checked(data):
        assert result.failure is not None and result.failure.code == "MALFORMED_RESPONSE"
        assert "response resp_2 began before response resp_1 ended" in result.failure.message
        assert [(c.id, c.arguments_truncated) for c in result.tool_calls] == [("call_a", True)]
        assert "call_b" not in json.dumps(result.replay_state)


def test_the_same_response_created_again_is_metadata() -> None:
    data = stream(CREATED, CREATED, {"type": "response.output_item.added", "output_index": 0, "item": FIRST_CALL},
                  {"type": "response.output_item.done", "output_index": 0, "item": FIRST_CALL}, completed([FIRST_CALL]))
    for result in _split_checked(data):
        assert result.failure is None and [c.id for c in result.tool_calls] == ["call_a"]


def test_a_web_searchs_page_reads_are_in_the_server_tool_summary() -> None:
    """Recorded (gpt-5-mini, req_llm): besides searches, the web search opened pages and
    searched inside one; what it read is in the summary, not only that it ran."""
    data = fixture_bytes("openai-responses/builtin-tools/web_search_call_open_page_find_in_page_actions_gpt5mini.sse")
    result = assemble(decode_all(data, "openai-responses"))
    assert result.metadata is not None
    reads = [t for t in result.metadata.server_tools if t.get("action") in ("open_page", "find_in_page")]
    assert {t["action"] for t in reads} == {"open_page", "find_in_page"}
    assert all(t["type"] == "web_search_call" and t["url"].startswith("https://") for t in reads)
    assert [t["pattern"] for t in reads if t["action"] == "find_in_page"] == ["Posted"]
    assert any(t.get("queries") for t in result.metadata.server_tools)


def test_xai_on_responses_costs_in_ticks_and_its_sub_searches_are_server_run() -> None:
    """Recorded (grok-4-fast, x_search): the cost is usage.cost_in_usd_ticks; a
    custom_tool_call the response's own tools do not declare is the search's sub-search."""
    result = assemble(decode_all(fixture_bytes("xai/responses_api_x_search_custom_tool_call_subsearch_grok4fast.sse"),
                                 "openai-responses"))
    assert result.usage is not None and result.usage.cost == pytest.approx(55946500 / 1e10)
    assert result.tool_calls == () and result.finish.kind == "stop"
    assert result.metadata is not None
    assert any(t.get("name") == "x_keyword_search" or t["type"] == "custom_tool_call" for t in result.metadata.server_tools)
