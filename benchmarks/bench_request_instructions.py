"""Instructions per request, whole (send, headers, a 10-event chat stream read to its end),
counted by cachegrind: independent of the machine's load, unlike CPU time.

Run from the repository root (needs ``valgrind``; about a minute)::

    .venv/bin/python benchmarks/bench_request_instructions.py
    .venv/bin/python benchmarks/bench_request_instructions.py --framing close --requests 100,400

Each consumer of ``bench_first_chunk.py`` (``floor``: ``requests`` + ``split`` +
``json.loads``; ``dshstream``: ``LlmService.stream`` with ``OpenAIChatAdapter``) sends
requests one after the other to the same loopback server (its own process, never
counted) in a process run under ``valgrind --tool=cachegrind`` twice, with two request
counts; the difference of the two totals over the difference of the counts is the cost of
one request, start-up and warm-up cancelled out. The environment is this process's: the
number of variables changes what ``requests`` spends reading proxies from it.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _child(consumer: str, framing: str, count: int) -> None:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent))
    import bench_first_chunk as bench

    server = subprocess.Popen([sys.executable, str(HERE / "bench_first_chunk.py"), "--serve"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    base = f"http://127.0.0.1:{int(server.stdout.readline())}/{framing}"
    run = bench.floor(base) if consumer == "floor" else bench.dshstream(base)
    for _ in range(20 + count):
        run()
    server.stdin.close()
    server.wait(10)


def _instructions(consumer: str, framing: str, count: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         sys.executable, __file__, "--child", consumer, framing, str(count)],
        capture_output=True, text=True, check=True, cwd=HERE.parent,
    )
    match = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    assert match, out.stderr[-2000:]
    return int(match.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--framing", choices=["chunked", "close"], default="chunked")
    parser.add_argument("--requests", default="100,400", help="the two request counts (default 100,400)")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return 0
    low, high = (int(n) for n in args.requests.split(","))
    print(f"instructions per request ({args.framing}, {len(os.environ)} environment variables; "
          f"cachegrind, {low} and {high} requests)")
    per: dict[str, float] = {}
    for consumer in ("floor", "dshstream"):
        per[consumer] = (_instructions(consumer, args.framing, high) - _instructions(consumer, args.framing, low)) / (high - low)
        print(f"  {consumer:<10} {per[consumer] / 1e6:8.2f}M   {per[consumer] / per['floor']:.2f}x the floor")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
