"""Many paced streams in one process: added delay, CPU per event and memory per stream.

Run from the repository root::

    .venv/bin/python benchmarks/bench_paced.py                  # N = 1, 8, 32, 64, 128, 256
    .venv/bin/python benchmarks/bench_paced.py --quick          # N = 1, 8, 32, 64; 50 events
    .venv/bin/python benchmarks/bench_paced.py --consumers dshstream --wires openai --ns 1,64,256

What production looks like: a provider writes one event per HTTP chunk as tokens come out,
tens per second per stream, and a server or batch job runs many streams at once in threads.
This benchmark reproduces that and measures what the client adds.

* **Server.** A separate process (so its CPU is not counted), one thread per connection,
  writes each stream's text events one per HTTP chunk (``chunked``) or one per write
  (``close``, HTTP/1.0 style) at ``--rate`` events/s (default 50) on an absolute schedule.
  The events are real recorded ones (``tests/fixtures/real/openai/
  text_moderation_chunk_obfuscation_gpt5.sse`` and ``anthropic/text.sse``): the stream
  opens with the recording's events before its first text delta, then ``--events`` copies
  of its text-delta event (the first one period after the headers, so the client is
  waiting for it, as it waits for a model's first token), then the recording's closing
  events. Each text delta's content
  is ``"<t>|word"`` where ``t`` is the server's ``time.perf_counter()`` just before the write
  (CLOCK_MONOTONIC: the same clock in every process).
* **Client.** A fresh process per (consumer, wire, framing, N) starts N threads that each
  run one stream; for every text delta it receives, a thread records ``perf_counter() - t``:
  the delay the kernel, the interpreter and the client library added between the write of
  the chunk and its delivery to the caller. The first text delta is reported apart: the
  first-content delay.
* **Reported** per N: p50 / p99 / max of the added delay (every text delta but the first),
  the first-content delay (p50 / max), CPU of the client process per 1,000 events
  (``time.process_time()`` over the whole run, thread and connection set-up included),
  and memory per open stream (RSS sampled halfway through, while all N streams are open,
  minus the RSS before they started, divided by N; the thread is included). The verdict
  line gives the largest N up to which every measured N kept its p99 within
  ``--limit-ms`` (default 5 ms).

Consumers: ``floor`` (run.py's floor: requests + ``raw.read1`` + line split + ``json.loads``,
the least any client does; its CPU per event is what blocking reads and wake-ups cost),
``dshstream`` (``LlmService.stream()`` with ``OpenAIChatAdapter`` /
``AnthropicAdapter``), ``openai`` (``client.chat.completions.create(stream=True)``) and
``anthropic`` (``client.messages.stream()``), each SDK on its own wire.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()
FIXTURES = ROOT / "tests" / "fixtures" / "real"
RECORDINGS = {
    "openai": FIXTURES / "openai" / "text_moderation_chunk_obfuscation_gpt5.sse",
    "anthropic": FIXTURES / "anthropic" / "text.sse",
}
STAMP = "@@STAMP@@"
WORDS = "the quick brown fox jumps over a lazy dog while tokens arrive one by one".split()


# --------------------------------------------------------------------------- the stream script


def _events(body: bytes) -> list[bytes]:
    text = body.replace(b"\r\n", b"\n")
    return [e + b"\n\n" for e in text.split(b"\n\n") if e.strip()]


def _payload(event: bytes) -> tuple[bytes, Any]:
    head, _, data = event.rstrip(b"\n").rpartition(b"data:")
    try:
        return head, json.loads(data)
    except ValueError:  # [DONE], a comment
        return head, None


def _is_text_delta(wire: str, obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    if wire == "openai":
        choices = obj.get("choices") or [{}]
        return bool(choices[0].get("delta", {}).get("content"))
    return obj.get("type") == "content_block_delta" and obj.get("delta", {}).get("type") == "text_delta"


def script_for(wire: str) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """(events before the first text delta, one text-delta template per word, closing
    events) from the recording of ``wire``; the template's text is ``STAMP|word``."""
    events = _events(RECORDINGS[wire].read_bytes())
    parsed = [_payload(e) for e in events]
    first = next(i for i, (_, obj) in enumerate(parsed) if _is_text_delta(wire, obj))
    last = max(i for i, (_, obj) in enumerate(parsed) if _is_text_delta(wire, obj))
    head, template = parsed[first]
    templates = []
    for word in WORDS:
        obj = json.loads(json.dumps(template))
        if wire == "openai":
            obj["choices"][0]["delta"]["content"] = f"{STAMP}|{word} "
        else:
            obj["delta"]["text"] = f"{STAMP}|{word} "
        templates.append(head + b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")
    return events[:first], templates, events[last + 1 :]


# --------------------------------------------------------------------------- the server (own process)


def serve(port_file: str) -> None:
    scripts = {wire: script_for(wire) for wire in RECORDINGS}
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    Path(port_file).write_text(str(listener.getsockname()[1]))
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_serve_conn, args=(conn, scripts), daemon=True).start()


def _read_request(conn: socket.socket, buf: bytes) -> tuple[str, bytes] | None:
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buf) < length:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    return lines[0].split(b" ")[1].decode(), buf[length:]


def _serve_conn(conn: socket.socket, scripts: dict[str, tuple[list[bytes], list[bytes], list[bytes]]]) -> None:
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buf = b""
    try:
        while True:
            got = _read_request(conn, buf)
            if got is None:
                return
            path, buf = got
            # /{framing}/{events}/{rate}/... ; the wire from the API path
            _, framing, n, rate, rest = path.split("/", 4)
            wire = "anthropic" if "messages" in rest else "openai"
            chunked = framing == "chunked"
            opening, templates, closing = scripts[wire]
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            head += b"transfer-encoding: chunked\r\n\r\n" if chunked else b"connection: close\r\n\r\n"

            def frame(data: bytes) -> bytes:
                return b"%x\r\n%s\r\n" % (len(data), data) if chunked else data

            conn.sendall(head + b"".join(frame(e) for e in opening))
            period = 1.0 / float(rate)
            start = time.perf_counter()
            stamp = STAMP.encode()
            for i in range(int(n)):
                due = start + (i + 1) * period  # the first text one period after the headers
                wait = due - time.perf_counter()
                if wait > 0:
                    time.sleep(wait)
                template = templates[i % len(templates)]
                conn.sendall(frame(template.replace(stamp, b"%.7f" % time.perf_counter())))
            conn.sendall(b"".join(frame(e) for e in closing) + (b"0\r\n\r\n" if chunked else b""))
            if not chunked:
                conn.shutdown(socket.SHUT_WR)
                return
    except OSError:
        return
    finally:
        conn.close()


# --------------------------------------------------------------------------- consumers (client process)


def _stamp(text: str) -> float:
    return float(text.split("|", 1)[0])


def c_floor(base: str, wire: str) -> Callable[[list[float]], None]:
    """requests + ``raw.read1`` + line split + ``json.loads`` (run.py's floor) + the stamp."""
    import requests

    session = requests.Session()
    url = base + ("/v1/chat/completions" if wire == "openai" else "/v1/messages")
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "Write."}]}
    loads = json.loads
    clock = time.perf_counter

    def run(delays: list[float]) -> None:
        r = session.post(url, json=body, stream=True, headers={"accept-encoding": "identity"})
        read1 = r.raw.read1
        tail = b""
        while True:
            data = read1(65536)
            if not data:
                break
            lines = (tail + data).split(b"\n") if tail else data.split(b"\n")
            tail = lines.pop()
            for line in lines:
                if line[:5] == b"data:" and line[6:12] != b"[DONE]":
                    obj = loads(line[5:])
                    if wire == "openai":
                        text = obj["choices"][0]["delta"].get("content") if obj.get("choices") else None
                    else:
                        text = obj["delta"].get("text") if obj.get("type") == "content_block_delta" else None
                    if text:
                        delays.append(clock() - _stamp(text))
        r.close()

    return run


def c_dshstream(base: str, wire: str) -> Callable[[list[float]], None]:
    from dshstream import AnthropicAdapter, GenerateOptions, LlmService, Message, OpenAIChatAdapter, TextDelta

    service = LlmService()
    if wire == "openai":
        service.register_adapter(["p"], OpenAIChatAdapter(api_key="sk-paced", base_url=base + "/v1", max_retries=0))
        model = "gpt-5"
    else:
        service.register_adapter(["p"], AnthropicAdapter(api_key="sk-ant-paced", base_url=base, max_retries=0))
        model = "claude-haiku-4-5"
    options = GenerateOptions(provider="p", model=model, messages=(Message.user("Write."),), max_retries=0)
    clock = time.perf_counter

    def run(delays: list[float]) -> None:
        for chunk in service.stream(options):
            if type(chunk) is TextDelta:
                delays.append(clock() - _stamp(chunk.text))

    return run


def c_openai(base: str, wire: str) -> Callable[[list[float]], None]:
    import openai

    client = openai.OpenAI(api_key="sk-paced", base_url=base + "/v1", max_retries=0)
    clock = time.perf_counter

    def run(delays: list[float]) -> None:
        stream = client.chat.completions.create(
            model="gpt-5", messages=[{"role": "user", "content": "Write."}], stream=True
        )
        for event in stream:
            if event.choices and event.choices[0].delta.content:
                delays.append(clock() - _stamp(event.choices[0].delta.content))

    return run


def c_anthropic(base: str, wire: str) -> Callable[[list[float]], None]:
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-paced", base_url=base, max_retries=0)
    clock = time.perf_counter

    def run(delays: list[float]) -> None:
        with client.messages.stream(
            model="claude-haiku-4-5", max_tokens=1024, messages=[{"role": "user", "content": "Write."}]
        ) as stream:
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    delays.append(clock() - _stamp(event.delta.text))

    return run


CONSUMERS: dict[str, tuple[Callable[[str, str], Callable[[list[float]], None]], tuple[str, ...]]] = {
    "floor": (c_floor, ("openai", "anthropic")),
    "dshstream": (c_dshstream, ("openai", "anthropic")),
    "openai": (c_openai, ("openai",)),
    "anthropic": (c_anthropic, ("anthropic",)),
}


def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT))
    factory, _ = CONSUMERS[spec["consumer"]]
    n_streams, events, rate = spec["n"], spec["events"], spec["rate"]
    warm = factory(f"{spec['url']}/{spec['framing']}/5/1000", spec["wire"])
    warm([])  # imports, first connection
    run = factory(f"{spec['url']}/{spec['framing']}/{events}/{rate}", spec["wire"])
    per_stream: list[list[float]] = [[] for _ in range(n_streams)]
    errors: list[str] = []

    def one(i: int) -> None:
        try:
            run(per_stream[i])
        except Exception as exc:  # noqa: BLE001 - reported
            errors.append(f"{type(exc).__name__}: {exc}"[:200])

    rss0 = _rss_kb()
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n_streams)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(events / rate / 2)
    rss_mid = _rss_kb()
    for t in threads:
        t.join()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    first = [d[0] for d in per_stream if d]
    rest = sorted(x for d in per_stream for x in d[1:])
    received = sum(len(d) for d in per_stream)
    return {
        "errors": errors[:3],
        "received": received,
        "expected": n_streams * events,
        "cpu": cpu,
        "wall": wall,
        "first": sorted(first),
        "rest": rest,
        "rss_per_stream_kb": (rss_mid - rss0) / n_streams,
    }


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


# --------------------------------------------------------------------------- runner


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N = 1, 8, 32, 64 and 50 events per stream")
    ap.add_argument("--ns", default="", help="comma list of stream counts (default 1,8,32,64,128,256)")
    ap.add_argument("--events", type=int, default=0, help="text events per stream (default 100; --quick 50)")
    ap.add_argument("--rate", type=float, default=50.0, help="events per second per stream (default 50)")
    ap.add_argument("--consumers", default="floor,dshstream,openai,anthropic")
    ap.add_argument("--wires", default="openai,anthropic")
    ap.add_argument("--framings", default="chunked,close")
    ap.add_argument("--limit-ms", type=float, default=5.0, help="p99 added delay a sustained N must keep (ms)")
    ap.add_argument("--json", default="", help="also write every number to this JSON file")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(args.serve)
        return 0
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0

    ns = [int(x) for x in args.ns.split(",") if x] or ([1, 8, 32, 64] if args.quick else [1, 8, 32, 64, 128, 256])
    events = args.events or (50 if args.quick else 100)
    port_file = f"/tmp/bench-paced-{os.getpid()}.port"
    server = subprocess.Popen([sys.executable, str(HERE), "--serve", port_file])
    try:
        deadline = time.monotonic() + 10
        while not (Path(port_file).exists() and Path(port_file).read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        url = f"http://127.0.0.1:{Path(port_file).read_text()}"
        print(
            f"paced streams  {time.strftime('%Y-%m-%d %H:%M')}  python {platform.python_version()}  {os.cpu_count()} CPUs  "
            f"{events} text events per stream at {args.rate:g}/s, one per chunk/write; load average %.2f %.2f %.2f"
            % os.getloadavg()
        )
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        rows: list[dict[str, Any]] = []
        hdr = (
            f"  {'consumer':<10}{'wire':<10}{'framing':<9}{'N':>5}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}"
            f"{'1st p50':>9}{'1st max':>9}{'CPU ms/1k ev':>13}{'KiB/stream':>11}  notes"
        )
        print(hdr)
        print("  " + "-" * (len(hdr) - 2))
        for wire in [w for w in args.wires.split(",") if w]:
            for consumer in [c for c in args.consumers.split(",") if c]:
                if consumer not in CONSUMERS or wire not in CONSUMERS[consumer][1]:
                    continue
                for framing in [f for f in args.framings.split(",") if f]:
                    for n in ns:
                        spec = {"consumer": consumer, "wire": wire, "framing": framing, "n": n,
                                "events": events, "rate": args.rate, "url": url}
                        proc = subprocess.run(
                            [sys.executable, str(HERE), "--worker", json.dumps(spec)],
                            capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=600,
                        )
                        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                        if proc.returncode or not lines:
                            note = (proc.stderr.strip().splitlines() or ["no output"])[-1][:100]
                            print(f"  {consumer:<10}{wire:<10}{framing:<9}{n:>5}  error: {note}")
                            continue
                        out = json.loads(lines[-1])
                        rest, first = out["rest"], out["first"]
                        row = {
                            "consumer": consumer, "wire": wire, "framing": framing, "n": n,
                            "p50_ms": pct(rest, 0.5) * 1e3, "p99_ms": pct(rest, 0.99) * 1e3,
                            "max_ms": (rest[-1] if rest else float("nan")) * 1e3,
                            "first_p50_ms": pct(first, 0.5) * 1e3,
                            "first_max_ms": (first[-1] if first else float("nan")) * 1e3,
                            "cpu_ms_per_1k": out["cpu"] / max(1, out["received"]) * 1e6,
                            "kib_per_stream": out["rss_per_stream_kb"],
                            "received": out["received"], "expected": out["expected"], "errors": out["errors"],
                        }
                        rows.append(row)
                        notes = "" if out["received"] == out["expected"] else f"got {out['received']}/{out['expected']}"
                        if out["errors"]:
                            notes += f" errors: {out['errors'][0]}"
                        print(
                            f"  {consumer:<10}{wire:<10}{framing:<9}{n:>5}{row['p50_ms']:>8.2f}{row['p99_ms']:>8.2f}"
                            f"{row['max_ms']:>8.1f}{row['first_p50_ms']:>9.2f}{row['first_max_ms']:>9.2f}"
                            f"{row['cpu_ms_per_1k']:>13.1f}{row['kib_per_stream']:>11.0f}  {notes}"
                        )
                        sys.stdout.flush()
        print(f"\nLargest N with p99 added delay <= {args.limit_ms:g} ms (of N = {', '.join(map(str, ns))}):")
        for key in sorted({(r["consumer"], r["wire"], r["framing"]) for r in rows}):
            mine = [r for r in rows if (r["consumer"], r["wire"], r["framing"]) == key]
            ok = []  # sustained: every N up to it kept the limit
            for r in sorted(mine, key=lambda r: r["n"]):
                if r["p99_ms"] > args.limit_ms or r["received"] != r["expected"]:
                    break
                ok.append(r["n"])
            firsts = statistics.median(r["first_p50_ms"] for r in mine)
            cpu = statistics.median(r["cpu_ms_per_1k"] for r in mine)
            print(
                f"  {key[0]:<10}{key[1]:<10}{key[2]:<9} N <= {max(ok) if ok else 0:<5}"
                f" first content p50 {firsts:.2f} ms (median over N), CPU {cpu:.0f} ms per 1,000 events (median over N)"
            )
        print("load average at end: %.2f %.2f %.2f" % os.getloadavg())
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        server.kill()
        server.wait()
        Path(port_file).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
