"""The AWS event-stream framing decoder: recorded bodies whole and split anywhere, every
header type, corrupted checksums, impossible lengths, truncation, size limit, fuzz."""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.errors import LlmError, ProtocolError
from dshstream._core.eventstream import (
    EventStreamDecoder,
    EventStreamMessage,
    encode_message,
)

from helpers import FIXTURES

BEDROCK = sorted(p.name for p in (FIXTURES / "bedrock").glob("*.eventstream"))


def _read(name: str) -> bytes:
    return (FIXTURES / "bedrock" / name).read_bytes()


def _feed(pieces: list[bytes], **kw: int) -> list[EventStreamMessage]:
    decoder = EventStreamDecoder(**kw)
    out: list[EventStreamMessage] = []
    for piece in pieces:
        out += decoder.feed(piece)
    assert not decoder.has_partial_message
    out += decoder.close()
    return out


def _frames(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of every frame, read independently of the decoder."""
    frames = []
    pos = 0
    while pos < len(data):
        total = struct.unpack_from(">I", data, pos)[0]
        frames.append((pos, total))
        pos += total
    assert pos == len(data)
    return frames


@pytest.mark.parametrize("name", BEDROCK)
def test_recorded_bodies_whole(name: str) -> None:
    data = _read(name)
    messages = _feed([data])
    assert len(messages) == len(_frames(data))
    for message in messages:
        assert message.header(":message-type") == "event"
        assert message.header(":content-type") == "application/json"
        assert message.header(":event-type")
        assert message.payload.startswith(b"{")


@pytest.mark.parametrize("name", BEDROCK)
def test_recorded_bodies_byte_by_byte_and_random_splits(name: str) -> None:
    data = _read(name)
    whole = _feed([data])
    if len(data) <= 16 * 1024:
        assert _feed([data[i : i + 1] for i in range(len(data))]) == whole
    rng = random.Random(name)
    for _ in range(12):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 64))))
        pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]
        assert _feed(pieces) == whole


def test_every_two_way_split_point() -> None:
    data = _read("claude_sonnet45_document_citations.eventstream")
    whole = _feed([data])
    for cut in range(1, len(data)):
        assert _feed([data[:cut], data[cut:]]) == whole


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=1552), max_size=40))
def test_hypothesis_splits(cuts: list[int]) -> None:
    data = _read("claude_sonnet46_structured_output.eventstream")
    points = sorted({c for c in cuts if c < len(data)})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]
    assert _feed(pieces) == _feed([data])


def test_all_ten_header_types_round_trip() -> None:
    stamp = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=timezone.utc)
    ident = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")
    # encode_message writes ints as longs: build the short integer types by hand
    section = b"".join(
        [
            b"\x01t\x00",
            b"\x01f\x01",
            b"\x01b\x02" + struct.pack(">b", -5),
            b"\x01s\x03" + struct.pack(">h", -300),
            b"\x01i\x04" + struct.pack(">i", -70000),
            b"\x01l\x05" + struct.pack(">q", -(2**40)),
            b"\x02ba\x06" + struct.pack(">H", 3) + b"\x00\xff\x01",
            b"\x03str\x07" + struct.pack(">H", 4) + "h\u00e9".encode() + b"!",
            b"\x02ts\x08" + struct.pack(">q", 1714979289123),
            b"\x02id\x09" + ident.bytes,
        ]
    )
    payload = b'{"x":1}'
    total = 12 + len(section) + len(payload) + 4
    prelude = struct.pack(">II", total, len(section))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + section + payload
    frame = body + struct.pack(">I", zlib.crc32(body))
    (message,) = _feed([frame])
    assert message.headers == {
        "t": True,
        "f": False,
        "b": -5,
        "s": -300,
        "i": -70000,
        "l": -(2**40),
        "ba": b"\x00\xff\x01",
        "str": "h\u00e9!",
        "ts": stamp,
        "id": ident,
    }
    assert message.payload == payload
    again = encode_message(dict(message.headers), payload)
    assert _feed([again]) == [message]


def test_empty_message_and_unknown_header_type() -> None:
    assert _feed([encode_message({})]) == [EventStreamMessage({}, b"")]
    section = b"\x01x\x0a"  # type 10 does not exist
    prelude = struct.pack(">II", 12 + len(section) + 4, len(section))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + section
    with pytest.raises(ProtocolError) as info:
        EventStreamDecoder().feed(body + struct.pack(">I", zlib.crc32(body)))
    assert info.value.failure.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize("where", ["prelude-crc", "message-crc", "payload", "header", "length"])
def test_corruption_is_malformed_and_sticky(where: str) -> None:
    data = bytearray(_read("nova_micro_text.eventstream"))
    offset, total = _frames(bytes(data))[3]
    position = {
        "prelude-crc": offset + 9,
        "message-crc": offset + total - 1,
        "payload": offset + total - 6,
        "header": offset + 13,
        "length": offset + 2,
    }[where]
    data[position] ^= 0x40
    decoder = EventStreamDecoder()
    with pytest.raises(ProtocolError) as info:
        decoder.feed(bytes(data))
    assert info.value.failure.code == "MALFORMED_RESPONSE"
    with pytest.raises(ProtocolError):  # the failure is final
        decoder.feed(b"\x00")
    with pytest.raises(ProtocolError):
        decoder.close()


def test_impossible_lengths_with_valid_prelude_crc() -> None:
    for total, headers in ((0, 0), (15, 0), (16, 1), (100, 90)):
        prelude = struct.pack(">II", total, headers)
        with pytest.raises(ProtocolError) as info:
            EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))
        assert info.value.failure.code == "MALFORMED_RESPONSE"


def test_header_overrunning_its_section_is_malformed() -> None:
    section = b"\x05abc"  # name length 5, only 3 bytes follow
    prelude = struct.pack(">II", 12 + len(section) + 4, len(section))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + section
    with pytest.raises(ProtocolError):
        EventStreamDecoder().feed(body + struct.pack(">I", zlib.crc32(body)))


def test_oversize_fails_on_the_prelude_without_buffering() -> None:
    frame = encode_message({":event-type": "x"}, b"a" * 5000)
    decoder = EventStreamDecoder(max_event_size=4096)
    with pytest.raises(ProtocolError) as info:
        for i in range(len(frame)):
            decoder.feed(frame[i : i + 1])
            assert i < 12  # raised once the prelude is complete
    assert info.value.failure.code == "EVENT_TOO_LARGE"
    assert not decoder.has_partial_message
    # a 4 GiB claim is refused the same way, before any payload arrives
    prelude = struct.pack(">II", 2**32 - 1, 0)
    with pytest.raises(ProtocolError) as info:
        EventStreamDecoder().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))
    assert info.value.failure.code == "EVENT_TOO_LARGE"
    assert len(_feed([frame], max_event_size=len(frame))) == 1


def test_truncation_is_reported_and_discarded() -> None:
    data = _read("nova_micro_text.eventstream")
    frames = _frames(data)
    for cut in (1, 11, 12, frames[1][0] - 1, frames[1][0] + 20, len(data) - 1):
        decoder = EventStreamDecoder()
        got = decoder.feed(data[:cut])
        assert decoder.has_partial_message
        assert len(got) == sum(1 for off, size in frames if off + size <= cut)
        assert decoder.close() == []
        assert not decoder.has_partial_message


def test_linear_for_many_small_frames_and_one_big_payload() -> None:
    frame = encode_message({":event-type": "chunk"}, b"x" * 10)
    many = frame * 20000
    assert len(_feed([many[i : i + 7] for i in range(0, len(many), 7)])) == 20000
    big = encode_message({}, b"y" * (4 * 1024 * 1024))
    (message,) = _feed([big[i : i + 1000] for i in range(0, len(big), 1000)])
    assert len(message.payload) == 4 * 1024 * 1024


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.integers(min_value=1, max_value=64))
def test_fuzz_never_crashes(noise: bytes, step: int) -> None:
    decoder = EventStreamDecoder(max_event_size=4096)
    try:
        for i in range(0, len(noise), step):
            decoder.feed(noise[i : i + step])
        decoder.close()
    except LlmError as exc:
        assert exc.failure.code in ("MALFORMED_RESPONSE", "EVENT_TOO_LARGE")


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=5389), st.integers(min_value=0, max_value=7))
def test_fuzz_bit_flips_in_a_recorded_body(position: int, bit: int) -> None:
    data = bytearray(_read("claude37_redacted_reasoning.eventstream"))
    data[position] ^= 1 << bit
    with pytest.raises(ProtocolError) as info:
        _feed([bytes(data)])
    assert info.value.failure.code in ("MALFORMED_RESPONSE", "EVENT_TOO_LARGE")
