"""Tests for dshstream._core.filters.verbatim_tools: every seed vector (TomoriBot
verbatimToolCallParser tests), the port's bounds, and a hypothesis property that any cut of
the text gives the same items (after merging adjacent strings) as feeding it whole."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.filters.verbatim_tools import VerbatimItem, VerbatimToolCallParser
from dshstream._core.types import ToolCallBlock

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a media file.",
            "parameters": {
                "type": "object",
                "properties": {"media_id": {"type": "string"}, "filename": {"type": "string"}},
                "required": ["media_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "generate_image",
            "description": "Generate an image.",
            "parameters": {
                "type": "object",
                "properties": {
                    "prompt": {"type": "string"},
                    "media_id": {"type": "string"},
                    "mode": {"type": "string"},
                },
                "required": ["prompt", "mode"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "reveal_message_metadata",
            "description": "Reveal metadata.",
            "parameters": {"type": "object", "properties": {}, "required": []},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "complex_mcp_tool",
            "description": "Exercise nested JSON arguments.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "filters": {"type": "object", "properties": {"site": {"type": "string"}}},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query", "filters"],
            },
        },
    },
]


def merge(items: Iterable[VerbatimItem]) -> list[VerbatimItem]:
    out: list[VerbatimItem] = []
    for item in items:
        if isinstance(item, str) and out and isinstance(out[-1], str):
            out[-1] += item
        elif item != "":
            out.append(item)
    return out


def run_items(
    chunks: Iterable[str],
    tools: Sequence[Mapping[str, Any]] = TOOLS,
    max_buffer_chars: int = 8192,
) -> list[VerbatimItem]:
    parser = VerbatimToolCallParser(tools, max_buffer_chars=max_buffer_chars)
    items: list[VerbatimItem] = []
    for chunk in chunks:
        items.extend(parser.feed(chunk))
    items.extend(parser.flush())
    return merge(items)


def run(chunks: Iterable[str], **kw: Any) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    items = run_items(chunks, **kw)
    visible = "".join(i for i in items if isinstance(i, str))
    calls = [(i.name, json.loads(i.arguments)) for i in items if isinstance(i, ToolCallBlock)]
    return visible, calls


def cut(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


# --------------------------------------------------------------------------- seed vectors


def test_chunk_split_inline_string_shorthand() -> None:
    assert run(["`read", '_file("media_1")`']) == ("", [("read_file", {"media_id": "media_1"})])


def test_fenced_json_object_call() -> None:
    text = (
        '```json\ngenerate_image({"prompt":"portrait","media_id":"media_1","mode":"img2img"})'
        "\n```"
    )
    assert run([text]) == (
        "",
        [("generate_image", {"prompt": "portrait", "media_id": "media_1", "mode": "img2img"})],
    )


def test_nested_object_and_array_args() -> None:
    text = (
        '`complex_mcp_tool({"query":"cats","filters":{"site":"example.com"},'
        '"tags":["cute","gif"]})`'
    )
    assert run([text]) == (
        "",
        [
            (
                "complex_mcp_tool",
                {"query": "cats", "filters": {"site": "example.com"}, "tags": ["cute", "gif"]},
            )
        ],
    )


def test_no_argument_call() -> None:
    assert run(["`reveal_message_metadata()`"]) == ("", [("reveal_message_metadata", {})])


def test_unknown_tool_is_text() -> None:
    text = '`unknown_tool({"x":1})`'
    assert run([text]) == (text, [])


def test_string_shorthand_rejected_for_multi_required_tool() -> None:
    text = '`generate_image("portrait")`'
    assert run([text]) == (text, [])


def test_wrapped_call_after_prose() -> None:
    items = run_items(['I should use a tool: `read_file("media_1")`'])
    assert items[0] == "I should use a tool: "
    assert isinstance(items[1], ToolCallBlock) and len(items) == 2
    assert run(['I should use a tool: `read_file("media_1")`']) == (
        "I should use a tool: ",
        [("read_file", {"media_id": "media_1"})],
    )


def test_bare_call_after_narration() -> None:
    assert run(
        [
            "Fine. But I'm picking the aesthetic.\n",
            'generate_image({"prompt":"a grumpy black cat","mode":"txt2img"})',
        ]
    ) == (
        "Fine. But I'm picking the aesthetic.\n",
        [("generate_image", {"prompt": "a grumpy black cat", "mode": "txt2img"})],
    )


CHAR_BY_CHAR = (
    "She sighs.\n\nFine. But only because I am bored.\n\n"
    'generate_image({"prompt": "a gray cat", "mode": "txt2img"})\n\nThere. Now you owe me.'
)


def test_char_by_char_with_prose_on_both_sides() -> None:
    expected = (
        "She sighs.\n\nFine. But only because I am bored.\n\n\n\nThere. Now you owe me.",
        [("generate_image", {"prompt": "a gray cat", "mode": "txt2img"})],
    )
    assert run(list(CHAR_BY_CHAR)) == expected
    assert run([CHAR_BY_CHAR]) == expected
    items = run_items(list(CHAR_BY_CHAR))
    assert [type(i) for i in items] == [str, ToolCallBlock, str]


def test_parentheses_inside_json_strings() -> None:
    text = 'generate_image({"prompt":"a cat (very cute) :)","mode":"txt2img"})'
    assert run([text]) == (
        "",
        [("generate_image", {"prompt": "a cat (very cute) :)", "mode": "txt2img"})],
    )


def test_tool_name_in_prose_is_text() -> None:
    text = "You could use generate_image (it makes art) yourself."
    assert run([text]) == (text, [])


def test_prose_without_tools_streams_through() -> None:
    parser = VerbatimToolCallParser(TOOLS)
    assert parser.feed("Just chatting, ") == ["Just chatting, "]
    assert parser.feed("no tools here at all.") == ["no tools here at all."]
    assert parser.flush() == []


def test_truncated_call_released_at_flush() -> None:
    text = '`read_file("media_1"'
    parser = VerbatimToolCallParser(TOOLS)
    assert parser.feed(text) == []
    assert parser.flush() == [text]


# --------------------------------------------------------------------------- port details


def test_ids_and_arguments() -> None:
    items = run_items(['read_file("a") and read_file("b")'])
    calls = [i for i in items if isinstance(i, ToolCallBlock)]
    assert [c.id for c in calls] == ["call_verbatim_1", "call_verbatim_2"]
    assert calls[0].arguments == json.dumps({"media_id": "a"})
    assert items == [calls[0], " and ", calls[1]]
    assert not calls[0].arguments_truncated


def test_counter_survives_flush() -> None:
    parser = VerbatimToolCallParser(TOOLS)
    first = parser.feed('read_file("a")')
    parser.flush()
    second = parser.feed('read_file("b")')
    assert [i.id for i in first + second if isinstance(i, ToolCallBlock)] == [
        "call_verbatim_1",
        "call_verbatim_2",
    ]


def test_bare_tool_specs() -> None:
    tools = [
        {
            "name": "lookup",
            "parameters": {"properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
        {"name": "ping"},
        {"not": "a tool"},
        {"type": "function", "function": {"name": ""}},
    ]
    assert run(['lookup("x") ping()'], tools=tools) == (
        " ",
        [("lookup", {"q": "x"}), ("ping", {})],
    )


def test_string_shorthand_needs_string_typed_param() -> None:
    params = {"properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = [{"name": "count", "parameters": params}]
    assert run(['count("3")'], tools=tools) == ('count("3")', [])
    assert run(['count({"n": 3})'], tools=tools) == ("", [("count", {"n": 3})])


def test_no_arg_call_rejected_when_something_is_required() -> None:
    assert run(["read_file()"]) == ("read_file()", [])


@pytest.mark.parametrize(
    "text",
    [
        "read_file(media_1)",
        'read_file({"media_id": })',
        "read_file([1, 2])",
        'read_file({"x": NaN})',
        'read_file({"x": 1e400})',
        'read_file("a", "b")',
        "read_file(42)",
    ],
)
def test_rejected_arguments_are_text(text: str) -> None:
    assert run([text]) == (text, [])


def test_rejected_call_resumes_scanning_after_it() -> None:
    text = 'generate_image("portrait") then read_file("m")'
    assert run([text]) == ('generate_image("portrait") then ', [("read_file", {"media_id": "m"})])
    assert run(list(text)) == run([text])


def test_word_boundary_and_longest_name() -> None:
    assert run(['xread_file("a")']) == ('xread_file("a")', [])
    assert run(["x", 'read_file("a")']) == ('xread_file("a")', [])
    tools = [{"name": "read"}, {"name": "read_file", "parameters": {"required": []}}]
    assert run(["read_file() read ()"], tools=tools) == (" ", [("read_file", {}), ("read", {})])


def test_whitespace_between_name_and_paren() -> None:
    assert run(['read_file  ("a")']) == ("", [("read_file", {"media_id": "a"})])
    assert run(["read_file ", ' ("a")']) == ("", [("read_file", {"media_id": "a"})])
    far = "read_file" + " " * 40 + '("a")'
    assert run([far]) == (far, [])
    assert run(list(far)) == (far, [])


def test_code_closer_is_dropped_but_plain_whitespace_kept() -> None:
    assert run(['`read_file("a")`  next']) == ("next", [("read_file", {"media_id": "a"})])
    assert run(['read_file("a")\n\nnext']) == ("\n\nnext", [("read_file", {"media_id": "a"})])
    assert run(['read_file("a")', "\n", "```", "\n", "next"]) == (
        "next",
        [("read_file", {"media_id": "a"})],
    )
    assert run(['read_file("a")````x']) == ("`x", [("read_file", {"media_id": "a"})])


def test_escaped_quote_in_arguments() -> None:
    text = r'read_file("a \") b")'
    assert run([text]) == ("", [("read_file", {"media_id": 'a ") b'})])
    assert run(list(text)) == run([text])


def test_buffer_overflow_released_as_text() -> None:
    text = 'read_file("' + "x" * 100
    visible, calls = run([text + '")'], max_buffer_chars=32)
    assert calls == [] and visible == text + '")'
    parser = VerbatimToolCallParser(TOOLS, max_buffer_chars=32)
    assert parser.feed(text) == [text]  # released once the call passed 32 characters
    assert parser.flush() == []
    parser = VerbatimToolCallParser(TOOLS, max_buffer_chars=32)
    released = "".join(str(i) for c in text for i in parser.feed(c))
    assert released == text


def test_call_exactly_at_the_bound() -> None:
    text = 'read_file("abc")'
    assert run([text], max_buffer_chars=len(text)) == ("", [("read_file", {"media_id": "abc"})])
    assert run([text], max_buffer_chars=len(text) - 1) == (text, [])
    assert run(list(text), max_buffer_chars=len(text) - 1) == (text, [])


def test_no_tools_passes_through() -> None:
    parser = VerbatimToolCallParser([])
    assert not parser.has_tools
    assert parser.feed('read_file("a")') == ['read_file("a")']
    assert parser.flush() == []


def test_prose_and_call_are_separate_items_in_one_feed() -> None:
    parser = VerbatimToolCallParser(TOOLS)
    out = parser.feed('Sure: read_file("a") done')
    assert len(out) == 3
    assert out[0] == "Sure: " and isinstance(out[1], ToolCallBlock) and out[2] == " done"
    assert parser.flush() == []


def test_holdback_is_bounded() -> None:
    parser = VerbatimToolCallParser(TOOLS)
    for _ in range(2000):
        parser.feed("`" + "a" * 10 + " ")
        assert len(parser._buf) < 200


# --------------------------------------------------------------------------- properties

TOKENS = [
    "read_file", "generate_image", "reveal_message_metadata", "read", "_file", "(", ")", "()",
    '"media_1"', '("m")', "{", "}", '"prompt": "x (y)"', ', "mode": "z"', ",", "`", "```",
    "```json\n", " ", "\n", "prose", "x", '"', "\\", ":", "unknown_tool", "([1])", "é",
]  # fmt: skip
texts = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=30).map("".join),
    st.text(alphabet='read_fil()"`{} \n:\\x', max_size=80),
)


@settings(max_examples=400, deadline=None)
@given(text=texts, cuts=st.lists(st.integers(0, 300), max_size=15), small=st.booleans())
def test_any_split_matches_whole(text: str, cuts: list[int], small: bool) -> None:
    limit = 24 if small else 8192
    whole = run_items([text], max_buffer_chars=limit)
    assert run_items(cut(text, cuts), max_buffer_chars=limit) == whole
    assert run_items(list(text), max_buffer_chars=limit) == whole
    # Text is only ever removed, never invented: visible text is a subsequence-sized part.
    visible = "".join(i for i in whole if isinstance(i, str))
    if not any(isinstance(i, ToolCallBlock) for i in whole):
        assert visible == text
    assert len(visible) <= len(text)
