"""dshstream._core.strict_json: the one set of JSON parse/serialize helpers (rules 1-5 of its
contract), including the guarantee that nothing but ``ValueError`` leaves a parser."""

from __future__ import annotations

import json

import pytest

from dshstream._core.strict_json import (
    EventJsonError,
    dump_json,
    fix_surrogates,
    loads_event,
    loads_or_none,
    parse_json_object,
    strict_loads,
)

DEEP = "[" * 100_000


# --------------------------------------------------------------------------- strict_loads


def test_strict_loads_parses_standard_json() -> None:
    assert strict_loads('{"a": [1, 2.5, "x", true, null]}') == {"a": [1, 2.5, "x", True, None]}


@pytest.mark.parametrize("text", ['{"a": NaN}', "Infinity", '[-Infinity]'])
def test_strict_loads_rejects_the_non_standard_constants(text: str) -> None:
    with pytest.raises(ValueError, match="non-standard JSON constant"):
        strict_loads(text)


def test_strict_loads_reports_where_malformed_text_breaks() -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        strict_loads('{"a": }')
    assert caught.value.pos == 6


def test_strict_loads_turns_absurd_nesting_into_value_error() -> None:
    with pytest.raises(ValueError, match="nested too deeply"):
        strict_loads(DEEP)


# --------------------------------------------------------------------------- loads_or_none


@pytest.mark.parametrize("text", ["", "  ", "{", '{"a": NaN}', DEEP, "[1] x"])
def test_loads_or_none_never_raises(text: str) -> None:
    assert loads_or_none(text) is None


def test_loads_or_none_accepts_the_constants_only_when_asked() -> None:
    value = loads_or_none('{"a": NaN}', allow_nan=True)
    assert isinstance(value, dict) and value["a"] != value["a"]


def test_loads_or_none_caps_the_length() -> None:
    assert loads_or_none("[1, 2]", max_chars=6) == [1, 2]
    assert loads_or_none("[1, 2]", max_chars=5) is None


# --------------------------------------------------------------------------- loads_event


def test_loads_event_fast_path_and_whitespace_fallback() -> None:
    assert loads_event('{"a":1}') == {"a": 1}
    assert loads_event('  {"a": 1}  ') == {"a": 1}


def test_loads_event_accepts_the_constants_like_the_sdks() -> None:
    value = loads_event('{"x": Infinity}')
    assert value == {"x": float("inf")}


@pytest.mark.parametrize("data", ["", "{", '{"a": 1} x', "[} ", DEEP])
def test_loads_event_raises_its_own_value_error(data: str) -> None:
    with pytest.raises(EventJsonError) as caught:
        loads_event(data)
    assert isinstance(caught.value, ValueError) and caught.value.text == data


def test_loads_event_replaces_lone_surrogates_everywhere() -> None:
    value = loads_event('{"t": "a\\ud800b", "k\\udc00": ["\\uDFFF", {"z": "\\ud83d\\ude00"}]}')
    assert value == {"t": "a\ufffdb", "k\ufffd": ["\ufffd", {"z": "\U0001f600"}]}
    json.dumps(value).encode("utf-8")  # valid UTF-8 throughout


# --------------------------------------------------------------------------- fix_surrogates


def test_fix_surrogates_in_place_at_any_depth() -> None:
    deep: object = "\ud800"
    for _ in range(5_000):
        deep = [deep]
    fixed = fix_surrogates({"k\ud800": deep, "ok": 1})
    node = fixed["k\ufffd"]
    for _ in range(5_000):
        node = node[0]
    assert node == "\ufffd" and fixed["ok"] == 1
    assert fix_surrogates("\udfff") == "\ufffd"
    assert fix_surrogates(7) == 7


# --------------------------------------------------------------------------- dump / object


def test_dump_json_is_compact_unicode_and_refuses_what_json_cannot_carry() -> None:
    assert dump_json({"a": ["é", 1]}) == '{"a":["é",1]}'
    assert dump_json({"a": float("inf")}) is None
    assert dump_json({"a": object()}) is None
    deep: object = []
    for _ in range(100_000):
        deep = [deep]
    assert dump_json(deep) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": 1}', {"a": 1}), ("", {}), ("  ", {}), ("[1]", {}), ("{", {}), (DEEP, {})],
)
def test_parse_json_object(text: str, expected: dict[str, object]) -> None:
    assert parse_json_object(text) == expected
