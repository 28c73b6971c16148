"""A wrong type in every field: every field shape of each fuzzed wire's real corpus set to
each hostile value in turn, through the fuzzing oracle (:func:`robustness.fuzzing.run_wire`:
only ``LlmError`` escapes, the contract holds, the assembler folds it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from robustness.fuzzing import CHAT_FAMILY, CORPUS, FUZZ_WIRES, OWN_CORPUS, Event, family, frame, nested_dict, run_wire

HOSTILE: list[Any] = [
    None, True, -1, 1.5, 10**400, float("inf"), float("nan"), "", "\x00</think>", [], [1], {}, {"k": [1]},
    nested_dict(50),
]
Step = str | int


#: where a tool's JSON Schema starts (echoed back by the Responses API in ``tools`` and
#: ``mcp_list_tools``): the names under its ``properties`` are the caller's, not the wire's
SCHEMA_ROOTS = frozenset({"parameters", "input_schema", "output_schema"})


def _paths(
    value: Any, prefix: tuple[Step, ...], shape: str, out: dict[str, tuple[Step, ...]], in_schema: bool = False
) -> None:
    """Every slot of ``value``: its shape (list indices as ``[]``) to its first concrete path.

    Inside a tool's JSON Schema, a property's name is ``*`` in the shape: every property
    is the same field (``city.type`` and ``unit.type`` are both ``*.type``), each schema
    keyword under it still a field of its own."""
    items: list[tuple[Step, Any, str]]
    if isinstance(value, dict):
        names = in_schema and shape.endswith(".properties")
        items = [(k, v, f"{shape}.{'*' if names else k}") for k, v in value.items()]
    elif isinstance(value, list):
        items = [(i, v, f"{shape}[]") for i, v in enumerate(value)]
    else:
        return
    for step, child, child_shape in items:
        out.setdefault(child_shape, (*prefix, step))
        inside = in_schema or (isinstance(step, str) and step in SCHEMA_ROOTS)
        _paths(child, (*prefix, step), child_shape, out, inside)


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


class _Framed:
    """``frame(_with_value(events, position, path, value), crlf=False)``, the same bytes,
    with the unchanged events around ``position`` framed once per case, not once per
    hostile value (framing is per event: the pieces join to the whole)."""

    def __init__(self, events: list[Event], position: int) -> None:
        self.events = events
        self.position = position
        self.before = frame(events[:position], crlf=False)
        self.after = frame(events[position + 1 :], crlf=False)

    def with_value(self, path: tuple[Step, ...], value: Any) -> bytes:
        changed = _with_value([self.events[self.position]], 0, path, value)
        return self.before + frame(changed, crlf=False) + self.after


@pytest.mark.parametrize("wire", FUZZ_WIRES)
def test_wrong_type_in_every_field(wire: str) -> None:
    """Every field shape of the wire's real corpus, set to each hostile value in turn.

    The plain chat wire gets every chat-family recording's fields (all dialects share its
    translator); a chat dialect (llamacpp, openrouter, mistral) gets the fields of its own
    provider's recordings, which reach the code that dialect adds."""
    failures: list[str] = []
    own = wire in CHAT_FAMILY and wire != "openai-chat"
    cases = _field_cases(OWN_CORPUS[wire] if own else CORPUS[family(wire)])
    for shape, events, position, path in cases:
        framed = _Framed(events, position)
        for value in HOSTILE:
            raw = framed.with_value(path, value)
            try:
                run_wire(wire, [raw])
            except Exception as exc:  # noqa: BLE001 - collected, reported together
                failures.append(f"{shape} = {repr(value)[:40]}: {type(exc).__name__}: {str(exc)[:160]}")
    assert len(cases) > 20
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:60])
