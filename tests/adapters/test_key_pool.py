"""Key pools over loopback HTTP (``api_key=KeyPool([...])``): a 429 cools the key that got it
— for its ``Retry-After``, ``retry-after-ms`` or rate-limit reset headers — and the attempt
moves to the next key at once; a 401 parks the key, reported once, while the others carry
on; when every key is cooling a stream waits for the earliest within its limits, or fails
with the real failure saying so, and a cancel ends that wait at once; 32 threads share one
pool across two adapters without a cooling key being used, a request lost or a failure
reported twice; no key reaches a repr, a log, a message or the pool's state.

The server answers by the key each request carries (``KeyServer``), so what a key was used
for is read where it arrived."""

from __future__ import annotations

import importlib.util

import json
import logging
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from dshstream._replay_server import LoopbackHandler, shut_down_now
from dshstream import (
    AnthropicAdapter,
    ConfigurationError,
    GeminiAdapter,
    GenerateOptions,
    LlmError,
    LlmFailure,
    LlmService,
    Message,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    RateLimitError,
    TextDelta,
)
from dshstream.adapters import CustomAdapter, HttpAdapter, KeyPool, KeyState
from dshstream.errors import ConfigurationTypeError, recovery_tips
from dshstream._adapters.gemini_interactions import GeminiInteractionsAdapter
from dshstream._adapters import key_pool as key_pool_module
from dshstream._adapters.credentials import CredentialSource
from dshstream._core.classify import classify_http_error
from dshstream._core.headers import parse_rate_limit_reset, parse_retry_after
from dshstream._core.redact import known_secrets, redact
from helpers import decode_all, fixture_bytes

ROOT = Path(__file__).resolve().parents[2]
OK_CHAT = fixture_bytes("openai/text_include_usage.sse")
OK_BODIES = {
    "/v1/messages": fixture_bytes("anthropic/text.sse"),
    "/v1/responses": fixture_bytes("openai-responses/text.sse"),
    "/v1beta/models/": fixture_bytes("gemini/text.sse"),
    "/v1beta/interactions": fixture_bytes("gemini-interactions/text_thought_signature.sse"),
    "/v1/publishers/google/": fixture_bytes("vertex/gemini25_flash_text_b.sse"),
}
CHAT_TEXT = "".join(c.text for c in decode_all(OK_CHAT, "openai-chat") if isinstance(c, TextDelta))


def key(name: str) -> str:
    """A plain loopback key, long enough to be registered for redaction."""
    return f"pool-{name}-0123456789abcdef"


K1, K2, K3, K4, K5, K6 = (key(f"k{n}") for n in range(1, 7))


# --------------------------------------------------------------------------- a server that answers by key


class Answer(NamedTuple):
    status: int = 200
    headers: dict[str, str] = {}
    body: bytes = b""


class Seen(NamedTuple):
    at: float  # time.monotonic() on arrival
    key: str
    path: str
    status: int


RATE_LIMITED = b'{"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}'
REVOKED = b'{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}'


def throttled(**headers: str) -> Answer:
    return Answer(429, {"content-type": "application/json", **headers}, RATE_LIMITED)


def revoked(status: int = 401) -> Answer:
    return Answer(status, {"content-type": "application/json"}, REVOKED)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 32 threads connect at once


class KeyServer:
    """A loopback HTTP server whose answer depends on the key a request carries:
    ``behave(key, n)`` (``n``: how many requests that key made before, 0 first) gives the
    answer, ``None`` the recorded stream for the path. Every request is recorded."""

    def __init__(self, behave: Callable[[str, int], Answer | None] = lambda key, n: None) -> None:
        self.behave = behave
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        owner = self

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                self._answer()

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                self._answer()

            def _answer(self) -> None:
                sent = (self.headers.get("x-api-key") or self.headers.get("x-goog-api-key")
                        or self.headers.get("api-key") or self.headers.get("authorization", "").removeprefix("Bearer "))
                with owner.lock:
                    count = sum(1 for s in owner.seen if s.key == sent)
                    answer = owner.behave(sent, count) or owner.ok(self.path)
                    owner.seen.append(Seen(time.monotonic(), sent, self.path, answer.status))
                self.send_response(answer.status)
                headers = {"content-type": "text/event-stream", **answer.headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @staticmethod
    def ok(path: str) -> Answer:
        if path.startswith("/v1/models"):
            return Answer(200, {"content-type": "application/json"}, b'{"data": [{"id": "m-1"}]}')
        for prefix, body in OK_BODIES.items():
            if path.startswith(prefix):
                return Answer(200, {}, body)
        return Answer(200, {}, OK_CHAT)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def keys(self) -> list[str]:
        with self.lock:
            return [s.key for s in self.seen]

    def __enter__(self) -> KeyServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        shut_down_now(self._server)
        self._server.server_close()


@pytest.fixture
def keyserver() -> Iterator[KeyServer]:
    with KeyServer() as server:
        yield server


def chat(server: KeyServer, pool: KeyPool, **settings: Any) -> OpenAIChatAdapter:
    return OpenAIChatAdapter(api_key=pool, base_url=f"{server.url}/v1", **settings)


def ask(adapter: HttpAdapter, **fields: Any) -> Any:
    service = LlmService(check_contract=True)
    service.register_adapter(["p"], adapter)
    return service.stream(GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),), **fields)).result()


def by_label(pool: KeyPool) -> dict[str, KeyState]:
    return {state.label: state for state in pool.state()}


# --------------------------------------------------------------------------- the pool itself


def test_a_pool_is_checked_when_built_naming_the_key_never_showing_it() -> None:
    with pytest.raises(ConfigurationError, match="at least one key"):
        KeyPool([])
    with pytest.raises(ConfigurationTypeError):
        KeyPool(K1)  # one key is not a pool (a str is a Sequence)
    with pytest.raises(ConfigurationError, match="key #3 repeats key #1"):
        KeyPool([K1, K2, K1])
    with pytest.raises(ConfigurationError) as bad:
        KeyPool([K1, "pool-bad\nkey-0123456789"])
    assert "key #2" in str(bad.value) and "pool-bad" not in str(bad.value)
    with pytest.raises(ConfigurationError, match="key #2 is empty"):
        KeyPool([K1, ""])
    with pytest.raises(ConfigurationError, match="never a key"):
        KeyPool({f"team {K2}": K1, "b": K2})  # a label that carries a key
    with pytest.raises(ConfigurationError, match="never a key"):
        KeyPool({"bad\nlabel": K1})
    with pytest.raises(ConfigurationError, match="KeyPool.cooldown"):
        KeyPool([K1], cooldown=0)
    with pytest.raises(ConfigurationTypeError, match="KeyPool.cooldown"):
        KeyPool([K1], cooldown="60")  # type: ignore[arg-type]


def test_keys_are_registered_and_labelled_and_the_pool_shows_no_secret() -> None:
    pool = KeyPool({"team-a": K1, "team-b": K2})
    assert {K1, K2} <= known_secrets()
    assert pool.labels == ("team-a", "team-b") and len(pool) == 2
    lease = pool.acquire()
    texts = [repr(pool), repr(pool.state()), repr(lease), repr(CredentialSource(pool)), str(pool.state())]
    assert all(K1 not in text and K2 not in text for text in texts), texts
    assert repr(pool) == "KeyPool(2 keys: team-a, team-b)"
    assert [s.label for s in KeyPool([K1, K2, K3]).state()] == ["key #1", "key #2", "key #3"]
    assert CredentialSource(pool).describe() == "pool of 2 keys"


def test_picks_go_round_robin_and_a_pool_is_a_key_callable() -> None:
    pool = KeyPool([K1, K2, K3])
    assert [pool.acquire().key for _ in range(4)] == [K1, K2, K3, K1]
    assert pool() == K2  # accepted wherever api_key= takes a callable
    assert [s.uses for s in pool.state()] == [2, 2, 1]


def test_settle_cools_parks_or_only_counts_by_code() -> None:
    pool = KeyPool([K1, K2, K3], cooldown=5)
    a, b, c = (pool.acquire() for _ in range(3))
    rate = classify_http_error(429, RATE_LIMITED, {"retry-after": "7"}, provider="p")
    assert pool.settle(a, rate) is True
    assert pool.settle(b, classify_http_error(429, RATE_LIMITED, provider="p")) is True  # no wait said: cooldown
    assert pool.settle(c, classify_http_error(500, b"oops", provider="p")) is False  # the provider's, not the key's
    states = pool.state()
    assert states[0].cooling_until is not None and 6 < states[0].cooling_until - time.time() <= 7.1
    assert states[0].last_code == "RATE_LIMIT" and not states[0].available
    assert states[1].cooling_until is not None and 4 < states[1].cooling_until - time.time() <= 5.1
    assert states[2].failures == 1 and states[2].last_code == "SERVER" and states[2].available
    pool.reinstate()
    assert all(s.available for s in pool.state())
    with pytest.raises(ConfigurationError):
        pool.reinstate("nobody")


@pytest.mark.parametrize("status", [401, 403])
def test_auth_quota_and_credit_limit_park(status: int) -> None:
    pool = KeyPool([K1, K2])
    lease = pool.acquire()
    assert pool.settle(lease, classify_http_error(status, REVOKED, provider="p")) is True
    assert pool.state()[0].parked
    for code in ("QUOTA", "CREDIT_LIMIT"):
        other = KeyPool([K1])
        failure = LlmFailure(code=code, message="p: x", category="api_error", retryable=False)
        assert other.settle(other.acquire(), failure) and other.state()[0].parked


class FakeClock:
    """Stands in for the ``time`` module of ``dshstream._adapters.key_pool`` (its
    ``monotonic`` and ``time``): the pool's time moves only when a test says so."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.epoch = time.time()

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.epoch + (self.now - 1000.0)

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_a_cooled_key_is_never_picked_before_its_time_and_nothing_usable_is_the_real_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(key_pool_module, "time", clock)
    pool = KeyPool([K1, K2])
    cooled = clock.monotonic()
    pool.settle(pool.acquire(), classify_http_error(429, RATE_LIMITED, {"retry-after-ms": "1500"}, provider="p"))
    assert [pool.acquire().key for _ in range(3)] == [K2, K2, K2]
    pool.settle(pool.acquire(), classify_http_error(429, RATE_LIMITED, {"retry-after": "30"}, provider="q"))
    with pytest.raises(RateLimitError) as busy:
        pool.acquire("p")  # the pool never waits: the attempt loop does
    failure = busy.value.failure
    assert failure.message.startswith("p: rate limited (RATE_LIMIT, HTTP 429); all 2 keys of the pool are cooling")
    assert failure.provider == "p" and failure.status == 429 and failure.diagnostics is None
    assert failure.retry_after is not None and 0.5 < failure.retry_after <= 1.5  # K1 is the first free
    clock.advance(failure.retry_after - 0.01)
    with pytest.raises(RateLimitError):
        pool.acquire("p")  # 10 ms before its time: still cooling
    clock.advance(0.03)
    assert pool.acquire("p").key == K1
    assert clock.monotonic() - cooled >= 1.45  # not before its time


# --------------------------------------------------------------------------- rate-limit headers


def test_reset_headers_say_when_the_limit_that_was_hit_resets() -> None:
    openai = {
        "x-ratelimit-reset-requests": "1s", "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "1500",
    }
    assert parse_rate_limit_reset(openai) == pytest.approx(1.0)  # the requests limit was hit
    tokens = {**openai, "x-ratelimit-remaining-requests": "3", "x-ratelimit-remaining-tokens": "0"}
    assert parse_rate_limit_reset(tokens) == pytest.approx(360.0)
    unknown = {"x-ratelimit-reset-requests": "20ms", "x-ratelimit-reset-tokens": "1h2m3.5s"}
    assert parse_rate_limit_reset(unknown) == pytest.approx(0.02)  # nothing says which: the earliest
    now = 1_750_000_000.0
    at = datetime.fromtimestamp(now + 12, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    anthropic = {"anthropic-ratelimit-requests-reset": at, "anthropic-ratelimit-requests-remaining": "0"}
    assert parse_rate_limit_reset(anthropic, now) == pytest.approx(12.0)
    offset = datetime.fromtimestamp(now + 3.25, tz=timezone.utc).isoformat()
    assert parse_rate_limit_reset({"anthropic-ratelimit-tokens-reset": offset}, now) == pytest.approx(3.25)
    for junk in ("", "soon", "-1s", "1x", "0s", "1s2", "2020-01-01T00:00:00Z"):
        assert parse_rate_limit_reset({"x-ratelimit-reset-requests": junk, "anthropic-ratelimit-requests-reset": junk}, now) is None
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == pytest.approx(0.25)


def test_a_429_waits_for_its_reset_headers_only_without_retry_after() -> None:
    reset = {"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-remaining-requests": "0"}
    assert classify_http_error(429, RATE_LIMITED, reset).retry_after == pytest.approx(1.5)
    assert classify_http_error(429, RATE_LIMITED, {**reset, "retry-after": "4"}).retry_after == 4.0
    assert classify_http_error(500, b"oops", reset).retry_after is None  # only a rate limit


# --------------------------------------------------------------------------- streams: rotate, park, wait


#: the four ways a 429 says when to come back, each 1.5 s
COOLING_HEADERS: dict[str, dict[str, str]] = {
    "retry-after": {"retry-after": "1.5"},
    "retry-after-ms": {"retry-after-ms": "1500"},
    "openai-reset": {"x-ratelimit-reset-requests": "1.5s", "x-ratelimit-remaining-requests": "0",
                     "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-remaining-tokens": "900"},
    "anthropic-reset": {"anthropic-ratelimit-requests-reset": "SOON", "anthropic-ratelimit-requests-remaining": "0"},
}


def _moves_at_once_and_waits_its_time(headers: dict[str, str], rest: float = 1.5) -> None:
    if "SOON" in headers.values():  # an RFC 3339 time, 1.5 s from now
        soon = datetime.fromtimestamp(time.time() + rest, tz=timezone.utc).isoformat(timespec="milliseconds")
        headers = {name: soon if value == "SOON" else value for name, value in headers.items()}
    with KeyServer() as keyserver:
        keyserver.behave = lambda sent, n: throttled(**headers) if sent == K1 and n == 0 else None
        pool = KeyPool([K1, K2])
        adapter = chat(keyserver, pool, max_retries=0)  # no retry budget: the move is not a retry
        started = time.monotonic()
        result = ask(adapter)
        assert result.finish.kind == "stop" and result.text == CHAT_TEXT, result.failure
        assert keyserver.keys() == [K1, K2]
        assert time.monotonic() - started < 1.0  # at once, not after the Retry-After
        cooling = by_label(pool)["key #1"].cooling_until
        assert cooling is not None and 0.5 < cooling - time.time() <= rest + 0.1
        while time.time() < cooling - 0.3:  # while key #1 cools, only key #2 is used
            assert ask(adapter).finish.kind == "stop"
        assert set(keyserver.keys()[2:]) == {K2}
        time.sleep(max(0.0, cooling - time.time()) + 0.05)
        for _ in range(2):
            assert ask(adapter).finish.kind == "stop"
        assert K1 in keyserver.keys()[-2:]  # back in the rotation once its time is up
        for seen in keyserver.seen[1:]:  # never used while cooling
            assert not (seen.key == K1 and keyserver.seen[0].at < seen.at < keyserver.seen[0].at + rest - 0.3)


def test_a_429_moves_to_the_next_key_at_once_and_the_cooled_key_waits_its_time() -> None:
    """Each way of saying when to come back (``COOLING_HEADERS``), each on its own server
    and pool: the 1.5 s waits run side by side on threads, not one after the other."""
    failures: dict[str, BaseException] = {}

    def run(name: str) -> None:
        try:
            _moves_at_once_and_waits_its_time(COOLING_HEADERS[name])
        except BaseException as exc:  # noqa: BLE001 - reported below, by case
            failures[name] = exc

    threads = [threading.Thread(target=run, args=(name,)) for name in COOLING_HEADERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    for name, exc in failures.items():
        raise AssertionError(f"{name}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("status", [401, 403])
def test_a_rejected_key_is_parked_reported_once_and_the_others_carry_on(
    keyserver: KeyServer, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    caplog.set_level(logging.INFO, logger="dshstream")
    keyserver.behave = lambda sent, n: revoked(status) if sent == K2 else None
    pool = KeyPool([K1, K2, K3])
    adapter = chat(keyserver, pool, max_retries=0)
    for _ in range(6):
        result = ask(adapter)
        assert result.finish.kind == "stop", result.failure
    assert keyserver.keys().count(K2) == 1 and len(keyserver.keys()) == 7
    parked = [r.getMessage() for r in caplog.records if "parked" in r.getMessage()]
    assert parked == [f"p: key #2 of the key pool parked after AUTH, HTTP {status}; 2 of 3 keys left"]
    assert [r.levelname for r in caplog.records if "parked" in r.getMessage()] == ["WARNING"]
    state = by_label(pool)["key #2"]
    assert state.parked and state.last_code == "AUTH" and state.failures == 1 and state.uses == 1


def test_every_key_parked_fails_with_the_real_failure_and_sends_nothing_more(keyserver: KeyServer) -> None:
    keyserver.behave = lambda sent, n: revoked(401 if sent == K1 else 403)
    pool = KeyPool([K1, K2])
    adapter = chat(keyserver, pool, max_retries=3)
    failure = ask(adapter).failure
    assert failure is not None and failure.code == "AUTH" and failure.status == 403
    assert "all 2 keys of the pool are parked" in failure.message and failure.retry_after is None
    assert keyserver.keys() == [K1, K2]
    again = ask(adapter).failure
    assert again is not None and again.code == "AUTH" and "all 2 keys" in again.message
    assert keyserver.keys() == [K1, K2]  # nothing sent with a parked key
    assert "KeyPool" in " ".join(recovery_tips(again, "server"))


def test_when_every_key_cools_the_stream_waits_for_the_earliest(keyserver: KeyServer) -> None:
    keyserver.behave = lambda sent, n: (
        throttled(**{"retry-after": "20"}) if sent == K1 else throttled(**{"retry-after": "0.8"}) if n == 0 else None
    )
    pool = KeyPool([K1, K2])
    started = time.monotonic()
    result = ask(chat(keyserver, pool, max_retries=1), timeout=10)  # the wait is the one retry
    elapsed = time.monotonic() - started
    assert result.finish.kind == "stop", result.failure
    assert keyserver.keys() == [K1, K2, K2]
    assert 0.6 < elapsed < 5.0
    gap = keyserver.seen[2].at - keyserver.seen[1].at
    assert gap >= 0.75  # not before key #2's time


def test_when_the_deadline_comes_first_the_stream_fails_with_the_real_failure(keyserver: KeyServer) -> None:
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "5" if sent == K1 else "4"})
    pool = KeyPool([K1, K2])
    started = time.monotonic()
    result = ask(chat(keyserver, pool), timeout=1.5)
    assert time.monotonic() - started < 1.4  # no hopeless wait
    failure = result.failure
    assert failure is not None and failure.code == "RATE_LIMIT" and failure.status == 429
    assert "all 2 keys of the pool are cooling or parked; the first is free at " in failure.message
    assert " UTC, in 4." in failure.message or " UTC, in 3." in failure.message
    assert failure.retry_after is not None and 3.0 < failure.retry_after <= 4.0
    assert failure.detail and "Rate limit reached" in failure.detail  # the provider's own words
    assert keyserver.keys() == [K1, K2]
    with pytest.raises(RateLimitError):
        result.raise_for_failure()


@pytest.mark.parametrize("how", ["cancel", "close"])
def test_a_cancel_during_the_wait_for_a_key_ends_it_at_once(keyserver: KeyServer, how: str) -> None:
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "20"})
    pool = KeyPool([K1, K2])
    service = LlmService()
    service.register_adapter(["p"], chat(keyserver, pool))
    for sent in (K1, K2):  # both keys cool for 20 s
        lease = pool.acquire()
        assert lease.key == sent
        pool.settle(lease, classify_http_error(429, RATE_LIMITED, {"retry-after": "20"}, provider="p"))
    cancel = threading.Event()
    stream = service.stream(GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),),
                                            timeout=60, cancel=cancel))
    stop = cancel.set if how == "cancel" else stream.close
    timer = threading.Timer(0.3, stop)
    started = time.monotonic()
    timer.start()
    result = stream.result()
    elapsed = time.monotonic() - started
    timer.join()
    assert result.finish.kind == "aborted" and result.failure is not None and result.failure.code == "ABORTED"
    assert 0.25 < elapsed < 1.0
    assert keyserver.keys() == []  # the wait sent nothing


def test_without_retries_a_stream_never_waits_for_a_key(keyserver: KeyServer) -> None:
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "0.5"})
    started = time.monotonic()
    failure = ask(chat(keyserver, KeyPool([K1, K2]), max_retries=0), timeout=10).failure
    assert failure is not None and failure.code == "RATE_LIMIT" and "all 2 keys" in failure.message
    assert time.monotonic() - started < 0.45 and keyserver.keys() == [K1, K2]


def test_a_move_to_another_key_is_no_retry(keyserver: KeyServer) -> None:
    busy = Answer(503, {"content-type": "application/json", "retry-after": "0.1"}, b'{"error": {"message": "busy"}}')
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "30"}) if sent == K1 else busy if sent == K2 else None
    result = ask(chat(keyserver, KeyPool([K1, K2, K3]), max_retries=1))
    assert result.finish.kind == "stop", result.failure  # the one retry is left for the 503
    assert keyserver.keys() == [K1, K2, K3]


def test_list_models_moves_past_a_rejected_key(keyserver: KeyServer) -> None:
    keyserver.behave = lambda sent, n: revoked() if sent == K1 else None
    pool = KeyPool([K1, K2])
    assert [m.id for m in chat(keyserver, pool).list_models("p")] == ["m-1"]
    assert keyserver.keys() == [K1, K2] and pool.state()[0].parked


# --------------------------------------------------------------------------- every adapter


ADAPTERS: dict[str, Callable[[str, KeyPool], HttpAdapter]] = {
    "openai-chat": lambda url, pool: OpenAIChatAdapter(api_key=pool, base_url=f"{url}/v1"),
    "custom": lambda url, pool: CustomAdapter(api_key=pool, base_url=f"{url}/v1"),
    "openai-responses": lambda url, pool: OpenAIResponsesAdapter(api_key=pool, base_url=f"{url}/v1"),
    "anthropic": lambda url, pool: AnthropicAdapter(api_key=pool, base_url=url),
    "gemini": lambda url, pool: GeminiAdapter(api_key=pool, base_url=url),
    "gemini-interactions": lambda url, pool: GeminiInteractionsAdapter(api_key=pool, base_url=url),
}


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_adapter_takes_a_pool_and_moves_past_a_throttled_key(keyserver: KeyServer, name: str) -> None:
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "30"}) if sent == K1 else revoked() if sent == K2 else None
    pool = KeyPool([K1, K2, K3])
    adapter = ADAPTERS[name](keyserver.url, pool)
    assert K1 not in repr(adapter)
    result = ask(adapter, max_retries=0)
    assert result.finish.kind == "stop", result.failure
    assert keyserver.keys() == [K1, K2, K3]
    states = by_label(pool)
    assert states["key #1"].cooling_until is not None and states["key #2"].parked and states["key #3"].available


def test_vertex_express_mode_takes_a_pool_of_its_api_keys(keyserver: KeyServer) -> None:
    from dshstream.adapters import VertexGeminiAdapter

    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "30"}) if sent == K1 else None
    pool = KeyPool([K1, K2])
    adapter = VertexGeminiAdapter(api_key=pool, auth="api-key", base_url=keyserver.url)  # keys, not tokens
    result = ask(adapter, max_retries=0)
    assert result.finish.kind == "stop", result.failure
    assert keyserver.keys() == [K1, K2] and all("publishers/google" in s.path for s in keyserver.seen)


# --------------------------------------------------------------------------- 32 threads, two adapters


def test_32_threads_share_one_pool_across_two_adapters(
    keyserver: KeyServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="dshstream")
    hot, bad = K1, K2  # K1 is rate limited for a minute, K2 revoked; K3-K6 answer
    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "60"}) if sent == hot else revoked() if sent == bad else None
    pool = KeyPool([K1, K2, K3, K4, K5, K6])
    reports: list[LlmFailure] = []
    lock = threading.Lock()

    def reporter(failure: LlmFailure, record: dict[str, Any]) -> None:
        with lock:
            reports.append(failure)

    service = LlmService()
    service.register_adapter(["chat"], OpenAIChatAdapter(api_key=pool, base_url=f"{keyserver.url}/v1",
                                                         failure_reporter=reporter, max_retries=0))
    service.register_adapter(["claude"], AnthropicAdapter(api_key=pool, base_url=keyserver.url,
                                                          failure_reporter=reporter, max_retries=0))
    outcomes: list[tuple[str, str, str]] = []
    errors: list[BaseException] = []

    def worker(index: int, rounds: int) -> None:
        try:
            for turn in range(rounds):
                provider = "chat" if (index + turn) % 2 else "claude"
                result = service.stream(GenerateOptions(provider=provider, model="m", timeout=60,
                                                        messages=(Message.user("hi"),))).result()
                with lock:
                    outcomes.append((provider, result.finish.kind, result.text))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    def run(rounds: int) -> None:
        threads = [threading.Thread(target=worker, args=(i, rounds)) for i in range(32)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert errors == [] and not any(t.is_alive() for t in threads)

    run(3)
    assert len(outcomes) == 96 and all(kind == "stop" for _, kind, _ in outcomes), outcomes[:3]
    assert all(text for _, _, text in outcomes)
    seen = list(keyserver.seen)
    ok = [s for s in seen if s.status == 200]
    assert len(ok) == 96  # no lost request, none sent twice after its answer began
    failed = [s for s in seen if s.status != 200]
    assert len(reports) == len(failed)  # each failed attempt reported once
    assert {s.key for s in failed} <= {hot, bad}
    # a key is used again only by an attempt picked before its first failure was settled:
    # at most one per thread, never after
    assert sum(1 for s in seen if s.key == hot) <= 32 and sum(1 for s in seen if s.key == bad) <= 32
    parked = [r for r in caplog.records if "parked" in r.getMessage()]
    assert [r.getMessage() for r in parked] == ["claude: key #2 of the key pool parked after AUTH, HTTP 401; 5 of 6 keys left"] \
        or [r.getMessage() for r in parked] == ["chat: key #2 of the key pool parked after AUTH, HTTP 401; 5 of 6 keys left"]
    states = pool.state()
    assert sum(s.uses for s in states) == len(seen)  # every pick was sent, every request picked
    assert states[0].cooling_until is not None and states[1].parked
    assert all(s.available for s in states[2:])
    before = len(seen)
    run(2)  # with the hot key cooling and the bad one parked: neither is used at all
    later = keyserver.seen[before:]
    assert len(later) == 64 and {s.key for s in later} <= {K3, K4, K5, K6} and all(s.status == 200 for s in later)
    counts = [sum(1 for s in keyserver.seen if s.key == k) for k in (K3, K4, K5, K6)]
    assert min(counts) > 0  # the load is spread


# --------------------------------------------------------------------------- secrets


def test_no_key_in_any_repr_log_message_or_state(keyserver: KeyServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="dshstream")
    echo = b'{"error": {"message": "key %s is rate limited"}}'

    def behave(sent: str, n: int) -> Answer:  # the server echoes the key it got, in body and headers
        if sent == K1:
            return Answer(429, {"content-type": "application/json", "retry-after": "30", "x-request-id": sent},
                          echo % sent.encode())
        return Answer(401, {"content-type": "application/json", "x-request-id": sent}, echo % sent.encode())

    keyserver.behave = behave
    pool = KeyPool([K1, K2])
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    adapter = chat(keyserver, pool, failure_reporter=lambda f, r: reports.append((f, r)))
    result = ask(adapter, timeout=5)
    failure = result.failure
    assert failure is not None and len(reports) >= 2
    error = LlmError(failure)
    texts = [
        failure.message, failure.detail or "", repr(failure), str(error), repr(error),
        "".join(traceback.format_exception(error)), repr(result), repr(adapter), repr(pool),
        repr(pool.state()), json.dumps([[repr(f), r] for f, r in reports], default=repr), caplog.text,
        *(r.getMessage() for r in caplog.records),
    ]
    for text in texts:
        assert K1 not in text and K2 not in text, text[:300]
    assert K1 not in redact(f"x {K1}", known_secrets()) and K2 not in redact(f"y {K2}", known_secrets())


# --------------------------------------------------------------------------- LiteLLM, the example


def test_litellm_takes_a_pool_and_moves_past_a_throttled_key(keyserver: KeyServer) -> None:
    # not importorskip: importing LiteLLM here, before the adapter sets its offline switches,
    # makes it fetch its price map from GitHub (on threads that outlive this test)
    if importlib.util.find_spec("litellm") is None:
        pytest.skip("litellm is not installed")
    from dshstream.adapters import LiteLLMAdapter

    keyserver.behave = lambda sent, n: throttled(**{"retry-after": "30"}) if sent == K1 else None
    pool = KeyPool([K1, K2])
    adapter = LiteLLMAdapter(model_prefix="openai/", base_url=f"{keyserver.url}/v1", api_key=pool, max_retries=0)
    service = LlmService()
    service.register_adapter(["p"], adapter)
    result = service.stream(GenerateOptions(provider="p", model="gpt-4o-mini", messages=(Message.user("hi"),),
                                            timeout=60)).result()
    assert result.finish.kind == "stop", result.failure
    assert keyserver.keys() == [K1, K2]
    assert by_label(pool)["key #1"].cooling_until is not None


def test_the_key_pool_example_runs_on_loopback() -> None:
    proc = subprocess.run([sys.executable, "examples/key_pool.py"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "2 + 2 = 4", lines
    assert lines[1:5] == [
        "team-a: 1 uses, cooling, last RATE_LIMIT",
        "team-b: 1 uses, parked, last AUTH",
        "team-c: 1 uses, available, last -",
        "team-d: 0 uses, available, last -",
    ], lines
    assert lines[5] == "32 streams on 2 adapters: 32 ok (team-c 17, team-d 16 uses)", lines
    assert any(line.startswith("waited ") and line.endswith(" for the first free key: stop") for line in lines), lines
    assert any("all 3 keys of the pool are cooling or parked" in line for line in lines), lines

