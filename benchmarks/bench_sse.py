"""Benchmark the SSE decoder (stdlib only).

Prints the per-event cost of decoding 20,000 typical ~250-byte OpenAI chunks fed in 64 KiB
pieces, next to the raw floor (``bytes.split`` + ``json.loads``), and the time to decode one
16 MB event against one 8 MB event (a ratio near 2 shows the decoder is linear).

Run: ``python benchmarks/bench_sse.py`` from the repository root. Each figure is the median
of 5 runs.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshstream._core.sse import ServerSentEvent, SSEDecoder  # noqa: E402

PIECE = 64 * 1024
N_EVENTS = 20_000


def median_time(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def pieces(body: bytes, size: int = PIECE) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def openai_body(n: int) -> bytes:
    events = []
    for i in range(n):
        chunk = {
            "id": "chatcmpl-9x8y7z6w5v4u3t2s1r0q",
            "object": "chat.completion.chunk",
            "created": 1718000000,
            "model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_0123456789",
            "choices": [
                {"index": 0, "delta": {"content": f" word{i % 97}"}, "logprobs": None, "finish_reason": None}
            ],
        }
        events.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


def anthropic_body(n: int) -> bytes:
    events = []
    for i in range(n):
        chunk = {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f" word{i % 97} and some more text here"},
        }
        events.append(
            b"event: content_block_delta\ndata: "
            + json.dumps(chunk, separators=(",", ":")).encode()
            + b"\n\n"
        )
    return b"".join(events)


def decode_all(parts: list[bytes]) -> int:
    dec = SSEDecoder()
    count = 0
    for part in parts:
        count += len(dec.feed(part))
    count += len(dec.close())
    return count


def bench_chunks(name: str, body: bytes, n_expected: int, crlf: bool = False) -> None:
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    parts = pieces(body)
    assert decode_all(parts) == n_expected
    sep = b"\r\n\r\n" if crlf else b"\n\n"
    prefix = len(b"data: ")

    def floor_split() -> None:
        for event in body.split(sep):
            event[prefix:]

    def floor_json() -> None:
        loads = json.loads
        for event in body.split(sep):
            start = event.find(b"data: ")
            if start >= 0 and event[start + prefix : start + prefix + 1] == b"{":
                loads(event[start + prefix :])

    def decoder_json() -> None:
        dec = SSEDecoder()
        loads = json.loads
        for part in parts:
            for ev in dec.feed(part):
                if isinstance(ev, ServerSentEvent) and ev.data[:1] == "{":
                    loads(ev.data)

    t_split = median_time(floor_split)
    t_dec = median_time(lambda: decode_all(parts))
    t_floor = median_time(floor_json)
    t_dec_json = median_time(decoder_json)
    us = 1e6 / n_expected
    print(
        f"{name:<28} {len(body) / n_expected:6.0f} B/event  "
        f"split {t_split * us:5.3f}  decoder {t_dec * us:5.3f}  "
        f"overhead {(t_dec - t_split) * us:5.3f} µs/event | "
        f"split+json {t_floor * us:5.3f}  decoder+json {t_dec_json * us:5.3f} µs/event"
    )


def bench_per_event_feeds(body: bytes) -> None:
    """One feed per event: what a transport sees when each network read is one event."""
    events = [event + b"\n\n" for event in body.split(b"\n\n")[:-1]]

    def floor_split() -> None:
        for event in events:
            event.split(b"\n\n")

    t_split = median_time(floor_split)
    t_dec = median_time(lambda: decode_all(events))
    us = 1e6 / len(events)
    print(
        f"{'openai, one event per feed':<28} {len(body) / len(events):6.0f} B/event  "
        f"split {t_split * us:5.3f}  decoder {t_dec * us:5.3f}  "
        f"overhead {(t_dec - t_split) * us:5.3f} µs/event"
    )


def bench_big(size: int, line: int | None) -> float:
    if line is None:
        body = b"data: " + b"x" * size + b"\n\n"
    else:
        row = b"data: " + b"x" * (line - 7) + b"\n"
        body = row * (size // len(row)) + b"\n"
    parts = pieces(body)

    def run() -> None:
        dec = SSEDecoder(max_event_size=32 * 1024 * 1024)
        out = []
        for part in parts:
            out.extend(dec.feed(part))
        assert len(out) == 1

    return median_time(run)


def main() -> None:
    print(f"Python {sys.version.split()[0]}; {PIECE // 1024} KiB feeds; median of 5")
    bench_chunks("openai data-only (LF)", openai_body(N_EVENTS), N_EVENTS + 1)
    bench_chunks("openai data-only (CRLF)", openai_body(N_EVENTS), N_EVENTS + 1, crlf=True)
    bench_chunks("anthropic event+data (LF)", anthropic_body(N_EVENTS), N_EVENTS)
    bench_per_event_feeds(openai_body(N_EVENTS))
    mb = 1024 * 1024
    for label, line in (("one line", None), ("1 KiB lines", 1024)):
        t8 = bench_big(8 * mb, line)
        t16 = bench_big(16 * mb, line)
        print(
            f"big event, {label:<11}  8 MB {t8 * 1e3:7.2f} ms  16 MB {t16 * 1e3:7.2f} ms  "
            f"ratio {t16 / t8:4.2f}"
        )


if __name__ == "__main__":
    main()
