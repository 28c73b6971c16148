"""Many requests against a rate limit: dshstream.batch.run_many next to a naive thread pool
with the openai SDK and litellm.batch_completion, and on Ray with two workers.

Run from the repository root::

    .venv/bin/python benchmarks/bench_executor.py            # 10,000 requests per client
    .venv/bin/python benchmarks/bench_executor.py --quick    # 1,000 (about a minute)
    .venv/bin/python benchmarks/bench_executor.py --clients dshstream,openai --requests 5000

* **Server.** ``dshstream._rate_limited_server`` in its own process (its CPU is not
  counted; a fresh one per client): an OpenAI-compatible chat server that admits at most
  ``--limit`` requests and ``--token-limit`` tokens (15 a request) per ``--window``
  seconds and answers the rest 429 with ``retry-after-ms`` and the ``x-ratelimit-*``
  headers, as OpenAI does. The allowed rate is ``min(limit, token_limit / 15) / window``
  requests per second.
* **Clients**, each in a fresh process, every one sending the same ``--requests`` distinct
  prompts ``--concurrency`` at a time:

  - ``dshstream``: ``run_many`` (its ``ProviderLimiter`` reads the headers) over
    ``OpenAIChatAdapter``, streaming;
  - ``openai``: a ``ThreadPoolExecutor`` calling ``client.chat.completions.create(stream=True)``
    and joining the deltas, the SDK's own retries (2, honouring ``retry-after-ms``);
  - ``litellm``: ``litellm.batch_completion`` (its own thread pool, not streaming);
  - ``ray``: ``RayMapper`` on a local Ray cluster with two workers sharing one
    ``RayLimiter`` (``--concurrency`` threads in all: half per worker).

* **Reported** per client: rows ok and failed, wall seconds (first request sent to last
  result), ok rows per second and as a fraction of the allowed rate (the target for
  dshstream: >= 0.9), the 429s the server sent, rows answered twice, the most requests
  admitted in one window (never above the limit: the server enforces it), CPU of the
  client process per request (user + sys, all threads, start-up excluded), and its peak
  RSS (``VmHWM``). For ``ray`` the CPU and RSS are the driver's only (the workers are
  other processes), and its wall time counts from the dataset's start (the actors' start-up
  in it, the cluster's start not).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CLIENTS = ("dshstream", "openai", "litellm", "ray")


def peak_rss_mb() -> float:
    """VmHWM: the peak RSS of this process image (ru_maxrss carries across execve)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def prompts(n: int) -> list[str]:
    return [f"question {i}" for i in range(n)]


# --------------------------------------------------------------------------- clients


def run_dshstream(url: str, n: int, concurrency: int) -> tuple[int, int]:
    from dshstream import LlmService, OpenAIChatAdapter
    from dshstream.batch import run_many

    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{url}/v1", dialect="custom", api_key=""))
    rows = ({"id": i, "prompt": p} for i, p in enumerate(prompts(n)))
    ok = failed = 0
    for result in run_many(rows, service=service, provider="local", model="m", concurrency=concurrency, progress=False):
        if result.ok and result.text:
            ok += 1
        else:
            failed += 1
    return ok, failed


def run_openai(url: str, n: int, concurrency: int) -> tuple[int, int]:
    from concurrent.futures import ThreadPoolExecutor

    import openai

    client = openai.OpenAI(base_url=f"{url}/v1", api_key="loopback")

    def one(prompt: str) -> bool:
        try:
            stream = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}], stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            return bool(text)
        except openai.OpenAIError:
            return False

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(one, prompts(n)))
    return sum(results), len(results) - sum(results)


def run_litellm(url: str, n: int, concurrency: int) -> tuple[int, int]:
    import litellm

    messages = [[{"role": "user", "content": p}] for p in prompts(n)]
    answers = litellm.batch_completion(
        model="openai/m", messages=messages, api_base=f"{url}/v1", api_key="loopback", max_workers=concurrency
    )
    ok = sum(1 for a in answers if not isinstance(a, Exception) and a.choices[0].message.content)
    return ok, len(answers) - ok


def run_ray(url: str, n: int, concurrency: int) -> tuple[int, int]:
    import ray
    import ray.data

    from dshstream import LlmService, OpenAIChatAdapter
    from dshstream.batch import RayLimiter, RayMapper

    def build() -> LlmService:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{url}/v1", dialect="custom", api_key=""))
        return service

    per_worker = max(1, concurrency // 2)
    rows = ray.data.from_items([{"id": str(i), "prompt": p} for i, p in enumerate(prompts(n))])
    out = rows.map_batches(
        RayMapper, fn_constructor_kwargs={"provider": "local", "model": "m", "service": build,
                                          "concurrency": per_worker, "limiter": RayLimiter(concurrency)},
        compute=ray.data.ActorPoolStrategy(size=2), batch_size=max(64, 8 * per_worker), num_cpus=0.5,
    )
    ok = failed = 0
    for batch in out.iter_batches(batch_size=1024, batch_format="numpy"):
        good = int(batch["ok"].sum())
        ok += good
        failed += len(batch["ok"]) - good
    ray.shutdown()
    return ok, failed


RUNNERS = {"dshstream": run_dshstream, "openai": run_openai, "litellm": run_litellm, "ray": run_ray}


def client_main(name: str, url: str, n: int, concurrency: int) -> None:
    """One client in this (fresh) process; prints one JSON line."""
    sys.path.insert(0, str(ROOT))
    # imports and set-up before the clock starts: what a long job pays once
    if name == "litellm":
        import litellm  # noqa: F401
    elif name == "openai":
        import openai  # noqa: F401
    elif name == "ray":  # the local cluster started before the clock (about 8 s)
        import ray
        import ray.data

        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
    import dshstream.batch  # noqa: F401

    cpu0 = cpu_seconds()
    t0 = time.perf_counter()
    ok, failed = RUNNERS[name](url, n, concurrency)
    wall = time.perf_counter() - t0
    print(json.dumps({"ok": ok, "failed": failed, "wall": wall, "cpu": cpu_seconds() - cpu0, "rss": peak_rss_mb()}))


# --------------------------------------------------------------------------- the runner


def start_server(limit: int, window: float, token_limit: int | None) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "dshstream._rate_limited_server", "--limit", str(limit), "--window", str(window)]
    if token_limit is not None:
        command += ["--token-limit", str(token_limit)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    return process, url


def measure(name: str, args: argparse.Namespace) -> dict[str, Any] | None:
    server, url = start_server(args.limit, args.window, args.token_limit)
    try:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        done = subprocess.run(
            [sys.executable, __file__, "--client", name, "--url", url, "--requests", str(args.requests),
             "--concurrency", str(args.concurrency)],
            capture_output=True, text=True, env=env, timeout=args.timeout,
        )
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            print(f"{name}: n/a ({' | '.join(tail)})", file=sys.stderr)
            return None
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        with urllib.request.urlopen(f"{url}/stats", timeout=10) as answer:
            result["server"] = json.loads(answer.read())
        return result
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


def allowed_rate(args: argparse.Namespace) -> float:
    per_window = args.limit if args.token_limit is None else min(args.limit, args.token_limit // 15)
    return per_window / args.window


def report(results: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    rate = allowed_rate(args)
    print(f"\n{args.requests} requests, concurrency {args.concurrency}; server: {args.limit} requests"
          + (f" and {args.token_limit} tokens" if args.token_limit else "")
          + f" per {args.window:g} s = {rate:.0f} requests/s allowed")
    header = f"{'client':<10} {'ok':>6} {'failed':>6} {'wall s':>7} {'ok/s':>7} {'x allowed':>9} {'429s':>6} {'twice':>6} {'max/window':>10} {'CPU ms/req':>10} {'RSS MB':>7}"
    print(header)
    print("-" * len(header))
    for name, r in results.items():
        s = r["server"]
        print(f"{name:<10} {r['ok']:>6} {r['failed']:>6} {r['wall']:>7.1f} {r['ok'] / r['wall']:>7.1f} "
              f"{r['ok'] / r['wall'] / rate:>9.2f} {s['rejected']:>6} {s['duplicates']:>6} "
              f"{s['max_in_window']:>5}/{args.limit:<4} {1000 * r['cpu'] / args.requests:>10.2f} {r['rss']:>7.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,000 requests per client")
    parser.add_argument("--requests", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--limit", type=int, default=120, help="requests per window")
    parser.add_argument("--token-limit", type=int, default=1620, help="tokens per window (0: none)")
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--json", help="also write every number to this file")
    parser.add_argument("--client", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.requests is None:
        args.requests = 1000 if args.quick else 10_000
    if args.client:
        client_main(args.client, args.url, args.requests, args.concurrency)
        return
    args.token_limit = args.token_limit or None
    results: dict[str, dict[str, Any]] = {}
    for name in args.clients.split(","):
        print(f"running {name} ...", file=sys.stderr, flush=True)
        measured = measure(name, args)
        if measured is not None:
            results[name] = measured
    report(results, args)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=2) + "\n")


if __name__ == "__main__":
    main()
