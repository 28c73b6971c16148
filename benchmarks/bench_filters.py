"""Benchmark the text filters (stdlib only).

Feeds a 200 KB and a 400 KB input three characters at a time through each incremental
filter (think-tag stripper, reasoning spill guard, verbatim tool-call parser) and repairs a
200 KB and a 400 KB truncated JSON object. A 400/200 ratio near 2 shows the cost is linear
in the input (a filter that rescanned its growing buffer would show ~4).

Run: ``python benchmarks/bench_filters.py`` from the repository root. Each figure is the
best of 7 runs.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dshstream._core.filters.json_repair import repair_incomplete_json  # noqa: E402
from dshstream._core.filters.spill_guard import ReasoningSpillGuard  # noqa: E402
from dshstream._core.filters.think_tags import ThinkTagStripper  # noqa: E402
from dshstream._core.filters.verbatim_tools import VerbatimToolCallParser  # noqa: E402

STEP = 3
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {
                "type": "object",
                "properties": {"media_id": {"type": "string"}},
                "required": ["media_id"],
            },
        },
    },
    {"name": "generate_image", "parameters": {"required": ["prompt", "mode"]}},
]


def best_time(fn: Callable[[], object], runs: int = 7) -> float:
    """Best of ``runs``: the figure least disturbed by other load on the machine."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def repeat_to(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def chunks(text: str) -> list[str]:
    return [text[i : i + STEP] for i in range(0, len(text), STEP)]


def think_input(size: int) -> str:
    unit = (
        "Visible text with a < b and <b>html</b>. "
        "<think>Reasoning, </thi-ish <mm:x> too.</think>\n"
    )
    return repeat_to(unit, size)


def spill_input(size: int) -> str:
    return "the reveal." + repeat_to("Wrrrf... lemme chew on this bone. ", size - 11)


def verbatim_input(size: int) -> str:
    unit = (
        'Some prose about read and files. `read_file("media_1")` then '
        'generate_image({"prompt": "a (cat)", "mode": "x"})\n'
        "You could use generate_image (it makes art) yourself.\n"
    )
    return repeat_to(unit, size)


def truncated_object(size: int) -> str:
    items = []
    length = 0
    i = 0
    while length < size:
        item = {"id": i, "name": f"item {i}", "tags": ["a", "b\"c"], "score": i * 0.5, "ok": True}
        items.append(item)
        length += len(json.dumps(item)) + 2
        i += 1
    return json.dumps({"scene": "hallway", "items": items})[:size]


def truncated_string(size: int) -> str:
    return '{"a": 1, "text": "' + repeat_to('word \\"quoted\\" ', size - 18)


def run_think(pieces: list[str]) -> None:
    stripper = ThinkTagStripper()
    for piece in pieces:
        stripper.feed(piece)
    stripper.flush()


def run_spill(pieces: list[str]) -> None:
    guard = ReasoningSpillGuard()
    guard.observe_reasoning("thinking")
    for piece in pieces:
        guard.filter_content(piece)
    guard.flush()


def run_verbatim(pieces: list[str]) -> None:
    parser = VerbatimToolCallParser(TOOLS)
    for piece in pieces:
        parser.feed(piece)
    parser.flush()


Prepare = Callable[[int], Callable[[], object]]


def fed(run: Callable[[list[str]], None], make: Callable[[int], str]) -> Prepare:
    def prepare(size: int) -> Callable[[], object]:
        pieces = chunks(make(size))
        return lambda: run(pieces)

    return prepare


def repaired(make: Callable[[int], str]) -> Prepare:
    def prepare(size: int) -> Callable[[], object]:
        text = make(size)
        return lambda: repair_incomplete_json(text)

    return prepare


def main() -> None:
    small, large = 200_000, 400_000
    cases: list[tuple[str, Prepare]] = [
        ("think tags (3-char feeds)", fed(run_think, think_input)),
        ("spill guard (3-char feeds)", fed(run_spill, spill_input)),
        ("verbatim tools (3-char feeds)", fed(run_verbatim, verbatim_input)),
        ("json repair (truncated object)", repaired(truncated_object)),
        ("json repair (truncated string)", repaired(truncated_string)),
    ]
    print(f"{'filter':34} {'200 KB':>10} {'400 KB':>10} {'ratio':>7}")
    for name, prepare in cases:
        t_small = best_time(prepare(small))
        t_large = best_time(prepare(large))
        print(f"{name:34} {t_small * 1000:8.1f}ms {t_large * 1000:8.1f}ms {t_large / t_small:7.2f}")


if __name__ == "__main__":
    main()
