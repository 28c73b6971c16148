"""Benchmark the streaming partial-JSON reader (stdlib only; jiter optional).

Streams a 1 MB JSON document (a structured-output-like object: records with escaped and
non-ASCII strings, numbers, booleans, nulls and nested arrays) in 20,000 pieces, and the
same kind of document at 2 MB in 40,000 pieces, through:

* ``feed``          ``PartialJsonReader.feed`` for every piece, no deltas;
* ``feed+deltas``   the same, producing the ``add``/``append`` deltas;
* ``partial_json``  ``dshstream.sansio.partial_json`` over 20,000 (40,000) ``TextDelta`` chunks:
                    one ``JsonSnapshot`` per piece, the last one's ``value`` read;
* ``+100 values``   the same, also reading the ``value`` of 100 snapshots evenly spread
                    (a fresh tree each, O(its size): what a UI pays per refresh it draws);
* ``json.loads``    the whole document parsed once: the floor of any Python JSON reading.

A 2 MB / 1 MB ratio near 2 shows the cost is linear (a reader that re-parsed its prefix
per piece would show ~4). The peer row is what the OpenAI SDK's streaming helper does: re-parse the
whole prefix with jiter (``from_json(prefix, partial_mode="trailing-strings")``, Rust)
after each piece. Quadratic, so it runs at 1/10 and 1/5 of the size (100 KB in 2,000
pieces, 200 KB in 4,000); its ``unsafe`` column counts snapshots that contradict a later
one (a number shown half-written, a value that changed), which dshstream's never do.

Run: ``python benchmarks/bench_partial_json.py`` from the repository root (about a
minute on a busy 2-core machine). Each figure is the best CPU time (``process_time``) of 5
runs (``+100 values``: 3; the peer's: one run).
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshstream import TextDelta  # noqa: E402
from dshstream.sansio import PartialJsonReader, partial_json  # noqa: E402


def best_time(fn: Callable[[], object], runs: int = 3) -> float:
    """Best CPU time (``time.process_time``) of ``runs``: on a shared machine wall time
    moves by 2x between runs, the CPU time of this process hardly at all."""
    times = []
    for _ in range(runs):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def document(size: int, seed: int = 7) -> str:
    """A JSON object of about ``size`` characters, indented like model output."""
    text = _document(size, seed)
    return _document(int(size * size / len(text)), seed)  # scaled for the indentation


def _document(size: int, seed: int) -> str:
    rnd = random.Random(seed)
    words = ["alpha", "beta", "café", "naïve", "日本語", "emoji 😀", 'say "hi"', "path\\to", "line\nbreak", "tab\t"]
    records: list[dict[str, Any]] = []
    total = 0
    while total < size:
        record = {
            "id": len(records),
            "title": " ".join(rnd.choice(words) for _ in range(rnd.randint(2, 12))),
            "score": round(rnd.uniform(-1000, 1000), rnd.randint(0, 6)),
            "ratio": rnd.random() * 10 ** rnd.randint(-8, 8),
            "big": rnd.randint(0, 10**20),
            "active": rnd.random() < 0.5,
            "parent": None if rnd.random() < 0.5 else rnd.randint(0, 1000),
            "tags": [rnd.choice(words) for _ in range(rnd.randint(0, 5))],
            "dims": {"w": rnd.randint(1, 99), "h": rnd.randint(1, 99), "unit": "cm"},
        }
        records.append(record)
        total += len(json.dumps(record, ensure_ascii=False)) + 8
    return json.dumps({"schema": "bench/1", "records": records, "count": len(records)}, indent=2, ensure_ascii=False)


def pieces_of(text: str, count: int) -> list[str]:
    step = -(-len(text) // count)
    return [text[i : i + step] for i in range(0, len(text), step)]


def read(pieces: list[str], deltas: bool) -> Any:
    reader = PartialJsonReader(deltas=deltas, max_chars=None)
    for piece in pieces:
        reader.feed(piece)
    reader.close()
    assert reader.done
    return reader


def through_chunks(chunks: list[TextDelta], values: int) -> Any:
    last = None
    every = max(1, len(chunks) // values) if values else 0
    for n, snapshot in enumerate(partial_json(chunks, max_chars=None)):
        if every and n % every == 0:
            snapshot.value  # noqa: B018 - building it is what is measured
        last = snapshot
    assert last is not None and last.done
    return last.value


def consistent(shown: Any, final: Any) -> bool:
    if type(shown) is not type(final):
        return False
    if isinstance(final, dict):
        keys = list(final)[: len(shown)]
        return list(shown) == keys and all(consistent(shown[k], final[k]) for k in keys)
    if isinstance(final, list):
        return len(shown) <= len(final) and all(consistent(a, b) for a, b in zip(shown, final))
    if isinstance(final, str):
        return final.startswith(shown)
    return bool(shown == final)


def jiter_reparse(pieces: list[str]) -> tuple[list[Any], Any]:
    from jiter import from_json

    shown = []
    buffer = ""
    for piece in pieces:
        buffer += piece
        try:
            shown.append(from_json(buffer.encode(), partial_mode="trailing-strings"))
        except ValueError:
            pass  # the OpenAI SDK skips a prefix jiter cannot read yet
    return shown, from_json(buffer.encode())


def main() -> None:
    print("partial JSON: 1 MB in 20,000 pieces and 2 MB in 40,000 (best of 5, CPU seconds)\n")
    rows: dict[str, list[float]] = {}
    for size, count in ((1_000_000, 20_000), (2_000_000, 40_000)):
        text = document(size)
        pieces = pieces_of(text, count)
        chunks = [TextDelta(0, p) for p in pieces]
        final = json.loads(text)
        assert read(pieces, True).snapshot == final
        assert through_chunks(chunks, 0) == final
        rows.setdefault("feed", []).append(best_time(lambda: read(pieces, False), 5))
        rows.setdefault("feed+deltas", []).append(best_time(lambda: read(pieces, True), 5))
        rows.setdefault("partial_json", []).append(best_time(lambda: through_chunks(chunks, 0), 5))
        rows.setdefault("+100 values", []).append(best_time(lambda: through_chunks(chunks, 100)))
        rows.setdefault("json.loads", []).append(best_time(lambda: json.loads(text), 5))
        print(f"  document: {len(text):,} characters in {len(pieces):,} pieces")
    print(f"\n  {'':14} {'1 MB':>8} {'2 MB':>8} {'2MB/1MB':>8} {'MB/s (1 MB)':>12}")
    for name, (one, two) in rows.items():
        print(f"  {name:14} {one:8.3f} {two:8.3f} {two / one:8.2f} {1 / one:12.1f}")

    try:
        import jiter  # noqa: F401
    except ImportError:
        print("\n  peer (jiter re-parse per piece): n/a (pip install jiter)")
        return
    print("\n  peer: jiter re-parse of the prefix per piece (the OpenAI SDK's helper)")
    print(f"  {'':14} {'CPU s':>8} {'unsafe':>8} {'snapshots':>10}")
    for size, count in ((100_000, 2_000), (200_000, 4_000)):
        pieces = pieces_of(document(size), count)
        t0 = time.process_time()
        shown, final = jiter_reparse(pieces)  # once: it is slow
        seconds = time.process_time() - t0
        # a snapshot is unsafe when what it shows is contradicted later (a half number, a changed value)
        unsafe = sum(1 for value in shown if not consistent(value, final))
        ours = best_time(lambda: read(pieces, True))
        label = f"{size // 1000} KB/{count:,}"
        print(f"  {label:14} {seconds:8.3f} {unsafe:8,} {len(shown):10,}   (dshstream feed+deltas: {ours:.3f} s, 0 unsafe)")


if __name__ == "__main__":
    main()
