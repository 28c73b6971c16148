"""The README's Dask and Spark recipes (run_partition in ``map_partitions`` and
``mapInPandas``) against a loopback server that enforces a rate limit, when the engine is
installed; a rerun sends nothing (the checkpoint folder). Also run_partition itself:
rows in every shape an engine hands over, columns out in order."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dshstream import ConfigurationError, LlmService, OpenAIChatAdapter
from dshstream._rate_limited_server import RateLimitedServer
from dshstream.batch import RESULT_COLUMNS, SPARK_SCHEMA, run_partition
from helpers import require_engine
from service.recipes import recipe


def _service(server: RateLimitedServer) -> LlmService:
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="custom", api_key=""))
    return service


def _run_recipe(marker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "answers"
    source = recipe(marker, folder)
    with RateLimitedServer(limit=20, window=0.25) as server:
        monkeypatch.setenv("VLLM_BASE_URL", f"{server.url}/v1")
        namespace: dict[str, Any] = {}
        exec(compile(source, f"README.rst ({marker})", "exec"), namespace)
        answers = namespace["answers"]
        assert len(answers) == 40 and bool(answers["ok"].all())
        assert sorted(answers["text"]) == sorted(f"echo What is {n} squared?" for n in range(40))
        assert not answers["resumed"].any()
        sent = server.requests
        assert server.max_in_window <= 20 and sum(server.accepted.values()) == 40
        exec(compile(source, f"README.rst ({marker}), again", "exec"), {})
        assert server.requests == sent  # the rerun read every row back from the checkpoint
    assert sum(len(p.read_text().splitlines()) for p in folder.glob("part-*.jsonl")) == 40


def test_the_dask_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_engine("dask.dataframe", "dask")
    _run_recipe("dask.dataframe", tmp_path, monkeypatch)


def test_the_spark_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require_engine("pyspark", None)  # needs Java: never installed by CI
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this interpreter
    try:
        _run_recipe("mapInPandas", tmp_path, monkeypatch)
    finally:
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            active.stop()


def test_rows_as_columns_frames_or_dicts_give_columns_in_order() -> None:
    pandas = require_engine("pandas", "dask")
    numpy = require_engine("numpy", "dask")
    rows = [{"id": f"r{i}", "prompt": f"p{i}", "extra": i} for i in range(5)]
    with RateLimitedServer(limit=1000) as server:
        options: dict[str, Any] = {"service": _service(server), "provider": "local", "model": "m", "concurrency": 3}
        from_dicts = run_partition(rows, **options)
        from_frame = run_partition(pandas.DataFrame(rows), **options)
        from_numpy = run_partition({k: numpy.array([r[k] for r in rows]) for k in rows[0]}, **options)
    assert list(from_dicts) == list(RESULT_COLUMNS)
    for columns in (from_dicts, from_frame, from_numpy):
        assert columns["id"] == [f"r{i}" for i in range(5)]
        assert columns["text"] == [f"echo p{i}" for i in range(5)]
        assert columns["ok"] == [True] * 5 and columns["input_tokens"] == [10] * 5
        frame = pandas.DataFrame(columns).astype(RESULT_COLUMNS)
        assert str(frame["cost"].dtype) == "float64" and frame["cost"].iloc[0] == pytest.approx(0.001)
    assert [part.split()[0] for part in SPARK_SCHEMA.split(", ")] == list(RESULT_COLUMNS)


def test_a_row_missing_values_and_messages_as_json() -> None:
    rows = [
        {"id": "a", "prompt": "hi", "messages": None, "max_tokens": float("nan")},
        {"id": "b", "prompt": None, "messages": json.dumps([{"role": "user", "content": "hey"}])},
        {"id": "c", "prompt": None, "messages": None},
    ]
    with RateLimitedServer(limit=1000) as server:
        columns = run_partition(rows, service=_service(server), provider="local", model="m")
    assert columns["ok"] == [True, True, False]
    assert columns["text"][:2] == ["echo hi", "echo hey"]
    assert columns["failure_code"][2] == "INVALID_OPTIONS" and "prompt" in columns["failure_message"][2]


def test_a_partition_sends_only_what_no_checkpoint_file_has_finished(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "prompt": f"p{i}"} for i in range(6)]
    with RateLimitedServer(limit=1000) as server:
        service = _service(server)
        run_partition(rows[:3], service=service, provider="local", model="m", checkpoint_dir=tmp_path)
        first = run_partition(rows, service=service, provider="local", model="m", checkpoint_dir=tmp_path)
        again = run_partition(rows, service=service, provider="local", model="m", checkpoint_dir=tmp_path)
    assert first["resumed"] == [True] * 3 + [False] * 3  # the first 3 from the other partition's file
    assert again["resumed"] == [True] * 6 and again["text"] == first["text"]
    assert set(server.accepted.values()) == {1} and len(server.accepted) == 6
    assert len(list(tmp_path.glob("part-*.jsonl"))) == 2


def test_caller_mistakes_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="service"):
        run_partition([], service=42)
    with pytest.raises(ConfigurationError, match="LlmService"):
        run_partition([], service=lambda: 42)
    with pytest.raises(ConfigurationError, match="different lengths"):
        run_partition({"id": [1, 2], "prompt": ["a"]}, service=LlmService())
    with pytest.raises(ConfigurationError, match="mapping"):
        run_partition(["a"], service=LlmService())


def test_a_rerun_partitioned_otherwise_sends_nothing_finished(tmp_path: Path) -> None:
    rows = [{"id": f"r{i}", "prompt": f"p{i}"} for i in range(7)]
    with RateLimitedServer(limit=1000) as server:
        service = _service(server)
        options: dict[str, Any] = {"service": service, "provider": "local", "model": "m", "checkpoint_dir": tmp_path}
        for start in (0, 3):  # the first run: partitions of 3, the last row never run
            run_partition(rows[start:start + 3], **options)
        (next(tmp_path.glob("part-*.jsonl"))).open("a").write('{"key": "r6", "ok": tr')  # a crash mid-line
        again = [run_partition(rows[start:start + 2], **options) for start in range(0, 7, 2)]
    resumed = [flag for columns in again for flag in columns["resumed"]]
    assert resumed == [True] * 6 + [False]
    assert [text for columns in again for text in columns["text"]] == [f"echo p{i}" for i in range(7)]
    assert set(server.accepted.values()) == {1} and len(server.accepted) == 7
