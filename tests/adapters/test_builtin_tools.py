"""Responses built-in tools (issue #15, rule 1): client-executed built-in tool items are
tool calls, server-executed ones are summarized and replayed, and a tool result for a
built-in call goes back as that call's own output item.

Recorded streams: tests/fixtures/real/openai-responses/builtin-tools/ (``local_shell_call``,
``shell_call``, ``apply_patch_call``, ``mcp_list_tools`` + ``mcp_approval_request``,
``web_search_call``). ``computer_call``, ``custom_tool_call``, ``code_interpreter_call``,
``image_generation_call``, ``file_search_call`` and ``mcp_call`` are built from the item
schemas of the official SDK (openai-python ``types/responses``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from helpers import fixture_bytes, split_at

from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.request import GenerateOptions, Message
from dshstream._core.types import (
    BlockEnd,
    FileBlock,
    StreamChunk,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
)
from dshstream._core.wires.openai_responses import WIRE, client_call
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

FOLDER = "openai-responses/builtin-tools"
RECORDINGS = [
    "apply_patch_call_gpt51.sse",
    "local_shell_call_gpt5_codex.sse",
    "mcp_approval_request_gpt5mini.sse",
    "shell_call_gpt51.sse",
    "web_search_call_url_citations_gpt5nano.sse",
]
PROVIDER = "openai-responses"
KEY = "sk-test-builtin-0123456789"


def events(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")]


def output_of(data: bytes) -> list[dict[str, Any]]:
    (done,) = [e for e in events(data) if e["type"] == "response.completed"]
    output: list[dict[str, Any]] = done["response"]["output"]
    return output


def run(data: bytes | list[bytes], **options: Any) -> tuple[list[StreamChunk], AssembledResponse]:
    chunks = list(check_contract(decode(data, wire=WIRE, **options)))
    return chunks, assemble(chunks)


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def completed(output: list[dict[str, Any]], **usage: Any) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "model": "gpt-test",
            "status": "completed",
            "output": output,
            "usage": usage or {"input_tokens": 10, "output_tokens": 5},
        },
    }


def item_stream(*items: dict[str, Any], extra: tuple[dict[str, Any], ...] = ()) -> bytes:
    """A stream that adds and finishes each item, then completes with all of them."""
    payloads: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1", "model": "gpt-test"}}]
    for index, item in enumerate(items):
        payloads.append({"type": "response.output_item.added", "output_index": index, "item": item})
        payloads.append({"type": "response.output_item.done", "output_index": index, "item": item})
    payloads.extend(extra)
    payloads.append(completed(list(items)))
    return sse(*payloads)


# --------------------------------------------------------------------------- recordings

#: recording -> (call id, tool name, the arguments' payload, the item type)
CLIENT_CALLS = {
    "local_shell_call_gpt5_codex.sse": (
        "call_h3nm8hUG0KO9tVNuRACkL1ri",
        "local_shell",
        {"action": {"type": "exec", "command": ["ls", "-a", "~"], "env": {}}},
        "local_shell_call",
    ),
    "shell_call_gpt51.sse": (
        "call_pbxjNs1tMJUahLZKAS9qLtvw",
        "shell",
        {"action": {"commands": ["ls -a ~/Desktop"], "max_output_length": 8912, "timeout_ms": None}},
        "shell_call",
    ),
    "apply_patch_call_gpt51.sse": (
        "call_kA46f91ZwocQyMCKyyZqRyC5",
        "apply_patch",
        {
            "operation": {
                "type": "create_file",
                "diff": "+## Shopping Checklist\n+\n+- [ ] Milk\n+- [ ] Bread\n+- [ ] Eggs\n+- [ ] Fresh fruit\n+- [ ] Coffee\n",
                "path": "shopping-checklist.md",
            }
        },
        "apply_patch_call",
    ),
    "mcp_approval_request_gpt5mini.sse": (
        "mcpr_04a97b4fce127879006949a83ac9308195a7f7b69ea82e91fe",
        "mcp_approval_request",
        {
            "server_label": "zip1",
            "name": "create_short_url",
            "arguments": '{"alias":"","description":"Shortened link for ai-sdk.dev","max_clicks":100,'
            '"password":"","url":"https://ai-sdk.dev/"}',
        },
        "mcp_approval_request",
    ),
}


@pytest.mark.parametrize("name", sorted(CLIENT_CALLS))
def test_recorded_client_builtin_is_a_tool_call(name: str) -> None:
    data = fixture_bytes(f"{FOLDER}/{name}")
    _, result = run(data)
    call_id, tool, payload, item_type = CLIENT_CALLS[name]
    assert result.finish.kind == "tool-calls" and result.finish.raw == "completed"
    assert result.failure is None
    (call,) = result.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == (call_id, tool, payload)
    assert not call.arguments_truncated
    # the item goes back verbatim: exactly as the terminal response reported it
    (item,) = [i for i in output_of(data) if i["type"] == item_type]
    assert item in result.replay_state["items"]


@pytest.mark.parametrize("name", RECORDINGS)
def test_recordings_decode_the_same_whole_and_split(name: str) -> None:
    """Every recording under the contract checker, whole, one event per piece and in
    7-byte pieces (the corpus checks, for recordings kept out of the corpus glob)."""
    data = fixture_bytes(f"{FOLDER}/{name}")
    whole, _ = run(data)
    boundaries = [i + 2 for i in range(len(data)) if data.startswith(b"\n\n", i)]
    assert run(split_at(data, boundaries))[0] == whole
    assert run(split_at(data, range(0, len(data), 7)))[0] == whole


def test_recorded_web_search_is_server_side() -> None:
    data = fixture_bytes(f"{FOLDER}/web_search_call_url_citations_gpt5nano.sse")
    _, result = run(data)
    assert result.finish.kind == "stop" and not result.tool_calls
    searches = [i for i in output_of(data) if i["type"] == "web_search_call"]
    assert result.metadata is not None
    summaries = result.metadata.server_tools
    assert [(s["type"], s["id"], s["status"]) for s in summaries] == [
        ("web_search_call", i["id"], "completed") for i in searches
    ]
    assert summaries[0]["queries"] == ["Berlin news today"]
    assert summaries[0]["sources"][0].startswith("https://www.reuters.com/")
    replayed = [e for e in result.replay_state["items"] if e["type"] == "web_search_call"]
    assert replayed == searches  # verbatim


def test_recorded_mcp_list_tools_is_summarized() -> None:
    _, result = run(fixture_bytes(f"{FOLDER}/mcp_approval_request_gpt5mini.sse"))
    assert result.metadata is not None
    (summary,) = result.metadata.server_tools
    assert summary["type"] == "mcp_list_tools" and summary["server_label"] == "zip1"
    assert summary["tools"] == ["create_short_url", "get_url_stats", "validate_url", "generate_short_code"]
    assert result.metadata["server_tools"] == result.metadata.server_tools


def test_the_call_opens_when_added_and_gets_its_arguments_when_done() -> None:
    chunks, _ = run(fixture_bytes(f"{FOLDER}/local_shell_call_gpt5_codex.sse"))
    deltas = [c for c in chunks if isinstance(c, ToolCallDelta)]
    assert [(d.id, d.name, d.arguments_delta) for d in deltas] == [
        ("call_h3nm8hUG0KO9tVNuRACkL1ri", "local_shell", ""),
        ("call_h3nm8hUG0KO9tVNuRACkL1ri", "local_shell", '{"action":{"type":"exec","command":["ls","-a","~"],"env":{}}}'),
    ]


# --------------------------------------------------------------------------- schema-built items

COMPUTER_CALL = {
    "type": "computer_call",
    "id": "cu_1",
    "call_id": "call_computer_1",
    "action": {"type": "click", "button": "left", "x": 120, "y": 48},
    "pending_safety_checks": [{"id": "sc_1", "code": "malicious_instructions", "message": "Check the page."}],
    "status": "completed",
}
CUSTOM_CALL = {
    "type": "custom_tool_call",
    "id": "ctc_1",
    "call_id": "call_sql_1",
    "name": "write_sql",
    "input": "SELECT name FROM users WHERE age > 25",
}


def test_computer_call_carries_its_action_and_safety_checks() -> None:
    _, result = run(item_stream(COMPUTER_CALL))
    (call,) = result.tool_calls
    assert (call.id, call.name) == ("call_computer_1", "computer")
    assert json.loads(call.arguments) == {
        "action": COMPUTER_CALL["action"],
        "pending_safety_checks": COMPUTER_CALL["pending_safety_checks"],
    }
    assert result.finish.kind == "tool-calls"


def test_computer_call_without_safety_checks_has_only_its_action() -> None:
    item = {**COMPUTER_CALL, "pending_safety_checks": []}
    assert client_call(item) == ("call_computer_1", "computer", json.dumps({"action": item["action"]}, separators=(",", ":")))


def test_custom_tool_call_is_named_after_the_tool_and_streams_nothing_partial() -> None:
    added = {**CUSTOM_CALL, "input": ""}
    data = sse(
        {"type": "response.output_item.added", "output_index": 0, "item": added},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1", "delta": "SELECT name "},
        {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ctc_1",
         "delta": "FROM users WHERE age > 25"},
        {"type": "response.output_item.done", "output_index": 0, "item": CUSTOM_CALL},
        completed([CUSTOM_CALL]),
    )
    _, result = run(data)
    (call,) = result.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_sql_1", "write_sql", {"input": CUSTOM_CALL["input"]})
    assert result.finish.kind == "tool-calls"


def test_a_call_only_in_the_terminal_output_is_still_a_call() -> None:
    data = sse(completed([CUSTOM_CALL]))
    _, result = run(data)
    assert [c.name for c in result.tool_calls] == ["write_sql"]


IMAGE_CALL = {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="}
CODE_CALL = {
    "type": "code_interpreter_call",
    "id": "ci_1",
    "status": "completed",
    "code": "print(1 + 1)",
    "container_id": "cntr_1",
    "outputs": [{"type": "logs", "logs": "2"}],
}
FILE_SEARCH = {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refund policy"], "results": None}
MCP_CALL = {
    "type": "mcp_call",
    "id": "mcp_1",
    "server_label": "dmcp",
    "name": "web_search_exa",
    "arguments": '{"query":"x"}',
    "output": "results",
    "error": None,
    "status": "completed",
}
MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
}


def test_a_response_of_server_tools_only_is_not_empty() -> None:
    """An image generated with no text: ``stop``, the image delivered as a file block, the
    call summarized."""
    _, result = run(item_stream(IMAGE_CALL))
    assert result.finish.kind == "stop" and result.failure is None
    assert result.files == (FileBlock("image/png", b"\x89PNG\r\n\x1a\n"),) and result.blocks == result.files
    assert result.metadata is not None
    assert result.metadata.server_tools == ({"type": "image_generation_call", "id": "ig_1", "status": "completed"},)
    assert result.replay_state["items"] == [IMAGE_CALL]


def test_server_tools_are_summarized_in_output_order_and_replayed_verbatim() -> None:
    _, result = run(item_stream(FILE_SEARCH, CODE_CALL, MCP_CALL, MESSAGE))
    assert result.finish.kind == "stop" and result.text == "Done." and not result.tool_calls
    assert result.metadata is not None
    assert list(result.metadata.server_tools) == [
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refund policy"]},
        {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "container_id": "cntr_1"},
        {"type": "mcp_call", "id": "mcp_1", "status": "completed", "name": "web_search_exa", "server_label": "dmcp"},
    ]
    types = [e["type"] for e in result.replay_state["items"]]
    assert types == ["file_search_call", "code_interpreter_call", "mcp_call", "message"]
    assert result.replay_state["items"][1] == CODE_CALL


def test_a_truly_empty_response_stays_empty() -> None:
    _, result = run(sse(completed([])))
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.code == "EMPTY_RESPONSE"


def test_a_builtin_call_cut_before_its_done_is_truncated() -> None:
    added = {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_1", "status": "in_progress",
             "action": {"type": "exec", "command": [], "env": {}}}
    chunks, result = run(sse({"type": "response.output_item.added", "output_index": 0, "item": added}))
    assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    assert len(ends) == 1 and isinstance(ends[0], ToolCallBlock) and ends[0].arguments_truncated


# --------------------------------------------------------------------------- round trip


def adapter() -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(api_key=KEY, key_env=None)


def turn(output: list[dict[str, Any]]) -> AssembledResponse:
    return run(sse(completed(output)))[1]


def body_for(*messages: Message) -> list[dict[str, Any]]:
    options = GenerateOptions(provider=PROVIDER, model="m", messages=messages)
    items: list[dict[str, Any]] = adapter().wire.build_body(options)["input"]
    return items


SHELL_CALL = {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed",
              "action": {"commands": ["ls"], "max_output_length": None, "timeout_ms": None}}
PATCH_CALL = {"type": "apply_patch_call", "id": "apc_1", "call_id": "call_patch", "status": "completed",
              "operation": {"type": "delete_file", "path": "old.txt"}}
LOCAL_SHELL = {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_local", "status": "completed",
               "action": {"type": "exec", "command": ["pwd"], "env": {}}}
APPROVAL = {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "zip1", "name": "shorten", "arguments": "{}"}


@pytest.mark.parametrize(
    ("item", "result", "expected"),
    [
        (LOCAL_SHELL, ToolResultBlock("call_local", "/home/me"),
         {"type": "local_shell_call_output", "id": "call_local", "output": "/home/me"}),
        (SHELL_CALL, ToolResultBlock("call_sh", "a.txt\n"),
         {"type": "shell_call_output", "call_id": "call_sh",
          "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}),
        (SHELL_CALL, ToolResultBlock("call_sh", "ls: denied", is_error=True),
         {"type": "shell_call_output", "call_id": "call_sh",
          "output": [{"stdout": "", "stderr": "ls: denied", "outcome": {"type": "exit", "exit_code": 1}}]}),
        (SHELL_CALL, ToolResultBlock("call_sh", '[{"stdout": "x", "stderr": "", "outcome": {"type": "timeout"}}]'),
         {"type": "shell_call_output", "call_id": "call_sh",
          "output": [{"stdout": "x", "stderr": "", "outcome": {"type": "timeout"}}]}),
        (PATCH_CALL, ToolResultBlock("call_patch", "deleted old.txt"),
         {"type": "apply_patch_call_output", "call_id": "call_patch", "status": "completed", "output": "deleted old.txt"}),
        (PATCH_CALL, ToolResultBlock("call_patch", "no such file", is_error=True),
         {"type": "apply_patch_call_output", "call_id": "call_patch", "status": "failed", "output": "no such file"}),
        (COMPUTER_CALL, ToolResultBlock("call_computer_1", "data:image/png;base64,iVBOR"),
         {"type": "computer_call_output", "call_id": "call_computer_1",
          "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBOR"}}),
        (COMPUTER_CALL, ToolResultBlock("call_computer_1", "file-abc"),
         {"type": "computer_call_output", "call_id": "call_computer_1",
          "output": {"type": "computer_screenshot", "file_id": "file-abc"}}),
        (CUSTOM_CALL, ToolResultBlock("call_sql_1", "3 rows"),
         {"type": "custom_tool_call_output", "call_id": "call_sql_1", "output": "3 rows"}),
        (APPROVAL, ToolResultBlock("mcpr_1", "yes"),
         {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}),
        (APPROVAL, ToolResultBlock("mcpr_1", "true"),
         {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True}),
        (APPROVAL, ToolResultBlock("mcpr_1", '{"approve": false, "reason": "not that server"}'),
         {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False,
          "reason": "not that server"}),
        (APPROVAL, ToolResultBlock("mcpr_1", "maybe later"),
         {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False}),
        (APPROVAL, ToolResultBlock("mcpr_1", "yes", is_error=True),
         {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False, "reason": "yes"}),
    ],
)
def test_a_tool_result_for_a_builtin_call_is_its_output_item(
    item: dict[str, Any], result: ToolResultBlock, expected: dict[str, Any]
) -> None:
    first = turn([item])
    assert first.finish.kind == "tool-calls"
    sent = body_for(Message.user("go"), first.message(), Message(role="tool", content=(result,)))
    assert sent == [{"role": "user", "content": "go"}, item, expected]


def test_function_call_results_are_unchanged_beside_builtin_ones() -> None:
    function_call = {"type": "function_call", "id": "fc_1", "call_id": "call_fn", "name": "add", "arguments": '{"a":1}'}
    first = turn([function_call, LOCAL_SHELL])
    assert [c.name for c in first.tool_calls] == ["add", "local_shell"]
    sent = body_for(
        Message.user("go"),
        first.message(),
        Message.tool_result("call_fn", "2"),
        Message.tool_result("call_local", "/"),
    )
    assert sent[1:] == [
        {"type": "function_call", "call_id": "call_fn", "name": "add", "arguments": '{"a":1}', "id": "fc_1"},
        LOCAL_SHELL,
        {"type": "function_call_output", "call_id": "call_fn", "output": "2"},
        {"type": "local_shell_call_output", "id": "call_local", "output": "/"},
    ]


def test_a_builtin_call_dropped_on_max_tokens_is_not_replayed() -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    incomplete = {
        "type": "response.incomplete",
        "response": {"id": "resp_1", "model": "m", "status": "incomplete", "output": [reasoning, LOCAL_SHELL],
                     "incomplete_details": {"reason": "max_output_tokens"}},
    }
    _, result = run(sse(incomplete))
    assert result.finish.kind == "max-tokens" and result.tool_calls == ()
    # the call and the reasoning that led to it are both left out
    assert body_for(Message.user("go"), result.message()) == [{"role": "user", "content": "go"}]


def test_two_turns_over_loopback(server: ReplayServer) -> None:
    """The recorded local shell call, run and answered, through the real HTTP path."""
    data = fixture_bytes(f"{FOLDER}/local_shell_call_gpt5_codex.sse")
    server.add("/v1/", [Route(body=data), Route(body=fixture_bytes("openai-responses/text.sse"))])
    service = LlmService(check_contract=True)
    service.register_adapter([PROVIDER], OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0))
    options = GenerateOptions(provider=PROVIDER, model="gpt-5-codex", messages=(Message.user("list ~"),), max_tokens=2000)
    first = service.stream(options).result()
    (call,) = first.tool_calls
    history = (Message.user("list ~"), first.message(), Message.tool_result(call.id, ".\n..\n.zshrc"))
    assert service.stream(GenerateOptions(provider=PROVIDER, model="gpt-5-codex", messages=history)).result().ok
    shell_item = next(i for i in output_of(data) if i["type"] == "local_shell_call")
    assert server.requests[1].body["input"] == [
        {"role": "user", "content": "list ~"},
        shell_item,
        {"type": "local_shell_call_output", "id": "call_h3nm8hUG0KO9tVNuRACkL1ri", "output": ".\n..\n.zshrc"},
    ]
