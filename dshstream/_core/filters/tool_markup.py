"""Recover tool calls a model wrote as chat-template markup in its text
(``<tool_call>{"name": "f", "arguments": {...}}</tool_call>``) as tool calls.

Contract: sans-IO and stdlib only. A local server that does not parse the model's tool-call
template (Ollama's ``/v1`` of 2024, llama.cpp's server without ``--jinja``, vLLM without a
``--tool-call-parser``) passes the call on as text: Qwen 2.5/3, Hermes and their fine-tunes
write the Hermes form above. :class:`ToolMarkupParser` is fed visible text in stream order
and returns, per call, a list of items in stream order: ``str`` (visible text) and
:class:`~dshstream._core.types.ToolCallBlock` (a recovered call). :meth:`~ToolMarkupParser.flush`
ends the stream, releases held text and resets (the id counter keeps counting).

1. **The markup.** ``<tool_call>``, then one JSON object, then ``</tool_call>``; whitespace
   around the object is allowed. The object names a declared tool (``name``) and carries
   its arguments (``arguments``, or ``parameters``: a JSON object, or a string holding
   one). Anything else — an undeclared name, arguments that are not an object, text that
   is not one JSON object — is not a call: the whole span, tags included, is released as
   text, verbatim, and scanning goes on after it.
2. **Calls only, in their place.** Text before a call is released before it. Whitespace
   between a call and the next call, or the end, is the template's layout and is dropped;
   whitespace followed by other text is kept with it.
3. **Bounded.** Between calls only a tail that could still start ``<tool_call>`` is held
   (at most 10 characters, plus the whitespace of rule 2). A call not closed within
   ``max_buffer_chars`` characters is released as text at exactly that point; a call the
   stream ends inside (cut short) is released as text at :meth:`~ToolMarkupParser.flush`.
4. **Ids and arguments.** Call ids are ``call_markup_<n>`` from 1, per parser;
   ``arguments`` is the compact JSON of the parsed object.

Cost is linear in the text fed (the closing tag is looked for in the new text and the
few characters before it only). Every decision depends on the character sequence, never on
how it was cut, so the items (adjacent strings merged) do not depend on the chunking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from ..strict_json import dump_json, loads_or_none
from ..types import ToolCallBlock

__all__ = ["OPEN_TAG", "CLOSE_TAG", "MarkupItem", "ToolMarkupParser", "declared_tool_names"]

OPEN_TAG = "<tool_call>"
CLOSE_TAG = "</tool_call>"
DEFAULT_MAX_BUFFER_CHARS = 65536

#: One item of a parser's output: visible text or a recovered call.
MarkupItem: TypeAlias = str | ToolCallBlock


def declared_tool_names(tools: Iterable[object]) -> frozenset[str]:
    """The names of the declared tools: ``{"name": ...}`` or ``{"type": "function",
    "function": {"name": ...}}`` entries, or the names themselves."""
    names: set[str] = set()
    for tool in tools:
        if isinstance(tool, str):
            name: object = tool
        elif isinstance(tool, Mapping):
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
        else:
            continue
        if isinstance(name, str) and name:
            names.add(name)
    return frozenset(names)


def _opener_prefix(text: str) -> int:
    """The length of the longest tail of ``text`` that starts ``<tool_call>``."""
    for size in range(min(len(OPEN_TAG) - 1, len(text)), 0, -1):
        if text.endswith(OPEN_TAG[:size]):
            return size
    return 0


class ToolMarkupParser:
    """Streaming recovery of markup tool calls; see the module docstring."""

    __slots__ = ("_names", "_max", "_held", "_call", "_size", "_tail", "_in_call", "_after_call", "_count")

    def __init__(self, tools: Iterable[object], max_buffer_chars: int = DEFAULT_MAX_BUFFER_CHARS) -> None:
        self._names = declared_tool_names(tools)
        self._max = max(len(OPEN_TAG) + len(CLOSE_TAG) + 2, int(max_buffer_chars))
        self._held = ""  # between calls: a possible opener's start, or the whitespace after a call
        self._call: list[str] = []  # inside a call: the text after the opener
        self._size = 0  # its length
        self._tail = ""  # its last characters, where a close may have begun
        self._in_call = False
        self._after_call = False  # the held whitespace follows a call (rule 2)
        self._count = 0

    def feed(self, text: str) -> list[MarkupItem]:
        """Visible text in; text and recovered calls out, in stream order."""
        out: list[MarkupItem] = []
        while text:
            text = self._call_text(text, out) if self._in_call else self._scan(text, out)
        return out

    def flush(self) -> list[MarkupItem]:
        """End of stream: release what is held (rules 2 and 3) and reset."""
        out: list[MarkupItem] = []
        if self._in_call:
            out.append(OPEN_TAG + "".join(self._call))  # cut short inside a call
        elif self._held and not (self._after_call and not self._held.strip()):
            out.append(self._held)
        self._held, self._after_call = "", False
        self._end_call()
        return out

    # ------------------------------------------------------------------ between calls

    def _scan(self, text: str, out: list[MarkupItem]) -> str:
        """Text between calls; returns the text after an opener ('' when there is none)."""
        held = self._held + text
        if self._after_call:
            stripped = held.lstrip()
            if stripped.startswith(OPEN_TAG):
                held = stripped  # layout between two calls: dropped (rule 2)
                self._after_call = False
            elif (not stripped or OPEN_TAG.startswith(stripped)) and len(held) <= self._max:
                self._held = held  # undecided: whitespace, perhaps an opener's start
                return ""
            else:
                self._after_call = False
        start = held.find(OPEN_TAG)
        if start < 0:
            keep = _opener_prefix(held)
            if len(held) > keep:
                out.append(held[: len(held) - keep])
            self._held = held[len(held) - keep :]
            return ""
        if start:
            out.append(held[:start])
        self._held = ""
        self._in_call = True
        return held[start + len(OPEN_TAG) :]

    # ------------------------------------------------------------------ inside a call

    def _call_text(self, text: str, out: list[MarkupItem]) -> str:
        """Text inside a call; returns the text after it ('' while it is still open)."""
        tail = self._tail
        end = (tail + text).find(CLOSE_TAG)
        if end < 0:
            self._take(text)
            if len(OPEN_TAG) + self._size >= self._max:
                return self._release_at_bound(out)
            return ""
        close = self._size - len(tail) + end  # where the close starts, in the call's text
        if len(OPEN_TAG) + close + len(CLOSE_TAG) > self._max:  # it ends past the bound
            self._take(text)
            return self._release_at_bound(out)
        before = self._size
        body = ("".join(self._call) + text)[:close]
        rest = text[close + len(CLOSE_TAG) - before :]
        self._end_call()
        call = self._parse(body)
        if call is None:  # rule 1: not a call, released verbatim
            out.append(OPEN_TAG + body + CLOSE_TAG)
            return rest
        out.append(call)
        self._after_call = True
        return rest

    def _take(self, text: str) -> None:
        self._call.append(text)
        self._size += len(text)
        self._tail = (self._tail + text)[-(len(CLOSE_TAG) - 1) :]
        if len(self._call) > 64:  # keep the final join cheap
            self._call = ["".join(self._call)]

    def _release_at_bound(self, out: list[MarkupItem]) -> str:
        """Rule 3: the span's first ``max_buffer_chars`` characters are text; the rest is
        scanned again."""
        span = OPEN_TAG + "".join(self._call)
        self._end_call()
        out.append(span[: self._max])
        return span[self._max :]

    def _end_call(self) -> None:
        self._call, self._size, self._tail, self._in_call = [], 0, "", False

    def _parse(self, body: str) -> ToolCallBlock | None:
        value: Any = loads_or_none(body.strip())
        if type(value) is not dict:
            return None
        name = value.get("name")
        if not isinstance(name, str) or name not in self._names:
            return None
        arguments = value.get("arguments", value.get("parameters", {}))
        if isinstance(arguments, str):
            arguments = loads_or_none(arguments)
        if type(arguments) is not dict:
            return None
        encoded = dump_json(arguments)
        if encoded is None:
            return None
        self._count += 1
        return ToolCallBlock(id=f"call_markup_{self._count}", name=name, arguments=encoded)
