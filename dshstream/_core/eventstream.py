"""An incremental, sans-IO decoder of the AWS event-stream framing
(``application/vnd.amazon.eventstream``, the body of every Bedrock streaming response).

Contract: stdlib only, no I/O, synchronous. Feed raw body bytes in pieces of any size with
:meth:`EventStreamDecoder.feed`; each call returns the messages (:class:`EventStreamMessage`)
completed by those bytes, in stream order, and the output never depends on where the
pieces were cut. A message is a 12-byte prelude (total length u32 BE, headers length u32
BE, CRC-32 of those 8 bytes), the headers, the payload and the CRC-32 of everything before
it. Both CRCs are verified (``zlib.crc32``). Headers are ``name length u8, name, type u8,
value`` with the ten value types of the format: 0/1 true/false (``bool``), 2 byte, 3
short, 4 integer, 5 long (signed big-endian ``int``), 6 byte array (``bytes``, u16
length), 7 string (``str``, u16 length, UTF-8 with replacement characters), 8 timestamp
(milliseconds since the epoch, a timezone-aware UTC ``datetime``) and 9 UUID
(``uuid.UUID``).

A bad CRC, a length that cannot be (shorter than a message with no headers and no
payload, headers longer than the room for them) or a header that overruns its section is
the ``MALFORMED_RESPONSE`` :class:`~dshstream._core.errors.ProtocolError`; a message whose
declared total length exceeds ``max_event_size`` is ``EVENT_TOO_LARGE``, raised as soon as
its prelude arrives, so buffered memory stays below ``max_event_size`` plus one feed's
bytes. Either failure is final: later calls raise it again. Work is linear in the bytes
fed: each byte is copied at most twice (into the buffer, out as a payload) and checked by
each CRC once. :meth:`EventStreamDecoder.close` marks the end of input and discards an
incomplete message; read :attr:`EventStreamDecoder.has_partial_message` before it to detect
truncation.
"""

from __future__ import annotations

import uuid
import zlib
from datetime import datetime, timedelta, timezone
from typing import NamedTuple, NoReturn, TypeAlias

from .errors import error_for, make_failure
from .types import LlmFailure

__all__ = ["EventStreamDecoder", "EventStreamMessage", "HeaderValue", "PRELUDE_SIZE", "encode_message"]

HeaderValue: TypeAlias = "bool | int | bytes | str | datetime | uuid.UUID"

PRELUDE_SIZE = 12
_MIN_MESSAGE = PRELUDE_SIZE + 4  # no headers, no payload
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INT_SIZES = {2: 1, 3: 2, 4: 4, 5: 8}


class EventStreamMessage(NamedTuple):
    """One decoded message: its headers (name -> typed value, last one wins) and payload."""

    headers: dict[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        """The string value of header ``name`` (``None`` when absent or not a string)."""
        value = self.headers.get(name)
        return value if isinstance(value, str) else None


def _parse_headers(raw: bytes) -> dict[str, HeaderValue] | None:
    """The headers section ``raw`` as a dict; ``None`` when it is malformed."""
    headers: dict[str, HeaderValue] = {}
    pos = 0
    end = len(raw)
    while pos < end:
        name_len = raw[pos]
        pos += 1
        if name_len == 0 or pos + name_len + 1 > end:
            return None
        name = raw[pos : pos + name_len].decode("utf-8", "replace")
        pos += name_len
        kind = raw[pos]
        pos += 1
        value: HeaderValue
        if kind == 0:
            value = True
        elif kind == 1:
            value = False
        elif kind in _INT_SIZES:
            size = _INT_SIZES[kind]
            if pos + size > end:
                return None
            value = int.from_bytes(raw[pos : pos + size], "big", signed=True)
            pos += size
        elif kind in (6, 7):
            if pos + 2 > end:
                return None
            size = int.from_bytes(raw[pos : pos + 2], "big")
            pos += 2
            if pos + size > end:
                return None
            chunk = raw[pos : pos + size]
            value = chunk if kind == 6 else chunk.decode("utf-8", "replace")
            pos += size
        elif kind == 8:
            if pos + 8 > end:
                return None
            millis = int.from_bytes(raw[pos : pos + 8], "big", signed=True)
            pos += 8
            try:
                value = _EPOCH + timedelta(milliseconds=millis)
            except OverflowError:
                return None
        elif kind == 9:
            if pos + 16 > end:
                return None
            value = uuid.UUID(bytes=bytes(raw[pos : pos + 16]))
            pos += 16
        else:
            return None
        headers[name] = value
    return headers


class EventStreamDecoder:
    """Incremental event-stream decoder; see the module docstring for the contract."""

    __slots__ = ("_max", "_buffer", "_bytes_fed", "_failure")

    def __init__(self, max_event_size: int = 16 * 1024 * 1024) -> None:
        if max_event_size < _MIN_MESSAGE:
            raise ValueError(f"max_event_size must be at least {_MIN_MESSAGE}")
        self._max = max_event_size
        self._buffer = bytearray()  # the bytes of the incomplete message (amortized growth)
        self._bytes_fed = 0
        self._failure: LlmFailure | None = None

    @property
    def has_partial_message(self) -> bool:
        """True while bytes of an incomplete message are held."""
        return bool(self._buffer)

    @property
    def bytes_fed(self) -> int:
        """Total bytes passed to :meth:`feed`."""
        return self._bytes_fed

    def feed(self, data: bytes) -> list[EventStreamMessage]:
        """Decode ``data``; return the messages it completes, in order."""
        if self._failure is not None:
            raise error_for(self._failure)
        n = len(data)
        if not n:
            return []
        self._bytes_fed += n
        buffer = self._buffer
        if buffer:
            buffer += data
            if len(buffer) < PRELUDE_SIZE:
                return []
            need = self._check_prelude(buffer, 0)
            if len(buffer) < need:
                return []
            view: bytes | bytearray = buffer
            self._buffer = bytearray()
        else:
            view = data
        out: list[EventStreamMessage] = []
        pos = 0
        total = len(view)
        while total - pos >= PRELUDE_SIZE:
            size = self._check_prelude(view, pos)
            if total - pos < size:
                break
            out.append(self._message(view, pos, size))
            pos += size
        if pos < total:
            self._buffer += memoryview(view)[pos:]
        return out

    def close(self) -> list[EventStreamMessage]:
        """End of input: discard an incomplete message (the list is for symmetry)."""
        if self._failure is not None:
            raise error_for(self._failure)
        self._buffer = bytearray()
        return []

    # ------------------------------------------------------------------ internals

    def _check_prelude(self, data: bytes | bytearray, pos: int) -> int:
        """Validate the prelude at ``pos``; return the message's total length."""
        prelude = bytes(data[pos : pos + 8])
        crc = int.from_bytes(data[pos + 8 : pos + 12], "big")
        if zlib.crc32(prelude) != crc:
            self._fail("MALFORMED_RESPONSE", "event-stream prelude checksum mismatch")
        total = int.from_bytes(prelude[:4], "big")
        headers = int.from_bytes(prelude[4:], "big")
        if total < _MIN_MESSAGE or headers > total - _MIN_MESSAGE:
            self._fail("MALFORMED_RESPONSE", "event-stream message has impossible lengths")
        if total > self._max:
            self._fail(
                "EVENT_TOO_LARGE",
                f"event-stream message of {total} bytes exceeds the maximum size of {self._max} bytes",
            )
        return total

    def _message(self, data: bytes | bytearray, pos: int, size: int) -> EventStreamMessage:
        end = pos + size - 4
        view = memoryview(data)
        crc = int.from_bytes(data[end : end + 4], "big")
        if zlib.crc32(view[pos:end]) != crc:
            self._fail("MALFORMED_RESPONSE", "event-stream message checksum mismatch")
        headers_end = pos + PRELUDE_SIZE + int.from_bytes(data[pos + 4 : pos + 8], "big")
        headers = _parse_headers(bytes(view[pos + PRELUDE_SIZE : headers_end]))
        if headers is None:
            self._fail("MALFORMED_RESPONSE", "event-stream message has malformed headers")
        return EventStreamMessage(headers, bytes(view[headers_end:end]))

    def _fail(self, code: str, message: str) -> NoReturn:
        self._buffer = bytearray()
        self._failure = make_failure(code, message)
        raise error_for(self._failure)


def _encode_header(name: str, value: HeaderValue) -> bytes:
    raw = name.encode("utf-8")
    head = bytes([len(raw)]) + raw
    if value is True:
        return head + b"\x00"
    if value is False:
        return head + b"\x01"
    if isinstance(value, int):
        return head + b"\x05" + value.to_bytes(8, "big", signed=True)
    if isinstance(value, bytes):
        return head + b"\x06" + len(value).to_bytes(2, "big") + value
    if isinstance(value, str):
        data = value.encode("utf-8")
        return head + b"\x07" + len(data).to_bytes(2, "big") + data
    if isinstance(value, datetime):
        millis = (value - _EPOCH) // timedelta(milliseconds=1)
        return head + b"\x08" + millis.to_bytes(8, "big", signed=True)
    return head + b"\x09" + value.bytes


def encode_message(headers: dict[str, HeaderValue], payload: bytes = b"") -> bytes:
    """One framed message (tests, the replay server's synthetic streams). Integers are
    written as type 5 (long)."""
    section = b"".join(_encode_header(name, value) for name, value in headers.items())
    total = PRELUDE_SIZE + len(section) + len(payload) + 4
    prelude = total.to_bytes(4, "big") + len(section).to_bytes(4, "big")
    body = prelude + zlib.crc32(prelude).to_bytes(4, "big") + section + payload
    return body + zlib.crc32(body).to_bytes(4, "big")
