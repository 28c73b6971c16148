"""Time to the first text chunk from the request's start, and CPU per request, side by side.

Run from the repository root::

    .venv/bin/python benchmarks/bench_first_chunk.py                 # about 30 s
    .venv/bin/python benchmarks/bench_first_chunk.py --requests 400 --rounds 9

A raw-socket loopback server runs in its own process (so its work never lands in the
consumer's CPU time) and answers every ``POST`` at once with a short OpenAI chat stream,
``Transfer-Encoding: chunked`` and keep-alive (``chunked``), or close-delimited with
``Connection: close`` (``close``: a new connection per request, for every consumer): the
headers, the role chunk and the first text at once, then, 2 ms later, the rest (without
the pause, a client that hands the connection back at the end marker before the last
batch, as dshstream does, would wait for the server's FIN before its first text).
In this process, interleaved in rounds, each consumer sends ``--requests`` requests one
after the other and reads each stream to its end:

* ``floor``: one ``requests.Session``, ``post(stream=True)``, ``raw.read1`` + ``split`` +
  ``json.loads`` until the first content delta;
* ``dshstream``: ``LlmService.stream(options)`` with ``OpenAIChatAdapter``, iterated until the
  first ``TextDelta`` (then to the end);
* ``dsh-worker``: the same with every request sent on a send worker thread (what every
  request did before the caller's-thread send; ``inline_safe`` patched to ``False``).

Reported: the median time from the request's start to the first text in hand, and CPU
(``time.process_time``) per request, the best round of each; ``- floor`` is the
difference to the floor's median (the issue's target: at most 0.3 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

EVENTS = [
    {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
    *[
        {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}]}
        for i in range(8)
    ],
    {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
     "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
]
SSE = [b"data: " + json.dumps(e, separators=(",", ":")).encode() + b"\n\n" for e in EVENTS] + [b"data: [DONE]\n\n"]


#: the events written before the pause: the role chunk and the first text
FIRST = 2
#: seconds the server waits after the first text, so the end of the stream (and the
#: connection's release after it) comes after the first text in every client
PAUSE = 0.002


def _chunked() -> tuple[bytes, bytes]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = [b"%x\r\n%s\r\n" % (len(e), e) for e in SSE]
    return head + b"".join(pieces[:FIRST]), b"".join(pieces[FIRST:]) + b"0\r\n\r\n"


def _close() -> tuple[bytes, bytes]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    return head + b"".join(SSE[:FIRST]), b"".join(SSE[FIRST:])


def serve() -> None:
    """The server process: prints its port, answers until stdin closes."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    print(listener.getsockname()[1], flush=True)
    answers = {b"/chunked": _chunked(), b"/close": _close()}

    def handle(conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buf) < length:
                    buf += conn.recv(65536)
                buf = buf[length:]
                path = head.split(b" ", 2)[1]
                close = path.startswith(b"/close")
                first, rest = answers[b"/close" if close else b"/chunked"]
                conn.sendall(first)
                time.sleep(PAUSE)
                conn.sendall(rest)
                if close:
                    return
        except OSError:
            return
        finally:
            conn.close()

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    sys.stdin.read()


def floor(base: str) -> Callable[[], float]:
    import requests

    session = requests.Session()
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}

    def run() -> float:
        t0 = time.perf_counter()
        first = 0.0
        r = session.post(base + "/v1/chat/completions", json=body, stream=True, headers={"authorization": "Bearer k"})
        read1 = r.raw.read1
        tail = b""
        while True:
            data = read1(65536)
            if not data:
                break
            lines = (tail + data).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if line[:5] == b"data:" and line[6:12] != b"[DONE]":
                    obj = json.loads(line[5:])
                    if not first and obj["choices"] and obj["choices"][0]["delta"].get("content"):
                        first = time.perf_counter()
        r.close()
        return first - t0

    return run


def dshstream(base: str, worker: bool = False) -> Callable[[], float]:
    from dshstream import GenerateOptions, LlmService, Message, TextDelta
    from dshstream._adapters.openai_chat import OpenAIChatAdapter
    from dshstream._transport import client

    service = LlmService()
    service.register_adapter(["bench"], OpenAIChatAdapter(api_key="k-bench", base_url=base + "/v1", max_retries=0))
    options = GenerateOptions(provider="bench", model="m", messages=(Message.user("hi"),), max_retries=0)
    real = getattr(client, "inline_safe", None)  # None: a tree from before the inline send

    def run() -> float:
        if real is not None:
            setattr(client, "inline_safe", (lambda *a: False) if worker else real)
        try:
            t0 = time.perf_counter()
            first = 0.0
            for chunk in service.stream(options):
                if not first and type(chunk) is TextDelta:
                    first = time.perf_counter()
            return first - t0
        finally:
            if real is not None:
                setattr(client, "inline_safe", real)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests per consumer per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    print(f"first text from the request's start; {args.requests} requests x {args.rounds} rounds per consumer; "
          f"load average {os.getloadavg()[0]:.2f}")
    try:
        for framing in ("chunked", "close"):
            base = f"http://127.0.0.1:{port}/{framing}"
            consumers: dict[str, Callable[[], float]] = {
                "floor": floor(base),
                "dshstream": dshstream(base),
                "dsh-worker": dshstream(base, worker=True),
            }
            best: dict[str, tuple[float, float, float]] = {}
            for run in consumers.values():
                for _ in range(20):
                    run()  # warm-up: imports, connections
            for _ in range(args.rounds):
                for name, run in consumers.items():
                    c0 = time.process_time()
                    firsts = [run() for _ in range(args.requests)]
                    cpu = (time.process_time() - c0) / args.requests
                    median = statistics.median(firsts)
                    p90 = statistics.quantiles(firsts, n=10)[-1]
                    if name not in best or median < best[name][0]:
                        best[name] = (median, p90, cpu)
            base_median = best["floor"][0]
            print(f"\n[{framing}]")
            print(f"  {'consumer':<12}{'first ms':>10}{'p90 ms':>9}{'- floor ms':>12}{'CPU ms/req':>12}")
            for name, (median, p90, cpu) in best.items():
                print(f"  {name:<12}{median * 1e3:>10.3f}{p90 * 1e3:>9.3f}{(median - base_median) * 1e3:>12.3f}{cpu * 1e3:>12.3f}")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
