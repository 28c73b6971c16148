"""The JSONL row reader: whole, byte by byte and at random cuts; CRLF and a BOM; a line over
its limit, a line that is not JSON and a half-written last line as failures of their own;
bounded memory and linear time."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.jsonl import JsonlReader, JsonlRow
from helpers import FIXTURES, split_at

RECORDED = (FIXTURES / "batch" / "openai_chat_output.jsonl").read_bytes()


def read(data: bytes, cuts: list[int] | None = None, **kwargs: Any) -> list[JsonlRow]:
    reader = JsonlReader(**kwargs)
    rows: list[JsonlRow] = []
    for piece in split_at(data, cuts or []):
        rows += reader.feed(piece)
    return rows + reader.close()


def bytewise(data: bytes, **kwargs: Any) -> list[JsonlRow]:
    return read(data, list(range(1, len(data))), **kwargs)


def test_a_recorded_result_file_whole_and_byte_by_byte() -> None:
    whole = read(RECORDED)
    assert [row.value["custom_id"] for row in whole] == ["request-1", "request-2"]
    assert all(row.ok for row in whole) and [row.line for row in whole] == [1, 2]
    assert bytewise(RECORDED) == whole
    assert whole[1].value["response"]["body"]["usage"]["completion_tokens"] == 193


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=12))
def test_the_recorded_file_at_random_split_points(cuts: list[int]) -> None:
    assert read(RECORDED, cuts) == read(RECORDED)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(JSON_VALUES, max_size=8), st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.booleans(),
       st.lists(st.integers(min_value=0, max_value=400), max_size=10))
def test_any_rows_any_line_ends_any_cuts(values: list[Any], end: bytes, final_end: bool, bom: bool,
                                         cuts: list[int]) -> None:
    lines = [json.dumps(v, ensure_ascii=False).encode("utf-8") for v in values]
    data = (b"\xef\xbb\xbf" if bom else b"") + end.join(lines) + (end if final_end and lines else b"")
    rows = read(data, cuts)
    assert [row.value for row in rows] == values and all(row.ok for row in rows)
    assert [row.line for row in rows] == list(range(1, len(values) + 1))


def test_crlf_blank_lines_and_a_bom_read_as_lf() -> None:
    crlf = b"\xef\xbb\xbf{\"a\": 1}\r\n\r\n   \r\n[2]\r\n"
    rows = read(crlf)
    assert [(row.line, row.value) for row in rows] == [(1, {"a": 1}), (4, [2])]
    assert bytewise(crlf) == rows
    assert read(b"\xef\xbb") == read(b"\xef\xbb", [1])  # too short for a BOM: the file, a half-written line
    assert read(b"\xef\xbb")[0].failure is not None


def test_a_complete_last_line_without_its_end_is_a_row() -> None:
    assert [row.value for row in read(b'{"a":1}\n{"b":2}')] == [{"a": 1}, {"b": 2}]


def test_a_half_written_last_line_is_a_failure_of_its_own() -> None:
    data = b'{"custom_id": "r1"}\n{"custom_id": "r2", "resp'
    for rows in (read(data), bytewise(data)):
        assert [row.ok for row in rows] == [True, False]
        failure = rows[1].failure
        assert failure is not None and failure.code == "MALFORMED_RESPONSE"
        assert "half-written last line" in failure.message and "line 2" in failure.message


def test_a_line_that_is_not_json_fails_and_the_next_ones_are_read() -> None:
    rows = read(b'{"a":1}\nnot json\n{"b":2}\n{"nan": NaN}\n', provider="openai", what="the batch's output_file")
    assert [row.ok for row in rows] == [True, False, True, True]
    failure = rows[1].failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE" and failure.provider == "openai"
    assert failure.message == "openai: line 2 of the batch's output_file is not JSON (MALFORMED_RESPONSE)"


def test_a_lone_surrogate_escape_becomes_a_replacement_character() -> None:
    (row,) = read(b'{"text": "a\\ud800b"}\n')
    assert row.value == {"text": "a\ufffdb"}
    json.dumps(row.value, ensure_ascii=False).encode("utf-8")  # valid UTF-8: nothing raises


def test_a_line_over_its_limit_fails_naming_the_limit_and_is_not_held() -> None:
    reader = JsonlReader(max_line=16, what="the batch results")
    rows = reader.feed(b'{"a":1}\n{"long": "')
    held = [reader.buffered]
    for _ in range(1000):  # the long line arrives in pieces: none of it is kept
        rows += reader.feed(b"x" * 100)
        held.append(reader.buffered)
    rows += reader.feed(b'"}\r\n{"b":2}\n')
    rows += reader.close()
    assert max(held) <= 16
    assert [row.ok for row in rows] == [True, False, True] and [row.line for row in rows] == [1, 2, 3]
    failure = rows[1].failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"
    assert "line 2 of the batch results is longer than 16 bytes" in failure.message
    assert read(b"x" * 17, max_line=16)[0].failure is not None  # at the end of the file too
    assert read(b'{"a": 12345678}\n', max_line=16)[0].ok  # exactly the limit fits


def test_long_lines_in_small_pieces_take_linear_time() -> None:
    line = json.dumps({"text": "y" * (4 << 20)}).encode() + b"\n"
    reader = JsonlReader()
    started = time.perf_counter()
    rows: list[JsonlRow] = []
    for start in range(0, len(line), 64):  # 65,000 feeds: a rescan of the held line would never end
        rows += reader.feed(line[start:start + 64])
    elapsed = time.perf_counter() - started
    assert len(rows) == 1 and rows[0].ok and elapsed < 20


def test_misuse_is_a_value_error() -> None:
    reader = JsonlReader()
    assert reader.close() == [] and reader.close() == []
    with pytest.raises(ValueError):
        reader.feed(b"{}\n")
    with pytest.raises(ValueError):
        JsonlReader(max_line=0)
