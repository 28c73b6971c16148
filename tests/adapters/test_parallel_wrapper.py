"""A model's parallel dispatch wrapper on the Responses wire (wire rule 8): one
``function_call`` named ``parallel`` whose arguments list the real calls
(``{"tool_uses": [{"recipient_name": "functions.NAME", "parameters": {...}}]}``), as
Azure OpenAI's gpt-5.4 sends it intermittently (vercel/ai#19067).

The wrapper's events are the ones vercel/ai's fixture ``parallel-tool-call-wrapper.1``
holds (derived there from the production payload reported in the issue), with the
``response.created`` and ``response.completed`` around them written whole: the fixture's
own two are cut short (their last ``}`` is missing). Decoded whole, a byte at a time and at
a few split points; then the next turn over a loopback server: the wrapper goes back as
sent and both results as its one output.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._core.assembler import AssembledResponse, BlockAssembler
from dshstream._core.contract import check_contract
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import decode_all, fixture_bytes

WIRE = "openai-responses"
TOOLS = (
    ToolSpec("weather", "The weather", {"type": "object", "properties": {"location": {"type": "string"}}}),
    ToolSpec("cityAttractions", "Sights", {"type": "object", "properties": {"city": {"type": "string"}}}),
)
DECLARED = ("weather", "cityAttractions")
ARGUMENTS = (
    '{"tool_uses":[{"recipient_name":"functions.weather","parameters":{"location":"San Francisco"}},'
    '{"recipient_name":"functions.cityAttractions","parameters":{"city":"Rome"}}]}'
)
REASONING = {"id": "rs_parallel", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-opaque"}
WRAPPER = {"type": "function_call", "id": "fc_parallel", "call_id": "call_parallel", "name": "parallel",
           "arguments": ARGUMENTS, "status": "completed"}


def _frame(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n".encode()


def _stream(arguments: str = ARGUMENTS, name: str = "parallel", *, cut: bool = False) -> bytes:
    wrapper = {**WRAPPER, "name": name, "arguments": arguments}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_parallel", "model": "gpt-5.4", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**REASONING}},
        {"type": "response.output_item.done", "output_index": 0, "item": {**REASONING}},
        {"type": "response.output_item.added", "output_index": 1,
         "item": {**wrapper, "arguments": "", "status": "in_progress"}},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_parallel", "output_index": 1,
         "delta": arguments[:40]},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_parallel", "output_index": 1,
         "delta": arguments[40:]},
    ]
    if cut:  # inside the arguments
        return b"".join(_frame(e) for e in events[:-1])
    events += [
        {"type": "response.function_call_arguments.done", "item_id": "fc_parallel", "output_index": 1,
         "arguments": arguments},
        {"type": "response.output_item.done", "output_index": 1, "item": wrapper},
        {"type": "response.completed", "response": {
            "id": "resp_parallel", "model": "gpt-5.4", "status": "completed", "output": [REASONING, wrapper],
            "usage": {"input_tokens": 34, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 28,
                      "output_tokens_details": {"reasoning_tokens": 0}}}},
    ]
    return b"".join(_frame(e) for e in events)


def _results(data: bytes, wire: str = WIRE, **options: Any) -> list[AssembledResponse]:
    """``data`` decoded on ``wire`` whole, a byte at a time and in 50-byte pieces: the
    results (each checked against the contract)."""
    splits = [[data], [data[i : i + 1] for i in range(len(data))], [data[i : i + 50] for i in range(0, len(data), 50)]]
    out = []
    for pieces in splits:
        assembler = BlockAssembler()
        assembler.extend(check_contract(decode_all(pieces, wire, **options)))
        out.append(assembler.result())
    return out


def test_the_wrapper_is_the_calls_it_dispatches() -> None:
    for result in _results(_stream(), client_tools=DECLARED):
        assert result.failure is None and result.finish.kind == "tool-calls"
        assert [(c.id, c.name, json.loads(c.arguments), c.arguments_truncated) for c in result.tool_calls] == [
            ("call_parallel_0", "weather", {"location": "San Francisco"}, False),
            ("call_parallel_1", "cityAttractions", {"city": "Rome"}, False),
        ]
        reasoning, wrapper = result.replay_state["items"]
        assert reasoning["id"] == "rs_parallel"
        assert wrapper == {"type": "function_call", "id": "fc_parallel", "call_id": "call_parallel", "name": "parallel",
                           "arguments": ARGUMENTS, "parallel": ["call_parallel_0", "call_parallel_1"]}


def test_a_wrapper_only_in_the_terminal_output_is_expanded_too() -> None:
    completed = _stream().split(b"\n\n")[-2] + b"\n\n"  # response.completed alone
    (result,) = _results(completed, client_tools=DECLARED)[:1]
    assert [c.name for c in result.tool_calls] == ["weather", "cityAttractions"]


@pytest.mark.parametrize(
    ("arguments", "name", "declared"),
    [
        (ARGUMENTS, "parallel", ("weather",)),  # a recipient the request did not declare
        (ARGUMENTS, "parallel", (*DECLARED, "parallel")),  # the caller's own tool named parallel
        ('{"tool_uses":[]}', "parallel", DECLARED),
        ('{"tool_uses":[{"recipient_name":"weather","parameters":{}}]}', "parallel", DECLARED),  # no functions.
        ('{"tool_uses":[{"recipient_name":"functions.weather","parameters":"x"}]}', "parallel", DECLARED),
        ('{"tool_uses":[{"recipient_name":"functions.weather","parameters":{}}]} trailing', "parallel", DECLARED),
        (ARGUMENTS, "lookup", DECLARED),
    ],
)
def test_anything_else_is_the_one_call_it_says(arguments: str, name: str, declared: tuple[str, ...]) -> None:
    for result in _results(_stream(arguments, name), client_tools=declared):
        ((call_id, call_name, sent),) = [(c.id, c.name, c.raw_arguments or c.arguments) for c in result.tool_calls]
        assert (call_id, call_name, sent) == ("call_parallel", name, arguments)
        assert "parallel" not in result.replay_state["items"][1]


def test_without_the_declared_tools_nothing_is_expanded() -> None:
    """``client_tools`` unknown (the sans-IO decoder called without them): the wrapper
    can't be checked against the request, so it stays the call it is."""
    (result, *_) = _results(_stream())
    assert [c.name for c in result.tool_calls] == ["parallel"]


def test_a_wrapper_cut_before_its_done_is_one_cut_call() -> None:
    for result in _results(_stream(cut=True), client_tools=DECLARED):
        assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
        ((name, truncated, raw),) = [(c.name, c.arguments_truncated, c.raw_arguments) for c in result.tool_calls]
        assert (name, truncated) == ("parallel", True)
        assert raw == ARGUMENTS[:40]


def test_the_next_turn_sends_the_wrapper_back_with_one_output() -> None:
    server = ReplayServer().start()
    try:
        server.add("/v1/", [Route(body=_stream()), Route(body=fixture_bytes("openai-responses/text.sse"))])
        adapter = OpenAIResponsesAdapter(api_key="sk-test", key_env=None, base_url=f"{server.url}/v1", max_retries=0)
        service = LlmService(check_contract=True)
        service.register_adapter(["openai"], adapter)
        history: list[Message] = [Message.user("Weather in SF and sights in Rome?")]
        first = service.stream(GenerateOptions(provider="openai", model="gpt-5.4", messages=tuple(history), tools=TOOLS)).result()
        assert first.finish.kind == "tool-calls"
        answers = {"weather": "18C, fog", "cityAttractions": "Colosseum"}
        history += [first.message(), *(Message.tool_result(c.id, answers[c.name]) for c in reversed(first.tool_calls))]
        second = service.stream(GenerateOptions(provider="openai", model="gpt-5.4", messages=tuple(history), tools=TOOLS)).result()
        assert second.ok
        sent = server.requests[1].body["input"]
    finally:
        server.stop()
    assert sent[1:] == [
        {"type": "reasoning", "id": "rs_parallel", "summary": [], "encrypted_content": "gAAAA-opaque"},
        {"type": "function_call", "call_id": "call_parallel", "name": "parallel", "arguments": ARGUMENTS,
         "id": "fc_parallel"},
        # the wrapper's one output: its calls' results in its order, whatever order they came in
        {"type": "function_call_output", "call_id": "call_parallel", "output": "18C, fog\nColosseum"},
    ]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
_USE = st.fixed_dictionaries(
    {"recipient_name": st.sampled_from(["functions.weather", "functions.cityAttractions", "functions.", "weather", "functions.nope"]),
     "parameters": st.dictionaries(st.text(max_size=5), _JSON, max_size=3)}
)


@settings(max_examples=200, deadline=None)
@given(st.one_of(_JSON, st.fixed_dictionaries({"tool_uses": st.lists(st.one_of(_USE, _JSON), max_size=4)})))
def test_any_wrapper_arguments_decode_to_declared_calls_or_to_the_wrapper(value: Any) -> None:
    arguments = json.dumps(value)
    (result,) = _results(_stream(arguments), client_tools=DECLARED)[:1]
    names = [c.name for c in result.tool_calls]
    assert result.failure is None
    assert names == ["parallel"] or (names and set(names) <= set(DECLARED))
    if names != ["parallel"]:
        assert [json.loads(c.arguments) for c in result.tool_calls] == [u["parameters"] for u in value["tool_uses"]]


# --------------------------------------------------------------------------- chat completions

CHAT_WIRE = "openai-chat"


def _chat(arguments: str = ARGUMENTS, name: str = "multi_tool_use.parallel", *, finish: bool = True) -> bytes:
    """A Chat Completions stream whose one tool call is the wrapper, its arguments in three
    fragments (the continuation shape: ``index`` and ``function.arguments`` only)."""
    def chunk(delta: dict[str, Any], reason: str | None = None) -> bytes:
        payload = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}
        return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"

    first = {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": "call_abc", "type": "function", "function": {"name": name, "arguments": ""}}]}
    pieces = [arguments[:30], arguments[30:90], arguments[90:]]
    out = chunk(first) + b"".join(chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces)
    if finish:
        out += chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    return out


def test_chat_multi_tool_use_parallel_is_the_calls_it_dispatches() -> None:
    for result in _results(_chat(), CHAT_WIRE, client_tools=DECLARED):
        assert result.failure is None and result.finish.kind == "tool-calls"
        assert [(c.id, c.name, json.loads(c.arguments)) for c in result.tool_calls] == [
            ("call_abc_0", "weather", {"location": "San Francisco"}),
            ("call_abc_1", "cityAttractions", {"city": "Rome"}),
        ]


@pytest.mark.parametrize("declared", [None, ("weather",), (*DECLARED, "multi_tool_use.parallel")])
def test_chat_wrapper_that_cannot_be_checked_is_the_one_call(declared: tuple[str, ...] | None) -> None:
    for result in _results(_chat(), CHAT_WIRE, client_tools=declared):
        assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("call_abc", "multi_tool_use.parallel", ARGUMENTS)]


def test_chat_wrapper_cut_off_is_one_cut_call() -> None:
    data = _chat(finish=False)
    cut = data[: data.rindex(b"data: ")]  # the last fragment never came
    for result in _results(cut, CHAT_WIRE, client_tools=DECLARED):
        assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
        ((name, truncated),) = [(c.name, c.arguments_truncated) for c in result.tool_calls]
        assert (name, truncated) == ("multi_tool_use.parallel", True)


def test_chat_next_turn_sends_the_calls_as_ordinary_tool_calls() -> None:
    from dshstream._adapters.openai_chat import OpenAIChatAdapter

    server = ReplayServer().start()
    try:
        server.add("/v1/", [Route(body=_chat()), Route(body=fixture_bytes("openai/text_include_usage.sse"))])
        service = LlmService(check_contract=True)
        service.register_adapter(["openai"], OpenAIChatAdapter(api_key="sk-test",
                                                               base_url=f"{server.url}/v1", max_retries=0))
        history: list[Message] = [Message.user("Weather in SF and sights in Rome?")]
        first = service.stream(GenerateOptions(provider="openai", model="gpt-4o", messages=tuple(history), tools=TOOLS)).result()
        history += [first.message(), *(Message.tool_result(c.id, c.name.upper()) for c in first.tool_calls)]
        assert service.stream(GenerateOptions(provider="openai", model="gpt-4o", messages=tuple(history), tools=TOOLS)).result().ok
        sent = server.requests[1].body["messages"]
    finally:
        server.stop()
    assert [call["id"] for call in sent[1]["tool_calls"]] == ["call_abc_0", "call_abc_1"]
    assert [call["function"]["name"] for call in sent[1]["tool_calls"]] == ["weather", "cityAttractions"]
    assert [(m["role"], m["tool_call_id"], m["content"]) for m in sent[2:]] == [
        ("tool", "call_abc_0", "WEATHER"), ("tool", "call_abc_1", "CITYATTRACTIONS")]


def test_litellm_chunks_expand_the_wrapper_too() -> None:
    """LiteLLM hands over chat chunk dicts (its ``ModelResponseStream``), read by the chat
    translator: the same wrapper, the same calls."""
    from dshstream._core.types import BlockEnd, ToolCallBlock
    from dshstream._core.wires.litellm import LiteLLMTranslator

    translator = LiteLLMTranslator(provider="lit", client_tools=DECLARED)
    out = []
    for line in _chat().split(b"\n\n"):
        if line.startswith(b"data: {"):
            out += translator.feed_chunk(json.loads(line[len(b"data: ") :]))
    out += translator.end()
    calls = [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert [(c.id, c.name) for c in calls] == [("call_abc_0", "weather"), ("call_abc_1", "cityAttractions")]


def test_the_tool_loop_runs_both_calls_and_answers_the_wrapper_once() -> None:
    """``run_tools`` over a loopback Responses server: the wrapper's two calls run, and the
    second request answers the wrapper with one output holding both results."""
    from dshstream._tool_loop import run_tools

    server = ReplayServer().start()
    try:
        server.add("/v1/", [Route(body=_stream()), Route(body=fixture_bytes("openai-responses/text.sse"))])
        service = LlmService(check_contract=True)
        service.register_adapter(["openai"], OpenAIResponsesAdapter(api_key="sk-test", key_env=None,
                                                                    base_url=f"{server.url}/v1", max_retries=0))
        ran: list[tuple[str, dict[str, Any]]] = []

        def weather(**arguments: Any) -> str:
            ran.append(("weather", arguments))
            return "18C"

        def sights(**arguments: Any) -> str:
            ran.append(("cityAttractions", arguments))
            return "Colosseum"

        tools = {"weather": weather, "cityAttractions": sights}
        options = GenerateOptions(provider="openai", model="gpt-5.4", messages=(Message.user("SF and Rome?"),), tools=TOOLS)
        result = run_tools(service, options, tools).result()
        sent = server.requests[1].body["input"]
    finally:
        server.stop()
    assert ran == [("weather", {"location": "San Francisco"}), ("cityAttractions", {"city": "Rome"})]
    assert [o.status for o in result.outcomes] == ["ok", "ok"] and result.stopped == "done"
    assert [i for i in sent if i.get("type") == "function_call_output"] == [
        {"type": "function_call_output", "call_id": "call_parallel", "output": "18C\nColosseum"}]
