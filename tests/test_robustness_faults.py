"""Threads, stalls and network faults over real loopback HTTP.

- 64 concurrent streams from one thread pool through one ``LlmService`` and one
  ``requests.Session``: every result is exactly its own stream's (text, usage, response
  id), no connection is left open afterwards, and concurrent throughput does not collapse
  next to the same 64 streams run one after another (the 0.8x target is measured by
  ``benchmarks/bench_concurrency.py``; a test on a shared machine only guards against collapse).
- Stalls and faults, each ending within its configured limit with the right code and the
  client's socket closed: a stall in the middle of an event, keep-alives (comments, or
  Anthropic ``ping`` events) forever, headers then silence, a connection reset in the
  middle of the body (partial output kept, no retry after content) and before any content
  (retried), an endless ("1 GB") body that never ends its event (``EVENT_TOO_LARGE`` at
  the adapter's ``max_event_size``, memory bounded).

Already covered elsewhere, not repeated here: a server that accepts and never answers
(``tests/test_errors_http.py::test_server_that_accepts_and_never_answers_times_out``),
keep-alives after content (``tests/test_transport.py::test_idle_timeout_with_keepalives_only``),
a clean EOF mid-stream (``tests/test_transport.py::test_eof_without_done_is_stream_closed``).

Raw socket servers here bind 127.0.0.1 only, run on daemon threads and stop by themselves
(bounded loops, timeouts, or when the client goes away). Socket accounting reads
``/proc`` (Linux).
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from dshstream import AnthropicAdapter, GenerateOptions, Message, OpenAIChatAdapter
from dshstream._adapters.http import HttpAdapter
from dshstream._core.assembler import AssembledResponse
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._core.types import TextDelta
from rawserver import CHUNKED_HEADERS, CLOSE_HEADERS, RawServer, chunk, reset

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="socket accounting reads /proc")

IDLE = 0.5
SLACK = 4.0  # scheduling slack on a loaded 2-core machine (every failure mode here takes >= 10 s)


# --------------------------------------------------------------------------- helpers


def chat_event(text: str, rid: str = "c1") -> bytes:
    payload = {"id": rid, "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def chat_tail(rid: str = "c1", prompt_tokens: int = 3) -> bytes:
    return (
        b'data: {"id":"' + rid.encode() + b'","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b'data: {"id":"' + rid.encode() + b'","choices":[],"usage":{"prompt_tokens":'
        + str(prompt_tokens).encode() + b',"completion_tokens":2}}\n\ndata: [DONE]\n\n'
    )


def request(provider: str = "local", **fields: object) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="m", messages=(Message.user("hi"),), **fields)  # type: ignore[arg-type]


def stream_once(adapter: HttpAdapter, *, idle_timeout: float) -> tuple[AssembledResponse, float]:
    service = LlmService(check_contract=True)
    service.register_adapter(["local"], adapter)
    started = time.monotonic()
    result = service.stream(request(idle_timeout=idle_timeout)).result()
    return result, time.monotonic() - started


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def client_sockets(port: int) -> int:
    """Open sockets of this process connected *to* ``port`` (the client side of every
    connection to that server, whatever its TCP state)."""
    ours = _socket_inodes()
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port == port and fields[9] in ours:
                count += 1
    return count


def assert_released(port: int, within: float = SLACK) -> None:
    deadline = time.monotonic() + within
    while client_sockets(port) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client_sockets(port) == 0, f"{client_sockets(port)} client connection(s) to :{port} still open"


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])



# --------------------------------------------------------------------------- threads

N_STREAMS = 64


def _words(i: int) -> list[str]:
    return [f"s{i}w{j} " for j in range(30)]


def test_64_concurrent_streams_share_a_service_and_session_without_cross_talk(server: ReplayServer) -> None:
    session = requests.Session()
    service = LlmService(check_contract=True)
    for i in range(N_STREAMS):
        words = _words(i)
        script: list[bytes | float] = []
        for word in words:  # pauses interleave the 64 streams on the wire
            script += [chat_event(word, rid=f"r{i}"), 0.004]
        script.append(chat_tail(rid=f"r{i}", prompt_tokens=1000 + i))
        server.add(f"/s{i}/", Route(body=b"", script=script, chunked=i % 2 == 0))
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/s{i}", session=session, max_retries=0)
        service.register_adapter([f"p{i}"], adapter)

    barrier = threading.Barrier(N_STREAMS)

    def run(i: int) -> tuple[int, AssembledResponse, list[str]]:
        barrier.wait(timeout=30)
        stream = service.stream(request(provider=f"p{i}"))
        deltas = [c.text for c in stream if isinstance(c, TextDelta)]
        return i, stream.result(), deltas

    with ThreadPoolExecutor(max_workers=N_STREAMS) as pool:
        outcomes = list(pool.map(run, range(N_STREAMS)))

    for i, result, deltas in outcomes:
        assert result.ok, (i, result.failure)
        assert result.finish.kind == "stop"
        assert deltas == _words(i), f"stream {i} got someone else's deltas"
        assert result.text == "".join(_words(i))
        assert result.usage is not None and result.usage.input_tokens == 1000 + i
        assert result.metadata is not None and result.metadata.response_id == f"r{i}"
        assert result.provider == f"p{i}"
    paths = sorted(r.path for r in server.requests)
    assert paths == sorted(f"/s{i}/chat/completions" for i in range(N_STREAMS))

    # Connections: the pool may keep at most its size idle for reuse; none other is open.
    port = port_of(server.url)
    deadline = time.monotonic() + SLACK
    while client_sockets(port) > 10 and time.monotonic() < deadline:
        time.sleep(0.02)
    open_after = client_sockets(port)
    print(f"\nclient connections open after 64 streams: {open_after}")
    assert open_after <= 10, f"{open_after} connections left open by 64 finished streams"
    session.close()


COLLAPSE_RATIO = 0.25  # the 0.8 target lives in benchmarks/bench_concurrency.py


def _throughput_body(events: int) -> bytes:
    return b"".join(chat_event(f"token{j} ") for j in range(events)) + chat_tail()


def test_64_concurrent_streams_do_not_collapse_throughput(server: ReplayServer) -> None:
    """64 streams at once move their bytes at no less than a quarter of the speed of the
    same 64 streams one after another.

    Both sides share one interpreter (the loopback server is in-process, and CPython runs
    one thread at a time), so concurrency can't add CPU throughput here; the check is that
    it does not collapse (lock convoys, per-stream polling, quadratic bookkeeping make it
    several times slower). The issue's target, 0.8x, is a benchmark
    (``benchmarks/bench_concurrency.py``, about 1.0-1.6 on an idle 2-core box): a timing
    that tight fails on a busy CI machine. Here the best of up to three rounds must reach
    0.25, a margin no scheduling noise closes. Every ratio is printed.
    """
    events = 1500
    server.add("/v1/", Route(body=_throughput_body(events), piece_size=65536))
    session = requests.Session()
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1", session=session))

    def one(_: int) -> int:
        result = service.stream(request()).result()
        assert result.ok and result.text.count("token") == events
        return len(result.text)

    for _ in range(3):  # warm-up: imports, first connections
        one(0)
    ratios: list[float] = []
    with ThreadPoolExecutor(max_workers=N_STREAMS) as pool:
        for _ in range(3):
            started = time.perf_counter()
            sequential_chars = sum(one(i) for i in range(N_STREAMS))
            sequential = time.perf_counter() - started
            started = time.perf_counter()
            concurrent_chars = sum(pool.map(one, range(N_STREAMS)))
            concurrent = time.perf_counter() - started
            assert concurrent_chars == sequential_chars
            ratios.append(sequential / concurrent)
            print(f"\n64 streams x {events} events: sequential {sequential:.2f}s, "
                  f"concurrent {concurrent:.2f}s, throughput ratio {ratios[-1]:.2f}")
            if ratios[-1] >= COLLAPSE_RATIO:
                break
    assert max(ratios) >= COLLAPSE_RATIO, f"concurrent/sequential throughput ratios {ratios}"
    # Finished streams hand their connection back to the session's pool (keep-alive
    # reuse), so what stays open is bounded by the pool size, never by the stream count.
    assert client_sockets(port_of(server.url)) <= 10
    session.close()


# --------------------------------------------------------------------------- ReplayServer stalls


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_stall_in_the_middle_of_an_event_times_out(server: ReplayServer, chunked: bool) -> None:
    half = b'data: {"id":"c1","choices":[{"index":0,"delta":{"cont'
    server.add("/v1/", Route(body=b"", chunked=chunked, script=[chat_event("par"), half, 30.0, b'ent":"x"}}]}\n\n']))
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1", max_retries=0)
    result, elapsed = stream_once(adapter, idle_timeout=IDLE)
    assert result.failure is not None and result.failure.code == "TIMEOUT"
    assert result.text == "par"
    assert IDLE * 0.9 <= elapsed < IDLE + SLACK
    assert_released(port_of(server.url))


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_comment_keepalives_forever_time_out_before_any_content(server: ReplayServer, chunked: bool) -> None:
    server.add("/v1/", Route(body=b"", chunked=chunked, script=[b": keep-alive\n\n", 0.05] * 400))
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1", max_retries=0)
    result, elapsed = stream_once(adapter, idle_timeout=IDLE)
    assert result.failure is not None and result.failure.code == "TIMEOUT"
    assert result.blocks == ()
    assert elapsed < IDLE + SLACK
    assert_released(port_of(server.url))


def test_anthropic_ping_events_forever_are_not_content(server: ReplayServer) -> None:
    start = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message",'
             b'"role":"assistant","model":"claude","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}\n\n')
    ping = b'event: ping\ndata: {"type": "ping"}\n\n'
    server.add("/v1/", Route(body=b"", script=[start] + [ping, 0.05] * 400))
    adapter = AnthropicAdapter(api_key="k-123456", base_url=server.url, max_retries=0)
    result, elapsed = stream_once(adapter, idle_timeout=IDLE)
    assert result.failure is not None and result.failure.code == "TIMEOUT"
    assert elapsed < IDLE + SLACK
    assert_released(port_of(server.url))


# --------------------------------------------------------------------------- raw socket servers

def _wait_for_client_close(conn: socket.socket, limit: float = 30.0) -> None:
    conn.settimeout(limit)
    while conn.recv(65536):
        pass


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_reset_in_the_middle_of_the_body_keeps_partial_output(chunked: bool) -> None:
    first = chat_event("partial ")
    half = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"lo'

    def behave(srv: RawServer, conn: socket.socket) -> None:
        if chunked:
            srv.send(conn, CHUNKED_HEADERS + chunk(first) + b"%x\r\n" % 200 + half)
        else:
            srv.send(conn, CLOSE_HEADERS + first + half)
        time.sleep(0.3)  # the client has read the first event
        reset(conn)

    with RawServer(behave) as raw:
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", max_retries=2)
        result, elapsed = stream_once(adapter, idle_timeout=10.0)
        assert result.failure is not None and result.failure.code in ("TRANSPORT", "STREAM_CLOSED"), result.failure
        assert result.text == "partial "
        assert raw.accepted == 1  # content had arrived: never retried
        assert elapsed < 0.3 + SLACK
        assert_released(raw.port)


def test_reset_after_a_2xx_before_any_content_is_never_retried() -> None:
    """The provider accepted the request (200) and may bill it: no second attempt."""
    def behave(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS + chunk(b": hello\n\n"))
        time.sleep(0.1)
        reset(conn)

    with RawServer(behave) as raw:
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", max_retries=1)
        result, elapsed = stream_once(adapter, idle_timeout=10.0)
        assert result.failure is not None and result.failure.code in ("TRANSPORT", "STREAM_CLOSED"), result.failure
        assert raw.accepted == 1
        assert elapsed < 0.5 + 2 * SLACK  # no backoff, no second attempt
        assert_released(raw.port)


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_headers_then_silence_times_out(chunked: bool) -> None:
    def behave(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS if chunked else CLOSE_HEADERS)
        _wait_for_client_close(conn)

    with RawServer(behave) as raw:
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", max_retries=0)
        result, elapsed = stream_once(adapter, idle_timeout=IDLE)
        assert result.failure is not None and result.failure.code == "TIMEOUT"
        assert IDLE * 0.9 <= elapsed < IDLE + SLACK
        assert_released(raw.port)


GIB = 1024**3
MAX_EVENT = 1024 * 1024
DEFAULT_MAX_EVENT = 16 * 1024 * 1024


@pytest.mark.parametrize(
    ("chunked", "lines", "limit"),
    [
        (True, False, MAX_EVENT),
        (False, False, MAX_EVENT),
        (True, True, MAX_EVENT),
        (False, True, MAX_EVENT),
        (True, False, DEFAULT_MAX_EVENT),
    ],
    ids=[
        "chunked-one endless line",
        "close-delimited-one endless line",
        "chunked-endless lines, no blank line",
        "close-delimited-endless lines, no blank line",
        "chunked-one endless line-default 16 MiB limit",
    ],
)
def test_endless_body_stops_at_the_event_limit(chunked: bool, lines: bool, limit: int) -> None:
    """A 1 GiB body that never finishes its event: the client stops at ``max_event_size``
    (1 MiB here to keep it fast, and once at the default 16 MiB) with ``EVENT_TOO_LARGE``,
    reads little more than that, and its memory stays a small multiple of the limit."""
    piece = (b"data: " + b"x" * 65530 + b"\n") if lines else b"x" * 65536

    def behave(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS if chunked else CLOSE_HEADERS)
        srv.send(conn, chunk(b"data: ") if chunked else b"data: ")
        framed = chunk(piece) if chunked else piece
        while srv.sent < GIB:  # bounded; ends sooner when the client closes
            srv.send(conn, framed)

    with RawServer(behave) as raw:
        if limit == DEFAULT_MAX_EVENT:  # the adapter's default
            adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1")
        else:
            adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", max_event_size=limit)
        tracemalloc.start()
        try:
            result, elapsed = stream_once(adapter, idle_timeout=10.0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        print(f"\npeak {peak / MAX_EVENT:.2f} MiB, {raw.sent / MAX_EVENT:.1f} MiB sent, {elapsed:.2f}s")
        assert result.failure is not None and result.failure.code == "EVENT_TOO_LARGE"
        assert raw.accepted == 1  # not retryable
        assert elapsed < SLACK * (4 if limit > MAX_EVENT else 1)
        assert peak < 3 * limit, f"peak {peak / MAX_EVENT:.1f} MiB for a {limit / MAX_EVENT:.0f} MiB limit"
        assert_released(raw.port)
        assert raw.sent < limit + 64 * MAX_EVENT  # the server was cut off (socket buffers aside)
