"""``dshstream batch``: a JSONL file sent through run_many, resumed on a rerun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dshstream._cli import main
from dshstream._rate_limited_server import RateLimitedServer


def test_batch_end_to_end_with_a_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    requests = tmp_path / "in.jsonl"
    output = tmp_path / "out.jsonl"
    requests.write_text(
        "".join(json.dumps({"id": i, "prompt": f"p{i}"}) + "\n" for i in range(6))
        + json.dumps({"id": "m", "messages": [{"role": "user", "content": "pm"}]}) + "\n\nnot json\n"
    )
    with RateLimitedServer(limit=4, window=0.3) as server:
        argv = ["batch", str(requests), "-o", str(output), "-p", "local", "-m", "m", "--base-url", f"{server.url}/v1", "--concurrency", "3"]
        assert main(argv) == 1  # the line that is not JSON is a failed row
        first = capsys.readouterr()
        assert "7 done" in first.out and "1 failed" in first.out
        assert "requests[7]" in first.err
        assert main(argv) == 1
        second = capsys.readouterr()
        assert "7 resumed" in second.out
        assert set(server.accepted.values()) == {1} and len(server.accepted) == 7
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert sorted(str(r["id"]) for r in rows if r["ok"]) == sorted([*map(str, range(6)), "m"])
