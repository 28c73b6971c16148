"""Tests for dshstream._core.filters.json_repair: every seed vector (TomoriBot jsonRepair and
toolArgumentsRepair tests), strict tool-argument parsing, and a hypothesis property that
every prefix of a JSON object repairs to ``None`` or a structural prefix of it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.errors import ToolArgumentsError
from dshstream._core.filters.json_repair import (
    finalize_tool_arguments,
    parse_tool_arguments,
    repair_incomplete_json,
)
from dshstream._core.types import ToolCallBlock


def repaired(text: str) -> Any:
    out = repair_incomplete_json(text)
    return None if out is None else json.loads(out)


# --------------------------------------------------------------------------- seed vectors


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": {"b": 1, "c": [1, 2]}, "d": "unfinished', {"a": {"b": 1, "c": [1, 2]}}),
        ('{"tags": ["one", "two"', {"tags": ["one", "two"]}),
        ('{"tags": ["one", "two",', {"tags": ["one", "two"]}),
        ('{"a": 1, "b"', {"a": 1}),
        ('{"a": 1, "b":', {"a": 1}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1, "b": tru', {"a": 1}),
        ('{"a": 1, "b": -', {"a": 1}),
        ('{"a": 1, "b": nul', {"a": 1}),
        ('{"count": 12345', {}),
        ('{"x": 1e1', {}),
        ('{"count": 12345 ', {}),
        ('{"a": "kept", "count": 12345', {"a": "kept"}),
        ('{"a": 1,', {"a": 1}),
        ('{"list": [1, 2', {"list": [1]}),
        (
            '{"scene": "hallway", "objects": [{"id": 1}, {"id": 2}, {"id": 3',
            {"scene": "hallway", "objects": [{"id": 1}, {"id": 2}]},
        ),
        ('{"list": [{"id": 1}]', {"list": [{"id": 1}]}),
        ('{"scene": "unfinished', {}),
        ('{"scene": {"nested": "unfinished', {"scene": {}}),
        ("{", {}),
        ('{"a": 1, "b": 2,', {"a": 1, "b": 2}),
        ('{"a": "x:y", "b": "unf', {"a": "x:y"}),
        ('{"room": "部屋は静かだった。", "next": "続', {"room": "部屋は静かだった。"}),
        ('{"scene":"the roof"', {"scene": "the roof"}),
    ],
)
def test_repair_vectors(text: str, expected: dict[str, Any]) -> None:
    assert repaired(text) == expected


def test_escaped_quotes_and_trailing_escaped_backslash_survive() -> None:
    text = r'{"quote": "she said \"hi\"", "path": "C:\\", "tail": "unfin'
    assert repaired(text) == {"quote": 'she said "hi"', "path": "C:\\"}
    assert repaired(r'{"a": "b\"') == {}


@pytest.mark.parametrize(
    "text",
    [
        "",
        '{"a": 1}',
        '{"a": "kept", "count": 12345}',
        '"a bare truncated string',
        "[1, 2",
        "[1, 2]",
        "12",
        '{"a": }',
        '{"a": 1 "b": 2}',
        '{"a": [1, 2}',
        '{"a": 1]',
        "[1,}",
        '{"a": 1, "b": 42 hours',
        "not json at all",
        '{"a": 1} trailing',
        '{"a": 01',
        '{"a": [1,]',
        '{"a": 1,}',
        '{"a": "\\x"}',
        '{"a": truex',
        '{"a": NaN',
        "   ",
    ],
)
def test_repair_returns_none(text: str) -> None:
    assert repair_incomplete_json(text) is None


def test_output_is_compact_and_unescaped() -> None:
    assert repair_incomplete_json('{"a": [1, 2], "b": "é", "c') == '{"a":[1,2],"b":"é"}'


def test_oversized_input() -> None:
    text = '{"a": "' + "x" * 100
    assert repair_incomplete_json(text, max_chars=50) is None
    assert repair_incomplete_json(text, max_chars=len(text)) == "{}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"x": 1e', {}),
        ('{"x": 1.', {}),
        ('{"x": -0.5e+', {}),
        ('{"a": {"count": 12345', {"a": {}}),
        ('{"a": {', {"a": {}}),
        ('{"a": [', {"a": []}),
        ('{"a": [[1, 2], [3', {"a": [[1, 2]]}),
        ('{"a": [[1, 2], [3, 4', {"a": [[1, 2], [3]]}),
        ('{"a": [{"id": 3, "name": "x"', {"a": [{"id": 3, "name": "x"}]}),
        ('{"a": 12 ,', {"a": 12}),
        (
            '{"a": true, "b": false, "c": null, "d": [true',
            {"a": True, "b": False, "c": None, "d": [True]},
        ),
        ('  {"a": 1,', {"a": 1}),
    ],
)
def test_port_decisions(text: str, expected: dict[str, Any]) -> None:
    assert repaired(text) == expected


def test_linear_on_large_truncated_payload() -> None:
    # Correctness on a large payload (timing lives in benchmarks/bench_filters.py).
    items = [{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(5000)]
    text = json.dumps({"items": items})
    out = repaired(text[: len(text) // 2])
    assert out is not None
    kept = out["items"]
    assert kept == items[: len(kept)] or kept[:-1] == items[: len(kept) - 1]


def test_deep_nesting_does_not_crash() -> None:
    assert repaired('{"a": ' + "[" * 100_000) == {"a": []}
    assert repair_incomplete_json('{"a": ' + "[" * 100_000 + "1,") is None  # too deep to dump
    assert repaired('{"a": ' + "[" * 50) == {"a": []}


# --------------------------------------------------------------------------- tool arguments


def block(arguments: str, truncated: bool = False) -> ToolCallBlock:
    return ToolCallBlock(
        id="c1", name="get_weather", arguments=arguments, arguments_truncated=truncated
    )


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments(block('{"city": "Paris"}')) == {"city": "Paris"}
    assert parse_tool_arguments(block("")) == {}
    assert parse_tool_arguments(block("  \n")) == {}


def test_parse_truncated_arguments_refused() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        parse_tool_arguments(block('{"city":"Paris"}', truncated=True))
    assert info.value.code == "TRUNCATED_TOOL_ARGUMENTS"
    assert str(info.value) == "tool call get_weather has truncated arguments"
    assert not info.value.retryable


@pytest.mark.parametrize(
    "arguments", ["not json at all", "[1]", '"secret-ish text"', "12", '{"a": NaN}']
)
def test_parse_invalid_arguments(arguments: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        parse_tool_arguments(block(arguments))
    assert info.value.code == "INVALID_TOOL_ARGUMENTS"
    assert arguments not in str(info.value)
    assert "secret" not in str(info.value) and "secret" not in (info.value.failure.detail or "")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("", ("{}", False)),
        ("   ", ("{}", False)),
        ('{"a": 1}', ('{"a": 1}', False)),
        ('{"scene":"the roof"', ('{"scene":"the roof"}', True)),
        ('{"a": 1, "b": 2,', ('{"a":1,"b":2}', True)),
        ("not json at all", ("{}", True)),
        ("[1]", ("{}", True)),
        ('{"a": }', ("{}", True)),
    ],
)
def test_finalize_tool_arguments(raw: str, expected: tuple[str, bool]) -> None:
    assert finalize_tool_arguments(raw) == expected


# --------------------------------------------------------------------------- properties

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=5), children, max_size=4),
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=5), json_values, max_size=5)


def same_scalar(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def is_structural_prefix(got: Any, original: Any) -> bool:
    """``got`` equals ``original`` or is a prefix of it: dict keys in order with all but
    the last value equal, lists losing trailing members; scalars never partial."""
    if isinstance(original, dict):
        if not isinstance(got, dict):
            return False
        keys = list(got)
        if keys != list(original)[: len(keys)]:
            return False
        for k in keys[:-1]:
            if not is_equal(got[k], original[k]):
                return False
        return not keys or is_structural_prefix(got[keys[-1]], original[keys[-1]])
    if isinstance(original, list):
        if not isinstance(got, list) or len(got) > len(original):
            return False
        if not all(is_equal(g, o) for g, o in zip(got[:-1], original)):
            return False
        return not got or is_structural_prefix(got[-1], original[len(got) - 1])
    return same_scalar(got, original)


def is_equal(got: Any, original: Any) -> bool:
    if isinstance(original, dict):
        return (
            isinstance(got, dict)
            and list(got) == list(original)
            and all(is_equal(got[k], original[k]) for k in got)
        )
    if isinstance(original, list):
        return (
            isinstance(got, list)
            and len(got) == len(original)
            and all(is_equal(g, o) for g, o in zip(got, original))
        )
    return same_scalar(got, original)


# 60 examples, each at every prefix (quadratic); every real tool call truncated at every
# event boundary is checked the same way in tests/robustness/test_corpus.py::test_cut_anywhere
@settings(max_examples=60, deadline=None)
@given(obj=json_objects, indent=st.sampled_from([None, 1]), ascii_only=st.booleans())
def test_every_prefix_is_none_or_structural_prefix(
    obj: dict[str, Any], indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(obj, indent=indent, ensure_ascii=ascii_only)
    assert repair_incomplete_json(text) is None  # valid input
    original = json.loads(text)
    for end in range(len(text)):
        out = repair_incomplete_json(text[:end])
        if out is None:
            continue
        got = json.loads(out)
        assert isinstance(got, dict)
        assert is_structural_prefix(got, original), (text[:end], out)


@settings(max_examples=40, deadline=None)
@given(obj=json_objects)
def test_repair_grows_with_the_prefix(obj: dict[str, Any]) -> None:
    """Once a key has survived, it survives every longer prefix (no flapping)."""
    text = json.dumps(obj)
    previous: list[str] = []
    for end in range(1, len(text)):
        out = repair_incomplete_json(text[:end])
        assert out is not None  # a prefix of a valid object is always repairable
        keys = list(json.loads(out))
        assert keys[: len(previous)] == previous
        previous = keys


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet='{}[]",: 0123456789.eE-truefalsn\\', max_size=40))
def test_arbitrary_text_never_raises(text: str) -> None:
    out = repair_incomplete_json(text)
    if out is not None:
        assert isinstance(json.loads(out), dict)
    arguments, truncated = finalize_tool_arguments(text)
    assert isinstance(json.loads(arguments), dict)
    assert truncated or arguments == text or arguments == "{}"
