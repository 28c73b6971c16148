"""dshstream._core.filters.tool_markup: Hermes ``<tool_call>`` markup in a model's text
recovered as tool calls — a real Ollama recording, the rules one by one, the bounds, and a
hypothesis property that any cut of the text gives the same items as feeding it whole."""

from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.filters.tool_markup import CLOSE_TAG, OPEN_TAG, MarkupItem, ToolMarkupParser
from dshstream._core.types import ToolCallBlock
from helpers import fixture_bytes

TOOLS = [
    {"type": "function", "function": {"name": "get_delivery_date", "parameters": {"type": "object"}}},
    {"name": "get_weather"},
]


def merged(items: Sequence[MarkupItem]) -> list[MarkupItem]:
    out: list[MarkupItem] = []
    for item in items:
        if isinstance(item, str):
            if not item:
                continue
            if out and isinstance(out[-1], str):
                out[-1] += item
                continue
        out.append(item)
    return out


def run(pieces: Sequence[str], max_buffer_chars: int | None = None) -> list[MarkupItem]:
    parser = ToolMarkupParser(TOOLS) if max_buffer_chars is None else ToolMarkupParser(TOOLS, max_buffer_chars)
    items: list[MarkupItem] = []
    for piece in pieces:
        items += parser.feed(piece)
    return merged(items + parser.flush())


def call(name: str, arguments: str, n: int = 1) -> ToolCallBlock:
    return ToolCallBlock(id=f"call_markup_{n}", name=name, arguments=arguments)


def test_the_recorded_ollama_stream_is_one_call() -> None:
    # Ollama /v1 (2024) with qwen2.5:0.5b passed the model's <tool_call> markup on as
    # content, one token per delta: the pieces as recorded
    data = fixture_bytes("ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse")
    pieces = [
        (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in data.decode("utf-8").splitlines()
        if line.startswith("data: {")
    ]
    assert "".join(pieces).startswith(OPEN_TAG)
    assert run(pieces) == [call("get_delivery_date", '{"order_id":"order_12345"}')]


def test_text_around_calls_keeps_its_place_and_layout_between_calls_goes() -> None:
    text = (
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>\n\n'
    )
    assert run([text]) == [
        "Let me check.\n",
        call("get_weather", '{"city":"Paris"}', 1),
        call("get_weather", '{"city":"Rome"}', 2),
    ]


def test_text_after_a_call_keeps_its_whitespace() -> None:
    text = '<tool_call>{"name": "get_weather", "parameters": {}}</tool_call>  and then?'
    assert run([text]) == [call("get_weather", "{}"), "  and then?"]


def test_what_is_not_a_call_is_released_verbatim() -> None:
    for body in (
        '{"name": "rm_rf", "arguments": {}}',  # not a declared tool
        '{"name": "get_weather", "arguments": [1]}',  # arguments not an object
        "get_weather(city='Paris')",  # not JSON
        '{"name": "get_weather"} trailing',
    ):
        text = f"a {OPEN_TAG}{body}{CLOSE_TAG} b"
        assert run([text]) == [text], body


def test_a_look_alike_tag_is_text() -> None:
    assert run(["<tool_", "calls> and <tool_c", "x"]) == ["<tool_calls> and <tool_cx"]
    assert run(["ends with <tool_c"]) == ["ends with <tool_c"]


def test_a_stream_cut_inside_a_call_releases_it_as_text() -> None:
    text = 'x <tool_call>{"name": "get_weather", "argu'
    assert run([text]) == [text]


def test_a_call_past_the_bound_is_text_released_at_the_bound() -> None:
    body = '{"name": "get_weather", "arguments": {"q": "' + "z" * 200 + '"}}'
    text = OPEN_TAG + body + CLOSE_TAG + " after"
    assert run([text], max_buffer_chars=100) == [text]
    parser = ToolMarkupParser(TOOLS, 100)
    out = parser.feed(text[:150])
    assert out[0] == text[:100]  # released exactly at the bound, before the stream goes on
    assert merged(out) == [text[:150]]  # and nothing after it held


def test_whitespace_alone_after_a_call_is_dropped_at_the_end() -> None:
    assert run(['<tool_call>{"name":"get_weather","arguments":{}}</tool_call>', "\n", "  \n"]) == [
        call("get_weather", "{}")
    ]


TEXTS = [
    'Hi <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>\n'
    '<tool_call>{"name": "nope", "arguments": {}}</tool_call> ok </tool_call> <tool_c',
    '<tool_call>\n{"name": "get_delivery_date", "arguments": {"order_id": "</tool"}}\n</tool_call>\n\n<to',
    "plain text with < and <tool and <tool_call without an end",
    '  \n<tool_call>{"name":"get_weather","arguments":{}}</tool_call>   \n<tool_call>{"name":"get_weather",'
    '"arguments":{"a":1}}</tool_call>text',
]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(TEXTS), st.lists(st.integers(min_value=0, max_value=200), max_size=12), st.sampled_from([40, 65536]))
def test_any_cut_gives_the_same_items(text: str, cuts: list[int], bound: int) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)])]
    assert run(pieces, bound) == run([text], bound)
    assert run(list(text), bound) == run([text], bound)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet='<>/tool_cal{}"nme: ', max_size=80), st.integers(min_value=1, max_value=8))
def test_arbitrary_text_is_kept_whole_when_it_holds_no_call(text: str, size: int) -> None:
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    items = run(pieces)
    assert all(isinstance(item, str) for item in items)  # no declared name can appear
    assert "".join(str(item) for item in items) == text


def test_on_the_wire_any_cut_of_the_recording_gives_the_one_call() -> None:
    from dshstream._core.assembler import assemble
    from dshstream._core.decode import decode

    data = fixture_bytes("ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse")
    whole = assemble(decode(data, wire="ollama", client_tools=["get_delivery_date"]))
    assert whole.tool_calls == (call("get_delivery_date", '{"order_id":"order_12345"}'),)
    assert (whole.text, whole.finish.kind, whole.finish.raw) == ("", "tool-calls", "stop")
    byte_by_byte = assemble(decode([data[i : i + 1] for i in range(len(data))], wire="ollama", client_tools=["get_delivery_date"]))
    assert byte_by_byte.blocks == whole.blocks and byte_by_byte.finish == whole.finish
