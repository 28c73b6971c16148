"""``dshstream batch``: a JSONL file sent through run_many, resumed on a rerun."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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


def test_provider_batch_writes_the_lines_a_live_run_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import fake_key
    from service.provider_batch_server import BatchApiServer

    monkeypatch.setenv("TEST_BATCH_KEY", fake_key("sk-proj-", 48))
    requests = tmp_path / "in.jsonl"
    prompts = ["fixture:openai/text_include_usage.sse", "fixture:openai/tool_call_include_usage_gpt4o_mini.sse",
               "fail:400"]
    requests.write_text("".join(json.dumps({"id": f"r{i}", "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    with BatchApiServer() as server:
        common = [str(requests), "-p", "openai", "-m", "m", "--base-url", f"{server.url}/v1",
                  "--api-key-env", "TEST_BATCH_KEY", "--concurrency", "1"]
        assert main(["batch", *common, "-o", str(tmp_path / "live.jsonl")]) == 1
        capsys.readouterr()
        assert main(["batch", *common, "-o", str(tmp_path / "batch.jsonl"), "--provider-batch",
                     "--poll-interval", "0.01"]) == 1
        done = capsys.readouterr()
        assert "submitted dsb1:openai=batch_" in done.err and "2 done | 1 failed" in done.out
        assert "row r2: openai: invalid request" in done.err
        # detached, then resumed by id: nothing submitted twice
        assert main(["batch", *common, "-o", str(tmp_path / "later.jsonl"), "--provider-batch", "--detach"]) == 0
        batch_id = capsys.readouterr().out.strip()
        assert batch_id.startswith("dsb1:openai=") and not (tmp_path / "later.jsonl").read_text()
        assert main(["batch", *common, "-o", str(tmp_path / "later.jsonl"), "--resume", batch_id,
                     "--poll-interval", "0.01"]) == 1
        assert len([s for s in server.seen if s[:2] == ("POST", "/v1/batches")]) == 2

    def lines(name: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        for row in rows:  # timing and ids differ between the two runs
            row.pop("duration")
            row.pop("request_id")
            if isinstance(row.get("failure"), dict):
                row["failure"].pop("request_id", None)
        return sorted(rows, key=lambda row: str(row["id"]))

    assert lines("live.jsonl") == lines("batch.jsonl") == lines("later.jsonl")
    assert lines("batch.jsonl")[1]["tool_calls"]
