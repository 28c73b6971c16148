"""Robustness over the real fixture corpus: split invariance and cuts anywhere.

This is the one place every recorded transcript (tests/fixtures/real/*/*.sse, and the
binary AWS event-stream bodies */*.eventstream) is fed to its wire in pieces; the per-wire
test files only decode fixtures whole. For event-stream bodies an "event boundary" is the
end of a frame, the adversarial splits cut inside every prelude and between every frame,
and the line-end re-framing does not apply.

Split invariance: every transcript decodes to exactly the same chunks (compared as
``chunk_to_dict`` lists) however its bytes are cut into pieces:

* files under 1 KB: at every single two-way split point;
* files under 16 KB: byte by byte, and in STRIDE (61) feeds of 61-byte pieces shifted by
  one byte each, so every offset is a cut in one feed whose pieces hold several short
  lines or part of a long one;
* every file: 24 seeded random multi-way splits (up to 64 pieces, or up to one piece per
  16 bytes in every fourth), and adversarial multi-way splits (between every CR and LF,
  inside every multi-byte UTF-8 character, after every ``data:``, before every line end,
  one event per piece);
* every file re-framed with LF, CRLF or CR line ends decodes the same.

Cut anywhere: every transcript truncated at event boundaries (after a blank line, LF or
CRLF framing, and between the CR and LF of a CRLF blank line) and at seeded random byte
offsets (200 in files under 16 KB, 40 in larger ones) decodes without raising anything,
passes ``check_contract``, and is either the complete result or a ``STREAM_CLOSED``
failure whose blocks are a prefix of the complete result's blocks (text and reasoning may
stop early; a tool call cut short is ``arguments_truncated``; a Gemini call the server
ran, cut before its ``functionResponse``, is the client's call it then looks like). A finish reason the
provider really sent is not invented, so a cut after it (before the terminal marker) may
complete with that finish. A cut inside an event gives exactly the result of a cut just
before that event. The boundaries cut at are all of them in a file with at most 200
events; in a longer file (a long run of same-shaped deltas), every boundary next to a
change of event shape (strings and numbers blanked; the first and last event of each run)
plus a seeded sample of the boundaries inside runs, 200 in all.
"""

from __future__ import annotations

import functools
import json
import random
import re
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import (
    Block,
    BlockEnd,
    Finish,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    chunk_to_dict,
)

from helpers import KNOWN_FINISH, all_fixtures, decode_all, fixture_bytes, fixture_wire, split_at

TINY = 1024  # every two-way split
SMALL = 16 * 1024  # byte by byte, and every offset cut in one of STRIDE strided feeds
STRIDE = 61
RANDOM_SPLITS = 24  # seeded random multi-way splits, every fixture
RANDOM_CUTS = 200  # seeded random truncation offsets under SMALL ...
RANDOM_CUTS_LARGE = 40  # ... and at or over it
MAX_BOUNDARIES = 200  # sample, shape-aware, beyond this many event boundaries

CASES = [pytest.param(rel, fixture_wire(rel), id=rel) for rel in all_fixtures()]


def _decode(data: bytes | Sequence[bytes], wire: str) -> list[StreamChunk]:
    return list(decode(data, wire=wire))


@functools.lru_cache(maxsize=None)
def _whole(rel: str) -> tuple[StreamChunk, ...]:
    chunks = tuple(check_contract(_decode(fixture_bytes(rel), fixture_wire(rel))))
    assert isinstance(chunks[-1], Finish)
    return chunks


def _seed(rel: str, salt: str) -> int:
    return zlib.crc32(f"{salt}:{rel}".encode())


def _assert_same(actual: Sequence[StreamChunk], expected: Sequence[StreamChunk], context: str) -> None:
    if list(actual) == list(expected):
        return
    assert [chunk_to_dict(c) for c in actual] == [chunk_to_dict(c) for c in expected], context


# --------------------------------------------------------------------------- known finishes


def test_every_fixture_has_a_known_finish() -> None:
    assert sorted(KNOWN_FINISH) == all_fixtures()


@pytest.mark.parametrize(("rel", "wire"), CASES)
def test_known_finish(rel: str, wire: str) -> None:
    finish = _whole(rel)[-1]
    assert isinstance(finish, Finish)
    expected = KNOWN_FINISH[rel]
    code = finish.reason.failure.code if finish.reason.failure is not None else None
    assert (finish.reason.kind, finish.reason.raw, code) == expected


# --------------------------------------------------------------------------- split invariance


def _binary(data: bytes) -> bool:
    """An AWS event-stream body (its first byte is the top byte of a frame length)."""
    return data[:1] == b"\x00"


def _frame_ends(data: bytes) -> list[int]:
    ends = []
    pos = 0
    while pos + 4 <= len(data):
        pos += int.from_bytes(data[pos : pos + 4], "big")
        ends.append(pos)
    return ends


def _adversarial_splits(data: bytes) -> Iterable[tuple[str, list[int]]]:
    if _binary(data):
        starts = [0, *_frame_ends(data)[:-1]]
        yield "inside every prelude", [s + k for s in starts for k in (1, 4, 8, 11)]
        yield "around every message CRC", [e - k for e in _frame_ends(data) for k in (1, 4, 5)]
        yield "one event per piece", _boundaries(data)
        return
    yield "between every CR and LF", [i + 1 for i in range(len(data) - 1) if data[i : i + 2] == b"\r\n"]
    # a UTF-8 continuation byte starts no character: cut just before each one
    yield "inside every UTF-8 character", [i for i, b in enumerate(data) if 0x80 <= b < 0xC0]
    yield "after every 'data:'", [m.end() for m in re.finditer(rb"data:", data)]
    yield "before every line end", [m.start() for m in re.finditer(rb"[\r\n]", data)]
    yield "one event per piece", _boundaries(data)


@pytest.mark.parametrize(("rel", "wire"), CASES)
def test_split_invariance(rel: str, wire: str) -> None:
    data = fixture_bytes(rel)
    expected = _whole(rel)
    if len(data) < TINY:
        for k in range(1, len(data)):
            _assert_same(_decode([data[:k], data[k:]], wire), expected, f"{rel}: split at {k}")
    if len(data) < SMALL:
        _assert_same(
            _decode([data[i : i + 1] for i in range(len(data))], wire), expected, f"{rel}: byte by byte"
        )
        # every offset is a cut in exactly one of these feeds, with STRIDE-byte pieces
        # (several short lines in one piece, a long line across several)
        for shift in range(1, STRIDE + 1):
            pieces = split_at(data, range(shift, len(data), STRIDE))
            _assert_same(_decode(pieces, wire), expected, f"{rel}: every {STRIDE} bytes from {shift}")
    rng = random.Random(_seed(rel, "split"))
    for trial in range(RANDOM_SPLITS):
        most = max(2, len(data) // 16) if trial % 4 == 3 else 64  # now and then, many small pieces
        cuts = rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, most)))
        _assert_same(
            _decode(split_at(data, cuts), wire), expected, f"{rel}: trial {trial}, cuts {sorted(cuts)}"
        )
    for name, cuts in _adversarial_splits(data):
        _assert_same(_decode(split_at(data, cuts), wire), expected, f"{rel}: {name}")
    if _binary(data):
        return
    lf = data.replace(b"\r\n", b"\n")  # the same events framed with each kind of line end
    for name, variant in (("LF", lf), ("CRLF", lf.replace(b"\n", b"\r\n")), ("CR", lf.replace(b"\n", b"\r"))):
        _assert_same(_decode(variant, wire), expected, f"{rel}: framed with {name}")


# --------------------------------------------------------------------------- cut anywhere


def _boundaries(data: bytes) -> list[int]:
    """Offsets just after each blank line (the event dispatch points), in order; for an
    event-stream body, the end of every frame."""
    if _binary(data):
        return _frame_ends(data)
    out: list[int] = []
    line_start = 0
    for m in re.finditer(rb"\r\n|\r|\n", data):
        if m.start() == line_start:
            out.append(m.end())
        line_start = m.end()
    return out


_STRING_OR_NUMBER = re.compile(rb'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*')


def _shape(event: bytes) -> bytes:
    """An event with each non-empty string and each number blanked: events of one shape
    (another text delta, another argument fragment) take the same path through the
    decoder. An event-stream frame's shape is that of its payload JSON (from its first
    ``{``; lengths and CRCs left out)."""
    if _binary(event):
        event = event[event.find(b"{") : -4]
    return _STRING_OR_NUMBER.sub(lambda m: m[0] if m[0] == b'""' else b"_", event)


def _cut_points(data: bytes) -> list[int]:
    """Event boundaries to cut at, plus the CR of each CRLF blank line there (a trailing
    CR is a line end, so a cut there dispatches too).

    Every boundary while there are at most MAX_BOUNDARIES; beyond that, every boundary
    next to a change of event shape (the first and last event of each run of same-shaped
    events) plus a seeded sample of the boundaries inside such runs, MAX_BOUNDARIES in all.
    """
    ends = _boundaries(data)
    chosen = set(ends)
    if len(ends) > MAX_BOUNDARIES:
        shapes = [_shape(data[start:end]) for start, end in zip([0, *ends], ends)]
        shapes.append(_shape(data[ends[-1] :]))  # what follows the last blank line
        # boundary i lies between event i and event i + 1
        edges = {end for i, end in enumerate(ends) if shapes[i] != shapes[i + 1] or (i and shapes[i - 1] != shapes[i])}
        inner = [end for end in ends if end not in edges]
        rng = random.Random(_seed(repr(ends[:3]), "sample"))
        chosen = edges | set(rng.sample(inner, max(0, min(len(inner), MAX_BOUNDARIES - len(edges)))))
    points = {0, len(data)}
    for end in chosen:
        points.add(end)
        if data[end - 2 : end] == b"\r\n":
            points.add(end - 1)
    return sorted(points)


def _ended_blocks(chunks: Sequence[StreamChunk]) -> dict[int, Block]:
    return {c.index: c.block for c in chunks if isinstance(c, BlockEnd)}


def _raw_arguments(block: ToolCallBlock) -> str:
    return block.raw_arguments if block.raw_arguments is not None else block.arguments


_UNPARSED = object()


def _contained(part: Any, whole: Any) -> bool:
    """Whether JSON value ``part`` is a truncation of ``whole``: every key and element it
    has is in ``whole``, strings and numbers may stop early."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and _contained(v, whole[k]) for k, v in part.items())
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(part) <= len(whole)
            and all(_contained(p, w) for p, w in zip(part, whole))
        )
    if isinstance(part, str):
        return isinstance(whole, str) and whole.startswith(part)
    if isinstance(part, (int, float)) and not isinstance(part, bool):
        return (
            isinstance(whole, (int, float))
            and not isinstance(whole, bool)
            and json.dumps(whole).startswith(json.dumps(part).rstrip("0").rstrip("."))
        )
    return bool(part == whole)


def _check_partial_block(index: int, got: Block, full: Block, context: str) -> None:
    if got == full:
        return
    where = f"{context}: block {index}: {got!r} vs full {full!r}"
    assert type(got) is type(full), where
    if isinstance(got, (TextBlock, ReasoningBlock)):
        assert isinstance(full, (TextBlock, ReasoningBlock))
        assert full.text.startswith(got.text), where
        if isinstance(got, ReasoningBlock) and isinstance(full, ReasoningBlock):
            assert got.signature in (None, full.signature), where
    elif isinstance(got, ToolCallBlock):
        assert isinstance(full, ToolCallBlock)
        assert got.arguments_truncated, f"tool call cut short is not marked truncated: {where}"
        if got.raw_arguments is not None:  # the text as streamed so far
            assert _raw_arguments(full).startswith(got.raw_arguments), where
        # the repaired arguments are JSON holding nothing the full call does not (no
        # invented key or value); wires that stream parsed pieces (Gemini partialArgs)
        # drop an unfinished value rather than keep a textual prefix of it
        try:
            full_value = json.loads(full.arguments)
        except ValueError:
            full_value = _UNPARSED
        if full_value is not _UNPARSED:
            assert _contained(json.loads(got.arguments), full_value), where
        assert full.name.startswith(got.name), where
        assert got.id in (full.id, f"call-{index}"), where
    else:
        raise AssertionError(where)


def _check_cut(got: list[StreamChunk], full: Sequence[StreamChunk], sent: bytes, context: str) -> None:
    """``got`` (the chunks of ``sent``, a truncated stream) against ``full`` (the whole
    stream's)."""
    list(check_contract(got))
    if got == list(full):
        return
    finish = got[-1]
    full_finish = full[-1]
    assert isinstance(finish, Finish) and isinstance(full_finish, Finish)
    blocks = _ended_blocks(got)
    full_blocks = _ended_blocks(full)
    reason = finish.reason
    failure = reason.failure
    closed = failure is not None and failure.code == "STREAM_CLOSED"
    if reason == full_finish.reason and not closed:
        # The provider's final word arrived before the cut (its terminal marker did not):
        # everything it finished is there.
        assert blocks == full_blocks, f"{context}: a completed cut lost or changed blocks"
        return
    if not closed:
        # A finish that is not the whole stream's must still be one the provider sent
        # before the cut (a finish_reason later overridden by an in-band error), never an
        # invented one.
        assert reason.raw is not None and json.dumps(reason.raw).encode() in sent, (
            f"{context}: invented finish {reason!r}; the whole stream ends {full_finish.reason!r}"
        )
    else:
        assert reason.kind == "error", context
    # A cut before the server's answer to a call it ran (Gemini functionResponse): that
    # call is all the stream says so far, the client's to run.
    server_run = [
        (entry.get("name"), entry.get("arguments"))
        for entry in (full_finish.metadata.server_tools if full_finish.metadata else ())
        if entry.get("type") == "function_call"
    ]
    for index, block in list(blocks.items()):
        if (
            isinstance(block, ToolCallBlock)
            and not isinstance(full_blocks.get(index), ToolCallBlock)
            and (block.name, json.loads(block.arguments)) in server_run
        ):
            del blocks[index]
    assert set(blocks) <= set(full_blocks), f"{context}: blocks {sorted(blocks)} not in the full result"
    for index, block in blocks.items():
        _check_partial_block(index, block, full_blocks[index], context)


@pytest.mark.parametrize(("rel", "wire"), CASES)
def test_cut_anywhere(rel: str, wire: str) -> None:
    data = fixture_bytes(rel)
    full = _whole(rel)
    points = _cut_points(data)
    at_point: dict[int, list[StreamChunk]] = {}
    for k in points:
        got = _decode(data[:k], wire)
        _check_cut(got, full, data[:k], f"{rel}: cut at event boundary {k}")
        at_point[k] = got
    assert at_point[len(data)] == list(full)

    # A cut inside an event discards that event: same result as the cut just before it.
    rng = random.Random(_seed(rel, "cut"))
    all_boundaries = sorted({0, *_boundaries(data), *(p for p in points)})
    count = RANDOM_CUTS if len(data) < SMALL else RANDOM_CUTS_LARGE
    for k in sorted(rng.sample(range(1, len(data)), min(count, len(data) - 1))):
        got = _decode(data[:k], wire)
        before = max(p for p in all_boundaries if p <= k)
        if before in at_point:
            _assert_same(got, at_point[before], f"{rel}: cut at {k} vs cut at boundary {before}")
        else:  # a sampled-out boundary: check it on its own
            _check_cut(got, full, data[:k], f"{rel}: cut at offset {k}")


# ------------------------------------------------------ partial output before a malformed event

_SSE_FIXTURES = [f for f in all_fixtures() if f.endswith(".sse")]


def _with_malformed_event(data: bytes) -> tuple[bytes, int]:
    """The recording with an invalid-JSON event after its third event (or its last, when
    shorter), and the offset where the bad event starts."""
    sep = b"\r\n\r\n" if b"\r\n\r\n" in data[:4096] else b"\n\n"
    ends = [m for m in range(len(data)) if data.startswith(sep, m)][:3]
    at = (ends[-1] + len(sep)) if ends else 0
    return data[:at] + b"data: {not json" + sep + data[at:], at


@pytest.mark.parametrize("relative", _SSE_FIXTURES)
def test_chunks_before_a_malformed_event_survive_every_split(relative: str) -> None:
    # Issue 28 item 3: the chunks decoded before a bad event were lost when the bad event
    # came in the same read. Now the stream ends in band with MALFORMED_RESPONSE (or at its
    # own finish, when that came first) and the output is the same however the network splits it.
    data, at = _with_malformed_event(fixture_bytes(relative))
    wire = fixture_wire(relative)
    whole = decode_all(data, wire)
    assert list(check_contract(whole)) == whole
    rng = random.Random(relative)
    splits = [[at], [at + 3], [at - 1, at + 1], *(sorted(rng.sample(range(1, len(data)), 3)) for _ in range(6))]
    for cuts in splits:
        assert decode_all(split_at(data, cuts), wire) == whole, (relative, cuts)
    prefix = decode_all(data[:at], wire)
    delivered = [c for c in prefix if not isinstance(c, Finish)]
    assert whole[: len(delivered)] == delivered  # nothing decoded before the bad event is lost
    finish = whole[-1]
    assert isinstance(finish, Finish)
    if not any(isinstance(c, Finish) for c in prefix):
        assert finish.reason.failure is not None and finish.reason.failure.code == "MALFORMED_RESPONSE"
