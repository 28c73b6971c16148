"""dshstream.batch.run_many over a loopback server that enforces a rate limit."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import ConfigurationError, GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream._core.rate_limits import parse_rate_limits
from dshstream.batch import BatchProgress, BatchResult, ProviderLimiter, run_many
from dshstream._rate_limited_server import RateLimitedServer
from rawserver import CHUNKED_HEADERS, RawServer, chunk, reset


def _service(server: RateLimitedServer) -> LlmService:
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="custom", api_key=""))
    return service


def _rows(n: int, start: int = 0) -> Iterator[dict[str, Any]]:
    for i in range(start, start + n):
        yield {"id": f"r{i}", "prompt": f"p{i}"}


def _run(server: RateLimitedServer, requests: Any, **kwargs: Any) -> list[BatchResult]:
    kwargs.setdefault("progress", False)
    return list(run_many(requests, service=_service(server), provider="local", model="m", **kwargs))


def test_all_rows_finish_within_the_learned_limit() -> None:
    with RateLimitedServer(limit=5, window=0.5) as server:
        rows = _run(server, _rows(30), concurrency=8)
    assert sorted(str(r.id) for r in rows if r.ok) == sorted(f"r{i}" for i in range(30))
    assert server.max_in_window <= 5
    assert server.rejected <= 8  # only the first probes, before the limit is known
    assert all(count == 1 for count in server.accepted.values())
    first = rows[0]
    assert first.text.startswith("echo p") and first.finish == "stop" and first.cost == pytest.approx(0.001)
    assert first.usage is not None and first.usage.total_tokens == 15 and first.request_id


def test_a_failing_row_does_not_fail_the_job() -> None:
    with RateLimitedServer(limit=100, window=1.0, fail="p3") as server:
        rows = _run(server, _rows(6), concurrency=3)
    bad = [r for r in rows if not r.ok]
    assert [r.id for r in bad] == ["r3"]
    assert bad[0].failure is not None and bad[0].failure.status == 400 and bad[0].finish == "error"
    assert sum(r.ok for r in rows) == 5


def test_an_invalid_request_is_a_failed_row_naming_the_field() -> None:
    with RateLimitedServer() as server:
        rows = _run(server, [{"id": 1, "prompt": "a"}, {"id": 2, "promt": "b"}, "nope"], ordered=True)
    assert [r.ok for r in rows] == [True, False, False]
    assert rows[1].failure is not None and "'promt'" in rows[1].failure.message
    assert rows[2].failure is not None and "requests[2]" in rows[2].failure.message


def test_ordered_gives_input_order_and_the_default_completion_order() -> None:
    with RateLimitedServer(limit=1000, delay=0.0) as server:
        ordered = _run(server, _rows(20), concurrency=4, ordered=True)
        plain = _run(server, _rows(20, start=100), concurrency=4)
    assert [r.id for r in ordered] == [f"r{i}" for i in range(20)]
    assert [r.index for r in ordered] == list(range(20))
    assert sorted(r.index for r in plain) == list(range(20))


def test_the_input_is_read_lazily() -> None:
    pulled = 0
    taken = 0
    peak = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal pulled
        for i in range(40):
            pulled += 1
            yield {"id": i, "prompt": f"p{i}"}

    with RateLimitedServer(limit=1000) as server:
        for _ in run_many(rows(), service=_service(server), provider="local", model="m", concurrency=2, progress=False):
            taken += 1
            peak = max(peak, pulled - taken)
    assert taken == 40
    assert peak <= 2 * 2


def test_crash_and_resume_sends_each_finished_row_once(tmp_path: Path) -> None:
    checkpoint = tmp_path / "out.jsonl"

    def crashing() -> Iterator[dict[str, Any]]:
        yield from _rows(7)
        raise RuntimeError("the input broke")

    with RateLimitedServer(limit=1000) as server:
        with pytest.raises(RuntimeError, match="the input broke"):
            for _ in run_many(crashing(), service=_service(server), provider="local", model="m", concurrency=3, checkpoint=checkpoint, progress=False):
                pass
        assert len(checkpoint.read_text().splitlines()) == 7
        rows = _run(server, _rows(12), concurrency=3, checkpoint=checkpoint)
        assert sorted(server.accepted) == sorted(f"p{i}" for i in range(12))
        assert set(server.accepted.values()) == {1}
    assert sum(r.resumed for r in rows) == 7 and all(r.ok for r in rows)
    lines = [json.loads(line) for line in checkpoint.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(f"r{i}" for i in range(12))


def test_closing_the_generator_cancels_and_a_rerun_finishes(tmp_path: Path) -> None:
    checkpoint = tmp_path / "out.jsonl"
    with RateLimitedServer(limit=1000, delay=0.05) as server:
        results = run_many(_rows(20), service=_service(server), provider="local", model="m", concurrency=4, checkpoint=checkpoint, progress=False)
        got = [next(results) for _ in range(3)]
        results.close()  # what Ctrl-C or a break does
        written = {json.loads(line)["id"] for line in checkpoint.read_text().splitlines()}
        assert {r.id for r in got} <= written
        rows = _run(server, _rows(20), concurrency=4, checkpoint=checkpoint)
    assert sorted(str(r.id) for r in rows if r.ok) == sorted(f"r{i}" for i in range(20))
    for row_id in written:  # a written row was never sent again
        assert server.accepted[f"p{row_id[1:]}"] == 1


def test_a_half_written_last_line_is_ignored_and_rewritten(tmp_path: Path) -> None:
    checkpoint = tmp_path / "out.jsonl"
    with RateLimitedServer(limit=1000) as server:
        _run(server, _rows(3), checkpoint=checkpoint)
        text = checkpoint.read_text()
        checkpoint.write_text(text + '{"key": "r3", "ok": tr')
        rows = _run(server, _rows(4), checkpoint=checkpoint, ordered=True)
    assert [r.resumed for r in rows] == [True, True, True, False]
    lines = checkpoint.read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line) for line in lines)


def test_a_budget_stops_new_requests_and_reports_the_rest_skipped(tmp_path: Path) -> None:
    with RateLimitedServer(limit=1000) as server:
        rows = _run(server, _rows(10), concurrency=1, max_cost=0.003, ordered=True, checkpoint=tmp_path / "c.jsonl")
    assert [r.ok for r in rows[:3]] == [True, True, True]
    skipped = rows[3:]
    assert skipped and all(r.skipped and not r.ok for r in skipped)
    assert skipped[0].failure is not None and "max_cost" in skipped[0].failure.message
    assert server.requests == 3
    assert len((tmp_path / "c.jsonl").read_text().splitlines()) == 3  # skipped rows are not written


def test_max_tokens_budget() -> None:
    with RateLimitedServer(limit=1000) as server:
        rows = _run(server, _rows(5), concurrency=1, max_tokens=20)
    assert sum(r.ok for r in rows) == 2 and sum(r.skipped for r in rows) == 3


def test_on_progress_hears_the_counts() -> None:
    seen: list[BatchProgress] = []
    with RateLimitedServer(limit=1000) as server:
        _run(server, _rows(5), on_progress=seen.append)
    last = seen[-1]
    assert last.done == 5 and last.failed == 0 and last.in_flight == 0 and last.tokens == 75
    assert last.cost == pytest.approx(0.005)


def test_generate_options_get_a_stable_key() -> None:
    with RateLimitedServer(limit=1000) as server:
        options = GenerateOptions(provider="local", model="m", messages=(Message(role="user", content="hello"),))
        first = _run(server, [options])
        second = _run(server, [options])
    assert first[0].id is None and first[0].key.startswith("sha256:") and first[0].key == second[0].key


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"concurrency": 0}, "concurrency"), ({"max_cost": -1}, "max_cost"), ({"on_progress": 3}, "on_progress"),
     ({"max_attempts": 0}, "max_attempts")],
)
def test_caller_mistakes_are_refused_at_once(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        run_many([], service=LlmService(), **kwargs)


def test_the_rate_limit_headers_are_read() -> None:
    limits = parse_rate_limits(
        {"X-RateLimit-Limit-Requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
         "x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "20ms", "retry-after": "2"}
    )
    assert limits is not None
    assert (limits.limit_requests, limits.remaining_requests, limits.reset_requests) == (60, 0, 360.0)
    assert (limits.remaining_tokens, limits.reset_tokens, limits.retry_after) == (100, 0.02, 2.0)
    anthropic = parse_rate_limits(
        {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "3",
         "anthropic-ratelimit-requests-reset": "2030-01-01T00:00:10Z"}, now=1893456000.0
    )
    assert anthropic is not None and anthropic.remaining_requests == 3 and anthropic.reset_requests == pytest.approx(10.0)
    mistral = parse_rate_limits({"x-ratelimit-limit-req-minute": "5", "x-ratelimit-remaining-req-minute": "4"})
    assert mistral is not None and (mistral.limit_requests, mistral.window) == (5, 60.0)
    assert parse_rate_limits({"content-type": "text/plain"}) is None


def test_a_single_stream_carries_its_rate_limits() -> None:
    with RateLimitedServer(limit=7) as server:
        response = _service(server).stream(
            GenerateOptions(provider="local", model="m", messages=(Message(role="user", content="x"),))
        ).result()
    assert response.metadata is not None and response.metadata.rate_limits is not None
    assert response.metadata.rate_limits.limit_requests == 7
    assert response.metadata["rate_limits"].remaining_requests == 6


def test_the_limiter_halves_on_a_429_and_grows_back() -> None:
    now = [0.0]
    limiter = ProviderLimiter(8, clock=lambda: now[0])
    stop = threading.Event()
    assert limiter.acquire(stop)
    limiter.rate_limited(0.5)
    limiter.release()
    assert limiter.allowed == 4.0
    stop_soon = threading.Timer(0.3, stop.set)
    stop_soon.start()
    assert not limiter.acquire(stop)  # the clock never passes the retry-after
    now[0] = 1.0
    assert limiter.acquire(threading.Event())
    limiter.observe(None)
    limiter.release()
    assert limiter.allowed == pytest.approx(4.25)


def test_a_shared_limiter_takes_launch_numbers_and_gives_back_a_dead_workers_slot() -> None:
    from dshstream._batch.ray_limiter import _Holder  # the Ray actor's state, without Ray

    holder = _Holder(2, lease=0.2)
    first = holder.acquire("p", 0.05)
    second = holder.acquire("p", 0.05)
    assert (first, second) == (1, 2)
    assert holder.acquire("p", 0.05) is None  # two in flight: the third waits, then gives up
    holder.finish("p", 2, ("observe", parse_rate_limits({"x-ratelimit-remaining-requests": "10"}), 15))
    assert holder.stats()["p"]["in_flight"] == 1
    time.sleep(0.25)  # launch 1's worker died: its lease runs out
    assert holder.acquire("p", 0.05) == 3
    assert holder.stats()["p"]["in_flight"] == 1
    holder.finish("p", 1, ("rate_limited", 0.1))  # the late report of the expired launch
    assert holder.stats()["p"] == {"in_flight": 1, "launched": 3, "rate_limited": 0, "allowed": 2.0}
    holder.finish("p", 3, ("rate_limited", 0.01))
    assert holder.stats()["p"]["rate_limited"] == 1 and holder.stats()["p"]["in_flight"] == 0


# --------------------------------------------------------------------------- rule 4: before the answer


def _drop_first_then_answer(srv: RawServer, conn: socket.socket) -> None:
    """The first connection is closed before any answer; later ones get a whole stream."""
    if srv.accepted == 1:
        conn.close()
        return
    body = (b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"fine"},"finish_reason":"stop"}]}\n\n'
            b"data: [DONE]\n\n")
    srv.send(conn, CHUNKED_HEADERS + chunk(body) + b"0\r\n\r\n")


def _cut_after_the_answer(srv: RawServer, conn: socket.socket) -> None:
    """A 200 and the first text, then a reset: the provider accepted (and may bill) it."""
    srv.send(conn, CHUNKED_HEADERS + chunk(
        b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}\n\n'))
    reset(conn)


def _raw_service(raw: RawServer) -> LlmService:
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{raw.url}/v1", dialect="custom", api_key=""))
    return service


def test_a_connection_dropped_before_any_answer_is_sent_again() -> None:
    with RawServer(_drop_first_then_answer, max_connections=4) as raw:
        rows = list(run_many([{"id": "a", "prompt": "p"}], service=_raw_service(raw), provider="local",
                             model="m", progress=False))
    assert [(r.ok, r.text, r.attempts) for r in rows] == [(True, "fine", 2)]
    assert raw.accepted == 2


def test_a_stream_cut_after_the_answer_is_not_sent_again() -> None:
    with RawServer(_cut_after_the_answer, max_connections=4) as raw:
        rows = list(run_many([{"id": "a", "prompt": "p"}], service=_raw_service(raw), provider="local",
                             model="m", progress=False))
    (row,) = rows
    assert not row.ok and row.attempts == 1 and row.failure is not None
    assert row.failure.code == "TRANSPORT" and row.failure.diagnostics is not None
    assert row.failure.diagnostics["accepted"] is True
    assert raw.accepted == 1
