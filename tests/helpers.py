"""Shared test helpers: fixture loading, split feeding, a loopback replay server."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from dshstream.decode import decode
from dshstream.types import StreamChunk

FIXTURES = Path(__file__).parent / "fixtures" / "real"


def fixture_bytes(relative: str) -> bytes:
    """The exact bytes of a recorded transcript under tests/fixtures/real."""
    return (FIXTURES / relative).read_bytes()


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (out-of-range and duplicate cuts ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    pieces = []
    start = 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def decode_all(data: bytes | Sequence[bytes], wire: str, **options: object) -> list[StreamChunk]:
    """Every chunk of a stream, as a list."""
    return list(decode(data, wire=wire, **options))  # type: ignore[arg-type]
