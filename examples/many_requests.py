"""Many requests on loopback: 40 rows through ``dshstream.batch.run_many``, 8 at a time,
with a checkpoint; then the same rows again, which sends nothing — every row is already in
the checkpoint. The provider is a recorded OpenRouter stream served on 127.0.0.1; no key.

    python examples/many_requests.py
"""

from __future__ import annotations

import tempfile
from importlib.resources import files
from pathlib import Path

from dshstream import LlmService, OpenAIChatAdapter
from dshstream.batch import run_many
from dshstream.testing import ReplayServer


def main() -> None:
    demo = files("dshstream") / "demo_data"
    with ReplayServer({"/v1/": (demo / "openrouter_reasoning.sse").read_bytes()}) as server:
        service = LlmService()
        service.register_adapter(
            ["local"], OpenAIChatAdapter(dialect="openrouter", base_url=f"{server.url}/v1", api_key="loopback")
        )
        rows = [{"id": f"q{n}", "prompt": f"What is {n}+{n}?"} for n in range(40)]
        with tempfile.TemporaryDirectory() as folder:
            checkpoint = Path(folder) / "answers.jsonl"
            options = {"service": service, "provider": "local", "model": "m", "checkpoint": checkpoint, "progress": False}
            first = list(run_many(rows, concurrency=8, **options))  # type: ignore[arg-type]
            sent = len(server.requests)
            again = list(run_many(rows, concurrency=8, **options))  # type: ignore[arg-type]
            print(f"first run: {sum(r.ok for r in first)} of {len(first)} ok, {sent} requests sent")
            print(f"rerun: {sum(r.resumed for r in again)} rows from the checkpoint, {len(server.requests) - sent} requests sent")
            print(f"checkpoint: {len(checkpoint.read_text(encoding='utf-8').splitlines())} lines")
            print(f"an answer: {next(r for r in first if r.id == 'q0').text.strip()!r}")


if __name__ == "__main__":
    main()
