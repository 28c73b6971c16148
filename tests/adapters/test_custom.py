"""CustomAdapter: tool calls written in prose become tool-call blocks, over loopback HTTP."""

from __future__ import annotations

import json

from dshstream import GenerateOptions, Message, ToolCallBlock, ToolSpec
from dshstream.sansio import check_contract
from dshstream._adapters.custom import CustomAdapter
from dshstream._replay_server import ReplayServer
from dshstream._service import LlmService

WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def sse(*contents: str, finish: str = "stop") -> bytes:
    events = [
        json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": c}}]}) for c in contents
    ]
    events.append(json.dumps({"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    return b"".join(b"data: " + e.encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def test_prose_tool_call_becomes_a_block_and_history_round_trips() -> None:
    body = sse("<think>The user wants weather.</think>Let me check.\n`get_", 'weather({"city": ', '"Paris"})`', "\n")
    with ReplayServer({"/v1/": body}) as server:
        service = LlmService(check_contract=True)
        service.register_adapter(["local"], CustomAdapter(base_url=f"{server.url}/v1"))
        options = GenerateOptions(
            provider="local", model="m", messages=(Message.system("Be brief."), Message.user("Weather in Paris?")),
            tools=(WEATHER,),
        )
        result = service.stream(options).result()
        assert result.reasoning == "The user wants weather."
        assert result.text.strip() == "Let me check."
        assert result.tool_calls == (
            ToolCallBlock(id="call_verbatim_1", name="get_weather", arguments='{"city": "Paris"}'),
        )
        assert result.finish.kind == "tool-calls"
        sent = server.requests[-1].body
        assert "tools" not in sent
        assert sent["messages"][0]["role"] == "system"
        assert sent["messages"][0]["content"].startswith("Be brief.")
        assert "get_weather" in sent["messages"][0]["content"]

        history = (*options.messages, result.message(), Message.tool_result("call_verbatim_1", '{"temp_c": 18}'))
        service.stream(GenerateOptions(provider="local", model="m", messages=history, tools=(WEATHER,))).result()
        sent = server.requests[-1].body["messages"]
        assert sent[-2] == {"role": "assistant", "content": 'Let me check.\n\nget_weather({"city": "Paris"})'}
        assert sent[-1]["role"] == "user" and '{"temp_c": 18}' in sent[-1]["content"]


def test_unknown_names_and_unbalanced_calls_stay_text() -> None:
    from dshstream._core.decode import decode

    data = sse("Try other_tool({\"a\": 1}) or get_weather(", '"Paris"')
    chunks = list(check_contract(decode(data, wire="custom", verbatim_tools=[WEATHER.to_openai()])))
    from dshstream.sansio import assemble

    result = assemble(chunks)
    assert result.tool_calls == ()
    assert result.text == 'Try other_tool({"a": 1}) or get_weather("Paris"'
