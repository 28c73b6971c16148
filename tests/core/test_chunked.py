"""The chunked-transfer decoder: whole, byte by byte, at random cuts; strict framing; caps."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.chunked import MAX_LINE, MAX_TRAILERS, ChunkedDecoder
from dshstream._core.errors import TransportError


def frame(pieces: list[bytes], *, trailer: bytes = b"", ext: bytes = b"", upper: bool = False) -> bytes:
    out = []
    for piece in pieces:
        size = b"%X" % len(piece) if upper else b"%x" % len(piece)
        out.append(size + ext + b"\r\n" + piece + b"\r\n")
    return b"".join(out) + b"0" + ext + b"\r\n" + trailer + b"\r\n"


def decode_in(body: bytes, cuts: list[int]) -> tuple[bytes, ChunkedDecoder]:
    decoder = ChunkedDecoder()
    out = []
    prev = 0
    for cut in [*sorted(set(cuts)), len(body)]:
        out.append(decoder.feed(body[prev:cut]))
        prev = cut
    decoder.close()
    return b"".join(out), decoder


PIECES = [b"data: {\"a\":1}\n\n", b"x" * 70000, b"\r\n\r\n", b"0\r\n\r\n", b"z"]
PAYLOAD = b"".join(PIECES)


def test_whole_body_at_once() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(frame(PIECES)) == PAYLOAD
    assert decoder.done and decoder.extra == 0
    decoder.close()


def test_byte_by_byte() -> None:
    body = frame(PIECES[:1] * 5 + [b"y" * 300], trailer=b"X-Checksum: abc\r\n", ext=b";name=value")
    got, decoder = decode_in(body, list(range(1, len(body))))
    assert got == PIECES[0] * 5 + b"y" * 300 and decoder.done


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    data=st.data(),
    trailer=st.sampled_from([b"", b"X-A: 1\r\n", b"X-A: 1\r\nX-B:\t two words\r\n"]),
    ext=st.sampled_from([b"", b";a", b" ; a = b", b';q="a \\" b";r=1']),
    upper=st.booleans(),
)
def test_any_cut_points_give_the_same_payload(
    pieces: list[bytes], data: st.DataObject, trailer: bytes, ext: bytes, upper: bool
) -> None:
    body = frame(pieces, trailer=trailer, ext=ext, upper=upper)
    cuts = data.draw(st.lists(st.integers(min_value=1, max_value=max(1, len(body) - 1)), max_size=20))
    got, decoder = decode_in(body, cuts)
    assert got == b"".join(pieces) and decoder.done and decoder.extra == 0


def test_bare_lf_line_ends_on_size_and_trailer_lines() -> None:
    body = b"5\nhello\r\n6 \t\r\n world\r\n0\nX-T: 1\n\n"
    for cuts in ([], list(range(1, len(body)))):
        got, decoder = decode_in(body, cuts)
        assert got == b"hello world" and decoder.done


def test_bytes_after_the_end_are_counted_not_returned() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(frame([b"abc"]) + b"HTTP/1.1 200") == b"abc"
    assert decoder.done and decoder.extra == len(b"HTTP/1.1 200")
    assert decoder.feed(b"more") == b"" and decoder.extra == len(b"HTTP/1.1 200more")


def test_empty_feeds_change_nothing() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"3\r\nab") == b"ab"
    assert decoder.feed(b"") == b""
    assert decoder.feed(b"c\r") == b"c"
    assert decoder.feed(b"") == b""
    assert decoder.feed(b"\n0\r\n\r\n") == b"" and decoder.done


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"0x5\r\nhello\r\n0\r\n\r\n", "chunk-size line is malformed"),
        (b"+5\r\nhello\r\n0\r\n\r\n", "chunk-size line is malformed"),
        (b"5_0\r\n", "chunk-size line is malformed"),
        (b" 5\r\nhello\r\n0\r\n\r\n", "chunk-size line is malformed"),
        (b"\r\n", "chunk-size line is malformed"),
        (b"g\r\n", "chunk-size line is malformed"),
        (b"5\r\r\nhello\r\n", "chunk-size line is malformed"),
        (b"1" * 17 + b"\r\n", "chunk-size line is malformed"),
        (b"5;\r\nhello\r\n", "chunk-size line is malformed"),
        (b"5;a=\"open\r\nhello\r\n", "chunk-size line is malformed"),
        (b"5;a=b c\r\nhello\r\n", "chunk-size line is malformed"),
        (b"5\r\nhelloXY0\r\n\r\n", "not followed by CRLF"),
        (b"5\r\nhello\n0\r\n\r\n", "not followed by CRLF"),
        (b"5\r\nhello\rX", "not followed by CRLF"),
        (b"0\r\nno colon here\r\n\r\n", "trailer field line is malformed"),
        (b"0\r\nBad Name: 1\r\n\r\n", "trailer field line is malformed"),
        (b"0\r\nX-A: \x00\r\n\r\n", "trailer field line is malformed"),
        (b"f" * (MAX_LINE + 1), "exceeds"),
        (b"5;" + b"a" * MAX_LINE + b"\r\n", "exceeds"),
        (b"0\r\n" + b"X-A: " + b"a" * MAX_TRAILERS, "trailer section exceeds"),
        (b"0\r\n" + b"X-A: a\r\n" * (MAX_TRAILERS // 8 + 1), "trailer section exceeds"),
    ],
)
def test_malformed_framing_is_a_transport_error(body: bytes, what: str) -> None:
    for cuts in ([], list(range(1, min(len(body), 200))), [len(body) // 2]):
        decoder = ChunkedDecoder()
        with pytest.raises(TransportError) as caught:
            decode_in(body, cuts)
        assert what in caught.value.failure.message
        assert caught.value.failure.code == "TRANSPORT"
        assert "open" not in caught.value.failure.message  # the bytes are never echoed
        # a failed decoder stays failed
        decoder = ChunkedDecoder()
        with pytest.raises(TransportError):
            decoder.feed(body)
            decoder.close()
        with pytest.raises(TransportError):
            decoder.feed(b"0\r\n\r\n")


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"", "before its last chunk"),
        (b"5\r\nhel", "in the middle of a chunk"),
        (b"5\r\nhello", "in the middle of a chunk"),
        (b"5\r\nhello\r", "in the middle of a chunk"),
        (b"5\r\nhello\r\n", "before its last chunk"),
        (b"5", "in a chunk-size line"),
        (b"0\r\n", "in its trailer section"),
        (b"0\r\nX-A: 1\r\n", "in its trailer section"),
    ],
)
def test_a_cut_body_fails_on_close(body: bytes, what: str) -> None:
    decoder = ChunkedDecoder()
    decoder.feed(body)
    assert not decoder.done
    with pytest.raises(TransportError) as caught:
        decoder.close()
    assert what in caught.value.failure.message


def test_huge_sizes_are_counted_not_allocated() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"ffffffffffffffff\r\nabc") == b"abc"
    assert not decoder.done
    with pytest.raises(TransportError):
        decoder.close()


def test_held_lines_are_linear_in_the_input() -> None:
    # a size line (just under the cap) and a trailer section fed a byte at a time: each
    # byte is looked at a bounded number of times, not once per feed
    def run(n: int) -> float:
        body = b"1;" + b"e" * (n - 10) + b"\r\nx\r\n0\r\n" + b"X-A: 1\r\n" * (n // 8) + b"\r\n"
        started = time.process_time()  # this process's CPU: another process's load hardly moves it
        got, decoder = decode_in(body, list(range(1, len(body))))
        assert got == b"x" and decoder.done
        return time.process_time() - started

    run(MAX_LINE // 4)
    small, large = min(run(MAX_LINE // 4) for _ in range(5)), min(run(MAX_LINE) for _ in range(5))
    assert large < small * 12  # 4x the bytes; quadratic would be ~16x


def test_many_small_chunks_in_one_feed() -> None:
    pieces = [b"data: %d\n\n" % i for i in range(5000)]
    decoder = ChunkedDecoder()
    assert decoder.feed(frame(pieces)) == b"".join(pieces) and decoder.done


def test_payload_before_bad_framing_is_returned_then_the_failure_raised() -> None:
    decoder = ChunkedDecoder()
    assert decoder.feed(b"5\r\nhello\r\nzz\r\n") == b"hello"
    assert decoder.failed
    with pytest.raises(TransportError):
        decoder.feed(b"")
    with pytest.raises(TransportError):
        decoder.close()
