"""An incremental, sans-IO decoder of HTTP/1.1 chunked transfer coding (RFC 9112 §7.1).

Contract: stdlib only, no I/O, synchronous. Feed the bytes of a ``Transfer-Encoding:
chunked`` message body in pieces of any size with :meth:`ChunkedDecoder.feed`; each call
returns the payload bytes those pieces completed (possibly ``b""``). The output never
depends on where the pieces were cut. The transport uses it to decode many chunks per
socket read instead of one read per chunk.

1. **Strict framing.** A chunk is ``chunk-size [chunk-ext] CRLF chunk-data CRLF``; the size
   is 1 to 16 hexadecimal digits (no sign, no ``0x``, no ``_``); extensions are
   ``;name[=value]`` with a token name and a token or quoted-string value (whitespace
   allowed around ``;`` and ``=``) and are ignored. Chunk data must be followed by exactly
   CRLF. Size and trailer lines may end with CRLF or a bare LF (RFC 9112 §2.2 lets a
   recipient accept LF) and may carry trailing spaces or tabs. Anything else raises
   ``TRANSPORT`` (:class:`~dshstream._core.errors.TransportError`) naming what was wrong,
   never echoing the bytes; the decoder then stays failed. The payload decoded before the
   bad framing in the same feed is still returned; the next call raises.
2. **The end.** The last chunk (size 0) is followed by trailer fields (``name: value``
   lines, validated and discarded) and an empty line; then :attr:`ChunkedDecoder.done` is
   true. Bytes fed after the end are not payload: they are counted in
   :attr:`ChunkedDecoder.extra` (a connection carrying them must not be reused).
3. **Truncation.** :meth:`ChunkedDecoder.close` marks the end of input and raises
   ``TRANSPORT`` unless the body was complete.
4. **Caps and linear time.** A size line is at most :data:`MAX_LINE` bytes and the trailer
   section at most :data:`MAX_TRAILERS` bytes; only an incomplete line is held between
   feeds (below those caps), and a held line is scanned again only when a line end
   arrives, so the work is linear in the input whatever the cut points.
"""

from __future__ import annotations

import re
from typing import NoReturn

from .errors import LlmError, error_for, make_failure
from .types import LlmFailure

__all__ = ["MAX_LINE", "MAX_TRAILERS", "ChunkedDecoder"]

#: the longest chunk-size line accepted (size, extensions and line end)
MAX_LINE = 4096
#: the largest trailer section accepted (every trailer line, with line ends)
MAX_TRAILERS = 65536

_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_QUOTED = rb'"(?:[\t \x21\x23-\x5b\x5d-\x7e\x80-\xff]|\\[\t \x21-\x7e\x80-\xff])*"'
_EXT = rb"(?:[ \t]*;[ \t]*" + _TOKEN + rb"(?:[ \t]*=[ \t]*(?:" + _TOKEN + rb"|" + _QUOTED + rb"))?)*"
#: a whole size line; group 1 is the size
_SIZE_LINE = re.compile(rb"([0-9A-Fa-f]{1,16})" + _EXT + rb"[ \t]*\r?\n").match
#: a whole trailer field line
_TRAILER_LINE = re.compile(_TOKEN + rb":[\t \x21-\x7e\x80-\xff]*\r?\n").match

_SIZE, _DATA, _DATA_END, _TRAILER, _DONE = range(5)
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_LONG_LINE = f"a chunk-size line exceeds {MAX_LINE} bytes"
_LONG_TRAILERS = f"the trailer section exceeds {MAX_TRAILERS} bytes"


class ChunkedDecoder:
    """Incremental chunked-transfer decoder; see the module docstring for the contract."""

    __slots__ = ("_state", "_left", "_held", "_trailers", "_failure", "extra")

    def __init__(self) -> None:
        self._state = _SIZE
        self._left = 0  # data bytes still due in the current chunk
        self._held = b""  # an incomplete line (or the CR of a data CRLF) from the last feed
        self._trailers = 0  # bytes of trailer lines seen
        self._failure: LlmFailure | None = None
        #: bytes fed after the end of the body (rule 2)
        self.extra = 0

    @property
    def done(self) -> bool:
        """Whether the last chunk and the trailer section have been read."""
        return self._state == _DONE

    @property
    def failed(self) -> bool:
        """Whether malformed framing was found (every later call raises it)."""
        return self._failure is not None

    @property
    def in_trailers(self) -> bool:
        """Whether the last chunk was read and the trailer section is not complete yet."""
        return self._state == _TRAILER

    def feed(self, data: bytes) -> bytes:
        """Decode ``data``; return the payload bytes it completed."""
        if self._failure is not None:
            raise error_for(self._failure)
        n = len(data)
        if not n:
            return b""
        state = self._state
        if state == _DATA and n <= self._left:  # the common case of a large chunk
            self._left -= n
            if not self._left:
                self._state = _DATA_END
            return data
        if state == _DONE:
            self.extra += n
            return b""
        pos = 0
        if self._held:
            pos = self._resume(data)
            if pos < 0:
                return b""
        out: list[bytes | memoryview] = []
        try:
            pos = self._run(data, pos, out)
        except LlmError:
            if not out:
                raise
            pos = n  # the payload before the bad framing is handed out; the failure stays
        if pos < n and self._state == _DONE:
            self.extra += n - pos
        if not out:
            return b""
        if len(out) == 1:
            return bytes(out[0])
        return b"".join(out)

    def close(self) -> None:
        """End of input: raise ``TRANSPORT`` unless the body was complete (rule 3)."""
        if self._failure is not None:
            raise error_for(self._failure)
        if self._state != _DONE:
            if self._state == _SIZE and not self._held:
                what = "before its last chunk"
            elif self._state in (_DATA, _DATA_END):
                what = "in the middle of a chunk"
            else:
                what = "in its trailer section" if self._state == _TRAILER else "in a chunk-size line"
            self._fail(f"the chunked body ended {what}")

    # ------------------------------------------------------------------ internals

    def _resume(self, data: bytes) -> int:
        """Complete the held line (or CRLF) with the head of ``data``; return where the rest
        of ``data`` starts, or -1 when ``data`` was all taken in (still incomplete)."""
        held = self._held
        if self._state == _DATA_END:  # held b"\r": the LF must come next
            if data[:1] != b"\n":
                self._fail("a chunk's data is not followed by CRLF")
            self._held = b""
            self._state = _SIZE
            return 1
        eol = data.find(b"\n")
        if self._state == _SIZE:
            limit, message = MAX_LINE, _LONG_LINE
        else:
            limit, message = MAX_TRAILERS - self._trailers, _LONG_TRAILERS
        if eol < 0:
            if len(held) + len(data) > limit:
                self._fail(message)
            self._held = held + data
            return -1
        if len(held) + eol + 1 > limit:
            self._fail(message)
        line = held + data[: eol + 1]
        self._held = b""
        if self._run(line, 0, []) != len(line):  # a whole line: consumed whole
            raise AssertionError("a held line was not consumed")  # pragma: no cover
        return eol + 1

    def _run(self, data: bytes, pos: int, out: list[bytes | memoryview]) -> int:
        """Decode ``data`` from ``pos``, appending payload to ``out``; hold an incomplete
        line; return the position where decoding stopped (``len(data)`` unless done)."""
        n = len(data)
        state = self._state
        left = self._left
        find = data.find
        view = memoryview(data)
        SIZE, DATA, DATA_END, TRAILER, DONE = _SIZE, _DATA, _DATA_END, _TRAILER, _DONE  # locals: fast
        try:
            while pos < n:
                if state == SIZE:
                    eol = find(b"\n", pos)
                    if eol < 0:
                        if n - pos > MAX_LINE:
                            self._fail(_LONG_LINE)
                        self._held = data[pos:]
                        pos = n
                        break
                    if eol - pos >= MAX_LINE:
                        self._fail(_LONG_LINE)
                    if eol > pos and data[eol - 1] == 13:  # the common "1a3\r\n"
                        line = data[pos : eol - 1]
                        if line and len(line) <= 16 and not line.strip(_HEX_DIGITS):
                            left = int(line, 16)
                        else:
                            left = self._size_line(data, pos)
                    else:
                        left = self._size_line(data, pos)
                    pos = eol + 1
                    if not left:
                        state = TRAILER
                        continue
                    state = DATA
                if state == DATA:
                    end = pos + left
                    if end > n:  # the chunk goes on in the next feed
                        out.append(view[pos:] if pos else data)
                        left = end - n
                        pos = n
                        break
                    out.append(view[pos:end])
                    pos = end
                    left = 0
                    state = DATA_END
                if state == DATA_END:
                    if data.startswith(b"\r\n", pos):
                        pos += 2
                        state = SIZE
                        continue
                    if pos == n:
                        break
                    if pos + 1 == n and data[pos] == 13:
                        self._held = b"\r"
                        pos = n
                        break
                    self._fail("a chunk's data is not followed by CRLF")
                if state == TRAILER:
                    eol = find(b"\n", pos)
                    if eol < 0:
                        if self._trailers + n - pos > MAX_TRAILERS:
                            self._fail(_LONG_TRAILERS)
                        self._held = data[pos:]
                        pos = n
                        break
                    size = eol + 1 - pos
                    self._trailers += size
                    if self._trailers > MAX_TRAILERS:
                        self._fail(_LONG_TRAILERS)
                    if size == 1 or (size == 2 and data[pos] == 13):  # the empty line: the end
                        pos = eol + 1
                        state = DONE
                        break
                    if _TRAILER_LINE(data, pos) is None:  # a match can only end at ``eol``
                        self._fail("a trailer field line is malformed")
                    pos = eol + 1
                    continue
                break  # _DONE
        finally:
            self._state = state
            self._left = left
        return pos

    def _size_line(self, data: bytes, pos: int) -> int:
        """The size of the complete size line at ``pos`` (with extensions, LF only or
        trailing blanks), or raise."""
        m = _SIZE_LINE(data, pos)
        if m is None:  # a match can only end at the line's LF
            self._fail("a chunk-size line is malformed")
        return int(m.group(1), 16)

    def _fail(self, what: str) -> NoReturn:
        self._held = b""
        self._failure = make_failure("TRANSPORT", f"malformed chunked transfer coding: {what} (TRANSPORT)")
        raise error_for(self._failure)
