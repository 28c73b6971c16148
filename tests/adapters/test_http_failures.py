"""Failures over real HTTP: the key-leak matrix, retries, timeouts and failure reporting."""

from __future__ import annotations

import base64
import binascii
import logging
import socket
import threading
import time
import traceback
import urllib.parse
from typing import Any

import pytest

from dshstream import GenerateOptions, LlmFailure, Message, OpenAIChatAdapter
from dshstream._core.errors import LlmError
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

CANARY = "sk-test-CANARY-0123456789abcdefXYZ"
ECHOES = [
    CANARY,
    base64.b64encode(CANARY.encode()).decode(),
    binascii.hexlify(CANARY.encode()).decode(),
    urllib.parse.quote(f"Bearer {CANARY}", safe="").replace("-", "%2D"),
]
ECHO_TEXT = " | ".join(ECHOES)

OK_BODY = (
    b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)



def request(**fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),), **fields)


def make_service(base_url: str, reports: list[tuple[LlmFailure, dict[str, Any]]] | None = None, **kw: Any) -> LlmService:
    service = LlmService()
    reporter = (lambda f, d: reports.append((f, d))) if reports is not None else None
    service.register_adapter(
        ["local"], OpenAIChatAdapter(api_key=CANARY, base_url=base_url, failure_reporter=reporter, **kw)
    )
    return service


def assert_no_leak(*texts: str) -> None:
    for text in texts:
        for echo in ECHOES:
            assert echo not in text, f"leaked {echo!r} in {text[:300]!r}"
        assert "CANARY" not in text


def surfaces(failure: LlmFailure) -> list[str]:
    error = LlmError(failure)
    try:
        raise error
    except LlmError as exc:
        formatted = "".join(traceback.format_exception(exc))
    return [failure.message, failure.detail or "", repr(failure), str(error), repr(error), formatted]


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


def _silent_listener() -> tuple[socket.socket, int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock, sock.getsockname()[1]


def test_key_never_leaks_through_any_error_path(server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="dshstream")
    echo_json = ('{"error":{"message":"bad key ' + ECHO_TEXT + '","type":"invalid_request_error"}}').encode()
    server.add("/status/", Route(body=echo_json, status=401, content_type="application/json"))
    server.add("/inband/", Route(body=b'data: {"error":{"message":"upstream said ' + ECHO_TEXT.encode() + b'","code":500}}\n\n'))
    listener, silent_port = _silent_listener()
    paths = {
        "http-status": f"{server.url}/status",
        "in-band": f"{server.url}/inband",
        "transport": f"http://127.0.0.1:{_closed_port()}/v1?key={CANARY}",
        "timeout": f"http://127.0.0.1:{silent_port}/v1?api_key={CANARY}",
    }
    try:
        for name, base_url in paths.items():
            reports: list[tuple[LlmFailure, dict[str, Any]]] = []
            result = make_service(base_url, reports, max_retries=0).stream(request(idle_timeout=0.5)).result()
            failure = result.failure
            assert failure is not None, name
            assert_no_leak(*surfaces(failure), repr(result), *(repr(r) for r in reports))
    finally:
        listener.close()
    assert_no_leak(*(r.getMessage() for r in caplog.records), caplog.text)
    assert_no_leak(repr(OpenAIChatAdapter(api_key=CANARY)))


def test_reporter_hears_every_failed_attempt_once_then_success(server: ReplayServer) -> None:
    overloaded = Route(body=b'{"error":{"message":"backend down"}}', status=503, content_type="application/json",
                       headers={"retry-after": "0.05"})
    server.add("/v1/", [overloaded, overloaded, Route(body=OK_BODY)])
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    options = GenerateOptions(provider="local", model="m", messages=(Message.user("PRIVATE PROMPT"),))
    result = make_service(f"{server.url}/v1", reports).stream(options).result()
    assert result.text == "hi"
    assert [f.code for f, _ in reports] == ["SERVER", "SERVER"]
    assert [d["attempt"] for _, d in reports] == [1, 2]
    assert all("PRIVATE" not in repr(d) for _, d in reports)  # no prompt text in diagnostics


def test_retry_after_beyond_the_cap_fails_now(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b'{"error":{"message":"slow down"}}', status=429, headers={"retry-after": "3600"}))
    started = time.monotonic()
    result = make_service(f"{server.url}/v1").stream(request()).result()
    assert time.monotonic() - started < 10  # waiting would take 60 s (the cap) or 3600 s
    assert result.failure is not None and result.failure.code == "RATE_LIMIT"
    assert result.failure.retry_after == 3600
    assert len(server.requests) == 1


def test_no_retry_after_content(server: ReplayServer) -> None:
    cut = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"partial"}}]}\n\n'
    server.add("/v1/", Route(body=cut, chunked=False))
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    result = make_service(f"{server.url}/v1", reports).stream(request()).result()
    assert result.failure is not None and result.failure.code == "STREAM_CLOSED"
    assert result.text == "partial"
    assert len(server.requests) == 1 and len(reports) == 1


def test_total_timeout_even_while_keepalives_flow(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b"", script=[b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n']
                              + [0.05, b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"y"}}]}\n\n'] * 200))
    started = time.monotonic()
    result = make_service(f"{server.url}/v1", max_retries=0).stream(request(timeout=0.6)).result()
    assert time.monotonic() - started < 6  # the keep-alives would run for 10 s
    assert result.failure is not None and result.failure.code == "TIMEOUT"


def test_server_that_accepts_and_never_answers_times_out() -> None:
    listener, port = _silent_listener()
    try:
        started = time.monotonic()
        result = make_service(f"http://127.0.0.1:{port}/v1", max_retries=0).stream(request(idle_timeout=0.5)).result()
        assert time.monotonic() - started < 8  # vs. the 10 s connect / 300 s idle defaults
        assert result.failure is not None and result.failure.code == "TIMEOUT"
    finally:
        listener.close()


def test_cancel_during_retry_backoff_aborts(server: ReplayServer) -> None:
    server.add("/v1/", Route(body=b'{"error":{"message":"busy"}}', status=503, headers={"retry-after": "30"}))
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    result = make_service(f"{server.url}/v1").stream(request(cancel=cancel)).result()
    assert time.monotonic() - started < 10  # the backoff would last 30 s
    assert result.finish.kind == "aborted"


def test_gemini_failure_carries_a_prompt_free_diagnostic_summary(server: ReplayServer) -> None:
    from dshstream import GeminiAdapter

    cut = (b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"par"}]}}],'
           b'"modelVersion":"gemini-2.5-flash"}\r\n\r\n')
    server.add("/g/", Route(body=cut, chunked=False))
    service = LlmService()
    service.register_adapter(["gemini"], GeminiAdapter(api_key=CANARY, base_url=f"{server.url}/g", max_retries=0))
    history = (Message.user("SECRET PROMPT one"), Message.assistant("SECRET ANSWER"), Message.user("SECRET PROMPT two"))
    result = service.stream(GenerateOptions(provider="gemini", model="gemini-2.5-flash", messages=history)).result()
    failure = result.failure
    assert failure is not None and failure.code == "STREAM_CLOSED"
    diagnostics = failure.diagnostics
    assert diagnostics is not None
    assert diagnostics["request_model"] == "gemini-2.5-flash"
    assert diagnostics["last_roles"] == ["user", "model", "user"]
    assert diagnostics["final_turn_parts"] == {"text": 1}
    assert diagnostics["has_tool_history"] is False
    assert diagnostics["chunks_received"] == 2 and diagnostics["elapsed_s"] >= 0
    assert "SECRET" not in repr(diagnostics) and "CANARY" not in repr(diagnostics)
    assert result.text == "par"
