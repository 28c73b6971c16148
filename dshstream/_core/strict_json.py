"""JSON text in and out: the package's one set of JSON parse and serialize helpers.

Contract: stdlib only (an optional fast parser is used when installed: rule 6), no I/O,
no state but that choice, made once. Whatever the input, the only exception that
leaves a parser here is ``ValueError`` (nesting too deep to parse becomes one too, never a
``RecursionError``); the ``*_or_none`` and ``*_object`` helpers never raise.

1. :func:`strict_loads` accepts standard JSON only: the ``NaN``, ``Infinity`` and
   ``-Infinity`` that Python's ``json`` lets through are rejected. Malformed text raises a
   ``json.JSONDecodeError`` (a ``ValueError`` with ``msg`` and ``pos``). This is the parser
   for model-written text: tool-call arguments, verbatim tool calls.
2. :func:`loads_or_none` is :func:`strict_loads` returning ``None`` instead of raising
   (also for text longer than ``max_chars``); ``allow_nan=True`` accepts the three
   constants, as Python's ``json`` does (provider error bodies, caller history).
3. :func:`loads_event` parses one wire payload on the streaming hot path (the C scanner
   called directly; constants accepted, as the providers' own SDKs do) and replaces every
   lone surrogate escape with U+FFFD (:func:`fix_surrogates`), so every string it hands
   on is valid UTF-8. A payload that is not JSON raises :class:`EventJsonError` (a
   ``ValueError`` carrying the text), which a caller can tell from any other error.
4. :func:`dump_json` is compact JSON (``ensure_ascii=False``, no NaN), or ``None`` when
   JSON cannot carry the value.
5. :func:`parse_json_object` is the object in a text, ``{}`` for anything else (tool-call
   arguments sent back in a request).
6. **Fast JSON.** With the ``fastjson`` extra installed (``msgspec``), :func:`loads_event`
   tries ``msgspec.json`` first and keeps its value only when it parsed: every payload it
   refuses — ``NaN``/``Infinity``, a number beyond a double's range, a lone surrogate
   escape, nesting past its depth, anything malformed — takes the standard library path
   above, so values and errors are the same with and without it (big integers and
   duplicate keys it parses exactly as ``json`` does: checked on the whole recorded corpus
   and on generated JSON). ``msgspec`` was chosen over ``orjson``: orjson turns an integer
   beyond 64 bits into a float without an error, which no fallback can notice. It is
   imported on the first payload, never with the package; ``DSHSTREAM_FAST_JSON=0`` (read
   then) keeps the standard library.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "EventJsonError",
    "dump_json",
    "fast_decoder",
    "fix_surrogates",
    "loads_event",
    "loads_or_none",
    "parse_json_object",
    "strict_loads",
]

_TOO_DEEP = "JSON nested too deeply to parse"


def _reject_constant(value: str) -> Any:
    raise ValueError(f"non-standard JSON constant {value}")


def strict_loads(text: str) -> Any:
    """Standard JSON only (rule 1); raises ``ValueError``."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError(_TOO_DEEP) from None


def loads_or_none(text: str, *, max_chars: int | None = None, allow_nan: bool = False) -> Any:
    """The value of ``text``, or ``None`` when it is not JSON or longer than ``max_chars``
    (rule 2). JSON ``null`` is ``None`` too: callers test for the type they need."""
    if max_chars is not None and len(text) > max_chars:
        return None
    try:
        if allow_nan:
            return json.loads(text)
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return None


# The C scanner behind json.loads, called directly: the payloads of a stream are compact
# objects, so the two whitespace regex passes json.loads makes per call are pure overhead.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


class EventJsonError(ValueError):
    """:func:`loads_event` was given ``text`` that is not JSON."""

    def __init__(self, text: str) -> None:
        super().__init__("payload is not valid JSON")
        self.text = text


def loads_event(data: str) -> Any:
    """One wire payload (rules 3, 6); raises :class:`EventJsonError` when it is not JSON."""
    fast = _fast_decode
    if fast is not None:
        try:
            value = fast(data)
        except Exception:
            pass  # rule 6: whatever it refuses, the standard library path below decides
        else:
            # msgspec refuses an escaped lone surrogate; checked anyway, so a parser that
            # let one through would still hand on what the standard path does (rule 3).
            if "\\" in data and "\\u" in data and ("\\ud" in data or "\\uD" in data):
                return fix_surrogates(value)
            return value
    try:
        value, end = _scan_once(data, 0)
        if end == len(data):
            # A lone-surrogate escape always has a backslash: one memchr settles most
            # payloads, a ``\\u`` scan those with other escapes (tool arguments' quotes),
            # and the two surrogate scans run only for those with ``\\u`` escapes.
            if "\\" in data and "\\u" in data and ("\\ud" in data or "\\uD" in data):
                return fix_surrogates(value)
            return value
    except StopIteration:
        pass
    except (ValueError, RecursionError):
        raise EventJsonError(data) from None
    try:
        value = json.loads(data)  # leading/trailing whitespace
    except (ValueError, RecursionError):
        raise EventJsonError(data) from None
    if "\\" in data and "\\u" in data and ("\\ud" in data or "\\uD" in data):
        return fix_surrogates(value)
    return value


#: what turns ``DSHSTREAM_FAST_JSON`` off (rule 6)
_OFF = ("0", "false", "no", "off")


def fast_decoder() -> Callable[[str], Any] | None:
    """The fast parser's decode function, or ``None``: not installed, or turned off by
    ``DSHSTREAM_FAST_JSON`` (rule 6). Imports it; called once, on the first payload."""
    if os.environ.get("DSHSTREAM_FAST_JSON", "").strip().lower() in _OFF:
        return None
    try:
        import msgspec
    except ImportError:
        return None
    decode: Callable[[str], Any] = msgspec.json.Decoder().decode
    return decode


def _first_fast_decode(data: str) -> Any:
    """The first payload: the fast parser is chosen, once (rule 6); with none, this one
    payload raises and takes the standard library path like every later one."""
    global _fast_decode
    _fast_decode = fast_decoder()
    if _fast_decode is None:
        raise LookupError("no fast JSON parser")
    return _fast_decode(data)


#: the fast parser's decode, ``None`` without one; chosen on the first payload (rule 6)
_fast_decode: Callable[[str], Any] | None = _first_fast_decode


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def fix_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON) with every lone surrogate in its strings — dict keys too —
    replaced by U+FFFD. Containers are fixed in place (iteratively: any depth); a string
    comes back as a new string. Surrogate pairs never reach here: the JSON decoder joins
    ``"\\ud83d\\ude00"`` into one character."""
    if type(value) is str:
        return _LONE_SURROGATE.sub("\ufffd", value)
    search = _LONE_SURROGATE.search
    stack = [value]
    while stack:
        node = stack.pop()
        entries: Iterable[tuple[Any, Any]]
        if type(node) is dict:
            entries = node.items()
        elif type(node) is list:
            entries = enumerate(node)
        else:
            continue
        for key, item in entries:  # replacing a value in place, never adding one
            if type(item) is str:
                if search(item):
                    node[key] = _LONE_SURROGATE.sub("\ufffd", item)
            elif type(item) is dict or type(item) is list:
                stack.append(item)
        if type(node) is dict and any(search(key) for key in node):
            pairs = list(node.items())
            node.clear()
            for key, item in pairs:
                node[_LONE_SURROGATE.sub("\ufffd", key)] = item
    return value


def dump_json(value: Any) -> str | None:
    """Compact JSON text of a parsed value, or ``None`` when JSON can't carry it
    (nesting too deep to serialize, NaN from a huge exponent...)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, TypeError, RecursionError):
        return None


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in ``text``; ``{}`` when ``text`` is empty, not valid JSON or not an
    object. Never raises."""
    value = loads_or_none(text, allow_nan=True)
    return value if isinstance(value, dict) else {}
