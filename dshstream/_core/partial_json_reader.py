"""Streaming partial JSON: snapshots of a JSON document while it arrives, in which nothing
once shown ever changes type, shrinks or disappears.

Contract: stdlib + ``errors``/``validate``/``redact`` only (strings in, values out: no
chunk types); sans-IO, no threads (one consumer thread drives a reader).
:class:`PartialJsonReader` is an incremental parser: a state machine with a stack of open
containers, fed text in pieces of any size. :func:`take_snapshot` freezes its state into a
:class:`JsonSnapshot`; :mod:`dshstream._core.partial_json` runs a reader over a chunk
stream.

Protocol rules (what every snapshot guarantees):

1. **Settled types only.** A value appears once its type is settled: an object or array
   at its ``{``/``[`` (empty at first), a string at its opening quote (``""`` at first), a
   number, ``true``, ``false`` or ``null`` only once complete: a number when the character
   after it arrives (``12`` may still become ``123``) or at :meth:`PartialJsonReader.close`
   for a document that is a lone number. An object key appears only together with its
   value: never with a placeholder, never half-written.
2. **Monotone.** Once shown, a value keeps its type; objects only gain keys (in document
   order), arrays only gain elements, strings only grow at the end, numbers and literals
   never change. Every snapshot is a prefix of the next one and of the final value.
3. **No half escapes.** ``\\n``, ``\\"``, ``\\u00e9`` and a surrogate pair
   ``\\ud83d\\ude00`` appear as one character once the whole escape has arrived.
4. **Standard result.** The final value of a complete document equals
   ``json.loads(document)`` (the package's ``strict_loads``), with one deliberate
   difference: a repeated object key is malformed (``json.loads`` keeps the last value,
   which would break rule 2). A lone surrogate escape stays a lone surrogate, as there.
5. **Leading and trailing text.** Before the value, whitespace, a byte-order mark and
   one Markdown code fence line (```` ```json ````, ```` ``` ````) are skipped; after it,
   whitespace and the closing fence. Anything else is malformed, unless
   ``skip_prose=True``: then everything before the first ``{`` or ``[`` ("Here is the
   JSON:") and everything after the value is ignored (and the value must be an object or
   an array).
6. **Clear failures.** Malformed text raises :class:`~dshstream.errors.ProtocolError`
   (``MALFORMED_RESPONSE``) naming the character offset and what was expected there; so
   does nesting deeper than ``max_depth``. More than ``max_chars`` characters fed raises
   ``EVENT_TOO_LARGE``. Messages never quote the text; ``failure.detail`` holds a
   redacted excerpt around the fault. A reader that failed stays failed. Incomplete
   text is not a failure: :meth:`~PartialJsonReader.close` leaves ``done`` false.
7. **Deltas.** Each :meth:`~PartialJsonReader.feed` returns what changed, in order:
   ``("add", path, value)`` when a value appears (``{}``, ``[]``, a string with the text
   that arrived with it, or a complete scalar) and ``("append", path, text)`` when a
   string shown earlier grows. ``path`` is the tuple of keys and indices from the root
   (``()`` for the root). Applying the deltas in order to nothing rebuilds the snapshot.
8. **Snapshots.** :func:`take_snapshot` captures the reader's state in O(depth) into a
   :class:`JsonSnapshot` whose ``value`` obeys rules 1-3 whatever the reader is fed
   afterwards: it is built on first access (O(its size)), a fresh tree the caller owns,
   then kept. The argument checks (:func:`check_flag`, :func:`check_depth`,
   :func:`check_max_chars`) are the reader's, shared with the chunk adaptors so that an
   error names the caller's own argument.

Complexity. Feeding is linear in the text: every character is scanned once (runs of
string characters, whitespace and digits by compiled regexes); only an incomplete escape
or literal (at most 11 characters) or opening fence line (at most 40) is carried over and
scanned again with the next piece; strings, keys and numbers grow as lists of pieces,
never by re-concatenation. A snapshot is O(depth) (rule 8) because closed values never
change again: it is the live tree plus the current length of each open container and of
the open string. Deltas cost O(depth) per value.
"""

from __future__ import annotations

import marshal
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, NoReturn, TypeAlias, final

from .errors import LlmError, error_for, make_failure
from .redact import redact
from .validate import check_int, describe, invalid

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_MAX_DEPTH",
    "JsonDelta",
    "JsonPath",
    "JsonSnapshot",
    "PartialJsonReader",
    "check_depth",
    "check_flag",
    "check_max_chars",
    "take_snapshot",
]

#: Nesting deeper than this is refused (the hard ceiling is :data:`_DEPTH_CEILING`).
DEFAULT_MAX_DEPTH = 512
#: Characters a reader accepts by default (16 Mi); ``None`` lifts the cap.
DEFAULT_MAX_CHARS = 16 * 1024 * 1024
_DEPTH_CEILING = 1000  # snapshot copies go through marshal, whose nesting limit is 2000

JsonPath: TypeAlias = tuple[str | int, ...]
#: ``("add", path, value)`` or ``("append", path, text)``
JsonDelta: TypeAlias = tuple[Literal["add", "append"], JsonPath, Any]

# parser states
_PRE, _VALUE, _ARR_FIRST, _OBJ_FIRST, _KEY, _COLON, _AFTER, _STRING, _KEYSTR, _NUMBER, _POST, _END = range(12)

_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = frozenset(" \t\n\r")
_STR_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_NUM_RUN = re.compile(r"[0-9eE.+-]*")
_NUMBER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\Z")
_HEX_PREFIX = re.compile(r"[0-9a-fA-F]{0,4}\Z")
_TO_OPENER = re.compile(r"[^{\[]*")
_FENCE_LINE = re.compile(r"```[A-Za-z0-9_.+-]*[ \t\r]*\Z")
_FENCE_MAX = 40  # characters of an opening fence line, newline excluded
_NUMBER_START = frozenset("-0123456789")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, tuple[str, Any]] = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_EXCERPT = 40  # characters either side of a fault in failure.detail


class _Missing:
    """No value yet (the root before its type is settled)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<no value>"


_MISSING = _Missing()


class _Str:
    """A string still being read: its pieces so far and their total length."""

    __slots__ = ("pieces", "size")

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.size = 0


# A snapshot of the reader's state, O(depth): the root, each open container with its
# length then, and the open string with its length then.
_Capture: TypeAlias = tuple[Any, tuple[tuple[Any, int], ...], "tuple[_Str, int] | None"]


def _copy(value: Any) -> Any:
    """A deep copy of a closed JSON value (dict/list/str/int/float/bool/None), made in C."""
    return marshal.loads(marshal.dumps(value))


def _text(holder: _Str, size: int) -> str:
    pieces = holder.pieces
    if len(pieces) != 1:
        joined = "".join(pieces)
        holder.pieces = pieces = [joined]  # compacted: later snapshots join nothing
    return pieces[0] if len(pieces[0]) == size else pieces[0][:size]


def _materialize(capture: _Capture) -> Any:
    """The value a capture stands for, as a fresh tree (iterative: no recursion)."""
    root, frames, open_str = capture
    if open_str is not None:
        value: Any = _text(*open_str)
        has_child = True
    else:
        value, has_child = None, False
    if not frames:
        if has_child:
            return value
        if root is _MISSING:
            return None
        return _copy(root) if type(root) in (dict, list) else root
    for container, size in reversed(frames):
        if type(container) is list:
            if has_child:
                out: Any = _copy(container[: size - 1])
                out.append(value)
            else:
                out = _copy(container[:size])
        else:
            items = dict(islice(container.items(), size)) if size < len(container) else dict(container)
            if has_child:
                last = next(reversed(items))
                del items[last]
                out = _copy(items)
                out[last] = value
            else:
                out = _copy(items)
        value, has_child = out, True
    return value


class PartialJsonReader:
    """Reads one JSON document fed in pieces (rules 1-7). ``max_depth`` caps nesting (1 to
    1000), ``max_chars`` the characters fed (``None``: no cap); with ``deltas=False``
    :meth:`feed` returns empty lists; ``skip_prose``: rule 5."""

    __slots__ = (
        "_deltas", "_skip_prose", "_max_depth", "_max_chars",
        "_state", "_stack", "_paths", "_key", "_root", "_str", "_str_key", "_str_path",
        "_run", "_run_new", "_key_pieces", "_key_at", "_num", "_pending", "_fence", "_fed", "_base",
        "_version", "_changed", "_out", "_error", "_closed", "_complete",
    )

    def __init__(
        self,
        *,
        deltas: bool = True,
        skip_prose: bool = False,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_chars: int | None = DEFAULT_MAX_CHARS,
    ) -> None:
        self._deltas = check_flag(deltas, "PartialJsonReader.deltas")
        self._skip_prose = check_flag(skip_prose, "PartialJsonReader.skip_prose")
        self._max_depth = check_depth(max_depth, "PartialJsonReader.max_depth")
        self._max_chars = check_max_chars(max_chars, "PartialJsonReader.max_chars")
        self._state = _PRE
        self._stack: list[Any] = []  # open containers, outermost first
        self._paths: list[JsonPath] = []  # their paths (kept only when producing deltas)
        self._key: str = ""  # the member whose value comes next, in the innermost object
        self._root: Any = _MISSING
        self._str: _Str | None = None  # the open value string
        self._str_key: str = ""
        self._str_path: JsonPath = ()
        self._run: list[str] = []  # text the open string gained in this feed
        self._run_new = False  # the open string appeared in this feed
        self._key_pieces: list[str] = []
        self._key_at = 0  # document offset of the key being read
        self._num: list[str] = []
        self._pending = ""  # an incomplete escape, literal or fence, rescanned with the next piece
        self._fence = False
        self._fed = 0
        self._base = 0  # document offset of the text being scanned
        self._version = 0
        self._changed = False
        self._out: list[JsonDelta] = []
        self._error: LlmError | None = None
        self._closed = False
        self._complete = False

    def __repr__(self) -> str:
        state = "done" if self._complete else "failed" if self._error else "reading"
        return f"PartialJsonReader({state}, version={self._version}, chars={self._fed})"

    # ------------------------------------------------------------------ public state

    @property
    def started(self) -> bool:
        """Whether a value has appeared (the root's type is settled)."""
        return self._root is not _MISSING

    @property
    def done(self) -> bool:
        """Whether the document is complete (its value closed)."""
        return self._complete

    @property
    def version(self) -> int:
        """How many feeds changed the value (0: nothing shown yet); equal versions mean equal
        snapshots."""
        return self._version

    @property
    def snapshot(self) -> Any:
        """The settled value so far as a fresh tree the caller owns (``None`` before
        :attr:`started`); O(size of the value)."""
        return _materialize(self._capture())

    def _capture(self) -> _Capture:
        holder = self._str
        return (
            self._root,
            tuple([(c, len(c)) for c in self._stack]),
            (holder, holder.size) if holder is not None else None,
        )

    # ------------------------------------------------------------------ input

    def feed(self, text: str) -> list[JsonDelta]:
        """Read the next piece of the document; returns the deltas it produced."""
        if self._error is not None:
            raise self._error
        if type(text) is not str:
            raise invalid(f"PartialJsonReader.feed(text) must be a str, got {describe(text)}", wrong_type=True)
        if self._closed:
            raise invalid("PartialJsonReader.feed() called after close()")
        if not text:
            return []
        self._fed += len(text)
        if self._max_chars is not None and self._fed > self._max_chars:
            self._fail(
                make_failure(
                    "EVENT_TOO_LARGE",
                    f"JSON text longer than max_chars={self._max_chars:,} characters",
                )
            )
        pending = self._pending
        if pending:
            self._pending = ""
            text = pending + text
        self._base = self._fed - len(text)
        out: list[JsonDelta] = []
        self._out = out
        self._changed = False
        self._scan(text)
        if self._str is not None:
            self._flush_run()
        if self._changed:
            self._version += 1
        return out

    def close(self) -> list[JsonDelta]:
        """End the input: a document that is a lone number completes here. Never raises for
        an incomplete document (``done`` stays false); idempotent."""
        if self._error is not None:
            raise self._error
        if self._closed:
            return []
        self._closed = True
        out: list[JsonDelta] = []
        self._out = out
        self._changed = False
        if self._state == _NUMBER and not self._stack and _NUMBER_TEXT.match("".join(self._num)):
            self._base = self._fed
            self._end_number("", 0)
        if self._changed:
            self._version += 1
        return out

    # ------------------------------------------------------------------ scanner

    def _scan(self, text: str) -> None:
        n = len(text)
        pos = 0
        while pos < n:
            state = self._state
            if state == _STRING or state == _KEYSTR:
                end = _STR_RUN.match(text, pos).end()  # type: ignore[union-attr]
                if end > pos:
                    self._grow(text[pos:end], state)
                    pos = end
                    if pos == n:
                        return
                ch = text[pos]
                if ch == '"':
                    if state == _STRING:
                        self._end_string()
                    else:
                        self._end_key(text, pos)
                    pos += 1
                elif ch == "\\":
                    decoded = self._escape(text, pos)
                    if decoded is None:
                        self._pending = text[pos:]
                        return
                    self._grow(decoded[0], state)
                    pos += decoded[1]
                else:
                    self._bad(text, pos, "a string character (control characters must be escaped)")
                continue
            if state == _NUMBER:
                end = _NUM_RUN.match(text, pos).end()  # type: ignore[union-attr]
                if end > pos:
                    self._num.append(text[pos:end])
                    pos = end
                    if pos == n:
                        return
                self._end_number(text, pos)
                continue
            ch = text[pos]
            if ch in _WS_CHARS:
                pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
                if pos == n:
                    return
                ch = text[pos]
            if state == _AFTER:
                top = self._stack[-1]
                if ch == ",":
                    self._state = _KEY if type(top) is dict else _VALUE
                elif ch == ("}" if type(top) is dict else "]"):
                    self._close_container()
                else:
                    self._bad(text, pos, "',' or '}'" if type(top) is dict else "',' or ']'")
                pos += 1
            elif state == _VALUE or state == _ARR_FIRST:
                if ch == "]" and state == _ARR_FIRST:
                    self._close_container()
                    pos += 1
                else:
                    pos = self._start_value(text, pos, ch)
                    if pos < 0:
                        return
            elif state == _KEY or state == _OBJ_FIRST:
                if ch == '"':
                    self._key_pieces = []
                    self._key_at = self._base + pos
                    self._state = _KEYSTR
                elif ch == "}" and state == _OBJ_FIRST:
                    self._close_container()
                else:
                    self._bad(text, pos, "a quoted key" if state == _KEY else "a quoted key or '}'")
                pos += 1
            elif state == _COLON:
                if ch != ":":
                    self._bad(text, pos, "':' after a key")
                self._state = _VALUE
                pos += 1
            elif state == _PRE:
                if ch == "\ufeff":
                    pos += 1
                elif self._skip_prose:
                    pos = _TO_OPENER.match(text, pos).end()  # type: ignore[union-attr]
                    if pos < n:
                        pos = self._start_value(text, pos, text[pos])
                elif ch == "`" and not self._fence:
                    newline = text.find("\n", pos)
                    line = text[pos:newline] if newline >= 0 else text[pos:]
                    if len(line) > _FENCE_MAX or not (
                        _FENCE_LINE.match(line) or (newline < 0 and "```".startswith(line))
                    ):
                        self._bad(text, pos, "a JSON value or a code fence line such as ```json")
                    if newline < 0:  # wait for the end of the fence line
                        self._pending = line
                        return
                    self._fence = True
                    pos = newline + 1
                else:
                    pos = self._start_value(text, pos, ch)
                    if pos < 0:
                        return
            elif state == _POST:
                if self._skip_prose:
                    return
                if ch == "`" and self._fence:
                    piece = text[pos : pos + 3]
                    if piece == "```":
                        self._state = _END
                        pos += 3
                    elif "```".startswith(piece):
                        self._pending = piece
                        return
                    else:
                        self._bad(text, pos, "the closing code fence")
                else:
                    self._bad(text, pos, "nothing after the JSON value")
            else:  # _END
                self._bad(text, pos, "nothing after the closing code fence")

    def _start_value(self, text: str, pos: int, ch: str) -> int:
        """Begin the value at ``pos``; the position after what was consumed, or -1 when an
        incomplete literal was kept for the next piece."""
        if ch == "{" or ch == "[":
            if len(self._stack) >= self._max_depth:
                self._bad(text, pos, f"nesting at most max_depth={self._max_depth} deep")
            container: Any = {} if ch == "{" else []
            path = self._insert(container, {} if ch == "{" else [])
            self._stack.append(container)
            if self._deltas:
                self._paths.append(path)
            self._state = _OBJ_FIRST if ch == "{" else _ARR_FIRST
            return pos + 1
        if ch == '"':
            holder = _Str()
            stack = self._stack
            if stack:
                top = stack[-1]
                if type(top) is list:
                    key: str | int = len(top)
                    top.append(holder)
                else:
                    key = self._str_key = self._key
                    top[key] = holder
                if self._deltas:
                    self._str_path = (*self._paths[-1], key)
            else:
                self._root = holder
                self._str_path = ()
            self._str = holder
            self._run = []
            self._run_new = True
            self._changed = True
            self._state = _STRING
            return pos + 1
        if ch in _NUMBER_START:
            self._num = []
            self._state = _NUMBER
            return pos
        literal = _LITERALS.get(ch)
        if literal is not None:
            word, value = literal
            piece = text[pos : pos + len(word)]
            if piece == word:
                self._insert(value, value)
                self._after_value()
                return pos + len(word)
            if word.startswith(piece):  # the piece ended inside the literal
                self._pending = piece
                return -1
        self._bad(text, pos, "a JSON value")

    def _insert(self, item: Any, shown: Any) -> JsonPath:
        """Put a settled value into the innermost open container (or make it the root);
        records the ``add`` delta; returns its path (``()`` when not producing deltas)."""
        self._changed = True
        stack = self._stack
        if not stack:
            self._root = item
            if self._deltas:
                self._out.append(("add", (), shown))
            return ()
        top = stack[-1]
        if type(top) is list:
            key: str | int = len(top)
            top.append(item)
        else:
            key = self._key
            top[key] = item
        if not self._deltas:
            return ()
        path = (*self._paths[-1], key)
        self._out.append(("add", path, shown))
        return path

    def _after_value(self) -> None:
        if self._stack:
            self._state = _AFTER
        else:
            self._state = _POST
            self._complete = True

    def _close_container(self) -> None:
        self._stack.pop()
        if self._deltas:
            self._paths.pop()
        self._after_value()

    def _grow(self, piece: str, state: int) -> None:
        if state == _KEYSTR:
            self._key_pieces.append(piece)
            return
        holder = self._str
        assert holder is not None
        holder.pieces.append(piece)
        holder.size += len(piece)
        self._changed = True
        if self._deltas:
            self._run.append(piece)

    def _flush_run(self) -> None:
        """Record the open string's growth in this feed as one delta."""
        if not self._deltas:
            return
        if self._run_new:
            self._out.append(("add", self._str_path, "".join(self._run)))
        elif self._run:
            self._out.append(("append", self._str_path, "".join(self._run)))
        self._run = []
        self._run_new = False

    def _end_string(self) -> None:
        holder = self._str
        assert holder is not None
        self._flush_run()
        value = "".join(holder.pieces)
        holder.pieces = [value]
        self._str = None
        stack = self._stack
        if stack:
            top = stack[-1]
            if type(top) is list:
                top[-1] = value
            else:
                top[self._str_key] = value
        else:
            self._root = value
        self._after_value()

    def _end_key(self, text: str, pos: int) -> None:
        key = "".join(self._key_pieces)
        self._key_pieces = []
        if key in self._stack[-1]:
            back = self._base + pos - self._key_at
            self._bad(text, pos, "a key not already in this object (repeated keys are refused)", back=back)
        self._key = key
        self._state = _COLON

    def _end_number(self, text: str, pos: int) -> None:
        raw = "".join(self._num)
        self._num = []
        if not _NUMBER_TEXT.match(raw):
            self._bad(text, pos, "a valid JSON number", back=len(raw))
        try:
            value: int | float = float(raw) if ("." in raw or "e" in raw or "E" in raw) else int(raw)
        except ValueError:  # more digits than int() accepts (sys.get_int_max_str_digits)
            self._bad(text, pos, "an integer of at most 4,300 digits", back=len(raw))
        self._insert(value, value)
        self._after_value()

    def _escape(self, text: str, pos: int) -> tuple[str, int] | None:
        """The character(s) of the escape at ``pos`` and its length, or ``None`` when the
        text ends inside it (a high surrogate waits for the escape that may pair with it)."""
        n = len(text)
        if pos + 1 >= n:
            return None
        kind = text[pos + 1]
        if kind != "u":
            char = _ESCAPES.get(kind)
            if char is None:
                self._bad(text, pos, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
            return char, 2
        digits = text[pos + 2 : pos + 6]
        if not _HEX_PREFIX.match(digits):
            self._bad(text, pos, "four hex digits after \\u")
        if len(digits) < 4:
            return None
        code = int(digits, 16)
        if 0xD800 <= code <= 0xDBFF:
            follow = text[pos + 6 : pos + 12]
            if follow[:2] == "\\u" or "\\u".startswith(follow):
                low_digits = follow[2:]
                if not _HEX_PREFIX.match(low_digits):
                    self._bad(text, pos + 6, "four hex digits after \\u")
                if len(low_digits) < 4:
                    return None
                low = int(low_digits, 16)
                if 0xDC00 <= low <= 0xDFFF:
                    return chr(0x10000 + ((code - 0xD800) << 10 | (low - 0xDC00))), 12
        return chr(code), 6

    # ------------------------------------------------------------------ failures

    def _bad(self, text: str, pos: int, expected: str, *, back: int = 0) -> NoReturn:
        offset = self._base + pos - back
        excerpt = text[max(0, pos - back - _EXCERPT) : pos + _EXCERPT]
        self._fail(
            make_failure(
                "MALFORMED_RESPONSE",
                f"malformed JSON at character {offset:,}: expected {expected}",
                detail=redact(excerpt) or None,
            )
        )

    def _fail(self, failure: Any) -> NoReturn:
        error = error_for(failure)
        self._error = error
        raise error


# --------------------------------------------------------------------------- snapshots

_UNBUILT: Any = _Missing()


@final
@dataclass(frozen=True, slots=True, eq=False, repr=False)
class JsonSnapshot:
    """One view of a JSON document while it streams. ``value`` is what has settled (rules
    1-3, 8; ``None`` when nothing settled before a cut); ``done``: the document is complete
    and ``value`` final; ``truncated``: the stream ended before it was; ``deltas``: the
    changes since the previous snapshot (when asked for); ``version``: the reader's.
    """

    done: bool
    truncated: bool
    deltas: tuple[JsonDelta, ...] = ()
    version: int = 0
    _capture: Any = None
    _value: Any = field(default=_UNBUILT, init=False)

    @property
    def value(self) -> Any:
        """The settled value (built on first access, O(its size), then kept)."""
        value = self._value
        if value is _UNBUILT:
            value = _materialize(self._capture) if self._capture is not None else None
            object.__setattr__(self, "_value", value)
        return value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JsonSnapshot):
            return NotImplemented
        return (self.done, self.truncated, self.deltas, self.value) == (
            other.done, other.truncated, other.deltas, other.value
        )

    __hash__ = None  # type: ignore[assignment]  # holds a mutable value

    def __repr__(self) -> str:
        deltas = f", deltas={self.deltas!r}" if self.deltas else ""
        return f"JsonSnapshot(value={self.value!r}, done={self.done}, truncated={self.truncated}{deltas})"


def take_snapshot(reader: PartialJsonReader, done: bool, truncated: bool, deltas: list[JsonDelta]) -> JsonSnapshot:
    """The reader's state now, as a snapshot (rule 8): O(depth); its ``value`` is built on
    first access."""
    return JsonSnapshot(done, truncated, tuple(deltas), reader.version, reader._capture())


# --------------------------------------------------------------------------- argument checks


def check_flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise invalid(f"{field} must be a bool, got {describe(value)}", wrong_type=True)
    return value


def check_depth(value: object, field: str) -> int:
    what = f"an int from 1 to {_DEPTH_CEILING}"
    depth = check_int(value, field, minimum=1, what=what)
    if depth > _DEPTH_CEILING:
        raise invalid(f"{field} must be {what}, got {describe(value)}")
    return depth


def check_max_chars(value: object, field: str) -> int | None:
    if value is None:
        return None
    return check_int(value, field, minimum=1, what="a positive int or None")
