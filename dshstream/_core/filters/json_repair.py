"""Structural repair of truncated JSON objects, and strict parsing of tool-call arguments.

Contract: stdlib only, no I/O. :func:`repair_incomplete_json` turns a JSON object that a
stream cut short into the compact JSON text (``ensure_ascii=False``) of what arrived
complete; it never invents a key or a value and never edits a complete token. It returns
``None`` for empty, oversized, valid, non-object or malformed input (a token that cannot
follow is malformation, not truncation), so callers keep their own path. One scan with a
frame stack: linear time, no re-parsing of prefixes.

Repair rules, applied at the end of the input:

* an unterminated string, a partial literal (``tru``), a lone or partial number (``-``,
  ``1.``, ``1e``) and **a number that ends the input** (it may be a prefix of a longer one,
  even before trailing whitespace) are dropped, together with the key that owns them; so
  are a dangling key, colon or comma;
* containers still open are closed innermost-first, keeping their complete entries;
* a still-open container that is an object member's value is kept (possibly empty:
  ``{"scene": {"nested": "unfinished`` → ``{"scene":{}}``, and equally
  ``{"scene": {`` → ``{"scene":{}}``) — its key arrived whole;
* a still-open container that is an array member is kept only if it holds a complete
  entry; an empty one is dropped (``[{"id": 1}, {"id": 3`` → ``[{"id":1}]``), so lists
  only lose trailing members and never gain a hollow one.

Hence the result of any prefix of a JSON object is ``None`` or a structural prefix of it.

:func:`parse_tool_arguments` is what code that runs tools calls: it refuses truncated
arguments and anything that is not a JSON object. :func:`finalize_tool_arguments` is what
translators call when a tool-call block ends.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import error_for, make_failure
from ..strict_json import dump_json, loads_or_none, strict_loads
from ..types import ToolCallBlock

__all__ = [
    "DEFAULT_MAX_REPAIR_CHARS",
    "finalize_tool_arguments",
    "parse_tool_arguments",
    "repair_incomplete_json",
]

#: Runaway-input ceiling (``BOT_JSON_REPAIR_MAX_CHARS`` upstream).
DEFAULT_MAX_REPAIR_CHARS = 1_048_576

_WS = re.compile(r"[ \t\n\r]+")
_STRING_END = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(
    r"-?(?:(?:0|[1-9][0-9]*)(?:\.(?:[0-9]+(?:[eE][+-]?[0-9]*)?)?|[eE][+-]?[0-9]*)?)?\Z"
)
_NUMBER_CHARS = frozenset("0123456789.eE+-")
_LITERALS: dict[str, tuple[str, Any]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}

# Frame states: what the frame accepts next.
_FIRST = 0  # just opened: a first key/value or the closer
_KEY = 1  # object after a comma: a key
_COLON = 2  # object after a key
_VALUE = 3  # object after a colon / array after a comma: a value
_SEP = 4  # after a complete entry: a comma or the closer

_NO_NUMBER = object()


class _Malformed(Exception):
    """A token that cannot follow: the input is not a truncated JSON value."""


class _Frame:
    __slots__ = ("container", "is_object", "state", "key", "number")

    def __init__(self, is_object: bool) -> None:
        self.container: dict[str, Any] | list[Any] = {} if is_object else []
        self.is_object = is_object
        self.state = _FIRST
        self.key = ""
        # A number read as this frame's latest value, committed only once a `,` or a
        # closer proves that it ended.
        self.number: Any = _NO_NUMBER

    def put(self, value: Any) -> None:
        if isinstance(self.container, dict):
            self.container[self.key] = value
        else:
            self.container.append(value)
        self.state = _SEP

    def commit_number(self) -> None:
        if self.number is not _NO_NUMBER:
            self.put(self.number)
            self.number = _NO_NUMBER


def _skip_ws(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return i if m is None else m.end()


def _expects_value(frame: _Frame) -> bool:
    if frame.is_object:
        return frame.state == _VALUE
    return frame.state in (_FIRST, _VALUE)


def _scan(text: str) -> list[_Frame] | None:
    """Scan ``text`` (which starts with ``{`` after whitespace) once.

    Returns the frames still open at the end of the input (the bottom one is the top-level
    object), or ``None`` when the text is a complete value. Raises :class:`_Malformed`.
    """
    n = len(text)
    i = 0
    frames: list[_Frame] = []
    done = False  # the top-level object closed
    while True:
        i = _skip_ws(text, i)
        if i >= n:
            return None if done else frames
        if done:
            raise _Malformed
        char = text[i]
        frame = frames[-1] if frames else None
        if char == "{" or char == "[":
            if frame is not None and not _expects_value(frame):
                raise _Malformed
            frames.append(_Frame(char == "{"))
            i += 1
        elif char == "}" or char == "]":
            if frame is None or frame.is_object != (char == "}"):
                raise _Malformed
            if frame.state not in (_FIRST, _SEP):
                raise _Malformed
            frame.commit_number()
            frames.pop()
            i += 1
            if frames:
                frames[-1].put(frame.container)
            else:
                done = True
        elif char == ",":
            if frame is None or frame.state != _SEP:
                raise _Malformed
            frame.commit_number()
            frame.state = _KEY if frame.is_object else _VALUE
            i += 1
        elif char == ":":
            if frame is None or frame.state != _COLON:
                raise _Malformed
            frame.state = _VALUE
            i += 1
        elif char == '"':
            if frame is None:
                raise _Malformed
            is_key = frame.is_object and frame.state in (_FIRST, _KEY)
            if not is_key and not _expects_value(frame):
                raise _Malformed
            m = _STRING_END.match(text, i + 1)
            if m is None:  # no closing quote before the end: truncated inside the string
                return frames
            try:
                value = json.loads(text[i : m.end()])
            except ValueError:  # invalid escape or raw control character
                raise _Malformed from None
            i = m.end()
            if is_key:
                frame.key = value
                frame.state = _COLON
            else:
                frame.put(value)
        elif char == "-" or "0" <= char <= "9":
            if frame is None or not _expects_value(frame):
                raise _Malformed
            m = _NUMBER.match(text, i)
            if m is not None and (m.end() == n or text[m.end()] not in _NUMBER_CHARS):
                token = m.group()
                try:
                    number: Any = (
                        float(token) if any(c in token for c in ".eE") else int(token)
                    )
                except ValueError:  # e.g. beyond Python's integer-digits limit
                    raise _Malformed from None
                frame.number = number
                frame.state = _SEP
                i = m.end()
            elif _NUMBER_PREFIX.match(text, i):  # a number cut mid-token
                return frames
            else:
                raise _Malformed
        elif char in _LITERALS:
            if frame is None or not _expects_value(frame):
                raise _Malformed
            word, value = _LITERALS[char]
            if text.startswith(word, i):
                frame.put(value)
                i += len(word)
            elif n - i < len(word) and word.startswith(text[i:]):
                return frames
            else:
                raise _Malformed
        else:
            raise _Malformed


def repair_incomplete_json(text: str, max_chars: int = DEFAULT_MAX_REPAIR_CHARS) -> str | None:
    """Repair a JSON object cut short (the module's rules): the compact JSON text of its
    complete part, or ``None`` (also when ``len(text) > max_chars``)."""
    if not text or len(text) > max_chars:
        return None
    start = _skip_ws(text, 0)
    if start >= len(text) or text[start] != "{":
        return None
    try:
        frames = _scan(text)
    except _Malformed:
        return None
    if not frames:
        return None
    # Close innermost-first. A pending number is never committed: nothing proved it ended.
    child: dict[str, Any] | list[Any] | None = None
    for frame in reversed(frames):
        if child is not None:
            if isinstance(frame.container, dict):
                frame.container[frame.key] = child
            elif child:
                frame.container.append(child)
        child = frame.container
    return dump_json(child)  # None for inf from a huge exponent, or absurd nesting


def _tool_label(block: ToolCallBlock) -> str:
    name = block.name if block.name.isprintable() else ascii(block.name)
    return name[:100] or "(unnamed)"


def parse_tool_arguments(block: ToolCallBlock) -> dict[str, Any]:
    """The arguments of ``block`` as a dict, for code that is about to run the tool.

    ``""`` (or whitespace) is ``{}``. Raises :class:`~dshstream._core.errors.ToolArgumentsError`:
    ``TRUNCATED_TOOL_ARGUMENTS`` when ``block.arguments_truncated`` (never run a repaired
    call), ``INVALID_TOOL_ARGUMENTS`` when the arguments are not a JSON object. Messages
    never contain argument text.
    """
    label = _tool_label(block)
    if block.arguments_truncated:
        raise error_for(
            make_failure("TRUNCATED_TOOL_ARGUMENTS", f"tool call {label} has truncated arguments")
        )
    raw = block.arguments
    if not raw.strip():
        return {}
    try:
        value = strict_loads(raw)
    except ValueError as exc:
        where = exc if isinstance(exc, json.JSONDecodeError) else None
        raise error_for(
            make_failure(
                "INVALID_TOOL_ARGUMENTS",
                f"tool call {label} has arguments that are not valid JSON",
                detail=f"{where.msg} at character {where.pos}" if where is not None else None,
            )
        ) from None
    if not isinstance(value, dict):
        raise error_for(
            make_failure(
                "INVALID_TOOL_ARGUMENTS",
                f"tool call {label} has arguments that are not a JSON object",
                detail=f"arguments are a JSON {type(value).__name__}",
            )
        )
    return value


def finalize_tool_arguments(
    raw: str, max_chars: int = DEFAULT_MAX_REPAIR_CHARS
) -> tuple[str, bool]:
    """Settle a tool call's streamed arguments when its block ends: ``(arguments, truncated)``.

    * empty or whitespace → ``("{}", False)``;
    * a valid JSON object → ``(raw, False)``, unchanged;
    * a truncated object that :func:`repair_incomplete_json` can repair →
      ``(repaired, True)``;
    * anything else (malformed, non-object, oversized) → ``("{}", True)``: the call must
      not run, and the translator keeps ``raw`` in ``raw_arguments``.
    """
    if not raw.strip():
        return "{}", False
    if isinstance(loads_or_none(raw), dict):
        return raw, False
    repaired = repair_incomplete_json(raw, max_chars)
    if repaired is not None:
        return repaired, True
    return "{}", True
