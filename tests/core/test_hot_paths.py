"""The per-event fast paths (issue #21) agree with the general paths they shortcut.

Also: ``loads_event``'s backslash gate never skips a lone surrogate, and
``ChunkStream.result()``'s batch loop tells the watch what iteration tells it.

With one event per read (what providers send) each stage has a fast path: the SSE
decoder's whole-event shortcut (LF and CRLF, ``data:`` alone or after ``event:``), the
translator's inlined default ``on_event``, the chat wire's filter bypass once the
pipeline is a pass-through, and the delta chunks built slot by slot. Each test here feeds
the same input through the shortcut and through the general path and compares.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._chunk_stream import ChunkStream
from dshstream._core.decode import StreamDecoder, translator_for
from dshstream._core.errors import make_failure
from dshstream._core import strict_json
from dshstream._core.strict_json import fix_surrogates, loads_event
from dshstream._core.sse import ServerSentEvent, SSEDecoder, SSEItem
from dshstream._core.types import (
    BlockStart,
    Finish,
    FinishReason,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallDelta,
)
from dshstream._core.wires.deltas import (
    _delta_maker,
    reasoning_delta,
    text_delta,
    tool_call_delta,
)
from dshstream._core.wires.openai_chat import OpenAIChatTranslator
from dshstream._core.wires.writer import ChunkWriter
from helpers import all_fixtures, fixture_bytes, fixture_wire

# --------------------------------------------------------------------------- SSE


def _bytewise(data: bytes) -> list[SSEItem]:
    """The general path: one byte per feed (never a whole event)."""
    decoder = SSEDecoder()
    out: list[SSEItem] = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
    return out


def _per_event(pieces: Sequence[bytes]) -> list[SSEItem]:
    """Each piece fed whole, after a first byte that clears the BOM check."""
    decoder = SSEDecoder()
    out = decoder.feed(b":\n")
    for piece in pieces:
        out += decoder.feed(piece)
    return out


_SHAPES = [
    b"data: {}\n\n",
    b"data:{}\n\n",
    b"data:\n\n",
    b"data: \n\n",
    b"data:  two spaces\n\n",
    b"event: delta\ndata: {\"a\": 1}\n\n",
    b"event:delta\ndata:x\n\n",
    b"event:\ndata: x\n\n",
    b"event: \ndata:\n\n",
    b"event: e\ndata: a\ndata: b\n\n",
    b"event: e\n\n",
    b"id: 7\ndata: x\n\n",
    b"retry: 10\ndata: x\n\n",
    b": ping\n\n",
    b"data: caf\xc3\xa9 \xff\n\n",
    b"data: x\r\n\r\n",
    b"data:x\r\n\r\n",
    b"data:\r\n\r\n",
    b"event: e\r\ndata: x\r\n\r\n",
    b"event:\r\ndata:\r\n\r\n",
    b"event: e\r\ndata: a\r\ndata: b\r\n\r\n",
    b"data: a\rb\r\n\r\n",
    b"data: a\nb\r\n\r\n",
    b"event: e\ndata: x\r\n\r\n",
    b"data: x\r\n\r\ndata: y\r\n\r\n",
    b"data: x\n\ndata: y\n\n",
    b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n",
]


@pytest.mark.parametrize("shape", _SHAPES, ids=[repr(s)[2:30] for s in _SHAPES])
def test_whole_event_shapes_match_the_bytewise_decoder(shape: bytes) -> None:
    data = b":\n" + shape * 3
    assert _per_event([shape] * 3) == _bytewise(data)


def test_id_persists_through_the_fast_path() -> None:
    pieces = [b"id: 1\ndata: a\n\n", b"data: b\n\n", b"event: e\ndata: c\n\n", b"data: d\r\n\r\n"]
    events = _per_event(pieces)
    assert [(getattr(e, "id", None), getattr(e, "data", None)) for e in events[1:]] == [
        ("1", "a"),
        ("1", "b"),
        ("1", "c"),
        ("1", "d"),
    ]


_line = st.sampled_from(
    ["data: x", "data:y", "data:", "event: t", "event:", "id: 3", ": c", "retry: 5", "data: é", "x"]
)
_event = st.lists(_line, min_size=0, max_size=3)
_eol = st.sampled_from(["\n", "\r\n", "\r"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_event, _eol), min_size=1, max_size=6))
def test_any_whole_events_match_the_bytewise_decoder(events: list[tuple[list[str], str]]) -> None:
    pieces = [("".join(line + eol for line in lines) + eol).encode() for lines, eol in events]
    assert _per_event(pieces) == _bytewise(b":\n" + b"".join(pieces))


def test_an_event_over_the_limit_still_fails_on_the_fast_path() -> None:
    from dshstream._core.errors import LlmError

    decoder = SSEDecoder(max_event_size=16)
    decoder.feed(b"\n")  # past the BOM check, no event begun
    assert decoder.feed(b"data: 12345678\n\n")  # 16 bytes: at the limit
    with pytest.raises(LlmError) as info:
        decoder.feed(b"data: 1234567890123456\n\n")
    assert info.value.failure.code == "EVENT_TOO_LARGE"


def _fed_with(pieces: Sequence[bytes], first: bytes = b":\n") -> tuple[list[SSEItem], list[str]]:
    """Each piece through ``feed_with`` after ``first`` (past the BOM check): the items, with
    each whole event rebuilt from the strings it handed on, and which way each piece went."""
    decoder = SSEDecoder()
    ways: list[str] = []

    def one(event: str, data: str, last_id: str | None) -> list[SSEItem]:
        ways.append("event")
        return [ServerSentEvent(event, data, last_id)]

    def items(found: list[SSEItem]) -> list[SSEItem]:
        ways.append("items")
        return found

    out = decoder.feed_with(first, one, items)
    for piece in pieces:
        out += decoder.feed_with(piece, one, items)
    return out, ways[1:]


_shortcut_line = st.sampled_from(
    ["data: x", "data:y", "data:", "data: ", "data:  z", "event: t", "event:", "event:t", "id: 3", "id:",
     ": c", ":", "retry: 5", "retry: x", "data: é", "data: a\rb", "x", "datax: 1", "event: a b"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.lists(_shortcut_line, min_size=0, max_size=4), _eol), min_size=1, max_size=6))
def test_feed_with_hands_on_the_same_events_as_feed_and_the_bytewise_decoder(
    events: list[tuple[list[str], str]]
) -> None:
    """The whole-event shortcut (``feed_with``'s strings) against the general parser: CR,
    comments, multi-line data, ``id:``/``retry:`` fields, and events split across reads."""
    pieces = [("".join(line + eol for line in lines) + eol).encode() for lines, eol in events]
    got, _ = _fed_with(pieces)
    assert got == _per_event(pieces) == _bytewise(b":\n" + b"".join(pieces))
    # the same bytes cut anywhere else: the general path and the shortcut agree
    joined = b"".join(pieces)
    for cut in (1, 2, 3, 7):
        split = [joined[i : i + cut] for i in range(0, len(joined), cut)]
        assert _fed_with(split)[0] == _bytewise(b":\n" + joined)


def test_feed_with_takes_the_shortcut_for_the_common_shapes_only() -> None:
    whole = [b"data: {}\n\n", b"data:x\n\n", b"event: e\ndata: x\n\n", b"data: x\r\n\r\n",
             b"event: e\r\ndata: x\r\n\r\n"]
    other = [b"data: a\ndata: b\n\n", b"id: 1\ndata: x\n\n", b": ping\n\n", b"retry: 5\ndata: x\n\n",
             b"data: a\rb\r\n\r\n", b"event: e\ndata: x\r\n\r\n", b"data: x\n\ndata: y\n\n", b"data: x\n"]
    for piece in whole:
        assert _fed_with([piece], b"\n")[1] == ["event"], piece
    for piece in other:
        assert _fed_with([piece], b"\n")[1] == ["items"], piece


def test_feed_with_carries_the_last_event_id() -> None:
    got, ways = _fed_with([b"id: 7\ndata: a\n\n", b"data: b\n\n", b"event: e\r\ndata: c\r\n\r\n"], b"\n")
    assert ways == ["items", "event", "event"]
    assert [(e.id, e.data) for e in got if type(e) is ServerSentEvent] == [("7", "a"), ("7", "b"), ("7", "c")]


# --------------------------------------------------------------------------- delta chunks


@given(st.integers(min_value=0, max_value=10**6), st.text())
def test_text_and_reasoning_deltas_equal_their_constructors(index: int, text: str) -> None:
    made = text_delta(index, text)
    assert type(made) is TextDelta and made == TextDelta(index, text)
    assert hash(made) == hash(TextDelta(index, text))
    thought = reasoning_delta(index, text)
    assert type(thought) is ReasoningDelta and thought == ReasoningDelta(index, text)


@given(st.integers(min_value=0), st.text(), st.none() | st.text(), st.text())
def test_tool_call_deltas_equal_their_constructor(index: int, call_id: str, name: str | None, args: str) -> None:
    made = tool_call_delta(index, call_id, name, args)
    assert type(made) is ToolCallDelta and made == ToolCallDelta(index, call_id, name, args)
    assert repr(made) == repr(ToolCallDelta(index, call_id, name, args))


@given(st.text(min_size=1), st.text(min_size=1), st.none() | st.text(min_size=1), st.text())
def test_the_writers_inline_deltas_equal_their_constructors(
    text: str, call_id: str, name: str | None, args: str
) -> None:
    """deltas rule 4: the writer's inline text, reasoning and tool-call deltas are the
    classes' own."""
    writer = ChunkWriter(provider="test")
    writer.text("t", text)
    writer.tool_call("c", call_id, name, args)
    writer.reasoning("r", text)
    made = [chunk for chunk in writer.take() if type(chunk) in (TextDelta, ToolCallDelta, ReasoningDelta)]
    expected = [TextDelta(0, text), ToolCallDelta(1, call_id, name, args), ReasoningDelta(2, text)]
    assert made == expected
    assert [type(chunk) for chunk in made] == [TextDelta, ToolCallDelta, ReasoningDelta]
    assert [repr(chunk) for chunk in made] == [repr(chunk) for chunk in expected]
    assert [hash(chunk) for chunk in made] == [hash(chunk) for chunk in expected]


def test_the_delta_maker_refuses_classes_it_would_build_wrongly() -> None:
    @dataclass(frozen=True)
    class Unslotted:
        index: int
        text: str

    @dataclass(frozen=True, slots=True)
    class Checked:
        index: int
        text: str

        def __post_init__(self) -> None:
            raise AssertionError

    with pytest.raises(TypeError):
        _delta_maker(Unslotted)  # type: ignore[type-var]
    with pytest.raises(TypeError):
        _delta_maker(Checked)  # type: ignore[type-var]


# --------------------------------------------------------------------------- translators

_SSE_FIXTURES = [rel for rel in all_fixtures() if fixture_wire(rel) not in ("bedrock-converse", "bedrock-invoke")]


def _events(rel: str) -> list[Any]:
    decoder = SSEDecoder()
    return decoder.feed(fixture_bytes(rel)) + decoder.close()


@pytest.mark.parametrize("rel", _SSE_FIXTURES)
def test_feed_data_matches_feed_events(rel: str) -> None:
    """``Translator.feed_data`` (one whole event as its strings: the shortcut's path) against
    ``feed_events`` of the same event, for every wire (default dispatch or its own
    ``on_event``)."""
    wire = fixture_wire(rel)
    by_data = translator_for(wire)
    by_events = translator_for(wire)
    got: list[StreamChunk] = []
    expected: list[StreamChunk] = []
    for event in _events(rel):
        if type(event) is ServerSentEvent:
            got += by_data.feed_data(event.event, event.data, event.id)
            expected += by_events.feed_events([event])
    assert got + by_data.close() == expected + by_events.close()


@pytest.mark.parametrize("rel", _SSE_FIXTURES)
def test_batched_events_match_one_event_at_a_time(rel: str) -> None:
    """``feed_events`` (the inlined default ``on_event``) against ``feed`` per event."""
    wire = fixture_wire(rel)
    events = _events(rel)
    batched = translator_for(wire)
    one_by_one = translator_for(wire)
    expected: list[StreamChunk] = []
    for event in events:
        if type(event).__name__ == "ServerSentEvent":
            expected += one_by_one.feed(event)
    expected += one_by_one.close()
    got = batched.feed_events(events) + batched.close()
    assert got == expected


class _AlwaysFiltered(OpenAIChatTranslator):
    """The chat wire without the filter bypass: every content delta through the pipeline."""

    def _filtered_content(self, text: str) -> None:
        assert self._filters is not None
        self._filters.content(text)


_CHAT_FIXTURES = [rel for rel in all_fixtures() if isinstance(translator_for(fixture_wire(rel)), OpenAIChatTranslator)]


@pytest.mark.parametrize("think_tags", [False, True])
@pytest.mark.parametrize("rel", _CHAT_FIXTURES)
def test_the_filter_bypass_changes_nothing(rel: str, think_tags: bool) -> None:
    wire = fixture_wire(rel)
    data = fixture_bytes(rel)
    dialect = translator_for(wire).dialect.name  # type: ignore[attr-defined]
    fast = StreamDecoder(OpenAIChatTranslator(dialect=dialect, think_tags=think_tags))
    slow = StreamDecoder(_AlwaysFiltered(dialect=dialect, think_tags=think_tags))
    assert fast.feed(data) + fast.close() == slow.feed(data) + slow.close()


def test_the_bypass_waits_for_the_spill_guard_to_settle() -> None:
    """Reasoning first arms the guard: the first content goes through it (a spilled
    fragment moves to reasoning); later content goes straight to the writer."""
    body = (
        b'data: {"choices":[{"index":0,"delta":{"reasoning_content":"Think about it"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"carefully.The answer"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":" is 4."}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    fast = StreamDecoder(OpenAIChatTranslator(dialect="deepseek"))
    slow = StreamDecoder(_AlwaysFiltered(dialect="deepseek"))
    pieces = [e + b"\n\n" for e in body.split(b"\n\n") if e]
    got = [c for p in pieces for c in fast.feed(p)] + fast.close()
    want = [c for p in pieces for c in slow.feed(p)] + slow.close()
    assert got == want
    assert [c.text for c in got if type(c) is ReasoningDelta] == ["Think about it", "carefully."]
    assert [c.text for c in got if type(c) is TextDelta] == ["The answer", " is 4."]


# --------------------------------------------------------------------------- JSON payloads


@settings(max_examples=300, deadline=None)
@given(
    st.recursive(
        st.text() | st.integers() | st.none(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=8,
    )
)
def test_loads_event_equals_json_loads_with_lone_surrogates_replaced(value: Any) -> None:
    # The backslash gate must never skip a payload that carries a lone-surrogate escape
    # (json.dumps escapes every non-ASCII character, lone surrogates included).
    text = json.dumps(value)
    assert loads_event(text) == fix_surrogates(json.loads(text))
    assert loads_event(f" {text} ") == fix_surrogates(json.loads(text))  # the json.loads path


def test_loads_event_gate_cases() -> None:
    assert loads_event('{"a":"\\ud83d"}') == {"a": "\ufffd"}
    assert loads_event('{"a":"\\uD83D x"}') == {"a": "\ufffd x"}
    assert loads_event('{"\\udfff":1}') == {"\ufffd": 1}
    assert loads_event('{"a":"\\ud83d\\ude00"}') == {"a": "\U0001f600"}  # a pair is one character
    assert loads_event('{"a":"\\\\ud800"}') == {"a": "\\ud800"}  # an escaped backslash, no surrogate
    assert loads_event('{"a":"plain \\n"}') == {"a": "plain \n"}
    assert loads_event('{"a":"no escapes"}') == {"a": "no escapes"}


# --------------------------------------------------------------------------- ChunkStream.result()


class _Watch:
    """What ChunkStream tells its watch, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def follow(self, stream: object, assembler: object, source: object) -> None:
        self.calls.append(("follow", None))

    def received(self, batch: list[StreamChunk]) -> None:
        self.calls.append(("received", len(batch)))

    def finish(self) -> None:
        self.calls.append(("finish", None))

    def failed(self, exc: BaseException) -> None:
        self.calls.append(("failed", type(exc).__name__))


def _batches() -> list[list[StreamChunk]]:
    return [
        [BlockStart(index=0, block_type="text")],
        [],
        [text_delta(0, "Hel")],
        [text_delta(0, "l"), text_delta(0, "o")],
        [Finish(reason=FinishReason(kind="stop")), text_delta(0, "after the finish")],
    ]


def _iterated_result(batches: list[list[StreamChunk]], take: int) -> tuple[Any, list[tuple[str, Any]], bool]:
    watch = _Watch()
    closed: list[bool] = []

    def source() -> Iterator[list[StreamChunk]]:
        try:
            yield from batches
        finally:
            closed.append(True)

    stream = ChunkStream(source(), watch=watch)  # type: ignore[arg-type]
    for _ in range(take):
        next(stream)
    result = stream.result()
    assert stream.done
    return result, watch.calls, bool(closed)


@pytest.mark.parametrize("take", [0, 1, 2, 3, 4])
def test_result_after_any_prefix_of_iteration_is_the_same(take: int) -> None:
    expected, calls, closed = _iterated_result(_batches(), 0)
    assert expected.text == "Hello" and expected.finish.kind == "stop" and closed
    assert calls == [("follow", None), ("received", 1), ("received", 1), ("received", 2), ("received", 2), ("finish", None)]
    result, calls_after, closed = _iterated_result(_batches(), take)
    assert (result.text, result.finish, result.blocks) == (expected.text, expected.finish, expected.blocks)
    assert calls_after == calls and closed


def test_result_of_a_source_that_ends_without_a_finish_reports_the_end_once() -> None:
    watch = _Watch()
    stream = ChunkStream(iter([[BlockStart(index=0, block_type="text")], [text_delta(0, "cut")]]), watch=watch)  # type: ignore[arg-type]
    assert stream.result().text == "cut"
    assert stream.done
    assert watch.calls[1:] == [("received", 1), ("received", 1), ("finish", None)]
    stream.result()
    assert watch.calls.count(("finish", None)) == 1


def test_result_reports_a_failing_source_but_not_a_failing_push() -> None:
    def broken() -> Iterator[list[StreamChunk]]:
        yield [BlockStart(index=0, block_type="text")]
        raise RuntimeError("source broke")

    watch = _Watch()
    stream = ChunkStream(broken(), watch=watch)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="source broke"):
        stream.result()
    assert watch.calls[-1] == ("failed", "RuntimeError")

    watch = _Watch()
    stream = ChunkStream(iter([[text_delta(0, "x")]]), watch=watch)  # type: ignore[arg-type]

    def push(chunk: StreamChunk) -> None:
        raise ValueError("assembler bug")

    stream._assembler.push = push  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="assembler bug"):
        stream.result()
    assert ("failed", "ValueError") not in watch.calls


def test_keyboard_interrupt_in_result_aborts_and_keeps_the_partial_result() -> None:
    def interrupted() -> Iterator[list[StreamChunk]]:
        yield [BlockStart(index=0, block_type="text"), text_delta(0, "partial")]
        raise KeyboardInterrupt

    watch = _Watch()
    stream = ChunkStream(interrupted(), watch=watch)  # type: ignore[arg-type]
    with pytest.raises(KeyboardInterrupt):
        stream.result()
    assert stream.done and not stream._running
    partial = stream.partial()
    assert partial.text == "partial" and partial.finish.kind == "aborted"
    assert watch.calls.count(("finish", None)) == 1


def test_close_from_another_thread_during_result_ends_the_stream_through_cancel() -> None:
    cancel = threading.Event()
    reading = threading.Event()

    def slow() -> Iterator[list[StreamChunk]]:
        yield [BlockStart(index=0, block_type="text"), text_delta(0, "a")]
        reading.set()
        assert cancel.wait(30), "close() never reached the source"
        yield [Finish(reason=FinishReason(kind="aborted", failure=make_failure("ABORTED", "closed")))]

    stream = ChunkStream(slow(), cancel=cancel)
    def close_when_reading() -> None:
        reading.wait(30)
        stream.close()

    closer = threading.Thread(target=close_when_reading)
    closer.start()
    started = time.monotonic()
    result = stream.result()
    closer.join()
    assert time.monotonic() - started < 10
    assert result.text == "a" and result.finish.kind == "aborted" and stream.done


# --------------------------------------------------------------------------- rate-limit stamp


def _batches_ending_with_a_finish() -> Generator[list[StreamChunk], None, None]:
    from dshstream._core.types import FinishReason, TextDelta

    yield [TextDelta(index=0, text="a")]
    yield [Finish(reason=FinishReason("stop"))]


def test_no_rate_limit_headers_leave_the_batches_generator_itself() -> None:
    """No layer to resume per read when there is nothing to stamp; the stamp otherwise."""
    from dshstream._core.rate_limits import stamp_rate_limits

    plain = _batches_ending_with_a_finish()
    assert stamp_rate_limits(plain, {"content-type": "text/event-stream"}) is plain
    assert stamp_rate_limits(plain, None) is plain
    stamped = list(stamp_rate_limits(_batches_ending_with_a_finish(), {"x-ratelimit-remaining-requests": "7"}))
    finish = stamped[-1][-1]
    assert isinstance(finish, Finish) and finish.metadata is not None and finish.metadata.rate_limits is not None
    assert finish.metadata.rate_limits.remaining_requests == 7
    assert stamped[0] == [_batches_ending_with_a_finish().__next__()[0]]


# --------------------------------------------------------------------------- feed_data's JSON


class _Recorder(OpenAIChatTranslator):
    """Default dispatch; records what ``on_payload`` is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.payloads: list[Any] = []

    def on_payload(self, event: str, payload: Any) -> None:
        self.payloads.append(payload)


def _through_feed_data(text: str) -> tuple[str, Any]:
    """``feed_data`` on the standard-library path (the inlined case; with the fastjson
    extra installed, the suite's default, it calls ``loads_event``)."""
    recorder = _Recorder()
    fast = strict_json._fast_decode
    strict_json._fast_decode = None
    try:
        chunks = recorder.feed_data("message", text, None)
    finally:
        strict_json._fast_decode = fast
    if recorder.payloads:
        return ("value", recorder.payloads[0])
    finish = chunks[-1]
    assert type(finish) is Finish and finish.reason.failure is not None
    return ("malformed", finish.reason.failure.code)


def _through_loads_event(text: str) -> tuple[str, Any]:
    fast = strict_json._fast_decode
    strict_json._fast_decode = None
    try:
        return ("value", loads_event(text))
    except ValueError:
        return ("malformed", "MALFORMED_RESPONSE")
    finally:
        strict_json._fast_decode = fast


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_json_values, pad=st.sampled_from(["", " ", "\n", " \t"]), where=st.sampled_from(["none", "left", "right"]))
def test_feed_data_parses_as_loads_event(value: Any, pad: str, where: str) -> None:
    """``feed_data`` inlines ``loads_event``'s standard-library case (translator rule 3):
    whatever the text, ``on_payload`` gets what ``loads_event`` returns, or the stream ends
    ``MALFORMED_RESPONSE`` where it raises (NaN spelled as JSON, padding, escapes)."""
    text = json.dumps(value)
    text = pad + text if where == "left" else text + pad if where == "right" else text
    got, expected = _through_feed_data(text), _through_loads_event(text)
    assert repr(got) == repr(expected)  # repr: NaN == NaN


@pytest.mark.parametrize(
    "text",
    ['"\\ud800"', '{"a":"x\\udfffy"}', '{"\\ud83d":1}', '"\\ud83d\\ude00"', "NaN", "-Infinity", "", "{", "{}x",
     " {}", "[1,]", '{"a":1}{"b":2}', "[" * 5000 + "]" * 5000, "[" * 100_000, "1e999", '"\\u00e9"'],
)
def test_feed_data_parses_the_edge_cases_as_loads_event(text: str) -> None:
    assert repr(_through_feed_data(text)) == repr(_through_loads_event(text))
