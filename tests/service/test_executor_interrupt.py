"""Ctrl-C during run_many with a checkpoint: a child process interrupted mid-run leaves a
valid checkpoint, and a rerun sends only the rows that were not written.

The child runs in its own session and the signal goes to its pid only, never to a
process group: a test run in the background (whose terminal would not deliver Ctrl-C)
behaves the same as one in the foreground."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dshstream import LlmService, OpenAIChatAdapter
from dshstream._rate_limited_server import RateLimitedServer
from dshstream.batch import run_many
from helpers import REPOSITORY, default_sigint

CHILD = """
import sys
from dshstream import LlmService, OpenAIChatAdapter
from dshstream.batch import run_many

url, checkpoint = sys.argv[1], sys.argv[2]
service = LlmService()
service.register_adapter(["local"], OpenAIChatAdapter(base_url=url + "/v1", dialect="custom", api_key=""))
rows = ({"id": f"r{i}", "prompt": f"p{i}"} for i in range(200))
try:
    for result in run_many(rows, service=service, provider="local", model="m", concurrency=4,
                           checkpoint=checkpoint, progress=False):
        pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("finished", flush=True)
"""


def _written(checkpoint: Path) -> int:
    if not checkpoint.exists():
        return 0
    return checkpoint.read_bytes().count(b"\n")


def test_sigint_leaves_a_valid_checkpoint_and_a_rerun_skips_the_finished_rows(tmp_path: Path) -> None:
    checkpoint = tmp_path / "out.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPOSITORY), os.environ.get("PYTHONPATH")]))}
    with RateLimitedServer(limit=10_000, delay=0.05) as server:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, server.url, str(checkpoint)], env=env, start_new_session=True, preexec_fn=default_sigint,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while _written(checkpoint) < 8 and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.01)
            assert child.poll() is None, child.communicate()
            os.kill(child.pid, signal.SIGINT)  # the child only: its own session, never a group
            out, err = child.communicate(timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == 130, (out, err)
        assert out.strip() == "interrupted"
        text = checkpoint.read_text(encoding="utf-8")
        assert text.endswith("\n")
        lines = [json.loads(line) for line in text.splitlines()]  # every line whole
        written = {line["id"] for line in lines}
        assert len(written) == len(lines) >= 8 and all(line["ok"] for line in lines)
        assert len(written) < 200  # interrupted mid-run, not at the end
        before = dict(server.accepted)

        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="custom", api_key=""))
        rows = ({"id": f"r{i}", "prompt": f"p{i}"} for i in range(200))
        results = list(run_many(rows, service=service, provider="local", model="m", concurrency=16,
                                checkpoint=checkpoint, progress=False))
        after = dict(server.accepted)
    assert sorted(str(r.id) for r in results if r.ok) == sorted(f"r{i}" for i in range(200))
    assert {r.id for r in results if r.resumed} == written
    for row_id in written:  # finished before Ctrl-C: never sent again
        assert after[f"p{row_id[1:]}"] == before[f"p{row_id[1:]}"] == 1
    assert sum(after.values()) - sum(before.values()) == 200 - len(written)
