"""Streaming partial JSON (dshstream._core.partial_json_reader, and partial_json() over chunks in
dshstream._core.partial_json): snapshots that never change type.

The property tests feed generated JSON documents, serialized with varied whitespace and
escapes, at random split points and character by character (so every prefix is seen),
and check every snapshot against the final value and the one before it (the prefix
relation is transitive, so consecutive checks cover all earlier snapshots). Real recorded
streams (structured output, every tool call of the corpus, cuts) go through
``partial_json`` over the decoded chunks. Speed (linear time on 1 MB in 20k pieces) is
benchmarks/bench_partial_json.py's job; here operation counts stand in for time.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dshstream.sansio
from dshstream import (
    BlockEnd,
    BlockStart,
    ChunkStream,
    ConfigurationError,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolSpec,
)
from dshstream.errors import ConfigurationTypeError, ProtocolError, ToolArgumentsError
from dshstream.sansio import JsonSnapshot, PartialJsonReader, partial_json
from dshstream._core.errors import make_failure
from dshstream._core.partial_json_reader import JsonDelta
from helpers import all_fixtures, decode_all, fixture_bytes, fixture_wire

# --------------------------------------------------------------------------- checks


def consistent(shown: Any, final: Any) -> bool:
    """``shown`` could be a snapshot of ``final``: same types; objects hold the first keys
    of ``final`` in order, arrays its first elements, strings a prefix, scalars equal."""
    if type(shown) is not type(final):
        return False
    if isinstance(final, dict):
        keys = list(final)[: len(shown)]
        return list(shown) == keys and all(consistent(shown[k], final[k]) for k in keys)
    if isinstance(final, list):
        return len(shown) <= len(final) and all(consistent(a, b) for a, b in zip(shown, final))
    if isinstance(final, str):
        return final.startswith(shown)
    if isinstance(final, float):
        return repr(shown) == repr(final)  # -0.0 keeps its sign
    return bool(shown == final)


def apply_delta(root: Any, delta: JsonDelta) -> Any:
    """``root`` with one delta applied (the way a consumer rebuilds the value)."""
    op, path, value = delta
    if not path:
        return value if op == "add" else root + value
    parent = root
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if op == "add":
        if isinstance(parent, list):
            assert last == len(parent)
            parent.append(value)
        else:
            assert last not in parent
            parent[last] = value
    else:
        parent[last] += value
    return root


def check_reading(pieces: list[str], final: Any) -> list[Any]:
    """Feed ``pieces``; check rules 1-4 and 7 at every step; return the snapshots."""
    reader = PartialJsonReader()
    rebuilt: Any = None
    views: list[tuple[JsonSnapshot, Any]] = []
    previous: Any = None
    version = 0
    for piece in pieces:
        changes = reader.feed(piece)
        assert (reader.version != version) == bool(changes)
        version = reader.version
        for delta in changes:
            rebuilt = apply_delta(rebuilt, delta)
        if not reader.started:
            assert not changes
            continue
        value = reader.snapshot
        assert consistent(value, final), (value, final)
        if previous is not None:
            assert consistent(previous, value), (previous, value)
        assert rebuilt == value
        views.append((JsonSnapshot(reader.done, False, (), version, reader._capture()), value))
        previous = value
    for delta in reader.close():
        rebuilt = apply_delta(rebuilt, delta)
    assert reader.done
    assert reader.snapshot == final and consistent(reader.snapshot, final)
    assert rebuilt == final
    # a snapshot taken earlier still shows what it showed then, however far the reader went
    for snapshot, value in views:
        assert snapshot.value == value and consistent(snapshot.value, value)
    return [value for _, value in views]


# --------------------------------------------------------------------------- generated documents

_CHARS = st.sampled_from(
    ['"', "\\", "/", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "€", "\u2028",
     "😀", "𝄞", "a", "Z", " ", "{", "}", "[", "]", ",", ":", "\ud800"]
)
_NO_SURROGATES: Any = ("Cs",)  # lone surrogates come from _CHARS, paired ones from "😀"
_TEXT = st.text(st.one_of(_CHARS, st.characters(blacklist_categories=_NO_SURROGATES)), max_size=12)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0, -0.0, 1e-5, 1.5e10, 2**63, -(2**64), 1e300, 5e-324])
    | _TEXT
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5),
    max_leaves=25,
)


def render(value: Any, rnd: random.Random) -> str:
    """JSON text of ``value`` with random whitespace between tokens and random escaping
    (``\\uXXXX`` for any character, surrogate pairs for astral ones, ``\\/``)."""

    def ws() -> str:
        return rnd.choice(["", "", " ", "\n  ", "\t", "\r\n"])

    if isinstance(value, dict):
        if not value:
            return "{" + ws() + "}"
        members = [ws() + render(k, rnd) + ws() + ":" + ws() + render(v, rnd) + ws() for k, v in value.items()]
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        if not value:
            return "[" + ws() + "]"
        return "[" + ",".join(ws() + render(v, rnd) + ws() for v in value) + "]"
    if isinstance(value, str):
        out = []
        for ch in value:
            code = ord(ch)
            roll = rnd.random()
            if ch in '"\\' or code < 0x20 or roll < 0.15:
                if ch == "/" and roll < 0.5:
                    out.append("\\/")
                elif code > 0xFFFF:
                    high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
                    out.append(f"\\u{high:04x}\\u{low:04X}")
                elif roll < 0.07 or code < 0x20 and ch not in "\n\t\r\b\f":
                    out.append(f"\\u{code:04x}")
                else:
                    out.append(json.dumps(ch)[1:-1])
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    return json.dumps(value)


def cut(text: str, points: list[int]) -> list[str]:
    marks = sorted({p % (len(text) + 1) for p in points} | {0, len(text)})
    return [text[a:b] for a, b in zip(marks, marks[1:]) if b > a]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.integers(0, 2**32), st.lists(st.integers(0, 10_000), max_size=12))
def test_random_splits_of_generated_documents(value: Any, seed: int, points: list[int]) -> None:
    rnd = random.Random(seed)
    text = rnd.choice(["", " ", "\n"]) + render(value, rnd) + rnd.choice(["", "\n", "  \r\n"])
    final = json.loads(text)
    check_reading(cut(text, points), final)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.integers(0, 2**32), st.sampled_from([None, 0, 2, "\t"]), st.booleans())
def test_every_prefix_one_character_at_a_time(value: Any, seed: int, indent: Any, ascii_only: bool) -> None:
    rnd = random.Random(seed)
    for text in (json.dumps(value, indent=indent, ensure_ascii=ascii_only), render(value, rnd)):
        check_reading(list(text), json.loads(text))


def outcome(pieces: list[str]) -> tuple[str, Any]:
    """How a reader ends on ``pieces``: ("done", value), ("cut", None) or ("error", offset)."""
    reader = PartialJsonReader()
    try:
        for piece in pieces:
            reader.feed(piece)
        reader.close()
    except ProtocolError as error:
        offset = re.match(r"malformed JSON at character ([\d,]+)", error.failure.message)
        assert offset is not None, error.failure.message
        return "error", int(offset.group(1).replace(",", ""))
    return ("done", reader.snapshot) if reader.done else ("cut", None)


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("repeated key")
    return dict(pairs)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_VALUES, st.integers(0, 2**32), st.integers(0, 10_000), st.sampled_from(["drop", "insert", "swap"]),
       st.sampled_from(list('{}[]",:\\ \nu0-.eE+tfnlx\x01')))
def test_damaged_documents_agree_with_json_loads(value: Any, seed: int, at: int, how: str, char: str) -> None:
    """A document with one character dropped, inserted or replaced: the reader finishes with
    json.loads's value exactly when json.loads accepts it, otherwise it raises (at the same
    offset however the text is split) or, for a prefix of a document, is left not done.
    Nothing but ProtocolError ever escapes."""
    rnd = random.Random(seed)
    text = render(value, rnd)
    at %= len(text) + 1
    if how == "drop":
        text = text[:at] + text[at + 1:]
    elif how == "insert":
        text = text[:at] + char + text[at:]
    else:
        text = text[:at] + char + text[at + 1:]
    try:
        expected: tuple[str, Any] = ("done", json.loads(text, object_pairs_hook=_no_repeated_keys))
    except ValueError:
        expected = ("error", None)
    whole = outcome([text])
    assert outcome(list(text)) == whole
    assert outcome(cut(text, [at, at + 1, rnd.randrange(len(text) + 1)])) == whole
    if expected[0] == "done":
        assert whole == expected and consistent(whole[1], expected[1])
    else:
        assert whole[0] in ("error", "cut")


@pytest.mark.parametrize(
    "text",
    [
        '{"n": -0, "f": -0.0, "e": 1e-5, "E": 1.5E+10, "big": 123456789012345678901234567890, "z": 0}',
        '[1e400, -1E-400, 0.5e0, 10E1, 1.0, 12345.678e-3]',
        '"\\ud83d\\ude00 \\u00e9 \\n \\" \\\\ \\/ \\b\\f\\r\\t lone \\ud83d and \\ude00"',
        '{"": {"": [[], {}, [[[]]], ""]}}',
        "-12.5e+3",
        "0",
        "true",
        "null",
        '{"a":{"b":{"c":{"d":[1,[2,[3,[4]]]]}}}}',
    ],
)
def test_literal_number_forms_escapes_and_empty_containers(text: str) -> None:
    final = json.loads(text)
    check_reading(list(text), final)
    check_reading([text], final)


def test_numbers_and_literals_appear_only_complete() -> None:
    reader = PartialJsonReader()
    seen = []
    for ch in '{"a": 123, "b": [tru' + "e, -1.5e3], \"c\": nul" + "l}":
        reader.feed(ch)
        seen.append(reader.snapshot)
    assert {"a": 1} not in seen and {"a": 12} not in seen
    assert {"a": 123} in seen  # at the comma, not before
    assert {"a": 123, "b": [True, -1.5]} not in seen
    assert {"a": 123, "b": [True, -1500.0]} in seen
    assert seen[-1] == {"a": 123, "b": [True, -1500.0], "c": None} and reader.done


def test_a_key_appears_only_with_its_value() -> None:
    reader = PartialJsonReader()
    snapshots = [reader.feed(ch) and reader.snapshot for ch in '{"alpha": "be']
    assert {"alpha": None} not in snapshots
    assert reader.snapshot == {"alpha": "be"}
    for piece in ['{"x": ', '{"x": 1', '{"x": 1, "y"', '{"x": 1, "y":']:
        partial = PartialJsonReader()
        partial.feed(piece)
        assert partial.snapshot == ({} if piece.count(",") == 0 else {"x": 1})


def test_escapes_are_never_shown_half_done() -> None:
    text = '["a\\u00e9b\\ud83d\\ude00c\\nd"]'
    shown = check_reading(list(text), ["aéb😀c\nd"])
    strings = [v[0] for v in shown if v]
    assert not any(s.endswith(("\\", "\\u", "\ud83d")) for s in strings)
    assert list(dict.fromkeys(strings)) == ["", "a", "aé", "aéb", "aéb😀", "aéb😀c", "aéb😀c\n", "aéb😀c\nd"]


def test_a_lone_high_surrogate_is_kept_as_json_loads_keeps_it() -> None:
    for text in ['"\\ud83d"', '"\\ud83dx"', '"\\ud83d\\n"', '"\\ud83d\\u0041"']:
        check_reading(list(text), json.loads(text))


# --------------------------------------------------------------------------- deltas


def test_deltas_name_paths_and_merge_within_a_feed() -> None:
    reader = PartialJsonReader()
    assert reader.feed('{"items": [{"name": "ab') == [
        ("add", (), {}),
        ("add", ("items",), []),
        ("add", ("items", 0), {}),
        ("add", ("items", 0, "name"), "ab"),
    ]
    assert reader.feed("c\\n") == [("append", ("items", 0, "name"), "c\n")]
    assert reader.feed('d", "n": 4') == [("append", ("items", 0, "name"), "d")]
    assert reader.feed("2}]") == [("add", ("items", 0, "n"), 42)]
    assert reader.feed("}") == [] and reader.done
    assert reader.version == 4


def test_deltas_off_returns_nothing_but_reads_the_same() -> None:
    reader = PartialJsonReader(deltas=False)
    assert reader.feed('{"a": [1, "x"') == []
    assert reader.snapshot == {"a": [1, "x"]} and reader.version == 1


def test_the_snapshot_belongs_to_the_caller() -> None:
    reader = PartialJsonReader()
    reader.feed('{"a": [1, {"b": "x"}], "c": "op')
    mine = reader.snapshot
    mine["a"][1]["b"] = "changed"
    mine["a"].append(99)
    mine["z"] = 1
    reader.feed('en"}')
    assert reader.snapshot == {"a": [1, {"b": "x"}], "c": "open"}
    other = PartialJsonReader()
    ((_, _, added),) = other.feed("[")
    added.append("not shared")  # the value of an "add" delta is a fresh container
    assert other.snapshot == []


# --------------------------------------------------------------------------- leading text


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"a": 1}\n```\n',
        '```\n{"a": 1}\n```',
        "\ufeff  \n```JSON  \r\n{\"a\": 1}```",
        '\n\n{"a": 1}\n\n',
    ],
)
def test_a_code_fence_and_whitespace_around_the_value_are_skipped(text: str) -> None:
    for pieces in (list(text), [text]):
        reader = PartialJsonReader()
        for piece in pieces:
            reader.feed(piece)
        reader.close()
        assert reader.done and reader.snapshot == {"a": 1}


def test_prose_is_skipped_only_when_asked() -> None:
    text = 'Here is the JSON you asked for (as [requested]:\n{"a": [1, 2]}\nHope it helps! {"b": 2}'
    with pytest.raises(ProtocolError, match="character 0: expected a JSON value"):
        PartialJsonReader().feed(text)
    reader = PartialJsonReader(skip_prose=True)
    # the prose's own "[" would start an array: skip_prose takes the first opener it meets
    with pytest.raises(ProtocolError):
        reader.feed(text)
    reader = PartialJsonReader(skip_prose=True)
    for ch in 'Sure! Here it is:\n```json\n{"a": [1, 2]}\n```\nHope it helps! {"b": 2}':
        reader.feed(ch)
    assert reader.done and reader.snapshot == {"a": [1, 2]}


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ('{"a" 1}', 5, "':' after a key"),
        ('{"a": 1,}', 8, "a quoted key"),
        ("[1, 2,]", 6, "a JSON value"),
        ('{"a": 01}', 6, "a valid JSON number"),
        ('{"a": 1.}', 6, "a valid JSON number"),
        ('{"a": -}', 6, "a valid JSON number"),
        ('{"a": tru}', 6, "a JSON value"),
        ('{"a": True}', 6, "a JSON value"),
        ('{"a": "x\\q"}', 8, "a valid escape"),
        ('{"a": "x\\u12g4"}', 8, "four hex digits"),
        ('{"a": "line\nbreak"}', 11, "control characters must be escaped"),
        ('{"a": 1, "a": 2}', 9, "repeated keys are refused"),
        ('{"a": 1}}', 8, "nothing after the JSON value"),
        ('{"a": [1}', 8, "',' or ']'"),
        ("[1 2]", 3, "',' or ']'"),
        ("{'a': 1}", 1, "a quoted key or '}'"),
        ("NaN", 0, "a JSON value"),
        ("``x\n{}", 0, "code fence"),
        ('```json\n{}\n```\n{}', 15, "nothing after the closing code fence"),
    ],
)
def test_malformed_text_is_a_clear_protocol_error(text: str, offset: int, expected: str) -> None:
    for pieces in ([text], list(text)):
        reader = PartialJsonReader()
        with pytest.raises(ProtocolError) as caught:
            for piece in pieces:
                reader.feed(piece)
            reader.close()
        failure = caught.value.failure
        assert failure.code == "MALFORMED_RESPONSE" and not failure.retryable
        assert failure.message.startswith(f"malformed JSON at character {offset:,}: expected ")
        assert expected in failure.message
        assert failure.detail  # the excerpt, redacted
        with pytest.raises(ProtocolError):  # a failed reader stays failed
            reader.feed("{}")


def test_the_message_never_quotes_the_text_and_the_detail_is_redacted() -> None:
    secret = "sk-proj-" + "A1b2C3d4" * 6
    reader = PartialJsonReader()
    with pytest.raises(ProtocolError) as caught:
        reader.feed('{"key": "' + secret + '" oops}')
    assert secret not in str(caught.value) and secret not in (caught.value.failure.detail or "")


def test_depth_and_size_caps() -> None:
    PartialJsonReader(max_depth=3).feed("[[[1]]]")
    with pytest.raises(ProtocolError, match="max_depth=3"):
        PartialJsonReader(max_depth=3).feed("[[[[")
    reader = PartialJsonReader(max_chars=10)
    reader.feed('{"a": "12')
    with pytest.raises(ProtocolError) as caught:
        reader.feed("34")
    assert caught.value.failure.code == "EVENT_TOO_LARGE" and "max_chars=10" in str(caught.value)
    deep = "[" * 1000 + "]" * 1000
    reader = PartialJsonReader(max_depth=1000, max_chars=None)
    reader.feed(deep)
    value: Any = reader.snapshot
    for _ in range(999):
        (value,) = value
    assert reader.done and value == []
    reader = PartialJsonReader(max_depth=1000)
    reader.feed("[" * 1000)
    value = reader.snapshot  # an open document 1000 deep still copies out
    for _ in range(999):
        value = value[0]
    assert value == []


def test_bad_arguments_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationTypeError, match="PartialJsonReader.deltas must be a bool"):
        PartialJsonReader(deltas=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="max_depth must be an int from 1 to 1000"):
        PartialJsonReader(max_depth=1001)
    with pytest.raises(ConfigurationError, match="max_chars must be a positive int or None"):
        PartialJsonReader(max_chars=0)
    with pytest.raises(ConfigurationTypeError, match="feed.text. must be a str, got bytes"):
        PartialJsonReader().feed(b"{}")  # type: ignore[arg-type]
    reader = PartialJsonReader()
    reader.close()
    assert reader.close() == []
    with pytest.raises(ConfigurationError, match="after close"):
        reader.feed("{}")
    with pytest.raises(ConfigurationError, match=r"partial_json\(tool=\) must be a non-empty str"):
        partial_json([], tool="")
    with pytest.raises(ConfigurationTypeError, match=r"partial_json\(deltas=\) must be a bool"):
        partial_json([], deltas="yes")  # type: ignore[arg-type]


def test_close_settles_a_lone_number_and_never_raises_for_a_cut() -> None:
    cases: list[tuple[str, Any, bool]] = [
        ("42", 42, True), ("-", None, False), ("4.", None, False), ('{"a": 1', {}, False),
        ('"ab', "ab", False), ("[tr", [], False), ("", None, False), ("```json", None, False),
    ]
    for text, value, done in cases:
        reader = PartialJsonReader()
        reader.feed(text)
        reader.close()
        assert (reader.snapshot, reader.done) == (value, done), text


def test_feeding_is_linear_no_piece_is_rescanned() -> None:
    """Operation count instead of time: only an incomplete escape or literal is carried
    over to the next piece, so the characters scanned equal those fed plus at most 11 per
    feed, whatever the document's size (a reader that re-parsed its prefix would scan
    ~n^2/2 characters)."""
    value = {"rows": [{"id": i, "name": f"row \\u00e9 {i}", "ok": i % 2 == 0, "v": None} for i in range(300)]}
    text = json.dumps(value)
    scanned = 0

    class Counting(PartialJsonReader):
        def _scan(self, text: str) -> None:
            nonlocal scanned
            scanned += len(text)
            super()._scan(text)

    reader = Counting()
    for piece in re.findall(r".{1,7}", text, re.DOTALL):
        reader.feed(piece)
    feeds = (len(text) + 6) // 7
    assert reader.done and reader.snapshot == value
    assert len(text) <= scanned <= len(text) + 11 * feeds


# --------------------------------------------------------------------------- partial_json over chunks


def text_stream(pieces: list[str], finish: str = "stop") -> list[StreamChunk]:
    failure = make_failure("STREAM_CLOSED", "cut") if finish in ("error", "aborted") else None
    return [
        BlockStart(0, "text"),
        *(TextDelta(0, p) for p in pieces),
        BlockEnd(0, TextBlock("".join(pieces))),
        Finish(FinishReason(finish, failure=failure)),  # type: ignore[arg-type]
    ]


def test_text_snapshots_end_done_and_read_the_stream_to_its_end() -> None:
    chunks = text_stream(['{"city": "Pa', 'ris", "pop', 'ulation": 2161', "000}", "\n"])
    snapshots = list(partial_json(chunks))
    assert [s.value for s in snapshots] == [
        {"city": "Pa"}, {"city": "Paris"}, {"city": "Paris", "population": 2161000}
    ]
    assert [(s.done, s.truncated) for s in snapshots] == [(False, False), (False, False), (True, False)]
    assert all(s.deltas == () for s in snapshots)
    stream = ChunkStream(iter([chunks[:3], chunks[3:]]))
    assert [s.value for s in stream.partial_json()] == [s.value for s in snapshots]
    assert stream.done and stream.result().text.endswith("000}\n")


@pytest.mark.parametrize("finish", ["max-tokens", "error", "aborted", "stop"])
def test_a_cut_keeps_the_last_snapshot_and_flags_it_truncated(finish: str) -> None:
    snapshots = list(partial_json(text_stream(['{"a": [1, 2', ', {"b": "xy'], finish), deltas=True))
    last = snapshots[-1]
    assert last.value == {"a": [1, 2, {"b": "xy"}]} and last.truncated and not last.done
    assert [s.truncated for s in snapshots] == [False] * (len(snapshots) - 1) + [True]
    # the truncated snapshot adds nothing (the cut 2... was settled by the comma already)
    assert snapshots[-2].value == last.value and last.deltas == ()


def test_a_stream_without_json_still_ends_with_a_flagged_snapshot() -> None:
    (only,) = partial_json(text_stream([], "max-tokens"))
    assert only.value is None and only.truncated and not only.done
    *_, last = partial_json(iter([TextDelta(0, "[1, 2")]))  # the iterator just ran out
    assert last.value == [1] and last.truncated


def test_a_text_block_that_came_whole_is_read_and_reasoning_is_not() -> None:
    chunks: list[StreamChunk] = [
        BlockEnd(0, TextBlock('{"a": ')),
        TextDelta(1, "1}"),
        Finish(FinishReason("stop")),
    ]
    assert [s.value for s in partial_json(chunks)] == [{}, {"a": 1}]


def tool_chunks() -> list[StreamChunk]:
    """Two interleaved calls; the second's name is known only from its second delta."""
    return [
        BlockStart(0, "tool-call"),
        ToolCallDelta(0, "call_a", "search", '{"q": "pel'),
        BlockStart(1, "tool-call"),
        ToolCallDelta(1, "", None, '{"city'),
        ToolCallDelta(1, "call_b", "weather", '": "Par'),
        ToolCallDelta(0, "", None, 'icans"}'),
        ToolCallDelta(1, "", None, 'is", "days": 3}'),
        BlockEnd(0, ToolCallBlock("call_a", "search", '{"q": "pelicans"}')),
        BlockEnd(1, ToolCallBlock("call_b", "weather", '{"city": "Paris", "days": 3}')),
        Finish(FinishReason("tool-calls")),
    ]


def test_tool_arguments_by_name_or_id_with_held_fragments() -> None:
    by_name = list(partial_json(tool_chunks(), tool="weather", deltas=True))
    assert [s.value for s in by_name] == [{"city": "Par"}, {"city": "Paris", "days": 3}, {"city": "Paris", "days": 3}]
    assert [s.done for s in by_name] == [False, False, True]  # done once the call's block ends
    assert by_name[0].deltas == (("add", (), {}), ("add", ("city",), "Par"))
    by_id = list(partial_json(tool_chunks(), tool="call_a"))
    assert [s.value for s in by_id] == [{"q": "pel"}, {"q": "pelicans"}, {"q": "pelicans"}] and by_id[-1].done
    (missing,) = partial_json(tool_chunks(), tool="nope")
    assert missing.value is None and missing.truncated


def test_tool_arguments_flagged_truncated_are_truncated_and_whole_ones_are_read() -> None:
    chunks: list[StreamChunk] = [
        ToolCallDelta(0, "c1", "write", '{"path": "a.md", "body": "# Ti'),
        BlockEnd(0, ToolCallBlock("c1", "write", '{"path":"a.md"}', arguments_truncated=True,
                                  raw_arguments='{"path": "a.md", "body": "# Ti')),
        Finish(FinishReason("max-tokens")),
    ]
    snapshots = list(partial_json(chunks, tool="write"))
    assert snapshots[-1].value == {"path": "a.md", "body": "# Ti"} and snapshots[-1].truncated
    whole: list[StreamChunk] = [BlockEnd(3, ToolCallBlock("c9", "noop", "{}")), Finish(FinishReason("tool-calls"))]
    (only,) = partial_json(whole, tool="noop")
    assert only.value == {} and only.done


def test_malformed_tool_arguments_raise_tool_arguments_error() -> None:
    chunks: list[StreamChunk] = [ToolCallDelta(0, "c1", "f", '{"a": 1,,'), Finish(FinishReason("tool-calls"))]
    with pytest.raises(ToolArgumentsError) as caught:
        list(partial_json(chunks, tool="f"))
    assert caught.value.failure.code == "INVALID_TOOL_ARGUMENTS"
    assert caught.value.failure.message.startswith("tool call arguments: malformed JSON at character 8")


def test_snapshot_equality_and_repr() -> None:
    a, b = list(partial_json(text_stream(["[1, ", "2]"]))), list(partial_json(text_stream(["[1,", " 2]"])))
    assert a == b and a[0] != a[1]
    assert repr(a[-1]) == "JsonSnapshot(value=[1, 2], done=True, truncated=False)"
    with pytest.raises(TypeError):
        hash(a[0])


def test_the_names_are_public() -> None:
    assert dshstream.sansio.partial_json is partial_json
    assert dshstream.sansio.JsonSnapshot.__module__ == "dshstream.sansio"
    assert "PartialJsonReader" in dshstream.sansio.__all__


# --------------------------------------------------------------------------- real recorded streams


def snapshots_of(chunks: list[StreamChunk], **options: Any) -> list[JsonSnapshot]:
    snapshots = list(partial_json(chunks, deltas=True, **options))
    rebuilt: Any = None
    for earlier, later in zip(snapshots, snapshots[1:]):
        assert consistent(earlier.value, later.value)
    for snapshot in snapshots:
        for delta in snapshot.deltas:
            rebuilt = apply_delta(rebuilt, delta)
        assert rebuilt == snapshot.value
    return snapshots


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("bedrock/claude_sonnet45_native_output.eventstream", {"city": "Paris", "country": "France", "population": 2161000}),
        ("bedrock/claude_sonnet46_structured_output.eventstream", {"city": "Paris", "country": "France"}),
    ],
)
def test_recorded_structured_output_streams(name: str, expected: dict[str, Any]) -> None:
    chunks = decode_all(fixture_bytes(name), fixture_wire(name))
    snapshots = snapshots_of(chunks)
    assert snapshots[-1].done and snapshots[-1].value == expected
    assert all(consistent(s.value, expected) for s in snapshots)
    assert len(snapshots) >= 3  # it really streamed


def test_recorded_structured_output_cut_by_max_tokens() -> None:
    """openai-python's test_parse_max_tokens_reached: a json_schema reply cut after ``{"``."""
    chunks = decode_all(fixture_bytes("openai/finish_length.sse"), "openai-chat")
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.kind == "max-tokens"
    snapshots = snapshots_of(chunks)
    assert [(s.value, s.done, s.truncated) for s in snapshots] == [({}, False, False), ({}, False, True)]


def _corpus_calls() -> list[tuple[str, ToolCallBlock]]:
    calls = []
    for name in all_fixtures():
        for chunk in decode_all(fixture_bytes(name), fixture_wire(name)):
            if isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
                calls.append((name, chunk.block))
    return calls


_CALLS = _corpus_calls()


def test_the_corpus_has_tool_calls_to_read() -> None:
    assert len(_CALLS) >= 30 and sum(1 for _, call in _CALLS if len(call.arguments) > 40) >= 5


@pytest.mark.parametrize(("name", "call"), _CALLS, ids=[f"{n}:{c.id}" for n, c in _CALLS])
def test_every_recorded_tool_call(name: str, call: ToolCallBlock) -> None:
    chunks = decode_all(fixture_bytes(name), fixture_wire(name))
    final = json.loads(call.arguments)
    snapshots = snapshots_of(chunks, tool=call.id)
    assert snapshots[-1].done and snapshots[-1].value == final
    assert all(consistent(s.value, final) for s in snapshots)
    first_by_name = next(c for n, c in _CALLS if n == name and c.name == call.name)
    assert list(partial_json(chunks, tool=call.name))[-1].value == json.loads(first_by_name.arguments)


@pytest.mark.parametrize("keep", [1, 3, 6, 9, 12])
def test_recorded_tool_call_cut_by_max_tokens_mid_arguments(keep: int) -> None:
    """openai/single_tool_call.sse with its argument deltas cut after ``keep`` of 14 and a
    ``length`` finish put in their place, as a model at its token limit sends it."""
    raw = fixture_bytes("openai/single_tool_call.sse").decode()
    events = [e for e in raw.split("\n\n") if e.startswith("data: {")]
    body = [json.loads(e[len("data: "):]) for e in events]
    with_args = [i for i, e in enumerate(body) if e["choices"] and e["choices"][0]["delta"].get("tool_calls")]
    kept = body[: with_args[keep] + 1]
    finish = {**body[0], "choices": [{"index": 0, "delta": {}, "finish_reason": "length", "logprobs": None}]}
    data = "".join(f"data: {json.dumps(e)}\n\n" for e in [*kept, finish]) + "data: [DONE]\n\n"
    chunks = decode_all(data.encode(), "openai-chat")
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.kind == "max-tokens"
    (call,) = [c.block for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert call.arguments_truncated
    streamed = "".join(c.arguments_delta for c in chunks if isinstance(c, ToolCallDelta))
    whole = json.loads(next(c for n, c in _CALLS if n == "openai/single_tool_call.sse").arguments)
    snapshots = snapshots_of(chunks, tool="GetWeatherArgs")
    last = snapshots[-1]
    assert last.truncated and not last.done
    assert consistent(last.value, whole)
    # exactly what had settled: the same as reading the streamed prefix directly
    reader = PartialJsonReader()
    reader.feed(streamed)
    assert last.value == reader.snapshot


def test_recorded_tool_call_cut_by_eof() -> None:
    raw = fixture_bytes("anthropic/tool_use_with_args.sse")
    cut_at = raw.rindex(b"event: content_block_delta", 0, raw.index(b'"partial_json":"}"'))
    chunks = decode_all(raw[:cut_at], "anthropic")
    last = snapshots_of(chunks, tool="json")[-1]
    assert last.truncated
    assert last.value == {"elements": [{"location": "San Francisco", "temperature": 58, "condition": "sunny"}]}


def _iterate(snapshots: Iterator[JsonSnapshot]) -> list[Any]:
    return [s.value for s in snapshots]


def test_values_read_late_equal_values_read_at_once() -> None:
    name = "bedrock/claude3_sonnet_tool_use_first.eventstream"
    chunks = decode_all(fixture_bytes(name), fixture_wire(name))
    at_once = _iterate(partial_json(chunks, tool="get_cities_list"))
    late = list(partial_json(chunks, tool="get_cities_list"))
    assert [s.value for s in late] == at_once and len(at_once) > 5


# --------------------------------------------------------------------------- live llama-server

_LIVE = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")
_GET_WEATHER = ToolSpec(
    name="get_weather",
    description="Get current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def _live_stream(max_tokens: int) -> ChunkStream:
    """A real tool call from llama-server (Qwen2.5-Coder-0.5B; the request
    tests/cli/test_live_server.py uses: greedy, seeded, contract checked)."""
    service = LlmService(check_contract=True)
    service.register_adapter(["llamacpp"], OpenAIChatAdapter(base_url=f"{_LIVE}/v1", dialect="llamacpp"))
    return service.stream(GenerateOptions(
        provider="llamacpp", model="m", messages=(Message.user("What is the weather in Paris? Use the tool."),),
        tools=(_GET_WEATHER,), max_tokens=max_tokens, temperature=0, extra_body={"seed": 1}, timeout=60.0,
    ))


@pytest.mark.live
@pytest.mark.skipif(not _LIVE, reason="DSHSTREAM_TEST_SERVER is not set (live llama-server)")
def test_live_tool_call_arguments_stream_as_monotone_snapshots() -> None:
    with _live_stream(64) as stream:
        snapshots = list(stream.partial_json(tool="get_weather", deltas=True))
        result = stream.result()
    (call,) = result.tool_calls
    final = json.loads(call.arguments)
    assert snapshots[-1].done and snapshots[-1].value == final and "city" in final
    assert all(consistent(s.value, final) for s in snapshots)
    rebuilt: Any = None
    for earlier, later in zip(snapshots, snapshots[1:]):
        assert consistent(earlier.value, later.value)
    for snapshot in snapshots:
        for delta in snapshot.deltas:
            rebuilt = apply_delta(rebuilt, delta)
        assert rebuilt == snapshot.value


@pytest.mark.live
@pytest.mark.skipif(not _LIVE, reason="DSHSTREAM_TEST_SERVER is not set (live llama-server)")
def test_live_tool_call_cut_by_max_tokens_keeps_a_truncated_snapshot() -> None:
    with _live_stream(14) as stream:  # the call and '{"city": "' stream, the value does not
        snapshots = list(stream.partial_json(tool="get_weather"))
        result = stream.result()
    assert result.finish.kind == "max-tokens" and result.tool_calls == ()
    last = snapshots[-1]
    assert last.truncated and not last.done and isinstance(last.value, dict)
    assert set(last.value) <= {"city"}
    for earlier, later in zip(snapshots, snapshots[1:]):
        assert consistent(earlier.value, later.value)
