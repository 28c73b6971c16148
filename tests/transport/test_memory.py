"""The in-memory transport (dshstream._transport.memory): the outcomes of HTTP without
sockets — the same chunks and failures as the same bytes over loopback, the limits while
it waits, what it records — and the protocol both transports implement."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from helpers import FIXTURES

from dshstream import GenerateOptions, LlmError, Message, OpenAIChatAdapter, TextDelta
from dshstream._core.decode import StreamDecoder, translator_for
from dshstream._core.errors import ConfigurationError
from dshstream._core.http_request import HttpRequest
from dshstream._core.pump import pump
from dshstream._core.types import Finish, StreamChunk
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._transport import HttpTransport, MemoryAnswer, MemoryStream, MemoryTransport, SentRequest
from dshstream._transport.interface import Call, ResponseStream, Transport
from dshstream._transport.watchdog import Limits

T = TypeVar("T")
REAL = FIXTURES
KEY = "mem-test-key-123456"


def event(text: str) -> bytes:
    return b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


END = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def options(**fields: object) -> GenerateOptions:
    return GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),), **fields)  # type: ignore[arg-type]


def service_over(transport: MemoryTransport, monkeypatch: pytest.MonkeyPatch, **settings: object) -> LlmService:
    adapter = OpenAIChatAdapter(api_key=KEY, base_url="http://memory.invalid/v1", **settings)  # type: ignore[arg-type]
    monkeypatch.setattr(adapter, "transport", transport)
    service = LlmService(check_contract=True)
    service.register_adapter(["local"], adapter)
    return service


def http_chunks(server: ReplayServer, route: Route) -> list[StreamChunk]:
    server.add("/v1/", route)
    service = LlmService(check_contract=True)
    service.register_adapter(["local"], OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0))
    return list(service.stream(options()))


def open_memory(answer: MemoryAnswer, **limits: object) -> ResponseStream:
    transport: Transport = MemoryTransport(answer)
    return transport.open(HttpRequest(url="http://m.invalid/", headers={}, body={}), provider="p", **limits)  # type: ignore[arg-type]


def failure_of(call: object) -> str:
    assert callable(call)
    with pytest.raises(LlmError) as info:
        call()
    return info.value.failure.code


# --------------------------------------------------------------------------- the protocol


def test_both_transports_implement_the_protocol() -> None:
    transports: list[Transport] = [HttpTransport(), MemoryTransport(b"")]  # mypy checks the shapes
    assert all(callable(t.open) and callable(t.get_json) and callable(t.post_form) for t in transports)


class _OwnTransport(Transport):
    """A transport of one's own (interface rule 5): the two primitives only, over a
    MemoryTransport, each recorded as ``(primitive, method, url, body, limits)``."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.sent: list[tuple[str, str, str, bytes | None, Limits]] = []

    def send_stream(self, method: str, request: HttpRequest, limits: Limits, started: float | None) -> ResponseStream:
        self.sent.append(("stream", method, request.url, None, limits))
        return self.inner.send_stream(method, request, limits, started)

    def send_call(
        self, method: str, request: HttpRequest, data: bytes | None, call: Call, read: Callable[[ResponseStream], T]
    ) -> T:
        self.sent.append(("call", method, request.url, data, call.limits()))
        return self.inner.send_call(method, request, data, call, read)


def test_a_transport_of_ones_own_gets_every_call_from_its_two_primitives() -> None:
    def answer(sent: SentRequest) -> MemoryAnswer:
        if sent.url.endswith("/stream"):
            return MemoryAnswer([event("a"), END])
        if sent.url.endswith("/file"):
            return MemoryAnswer(b"0123456789", headers={"content-type": "application/octet-stream"})
        return MemoryAnswer.of_json({"method": sent.method, "type": sent.headers.get("content-type")})

    own = _OwnTransport(MemoryTransport(handler=answer))
    cancel = threading.Event()
    with own.open(HttpRequest(url="http://m.invalid/stream", headers={}, body={"a": 1}), provider="p",
                  cancel=cancel, idle_timeout=7.0) as stream:
        assert b"".join(stream) == event("a") + END
    assert own.get_json("http://m.invalid/j", {}, provider="p") == {"method": "GET", "type": None}
    assert own.post_form("http://m.invalid/f", {"a": "b c"}, provider="p")["type"] == "application/x-www-form-urlencoded"
    assert own.post_json("http://m.invalid/p", {"n": 1}, provider="p", timeout=None)["type"] == "application/json"
    assert own.post_bytes("http://m.invalid/b", b"--x--", "multipart/form-data; boundary=x", provider="p") == {
        "method": "POST", "type": "multipart/form-data; boundary=x"}
    assert own.get_bytes("http://m.invalid/file", {}, provider="p", limit=10) == b"0123456789"
    assert failure_of(lambda: own.get_bytes("http://m.invalid/file", {}, provider="p", limit=9)) == "MALFORMED_RESPONSE"
    with own.get_stream("http://m.invalid/file", {}, provider="p") as opened:
        assert b"".join(opened) == b"0123456789"
    kinds = [(kind, method, url.rsplit("/", 1)[1], body) for kind, method, url, body, _ in own.sent]
    assert kinds == [("stream", "POST", "stream", None), ("call", "GET", "j", None),
                     ("call", "POST", "f", b"a=b+c"), ("call", "POST", "p", b'{"n":1}'),
                     ("call", "POST", "b", b"--x--"), ("call", "GET", "file", None),
                     ("call", "GET", "file", None), ("call", "GET", "file", None)]
    limits = [entry[4] for entry in own.sent]
    assert limits[0].cancel is cancel and limits[0].idle_timeout == 7.0 and limits[0].provider == "p"
    assert limits[1].deadline is not None and limits[3].deadline is None  # timeout=None: no limit
    assert failure_of(lambda: own.open(HttpRequest(url="http://m.invalid/stream", headers={}, body={}),
                                       provider="p", method="PUT")) == "INVALID_OPTIONS"


def test_answers_are_validated_where_they_are_built() -> None:
    wrong: list[dict[str, Any]] = [{"status": 42}, {"status": True}, {"delay": -1.0}, {"body": "text"},
                                   {"body": [b"a", "b"]}, {"body": [-0.5]}, {"fail": ValueError}]
    for bad in wrong:
        with pytest.raises(ConfigurationError):
            MemoryAnswer(**bad)
    with pytest.raises(ConfigurationError):
        MemoryTransport()
    with pytest.raises(ConfigurationError):
        MemoryTransport(b"", handler=lambda sent: b"")


# --------------------------------------------------------------------------- the outcomes of HTTP (rule 2)


def test_recorded_transcripts_give_the_chunks_they_give_over_http(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixtures = sorted((REAL / "openai").glob("*.sse"))[:5]
    assert len(fixtures) >= 3
    for fixture in fixtures:
        body = fixture.read_bytes()
        over_http = http_chunks(server, Route(body=body))
        events = [piece + b"\n\n" for piece in body.split(b"\n\n") if piece.strip()]
        for answer in (MemoryAnswer(body), MemoryAnswer(events)):
            service = service_over(MemoryTransport(answer), monkeypatch, max_retries=0)
            assert list(service.stream(options())) == over_http, fixture.name


@pytest.mark.parametrize(
    ("status", "body", "headers"),
    [
        (401, b'{"error":{"message":"bad key","type":"invalid_request_error"}}', {"content-type": "application/json"}),
        (429, b'{"error":{"message":"slow down"}}', {"content-type": "application/json", "retry-after": "7"}),
        (500, b"oops", {"content-type": "text/plain"}),
        (302, b"", {"location": "https://elsewhere.example/v1"}),
        (200, b'{"error":{"message":"overloaded","type":"overloaded_error"}}', {"content-type": "application/json"}),
        (200, b'{"id":"x","choices":[]}', {"content-type": "application/json"}),
        (200, b"<html><body>log in</body></html>", {"content-type": "text/html"}),
    ],
    ids=["401", "429", "500", "302", "200-json-error", "200-json-document", "200-html"],
)
def test_an_answer_fails_as_the_same_answer_over_http(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch, status: int, body: bytes, headers: dict[str, str]
) -> None:
    content_type = headers.get("content-type", "text/plain")
    extra = {k: v for k, v in headers.items() if k != "content-type"}
    over_http = http_chunks(server, Route(body=body, status=status, content_type=content_type, headers=extra))
    service = service_over(MemoryTransport(MemoryAnswer(body, status=status, headers=headers)), monkeypatch,
                           max_retries=0)
    in_memory = list(service.stream(options()))
    http_finish, memory_finish = over_http[-1], in_memory[-1]
    assert isinstance(http_finish, Finish) and isinstance(memory_finish, Finish)
    assert http_finish.reason.failure is not None and memory_finish.reason.failure is not None
    for name in ("code", "category", "retryable", "status", "retry_after", "message"):
        assert getattr(memory_finish.reason.failure, name) == getattr(http_finish.reason.failure, name), name


def test_the_request_is_recorded_and_its_body_is_what_the_wire_gets(monkeypatch: pytest.MonkeyPatch) -> None:
    transport = MemoryTransport(event("hi") + END)
    assert service_over(transport, monkeypatch).stream(options(max_tokens=5)).result().text == "hi"
    [sent] = transport.requests
    assert isinstance(sent, SentRequest)
    assert sent.method == "POST" and sent.url == "http://memory.invalid/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.json()["messages"] == [{"role": "user", "content": "hi"}]
    assert KEY not in repr(sent)
    [stream] = transport.streams
    assert stream.released and stream.closed  # ended cleanly: handed back


def test_answers_are_served_in_order_and_the_last_repeats() -> None:
    transport = MemoryTransport(MemoryAnswer.of_json({"n": 1}), MemoryAnswer.of_json({"n": 2}))
    assert [transport.get_json("http://m.invalid/x", {}, provider="p")["n"] for _ in range(3)] == [1, 2, 2]
    routed = MemoryTransport(handler=lambda sent: MemoryAnswer.of_json({"url": sent.url}))
    assert routed.get_json("http://m.invalid/models", {}, provider="p") == {"url": "http://m.invalid/models"}


def test_a_get_that_fails_to_send_is_sent_once_more() -> None:
    transport = MemoryTransport(MemoryAnswer(fail=ConnectionResetError("reset by peer")), MemoryAnswer.of_json([1]))
    assert transport.get_json("http://m.invalid/models", {}, provider="p") == [1]
    assert len(transport.requests) == 2
    failing = MemoryTransport(MemoryAnswer(fail=ConnectionRefusedError("refused")))
    assert failure_of(lambda: failing.get_json("http://m.invalid/models", {}, provider="p")) == "TRANSPORT"
    assert len(failing.requests) == 2  # tried once more, not more


def test_a_form_post_is_url_encoded_and_bounded() -> None:
    transport = MemoryTransport(MemoryAnswer.of_json({"access_token": "t"}))
    assert transport.post_form("http://m.invalid/token", {"grant_type": "refresh", "x": "a b"},
                               provider="p") == {"access_token": "t"}
    sent = transport.requests[-1]
    assert sent.data == b"grant_type=refresh&x=a+b"
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    big = MemoryTransport(MemoryAnswer.of_json({"data": "x" * 100}))
    assert failure_of(lambda: big.get_json("http://m.invalid/", {}, provider="p", limit=50)) == "MALFORMED_RESPONSE"


def test_a_failing_read_is_mapped_as_a_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for exc, code in ((ConnectionResetError(f"reset, key {KEY}"), "TRANSPORT"), (TimeoutError("timed out"), "TIMEOUT")):
        transport = MemoryTransport(MemoryAnswer([event("partial "), exc]))
        result = service_over(transport, monkeypatch, max_retries=0).stream(options()).result()
        assert result.text == "partial "
        assert result.failure is not None and result.failure.code == code
        assert KEY not in repr(result.failure)


def test_the_request_id_never_echoes_a_credential() -> None:
    stream = open_memory(MemoryAnswer(END, headers={"content-type": "text/event-stream", "x-request-id": "req_1"}))
    assert stream.request_id == "req_1" and stream.status == 200
    stream.close()
    transport = MemoryTransport(MemoryAnswer(END, headers={"x-request-id": KEY}))
    request = HttpRequest(url="http://m.invalid/", headers={}, body={}, secrets=(KEY,))
    with transport.open(request, provider="p") as echoed:
        assert echoed.request_id is None


# --------------------------------------------------------------------------- the limits (rule 3)


def test_a_cancel_during_a_pause_ends_the_stream_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    cancel = threading.Event()
    transport = MemoryTransport(MemoryAnswer([event("partial"), math.inf, END]))
    stream = service_over(transport, monkeypatch).stream(options(cancel=cancel))
    started = time.monotonic()
    for chunk in stream:
        if isinstance(chunk, TextDelta):
            threading.Timer(0.1, cancel.set).start()
    result = stream.result()
    assert time.monotonic() - started < 5.0
    assert result.finish.kind == "aborted" and result.failure is not None and result.failure.code == "ABORTED"
    assert result.text == "partial"
    assert not transport.streams[0].released


def test_keep_alives_are_not_content_for_the_idle_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces: list[bytes | float] = [event("a")] + [step for _ in range(20) for step in (0.05, b": ping\n\n")] + [math.inf]
    transport = MemoryTransport(MemoryAnswer(pieces))
    started = time.monotonic()
    result = service_over(transport, monkeypatch, max_retries=0).stream(options(idle_timeout=0.4)).result()
    assert result.failure is not None and result.failure.code == "TIMEOUT", result.failure
    assert "idle" in result.failure.message and time.monotonic() - started < 5.0


def test_the_deadline_and_the_idle_clock_hold_before_headers() -> None:
    for limits in ({"deadline": time.monotonic() + 0.2}, {"idle_timeout": 0.2}):
        started = time.monotonic()
        assert failure_of(lambda: open_memory(MemoryAnswer(END, delay=math.inf), **limits)) == "TIMEOUT"
        assert time.monotonic() - started < 5.0
    cancel = threading.Event()
    cancel.set()
    transport = MemoryTransport(END)
    request = HttpRequest(url="http://m.invalid/", headers={}, body={})
    assert failure_of(lambda: transport.open(request, provider="p", cancel=cancel)) == "ABORTED"
    assert transport.requests == []  # nothing sent once cancelled


def test_a_close_from_another_thread_before_headers_is_aborted() -> None:
    transport = MemoryTransport(MemoryAnswer(END, delay=math.inf))
    request = HttpRequest(url="http://m.invalid/", headers={}, body={})

    def close_soon() -> None:
        while not transport.streams:
            time.sleep(0.01)
        transport.streams[0].close()

    threading.Thread(target=close_soon, daemon=True).start()
    started = time.monotonic()
    assert failure_of(lambda: transport.open(request, provider="p", idle_timeout=None)) == "ABORTED"
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize("after", [b"", b"stray bytes"], ids=["clean end", "bytes after the end"])
def test_the_pump_reads_a_memory_stream_like_an_http_one(after: bytes) -> None:
    pieces = [event("a"), b": keep-alive\n\n", event("b")[:9], event("b")[9:], END, after]
    transport = MemoryTransport(MemoryAnswer(pieces))
    decoder = StreamDecoder(translator_for("openai-chat", provider="p"))
    opened = transport.open(HttpRequest(url="http://m.invalid/", headers={}, body={}), provider="p")
    assert isinstance(opened, MemoryStream)
    with opened as stream:
        batches = list(pump(stream, decoder, cancel=None, provider="p"))
    assert [c.text for batch in batches for c in batch if isinstance(c, TextDelta)] == ["a", "b"]
    assert isinstance(batches[-1][-1], Finish)
    assert not stream.aborted and stream.closed
    assert stream.released is (not after)  # bytes after the terminal marker: not reused
