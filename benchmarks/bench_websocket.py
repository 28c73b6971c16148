"""A 20-step tool loop over HTTP and over one WebSocket, on loopback: wall time and client CPU.

Run from the repository root::

    .venv/bin/python benchmarks/bench_websocket.py              # 20 steps, 7 runs per transport
    .venv/bin/python benchmarks/bench_websocket.py --steps 40 --runs 11
    .venv/bin/python benchmarks/bench_websocket.py --pace-ms 2  # a paced model: 2 ms between events

* **Server.** ``tests/wsserver.py`` in a separate process (its CPU is not counted): every
  ``response.create`` message on the socket, and every ``POST /v1/responses`` over HTTP
  (kept alive, one HTTP chunk per event, as providers write), gets the next turn of the
  same script — ``steps - 1`` recorded function-call turns
  (``tests/fixtures/real/openai-responses/function_call.sse``: ``get_capital``) then one
  recorded text turn (``text.sse``).
* **Client.** ``run_tools`` with ``OpenAIResponsesAdapter`` on an ``LlmService``: over HTTP
  (the adapter itself), over the socket (``adapter.connect()``, a fresh session per run,
  so every run pays its one connect and upgrade) and over the socket chained
  (``connect(chain=True)``: every step after the first sends ``previous_response_id`` and
  its new items, not the growing history; the loopback server answers from its script
  either way, so this measures the client's side only). Each run checks that the loop ran every
  step and ended with the recorded text, and, for the socket, that every turn went over it.
* **Reported** per transport: median and best wall time of the whole loop, median client
  CPU (``time.process_time()``: every thread of this process), both per step too, and the
  socket's figures relative to HTTP's. Runs alternate between the transports, so a busy
  machine slows both alike.

On loopback there is no round trip and no TLS handshake to save: what is left is what each
transport costs the client per step (an HTTP request and its response headers, versus one
WebSocket frame out), which is what this measures. OpenAI's "up to ~40% faster" for long
tool loops comes from what loopback cannot show — the network round trips and the server
keeping the conversation's state on the connection.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
sys.path.insert(0, str(ROOT))

from dshstream import GenerateOptions, LlmService, Message, OpenAIResponsesAdapter, ToolSpec, run_tools  # noqa: E402

_SERVE = """
import sys, time
sys.path.insert(0, {tests!r})
from helpers import fixture_bytes
from wsserver import Turn, WsServer, events_of
call = events_of(fixture_bytes("openai-responses/function_call.sse"))
text = events_of(fixture_bytes("openai-responses/text.sse"))
pace = {pace!r}
script = ([Turn(call, pace=pace)] * ({steps} - 1) + [Turn(text, pace=pace)]) * {loops}
with WsServer(script) as server:
    print(server.port, flush=True)
    sys.stdin.read()  # until the benchmark closes it
"""


def _server(steps: int, loops: int, pace: float) -> tuple[subprocess.Popen[str], int]:
    code = _SERVE.format(tests=str(TESTS), steps=steps, loops=loops, pace=pace)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)])}
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def _loop(adapter: Any, steps: int) -> tuple[float, float, Any]:
    spec = ToolSpec("get_capital", "The capital of a country", {"type": "object", "properties": {}})
    service = LlmService()
    service.register_adapter(["openai"], adapter)
    options = GenerateOptions(provider="openai", model="gpt-4o", tools=(spec,), messages=(Message.user("Capital?"),))
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_tools(service, options, {"get_capital": lambda **kw: "Paris"}, max_steps=steps).result()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--pace-ms", type=float, default=0.0, help="milliseconds between a turn's events")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    runs, steps = args.runs, args.steps
    process, port = _server(steps, 3 * (runs + 1), args.pace_ms / 1000)
    base_url = f"http://127.0.0.1:{port}/v1"
    names = ("http", "websocket", "ws+chain")
    figures: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": []} for name in names}
    try:
        for run in range(runs + 1):  # run 0 warms both up and is not counted
            for name in names:
                adapter = OpenAIResponsesAdapter(api_key="bench-key", base_url=base_url, max_retries=0)
                if name == "http":
                    wall, cpu, result = _loop(adapter, steps)
                else:
                    with adapter.connect(chain=name == "ws+chain") as session:
                        wall, cpu, result = _loop(session, steps)
                        assert session.stats.socket_turns == steps and session.stats.connects == 1, session.stats
                        assert session.stats.chained_turns == (steps - 1 if name == "ws+chain" else 0), session.stats
                assert len(result.steps) == steps and result.text == "The capital of France is Paris.", result.stopped
                if run:
                    figures[name]["wall"].append(wall)
                    figures[name]["cpu"].append(cpu)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
    print(f"{steps}-step tool loop on loopback, {runs} runs per transport (pace {args.pace_ms:g} ms/event)")
    print(f"{'transport':<10} {'wall ms':>9} {'best':>9} {'per step':>9} {'CPU ms':>9} {'per step':>9}")
    summary: dict[str, Any] = {}
    for name, values in figures.items():
        wall = statistics.median(values["wall"]) * 1000
        cpu = statistics.median(values["cpu"]) * 1000
        best = min(values["wall"]) * 1000
        summary[name] = {"wall_ms": wall, "best_ms": best, "cpu_ms": cpu, "runs": values}
        print(f"{name:<10} {wall:>9.1f} {best:>9.1f} {wall / steps:>9.2f} {cpu:>9.1f} {cpu / steps:>9.2f}")
    http = summary["http"]
    for name in names[1:]:
        ws = summary[name]
        print(f"{name} / http: wall {ws['wall_ms'] / http['wall_ms']:.2f}x, CPU {ws['cpu_ms'] / http['cpu_ms']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
