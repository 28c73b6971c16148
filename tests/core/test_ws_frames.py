"""WebSocket framing (dshstream._core.ws_frames): RFC 6455's own examples, every rule of
the decoder, and the same messages whatever the split points."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.errors import LlmError
from dshstream._core.ws_frames import (
    BINARY,
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    FrameDecoder,
    WsMessage,
    apply_mask,
    close_payload,
    encode_frame,
    read_close,
)
from helpers import split_at


def _frame(first: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """A frame with an arbitrary first byte (FIN, RSV, opcode), for the refusals."""
    size = len(payload)
    bit = 0x80 if mask is not None else 0
    head = bytes([first, bit | size]) if size < 126 else bytes([first, bit | 126]) + struct.pack("!H", size)
    return head + (mask + apply_mask(payload, mask) if mask is not None else payload)


def _pending(decoder: FrameDecoder) -> bool:
    return decoder.pending  # read through a call: mypy would narrow the property


def _code(call: object) -> str:
    with pytest.raises(LlmError) as caught:
        call()  # type: ignore[operator]
    return caught.value.failure.code


# --------------------------------------------------------------------------- RFC 6455 section 5.7


def test_the_rfc_examples_decode() -> None:
    client = FrameDecoder()
    assert client.feed(bytes.fromhex("810548656c6c6f")) == [WsMessage(TEXT, b"Hello")]
    # "Hel" then "lo": a fragmented unmasked text message
    assert client.feed(bytes.fromhex("010348656c")) == []
    assert _pending(client)
    assert client.feed(bytes.fromhex("80026c6f")) == [WsMessage(TEXT, b"Hello")]
    assert not _pending(client)
    # an unmasked ping, and 256 bytes of binary (16-bit length)
    assert client.feed(bytes.fromhex("890548656c6c6f")) == [WsMessage(PING, b"Hello")]
    assert client.feed(bytes.fromhex("827e0100") + b"\x00" * 256) == [WsMessage(BINARY, b"\x00" * 256)]
    # 64 KiB of binary (64-bit length)
    assert client.feed(bytes.fromhex("827f0000000000010000") + b"\x01" * 65536) == [
        WsMessage(BINARY, b"\x01" * 65536)
    ]
    server = FrameDecoder(masked=True)
    # the masked "Hello" a client sends, and a masked pong
    assert server.feed(bytes.fromhex("818537fa213d7f9f4d5158")) == [WsMessage(TEXT, b"Hello")]
    assert server.feed(bytes.fromhex("8a8537fa213d7f9f4d5158")) == [WsMessage(PONG, b"Hello")]


def test_the_encoder_writes_the_rfc_examples() -> None:
    assert encode_frame(TEXT, b"Hello") == bytes.fromhex("810548656c6c6f")
    assert encode_frame(TEXT, b"Hello", bytes.fromhex("37fa213d")) == bytes.fromhex("818537fa213d7f9f4d5158")
    assert encode_frame(BINARY, b"\x00" * 256)[:4] == bytes.fromhex("827e0100")
    assert encode_frame(BINARY, b"\x00" * 65536)[:10] == bytes.fromhex("827f0000000000010000")
    with pytest.raises(ValueError):
        encode_frame(TEXT, b"x", b"abc")


def test_masking_is_its_own_inverse() -> None:
    for size in (0, 1, 3, 4, 5, 125, 126, 4097):
        data = os.urandom(size)
        mask = os.urandom(4)
        assert apply_mask(apply_mask(data, mask), mask) == data
    assert apply_mask(b"", b"abcd") == b""


def test_close_payloads() -> None:
    assert read_close(close_payload(1000, "bye")) == (1000, "bye")
    assert read_close(b"") == (1005, "")
    assert _code(lambda: read_close(b"\x03")) == "MALFORMED_RESPONSE"
    assert _code(lambda: read_close(b"\x03\xe8\xff")) == "MALFORMED_RESPONSE"
    assert len(close_payload(1000, "x" * 500)) == 125  # a control frame's limit


def test_control_frames_between_fragments_come_out_first() -> None:
    decoder = FrameDecoder()
    stream = _frame(0x01, b"{\"a\":") + encode_frame(PING, b"p") + _frame(0x80, b"1}")
    assert decoder.feed(stream) == [WsMessage(PING, b"p"), WsMessage(TEXT, b'{"a":1}')]


# --------------------------------------------------------------------------- refusals (rules 2-6)


@pytest.mark.parametrize(
    "data",
    [
        _frame(0xC1, b"x"),  # RSV1 set: no extension was negotiated
        _frame(0x83, b"x"),  # an unknown data opcode
        _frame(0x8B, b""),  # an unknown control opcode
        _frame(0x09, b"x"),  # a fragmented ping
        bytes([0x89, 126]) + struct.pack("!H", 126) + b"x" * 126,  # a ping over 125 bytes
        _frame(0x80, b"x"),  # a continuation without a message
        _frame(0x01, b"x") + _frame(0x81, b"y"),  # a data frame inside a fragmented message
        bytes([0x82, 127]) + struct.pack("!Q", 1 << 63),  # a length with its top bit set
        _frame(0x81, b"\xff\xfe"),  # text that is not UTF-8
        _frame(0x88, b"\x03"),  # a close frame of one byte
        _frame(0x81, b"x", b"abcd"),  # a masked frame from a server
    ],
)
def test_protocol_violations_are_malformed(data: bytes) -> None:
    decoder = FrameDecoder()
    assert _code(lambda: decoder.feed(data)) == "MALFORMED_RESPONSE"
    # rule 6: failed for good
    assert _code(lambda: decoder.feed(encode_frame(TEXT, b"fine"))) == "MALFORMED_RESPONSE"


def test_a_server_refuses_unmasked_frames() -> None:
    assert _code(lambda: FrameDecoder(masked=True).feed(encode_frame(TEXT, b"x"))) == "MALFORMED_RESPONSE"


def test_an_oversized_message_is_refused_from_its_header() -> None:
    decoder = FrameDecoder(max_message_size=1000)
    # only the header of a 1 MiB frame: refused before any payload is buffered (rule 5)
    assert _code(lambda: decoder.feed(bytes([0x82, 127]) + struct.pack("!Q", 1 << 20))) == "EVENT_TOO_LARGE"
    fragments = FrameDecoder(max_message_size=1000)
    assert fragments.feed(_frame(0x01, b"a" * 600)) == []
    assert _code(lambda: fragments.feed(_frame(0x80, b"a" * 600))) == "EVENT_TOO_LARGE"
    exact = FrameDecoder(max_message_size=1000)
    assert exact.feed(encode_frame(TEXT, b"a" * 1000)) == [WsMessage(TEXT, b"a" * 1000)]
    with pytest.raises(ValueError):
        FrameDecoder(max_message_size=0)


def test_pending_says_a_frame_was_cut() -> None:
    decoder = FrameDecoder()
    frame = encode_frame(TEXT, b"hello there")
    assert decoder.feed(frame[:5]) == []
    assert _pending(decoder)
    assert decoder.feed(frame[5:]) == [WsMessage(TEXT, b"hello there")]
    assert not _pending(decoder)


# --------------------------------------------------------------------------- split invariance (rule 1)

_messages = st.lists(
    st.tuples(
        st.sampled_from(["text", "binary", "ping", "pong", "close"]),
        st.binary(max_size=300),
        st.integers(min_value=1, max_value=4),  # fragments of a data message
    ),
    min_size=1,
    max_size=12,
)


def _encode(messages: list[tuple[str, bytes, int]], mask: bool) -> tuple[bytes, list[WsMessage]]:
    wire = bytearray()
    expected = []
    for kind, payload, parts in messages:
        key = os.urandom(4) if mask else None
        if kind in ("ping", "pong", "close"):
            opcode = {"ping": PING, "pong": PONG, "close": CLOSE}[kind]
            body = payload[:125] if kind != "close" else close_payload(1000 + len(payload) % 100)
            wire += encode_frame(opcode, body, key)
            expected.append(WsMessage(opcode, body))
            continue
        opcode = TEXT if kind == "text" else BINARY
        body = payload.decode("latin-1").encode("utf-8") if kind == "text" else payload  # valid UTF-8
        size = max(1, len(body) // parts)
        pieces = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
        for index, piece in enumerate(pieces):
            first = (0x80 if index == len(pieces) - 1 else 0) | (opcode if index == 0 else CONTINUATION)
            wire += _frame(first, piece, key) if len(piece) < 65536 else encode_frame(opcode, piece, key)
        expected.append(WsMessage(opcode, body))
    return bytes(wire), expected


@settings(max_examples=60, deadline=None)
@given(messages=_messages, cuts=st.lists(st.integers(min_value=1, max_value=20000), max_size=30), mask=st.booleans())
def test_the_same_messages_at_any_split(messages: list[tuple[str, bytes, int]], cuts: list[int], mask: bool) -> None:
    wire, expected = _encode(messages, mask)
    whole = FrameDecoder(masked=mask).feed(wire)
    assert whole == expected
    split = FrameDecoder(masked=mask)
    got: list[WsMessage] = []
    for piece in split_at(wire, cuts):
        got += split.feed(piece)
    assert got == expected
    assert not split.pending


def test_byte_by_byte() -> None:
    wire, expected = _encode([("text", b"{\"type\":\"response.created\"}", 3), ("ping", b"x", 1)], mask=False)
    decoder = FrameDecoder()
    got: list[WsMessage] = []
    for index in range(len(wire)):
        got += decoder.feed(wire[index : index + 1])
    assert got == expected
