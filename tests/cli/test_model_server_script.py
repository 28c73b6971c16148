"""scripts/model-server.sh: build selection, the self-check and its portable fallback, stop.

The real build takes minutes and a real AMX crash needs a particular CPU, so these tests
give the script a stand-in builder (``DSHSTREAM_LLAMA_BUILDER``) whose "native" binary dies
of SIGSEGV at its first request, as the AMX build does on some virtualised Xeons, and whose
"portable" binary is tests/fake_llama_server.py; the model is any file
(``DSHSTREAM_MODEL_FILE``). Everything lives in a temporary cache, with its own run ids, so
the tests never touch a developer's or CI's servers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import REPOSITORY, TESTS

ROOT = REPOSITORY
SCRIPT = ROOT / "scripts" / "model-server.sh"
FAKE_SERVER = TESTS / "fake_llama_server.py"

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not all(shutil.which(tool) for tool in ("bash", "curl", "flock", "setsid")),
    reason="model-server.sh needs Linux with bash, curl, flock and setsid",
)

CRASHING_BINARY = """#!/bin/sh
# a build that starts but crashes at its first matrix product (what the AMX build does)
[ "$1" = --version ] && { echo "version: 0 (crashing stand-in)"; exit 0; }
echo "ggml_backend_amx_mul_mat: ldtilecfg" >&2
kill -SEGV $$
"""

BUILDER = """#!/usr/bin/env bash
# stand-in for the sdist build: BUILDER FLAVOR DEST
set -eu
echo "$1" >> "$FAKE_BUILD_LOG"
case " $FAKE_CRASHING " in
  *" $1 "*) cp "$FAKE_CRASHING_BINARY" "$2" ;;
  *) printf '#!/bin/sh\\nexec %s %s "$@"\\n' "$FAKE_PYTHON" "$FAKE_SERVER" > "$2" ;;
esac
chmod +x "$2"
"""


class Cache:
    def __init__(self, root: Path, crashing: str) -> None:
        self.root = root
        self.build_log = root / "builds.log"
        root.mkdir(exist_ok=True)
        (root / "model.gguf").write_bytes(b"GGUF stand-in")
        builder = root / "builder.sh"
        builder.write_text(BUILDER)
        builder.chmod(0o755)
        crash = root / "crashing-llama-server"
        crash.write_text(CRASHING_BINARY)
        crash.chmod(0o755)
        self.env = {
            key: value for key, value in os.environ.items()
            if not key.startswith("DSHSTREAM_")
        }
        self.env.update(
            DSHSTREAM_CACHE=str(root / "cache"),
            DSHSTREAM_LLAMA_BUILDER=str(builder),
            DSHSTREAM_MODEL_FILE=str(root / "model.gguf"),
            DSHSTREAM_PYTHON=sys.executable,
            DSHSTREAM_SERVER_TIMEOUT="20",
            FAKE_BUILD_LOG=str(self.build_log),
            FAKE_CRASHING=crashing,
            FAKE_CRASHING_BINARY=str(crash),
            FAKE_PYTHON=sys.executable,
            FAKE_SERVER=str(FAKE_SERVER),
        )
        self.runs: list[str] = []

    def script(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SCRIPT), *args], env={**self.env, **env},
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )

    def start(self, run_id: str, **env: str) -> subprocess.CompletedProcess[str]:
        self.runs.append(run_id)
        return self.script("start", run_id, **env)

    def builds(self) -> list[str]:
        return self.build_log.read_text().split() if self.build_log.exists() else []

    def pids(self, run_id: str) -> list[int]:
        state = self.root / "cache" / "runs" / run_id
        return [int(p.read_text()) for p in sorted(state.glob("*.pid"))]


@pytest.fixture
def make_cache(tmp_path: Path) -> Iterator[object]:
    made: list[Cache] = []

    def make(crashing: str = "") -> Cache:
        cache = Cache(tmp_path / f"c{len(made)}", crashing)
        made.append(cache)
        return cache

    yield make
    for cache in made:  # never leave a stand-in server behind, whatever failed
        for run_id in cache.runs:
            for pid in cache.pids(run_id):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def env_lines(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not alive: our children are reaped by init, but check the state anyway
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def test_a_native_build_that_crashes_is_replaced_by_a_portable_one_once(make_cache) -> None:  # type: ignore[no-untyped-def]
    cache = make_cache(crashing="native")
    first = cache.start("t-fallback-1")
    assert first.returncode == 0, first.stderr
    assert "self-check: the server exited before answering" in first.stderr
    assert "signal SEGV" in first.stderr
    assert "rebuilding portable once" in first.stderr
    assert "using the portable build" in first.stderr
    assert cache.builds() == ["native", "portable"]
    urls = env_lines(first.stdout)
    assert urls["DSHSTREAM_TEST_RUN_ID"] == "t-fallback-1"
    servers = [urls[k] for k in ("DSHSTREAM_TEST_SERVER", "DSHSTREAM_TEST_THINK_SERVER", "DSHSTREAM_TEST_TAGS_SERVER")]
    assert all(url.startswith("http://127.0.0.1:") for url in servers)
    assert all(healthy(url) for url in servers)

    # A later start on this CPU neither rebuilds nor re-checks, and skips the native build.
    second = cache.start("t-fallback-2")
    assert second.returncode == 0, second.stderr
    assert cache.builds() == ["native", "portable"]
    assert "self-check of" not in second.stderr
    assert "crashed on this CPU before" in second.stderr

    # stop finds what start started whatever DSHSTREAM_LLAMA_NATIVE says now
    for run_id, native in (("t-fallback-1", "OFF"), ("t-fallback-2", "ON")):
        pids = cache.pids(run_id)
        assert len(pids) == 3
        stopped = cache.script("stop", run_id, DSHSTREAM_LLAMA_NATIVE=native)
        assert stopped.returncode == 0, stopped.stderr
        assert gone(pids), f"stop {run_id} left servers running"
        assert cache.pids(run_id) == []


def test_a_native_build_that_works_is_used_without_a_portable_build(make_cache) -> None:  # type: ignore[no-untyped-def]
    cache = make_cache()
    started = cache.start("t-native")
    assert started.returncode == 0, started.stderr
    assert cache.builds() == ["native"]
    assert "rebuilding portable" not in started.stderr
    pids = cache.pids("t-native")
    assert cache.script("stop", "t-native").returncode == 0
    assert gone(pids)


def test_when_every_build_crashes_start_fails_loudly_and_leaves_nothing(make_cache) -> None:  # type: ignore[no-untyped-def]
    cache = make_cache(crashing="native portable")
    failed = cache.start("t-broken")
    assert failed.returncode != 0
    assert cache.builds() == ["native", "portable"]
    assert "no llama-server build passed its self-check on this CPU" in failed.stderr
    assert "selfcheck.log" in failed.stderr
    assert "ggml_backend_amx_mul_mat" in failed.stderr  # the server's own last words are shown
    assert cache.pids("t-broken") == []


def test_off_builds_only_the_portable_flavor(make_cache) -> None:  # type: ignore[no-untyped-def]
    cache = make_cache(crashing="portable")
    failed = cache.start("t-off", DSHSTREAM_LLAMA_NATIVE="OFF")
    assert failed.returncode != 0
    assert cache.builds() == ["portable"]
    assert "rebuilding portable" not in failed.stderr
    bad = cache.start("t-bad", DSHSTREAM_LLAMA_NATIVE="sometimes")
    assert bad.returncode == 2
    assert "DSHSTREAM_LLAMA_NATIVE must be auto, ON or OFF" in bad.stderr


def test_stop_leaves_a_reused_pid_alone(make_cache) -> None:  # type: ignore[no-untyped-def]
    cache = make_cache()
    assert cache.start("t-reuse").returncode == 0
    pids = cache.pids("t-reuse")
    assert cache.script("stop", "t-reuse").returncode == 0
    assert gone(pids)
    # The run's server died long ago and its pid now belongs to someone else's process.
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        state = cache.root / "cache" / "runs" / "t-reuse"
        (state / "server.pid").write_text(f"{stranger.pid}\n")
        (state / "server.start").write_text("1\n")
        (state / "server.port").write_text("1\n")
        stopped = cache.script("stop", "t-reuse")
        assert stopped.returncode == 0, stopped.stderr
        assert "left alone" in stopped.stderr
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()
