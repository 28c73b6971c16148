"""An incremental, sans-IO Server-Sent-Events decoder (WHATWG EventSource parsing rules).

Contract: stdlib only, no I/O, synchronous. Feed raw body bytes in pieces of any size with
:meth:`SSEDecoder.feed`; each call returns the events (:class:`ServerSentEvent`) and comment
lines (:class:`SSEComment`, liveness only) completed by those bytes, in stream order. The
output never depends on where the pieces were cut. Line ends are CR, LF or CRLF only (a
CRLF split across feeds is one line end); lines are framed on bytes and then decoded as
UTF-8 with replacement characters, so nothing here raises ``UnicodeDecodeError``. One
leading BOM is stripped. :meth:`SSEDecoder.close` marks the end of input and discards an
incomplete event, as the spec says; read :attr:`SSEDecoder.has_partial_event` before it to
detect truncation. An event (its lines, line ends counted as one byte each) or a single
unterminated line longer than ``max_event_size`` bytes raises the ``EVENT_TOO_LARGE``
:class:`~dshstream._core.errors.ProtocolError`; buffered memory stays below ``max_event_size``
plus one feed's bytes.

With nothing carried over from earlier feeds, a feed that is one whole event (a
``data:`` line, or an ``event:`` line and a ``data:`` line, LF or CRLF framed: what
providers write per HTTP chunk) takes a shortcut with the same output; anything else
goes through the general line parser. :meth:`SSEDecoder.feed_with` is :meth:`~SSEDecoder.feed`
handing on what a feed completes: such a whole event as its three strings (type, data,
last event ID: no :class:`ServerSentEvent` and no list is built; a consumer that needs the
event object builds it from them), anything else as the list ``feed`` returns. Both are
the same events, in the same order, whatever the split.

One field beyond the spec: an event with no ``data:`` but ``error:`` lines (llama-box,
the engine behind GPUStack, writes its mid-stream failure so) dispatches as an event of
type ``error`` whose data is those lines, where the spec would drop it: the failure's text
reaches the wire instead of a bare cut.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, NoReturn, TypeAlias, TypeVar

from .errors import error_for, make_failure
from .types import LlmFailure

__all__ = ["OnEvent", "OnItems", "SSEComment", "SSEDecoder", "SSEItem", "ServerSentEvent"]


class ServerSentEvent(NamedTuple):
    """One dispatched event.

    ``event`` is the ``event:`` field or ``"message"``; ``data`` is the ``data:`` lines
    joined with ``"\\n"``; ``id`` is the last event ID seen so far on the stream (it
    persists across events, per the spec) or ``None`` before any ``id:`` field; ``retry`` is
    the reconnection time in milliseconds when this event carried a valid ``retry:`` field.
    """

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class SSEComment(NamedTuple):
    """A comment line (``:text``); not an event, reported so transports can count liveness."""

    text: str


SSEItem: TypeAlias = ServerSentEvent | SSEComment

_T = TypeVar("_T")
#: a whole event's type, data and last event ID (:meth:`SSEDecoder.feed_with`)
OnEvent: TypeAlias = Callable[[str, str, "str | None"], _T]
#: the events and comments of any other feed (:meth:`SSEDecoder.feed_with`)
OnItems: TypeAlias = Callable[[list[SSEItem]], _T]

_BOM = b"\xef\xbb\xbf"
_new = tuple.__new__  # builds a NamedTuple without the Python-level __new__ frame


def _event_list(event: str, data: str, last_id: str | None) -> list[SSEItem]:
    """:meth:`SSEDecoder.feed`'s answer for a whole event."""
    return [_new(ServerSentEvent, (event, data, last_id, None))]


def _items(items: list[SSEItem]) -> list[SSEItem]:
    return items


def _normalize(region: bytes | bytearray) -> bytes | bytearray:
    """``region`` with every CRLF and lone CR turned into LF."""
    return region.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _tail_size(region: bytes | bytearray, size: int) -> int:
    """Bytes of the undispatched event after LF-normalized ``region`` (``size`` before it)."""
    r = region.rfind(b"\n\n")
    if r >= 0:
        return len(region) - r - 2
    if region[:1] == b"\n":
        return len(region) - 1
    return size + len(region)


class SSEDecoder:
    """Incremental SSE decoder; see the module docstring for the contract."""

    __slots__ = (
        "_max",
        "_bytes_fed",
        "_partial",
        "_event_size",
        "_skip_lf",
        "_at_start",
        "_data",
        "_errors",
        "_event",
        "_last_id",
        "_retry",
        "_event_retry",
        "_dirty",
        "_failure",
        "_clean",
    )

    def __init__(self, max_event_size: int = 16 * 1024 * 1024) -> None:
        if max_event_size < 1:
            raise ValueError("max_event_size must be positive")
        self._max = max_event_size
        self._bytes_fed = 0
        self._partial = bytearray()  # the unterminated last line (no CR/LF); amortized growth
        self._event_size = 0  # bytes of complete lines since the last blank line
        self._skip_lf = False  # the last feed ended with CR: drop a leading LF next
        self._at_start = True  # no byte past a possible BOM seen yet
        self._data: list[str] = []
        self._errors: list[str] = []  # ``error:`` lines of the undispatched event (module docstring)
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None
        self._event_retry: int | None = None
        self._dirty = False  # a field line of an undispatched event was seen
        self._failure: LlmFailure | None = None  # set once EVENT_TOO_LARGE was raised
        # Nothing carried over between feeds (no partial line or event, no CR to pair, no
        # comment bytes counted, the BOM settled) and no failure: the next feed may take
        # the whole-event shortcut. Kept by ``feed`` and ``close``.
        self._clean = False

    # ------------------------------------------------------------------ properties

    @property
    def has_partial_event(self) -> bool:
        """True while bytes of an undispatched event or of an unterminated line are held."""
        return self._dirty or bool(self._partial)

    @property
    def bytes_fed(self) -> int:
        """Total bytes passed to :meth:`feed`."""
        return self._bytes_fed

    @property
    def last_event_id(self) -> str | None:
        """The last event ID buffer (for ``Last-Event-ID`` on reconnect)."""
        return self._last_id

    @property
    def retry(self) -> int | None:
        """The last valid ``retry:`` value seen, in milliseconds, dispatched or not."""
        return self._retry

    # ------------------------------------------------------------------ public API

    def feed(self, data: bytes) -> list[SSEItem]:
        """Decode ``data``; return the events and comments it completes, in order."""
        return self.feed_with(data, _event_list, _items)

    def feed_with(self, data: bytes, on_event: OnEvent[_T], on_items: OnItems[_T]) -> _T:
        """Decode ``data`` and hand on what it completes (the module docstring):
        a feed that is one whole event of the common shape goes to ``on_event(event, data,
        last_id)`` (no :class:`ServerSentEvent` or list is built), anything else — several
        events, comments, ``retry:``, a partial event, none — to ``on_items(items)`` with
        the list :meth:`feed` returns. Either's answer is returned."""
        n = len(data)
        if self._clean:  # the common case: whole events, nothing carried over (``_clean``)
            self._bytes_fed += n
            # nothing held: the event's size is this feed's (``_event_size`` is 0)
            if n > 1 and data[-1] == 10 and n <= self._max:
                if 13 not in data:  # LF framing (an int needle: memchr, no buffer protocol)
                    if data[-2] == 10:
                        try:  # the strict decoder is the cheaper call; the same text when valid
                            text = data.decode()
                        except UnicodeDecodeError:
                            text = data.decode("utf-8", "replace")
                        end = len(text) - 2  # the last line's LF
                        # Slices, comparisons, ``in`` and ``partition`` only: ``startswith`` and
                        # ``find`` parse an argument tuple, and cost about as much as all of
                        # these together. The value sliced anyway holds no line break: one line.
                        head = text[:6]
                        if head == "data: ":  # the usual spacing first
                            value = text[6:end]
                            if "\n" not in value:
                                return on_event("message", value, self._last_id)
                        elif head == "event:":  # Anthropic's and Responses' every event
                            line, _, rest = text.partition("\n")  # rest: the data line on
                            value = rest[6:-2] if rest[:6] == "data: " else rest[5:-2] if rest[:5] == "data:" else "\n"
                            if "\n" not in value:
                                event = line[7:] if line[6:7] == " " else line[6:]
                                return on_event(event or "message", value, self._last_id)
                        elif head[:5] == "data:":
                            value = text[5:end]
                            if "\n" not in value:
                                return on_event("message", value, self._last_id)
                        out = self._decode_lf(text)  # whole events: nothing is left over
                        self._clean = not self._dirty
                        return on_items(out)
                elif data[-4:] == b"\r\n\r\n":  # CRLF framing (Gemini, many proxies)
                    try:
                        text = data.decode()
                    except UnicodeDecodeError:
                        text = data.decode("utf-8", "replace")
                    end = len(text) - 4  # the last line's CRLF
                    head = text[:6]
                    if head == "data: ":
                        value = text[6:end]
                        if "\r" not in value and "\n" not in value:
                            return on_event("message", value, self._last_id)
                    elif head == "event:":
                        line, _, rest = text.partition("\r")  # rest: LF, the data line on
                        value = rest[7:-4] if rest[:7] == "\ndata: " else rest[6:-4] if rest[:6] == "\ndata:" else "\n"
                        if "\r" not in value and "\n" not in value and "\n" not in line:
                            event = line[7:] if line[6:7] == " " else line[6:]
                            return on_event(event or "message", value, self._last_id)
                    elif head[:5] == "data:":
                        value = text[5:end]
                        if "\r" not in value and "\n" not in value:
                            return on_event("message", value, self._last_id)
            if not n:
                return on_items([])
        else:
            if self._failure is not None:
                raise error_for(self._failure)
            if not n:
                return on_items([])
            self._bytes_fed += n
        # The general parser. ``_clean`` is off while it runs (an ``EVENT_TOO_LARGE`` raised
        # in it leaves it off) and is set again from the state it leaves.
        self._clean = False
        out = self._feed_lines(data, n)
        self._clean = not (self._partial or self._dirty or self._skip_lf or self._at_start or self._event_size)
        return on_items(out)

    def _feed_lines(self, data: bytes, n: int) -> list[SSEItem]:
        """:meth:`feed` through the general line parser (``n``: ``len(data)``, counted)."""
        if self._skip_lf:
            self._skip_lf = False
            if data[0] == 10:
                data = data[1:]
                n -= 1
                if not n:
                    return []
        if self._at_start:
            if self._partial:  # a BOM prefix held back by an earlier feed
                data = bytes(self._partial) + data
                n = len(data)
                self._partial = bytearray()
            if n < 3 and _BOM.startswith(data):
                self._partial += data
                return []
            self._at_start = False
            if data.startswith(_BOM):
                data = data[3:]
                n -= 3
                if not n:
                    return []

        lf = data.rfind(b"\n")
        cr = data.rfind(b"\r")
        last = lf if lf > cr else cr
        partial = self._partial
        if last < 0:  # no line end: the unterminated line grows
            partial += data
            if self._event_size + len(partial) > self._max:
                self._fail()
            return []

        end = last + 1
        region: bytes | bytearray
        if partial:  # the held line ends in this feed: ``region`` takes over the buffer
            partial += memoryview(data)[:end]
            region = partial
            partial = self._partial = bytearray()
        else:
            region = data[:end] if end < n else data
        if end < n:
            partial += memoryview(data)[end:]
        partial_len = len(partial)
        if cr < 0:  # LF-only line ends: the fast path
            if self._event_size + len(region) + partial_len > self._max:
                self._check_sizes(region)
            self._event_size = _tail_size(region, self._event_size)
            return self._decode_lf(region.decode("utf-8", "replace"))

        if cr == n - 1:
            self._skip_lf = True
        if self._event_size + len(region) + partial_len > self._max:
            self._check_sizes(_normalize(region))
        k = region.rfind(b"\r\n\r\n")  # blocks are split on CRLF CRLF below
        if k < 0:
            self._event_size = _tail_size(_normalize(region), self._event_size)
        elif k + 4 < len(region):
            self._event_size = _tail_size(_normalize(region[k + 4 :]), 0)
        else:
            self._event_size = 0
        return self._decode_cr(region.decode("utf-8", "replace"))

    def close(self) -> list[SSEItem]:
        """End of input: discard an incomplete event and any unterminated line.

        A trailing CR was already handled as a line end by :meth:`feed`, so nothing is left
        to dispatch here; the list is returned for symmetry with :meth:`feed`.
        """
        if self._failure is not None:
            raise error_for(self._failure)
        self._partial = bytearray()
        self._event_size = 0
        self._skip_lf = False
        self._data = []
        self._errors = []
        self._event = ""
        self._event_retry = None
        self._dirty = False
        self._clean = not self._at_start
        return []

    # ------------------------------------------------------------------ internals

    def _decode_lf(self, text: str) -> list[SSEItem]:
        """Process ``text``: complete lines, each ending with LF (no CR anywhere)."""
        out: list[SSEItem] = []
        append = out.append
        blocks = text.split("\n\n")  # each block but the last is followed by a blank line
        tail = blocks.pop()
        if self._dirty and blocks:  # the first block ends an event begun earlier
            self._lines(blocks[0], out)
            self._dispatch(out)
            del blocks[0]
        last_id = self._last_id
        for block in blocks:
            if "\n" not in block:
                if block.startswith("data:"):  # the common case: one data line
                    append(
                        _new(
                            ServerSentEvent,
                            ("message", block[6:] if block[5:6] == " " else block[5:], last_id, None),
                        )
                    )
                    continue
            elif block.startswith("event:"):  # the common case with a type: two lines
                head, sep, value = block.partition("\ndata:")
                if sep and "\n" not in value and "\n" not in head:
                    event = head[7:] if head[6:7] == " " else head[6:]
                    append(
                        _new(
                            ServerSentEvent,
                            (
                                event or "message",
                                value[1:] if value[:1] == " " else value,
                                last_id,
                                None,
                            ),
                        )
                    )
                    continue
            self._lines(block, out)
            self._dispatch(out)
            last_id = self._last_id
        if tail:
            self._lines(tail[:-1], out)
        return out

    def _decode_cr(self, text: str) -> list[SSEItem]:
        """Process ``text``: complete lines, each ending with CR, LF or CRLF.

        Blocks are split on CRLF CRLF (a line end, then a blank line, whatever precedes
        it); a block or tail with other line ends is normalized to LF on its own.
        """
        out: list[SSEItem] = []
        append = out.append
        blocks = text.split("\r\n\r\n")
        tail = blocks.pop()
        if self._dirty and blocks:
            self._lines(blocks[0].replace("\r\n", "\n").replace("\r", "\n"), out)
            self._dispatch(out)
            del blocks[0]
        last_id = self._last_id
        for block in blocks:
            if "\n" not in block and "\r" not in block and block.startswith("data:"):
                append(
                    _new(
                        ServerSentEvent,
                        ("message", block[6:] if block[5:6] == " " else block[5:], last_id, None),
                    )
                )
                continue
            self._lines(block.replace("\r\n", "\n").replace("\r", "\n"), out)
            self._dispatch(out)
            last_id = self._last_id
        if tail:
            self._lines(tail.replace("\r\n", "\n").replace("\r", "\n")[:-1], out)
        return out

    def _lines(self, block: str, out: list[SSEItem]) -> None:
        """Process the LF-separated lines of ``block`` (a blank line dispatches)."""
        for line in block.split("\n"):
            if not line:
                self._dispatch(out)
                continue
            colon = line.find(":")
            if colon == 0:
                out.append(_new(SSEComment, (line[2:] if line[1:2] == " " else line[1:],)))
                continue
            self._dirty = True
            if colon < 0:
                name = line
                value = ""
            else:
                name = line[:colon]
                value = line[colon + 2 :] if line[colon + 1 : colon + 2] == " " else line[colon + 1 :]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
            elif name == "id":
                if "\x00" not in value:
                    self._last_id = value
            elif name == "retry":
                if value.isascii() and value.isdigit():
                    self._retry = self._event_retry = int(value)
            elif name == "error":
                self._errors.append(value)

    def _dispatch(self, out: list[SSEItem]) -> None:
        data = self._data
        if data:
            out.append(
                _new(
                    ServerSentEvent,
                    (self._event or "message", "\n".join(data), self._last_id, self._event_retry),
                )
            )
            self._data = []
        elif self._errors:
            out.append(_new(ServerSentEvent, ("error", "\n".join(self._errors), self._last_id, self._event_retry)))
        if self._errors:
            self._errors = []
        self._event = ""
        self._event_retry = None
        self._dirty = False

    def _check_sizes(self, region: bytes | bytearray) -> None:
        """Raise if an event in ``region`` (LF-normalized) or the held tail is too large."""
        limit = self._max
        size = self._event_size  # bytes of the current event before ``region``
        prev_end = 0
        p = 0 if region[:1] == b"\n" else -1
        if p < 0:
            q = region.find(b"\n\n")
            p = q + 1 if q >= 0 else -1
        while p >= 0:  # p: position of a blank line
            if size + p - prev_end > limit:
                self._fail()
            size = 0
            prev_end = p + 1
            q = region.find(b"\n\n", p)
            p = q + 1 if q >= 0 else -1
        if size + len(region) - prev_end + len(self._partial) > limit:
            self._fail()

    def _fail(self) -> NoReturn:
        self._partial = bytearray()
        self._data = []
        self._failure = make_failure(
            "EVENT_TOO_LARGE", f"SSE event exceeds the maximum size of {self._max} bytes"
        )
        raise error_for(self._failure)
