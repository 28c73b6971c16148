"""Fuzzing every wire with hypothesis: only ``LlmError`` escapes, output keeps the
contract (the oracle: :func:`robustness.fuzzing.run_wire`).

Inputs, fed in random pieces to ``decode`` for each wire of :data:`FUZZ_WIRES` (every
non-chat wire plus representative chat dialects: plain, think tags on, OpenRouter):

- real fixture events mutated: a random value replaced by a JSON value of another type
  (null, bool, numbers, ``10**400``, ±inf/NaN, strings, lists, a dict 50 deep), keys
  dropped or added, whole payloads replaced, payloads cut mid-JSON, events renamed,
  duplicated, dropped or borrowed from another wire, invalid UTF-8 and NUL bytes spliced in;
- SSE-shaped byte soup (field names, line ends, BOMs, brackets, huge digit strings).

A wrong type in every field, exhaustively, is tests/robustness/test_every_field.py; deep
nesting and event sizes are tests/robustness/test_size_bounds.py.

``DSHSTREAM_FUZZ_EXAMPLES=N`` runs ``N`` examples per wire and per strategy with a random
seed (a campaign); without it the run is modest and derandomized (deterministic in CI).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import split_at
from robustness.fuzzing import CORPUS, FUZZ_WIRES, Event, family, frame, nested_dict, nested_list, run_wire

_CAMPAIGN = os.environ.get("DSHSTREAM_FUZZ_EXAMPLES")
# 100 per wire: a wrong type in every field is test_every_field.py's (all of
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


tried: dict[str, int] = {}  # inputs fed per test, printed at the end of each test

ALL_EVENTS: list[Event] = sorted({e for streams in CORPUS.values() for s in streams for e in s})
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


SPECIAL_VALUES: list[Any] = [
    None, True, False, 0, -1, 1.5, -0.0, 2**63, -(2**63) - 1, 10**400, -(10**400), 1e308,
    float("inf"), float("-inf"), float("nan"), "", " ", "\x00", "\ud800", "x" * 10_000,
    "<think>", "</think>", "[DONE]", [], {}, [None], {"": None}, nested_dict(50), nested_list(50),
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


_BYTE_SPLICES = [b"\x00", b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\r", b"\n", b"\n\n", b"\r\n\r\n", b":", b"data: ", b"\xf0\x9f"]


@st.composite
def mutated_streams(draw: Callable[..., Any], family: str) -> bytes:
    """A real stream of ``family``, its events mutated."""
    streams = CORPUS[family]
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
    raw = frame(events, crlf=draw(st.booleans()))
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
    events = [e for s in CORPUS[family] for e in s]
    atoms = st.sampled_from(SOUP_ATOMS) | st.binary(max_size=12) | st.sampled_from(events).map(
        lambda e: frame([e], crlf=False)
    )
    return b"".join(draw(st.lists(atoms, max_size=60)))


# --------------------------------------------------------------------------- the oracle


def _pieces(draw: Callable[..., Any], data: bytes) -> list[bytes]:
    if len(data) < 2:
        return [data]
    cuts = draw(st.lists(st.integers(1, len(data) - 1), max_size=8))
    return split_at(data, cuts)


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
    raw = data.draw(mutated_streams(family(wire)), label="stream")
    _count(f"test_mutated_fixtures_only_raise_llm_errors[{wire}]")
    run_wire(wire, _pieces(data.draw, raw))


@pytest.mark.parametrize("wire", FUZZ_WIRES)
@_fuzz_settings(SOUP_EXAMPLES)
@given(data=st.data())
def test_byte_soup_only_raises_llm_errors(wire: str, data: st.DataObject) -> None:
    raw = data.draw(soup_streams(family(wire)), label="stream")
    _count(f"test_byte_soup_only_raises_llm_errors[{wire}]")
    run_wire(wire, _pieces(data.draw, raw))
