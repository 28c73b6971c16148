"""WebSocket framing (RFC 6455 section 5): an incremental, bounded, sans-IO frame decoder
and the frame encoder.

Contract: stdlib and the core's errors only; no I/O, no clock. Feed received bytes in
pieces of any size to :meth:`FrameDecoder.feed`; it returns the messages those bytes
completed, in order, and the output never depends on where the pieces were cut.

1. **Messages.** A data message (``TEXT`` or ``BINARY``) is returned whole, its fragments
   joined (section 5.4); control frames (``PING``, ``PONG``, ``CLOSE``) are returned as they
   arrive, also between the fragments of a data message, which stays pending.
2. **Fragments in order.** A continuation frame without a message begun, or a new data
   frame while a fragmented message is unfinished, is ``MALFORMED_RESPONSE``.
3. **Masking** (section 5.3). A client's decoder (``masked=False``) refuses a masked frame
   (section 5.1: a server never masks), a server's decoder (``masked=True``, the loopback
   test server's) refuses an unmasked one; a masked payload is unmasked in one pass.
4. **Strict headers** (sections 5.2, 5.5). A reserved bit set (no extension is ever
   negotiated: the handshake offers none), an unknown opcode, a control frame that is
   fragmented or carries more than 125 bytes, or a 64-bit length with its top bit set is
   ``MALFORMED_RESPONSE``; so is a ``CLOSE`` payload of one byte, or a close reason, or a
   ``TEXT`` message, that is not UTF-8 (section 8.1).
5. **Bounded.** A data message whose fragments together exceed ``max_message_size``
   bytes is ``EVENT_TOO_LARGE`` as soon as a frame header announces it, before its payload
   is buffered: memory stays below ``max_message_size`` plus one frame header plus one
   feed's bytes.
6. **Failed for good.** After an error every later ``feed`` raises the same error;
   :attr:`FrameDecoder.pending` says whether input ended inside a frame or a fragmented
   message (a cut connection, not a close).
7. **Encoding.** :func:`encode_frame` writes one unfragmented frame, masked with the
   given 4-byte key (every frame a client sends is masked, section 5.3) or unmasked (a
   server's).
"""

from __future__ import annotations

import struct
from typing import NamedTuple, NoReturn

from .errors import error_for, make_failure
from .types import LlmFailure

__all__ = [
    "BINARY",
    "CLOSE",
    "CONTINUATION",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "PING",
    "PONG",
    "TEXT",
    "FrameDecoder",
    "WsMessage",
    "apply_mask",
    "close_payload",
    "encode_frame",
    "read_close",
]

CONTINUATION, TEXT, BINARY = 0x0, 0x1, 0x2
CLOSE, PING, PONG = 0x8, 0x9, 0xA
_DATA = frozenset({TEXT, BINARY})
_CONTROL = frozenset({CLOSE, PING, PONG})

#: the largest data message read by default: the HTTP path's largest SSE event (16 MiB)
DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024


class WsMessage(NamedTuple):
    """One data message (its fragments joined) or one control frame (rule 1)."""

    opcode: int
    data: bytes


def apply_mask(data: bytes, mask: bytes) -> bytes:
    """``data`` XOR-ed with the repeating 4-byte ``mask`` (section 5.3; its own inverse)."""
    size = len(data)
    if not size:
        return b""
    key = (mask * (size // 4 + 1))[:size]
    # One big-integer XOR: linear, and far faster in CPython than a loop over bytes.
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")


def encode_frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One frame with FIN set (rule 7): masked with ``mask`` (4 bytes) when given."""
    size = len(payload)
    first = 0x80 | opcode
    bit = 0x80 if mask is not None else 0
    if size < 126:
        head = struct.pack("!BB", first, bit | size)
    elif size < 65536:
        head = struct.pack("!BBH", first, bit | 126, size)
    else:
        head = struct.pack("!BBQ", first, bit | 127, size)
    if mask is None:
        return head + payload
    if len(mask) != 4:
        raise ValueError("a WebSocket mask is 4 bytes")
    return head + mask + apply_mask(payload, mask)


def close_payload(code: int, reason: str = "") -> bytes:
    """A ``CLOSE`` frame's payload: the status code and a UTF-8 reason (section 5.5.1)."""
    return struct.pack("!H", code) + reason.encode("utf-8")[:123]


def read_close(payload: bytes) -> tuple[int, str]:
    """The status code and reason of a ``CLOSE`` payload (1005: none given, section 7.1.5);
    a one-byte payload or a reason that is not UTF-8 is ``MALFORMED_RESPONSE`` (rule 4)."""
    if not payload:
        return 1005, ""
    if len(payload) == 1:
        _malformed("a WebSocket close frame of one byte")
    try:
        reason = payload[2:].decode("utf-8")
    except UnicodeDecodeError:
        _malformed("a WebSocket close reason that is not UTF-8")
    return struct.unpack("!H", payload[:2])[0], reason


def _malformed(what: str) -> NoReturn:
    raise error_for(make_failure("MALFORMED_RESPONSE", f"{what} (MALFORMED_RESPONSE)"))


class FrameDecoder:
    """Bytes in, :class:`WsMessage` values out (rules 1-6)."""

    __slots__ = ("_buffer", "_failure", "_fragments", "_fragments_size", "_masked", "_max", "_opcode")

    def __init__(self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, masked: bool = False) -> None:
        if isinstance(max_message_size, bool) or not isinstance(max_message_size, int) or max_message_size < 1:
            raise ValueError("max_message_size must be a positive int")
        self._max = max_message_size
        self._masked = masked
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragments_size = 0
        self._opcode = 0  # the opcode of the fragmented message under way, 0: none
        self._failure: LlmFailure | None = None

    @property
    def pending(self) -> bool:
        """Whether input so far ended inside a frame or a fragmented message (rule 6)."""
        return bool(self._buffer) or self._opcode != 0

    def feed(self, data: bytes) -> list[WsMessage]:
        """The messages completed by ``data`` (rules 1-5)."""
        if self._failure is not None:
            raise error_for(self._failure)
        buffer = self._buffer
        buffer += data
        out: list[WsMessage] = []
        position = 0
        end = len(buffer)
        try:
            while end - position >= 2:
                first, second = buffer[position], buffer[position + 1]
                fin = first & 0x80
                opcode = first & 0x0F
                if first & 0x70:
                    self._fail("MALFORMED_RESPONSE", "a WebSocket frame with a reserved bit set")
                masked = second & 0x80
                if bool(masked) != self._masked:
                    self._fail(
                        "MALFORMED_RESPONSE",
                        "a masked WebSocket frame from the server" if masked else "an unmasked WebSocket frame",
                    )
                size = second & 0x7F
                header = 2
                if size == 126:
                    if end - position < 4:
                        break
                    size = (buffer[position + 2] << 8) | buffer[position + 3]
                    header = 4
                elif size == 127:
                    if end - position < 10:
                        break
                    size = int.from_bytes(buffer[position + 2 : position + 10], "big")
                    if size >> 63:
                        self._fail("MALFORMED_RESPONSE", "a WebSocket frame length with its top bit set")
                    header = 10
                self._check_header(opcode, fin, size)
                mask_at = position + header
                header += 4 if masked else 0
                total = header + size
                if end - position < total:
                    break
                payload = bytes(buffer[position + header : position + total])
                if masked:
                    payload = apply_mask(payload, bytes(buffer[mask_at : mask_at + 4]))
                position += total
                message = self._frame(opcode, fin, payload)
                if message is not None:
                    out.append(message)
        finally:
            if position:
                del buffer[:position]
        return out

    def _check_header(self, opcode: int, fin: int, size: int) -> None:
        """Rules 2, 4, 5, from the header alone (nothing of the payload buffered yet)."""
        if opcode in _CONTROL:
            if not fin:
                self._fail("MALFORMED_RESPONSE", "a fragmented WebSocket control frame")
            if size > 125:
                self._fail("MALFORMED_RESPONSE", "a WebSocket control frame over 125 bytes")
            return
        if opcode == CONTINUATION:
            if not self._opcode:
                self._fail("MALFORMED_RESPONSE", "a WebSocket continuation frame without a message")
        elif opcode in _DATA:
            if self._opcode:
                self._fail("MALFORMED_RESPONSE", "a WebSocket data frame inside a fragmented message")
        else:
            self._fail("MALFORMED_RESPONSE", f"a WebSocket frame with the unknown opcode {opcode:#x}")
        if self._fragments_size + size > self._max:
            self._fail("EVENT_TOO_LARGE", f"WebSocket message exceeds the maximum size of {self._max} bytes")

    def _frame(self, opcode: int, fin: int, payload: bytes) -> WsMessage | None:
        if opcode in _CONTROL:
            if opcode == CLOSE:
                try:
                    read_close(payload)
                except Exception:  # noqa: BLE001 - recorded as this decoder's failure
                    self._fail("MALFORMED_RESPONSE", "a malformed WebSocket close frame")
            return WsMessage(opcode, payload)
        if opcode != CONTINUATION:
            if fin:
                return self._whole(opcode, payload)
            self._opcode = opcode
        self._fragments.append(payload)
        self._fragments_size += len(payload)
        if not fin:
            return None
        whole = b"".join(self._fragments)
        opcode = self._opcode
        self._fragments = []
        self._fragments_size = 0
        self._opcode = 0
        return self._whole(opcode, whole)

    def _whole(self, opcode: int, payload: bytes) -> WsMessage:
        if opcode == TEXT:
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError:
                self._fail("MALFORMED_RESPONSE", "a WebSocket text message that is not UTF-8")
        return WsMessage(opcode, payload)

    def _fail(self, code: str, what: str) -> NoReturn:
        self._buffer = bytearray()
        self._fragments = []
        self._failure = make_failure(code, f"{what} ({code})")
        raise error_for(self._failure)
