"""HttpTransport sends on the caller's thread where every step can be cut (stream rule 1,
pool rule 4): no thread is started per request on the common path, a host name's lookup
runs on a thread the caller can leave, and the limits, a cancel from another thread, a
close and a ``KeyboardInterrupt`` end a request before its headers as they did on the
send worker. What a socket shutdown can't cut (a custom adapter, a pool whose connects are
not hooked: a SOCKS proxy's) is still sent on a worker."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import requests.adapters
import urllib3
import urllib3.connection

from dshstream._core.errors import LlmError
from dshstream._core.http_request import HttpRequest
from dshstream._replay_server import ReplayServer
from dshstream._transport import pool
from dshstream._transport.client import HttpTransport
from dshstream._transport.tls import ConnectionSettings
from dshstream._transport.pool import Aborted, inline_safe, new_session, resolve
from dshstream._transport.stream import HttpStream
from rawserver import RawServer

BODY = b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads started meanwhile."""
    names: list[str] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        names.append(self.name)
        original(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    yield names


def read_all(transport: HttpTransport, url: str, **limits: Any) -> bytes:
    """The whole body; the connection handed back for reuse."""
    with transport.open(HttpRequest(url=url, headers={}, body={}), provider="t", **limits) as stream:
        body = b"".join(stream)
        stream.release()
        return body


def silent(srv: RawServer, conn: socket.socket) -> None:
    """Read the request, never answer, until the client goes away."""
    conn.settimeout(10)
    try:
        while conn.recv(1024):
            pass
    except OSError:
        pass


# --------------------------------------------------------------------------- no thread per request


def test_no_thread_is_started_per_request(server: ReplayServer, started: list[str]) -> None:
    server.add("/v1/", BODY)
    transport = HttpTransport()
    read_all(transport, f"{server.url}/v1/x")  # the watchdog may start with the first stream
    started.clear()
    for _ in range(5):
        assert read_all(transport, f"{server.url}/v1/x") == BODY
    assert [name for name in started if name.startswith("dshstream")] == []


def test_a_host_name_is_resolved_on_a_thread_once_per_new_connection(server: ReplayServer, started: list[str]) -> None:
    server.add("/v1/", BODY)
    transport = HttpTransport()
    url = server.url.replace("127.0.0.1", "localhost") + "/v1/x"
    for _ in range(3):  # kept alive: one connection, one lookup
        assert read_all(transport, url) == BODY
    assert [name for name in started if name.startswith("dshstream") and name != "dshstream-watchdog"] == [
        "dshstream-resolve"
    ]


# --------------------------------------------------------------------------- which requests


def test_the_transport_s_and_a_plain_session_are_inline_safe() -> None:
    assert inline_safe(new_session(), "https://api.example.test/v1")
    plain = requests.Session()
    pool.watch_session(plain)
    assert inline_safe(plain, "http://127.0.0.1:9/v1")


def test_a_custom_adapter_sends_on_a_worker(server: ReplayServer, started: list[str]) -> None:
    class Custom(requests.adapters.HTTPAdapter):
        pass

    session = requests.Session()
    session.mount("http://", Custom())
    assert not inline_safe(session, f"{server.url}/v1")
    server.add("/v1/", BODY)
    assert read_all(HttpTransport(session=session), f"{server.url}/v1/x") == BODY
    assert "dshstream-send" in started


def test_a_pool_whose_connects_are_not_hooked_refuses_inline_and_a_worker_sends(
    server: ReplayServer, started: list[str]
) -> None:
    # what a SOCKS proxy's pool is: its own connection class, so no connect hook
    class OwnConnection(urllib3.connection.HTTPConnection):
        pass

    class OwnPool(urllib3.HTTPConnectionPool):
        ConnectionCls = OwnConnection

    session = requests.Session()
    adapter: Any = session.get_adapter("http://x")
    adapter.poolmanager.pool_classes_by_scheme = {"http": OwnPool, "https": urllib3.HTTPSConnectionPool}
    transport = HttpTransport(session=session)
    assert inline_safe(session, f"{server.url}/v1")  # decided at checkout, before any connect
    server.add("/v1/", BODY)
    for _ in range(3):
        assert read_all(transport, f"{server.url}/v1/x") == BODY
    assert started.count("dshstream-send") == 3
    assert len(server.requests) == 3  # each sent once: the refused inline send wrote nothing


def test_an_http_proxy_is_sent_inline(monkeypatch: pytest.MonkeyPatch, started: list[str]) -> None:
    """An HTTP proxy's pools are urllib3's own, watched: connects and writes hooked."""
    seen: list[bytes] = []

    def proxy(srv: RawServer, conn: socket.socket) -> None:
        seen.append(b"request")  # before the answer: the client can't finish first
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + BODY)
        conn.close()

    with RawServer(proxy, max_connections=1) as raw:
        transport = HttpTransport(connection=ConnectionSettings(proxies={"http": raw.url}))
        assert read_all(transport, "http://upstream.example.test/v1/x") == BODY
    assert seen == [b"request"]
    assert "dshstream-send" not in started


# --------------------------------------------------------------------------- cut before headers, inline


@pytest.mark.parametrize("how", ["deadline", "idle", "cancel", "close"])
def test_an_inline_request_waiting_for_headers_ends_within_a_tick(
    how: str, started: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[HttpStream] = []
    original_init = HttpStream.__init__

    def init(self: HttpStream, *args: Any) -> None:
        original_init(self, *args)
        made.append(self)  # the stream exists before its request is sent

    monkeypatch.setattr(HttpStream, "__init__", init)
    cancel = threading.Event()
    choices: dict[str, dict[str, Any]] = {
        "deadline": {"deadline": time.monotonic() + 0.3},
        "idle": {"idle_timeout": 0.3},
        "cancel": {"cancel": cancel},
        "close": {},
    }
    limits = choices[how]

    def close_all() -> None:
        for stream in made:
            stream.close()

    later = {"cancel": cancel.set, "close": close_all}.get(how)
    with RawServer(silent, max_connections=1) as raw:
        transport = HttpTransport()
        if later is not None:  # from another thread, while the caller's own send waits
            threading.Timer(0.3, later).start()
        begun = time.monotonic()
        with pytest.raises(LlmError) as caught:
            read_all(transport, f"{raw.url}/v1/x", **limits)
        elapsed = time.monotonic() - begun
    assert caught.value.failure.code == ("ABORTED" if later is not None else "TIMEOUT")
    assert elapsed < 0.3 + 1.0, elapsed  # one tick, with room for a loaded machine
    assert "dshstream-send" not in started and made and made[0].inline


def test_a_keyboard_interrupt_while_sending_inline_propagates_and_closes(server: ReplayServer) -> None:
    server.add("/v1/", BODY)
    session = new_session()

    def interrupt(response: Any, *args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # what a Ctrl-C during the wait for headers raises

    session.hooks["response"].append(interrupt)
    transport = HttpTransport(session=session)
    with pytest.raises(KeyboardInterrupt):
        read_all(transport, f"{server.url}/v1/x")
    session.hooks["response"].clear()
    assert read_all(transport, f"{server.url}/v1/x") == BODY  # the session still works


# --------------------------------------------------------------------------- the lookup


class _Stream:
    def __init__(self, inline: bool) -> None:
        self.inline = inline
        self.stop = threading.Event()

    def attach(self, *, conn: Any = None, sock: socket.socket | None = None) -> bool:
        return True

    def stopped(self) -> bool:
        return self.stop.is_set()


def test_a_lookup_the_stream_gives_up_on_is_left_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def hanging(*args: Any) -> list[Any]:
        release.wait(10)
        return []

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    stream = _Stream(inline=True)
    threading.Timer(0.2, stream.stop.set).start()
    begun = time.monotonic()
    with pytest.raises(Aborted):
        resolve("api.example.test", 443, socket.AF_UNSPEC, stream)
    assert time.monotonic() - begun < 0.2 + 0.5
    release.set()


def test_a_lookup_s_answer_and_failure_are_the_lookup_s(monkeypatch: pytest.MonkeyPatch, started: list[str]) -> None:
    stream = _Stream(inline=True)
    assert resolve("127.0.0.1", 80, socket.AF_INET, stream)[0][4] == ("127.0.0.1", 80)
    assert started == []  # an IP literal: no lookup thread

    def failing(*args: Any) -> list[Any]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", failing)
    with pytest.raises(socket.gaierror):
        resolve("nowhere.example.test", 443, socket.AF_UNSPEC, stream)
    assert started == ["dshstream-resolve"]
    with pytest.raises(socket.gaierror):  # a worker's own send resolves directly
        resolve("nowhere.example.test", 443, socket.AF_UNSPEC, _Stream(inline=False))
    assert started == ["dshstream-resolve"]
