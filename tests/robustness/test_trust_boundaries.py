"""Trust boundaries over loopback HTTP: credentials never leave their host, every time
limit holds from the first connect, every body read is bounded, header-derived fields
never carry a key.

- Redirects: a server A answering 301/302/303/307/308 towards B on another host name
  (``127.0.0.1`` vs ``localhost``), for every adapter, on streams and model lists: the
  result is a ``REDIRECT`` failure and B receives nothing.
- Environment keys go only to the provider's own host (the adapter tests prove the
  own-host half on the wire; here: never to another base_url, unless passed or named).
- A ``~/.netrc`` entry never replaces the key or reaches the provider.
- Before headers: a host that never completes the TCP handshake (a full accept queue), a
  server that accepts and never answers, one that trickles header bytes. The total
  deadline, the idle clock, ``cancel`` and ``close()`` end each within a tick, and no
  attempt starts after the deadline.
- Bounded bodies: an endless error body, an oversized or trickled model list.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dshstream import (
    AnthropicAdapter,
    GeminiAdapter,
    GenerateOptions,
    LlmError,
    Message,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)
from dshstream._adapters.gemini_interactions import GeminiInteractionsAdapter
from dshstream._adapters.http import HttpAdapter
from dshstream._core.assembler import AssembledResponse
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import fake_key, fixture_bytes
from rawserver import CHUNKED_HEADERS, CLOSE_HEADERS, RawServer, chunk

KEY = "sk-trust-boundary-0123456789abcdef"
SLACK = 1.0  # scheduling slack on a loaded 2-core machine (the watchdog ticks every 50 ms)
#: the total and idle timeouts that must end a stream before its headers (3 trickled header
#: lines a window; a phase that escaped the clock would last 30 s)
BEFORE_HEADERS = 0.3

ADAPTERS: dict[str, Callable[[str], HttpAdapter]] = {
    "openai-chat": lambda url: OpenAIChatAdapter(api_key=KEY, base_url=f"{url}/v1", max_retries=0),
    "openai-responses": lambda url: OpenAIResponsesAdapter(api_key=KEY, base_url=f"{url}/v1", max_retries=0),
    "anthropic": lambda url: AnthropicAdapter(api_key=KEY, base_url=url, max_retries=0),
    "gemini": lambda url: GeminiAdapter(api_key=KEY, base_url=url, max_retries=0),
    "gemini-interactions": lambda url: GeminiInteractionsAdapter(api_key=KEY, base_url=url, max_retries=0),
}


def options(**fields: object) -> GenerateOptions:
    return GenerateOptions(provider="p", model="m", messages=(Message.user("a secret prompt"),), **fields)  # type: ignore[arg-type]


def run(adapter: HttpAdapter, **fields: object) -> tuple[AssembledResponse, float]:
    service = LlmService(check_contract=True)
    service.register_adapter(["p"], adapter)
    started = time.monotonic()
    result = service.stream(options(**fields)).result()
    return result, time.monotonic() - started


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    with ReplayServer() as a, ReplayServer() as b:
        yield a, b


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_redirect_is_a_failure_and_the_other_host_hears_nothing(
    servers: tuple[ReplayServer, ReplayServer], name: str, status: int
) -> None:
    a, b = servers
    b.add("/", Route(body=b"data: [DONE]\n\n"))
    target = f"http://localhost:{b.url.rsplit(':', 1)[1]}/steal?key={KEY}"
    a.add("/", Route(body=b"", status=status, content_type="text/plain", headers={"Location": target}))
    result, _ = run(ADAPTERS[name](a.url))
    failure = result.finish.failure
    assert result.finish.kind == "error" and failure is not None
    assert failure.code == "REDIRECT" and failure.category == "api_error" and not failure.retryable
    assert failure.status == status
    assert "base_url" in failure.message
    assert failure.detail is not None and "localhost" in failure.detail and KEY not in failure.detail
    assert len(a.requests) == 1  # not retried
    assert b.requests == []


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_list_models_does_not_follow_redirects(servers: tuple[ReplayServer, ReplayServer], name: str) -> None:
    a, b = servers
    b.add("/", Route(body=b'{"data": [], "models": []}', content_type="application/json"))
    target = f"http://localhost:{b.url.rsplit(':', 1)[1]}/models"
    a.add("/", Route(body=b"", status=307, content_type="text/plain", headers={"Location": target}))
    with pytest.raises(LlmError) as caught:
        ADAPTERS[name](a.url).list_models("p")
    assert caught.value.failure.code == "REDIRECT"
    assert b.requests == []


# --------------------------------------------------------------------------- environment keys


def test_an_environment_key_never_goes_to_another_base_url(
    servers: tuple[ReplayServer, ReplayServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = servers
    a.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    for adapter in (OpenAIChatAdapter(base_url=f"{a.url}/v1"), OpenAIResponsesAdapter(base_url=f"{a.url}/v1")):
        run(adapter)
        assert "authorization" not in a.requests[-1].headers
    # Passed explicitly, or its variable named: the caller chose to send it there.
    run(OpenAIChatAdapter(api_key=KEY, base_url=f"{a.url}/v1"))
    assert a.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    monkeypatch.setenv("MY_GATEWAY_KEY", KEY)
    run(OpenAIResponsesAdapter(base_url=f"{a.url}/v1", key_env="MY_GATEWAY_KEY"))
    assert a.requests[-1].headers["authorization"] == f"Bearer {KEY}"


# --------------------------------------------------------------------------- before headers


class Blackhole:
    """A loopback port whose accept queue is full: a connect hangs in the handshake."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.filler = socket.socket()
        self.filler.connect(("127.0.0.1", self.port))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Blackhole:
        probe = socket.socket()
        probe.settimeout(0.1)  # a loopback handshake the kernel completes takes microseconds
        try:
            probe.connect(("127.0.0.1", self.port))
        except OSError:
            return self  # the handshake hangs, as wanted
        finally:
            probe.close()
        self.__exit__()
        pytest.skip("this kernel completes handshakes beyond the accept queue")

    def __exit__(self, *exc: object) -> None:
        self.filler.close()
        self.listener.close()


def silent(srv: RawServer, conn: socket.socket) -> None:
    """Accept the request and never answer (until the client goes away)."""
    conn.settimeout(30)
    conn.recv(1)


def trickle_headers(srv: RawServer, conn: socket.socket) -> None:
    """Header bytes every 0.1 s, never the blank line that ends them."""
    srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n")
    for i in range(300):
        time.sleep(0.1)
        srv.send(conn, b"X-Slow-%d: y\r\n" % i)


def trickle_body(srv: RawServer, conn: socket.socket) -> None:
    """A JSON body one byte every 0.2 s."""
    srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(150):
        srv.send(conn, chunk(b" "))
        time.sleep(0.2)


def later(delay: float, action: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(delay, action)
    timer.daemon = True
    timer.start()
    return timer


@pytest.mark.parametrize("phase", ["connecting", "no-answer", "trickled-headers"])
def test_total_timeout_holds_before_headers(phase: str) -> None:
    with _phase_server(phase) as url:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{url}/v1", max_retries=0, connect_timeout=30)
        result, elapsed = run(adapter, timeout=BEFORE_HEADERS)
    failure = result.finish.failure
    assert failure is not None and failure.code == "TIMEOUT", failure
    assert BEFORE_HEADERS * 0.9 <= elapsed < BEFORE_HEADERS + SLACK


@pytest.mark.parametrize("phase", ["connecting", "no-answer", "trickled-headers"])
def test_idle_clock_runs_before_headers(phase: str) -> None:
    with _phase_server(phase) as url:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{url}/v1", max_retries=0, connect_timeout=30)
        result, elapsed = run(adapter, idle_timeout=BEFORE_HEADERS)
    failure = result.finish.failure
    assert failure is not None and failure.code == "TIMEOUT", failure
    assert BEFORE_HEADERS * 0.9 <= elapsed < BEFORE_HEADERS + SLACK


@pytest.mark.parametrize("how", ["cancel", "close"])
@pytest.mark.parametrize("phase", ["connecting", "no-answer", "trickled-headers"])
def test_cancel_and_close_hold_before_headers(phase: str, how: str) -> None:
    with _phase_server(phase) as url:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{url}/v1", max_retries=0, connect_timeout=30)
        service = LlmService(check_contract=True)
        service.register_adapter(["p"], adapter)
        cancel = threading.Event()
        stream = service.stream(options(cancel=cancel))
        later(0.3, cancel.set if how == "cancel" else stream.close)
        started = time.monotonic()
        result = stream.result()
        elapsed = time.monotonic() - started
    assert result.finish.kind == "aborted", result.finish
    assert 0.25 <= elapsed < 0.3 + SLACK


def test_no_attempt_starts_after_the_deadline() -> None:
    """Connect attempts that hang, default retries: all of it ends at the deadline."""
    with Blackhole() as hole:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{hole.url}/v1")  # max_retries=2
        result, elapsed = run(adapter, timeout=0.8)
    failure = result.finish.failure
    assert failure is not None and failure.code == "TIMEOUT"
    assert elapsed < 0.8 + SLACK


def test_retries_stop_before_the_deadline(servers: tuple[ReplayServer, ReplayServer]) -> None:
    a, _ = servers
    a.add("/", Route(body=b'{"error": {"message": "busy", "type": "server_error"}}', status=503,
                     content_type="application/json"))
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{a.url}/v1", max_retries=50)
    result, elapsed = run(adapter, timeout=0.8)
    failure = result.finish.failure
    assert failure is not None and failure.status == 503  # the real failure, not a TIMEOUT
    assert elapsed < 0.8 + SLACK
    assert 2 <= len(a.requests) < 10


class _PhaseServer:
    def __init__(self, phase: str) -> None:
        self.phase = phase
        self._context: Blackhole | RawServer
        if phase == "connecting":
            self._context = Blackhole()
        else:
            self._context = RawServer(silent if phase == "no-answer" else trickle_headers)

    def __enter__(self) -> str:
        self._context.__enter__()
        return self._context.url

    def __exit__(self, *exc: object) -> None:
        self._context.__exit__()


def _phase_server(phase: str) -> _PhaseServer:
    return _PhaseServer(phase)


# --------------------------------------------------------------------------- bounded bodies


def test_an_endless_error_body_is_read_bounded() -> None:
    def endless(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                       b"Transfer-Encoding: chunked\r\n\r\n")
        piece = chunk(b"x" * 65536)
        for _ in range(16384):  # 1 GiB if nobody stops reading
            srv.send(conn, piece)

    with RawServer(endless) as raw:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{raw.url}/v1", max_retries=0)
        with pytest.raises(LlmError) as caught:
            adapter.list_models("p")
        result, _ = run(adapter)
    assert caught.value.failure.status == 500
    assert result.finish.failure is not None and result.finish.failure.status == 500
    assert raw.sent < 64 * 1024 * 1024


def test_an_oversized_model_list_is_refused() -> None:
    def huge(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        srv.send(conn, chunk(b'{"data": ['))
        piece = chunk(b'{"id": "m"},' * 5000)
        for _ in range(2000):  # ~120 MB if nobody stops reading
            srv.send(conn, piece)

    with RawServer(huge) as raw:
        with pytest.raises(LlmError) as caught:
            OpenAIChatAdapter(api_key=KEY, base_url=f"{raw.url}/v1").list_models("p")
    assert caught.value.failure.code == "MALFORMED_RESPONSE"
    assert "larger than" in caught.value.failure.message
    assert raw.sent < 64 * 1024 * 1024


def test_a_trickled_model_list_ends_at_its_timeout() -> None:
    with RawServer(trickle_body) as raw:
        adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{raw.url}/v1")
        started = time.monotonic()
        with pytest.raises(LlmError) as caught:
            adapter.list_models("p", timeout=0.5)
        elapsed = time.monotonic() - started
    assert caught.value.failure.code == "TIMEOUT"
    assert elapsed < 0.5 + SLACK


# --------------------------------------------------------------------------- odd answers


def test_a_request_id_that_echoes_the_key_is_dropped(servers: tuple[ReplayServer, ReplayServer]) -> None:
    a, _ = servers
    a.add("/", Route(body=b'{"error": {"message": "no", "type": "invalid_request_error"}}', status=400,
                     content_type="application/json", headers={"x-request-id": KEY}))
    result, _ = run(ADAPTERS["openai-chat"](a.url))
    failure = result.finish.failure
    assert failure is not None
    assert KEY not in repr(failure) and KEY not in str(failure.request_id)


def test_a_2xx_html_page_says_so(servers: tuple[ReplayServer, ReplayServer]) -> None:
    a, _ = servers
    a.add("/", Route(body=b"<!doctype html><html><body>Please log in to the Wi-Fi</body></html>",
                     content_type="text/html; charset=utf-8"))
    result, _ = run(ADAPTERS["openai-chat"](a.url))
    failure = result.finish.failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"
    assert "HTML" in failure.message
    assert len(a.requests) == 1


@pytest.mark.parametrize("framing", ["chunked", "close-delimited"])
def test_early_hints_before_the_answer_are_skipped(framing: str) -> None:
    event = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'

    def behave(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
        if framing == "chunked":
            srv.send(conn, CHUNKED_HEADERS + chunk(event) + b"0\r\n\r\n")
        else:
            srv.send(conn, CLOSE_HEADERS + event)

    with RawServer(behave) as raw:
        result, _ = run(ADAPTERS["openai-chat"](raw.url))
    assert result.text == "hi" and result.finish.kind == "stop", result.finish


# --------------------------------------------------------------------------- client rule 6: ~/.netrc


NETRC_PASSWORD = "netrc-only-password-5521"


@pytest.mark.parametrize("entry", ["default", "machine 127.0.0.1"])
def test_a_netrc_entry_neither_replaces_the_key_nor_reaches_the_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    # requests would send the netrc login as Basic auth to any host the entry matches:
    # over an OpenAI Bearer key (a 401), beside Anthropic's x-api-key (the password leaked).
    netrc = tmp_path / "netrc"
    netrc.write_text(f"{entry} login someone password {NETRC_PASSWORD}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    key = fake_key("sk-", 40)
    chat = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    with ReplayServer() as server:
        server.add("/v1/chat/", Route(body=chat))
        server.add("/v1/messages", Route(body=fixture_bytes("anthropic/text.sse")))
        for adapter in (OpenAIChatAdapter(api_key=key, base_url=f"{server.url}/v1"),
                        AnthropicAdapter(api_key=key, base_url=server.url)):
            service = LlmService()
            service.register_adapter(["p"], adapter)
            result = service.stream(GenerateOptions(provider="p", model="m", messages=(Message.user("x"),),
                                                    max_retries=0)).result()
            assert result.finish.failure is None, result.finish
        chat_request, messages_request = server.requests
    assert chat_request.headers["authorization"] == f"Bearer {key}"
    assert messages_request.headers["x-api-key"] == key and "authorization" not in messages_request.headers
    for sent in (chat_request, messages_request):
        assert not any("Basic" in value or NETRC_PASSWORD in value for value in sent.headers.values())
