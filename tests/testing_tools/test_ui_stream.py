"""The UI message stream's parts (``dshstream.web.ui_message_parts``), on every recorded
provider stream of tests/fixtures/real, whole and cut off: only the documented keys, every
part opened closed, the message the assembler would build, failures as headlines only.

The schemas below are vercel/ai's ``ui-message-chunks.ts`` as ``ai`` 5.0.100 declares them
(``z.strictObject``: a key more is an invalid part); the AI SDK's own reader checks the
same streams in ``test_ui_stream_reader.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    FileBlock,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    StreamChunk,
    TextDelta,
    ToolSpec,
    run_tools,
)
from dshstream._core.assembler import assemble
from dshstream._core.errors import error_for, make_failure
from dshstream.sansio import decode
from dshstream.testing import ReplayServer, Route
from dshstream.web import ui_message_parts, ui_message_stream
from helpers import all_fixtures, fake_key, fixture_bytes, fixture_wire

#: type -> (required keys, optional keys), ai 5.0.100
SCHEMAS: dict[str, tuple[set[str], set[str]]] = {
    "start": ({"type"}, {"messageId", "messageMetadata"}),
    "start-step": ({"type"}, set()),
    "finish-step": ({"type"}, set()),
    "text-start": ({"type", "id"}, {"providerMetadata"}),
    "text-delta": ({"type", "id", "delta"}, {"providerMetadata"}),
    "text-end": ({"type", "id"}, {"providerMetadata"}),
    "reasoning-start": ({"type", "id"}, {"providerMetadata"}),
    "reasoning-delta": ({"type", "id", "delta"}, {"providerMetadata"}),
    "reasoning-end": ({"type", "id"}, {"providerMetadata"}),
    "tool-input-start": ({"type", "toolCallId", "toolName"}, {"providerExecuted", "dynamic"}),
    "tool-input-delta": ({"type", "toolCallId", "inputTextDelta"}, set()),
    "tool-input-available": ({"type", "toolCallId", "toolName", "input"}, {"providerExecuted", "providerMetadata", "dynamic"}),
    "tool-input-error": ({"type", "toolCallId", "toolName", "input", "errorText"},
                         {"providerExecuted", "providerMetadata", "dynamic"}),
    "tool-output-available": ({"type", "toolCallId", "output"}, {"providerExecuted", "dynamic", "preliminary"}),
    "tool-output-error": ({"type", "toolCallId", "errorText"}, {"providerExecuted", "dynamic"}),
    "source-url": ({"type", "sourceId", "url"}, {"title", "providerMetadata"}),
    "file": ({"type", "url", "mediaType"}, {"providerMetadata"}),
    "finish": ({"type"}, {"finishReason", "messageMetadata"}),
    "error": ({"type", "errorText"}, set()),
    "abort": ({"type"}, set()),
}
FINISH_REASONS = {"stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"}


def check_parts(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Every part valid and every part opened closed; returns the message the AI SDK's
    reader would build (text, reasoning, tools by id, sources, files, finish reason)."""
    assert parts[0]["type"] == "start" and parts[-1]["type"] in ("finish", "abort"), [p["type"] for p in parts]
    opened: dict[str, str] = {}
    tools: dict[str, dict[str, Any]] = {}
    message: dict[str, Any] = {"text": "", "reasoning": "", "tools": tools, "sources": [], "files": [], "errors": []}
    in_step = False
    for part in parts:
        kind = part["type"]
        assert kind in SCHEMAS, kind
        required, optional = SCHEMAS[kind]
        assert required <= set(part) <= required | optional, part
        assert all(isinstance(part[key], str) for key in ("id", "delta", "toolCallId", "toolName", "errorText", "url")
                   if key in part), part
        json.dumps(part, allow_nan=False)
        if kind == "start-step":
            assert not in_step
            in_step = True
        elif kind == "finish-step":
            assert in_step and not opened, f"finish-step with parts open: {opened}"
            in_step = False
        elif kind.endswith("-start") and kind != "tool-input-start":
            assert part["id"] not in opened and in_step
            opened[part["id"]] = kind[: -len("-start")]
        elif kind in ("text-delta", "reasoning-delta"):
            assert opened.get(part["id"]) == kind[: -len("-delta")], part
            message[kind[: -len("-delta")]] += part["delta"]
        elif kind in ("text-end", "reasoning-end"):
            assert opened.pop(part["id"]) == kind[: -len("-end")]
        elif kind == "tool-input-start":
            assert part["toolCallId"] not in tools and in_step
            tools[part["toolCallId"]] = {"name": part["toolName"], "text": "", "state": "streaming"}
            opened[part["toolCallId"]] = "tool"
        elif kind == "tool-input-delta":
            assert tools[part["toolCallId"]]["state"] == "streaming"
            tools[part["toolCallId"]]["text"] += part["inputTextDelta"]
        elif kind in ("tool-input-available", "tool-input-error"):
            tool = tools[part["toolCallId"]]
            assert tool["state"] == "streaming" and tool["name"] == part["toolName"]
            tool.update(state=kind, input=part["input"])
            opened.pop(part["toolCallId"])
        elif kind in ("tool-output-available", "tool-output-error"):
            assert tools[part["toolCallId"]]["state"] in ("tool-input-available", "tool-input-error")
            tools[part["toolCallId"]]["output"] = part.get("output", part.get("errorText"))
        elif kind == "source-url":
            message["sources"].append(part["url"])
        elif kind == "file":
            message["files"].append(part)
        elif kind == "error":
            message["errors"].append(part["errorText"])
        elif kind == "finish":
            assert not in_step and not opened
            message["finish"] = part.get("finishReason")
            assert message["finish"] in FINISH_REASONS | {None}
        elif kind == "abort":
            assert not in_step and not opened
            message["finish"] = "abort"
    assert len({p["sourceId"] for p in parts if p["type"] == "source-url"}) == len(message["sources"])
    return message


def _chunks(name: str, cut: float | None = None) -> list[StreamChunk]:
    data = fixture_bytes(name)
    if cut is not None:
        data = data[: int(len(data) * cut)]
    return list(decode(data, wire=fixture_wire(name)))


@pytest.mark.parametrize("cut", [None, 0.5], ids=["whole", "cut"])
@pytest.mark.parametrize("name", all_fixtures())
def test_every_recorded_stream_maps_onto_valid_closed_parts(name: str, cut: float | None) -> None:
    chunks = _chunks(name, cut)
    result = assemble(chunks)
    message = check_parts(list(ui_message_parts(chunks, message_id="msg-1")))
    assert message["text"] == result.text
    assert message["reasoning"] == result.reasoning
    calls = {call.id: call for call in result.tool_calls}
    complete = {k: v for k, v in message["tools"].items() if v["state"] == "tool-input-available"}
    for call_id, tool in complete.items():
        assert calls[call_id].name == tool["name"] and tool["input"] == json.loads(calls[call_id].arguments or "{}")
    assert set(complete) <= set(calls)
    kind = result.finish.kind
    expected = {"stop": "stop", "tool-calls": "tool-calls", "max-tokens": "length", "error": "error"}[kind]
    if kind == "error" and result.failure is not None and result.failure.code == "CONTENT_FILTER":
        expected = "content-filter"
    assert message["finish"] == expected
    assert bool(message["errors"]) == (kind == "error")
    if result.failure is not None:
        assert message["errors"] == [result.failure.message]


def test_citations_become_source_url_parts_once_each() -> None:
    chunks = _chunks("anthropic/web_search_server_tool_citations.sse")
    urls = [c.url for block in assemble(chunks).blocks if type(block).__name__ == "TextBlock"
            for c in block.citations]  # type: ignore[union-attr]
    message = check_parts(list(ui_message_parts(chunks)))
    assert len(urls) == 5 and message["sources"] == list(dict.fromkeys(urls))  # each URL once, in order


def test_a_cut_tool_call_ends_as_a_tool_input_error() -> None:
    data = fixture_bytes("anthropic/tool_use_with_args.sse")
    cut = data[: data.index(b"input_json_delta") + 120]
    chunks = list(decode(cut, wire="anthropic"))
    parts = list(ui_message_parts(chunks))
    message = check_parts(parts)
    (tool,) = message["tools"].values()
    assert tool["state"] == "tool-input-error" and isinstance(tool["input"], str)
    assert message["finish"] == "error" and message["errors"] == [assemble(chunks).failure.message]  # type: ignore[union-attr]


def test_a_file_is_a_data_url_and_a_source_that_ends_without_a_finish_is_closed() -> None:
    png = bytes.fromhex("89504e470d0a1a0a") + b"\x00" * 8
    chunks: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "Here: "), BlockStart(1, "file"),
                                 BlockEnd(1, FileBlock("image/png", png))]
    parts = list(ui_message_parts(chunks))
    message = check_parts(parts)
    assert message["files"] == [{"type": "file", "url": "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAA==",
                                 "mediaType": "image/png"}]
    assert [p["type"] for p in parts][-4:] == ["file", "text-end", "finish-step", "finish"]
    assert "finishReason" not in parts[-1], "no finish came: no reason is made up"


def test_the_error_text_is_the_headline_never_the_detail_or_a_key() -> None:
    key = fake_key("sk-proj-", 48)
    failure = make_failure("AUTH", "openai: authentication failed (AUTH, HTTP 401)", status=401,
                           detail=f"Incorrect API key provided: {key}. Find your key at ...")
    chunks: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "Hel"), Finish(FinishReason("error", failure=failure))]
    parts = list(ui_message_parts(chunks))
    check_parts(parts)
    errors = [p for p in parts if p["type"] == "error"]
    assert errors == [{"type": "error", "errorText": "openai: authentication failed (AUTH, HTTP 401)"}]
    assert key not in json.dumps(parts) and "Incorrect" not in json.dumps(parts)


def test_a_source_that_raises_ends_in_band_with_its_headline_or_a_plain_one() -> None:
    def raising(exc: BaseException) -> Iterator[StreamChunk]:
        yield BlockStart(0, "reasoning")
        yield BlockStart(1, "text")
        yield TextDelta(1, "partial")
        raise exc

    failure = make_failure("RATE_LIMIT", "p: rate limited (RATE_LIMIT, HTTP 429)", status=429, detail="secret detail")
    parts = list(ui_message_parts(raising(error_for(failure))))
    assert check_parts(parts)["errors"] == ["p: rate limited (RATE_LIMIT, HTTP 429)"]
    parts = list(ui_message_parts(raising(RuntimeError(f"boom {fake_key('sk-', 40)}"))))
    assert check_parts(parts)["errors"] == ["the answer could not be completed"] and "boom" not in json.dumps(parts)
    aborted = list(ui_message_parts(raising(error_for(make_failure("ABORTED", "p: stream closed by the caller")))))
    assert check_parts(aborted)["finish"] == "abort" and [p["type"] for p in aborted][-1] == "abort"


def test_an_aborted_finish_ends_with_abort_and_finish_reason_can_be_left_out() -> None:
    closed = make_failure("ABORTED", "p: stream closed by the caller")
    aborted: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "x"), Finish(FinishReason("aborted", failure=closed))]
    assert [p["type"] for p in ui_message_parts(aborted)][-3:] == ["text-end", "finish-step", "abort"]
    stopped: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "x"), Finish(FinishReason("stop"))]
    assert list(ui_message_parts(stopped, finish_reason=False))[-1] == {"type": "finish"}
    assert list(ui_message_parts(stopped, message_id="m-1"))[0] == {"type": "start", "messageId": "m-1"}


def test_closing_the_parts_closes_the_source() -> None:
    closed: list[bool] = []

    class Source:
        def __iter__(self) -> Iterator[StreamChunk]:
            yield BlockStart(0, "text")
            while True:
                yield TextDelta(0, "more ")

        def close(self) -> None:
            closed.append(True)

    parts = ui_message_parts(Source())
    for _ in range(5):
        next(parts)
    parts.close()
    assert closed == [True]


def test_a_tool_loop_is_one_message_of_steps_with_the_tool_outputs() -> None:
    call = fixture_bytes("openai/single_tool_call.sse")
    answer = (b'data: {"choices":[{"index":0,"delta":{"content":"It is 12C in Edinburgh."}}]}\n\n'
              b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    with ReplayServer({"/": [Route(body=call), Route(body=answer)]}) as server:
        service = LlmService()
        service.register_adapter(["openai"], OpenAIChatAdapter(base_url=f"{server.url}/v1", api_key="placeholder"))
        weather = ToolSpec("GetWeatherArgs", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})
        loop = run_tools(service, GenerateOptions(provider="openai", model="gpt-4o", messages=(Message.user("Weather?"),),
                                                  tools=(weather,)),
                         {"GetWeatherArgs": lambda city, country, units: f"12{units.upper()} in {city}"})
        parts = list(ui_message_parts(loop))
    message = check_parts(parts)
    types = [p["type"] for p in parts]
    assert types.count("start-step") == 2 and types.count("finish-step") == 2
    (tool,) = message["tools"].values()
    assert tool["output"] == "12C in Edinburgh" and tool["input"] == {"city": "Edinburgh", "country": "UK", "units": "c"}
    assert types.index("tool-output-available") < types.index("finish-step")
    assert message["text"] == "It is 12C in Edinburgh." and message["finish"] == "stop"


def test_wrong_arguments_are_refused_naming_them() -> None:
    from dshstream import ConfigurationError

    with pytest.raises(ConfigurationError, match="message_id"):
        ui_message_parts([], message_id="")
    with pytest.raises(ConfigurationError, match="finish_reason"):
        ui_message_stream([], finish_reason="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="iterable of chunks"):
        ui_message_parts(42)  # type: ignore[arg-type]
