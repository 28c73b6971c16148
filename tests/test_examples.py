"""The examples in examples/ that need no key run as documented."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
