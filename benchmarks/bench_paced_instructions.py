"""CPU per event of a paced stream, counted in instructions (cachegrind): one event per read.

Run from the repository root::

    .venv/bin/python benchmarks/bench_paced_instructions.py                    # floor and dshstream, openai, chunked
    .venv/bin/python benchmarks/bench_paced_instructions.py --wires openai,anthropic --events 60

``bench_paced.py`` times many paced streams at once; its CPU per event moves with the
machine's load (wake-ups, cache misses, the other engineers' suites). This script counts
what the client executes instead, which the load does not move: ``bench_paced.py``'s
server (its own process, not counted) paces ``--events`` text deltas of the recorded
stream at ``--rate`` per second, one per HTTP chunk, so every read of the client carries
one event, as a provider's stream does; the client process runs ``floor`` or
``dshstream`` (``bench_paced.py``'s consumers: requests + ``read1`` + split +
``json.loads``, or ``LlmService.stream()`` with the real adapter) for 1 stream and for 3
streams, one after the other, under ``valgrind --tool=cachegrind``, and the difference,
over 2 streams' events, is the cost per event: the reads, the wake-ups' Python side, the
per-stream request and setup spread over its events, and every thread the library runs
meanwhile (the watchdog's ticks).

The rate is low enough (default 100 events/s: 10 ms apart, where valgrind's client takes
well under 1 ms per event) that the client, slowed down by valgrind, still waits for each
event and reads it alone; every text delta is checked to have arrived.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import bench_paced as paced  # noqa: E402  (its server and consumers)


def _client(url: str, consumer: str, wire: str, streams: int) -> int:
    """Run ``streams`` streams one after the other; the text deltas received."""
    factory, _ = paced.CONSUMERS[consumer]
    run = factory(url, wire)
    delays: list[float] = []
    for _ in range(streams):
        run(delays)
    return len(delays)


def _count(args: argparse.Namespace, url: str, consumer: str, wire: str, streams: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/cg.out"
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
               sys.executable, __file__, "--client", url, "--consumer", consumer, "--wire", wire,
               "--streams", str(streams)]
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        received = int(done.stdout.strip().splitlines()[-1])
        expected = streams * args.events
        if received != expected:
            raise RuntimeError(f"{consumer}: {received} text deltas, expected {expected}")
        for line in Path(out).read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError("no cachegrind summary")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--consumers", default="floor,dshstream")
    ap.add_argument("--wires", default="openai")
    ap.add_argument("--framing", default="chunked", choices=("chunked", "close"))
    ap.add_argument("--events", type=int, default=50, help="text events per stream")
    ap.add_argument("--rate", type=float, default=100.0, help="events per second")
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--consumer", help=argparse.SUPPRESS)
    ap.add_argument("--wire", help=argparse.SUPPRESS)
    ap.add_argument("--streams", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        print(_client(args.client, args.consumer, args.wire, args.streams))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        port_file = os.path.join(tmp, "port")
        server = subprocess.Popen([sys.executable, str(HERE / "bench_paced.py"), "--serve", port_file])
        try:
            while not os.path.exists(port_file) or not Path(port_file).read_text():
                time.sleep(0.05)
            base = f"http://127.0.0.1:{Path(port_file).read_text()}"
            url = f"{base}/{args.framing}/{args.events}/{args.rate:g}"
            print(f"instructions per event, paced ({args.rate:g} events/s, {args.events} per stream, "
                  f"{args.framing}; cachegrind, 3 streams minus 1, over 2 streams' events)")
            print(f"  {'wire':<10}{'consumer':<12}{'instr/event':>12}{'x floor':>9}")
            for wire in args.wires.split(","):
                floor = 0.0
                for consumer in args.consumers.split(","):
                    one = _count(args, url, consumer, wire, 1)
                    three = _count(args, url, consumer, wire, 3)
                    per_event = (three - one) / (2 * args.events)
                    if consumer == "floor":
                        floor = per_event
                    ratio = per_event / floor if floor else float("nan")
                    print(f"  {wire:<10}{consumer:<12}{per_event:>12,.0f}{ratio:>9.2f}", flush=True)
        finally:
            server.kill()
            server.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
