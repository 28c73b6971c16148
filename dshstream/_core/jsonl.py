"""An incremental, sans-IO JSON Lines reader: a result file's bytes in, one row per line out.

Contract: stdlib and the core only, no I/O, synchronous.

1. **Incremental.** :meth:`JsonlReader.feed` takes the bytes in pieces of any size and
   returns the :class:`JsonlRow` values of the lines those bytes completed, in file order;
   :meth:`JsonlReader.close` marks the end of the input and returns the last line's row
   when the file does not end with a line end. The rows never depend on where the pieces
   were cut.
2. **Lines.** A line ends at LF; a CR right before it is dropped (CRLF files read the same
   as LF ones), and so is one UTF-8 BOM at the start of the file. A line of only
   whitespace is no row. Line numbers count every line, from 1.
3. **Rows or failures, never a raise.** A line that parses as JSON (the wire payload
   parser, :func:`~dshstream._core.strict_json.loads_event`: a lone surrogate escape
   becomes U+FFFD, so every string is valid UTF-8) is a row with its ``value``; one that does not is a row with a ``MALFORMED_RESPONSE``
   :class:`~dshstream._core.types.LlmFailure` naming its line number, and reading goes
   on with the next line (one bad row does not lose the others). The last line without a
   line end that does not parse is the failure of a half-written last line, said so: a
   file cut while it was written, never silently dropped.
4. **Bounded, linear.** A line longer than ``max_line`` bytes (a CR before its LF
   counted) is a failure naming the limit; its bytes are skipped to its line end, not kept. So the reader holds at most
   ``max_line`` bytes between feeds; each byte is scanned once.
5. :meth:`JsonlReader.feed` after :meth:`JsonlReader.close` is a ``ValueError`` (a
   caller's mistake, not the file's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import make_failure
from .strict_json import loads_event
from .types import LlmFailure

__all__ = ["JsonlReader", "JsonlRow", "DEFAULT_MAX_LINE"]

#: the default longest line, in bytes (a result row with a long answer fits many times over)
DEFAULT_MAX_LINE = 64 * 1024 * 1024

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class JsonlRow:
    """One non-blank line: its JSON ``value``, or the ``failure`` that it was unreadable (rule 3)."""

    line: int
    value: Any = None
    failure: LlmFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None


class JsonlReader:

    __slots__ = ("_max", "_what", "_provider", "_pending", "_line", "_skipping", "_at_start", "_closed")

    def __init__(
        self, *, max_line: int = DEFAULT_MAX_LINE, what: str = "the file", provider: str | None = None
    ) -> None:
        if isinstance(max_line, bool) or not isinstance(max_line, int) or max_line < 1:
            raise ValueError("max_line must be an int >= 1")
        self._max = max_line
        self._what = what  # named in every failure: "the batch results"
        self._provider = provider
        self._pending = bytearray()  # the current line's bytes so far; never over max_line (rule 4)
        self._line = 0  # lines completed so far
        self._skipping = False  # the current line is over the limit: drop its bytes to its end
        self._at_start = True  # a BOM may still come
        self._closed = False

    @property
    def buffered(self) -> int:
        """Bytes held between feeds: the current line's so far (rule 4)."""
        return len(self._pending)

    def feed(self, data: bytes) -> list[JsonlRow]:
        """The rows of the lines ``data`` completed (rule 1)."""
        if self._closed:
            raise ValueError("JsonlReader.feed after close")
        rows: list[JsonlRow] = []
        if self._at_start and data:
            head = bytes(self._pending) + data  # the pending bytes are a BOM's first ones here
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._pending = bytearray(head)  # not enough bytes yet to tell a BOM apart
                return rows
            self._at_start = False
            self._pending.clear()
            data = head[len(_BOM):] if head.startswith(_BOM) else head
        start = 0
        size = len(data)
        while start < size:
            end = data.find(b"\n", start)  # only new bytes are searched: linear (rule 4)
            stop = size if end < 0 else end
            if not self._skipping:
                if len(self._pending) + (stop - start) > self._max:
                    self._skipping = True
                    self._pending.clear()
                else:
                    self._pending += data[start:stop]
            if end < 0:
                break
            row = self._finish(last=False)
            if row is not None:
                rows.append(row)
            start = end + 1
        return rows

    def close(self) -> list[JsonlRow]:
        """End of input: the last line's row when it had no line end (rules 1, 3)."""
        if self._closed:
            return []
        self._closed = True
        if self._at_start and self._pending:
            self._at_start = False  # fewer bytes than a BOM: they are the file
        if not self._pending and not self._skipping:
            return []
        row = self._finish(last=True)
        return [row] if row is not None else []

    def _finish(self, *, last: bool) -> JsonlRow | None:
        """The row of the line just ended (``last``: ended by the end of the file)."""
        self._line += 1
        number = self._line
        if self._skipping:
            self._skipping = False
            return JsonlRow(number, failure=self._failure(
                f"line {number} of {self._what} is longer than {self._max} bytes (the limit of one line)"))
        raw = self._pending
        if raw.endswith(b"\r"):
            del raw[-1:]
        size = len(raw)
        text = raw.decode("utf-8", "replace")
        raw.clear()
        if not text.strip():
            return None
        try:
            value = loads_event(text)
        except ValueError:
            if last:
                why = f"{self._what} ends inside line {number} (a half-written last line of {size} bytes)"
            else:
                why = f"line {number} of {self._what} is not JSON"
            return JsonlRow(number, failure=self._failure(why))
        return JsonlRow(number, value=value)

    def _failure(self, why: str) -> LlmFailure:
        head = f"{self._provider}: " if self._provider else ""
        return make_failure("MALFORMED_RESPONSE", f"{head}{why} (MALFORMED_RESPONSE)", provider=self._provider)
