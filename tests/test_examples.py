"""The examples in examples/ that need no key run as documented."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
ENV = {**os.environ, "NO_COLOR": "1"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV, timeout=60, cwd=ROOT)


def test_cancel_from_thread_example() -> None:
    proc = run("examples/cancel_from_thread.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "'Once upon a time' aborted ABORTED"


def test_replay_transcript_example() -> None:
    proc = run("examples/replay_transcript.py", "tests/fixtures/real/anthropic/thinking_then_tool_use.sse")
    assert proc.returncode == 0, proc.stderr
    assert "[anthropic]" in proc.stdout
    assert "name='fixed_version'" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the litellm extra is not installed")
def test_litellm_any_provider_example_offline() -> None:
    proc = run("examples/litellm_any_provider.py")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "claude (LiteLLM anthropic/):"
    assert "  [tool call] fixed_version({})" in lines
    assert "  [tool call] get_capital({\"country\":\"UK\"})" in lines
    finishes = [line for line in lines if line.startswith("  finish=")]
    assert len(finishes) == 2 and all(line.startswith("  finish=tool-calls usage=TokenUsage(") for line in finishes)
    assert finishes[0].endswith("signed_reasoning=True")  # the Anthropic thinking signature survived LiteLLM


def _run_tool_loop(server: str) -> subprocess.CompletedProcess[str]:
    env = {**ENV, "DSHSTREAM_TEST_SERVER": server}
    return subprocess.run([sys.executable, "examples/tool_loop.py"], capture_output=True, text=True, env=env, check=False,
                          timeout=120, cwd=ROOT)


def test_tool_loop_example_reports_a_failed_step_with_tips() -> None:
    proc = _run_tool_loop("http://127.0.0.1:9")  # nothing listens on the discard port
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed at step 1: local: " in proc.stderr and "(TRANSPORT)" in proc.stderr
    assert "tip: Check the network connection, then try again." in proc.stderr


def test_tool_loop_example_against_the_live_server() -> None:
    server = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")
    if not server:
        pytest.skip("DSHSTREAM_TEST_SERVER is not set")
    proc = _run_tool_loop(server)
    assert proc.returncode == 0, proc.stderr
    assert '[step 1] get_weather({"city": "Paris"})' in proc.stdout
    assert "ran get_weather: ok ->" in proc.stdout
    assert "2 steps (done), 4 messages" in proc.stdout
