"""The command line end to end, in a subprocess: replay, demo, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers import FIXTURES

ENV = {**os.environ, "NO_COLOR": "1"}


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dshstream", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


REPLAYS = [
    ("openai/tool_call_include_usage_gpt4o_mini.sse", "tool-calls"),
    ("deepseek/reasoner_reasoning_content_then_content.sse", "stop"),
    ("anthropic/thinking_then_tool_use.sse", "tool-calls"),
    ("gemini/text.sse", "stop"),
    ("openai-responses/text.sse", "stop"),
]


@pytest.mark.parametrize(("fixture", "kind"), REPLAYS)
def test_replay_jsonl_detects_the_wire(fixture: str, kind: str) -> None:
    proc = run("replay", str(FIXTURES / fixture), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "finish"
    assert lines[-1]["reason"]["kind"] == kind


def test_replay_text_from_stdin() -> None:
    data = (FIXTURES / "deepseek/reasoner_reasoning_content_then_content.sse").read_bytes()
    proc = run("replay", "-", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert "[reasoning]" in proc.stdout
    assert "finish: stop" in proc.stdout
    assert "usage: in " in proc.stdout
    assert "\x1b[" not in proc.stdout  # NO_COLOR


def test_replay_of_an_error_stream_exits_1_with_the_headline() -> None:
    proc = run("replay", str(FIXTURES / "openrouter/midstream_error_chunk.sse"), "--wire", "openrouter")
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")


def test_replay_of_a_truncated_stream_exits_1(tmp_path: object) -> None:
    data = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    cut = data[: data.index(b"finish_reason\":\"stop") - 200]
    proc = run("replay", "-", "--wire", "openai-chat", "--format", "jsonl", stdin=cut)
    assert proc.returncode == 1
    assert "STREAM_CLOSED" in proc.stdout


def test_usage_errors_exit_2() -> None:
    assert run("replay").returncode == 2
    assert run("nonsense").returncode == 2
    assert run("replay", "/nonexistent/file.sse").returncode == 2
    assert run("replay", str(FIXTURES / "gemini/text.sse"), "--wire", "nope").returncode == 2


def test_demo_streams_every_bundled_transcript_over_loopback() -> None:
    proc = run("demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "5/5 streams completed over 127.0.0.1" in out
    assert "→ tool call get_capital" in out
    assert "[reasoning]" in out
    assert out.count("usage: in ") >= 4


def test_chat_against_a_loopback_endpoint() -> None:
    from dshstream.replay_server import ReplayServer

    body = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run("chat", "-p", "local", "-m", "gpt-4o", "--base-url", f"{server.url}/v1", "--json", "Hi")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.splitlines()[-1])["reason"]["kind"] == "stop"
        assert server.requests[-1].body["messages"] == [{"role": "user", "content": "Hi"}]


def test_chat_provider_failure_exits_1() -> None:
    from dshstream.replay_server import ReplayServer, Route

    with ReplayServer({"/v1/": Route(body=b'{"error":{"message":"bad key"}}', status=401)}) as server:
        proc = run("chat", "-p", "local", "-m", "x", "--base-url", f"{server.url}/v1", "Hi")
    assert proc.returncode == 1
    assert "AUTH" in proc.stderr


def test_chat_sends_system_tools_and_reasoning_effort(tmp_path: "os.PathLike[str]") -> None:
    from pathlib import Path

    from dshstream.replay_server import ReplayServer

    tools = Path(tmp_path) / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {
        "name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {}}}}]))
    body = (FIXTURES / "openai/single_tool_call.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run("chat", "-p", "deepseek", "-m", "deepseek-reasoner", "--base-url", f"{server.url}/v1",
                   "--system", "Be brief.", "--tools", str(tools), "--reasoning-effort", "high",
                   "--max-tokens", "50", "Weather?")
        assert proc.returncode == 0, proc.stderr
        assert "→ tool call GetWeatherArgs" in proc.stdout
        sent = server.requests[-1].body
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["thinking"] == {"type": "enabled"} and sent["reasoning_effort"] == "high"
    assert sent["max_tokens"] == 50
