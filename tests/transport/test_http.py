"""The HTTP path over loopback: framing, latency, cancel, early close, errors, timeouts."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
import socket
import threading
import time

import pytest

from dshstream import GenerateOptions, LlmError, Message, OpenAIChatAdapter, TextDelta
from dshstream._core.attribution import AppIdentity
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService


def chat_event(text: str) -> bytes:
    payload = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


FINISH = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
    b"data: [DONE]\n\n"
)



def service_for(server: ReplayServer, **adapter_options: object) -> LlmService:
    service = LlmService(check_contract=True)
    adapter = OpenAIChatAdapter(api_key="test-key-123456", base_url=f"{server.url}/v1", **adapter_options)  # type: ignore[arg-type]
    service.register_adapter(["local"], adapter)
    return service


def request(**fields: object) -> GenerateOptions:
    return GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_first_event_arrives_before_the_pause(server: ReplayServer, chunked: bool) -> None:
    # Judged by the gap between the two texts, not by a wall-clock bound from the start: a
    # reader that waits for more bytes delivers both together (gap ~0); a prompt one shows
    # the server's 0.9 s pause, less at most 0.6 s of scheduling delay on a busy machine.
    server.add("/v1/", Route(body=b"", chunked=chunked, script=[chat_event("Hel"), 0.9, chat_event("lo"), FINISH]))
    service = service_for(server)
    text_at: list[float] = []
    stream = service.stream(request())
    for chunk in stream:
        if isinstance(chunk, TextDelta):
            text_at.append(time.monotonic())
    result = stream.result()
    assert result.text == "Hello" and result.finish.kind == "stop"
    assert result.usage is not None and result.usage.input_tokens == 3
    assert len(text_at) == 2 and text_at[1] - text_at[0] >= 0.3, text_at


def test_request_carries_attribution_and_auth(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=chat_event("x") + FINISH))
    service = LlmService()
    identity = AppIdentity("fork-agent", "9.9.9", "https://example.com/fork-agent")
    service.register_adapter(
        ["local"],
        OpenAIChatAdapter(
            api_key="k-123456", base_url=f"{server.url}/v1", identity=identity,
            headers={"User-Agent": "wrong", "x-company": "private"},
        ),
    )
    service.stream(request(max_tokens=5, temperature=0.0, stop=("END",))).result()
    recorded = server.requests[-1]
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["user-agent"] == "fork-agent/9.9.9 (+https://example.com/fork-agent)"
    assert recorded.headers["x-company"] == "private"
    assert recorded.headers["authorization"] == "Bearer k-123456"
    assert not any(h in recorded.headers for h in ("http-referer", "x-title"))
    body = recorded.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 5 and body["temperature"] == 0.0 and body["stop"] == ["END"]
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_cancel_from_another_thread_ends_a_stalled_stream(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", script=[chat_event("partial"), 30.0, FINISH]))
    service = service_for(server)
    cancel = threading.Event()
    stream = service.stream(request(cancel=cancel))
    first = None
    for chunk in stream:
        if isinstance(chunk, TextDelta):
            first = time.monotonic()
            threading.Timer(0.2, cancel.set).start()
    result = stream.result()
    assert first is not None and time.monotonic() - first < 10.0  # vs. the server's 30 s stall
    assert result.finish.kind == "aborted" and result.failure is not None
    assert result.failure.code == "ABORTED"
    assert result.text == "partial"


def test_close_from_another_thread(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", script=[chat_event("partial"), 30.0, FINISH]))
    stream = service_for(server).stream(request())
    started = time.monotonic()
    for chunk in stream:
        if isinstance(chunk, TextDelta):
            threading.Timer(0.2, stream.close).start()
    assert time.monotonic() - started < 10.0  # vs. the server's 30 s stall
    assert stream.partial().finish.kind == "aborted"


def test_early_break_closes_the_connection(server: ReplayServer) -> None:
    script: list[bytes | float] = [chat_event("a"), *(step for _ in range(100) for step in (0.05, chat_event("b"))), FINISH]
    server.add("/v1/", Route(body=b"", script=script))
    service = service_for(server)
    with service.stream(request()) as stream:
        for chunk in stream:
            if isinstance(chunk, TextDelta):
                break
    deadline = time.monotonic() + 3
    while server.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.disconnects == 1


def test_idle_timeout_with_keepalives_only(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", script=[chat_event("x")] + [0.1, b": keep-alive\n\n"] * 100))
    started = time.monotonic()
    result = service_for(server, max_retries=0).stream(request(idle_timeout=0.3)).result()
    assert time.monotonic() - started < 6.0  # the keep-alives alone would run for 10 s
    assert result.failure is not None and result.failure.code == "TIMEOUT"
    assert result.text == "x"


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, b'{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}', "AUTH"),
        (400, b'{"error":{"message":"This model\'s maximum context length is 8192 tokens","code":"context_length_exceeded"}}', "CONTEXT_WINDOW_EXCEEDED"),
        (418, b"<html>teapot</html>", "HTTP_418"),
    ],
)
def test_error_statuses_are_classified(server: ReplayServer, status: int, body: bytes, code: str) -> None:
    server.add("/v1/", Route(body=body, status=status, content_type="application/json"))
    result = service_for(server).stream(request()).result()
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.code == code and result.failure.status == status
    assert "test-key-123456" not in repr(result.failure)


def test_rate_limit_then_success_is_retried(server: ReplayServer) -> None:
    limited = Route(body=b'{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}', status=429,
                    content_type="application/json", headers={"retry-after-ms": "100"})
    server.add("/v1/", [limited, Route(body=chat_event("done") + FINISH)])
    started = time.monotonic()
    result = service_for(server).stream(request()).result()
    assert result.text == "done" and len(server.requests) == 2
    assert time.monotonic() - started >= 0.1


def test_connection_refused_is_transport() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0))
    result = service.stream(request()).result()
    assert result.failure is not None and result.failure.code == "TRANSPORT"


def test_eof_without_done_is_stream_closed(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=chat_event("cut"), chunked=False))
    result = service_for(server, max_retries=0).stream(request()).result()
    assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
    assert result.text == "cut"


def test_stream_options_rejection_is_retried_without_it(server: ReplayServer) -> None:
    rejected = Route(body=b'{"error":{"message":"Unrecognized request argument supplied: stream_options"}}',
                     status=400, content_type="application/json")
    server.add("/v1/", [rejected, Route(body=chat_event("ok") + FINISH)])
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1")
    service = LlmService()
    service.register_adapter(["local"], adapter)
    assert service.stream(request()).result().text == "ok"
    assert adapter.wire.include_usage is False
    assert "stream_options" in server.requests[0].body
    assert "stream_options" not in server.requests[1].body


def test_gzip_encoded_stream_is_decoded(server: ReplayServer) -> None:
    import gzip

    body = gzip.compress(chat_event("zipped") + FINISH)
    server.add("/v1/", Route(body=body, headers={"content-encoding": "gzip"}, piece_size=7))
    result = service_for(server).stream(request()).result()
    assert result.text == "zipped" and result.finish.kind == "stop"


def test_connections_are_reused_across_streams(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=chat_event("again") + FINISH))
    service = service_for(server)
    for _ in range(5):
        assert service.stream(request()).result().text == "again"
    assert server.connections == 1


def test_a_body_held_open_after_done_does_not_delay_the_result(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", script=[chat_event("x"), FINISH, 5.0]))
    started = time.monotonic()
    assert service_for(server).stream(request()).result().text == "x"
    assert time.monotonic() - started < 3.5  # the server holds the body open for 5 s


def test_a_json_error_with_status_200_is_classified(server: ReplayServer) -> None:
    body = b'{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}'
    server.add("/v1/", Route(body=body, content_type="application/json"))
    result = service_for(server, max_retries=0).stream(request()).result()
    assert result.failure is not None and result.failure.code == "RATE_LIMIT"


def test_a_non_streamed_json_answer_is_malformed_not_a_hang(server: ReplayServer) -> None:
    body = b'{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}]}'
    server.add("/v1/", Route(body=body, content_type="application/json"))
    result = service_for(server, max_retries=0).stream(request()).result()
    assert result.failure is not None and result.failure.code == "MALFORMED_RESPONSE"
    assert result.failure.detail is not None and "chat.completion" in result.failure.detail


def test_an_event_stream_labelled_json_is_still_decoded(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", content_type="application/json", script=[chat_event("Hel"), 0.8, chat_event("lo"), FINISH]))
    text_at: list[float] = []
    stream = service_for(server).stream(request())
    for chunk in stream:
        if isinstance(chunk, TextDelta):
            text_at.append(time.monotonic())
    assert stream.result().text == "Hello"
    # streamed as it arrives (the pause shows between the texts), not read to the end first;
    # 0.5 s of the 0.8 s pause is left for scheduling delay
    assert len(text_at) == 2 and text_at[1] - text_at[0] >= 0.3, text_at


# --------------------------------------------------------------------------- bulk reads (readers.py rule 2)

import http.client  # noqa: E402
import random  # noqa: E402
import socket as _socket  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import urllib3  # noqa: E402

from dshstream import _transport  # noqa: E402
from dshstream._transport import readers  # noqa: E402

from dshstream._core.types import StreamChunk  # noqa: E402
from rawserver import CHUNKED_HEADERS, RawServer, chunk  # noqa: E402
from helpers import FIXTURES, client_sockets, send_threads  # noqa: E402

REAL = FIXTURES


def reader_kind(server: ReplayServer, route: Route) -> str:
    """Which reader the transport picks for ``route``'s answer."""
    server.add("/kind/", route)
    transport = _transport.HttpTransport()
    from dshstream._core.http_request import HttpRequest

    stream = transport.open(HttpRequest(url=f"{server.url}/kind/", headers={}, body={}), provider="t")
    assert isinstance(stream, _transport.HttpStream)
    with stream:
        read: Any = stream._read
        owner = getattr(read, "__self__", None)
        if isinstance(owner, readers.ChunkedReader):
            return "bulk-chunked"
        if isinstance(owner, readers.CloseDelimitedReader):
            return "http.client"
        return "standard"


def test_bulk_path_is_taken_only_for_plain_identity_bodies(server: ReplayServer) -> None:
    body = chat_event("x") + FINISH
    assert reader_kind(server, Route(body=body)) == "bulk-chunked"
    assert reader_kind(server, Route(body=body, chunked=False)) == "http.client"
    import gzip

    zipped = Route(body=gzip.compress(body), headers={"content-encoding": "gzip"})
    assert reader_kind(server, zipped) == "standard"  # compressed: urllib3 decodes it
    assert reader_kind(server, Route(body=body, headers={"content-encoding": "identity"})) == "bulk-chunked"


class _ScriptedFile:
    """A socket file's ``peek``/``read1`` over scripted arrivals, recording each call."""

    def __init__(self, arrivals: list[bytes]) -> None:
        self.arrivals, self.buffer, self.calls = list(arrivals), b"", []  # type: list[bytes], bytes, list[str]

    def _raw(self, size: int) -> bytes:  # one system call: what has arrived, at most size
        if not self.arrivals:
            return b""
        data = self.arrivals.pop(0)
        if len(data) > size:
            self.arrivals.insert(0, data[size:])
        return data[:size]

    def peek(self, size: int = 0) -> bytes:
        self.calls.append("peek")
        if not self.buffer:
            self.buffer = self._raw(8192)  # into the file's own 8 KiB buffer
        return self.buffer

    def read1(self, size: int) -> bytes:
        self.calls.append("read1")
        if self.buffer:  # what is buffered, and nothing more
            data, self.buffer = self.buffer[:size], self.buffer[size:]
            return data
        return self._raw(size)


@pytest.mark.parametrize("kind", ["chunked", "close-delimited"])
def test_a_read_after_a_short_one_waits_in_the_files_buffer(kind: str) -> None:
    """Bulk-read rule 2: the first read, and one after a short read (under 8 KiB: the
    server set its length), waits with ``peek`` in the socket file's own buffer — a silent
    server holds no 64 KiB ``read1`` buffer per open stream —; a read after a full one is
    a bulk ``read1`` again, and every byte arrives in order."""
    if kind == "chunked":
        arrivals = [b"64\r\n" + b"a" * 100 + b"\r\n", b"11170\r\n" + b"b" * 70000 + b"\r\n", b"5\r\nhello\r\n0\r\n\r\n"]
        expected = b"a" * 100 + b"b" * 70000 + b"hello"
    else:
        arrivals = [b"a" * 100, b"b" * 65536, b"c" * 65536, b"hello"]
        expected = b"".join(arrivals)
    fp = _ScriptedFile(arrivals)
    answer = http.client.HTTPResponse.__new__(http.client.HTTPResponse)
    answer.fp, answer.chunked, answer.length, answer._method = fp, kind == "chunked", None, "POST"  # type: ignore[assignment, attr-defined]
    answer._close_conn = lambda: setattr(answer, "fp", None)  # type: ignore[attr-defined]
    read = (readers.ChunkedReader(answer, fp).read if kind == "chunked"  # type: ignore[arg-type]
            else readers.CloseDelimitedReader(answer, fp).read)  # type: ignore[arg-type]
    got = []
    while data := read():
        got.append(data)
    assert b"".join(got) == expected
    if kind == "chunked":
        # 106 bytes came (short): the next read waits and takes the 8 KiB its peek
        # buffered; that one was full: the rest of the 70,000-byte chunk in one bulk read
        assert fp.calls == ["peek", "read1", "peek", "read1", "read1", "read1"]
    else:
        assert [len(d) for d in got] == [100, 8192, 65536 - 8192, 65536, 5]
        assert fp.calls == ["peek", "read1", "peek", "read1", "read1", "read1", "read1", "peek", "read1"]


def test_bulk_path_falls_back_on_anything_unusual(monkeypatch: pytest.MonkeyPatch) -> None:
    class Answer(http.client.HTTPResponse):
        pass

    class Raw:
        def __init__(self, answer: object, **attrs: object) -> None:
            self._fp = answer
            self.__dict__.update(attrs)

    def answer(**attrs: object) -> http.client.HTTPResponse:
        a = http.client.HTTPResponse.__new__(http.client.HTTPResponse)
        a.fp = open(__file__, "rb")  # a BufferedReader
        a.version, a._method, a.chunked, a.chunk_left = 11, "POST", True, None  # type: ignore[attr-defined]
        a.length, a.will_close = None, False
        a.__dict__.update(attrs)
        return a

    assert readers.bulk_reader(Raw(answer())) is not None
    assert readers.bulk_reader(Raw(answer(chunked=False, will_close=True))) is not None
    unusual: list[Any] = [
        Raw(object()),  # not an http.client answer
        Raw(Answer.__new__(Answer)),  # a subclass: its internals are unknown
        Raw(answer(version=10)),
        Raw(answer(_method="HEAD")),
        Raw(answer(chunk_left=3)),  # http.client began unframing
        Raw(answer(fp=__import__("io").BytesIO(b""))),  # not a buffered socket file
        Raw(answer(), _fp_bytes_read=5),  # urllib3 read already
        Raw(answer(), _decoded_buffer=b"held"),
        Raw(answer(chunked=False, length=10, will_close=False)),  # Content-Length: urllib3 checks it
    ]
    for raw in unusual:
        assert readers.bulk_reader(raw) is None, raw.__dict__
    no_close = answer()
    monkeypatch.delattr(http.client.HTTPResponse, "_close_conn")
    assert readers.bulk_reader(Raw(no_close)) is None
    monkeypatch.undo()
    monkeypatch.setattr(readers, "BULK_READS", False)
    assert readers.bulk_reader(Raw(answer())) is None


def _chunks(server: ReplayServer, body: bytes, wire: str, piece: int) -> list[StreamChunk]:
    from dshstream import AnthropicAdapter

    server.add("/v1/", Route(body=body, piece_size=piece))
    service = LlmService(check_contract=True)
    if wire == "anthropic":
        service.register_adapter(["local"], AnthropicAdapter(api_key="k-123456", base_url=server.url, max_retries=0))
    else:
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1", max_retries=0))
    return list(service.stream(request()))


@pytest.mark.parametrize("path", ["standard", "old-urllib3"])
def test_bulk_reads_give_what_the_standard_path_gives(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    rng = random.Random(5)
    cases = [(p, "anthropic") for p in sorted((REAL / "anthropic").glob("*.sse"))[:4]]
    cases += [(p, "openai") for p in sorted((REAL / "openai").glob("*.sse"))[:4]]
    assert len(cases) >= 6
    for fixture, wire in cases:
        body = fixture.read_bytes()
        for piece in (0, 1, rng.randrange(2, 200), 16384):
            bulk = _chunks(server, body, wire, piece)
            with monkeypatch.context() as m:
                m.setattr(readers, "BULK_READS", False)
                if path == "old-urllib3":  # urllib3 before 2.2 (which has no read1): http.client's read1
                    m.setattr(urllib3.HTTPResponse, "read1", None, raising=False)
                assert _chunks(server, body, wire, piece) == bulk, (fixture.name, piece)


def test_bytes_after_the_last_chunk_keep_the_connection_out_of_the_pool() -> None:
    def behave(srv: RawServer, conn: _socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS + chunk(chat_event("one")) + chunk(FINISH) + b"0\r\n\r\nHTTP/1.1 200 OK\r\n")
        conn.settimeout(5)
        conn.recv(1)  # until the client closes

    with RawServer(behave) as raw:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1"))
        assert service.stream(request()).result().text == "one"
        assert service.stream(request()).result().text == "one"
        assert raw.accepted == 2  # the first connection carried stray bytes: not reused


def test_missing_final_crlf_after_the_last_chunk_is_accepted() -> None:
    # http.client accepts an EOF where the trailer section's empty line belongs; so do we
    def behave(srv: RawServer, conn: _socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS + chunk(chat_event("one") + FINISH) + b"0\r\n")
        conn.shutdown(_socket.SHUT_WR)
        time.sleep(0.2)

    with RawServer(behave) as raw:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1"))
        result = service.stream(request()).result()
        assert result.text == "one" and result.finish.kind == "stop"


@pytest.mark.parametrize(
    "framing",
    [b"zz\r\n", b"%x\r\n%sXX" % (len(b": ping\n\n"), b": ping\n\n"), b"1;" + b"e" * 5000 + b"\r\n"],
    ids=["size not hex", "no CRLF after the data", "size line too long"],
)
def test_malformed_chunked_framing_is_a_transport_failure(framing: bytes) -> None:
    def behave(srv: RawServer, conn: _socket.socket) -> None:
        srv.send(conn, CHUNKED_HEADERS + chunk(chat_event("partial ")) + framing)
        conn.settimeout(5)
        conn.recv(1)

    with RawServer(behave) as raw:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", max_retries=0))
        result = service.stream(request(idle_timeout=10.0)).result()
        assert result.text == "partial "
        assert result.failure is not None and result.failure.code == "TRANSPORT", result.failure
        assert result.failure.detail is not None and "chunked transfer coding" in result.failure.detail


def test_a_chunk_header_alone_does_not_hold_back_the_event_before_it() -> None:
    # the event and the next chunk's size line in one write, then a pause: the event is
    # delivered at once, not when the next chunk's data arrives
    def behave(srv: RawServer, conn: _socket.socket) -> None:
        later = chat_event("lo") + FINISH
        srv.send(conn, CHUNKED_HEADERS + chunk(chat_event("Hel")) + b"%x\r\n" % len(later))
        time.sleep(0.8)
        srv.send(conn, later + b"\r\n0\r\n\r\n")
        conn.settimeout(5)
        conn.recv(1)

    with RawServer(behave) as raw:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1"))
        text_at: list[float] = []
        stream = service.stream(request())
        for c in stream:
            if isinstance(c, TextDelta):
                text_at.append(time.monotonic())
        assert stream.result().text == "Hello"
        assert len(text_at) == 2 and text_at[1] - text_at[0] >= 0.3, text_at


# --------------------------------------------------------------------------- base.py rule 3: a GET is tried twice

MODELS = json.dumps({"object": "list", "data": [{"id": "m1", "object": "model"}]}).encode()


def _models_then_drop_the_next(srv: RawServer, conn: _socket.socket) -> None:
    """A keep-alive answer (no ``Connection: close``); the next request on the same
    connection is read and dropped unanswered: the race a server that closes idle
    keep-alive connections (llama.cpp's, after 5 s) loses against a client reusing one."""
    srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
             % (len(MODELS), MODELS))
    conn.settimeout(5)
    try:
        conn.recv(65536)
    except OSError:
        pass
    conn.close()


def test_a_dropped_keep_alive_connection_does_not_fail_a_model_list() -> None:
    with RawServer(_models_then_drop_the_next) as raw:
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", dialect="llamacpp")
        assert [m.id for m in adapter.list_models("local")] == ["m1"]
        assert [m.id for m in adapter.list_models("local")] == ["m1"]  # reused, dropped, sent again
        assert raw.accepted == 2


def test_a_get_that_fails_twice_is_one_transport_failure() -> None:
    def refuse(srv: RawServer, conn: _socket.socket) -> None:
        conn.close()  # every request: the connection dropped before any answer

    with RawServer(refuse) as raw:
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", dialect="llamacpp")
        with pytest.raises(LlmError) as info:
            adapter.list_models("local")
        assert info.value.failure.code == "TRANSPORT"
        assert raw.accepted == 2  # tried once more, not more


# --------------------------------------------------------------------------- pool.py rule 5: the keep-alive hint


def _keep_alive_server(hint: bytes | None, closes_after: float) -> Callable[[RawServer, _socket.socket], None]:
    """Answers every request on a connection with a short stream (``Keep-Alive: <hint>``
    when given) and keeps the connection — until it has been idle ``closes_after``
    seconds: the next request is then read and dropped unanswered, the race a server whose
    idle timer fires just as the client reuses the connection always loses."""
    from rawserver import _read_request

    def behave(srv: RawServer, conn: _socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
        head += (b"Keep-Alive: " + hint + b"\r\n" if hint else b"") + b"\r\n"
        while True:
            srv.send(conn, head + chunk(chat_event("ok") + FINISH) + b"0\r\n\r\n")
            idle_from = time.monotonic()
            _read_request(conn)
            if time.monotonic() - idle_from >= closes_after:
                return  # closed unanswered

    return behave


def _two_streams(raw: RawServer, pause: float) -> list[str]:
    service = LlmService(check_contract=True)
    service.register_adapter(["local"], OpenAIChatAdapter(api_key="test-key-123456", base_url=f"{raw.url}/v1"))
    finishes = []
    for i in range(2):
        if i:
            time.sleep(pause)
        result = service.stream(request(max_retries=0)).result()
        failure = result.finish.failure
        finishes.append(failure.code if failure else result.text)
    return finishes


@pytest.mark.parametrize("hint", [b"timeout=1", b"timeout=1, max=100", b"max=100,timeout=1.0"])
def test_a_connection_idle_past_the_servers_hint_is_not_reused(hint: bytes) -> None:
    # 0.6 s idle: past the 1 s hint less its margin (half of it), before the server's close
    with RawServer(_keep_alive_server(hint, closes_after=0.6), max_connections=4) as raw:
        assert _two_streams(raw, pause=0.6) == ["ok", "ok"]
        assert raw.accepted == 2  # a new connection for the second stream, none resent


def test_a_connection_within_the_hint_is_reused() -> None:
    with RawServer(_keep_alive_server(b"timeout=5", closes_after=5.0), max_connections=4) as raw:
        assert _two_streams(raw, pause=0.1) == ["ok", "ok"]
        assert raw.accepted == 1


def test_without_a_hint_the_connection_is_reused_and_the_race_is_the_servers() -> None:
    # What rule 5 is for: the same server without the header loses the race, and a POST is
    # not resent (max_retries=0 here; the attempt loop's retry is the remedy then).
    with RawServer(_keep_alive_server(None, closes_after=0.5), max_connections=4) as raw:
        assert _two_streams(raw, pause=0.6) == ["ok", "TRANSPORT"]
        assert raw.accepted == 1


# --------------------------------------------------------------------------- pool.py rule 3: a caller's session


def _answer_then_hold(srv: RawServer, conn: _socket.socket) -> None:
    """A keep-alive answer to the first request; the next one on the same connection is
    read and never answered (until the client goes away)."""
    srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
    conn.settimeout(30)
    while conn.recv(65536):
        pass


def test_a_pool_the_callers_session_opened_before_is_watched_too() -> None:
    """The caller's session already holds a keep-alive connection to the host (its own
    request, before dshstream saw the session): a stream reusing it and cancelled before
    headers still cuts it at once, and the session's own requests still work."""
    import requests

    from dshstream._transport.pool import WatchedPoolMixin

    session = requests.Session()
    baseline = send_threads()
    with RawServer(_answer_then_hold) as raw:
        assert session.get(f"{raw.url}/ping", timeout=5).text == "ok"  # a stock pool, one idle connection
        adapter = OpenAIChatAdapter(api_key="k-123456", base_url=f"{raw.url}/v1", session=session, max_retries=0)
        http_adapter = session.adapters["http://"]
        assert isinstance(http_adapter, requests.adapters.HTTPAdapter)
        pools = http_adapter.poolmanager.pools
        assert all(isinstance(pools[key], WatchedPoolMixin) for key in pools.keys())
        service = LlmService(check_contract=True)
        service.register_adapter(["local"], adapter)
        cancel = threading.Event()
        timer = threading.Timer(0.3, cancel.set)
        timer.start()
        started = time.monotonic()
        result = service.stream(request(cancel=cancel)).result()
        elapsed = time.monotonic() - started
        assert result.finish.kind == "aborted" and elapsed < 0.3 + 1.0
        assert raw.accepted == 1  # the request went over the pooled connection
        ended = time.monotonic() + 1.0
        while (client_sockets(raw.port) or send_threads() > baseline) and time.monotonic() < ended:
            time.sleep(0.01)
        assert client_sockets(raw.port) == 0 and send_threads() <= baseline
    with ReplayServer() as replay:
        replay.add("/", Route(body=b"fine", content_type="text/plain"))
        assert session.get(f"{replay.url}/x", timeout=5).text == "fine"
    session.close()


# --------------------------------------------------------------------------- readers.py: the internals in one file


def _private_reads(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every private attribute read or written on another object than
    ``self``/``super()``, by ``x._name`` or ``getattr(x, "_name")`` (dunders aside)."""
    import ast

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and private(node.attr):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "super":
                continue
            found.append((node.lineno, node.attr))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and private(node.args[1].value)):
            found.append((node.lineno, node.args[1].value))
    return found


def test_private_attributes_of_http_client_and_urllib3_are_read_in_readers_only() -> None:
    package = Path(_transport.__file__).parent
    elsewhere = {p.name: _private_reads(p) for p in sorted(package.glob("*.py")) if p.name != "readers.py"}
    assert {name: reads for name, reads in elsewhere.items() if reads} == {}
    # ... and in readers.py each one says why, on its line or the line above
    path = package / "readers.py"
    lines = path.read_text(encoding="utf-8").splitlines()
    reads = _private_reads(path)
    assert len({name for _, name in reads}) >= 10  # the table in its docstring
    unexplained = [(n, name) for n, name in reads
                   if "#" not in lines[n - 1] and not lines[n - 2].strip().startswith("#")]
    assert unexplained == []
    docstring = readers.__doc__ or ""
    assert all(f".{name}``" in docstring for _, name in reads), "a private name missing from the table"


# --------------------------------------------------------------------------- pool.py rule 6: idle connections for concurrent streams


def _concurrent_rounds(adapter: OpenAIChatAdapter, streams: int, rounds: int) -> None:
    """``rounds`` times, ``streams`` streams at once in as many threads, each read whole."""
    service = LlmService()
    service.register_adapter(["local"], adapter)
    options = GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),))
    results: list[bool] = []

    def one() -> None:
        results.append(service.stream(options).result().ok)

    for _ in range(rounds):
        threads = [threading.Thread(target=one) for _ in range(streams)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    assert results == [True] * streams * rounds


def _paced_server() -> ReplayServer:
    # each stream stays open 0.3 s after its first event: the streams of a round overlap
    return ReplayServer({"/v1/": Route(body=b"", script=[chat_event("Hel"), 0.3, chat_event("lo"), FINISH])})


def test_32_streams_at_once_keep_their_connections_for_the_next_32(caplog: pytest.LogCaptureFixture) -> None:
    """Rule 6: with requests' 10 idle connections per host, 22 of 32 connections were
    closed as they went idle (each with a urllib3 WARNING) and opened again by the next
    round; the transport's own session keeps them all."""
    caplog.set_level(logging.DEBUG)
    with _paced_server() as server:
        _concurrent_rounds(OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1"), 32, 2)
        # (a few more than 32 when a thread of the second round starts before a stream of
        # the first has handed its connection back; with a pool of 10: 54)
        assert len(server.requests) == 64 and server.connections < 48
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert not [r for r in caplog.records if "is full" in r.getMessage()]  # none closed for want of room


def test_a_full_pool_closes_a_connection_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """Rule 6: a caller's session whose pool holds 2 connections, 8 streams at once: the 6
    connections that find the pool full are closed with a DEBUG line, no WARNING."""
    import requests

    session = requests.Session()
    session.mount("http://", requests.adapters.HTTPAdapter(pool_maxsize=2))
    caplog.set_level(logging.DEBUG)
    with _paced_server() as server:
        _concurrent_rounds(OpenAIChatAdapter(api_key="k-123456", base_url=f"{server.url}/v1", session=session), 8, 1)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    closed = [r for r in caplog.records if r.name == "dshstream.transport" and "is full" in r.getMessage()]
    assert 1 <= len(closed) <= 6
