"""Per-event cost of each layer, one event per read, in one process (no HTTP, no server).

Run from the repository root::

    .venv/bin/python benchmarks/bench_per_event.py               # (a), (b), (c), (d); about a minute
    .venv/bin/python benchmarks/bench_per_event.py --workloads a,c --scale 1 --repeats 15
    .venv/bin/python benchmarks/bench_per_event.py --bulk        # 64 KiB pieces instead

What a paced stream costs per event is what a read of one event costs: every layer runs
once per event. ``run.py`` measures it over loopback HTTP, where the machine's load moves
the numbers; this script takes the HTTP read away and times each layer on the same
pre-rendered body (run.py's workloads, cut into one piece per event), all in one process,
interleaved: ``--repeats`` rounds, each running every layer once, and the best
``time.process_time()`` of each layer reported (an A/B that load hardly moves).

Layers, each including the ones before it except the floor:

* ``floor``: run.py's floor on the pieces: ``bytes.split(b"\\n")`` + ``json.loads`` of each
  ``data:`` line (what ``run.py``'s floor does after its read).
* ``sse``: ``SSEDecoder.feed`` per piece.
* ``decode``: SSE + the wire translator (``StreamDecoder``'s two stages, as the pump calls
  them: ``SSEDecoder.feed_with`` into ``Translator.feed_data``, plus one call per piece).
* ``assemble``: + ``BlockAssembler.push`` of every chunk and the final ``result()`` (what
  the next layers do too, so their difference is the per-read machinery alone).
* ``pump``: the byte pump over a fake body (one piece per read) into a ``ChunkStream``,
  ``result()``.
* ``service``: ``LlmService.stream(options).result()`` with the real adapter whose
  transport hands out the pieces: service, adapter attempts, pump, ``ChunkStream``.

``--profile`` adds a cProfile of the ``service`` layer (top functions by self time).

``--instructions`` counts CPU instructions instead of timing (``valgrind
--tool=cachegrind``, which the machine's load does not move): each layer runs once and
three times in two processes under cachegrind, and the difference over two runs is its
cost per event (about 30 s per layer and workload).

With the ``fastjson`` extra installed, every layer past ``sse`` runs twice in each round:
with the standard library's JSON and, as ``NAME+fj``, with the fast parser
(``strict_json`` rule 6); ``--json stdlib`` or ``--json fast`` runs one of them only.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (run.py's workloads, rendered the same way)


class _Body:
    """The pump's body: one piece per read; the idle clock and release are no-ops."""

    request_id = "req_bench"
    headers: dict[str, str] = {}

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.pieces)

    def __enter__(self) -> _Body:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def touch(self) -> None:
        pass

    def quiet(self, working: bool) -> None:
        pass

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        pass

    def raise_if_aborted(self) -> None:
        pass


class _Transport:
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    def open(self, request: Any, **kwargs: Any) -> _Body:
        return _Body(self.pieces)


def _service(w: bench.Workload, pieces: list[bytes]) -> Callable[[], None]:
    from dshstream import GenerateOptions, LlmService, Message

    adapter: Any
    if w.wire == "openai":
        from dshstream._adapters.openai_chat import OpenAIChatAdapter

        adapter = OpenAIChatAdapter(api_key="sk-bench", base_url="http://127.0.0.1:9/v1", dialect=w.dialect)
        model = "gpt-4.1-nano"
    elif w.wire == "anthropic":
        from dshstream._adapters.anthropic import AnthropicAdapter

        adapter = AnthropicAdapter(api_key="sk-ant-bench", base_url="http://127.0.0.1:9")
        model = "claude-sonnet-4-5"
    else:
        from dshstream._adapters.gemini import GeminiAdapter

        adapter = GeminiAdapter(api_key="gm-bench", base_url="http://127.0.0.1:9")
        model = "gemini-2.5-pro"
    adapter.transport = _Transport(pieces)
    service = LlmService()
    service.register_adapter(["bench"], adapter)
    options = GenerateOptions(
        provider="bench", model=model, messages=(Message.user("Write the answer."),), max_retries=0
    )

    def run() -> None:
        result = service.stream(options).result()
        if not result.ok:
            raise RuntimeError(f"service layer failed: {result.finish}")

    return run


def layers(w: bench.Workload, pieces: list[bytes]) -> list[tuple[str, Callable[[], None]]]:
    from dshstream._chunk_stream import ChunkStream
    from dshstream._core.assembler import BlockAssembler
    from dshstream._core.decode import StreamDecoder, translator_for
    from dshstream._core.pump import pump
    from dshstream._core.sse import SSEDecoder

    wire = bench._DSH_WIRES[w.wire] if w.wire != "openai" else w.dialect
    loads = json.loads

    def floor() -> None:
        tail = b""
        for data in pieces:
            lines = (tail + data).split(b"\n") if tail else data.split(b"\n")
            tail = lines.pop()
            for line in lines:
                if line[:5] == b"data:" and line[6:12] != b"[DONE]":
                    loads(line[5:])

    def sse() -> None:
        feed = SSEDecoder().feed
        for piece in pieces:
            feed(piece)

    def stages(decoder: Any) -> Callable[[bytes], Any]:
        """One piece through the decoder's two stages, as the pump calls them (a whole
        event from ``feed_with`` straight to ``feed_data``)."""
        frame, one, translate = decoder.framer.feed_with, decoder.translator.feed_data, decoder.translator.feed_events

        def feed(piece: bytes) -> Any:
            return frame(piece, one, translate)

        return feed

    def decode() -> None:
        decoder = StreamDecoder(translator_for(wire))
        feed = stages(decoder)
        for piece in pieces:
            feed(piece)
        decoder.close()

    def assemble() -> None:
        decoder = StreamDecoder(translator_for(wire))
        feed = stages(decoder)
        assembler = BlockAssembler()
        push = assembler.push
        for piece in pieces:
            for chunk in feed(piece):
                push(chunk)
        for chunk in decoder.close():
            push(chunk)
        assembler.result()

    def pumped() -> None:
        decoder = StreamDecoder(translator_for(wire))
        ChunkStream(pump(_Body(pieces), decoder, cancel=None, provider="bench")).result()

    return [
        ("floor", floor),
        ("sse", sse),
        ("decode", decode),
        ("assemble", assemble),
        ("pump", pumped),
        ("service", _service(w, pieces)),
    ]


def _json_variants(rows: list[tuple[str, Callable[[], None]]], which: str) -> list[tuple[str, Callable[[], None]]]:
    """Each layer past ``sse`` with the stdlib JSON path and/or the fast parser (``+fj``)."""
    from dshstream._core import strict_json

    fast = getattr(strict_json, "fast_decoder", lambda: None)()  # None before the fastjson extra
    if fast is None and which != "stdlib":
        print("  (fast JSON: not installed or DSHSTREAM_FAST_JSON=0; stdlib only)")
        which = "stdlib"

    def using(decoder: Callable[[str], Any] | None, fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            strict_json._fast_decode = decoder
            fn()

        return run

    out: list[tuple[str, Callable[[], None]]] = []
    for name, fn in rows:
        if name in ("floor", "sse"):
            out.append((name, fn))
            continue
        if which in ("both", "stdlib"):
            out.append((name, using(None, fn)))
        if which in ("both", "fast"):
            out.append((name + "+fj", using(fast, fn)))
    return out


def measure(w: bench.Workload, pieces: list[bytes], repeats: int, which: str = "both") -> dict[str, float]:
    rows = _json_variants(layers(w, pieces), which)
    best = {name: float("inf") for name, _ in rows}
    for name, fn in rows:
        fn()  # warm-up (imports, caches)
    for _ in range(repeats):
        for name, fn in rows:
            gc.collect()
            t0 = time.process_time()
            fn()
            best[name] = min(best[name], time.process_time() - t0)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", default="a,b,c,d")
    parser.add_argument("--scale", type=float, default=0.25, help="workload size (1 = run.py's full size)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--bulk", action="store_true", help="64 KiB pieces instead of one event each")
    parser.add_argument("--profile", action="store_true", help="also cProfile the service layer")
    parser.add_argument("--json", choices=("both", "stdlib", "fast"), default="both", help="which JSON path (fastjson extra)")
    parser.add_argument("--instructions", action="store_true", help="count instructions with cachegrind instead")
    parser.add_argument("--layers", default="floor,sse,decode,service", help="the layers --instructions counts")
    parser.add_argument("--run-layer", default="", help=argparse.SUPPRESS)
    parser.add_argument("--times", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    import os

    if args.run_layer:  # one layer, --times times, untimed: what cachegrind counts
        w = bench.build_workload(args.workloads, args.scale)
        pieces = bench._pieces(w.body, 0)
        rows = dict(_json_variants(layers(w, pieces), args.json))
        for _ in range(args.times):
            rows[args.run_layer]()
        return 0
    if args.instructions:
        return count_instructions(args)
    print(f"per-event layer costs, {'64 KiB pieces' if args.bulk else 'one event per read'}, "
          f"best of {args.repeats} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    for key in args.workloads.split(","):
        w = bench.build_workload(key, args.scale)
        if w.wire == "bedrock":
            print(f"[{key}] skipped: event-stream body (run.py --profile f)")
            continue
        body = w.body
        pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)] if args.bulk else bench._pieces(body, 0)
        best = measure(w, pieces, args.repeats, args.json)
        base = best["floor"]
        print(f"\n[{key}] {w.title}: {w.events:,} events, {len(pieces):,} pieces")
        print(f"  {'layer':<10}{'ms':>9}{'us/event':>10}{'x floor':>9}")
        for name, t in best.items():
            print(f"  {name:<10}{t * 1e3:>9.2f}{t / w.events * 1e6:>10.2f}{t / base:>9.2f}")
        if args.profile:
            import cProfile
            import pstats

            run = dict(layers(w, pieces))["service"]
            profiler = cProfile.Profile()
            profiler.enable()
            run()
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return 0


def _cachegrind(args: argparse.Namespace, key: str, layer: str, which: str, times: int) -> int:
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/cg.out"
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
               sys.executable, __file__, "--workloads", key, "--scale", str(args.scale), "--json", which,
               "--run-layer", layer, "--times", str(times)]
        subprocess.run(cmd, check=True, capture_output=True)
        for line in Path(out).read_text().splitlines():
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError("no cachegrind summary")


def count_instructions(args: argparse.Namespace) -> int:
    from dshstream._core import strict_json

    fast = getattr(strict_json, "fast_decoder", lambda: None)() is not None
    print(f"instructions per event (cachegrind; 3 runs minus 1 run, over 2 runs), scale {args.scale}")
    print(f"  {'wl':<4}{'layer':<14}{'instr/event':>12}{'x floor':>9}")
    for key in args.workloads.split(","):
        w = bench.build_workload(key, args.scale)
        floor = 0.0
        for layer in args.layers.split(","):
            variants = ["stdlib"] if layer in ("floor", "sse") else [v for v in ("stdlib", "fast") if v == "stdlib" or fast]
            if args.json != "both":
                variants = [v for v in variants if v == args.json] or variants[:1]
            for which in variants:
                name = layer if which == "stdlib" or layer in ("floor", "sse") else layer + "+fj"
                one = _cachegrind(args, key, name, which, 1)
                three = _cachegrind(args, key, name, which, 3)
                per_event = (three - one) / 2 / w.events
                if layer == "floor":
                    floor = per_event
                ratio = per_event / floor if floor else float("nan")
                print(f"  {key:<4}{name:<14}{per_event:>12,.0f}{ratio:>9.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
