"""RayMapper and RayLimiter on a local Ray cluster (``ray.init(num_cpus=2)``) against a
loopback server that enforces a rate limit: result columns, one limit across two
workers, and a worker killed mid-batch whose retried task sends only unfinished rows."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import ConfigurationError, LlmService, OpenAIChatAdapter
from dshstream._rate_limited_server import RateLimitedServer
from dshstream.batch import RayLimiter, RayMapper
from conftest import _PROVIDER_VARIABLES
from helpers import require_engine
from service.recipes import recipe

psutil = require_engine("psutil", "ray")  # a dependency of ray
require_engine("ray", "ray", import_now=False)  # imported by the cluster fixture: Ray and
# pandas take seconds to import, on the worker that runs this file only, not at collection


@pytest.fixture(scope="module")
def readme_server() -> Iterator[RateLimitedServer]:
    """The server the README's recipe talks to, through the workers' ``VLLM_BASE_URL``."""
    with RateLimitedServer(limit=20, window=0.25) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(readme_server: RateLimitedServer) -> Iterator[Any]:
    # Workers take the environment of this process at ray.init (PYTHONPATH: this
    # checkout's dshstream): no key of the machine, the README server's URL.
    require_engine("ray.data", "ray")
    ray = require_engine("ray", "ray")
    with pytest.MonkeyPatch.context() as patch:
        for name in _PROVIDER_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("VLLM_BASE_URL", f"{readme_server.url}/v1")
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


def test_the_readme_recipe(cluster: Any, readme_server: RateLimitedServer, tmp_path: Path) -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # what it prints: one line per row
        exec(compile(recipe("RayMapper", tmp_path / "answers"), "README.rst (Ray)", "exec"), {})
    lines = sorted(printed.getvalue().splitlines())
    assert lines == sorted(f"q{n} echo What is {n} squared?" for n in range(40))
    assert readme_server.max_in_window <= 20 and sum(readme_server.accepted.values()) == 40
    assert sum(len(p.read_text().splitlines()) for p in (tmp_path / "answers").glob("part-*.jsonl")) == 40


def _factory(url: str) -> Callable[[], LlmService]:
    """A service factory shipped to the workers by value (a closure: cloudpickle pickles
    it whole); the service itself is built there (RayMapper rule 1)."""

    def build() -> LlmService:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{url}/v1", dialect="custom", api_key=""))
        return service

    return build


def _map(ray: Any, rows: list[dict[str, Any]], workers: int, batch_size: int, **kwargs: Any) -> list[dict[str, Any]]:
    return list(
        ray.data.from_items(rows).map_batches(
            RayMapper, fn_constructor_kwargs={"provider": "local", "model": "m", **kwargs},
            compute=ray.data.ActorPoolStrategy(size=workers), batch_size=batch_size, num_cpus=0.5,
        ).take_all()
    )


def test_two_workers_share_one_limit_and_return_result_columns(cluster: Any) -> None:
    limiter = RayLimiter(8)
    rows = [{"id": f"r{i}", "prompt": f"p{i}", "other": i} for i in range(40)]
    with RateLimitedServer(limit=6, window=0.5, fail="p2") as server:
        out = _map(cluster, rows, 2, 10, service=_factory(server.url), concurrency=4, limiter=limiter)
        stats = server.stats()
    by_id = {row["id"]: row for row in out}
    assert sorted(by_id) == sorted(f"r{i}" for i in range(40))
    bad = [row for row in out if not row["ok"]]  # a failing row is a row, never a failed task
    assert [row["id"] for row in bad] == ["r2"]
    assert bad[0]["failure_code"] == "INVALID_REQUEST" and bad[0]["finish"] == "error"
    first = by_id["r7"]
    assert first["ok"] and first["text"] == "echo p7" and first["finish"] == "stop"
    assert (first["input_tokens"], first["output_tokens"], first["failure_code"]) == (10, 5, None)
    assert json.loads(first["tool_calls"]) == [] and first["request_id"].startswith("req-")
    assert stats["max_in_window"] <= 6  # the limit held across both workers
    assert stats["rejected"] <= 8 and stats["duplicates"] == 0
    shared = limiter.stats()["local"]
    assert shared["launched"] == stats["requests"]  # every attempt of both workers went through it
    assert shared["in_flight"] == 0


def _kill_when_written(folder: Path, lines: int, seen: dict[str, Any]) -> None:
    """SIGKILL the worker that has a partition's checkpoint open once it holds ``lines``
    finished rows; the rows written by then go to ``seen``."""
    deadline = time.monotonic() + 60
    me = psutil.Process(os.getpid())
    while time.monotonic() < deadline:
        for path in folder.glob("part-*.jsonl"):
            text = path.read_text(encoding="utf-8")
            whole = [line for line in text.splitlines(keepends=True) if line.endswith("\n")]
            if len(whole) < lines:
                continue
            for child in me.children(recursive=True):
                try:
                    if any(Path(f.path) == path for f in child.open_files()):
                        os.kill(child.pid, signal.SIGKILL)
                        text = path.read_text(encoding="utf-8")  # what it had finished when it died
                        seen["keys"] = {json.loads(line)["key"] for line in text.splitlines() if line.endswith("}")}
                        seen["pid"] = child.pid
                        return
                except (psutil.Error, OSError):
                    continue
        time.sleep(0.01)


def test_a_worker_killed_mid_batch_is_retried_without_resending_finished_rows(cluster: Any, tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    rows = [{"id": f"r{i}", "prompt": f"p{i}"} for i in range(12)]
    seen: dict[str, Any] = {}
    with RateLimitedServer(limit=1000, delay=0.1) as server:
        killer = threading.Thread(target=_kill_when_written, args=(folder, 3, seen), daemon=True)
        killer.start()
        out = _map(
            cluster, rows, 1, 12, service=_factory(server.url), concurrency=2, checkpoint_dir=str(folder)
        )
        killer.join(5)
        accepted = dict(server.accepted)
    assert seen.get("pid"), "the worker was never killed"
    assert len(seen["keys"]) >= 3
    assert sorted(row["id"] for row in out if row["ok"]) == sorted(f"r{i}" for i in range(12))
    for key in seen["keys"]:  # finished before the kill: sent once, read back by the retry
        assert accepted[f"p{key[1:]}"] == 1
    resumed = {row["id"] for row in out if row["resumed"]}
    assert seen["keys"] <= resumed


def test_caller_mistakes_are_refused_when_built() -> None:
    with pytest.raises(ConfigurationError, match="concurrency"):
        RayMapper(provider="local", model="m", service=LlmService, concurrency=0)
    with pytest.raises(ConfigurationError, match="service"):
        RayMapper(provider="local", model="m", service=LlmService())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="lease"):
        RayLimiter(4, lease=0)
