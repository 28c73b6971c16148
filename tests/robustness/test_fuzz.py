"""Fuzzing every wire: only ``LlmError`` escapes, output keeps the contract, memory and
time stay bounded.

Inputs, fed in random pieces to ``decode`` for each wire of :data:`FUZZ_WIRES` (every
non-chat wire plus representative chat dialects: plain, think tags on, OpenRouter):

- real fixture events mutated: a random value replaced by a JSON value of another type
  (null, bool, numbers, ``10**400``, ±inf/NaN, strings, lists, a dict 50 deep), keys
  dropped or added, whole payloads replaced, payloads cut mid-JSON, events renamed,
  duplicated, dropped or borrowed from another wire, invalid UTF-8 and NUL bytes spliced in;
- SSE-shaped byte soup (field names, line ends, BOMs, brackets, huge digit strings).

After each input: no exception but :class:`LlmError`; the chunks (with a synthetic error
``Finish`` appended when an ``LlmError`` cut them short) pass ``check_contract``; the
assembler folds them and every chunk serializes to JSON.

``DSHSTREAM_FUZZ_EXAMPLES=N`` runs ``N`` examples per wire and per strategy with a random
seed (a campaign); without it the run is modest and derandomized (deterministic in CI).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshstream._core.assembler import BlockAssembler
from dshstream._core.contract import check_contract
from dshstream._core.decode import WIRES, decode
from dshstream._core.dialects import DIALECTS
from dshstream._core.errors import LlmError, ProtocolError
from dshstream._core.sse import ServerSentEvent, SSEDecoder
from dshstream._core.types import (
    BlockEnd,
    Finish,
    FinishReason,
    StreamChunk,
    TextDelta,
    ToolCallBlock,
    chunk_to_dict,
)

from helpers import all_fixtures, fixture_bytes, fixture_wire, split_at

CHAT_FAMILY = frozenset({"openai-chat", *DIALECTS})
#: every non-chat wire, and chat dialects that differ in behaviour: plain OpenAI, a
#: think-tag dialect (llamacpp), OpenRouter (reasoning_details), Mistral (content parts)
FUZZ_WIRES = [
    "anthropic", "gemini", "gemini-interactions", "openai-responses", "openai-chat", "llamacpp", "openrouter", "mistral",
]
assert all(w in WIRES for w in FUZZ_WIRES)
# the Bedrock wires are binary (AWS event-stream), not SSE: their framing is fuzzed in
# tests/core/test_eventstream.py and their payloads in tests/wires/test_bedrock*.py
_BEDROCK = ("bedrock-converse", "bedrock-invoke")
assert {w for w in WIRES if w not in CHAT_FAMILY and w not in _BEDROCK} <= set(FUZZ_WIRES)

_CAMPAIGN = os.environ.get("DSHSTREAM_FUZZ_EXAMPLES")
# 100 per wire: a wrong type in every field is test_wrong_type_in_every_field's (all of
# them, exhaustively), and cuts and splits of the real streams tests/robustness/test_corpus.py's
MUTATED_EXAMPLES = int(_CAMPAIGN) if _CAMPAIGN else 100
SOUP_EXAMPLES = int(_CAMPAIGN) if _CAMPAIGN else 100


def _fuzz_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=_CAMPAIGN is None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


#: a single input must never take this long (a quadratic path or a hang)
PER_INPUT_SECONDS = 10.0

tried: dict[str, int] = {}  # inputs fed per test, printed at the end of each test


# --------------------------------------------------------------------------- the corpus

Event = tuple[str, str]  # (event name, data)


def _events(data: bytes) -> list[Event]:
    decoder = SSEDecoder()
    items = decoder.feed(data) + decoder.close()
    return [(item.event, item.data) for item in items if isinstance(item, ServerSentEvent)]


def _family(wire: str) -> str:
    return "openai-chat" if wire in CHAT_FAMILY else wire


_CORPUS: dict[str, list[list[Event]]] = {}  # by wire family
_OWN_CORPUS: dict[str, list[list[Event]]] = {}  # by the wire that decodes the recording
for _rel in all_fixtures():
    _streamed = _events(fixture_bytes(_rel))
    _CORPUS.setdefault(_family(fixture_wire(_rel)), []).append(_streamed)
    _OWN_CORPUS.setdefault(fixture_wire(_rel), []).append(_streamed)
ALL_EVENTS: list[Event] = sorted({e for streams in _CORPUS.values() for s in streams for e in s})
EVENT_NAMES: list[str] = sorted({name for name, _ in ALL_EVENTS} | {"error", "ping", "message", ""})


def _keys(value: Any, out: set[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(key)
            _keys(item, out)
    elif isinstance(value, list):
        for item in value:
            _keys(item, out)


def _corpus_keys() -> list[str]:
    keys: set[str] = set()
    for _, data in ALL_EVENTS:
        try:
            _keys(json.loads(data), keys)
        except ValueError:
            pass
    return sorted(keys)


KEYS = _corpus_keys()


def _nested_dict(depth: int) -> Any:
    value: Any = {"leaf": 1}
    for _ in range(depth):
        value = {"k": value}
    return value


def _nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


SPECIAL_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, 2**63, -(2**63) - 1, 10**400, -(10**400), 1e308,
    float("inf"), float("-inf"), float("nan"), "", " ", "\x00", "\ud800", "x" * 10_000,
    "<think>", "</think>", "[DONE]", [], {}, [None], {"": None}, _nested_dict(50), _nested_list(50),
]

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.sampled_from(KEYS)
)
JSON_VALUES: st.SearchStrategy[Any] = st.sampled_from(SPECIAL_VALUES) | st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)


# --------------------------------------------------------------------------- mutation

Slot = tuple[Any, Any]  # (container, key or index)


def _slots(value: Any, out: list[Slot]) -> None:
    if isinstance(value, dict):
        for key in list(value):
            out.append((value, key))
            _slots(value[key], out)
    elif isinstance(value, list):
        for index in range(len(value)):
            out.append((value, index))
            _slots(value[index], out)


def _mutate_payload(draw: Callable[..., Any], payload: Any) -> Any:
    slots: list[Slot] = []
    _slots(payload, slots)
    op = draw(st.sampled_from(["replace", "replace", "replace", "drop", "add", "whole"]))
    if op == "whole" or not slots:
        return draw(JSON_VALUES)
    container, key = slots[draw(st.integers(0, len(slots) - 1))]
    if op == "replace":
        old = container[key]
        new = draw(JSON_VALUES.filter(lambda v: type(v) is not type(old)))
        container[key] = new
    elif op == "drop":
        del container[key]
    else:
        target = container[key] if isinstance(container[key], dict) else container
        if isinstance(target, dict):
            target[draw(st.sampled_from(KEYS))] = draw(JSON_VALUES)
        else:
            target.insert(draw(st.integers(0, len(target))), draw(JSON_VALUES))
    return payload


def _frame(events: Sequence[Event], crlf: bool) -> bytes:
    out: list[str] = []
    for name, data in events:
        lines = [] if name == "message" else [f"event: {name}"]
        lines += [f"data: {line}" for line in data.split("\n")]
        out.append("\n".join(lines) + "\n\n")
    text = "".join(out)
    if crlf:
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8", "surrogatepass")


_BYTE_SPLICES = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n", b"\n\n", b"\r\n\r\n", b":", b"data: ", b"\xf0\x9f"]


@st.composite
def mutated_streams(draw: Callable[..., Any], family: str) -> bytes:
    """A real stream of ``family``, its events mutated."""
    streams = _CORPUS[family]
    events: list[Event] = list(streams[draw(st.integers(0, len(streams) - 1))])
    for _ in range(draw(st.integers(1, 6))):
        if not events:
            events.append(draw(st.sampled_from(ALL_EVENTS)))
        position = draw(st.integers(0, len(events) - 1))
        name, data = events[position]
        op = draw(
            st.sampled_from(["payload"] * 6 + ["cut-json", "rename", "duplicate", "drop", "borrow", "huge-number"])
        )
        if op == "payload":
            try:
                payload = json.loads(data)
            except ValueError:
                continue
            events[position] = (name, json.dumps(_mutate_payload(draw, payload)))
        elif op == "cut-json" and data:
            events[position] = (name, data[: draw(st.integers(0, len(data) - 1))])
        elif op == "rename":
            events[position] = (draw(st.sampled_from(EVENT_NAMES) | st.text(max_size=10)), data)
        elif op == "duplicate":
            events.insert(position, events[position])
        elif op == "drop":
            del events[position]
        elif op == "borrow":
            events.insert(position, draw(st.sampled_from(ALL_EVENTS)))
        elif op == "huge-number":
            digits = draw(st.sampled_from(["9" * 400, "9" * 5000, "1e999", "-1e999", "1" + "0" * 30]))
            events[position] = (name, _replace_a_number(draw, data, digits))
    raw = _frame(events, crlf=draw(st.booleans()))
    for _ in range(draw(st.integers(0, 3))):  # invalid UTF-8, NUL bytes, stray line ends
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from(_BYTE_SPLICES)) + raw[at:]
    return raw


def _replace_a_number(draw: Callable[..., Any], data: str, digits: str) -> str:
    numbers = list(re.finditer(r"(?<=[:\[,])-?\d+(\.\d+)?([eE][-+]?\d+)?", data))
    if not numbers:
        return data
    m = numbers[draw(st.integers(0, len(numbers) - 1))]
    return data[: m.start()] + digits + data[m.end() :]


SOUP_ATOMS: list[bytes] = [
    b"data: ", b"data:", b"event: ", b"event:error", b"id: ", b"id:\x00", b"retry: 10", b": ping",
    b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n\r\n", b"\xef\xbb\xbf", b"[DONE]", b"{", b"}", b"[", b"]",
    b'"', b",", b":", b"null", b"true", b"1e999", b"-0", b"NaN", b"Infinity", str(10**400).encode(),
    b"9" * 5000, b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80", b'"choices"', b'"delta"', b'"content"',
    b'"type"', b'"candidates"', b'"parts"', b'"usage"', b'"error"', b'"index"', b'"text"',
]


@st.composite
def soup_streams(draw: Callable[..., Any], family: str) -> bytes:
    """SSE-shaped byte soup, with whole real events of ``family`` mixed in."""
    events = [e for s in _CORPUS[family] for e in s]
    atoms = st.sampled_from(SOUP_ATOMS) | st.binary(max_size=12) | st.sampled_from(events).map(
        lambda e: _frame([e], crlf=False)
    )
    return b"".join(draw(st.lists(atoms, max_size=60)))


# --------------------------------------------------------------------------- the oracle


def _pieces(draw: Callable[..., Any], data: bytes) -> list[bytes]:
    if len(data) < 2:
        return [data]
    cuts = draw(st.lists(st.integers(1, len(data) - 1), max_size=8))
    return split_at(data, cuts)


def run_wire(wire: str, pieces: Sequence[bytes], **options: Any) -> list[StreamChunk]:
    """Decode ``pieces`` on ``wire``; fail on anything but ``LlmError`` or a contract
    breach. Returns the chunks (cut short by an ``LlmError``, if one was raised)."""
    chunks: list[StreamChunk] = []
    started = time.monotonic()
    error: LlmError | None = None
    try:
        for chunk in decode(pieces, wire=wire, **options):
            chunks.append(chunk)
    except LlmError as exc:
        error = exc
    elapsed = time.monotonic() - started
    assert elapsed < PER_INPUT_SECONDS, f"{wire}: one input took {elapsed:.1f}s"
    checked = chunks
    if error is not None:  # a sanctioned raise: what came before must still be valid
        assert not any(type(c) is Finish for c in chunks), "raised after Finish"
        checked = chunks + [Finish(reason=FinishReason(kind="error", failure=error.failure))]
    list(check_contract(checked))
    assembler = BlockAssembler()
    assembler.extend(checked)
    assembler.result()
    for chunk in checked:
        json.dumps(chunk_to_dict(chunk))
    return chunks


def _count(name: str) -> None:
    tried[name] = tried.get(name, 0) + 1


@pytest.fixture(autouse=True)
def _report_count(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    name = request.node.name
    if name in tried:
        print(f"\n{name}: {tried[name]} inputs tried")


@pytest.mark.parametrize("wire", FUZZ_WIRES)
@_fuzz_settings(MUTATED_EXAMPLES)
@given(data=st.data())
def test_mutated_fixtures_only_raise_llm_errors(wire: str, data: st.DataObject) -> None:
    raw = data.draw(mutated_streams(_family(wire)), label="stream")
    _count(f"test_mutated_fixtures_only_raise_llm_errors[{wire}]")
    run_wire(wire, _pieces(data.draw, raw))


@pytest.mark.parametrize("wire", FUZZ_WIRES)
@_fuzz_settings(SOUP_EXAMPLES)
@given(data=st.data())
def test_byte_soup_only_raises_llm_errors(wire: str, data: st.DataObject) -> None:
    raw = data.draw(soup_streams(_family(wire)), label="stream")
    _count(f"test_byte_soup_only_raises_llm_errors[{wire}]")
    run_wire(wire, _pieces(data.draw, raw))


# --------------------------------------------------------------------------- every field

HOSTILE: list[Any] = [
    None, True, -1, 1.5, 10**400, float("inf"), float("nan"), "", "\x00</think>", [], [1], {}, {"k": [1]},
    _nested_dict(50),
]
Step = str | int


def _paths(value: Any, prefix: tuple[Step, ...], shape: str, out: dict[str, tuple[Step, ...]]) -> None:
    """Every slot of ``value``: its shape (list indices as ``[]``) to its first concrete path."""
    items: list[tuple[Step, Any, str]]
    if isinstance(value, dict):
        items = [(k, v, f"{shape}.{k}") for k, v in value.items()]
    elif isinstance(value, list):
        items = [(i, v, f"{shape}[]") for i, v in enumerate(value)]
    else:
        return
    for step, child, child_shape in items:
        out.setdefault(child_shape, (*prefix, step))
        _paths(child, (*prefix, step), child_shape, out)


def _field_cases(streams: list[list[Event]]) -> list[tuple[str, list[Event], int, tuple[Step, ...]]]:
    """One case per field shape of ``streams``: (shape, stream, event, path), taken from
    the shortest stream that has it."""
    found: dict[str, tuple[list[Event], int, tuple[Step, ...]]] = {}
    for events in sorted(streams, key=lambda s: sum(len(d) for _, d in s)):
        for position, (name, data) in enumerate(events):
            try:
                payload = json.loads(data)
            except ValueError:
                continue
            slots: dict[str, tuple[Step, ...]] = {}
            _paths(payload, (), name, slots)
            for shape, path in slots.items():
                found.setdefault(shape, (events, position, path))
    return [(shape, *found[shape]) for shape in sorted(found)]


def _with_value(events: list[Event], position: int, path: tuple[Step, ...], value: Any) -> list[Event]:
    name, data = events[position]
    payload = json.loads(data)
    container = payload
    for step in path[:-1]:
        container = container[step]
    container[path[-1]] = value
    changed = list(events)
    changed[position] = (name, json.dumps(payload))
    return changed


@pytest.mark.parametrize("wire", FUZZ_WIRES)
def test_wrong_type_in_every_field(wire: str) -> None:
    """Every field shape of the wire's real corpus, set to each hostile value in turn.

    The plain chat wire gets every chat-family recording's fields (all dialects share its
    translator); a chat dialect (llamacpp, openrouter, mistral) gets the fields of its own
    provider's recordings, which reach the code that dialect adds."""
    failures: list[str] = []
    own = wire in CHAT_FAMILY and wire != "openai-chat"
    cases = _field_cases(_OWN_CORPUS[wire] if own else _CORPUS[_family(wire)])
    for shape, events, position, path in cases:
        for value in HOSTILE:
            raw = _frame(_with_value(events, position, path, value), crlf=False)
            try:
                run_wire(wire, [raw])
            except Exception as exc:  # noqa: BLE001 - collected, reported together
                failures.append(f"{shape} = {repr(value)[:40]}: {type(exc).__name__}: {str(exc)[:160]}")
    assert len(cases) > 20
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])


# --------------------------------------------------------------------------- directed cases

ENVELOPES: dict[str, Callable[[str], list[Event]]] = {
    # one event that puts ``value`` (JSON text) where each wire reads a structure
    "openai-chat": lambda v: [("message", '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":' + v + "}}]}}]}"), ("message", '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'), ("message", "[DONE]")],
    "anthropic": lambda v: [("message_start", '{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}'), ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":' + v + "}}"), ("content_block_stop", '{"type":"content_block_stop","index":0}'), ("message_stop", '{"type":"message_stop"}')],
    "gemini": lambda v: [("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":' + v + '}}]},"finishReason":"STOP"}]}')],
    "openai-responses": lambda v: [("response.output_item.added", '{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":' + v + "}}"), ("response.completed", '{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":' + v + "}]}}")],
    "gemini-interactions": lambda v: [("step.start", '{"event_type":"step.start","index":0,"step":{"type":"function_call","id":"c","name":"f","arguments":' + v + "}}"), ("step.stop", '{"event_type":"step.stop","index":0}'), ("interaction.completed", '{"event_type":"interaction.completed","interaction":{"id":"i","status":"requires_action","usage":' + v + "}}")],
}


ENVELOPES["gemini-streamed"] = lambda v: [
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}'),
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a","structValue":' + v + '}],"willContinue":true}}]}}]}'),
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}]}'),
]
ERROR_ENVELOPES: dict[str, Callable[[str], list[Event]]] = {
    "openai-chat": lambda v: [("message", '{"error":' + v + "}")],
    "anthropic": lambda v: [("error", '{"type":"error","error":' + v + "}")],
    "gemini": lambda v: [("message", '{"error":' + v + "}")],
    "openai-responses": lambda v: [("error", '{"type":"error","code":"x","message":' + v + "}")],
    "gemini-interactions": lambda v: [("error", '{"event_type":"error","error":' + v + "}")],
}


def _wire_of(family: str) -> str:
    return "gemini" if family == "gemini-streamed" else family


def _in_fresh_thread(fn: Callable[[], object]) -> None:
    """Run ``fn`` at the bottom of a new thread's stack, so the depth left to the
    recursion limit is the same whatever pytest's own stack depth is; re-raise."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    if errors:
        raise errors[0]


#: nesting depths to try: absolute ones, and every depth near the recursion limit, where
#: the C JSON parser still accepts a payload that a later ``json.dumps`` or recursive
#: walk, a few frames deeper, cannot handle
NEAR_LIMIT = range(sys.getrecursionlimit() - 80, sys.getrecursionlimit() + 2)
DEPTHS = sorted({50, 300, 500, 700, *NEAR_LIMIT, 5000, 100_000})


@pytest.mark.parametrize("family", sorted(ENVELOPES))
def test_deep_nesting_in_a_payload_is_never_a_recursion_error(family: str) -> None:
    wire = _wire_of(family)

    def sweep() -> None:
        for depth in DEPTHS:
            for value in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
                run_wire(wire, [_frame(ENVELOPES[family](value), crlf=wire == "gemini")])
                if family in ERROR_ENVELOPES:
                    run_wire(wire, [_frame(ERROR_ENVELOPES[family](value), crlf=False)])

    _in_fresh_thread(sweep)


@pytest.mark.parametrize("wire", FUZZ_WIRES)
def test_100000_open_brackets_end_the_stream_malformed(wire: str) -> None:
    chunks = list(decode(b"data: " + b"[" * 100_000 + b"\n\n", wire=wire))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == "MALFORMED_RESPONSE"


_MIB = 1024 * 1024
_LIMIT = 16 * _MIB


def _giant_event(kind: str, total: int) -> Iterator[bytes]:
    """A single ~``total``-byte event, as 64 KiB pieces (one shared piece object, so
    the input costs no memory): one unterminated ``data:`` line, many ``data:`` lines
    of one event, or CRLF-framed lines."""
    piece = b"x" * 65536
    if kind == "one line":
        yield b'data: {"choices":[{"index":0,"delta":{"content":"'
        for _ in range(total // len(piece)):
            yield piece
    else:
        sep = b"\r\n" if kind == "crlf lines" else b"\n"
        line = b"data: " + b"y" * (65536 - 6 - len(sep)) + sep
        for _ in range(total // len(line)):
            yield line
    yield b'"}}]}\n\n'


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic", "gemini", "openai-responses"])
@pytest.mark.parametrize("kind", ["one line", "lf lines", "crlf lines"])
def test_20_mb_event_raises_event_too_large_with_bounded_memory(wire: str, kind: str) -> None:
    tracemalloc.start()
    try:
        started = time.monotonic()
        with pytest.raises(ProtocolError) as caught:
            for _ in decode(_giant_event(kind, 20 * _MIB), wire=wire):
                pass
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.failure.code == "EVENT_TOO_LARGE"
    assert peak < 3 * _LIMIT, f"peak {peak / _MIB:.1f} MiB for a {_LIMIT / _MIB:.0f} MiB limit"
    assert elapsed < 30  # linear; a quadratic scan of 20 MB takes minutes (margin for a busy machine)


def test_event_just_under_the_limit_decodes() -> None:
    limit = _MIB
    text = "z" * (limit - 200)
    event = b'data: {"choices":[{"index":0,"delta":{"content":"' + text.encode() + b'"}}]}\n\n'
    stream = event + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    chunks = run_wire("openai-chat", split_at(stream, range(0, len(stream), 65536)), max_event_size=limit)
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == text


def _vertex_partial_args(json_path: str) -> bytes:
    return _frame(
        [
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}'),
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":' + json.dumps(json_path) + ',"numberValue":1}],"willContinue":true}}]}}]}'),
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}]}'),
        ],
        crlf=True,
    )


@pytest.mark.parametrize(
    "json_path",
    ["$.a[3000000]", "$[" + "9" * 5000 + "]", "$.a[0][2999999]"],
    ids=["list index 3e6", "5000-digit index", "nested index 3e6"],
)
def test_streamed_gemini_arguments_cannot_allocate_beyond_the_event(json_path: str) -> None:
    """A ~400-byte ``partialArgs`` event must not make the decoder build megabytes."""
    tracemalloc.start()
    try:
        started = time.monotonic()
        chunks = run_wire("gemini", [_vertex_partial_args(json_path)])
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * _MIB, f"peak {peak / _MIB:.1f} MiB from a {len(_vertex_partial_args(json_path))}-byte stream"
    assert elapsed < 5.0  # the memory bound above is the real check; this only catches a runaway
    arguments = [c.block.arguments for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert all(len(a) < 100_000 for a in arguments)
