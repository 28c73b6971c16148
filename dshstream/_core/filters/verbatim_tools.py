"""Recover tool calls written verbatim in prose (``read_file("media_1")``) as tool calls.

Contract: sans-IO and stdlib only. For endpoints with no native tool calling,
:class:`VerbatimToolCallParser` is fed visible text in stream order and returns, per call,
a list of items in stream order: ``str`` (visible text) and
:class:`~dshstream._core.types.ToolCallBlock` (a recovered call, never merged with text).
:meth:`~VerbatimToolCallParser.flush` ends the stream, releases held text and resets (the
id counter keeps counting).

* Anchor: a word boundary, one of the exposed tool names (longest first), up to 32
  whitespace characters, ``(``. Only exposed names trigger. A code opener directly before
  the name (1–3 backticks, optionally a fence language, then whitespace) belongs to the
  call. Text before it is emitted first.
* The call ends at the ``)`` that balances its ``(`` (a scan aware of double-quoted strings
  and backslash escapes). Arguments: empty → ``{}`` only when the tool requires nothing; a
  JSON object; or a JSON string, only for a tool whose ``required`` is exactly one
  string-typed parameter. Anything else rejects the call: its text (opener included) is
  released verbatim and scanning resumes right after it.
* An accepted call's trailing code closer (whitespace, 1–3 backticks, whitespace) is
  dropped. Call ids are ``call_verbatim_<n>`` from 1, per parser; ``arguments`` is
  ``json.dumps`` of the parsed object.
* Bounds: a call not balanced within ``max_buffer_chars`` characters (opener included) is
  released as text at exactly that point; a truncated call is released at flush. Between
  calls only a tail that could still start an anchor is held: an opener (at most 67
  characters), a partial or complete name and up to 32 whitespace characters. After a call,
  whitespace that may precede a code closer is held up to ``max_buffer_chars``.

Cost is linear in the text fed (each character is scanned a bounded number of times). All
decisions depend only on the character sequence, never on chunk boundaries, so the items
(after merging adjacent strings) do not depend on how the text was cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..strict_json import loads_or_none
from ..types import ToolCallBlock

__all__ = ["VerbatimToolCallParser", "VerbatimItem", "DEFAULT_MAX_BUFFER_CHARS"]

#: Default bound on a call's held text (``VERBATIM_TOOL_CALL_MAX_BUFFER_CHARS`` upstream).
DEFAULT_MAX_BUFFER_CHARS = 8192

#: One item of a parser's output: visible text or a recovered call.
VerbatimItem: TypeAlias = str | ToolCallBlock

_MAX_GAP = 32  # whitespace allowed between a tool name and its "("
_OPENER_SUFFIX = re.compile(r"`{1,3}[A-Za-z0-9_-]{0,32}\s{0,32}\Z")
_OPENER_WINDOW = 3 + 32 + 32
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_IN_STRING = re.compile(r'["\\]')
_IN_CODE = re.compile(r'["()]')


@dataclass(frozen=True, slots=True)
class _ToolSpec:
    name: str
    required: tuple[str, ...]
    single_string_param: str | None


def _declaration(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    function = tool.get("function")
    if tool.get("type") == "function" and isinstance(function, Mapping):
        return function
    if isinstance(tool.get("name"), str):
        return tool
    return None


def _build_specs(tools: Sequence[object]) -> dict[str, _ToolSpec]:
    specs: dict[str, _ToolSpec] = {}
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        decl = _declaration(tool)
        if decl is None:
            continue
        name = decl.get("name")
        if not isinstance(name, str) or not name:
            continue
        params = decl.get("parameters")
        params = params if isinstance(params, Mapping) else {}
        props = params.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required_raw = params.get("required")
        required = (
            tuple(r for r in required_raw if isinstance(r, str))
            if isinstance(required_raw, (list, tuple))
            else ()
        )
        single: str | None = None
        if len(required) == 1:
            schema = props.get(required[0])
            if isinstance(schema, Mapping) and schema.get("type") == "string":
                single = required[0]
        specs[name] = _ToolSpec(name, required, single)
    return specs


_SCAN, _CALL, _CLOSER = 0, 1, 2


class VerbatimToolCallParser:
    """Streaming recovery of verbatim tool calls; see the module docstring."""

    def __init__(
        self,
        tools: Sequence[Mapping[str, Any]],
        max_buffer_chars: int = DEFAULT_MAX_BUFFER_CHARS,
    ) -> None:
        self._specs = _build_specs(tools)
        self._max = max(1, int(max_buffer_chars))
        names = sorted(self._specs, key=len, reverse=True)
        self._names = names
        self._anchor: re.Pattern[str] | None = None
        if names:
            alternation = "|".join(re.escape(n) for n in names)
            self._anchor = re.compile(rf"(?<![A-Za-z0-9_])({alternation})\s{{0,{_MAX_GAP}}}\(")
        self._prefixes = frozenset(n[:k] for n in names for k in range(1, len(n) + 1))
        self._first_chars = frozenset(n[0] for n in names)
        self._max_name = max((len(n) for n in names), default=0)
        self._counter = 0
        self._reset()

    @property
    def has_tools(self) -> bool:
        """Whether any tool is exposed (without one, text passes through unchanged)."""
        return self._anchor is not None

    def _reset(self) -> None:
        self._mode = _SCAN
        self._buf = ""  # scanning: held tail that may still start an anchor
        self._ctx = ""  # the character before ``_buf`` in the stream ("" at the start)
        # calling: held call text, the tool name, where its arguments start
        self._call: list[str] = []
        self._call_len = 0
        self._name = ""
        self._args_start = 0
        self._depth = 0
        self._in_str = False
        self._escape = False
        # after an accepted call: held whitespace, backticks seen, whitespace after them
        self._closer_ws: list[str] = []
        self._closer_len = 0
        self._ticks = 0
        self._after_ticks = False

    # ------------------------------------------------------------------ public API

    def feed(self, text: str) -> list[VerbatimItem]:
        """Consume one delta; return the text and calls that are now certain, in order."""
        out: list[VerbatimItem] = []
        if not text:
            return out
        if self._anchor is None:
            out.append(text)
            return out
        rest: str = text
        while rest:
            if self._mode == _SCAN:
                rest = self._scan(rest, out)
            elif self._mode == _CALL:
                rest = self._accumulate(rest, out)
            else:
                rest = self._closer(rest)
        return _merge(out)

    def flush(self) -> list[VerbatimItem]:
        """End the stream: release any held text (a truncated call stays text) and reset."""
        out: list[VerbatimItem] = []
        if self._mode == _SCAN:
            out.append(self._buf)
        elif self._mode == _CALL:
            out.append("".join(self._call))
        elif not self._ticks:
            out.append("".join(self._closer_ws))
        self._reset()
        return _merge(out)

    # ------------------------------------------------------------------ scanning

    def _emit(self, out: list[VerbatimItem], text: str) -> None:
        if text:
            out.append(text)
            self._ctx = text[-1]

    def _scan(self, text: str, out: list[VerbatimItem]) -> str:
        assert self._anchor is not None
        buf = self._buf + text
        self._buf = ""
        ctx = self._ctx
        m = self._anchor.search(ctx + buf, len(ctx))
        if m is None:
            hold = self._holdback(buf, ctx)
            self._emit(out, buf[: len(buf) - hold])
            self._buf = buf[len(buf) - hold :]
            return ""
        name_at = m.start() - len(ctx)
        paren_at = m.end() - len(ctx)  # just past "("
        lo = max(0, name_at - _OPENER_WINDOW)
        opener = _OPENER_SUFFIX.search(buf, lo, name_at)
        call_at = opener.start() if opener is not None else name_at
        self._emit(out, buf[:call_at])
        self._mode = _CALL
        self._call = [buf[call_at:paren_at]]
        self._call_len = paren_at - call_at
        self._name = m.group(1)
        self._args_start = paren_at - call_at
        self._depth = 1
        self._in_str = False
        self._escape = False
        if self._call_len > self._max:
            return self._overflow(out, buf[paren_at:])
        return buf[paren_at:]

    def _holdback(self, buf: str, ctx: str) -> int:
        """Length of the tail of ``buf`` that could still grow into an anchor."""
        n = len(buf)
        name_len = 0
        for start in range(max(0, n - self._max_name), n):
            if buf[start] in self._first_chars and buf[start:] in self._prefixes:
                before = buf[start - 1] if start else ctx
                if before not in _WORD_CHARS:
                    name_len = n - start
                    break
        if not name_len:
            stripped = buf.rstrip()
            gap = n - len(stripped)
            if 0 < gap <= _MAX_GAP:
                for name in self._names:
                    if stripped.endswith(name):
                        start = len(stripped) - len(name)
                        before = buf[start - 1] if start else ctx
                        if before not in _WORD_CHARS:
                            name_len = n - start
                            break
        end = n - name_len
        opener = _OPENER_SUFFIX.search(buf, max(0, end - _OPENER_WINDOW), end)
        return name_len + (end - opener.start() if opener is not None else 0)

    # ------------------------------------------------------------------ inside a call

    def _balance_end(self, text: str, limit: int) -> int:
        """Index in ``text[:limit]`` of the ``)`` closing the call, or -1 (state is kept)."""
        i = 0
        while i < limit:
            if self._escape:
                self._escape = False
                i += 1
                continue
            if self._in_str:
                m = _IN_STRING.search(text, i, limit)
                if m is None:
                    return -1
                i = m.end()
                if m.group() == "\\":
                    self._escape = True
                else:
                    self._in_str = False
                continue
            m = _IN_CODE.search(text, i, limit)
            if m is None:
                return -1
            i = m.end()
            char = m.group()
            if char == '"':
                self._in_str = True
            elif char == "(":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    return m.start()
        return -1

    def _accumulate(self, text: str, out: list[VerbatimItem]) -> str:
        room = self._max - self._call_len
        limit = min(len(text), room)
        end = self._balance_end(text, limit)
        if end == -1:
            self._call.append(text[:limit])
            self._call_len += limit
            if limit < len(text) or self._call_len >= self._max:
                return self._overflow(out, text[limit:])
            return ""
        self._call.append(text[: end + 1])
        call_text = "".join(self._call)
        self._call = []
        self._call_len = 0
        block = self._parse(call_text[self._args_start : -1])
        if block is None:
            self._mode = _SCAN
            self._emit(out, call_text)
        else:
            out.append(block)
            self._ctx = ")"
            self._end_closer("")
            self._mode = _CLOSER
        return text[end + 1 :]

    def _overflow(self, out: list[VerbatimItem], rest: str) -> str:
        """The call outgrew ``max_buffer_chars``: release it as text and resume scanning."""
        held = "".join(self._call)
        self._call = []
        self._call_len = 0
        self._mode = _SCAN
        if len(held) > self._max:  # only when the anchor itself is longer than the bound
            rest = held[self._max :] + rest
            held = held[: self._max]
        self._emit(out, held)
        return rest

    def _parse(self, args_raw: str) -> ToolCallBlock | None:
        spec = self._specs[self._name]
        args_text = args_raw.strip()
        args: Any
        if not args_text:
            if spec.required:
                return None
            args = {}
        elif args_text.startswith("{") and args_text.endswith("}"):
            args = loads_or_none(args_text)
            if not isinstance(args, dict):
                return None
        elif args_text.startswith('"') and args_text.endswith('"'):
            if spec.single_string_param is None:
                return None
            value = loads_or_none(args_text)
            if not isinstance(value, str):
                return None
            args = {spec.single_string_param: value}
        else:
            return None
        try:
            arguments = json.dumps(args, allow_nan=False)
        except ValueError:  # a number beyond float range parsed as inf
            return None
        self._counter += 1
        call_id = f"call_verbatim_{self._counter}"
        return ToolCallBlock(id=call_id, name=spec.name, arguments=arguments)

    # ------------------------------------------------------------------ after a call

    def _closer(self, text: str) -> str:
        """Drop a code closer (whitespace, 1-3 backticks, whitespace) after a call."""
        i = 0
        n = len(text)
        if not self._ticks:
            j = n - len(text.lstrip())
            if j > self._max - self._closer_len:  # too much whitespace: not a closer
                return self._end_closer("".join(self._closer_ws) + text)
            self._closer_ws.append(text[:j])
            self._closer_len += j
            if j == n:
                return ""
            if text[j] != "`":
                return self._end_closer("".join(self._closer_ws) + text[j:])
            i = j
        while i < n:
            char = text[i]
            if char == "`" and self._ticks < 3 and not self._after_ticks:
                self._ticks += 1
            elif char.isspace():
                self._after_ticks = True
            else:
                return self._end_closer(text[i:])
            i += 1
        return ""

    def _end_closer(self, rest: str) -> str:
        self._mode = _SCAN
        self._closer_ws = []
        self._closer_len = 0
        self._ticks = 0
        self._after_ticks = False
        return rest


def _merge(items: list[VerbatimItem]) -> list[VerbatimItem]:
    merged: list[VerbatimItem] = []
    for item in items:
        if isinstance(item, str):
            if not item:
                continue
            if merged and isinstance(merged[-1], str):
                merged[-1] = merged[-1] + item
                continue
        merged.append(item)
    return merged
