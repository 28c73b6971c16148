"""Observers (dshstream/_observe.py, dshstream/_core/records.py): what ``observer=`` hears,
and exactly one ``StreamFinished`` per stream on every path.

Every test streams a real OpenRouter recording (text, usage with cost, response id, the
serving provider) through the real HTTP path from a loopback server: a normal end, HTTP
500s after retries, an in-band error, a listener that raises, ``close()`` from another
thread, the cancel event (mid-stream and during a retry's backoff), ``break`` then garbage
collection, ``KeyboardInterrupt`` (from a listener and from ``on_chunk``), a stream never
iterated, an adapter used directly, observers on both levels, an observer that raises,
content capture off and on, and the INFO log line. One live test runs against the local
llama.cpp server when it is configured.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from helpers import fake_key, fixture_bytes

from dshstream import (
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmFailure,
    Message,
    OpenAIChatAdapter,
    ResponseMetadata,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
)
from dshstream.adapters import RetryPolicy
from dshstream.errors import ConfigurationTypeError
from dshstream.observe import (
    AttemptRecord,
    FirstChunkRecord,
    ObserverRecord,
    StreamFinished,
    StreamStarted,
    Telemetry,
)
from dshstream._chunk_stream import ChunkStream
from dshstream._core.records import MAX_CHUNK_GAPS
from dshstream._observe import StreamWatch, open_watch, server_of
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService, Next

BODY = fixture_bytes("openrouter/cache_usage_bedrock_claude.sse")
_FIRST_DATA = BODY.index(b"\n\n", BODY.index(b"data: ")) + 2
#: the recording cut after its first content event (the rest follows a pause)
HEAD, TAIL = BODY[:_FIRST_DATA], BODY[_FIRST_DATA:]
PATH = "/v1/chat/completions"
PROVIDER = "openrouter"
MODEL = "anthropic/claude-sonnet-4.6"
PROMPT = "the secret recipe is forty-two cloves"
SYSTEM = "answer like a pirate"
STOP = "STOP-HERE-PLEASE"
#: a failure mode is this many seconds away; a working path takes well under a second
SLOW = 30.0


class Recorder:
    """An observer that keeps what it hears (thread-safe)."""

    def __init__(self, *, capture_content: bool = False) -> None:
        self.capture_content = capture_content
        self.records: list[ObserverRecord] = []
        self._lock = threading.Lock()
        self.heard = threading.Event()

    def __call__(self, record: ObserverRecord) -> None:
        with self._lock:
            self.records.append(record)
        self.heard.set()

    def of(self, kind: type[Any]) -> list[Any]:
        with self._lock:
            return [r for r in self.records if isinstance(r, kind)]

    @property
    def finished(self) -> list[StreamFinished]:
        return self.of(StreamFinished)

    @property
    def attempts(self) -> list[AttemptRecord]:
        return self.of(AttemptRecord)

    def wait_for(self, kind: type[Any], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.of(kind):
            assert time.monotonic() < deadline, f"no {kind.__name__} within {timeout}s"
            time.sleep(0.005)

    def one_stream(self) -> StreamFinished:
        """The records tell one stream's story (records.py rule 1); its finish."""
        records = list(self.records)
        assert records, "nothing heard"
        assert isinstance(records[0], StreamStarted), records[0]
        assert isinstance(records[-1], StreamFinished), records[-1]
        assert len([r for r in records if isinstance(r, StreamStarted)]) == 1
        assert len([r for r in records if isinstance(r, StreamFinished)]) == 1
        assert len([r for r in records if isinstance(r, FirstChunkRecord)]) <= 1
        assert {r.stream_id for r in records} == {records[0].stream_id}
        assert {r.level for r in records} == {records[0].level}
        attempts = [r.attempt for r in records if isinstance(r, AttemptRecord)]
        assert attempts == list(range(1, len(attempts) + 1))
        finished = records[-1]
        assert finished.attempts == len(attempts)
        return finished


def fast_retries(adapter: OpenAIChatAdapter, retries: int, backoff: float = 0.01) -> None:
    adapter.retry_policy = RetryPolicy(
        max_retries=retries, backoff_base=backoff, backoff_cap=backoff
    )


def make_adapter(server: ReplayServer, **settings: Any) -> OpenAIChatAdapter:
    settings.setdefault("max_retries", 0)
    return OpenAIChatAdapter(
        api_key="sk-test-observe", base_url=f"{server.url}/v1", dialect="openrouter", **settings
    )


def make_service(
    server: ReplayServer,
    observer: Any = None,
    adapter: OpenAIChatAdapter | None = None,
    **settings: Any,
) -> tuple[LlmService, OpenAIChatAdapter]:
    adapter = adapter or make_adapter(server, **settings)
    service = LlmService(observer=observer)
    service.register_adapter([PROVIDER], adapter)
    return service, adapter


def options(**overrides: Any) -> GenerateOptions:
    values: dict[str, Any] = {
        "provider": PROVIDER,
        "model": MODEL,
        "messages": (Message.system(SYSTEM), Message.user(PROMPT)),
        "max_tokens": 64,
        "temperature": 0.25,
        "stop": (STOP,),
        "timeout": 60.0,
    }
    values.update(overrides)
    return GenerateOptions(**values)


def paused(seconds: float = SLOW) -> Route:
    """The recording with a long pause after its first content event."""
    return Route(body=b"", script=[HEAD, seconds, TAIL])


def server_error() -> Route:
    return Route(
        body=b'{"error":{"message":"upstream busy"}}',
        status=500,
        content_type="application/json",
        chunked=False,
    )


# --------------------------------------------------------------------------- the normal path


def test_a_stream_is_started_first_chunk_attempts_and_one_finish_in_order(
    server: ReplayServer,
) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    stream = service.stream(options())
    assert [type(r) for r in recorder.records] == [StreamStarted]  # at the stream() call
    text = "".join(c.text for c in stream if isinstance(c, TextDelta))

    assert text == "Hello!"
    assert [type(r).__name__ for r in recorder.records] == [
        "StreamStarted",
        "FirstChunkRecord",
        "AttemptRecord",
        "StreamFinished",
    ]
    finished = recorder.one_stream()
    started = recorder.of(StreamStarted)[0]
    assert (started.provider, started.model, started.level) == (PROVIDER, MODEL, "service")
    assert abs(started.started_at - time.time()) < 60
    settings = started.settings
    assert (
        settings.max_tokens,
        settings.temperature,
        settings.message_count,
        settings.stop_count,
    ) == (64, 0.25, 2, 1)
    assert settings.timeout == 60.0 and settings.stop_sequences is None and started.messages is None
    first = recorder.of(FirstChunkRecord)[0]
    assert (
        first.chunk_type == "BlockStart"
        and first.time_to_first_chunk == finished.time_to_first_chunk
    )
    attempt = recorder.attempts[0]
    assert (attempt.attempt, attempt.outcome, attempt.failure, attempt.chunks) == (
        1,
        "ok",
        None,
        finished.chunk_count,
    )
    assert (attempt.server_address, attempt.server_port) == server_of(server.url)

    assert finished.ok and finished.kind == "stop" and finished.code is None
    assert finished.usage is not None
    assert (finished.usage.input_tokens, finished.usage.output_tokens, finished.usage.cost) == (
        254,
        5,
        0.000837,
    )
    assert finished.response_id == "gen-1773012759-4u9w7As08eMtL75bWtu8"
    assert finished.response_model == "anthropic/claude-4.6-sonnet-20260217"
    assert finished.serving_provider == "Amazon Bedrock"
    assert (finished.server_address, finished.server_port) == server_of(server.url)
    assert finished.chunk_count == 5 and finished.attempts == 1
    assert (
        finished.time_to_first_chunk is not None
        and 0 < finished.time_to_first_chunk <= finished.duration
    )
    assert finished.output is None


def test_result_reports_the_same_single_finish(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    result = service.stream(options()).result()

    finished = recorder.one_stream()
    assert result.text == "Hello!" and finished.usage == result.usage and finished.kind == "stop"


def test_time_to_first_chunk_is_measured_before_the_rest_of_the_stream(
    server: ReplayServer,
) -> None:
    server.add(PATH, paused(1.0))
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    service.stream(options()).result()

    finished = recorder.one_stream()
    assert finished.time_to_first_chunk is not None
    # the first content came before the server's 1 s pause; the stream ended after it
    assert finished.duration - finished.time_to_first_chunk >= 0.5
    assert finished.kind == "stop"


# --------------------------------------------------------------------------- failures


def test_http_500_after_retries_is_one_attempt_record_each_and_one_error_finish(
    server: ReplayServer,
) -> None:
    server.add(PATH, server_error())
    recorder = Recorder()
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    service, adapter = make_service(
        server, recorder, failure_reporter=lambda f, r: reports.append((f, r))
    )
    fast_retries(adapter, 2)

    result = service.stream(options()).result()

    finished = recorder.one_stream()
    assert result.finish.kind == "error" and finished.kind == "error" and finished.code == "SERVER"
    assert finished.attempts == 3 and len(server.requests) == 3
    assert [(a.outcome, a.failure.code if a.failure else None) for a in recorder.attempts] == [
        ("failed", "SERVER")
    ] * 3
    assert all(a.failure is not None and a.failure.status == 500 for a in recorder.attempts)
    # the failure reporter and the attempt records are one hook: the same failures, in order
    assert [f for f, _ in reports] == [a.failure for a in recorder.attempts]
    assert [r["attempt"] for _, r in reports] == [1, 2, 3]
    assert finished.time_to_first_chunk is None and finished.usage is None
    assert finished.finish.failure == recorder.attempts[-1].failure


def test_an_in_band_error_ends_the_attempt_failed_and_the_stream_with_its_error(
    server: ReplayServer,
) -> None:
    server.add(PATH, fixture_bytes("openrouter/midstream_error_chunk.sse"))
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    result = service.stream(options()).result()

    finished = recorder.one_stream()
    assert result.finish.failure is not None
    assert finished.kind == "error" and finished.code == result.finish.failure.code
    [attempt] = recorder.attempts
    assert (
        attempt.outcome == "failed"
        and attempt.failure is not None
        and attempt.failure.code == finished.code
    )


def test_a_listener_that_raises_is_an_error_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    def listener(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        for chunk in next_(opts):
            yield chunk
            raise RuntimeError("listener bug")

    service.add_listener(listener)
    started = time.monotonic()
    chunks = list(service.stream(options()))

    finished = recorder.one_stream()
    assert finished.kind == "error" and finished.code == "UNKNOWN"
    last = chunks[-1]
    assert isinstance(last, Finish) and last.reason == finished.finish
    # the provider was still answering: its connection was closed, not waited for
    assert [a.outcome for a in recorder.attempts] == [
        "aborted"
    ] and time.monotonic() - started < SLOW / 3


# --------------------------------------------------------------------------- stopping early


def _consume_in_thread(stream: Any) -> tuple[threading.Thread, list[StreamChunk]]:
    got: list[StreamChunk] = []

    def consume() -> None:
        got.extend(stream)

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    return thread, got


def test_close_from_another_thread_mid_stream_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)
    stream = service.stream(options())
    thread, got = _consume_in_thread(stream)
    recorder.wait_for(FirstChunkRecord)

    started = time.monotonic()
    stream.close()
    thread.join(SLOW / 3)

    assert not thread.is_alive() and time.monotonic() - started < SLOW / 3
    stream.close()  # idempotent: still one finish
    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED"
    assert finished.time_to_first_chunk is not None and finished.usage is None
    assert [a.outcome for a in recorder.attempts] == ["aborted"]
    last = got[-1]  # the consumer saw the aborted finish it was reported with
    assert isinstance(last, Finish) and last.reason == finished.finish


def test_the_cancel_event_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)
    cancel = threading.Event()
    stream = service.stream(options(cancel=cancel))
    thread, _ = _consume_in_thread(stream)
    recorder.wait_for(FirstChunkRecord)

    cancel.set()
    thread.join(SLOW / 3)

    assert not thread.is_alive()
    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED"


def test_cancel_during_a_retry_backoff_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, server_error())
    recorder = Recorder()
    service, adapter = make_service(server, recorder)
    fast_retries(adapter, 3, backoff=SLOW)
    cancel = threading.Event()
    stream = service.stream(options(cancel=cancel))
    thread, _ = _consume_in_thread(stream)
    recorder.wait_for(AttemptRecord)

    started = time.monotonic()
    cancel.set()
    thread.join(SLOW / 3)

    assert not thread.is_alive() and time.monotonic() - started < SLOW / 3
    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED" and finished.attempts == 1


def test_break_then_garbage_collection_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    stream = service.stream(options())
    for _chunk in stream:
        break
    assert recorder.finished == []  # the stream is still open: nothing is made up
    del stream, _chunk
    gc.collect()

    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED"
    assert finished.finish.failure is not None and "abandoned" in finished.finish.failure.message
    assert [a.outcome for a in recorder.attempts] == ["aborted"]  # the connection was closed first


def test_break_after_the_whole_answer_arrived_still_reports_its_usage() -> None:
    """The consumer stopped before taking the finish, but the provider billed the call.
    (In memory: the whole answer must be in the batch the consumer stopped in.)"""
    usage = TokenUsage(input_tokens=10, output_tokens=2, cost=0.25)
    metadata = ResponseMetadata(response_id="resp-1")
    batch: list[StreamChunk] = [
        BlockStart(0, "text"),
        TextDelta(0, "hi"),
        UsageChunk(usage),
        Finish(FinishReason("stop"), metadata=metadata),
    ]
    recorder = Recorder()
    opts = options()

    with ChunkStream(
        iter([batch]), options=opts, watch=open_watch(recorder, opts, "service")
    ) as stream:
        for _chunk in stream:
            break

    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.chunk_count == 4
    assert finished.usage == usage and finished.response_id == "resp-1"


def test_keyboard_interrupt_from_a_listener_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    def listener(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        for chunk in next_(opts):
            yield chunk
            raise KeyboardInterrupt

    service.add_listener(listener)
    stream = service.stream(options())
    with pytest.raises(KeyboardInterrupt):
        for _chunk in stream:
            pass

    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED"
    assert stream.done and stream.partial().finish.kind == "aborted"


def test_keyboard_interrupt_from_on_chunk_is_one_aborted_finish(server: ReplayServer) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    def on_chunk(chunk: StreamChunk) -> None:
        raise KeyboardInterrupt

    stream = service.stream(options())
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        stream.until_done(on_chunk)

    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.code == "ABORTED"
    assert time.monotonic() - started < SLOW / 3 and stream.done


def test_an_abandoned_stream_never_iterated_sends_nothing_and_finishes_once(
    server: ReplayServer,
) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    stream = service.stream(options())
    del stream
    gc.collect()

    finished = recorder.one_stream()
    assert finished.kind == "aborted" and finished.attempts == 0 and finished.chunk_count == 0
    assert finished.time_to_first_chunk is None and server.requests == []


# --------------------------------------------------------------------------- adapters


def test_an_adapter_used_directly_reports_its_own_stream(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    adapter = make_adapter(server, observer=recorder)

    chunks = list(adapter.stream(options()))

    finished = recorder.one_stream()
    assert (
        finished.level == "adapter"
        and finished.kind == "stop"
        and len(chunks) == finished.chunk_count
    )
    assert finished.usage is not None and finished.usage.cost == 0.000837
    assert finished.response_id == "gen-1773012759-4u9w7As08eMtL75bWtu8" and finished.attempts == 1
    assert finished.time_to_first_chunk is not None


def test_an_adapter_generator_dropped_mid_stream_finishes_once_and_one_never_started_says_nothing(
    server: ReplayServer,
) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    adapter = make_adapter(server, observer=recorder)

    never_started = adapter.stream(options())
    del never_started
    gc.collect()
    assert recorder.records == []

    generator = adapter.stream_batches(options())
    next(generator)
    del generator
    gc.collect()

    finished = recorder.one_stream()
    assert finished.level == "adapter" and finished.kind == "aborted" and finished.code == "ABORTED"
    assert [a.outcome for a in recorder.attempts] == ["aborted"]


def test_http_500_from_an_adapter_used_directly_is_an_error_finish(server: ReplayServer) -> None:
    server.add(PATH, server_error())
    recorder = Recorder()
    adapter = make_adapter(server, observer=recorder)
    fast_retries(adapter, 1)

    with pytest.raises(Exception) as raised:
        list(adapter.stream(options()))

    finished = recorder.one_stream()
    assert finished.kind == "error" and finished.code == "SERVER" and finished.attempts == 2
    assert finished.finish.failure == raised.value.failure  # type: ignore[attr-defined]


def test_observers_on_the_service_and_the_adapter_each_hear_one_finish(
    server: ReplayServer,
) -> None:
    server.add(PATH, [server_error(), Route(body=BODY)])
    on_service, on_adapter = Recorder(), Recorder()
    adapter = make_adapter(server, observer=on_adapter)
    fast_retries(adapter, 1)
    service, _ = make_service(server, on_service, adapter=adapter)

    service.stream(options()).result()

    service_finish, adapter_finish = on_service.one_stream(), on_adapter.one_stream()
    assert (service_finish.level, adapter_finish.level) == ("service", "adapter")
    assert service_finish.stream_id == adapter_finish.stream_id
    assert service_finish.attempts == adapter_finish.attempts == 2
    assert (
        [a.outcome for a in on_service.attempts]
        == [a.outcome for a in on_adapter.attempts]
        == ["failed", "ok"]
    )
    assert service_finish.usage == adapter_finish.usage


def test_one_observer_on_both_levels_hears_each_stream_once(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    adapter = make_adapter(server, observer=recorder)
    service, _ = make_service(server, recorder, adapter=adapter)

    service.stream(options()).result()

    finished = recorder.one_stream()
    assert finished.level == "service" and finished.attempts == 1


def test_a_fallback_listener_s_second_adapter_call_counts_as_the_stream_s_attempt(
    server: ReplayServer,
) -> None:
    server.add("/primary/v1/chat/completions", server_error())
    server.add("/backup/v1/chat/completions", BODY)
    recorder = Recorder()
    service = LlmService(observer=recorder)
    for route in ("primary", "backup"):
        service.register_adapter(
            [route],
            OpenAIChatAdapter(
                api_key="k",
                base_url=f"{server.url}/{route}/v1",
                dialect="openrouter",
                max_retries=0,
            ),
        )

    def fallback(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        chunks = list(next_(opts))
        last = chunks[-1]
        if isinstance(last, Finish) and last.reason.kind == "error":
            yield from next_(replace(opts, provider="backup"))
        else:
            yield from chunks

    service.add_listener(fallback)
    result = service.stream(options(provider="primary")).result()

    finished = recorder.one_stream()
    assert result.text == "Hello!" and finished.kind == "stop"
    assert [(a.outcome, a.server_address) for a in recorder.attempts] == [
        ("failed", "127.0.0.1"),
        ("ok", "127.0.0.1"),
    ]
    assert finished.provider == "primary" and finished.attempts == 2
    assert [a.provider for a in recorder.attempts] == [
        "primary",
        "backup",
    ]  # where each attempt went


def test_a_stream_started_inside_another_streams_pull_is_its_own(server: ReplayServer) -> None:
    """A listener that asks another (unobserved) service first: its call is not counted
    as an attempt of the outer stream."""
    server.add(PATH, BODY)
    outer, on_adapter = Recorder(), Recorder()
    adapter = make_adapter(server, observer=on_adapter)
    service, _ = make_service(server, outer, adapter=adapter)
    inner_service = LlmService()
    inner_service.register_adapter([PROVIDER], adapter)

    def listener(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        assert inner_service.stream(options()).result().text == "Hello!"
        yield from next_(opts)

    service.add_listener(listener)
    service.stream(options()).result()

    finished = outer.one_stream()
    assert finished.attempts == 1
    adapter_finishes = on_adapter.finished
    assert len(adapter_finishes) == 2 and len({f.stream_id for f in adapter_finishes}) == 2
    assert finished.stream_id in {f.stream_id for f in adapter_finishes}


# --------------------------------------------------------------------------- observers' failures


def test_an_observer_that_raises_is_logged_once_and_never_breaks_the_stream(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(PATH, BODY)
    calls: list[str] = []

    def broken(record: ObserverRecord) -> None:
        calls.append(type(record).__name__)
        raise RuntimeError("observer bug sk-live-0123456789abcdefghijklmnop")

    service, _ = make_service(server, broken)
    with caplog.at_level(logging.DEBUG, logger="dshstream"):
        first = service.stream(options()).result()
        second = service.stream(options()).result()

    assert first.text == second.text == "Hello!"
    assert calls.count("StreamFinished") == 2 and calls.count("StreamStarted") == 2
    errors = [
        r for r in caplog.records if r.levelno >= logging.ERROR and "observer" in r.getMessage()
    ]
    assert len(errors) == 1 and errors[0].exc_text is not None
    assert (
        "RuntimeError" in errors[0].exc_text
        and "0123456789abcdefghijklmnop" not in errors[0].exc_text
    )


def test_an_observer_must_be_callable() -> None:
    with pytest.raises(ConfigurationTypeError, match="LlmService.observer"):
        LlmService(observer="print")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationTypeError, match="observer"):
        OpenAIChatAdapter(api_key="k", base_url="http://127.0.0.1:9/v1", observer=42)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- content


def test_no_prompt_output_or_stop_text_without_capture_content(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, _ = make_service(server, recorder)

    service.stream(options()).result()

    text = repr(recorder.records)
    for secret in (PROMPT, SYSTEM, STOP, "Hello!", "sk-test-observe"):
        assert secret not in text
    assert recorder.one_stream().output is None


def test_capture_content_carries_the_messages_stop_sequences_and_output(
    server: ReplayServer,
) -> None:
    server.add(PATH, BODY)
    recorder = Recorder(capture_content=True)
    service, _ = make_service(server, recorder)

    opts = options()
    service.stream(opts).result()

    started = recorder.of(StreamStarted)[0]
    assert started.messages == opts.messages and started.settings.stop_sequences == (STOP,)
    assert recorder.one_stream().output == (TextBlock("Hello!"),)
    assert "sk-test-observe" not in repr(recorder.records)


# --------------------------------------------------------------------------- logging


def _observe_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.endswith(".observe") and r.levelno == logging.INFO]


def test_one_info_line_per_finished_stream(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(PATH, [Route(body=BODY), server_error()])
    service, _ = make_service(server)
    caplog.set_level(logging.INFO, logger="dshstream")

    service.stream(options()).result()
    service.stream(options()).result()

    ok, failed = _observe_lines(caplog)
    message = ok.getMessage()
    assert message.startswith(f"{PROVIDER} {MODEL}: stop in ")
    assert "first chunk 0." in message and "1 attempt," in message
    assert "in=254 out=5" in message and "cost=$0.000837" in message
    assert PROMPT not in message and "Hello!" not in message
    facts = ok.dshstream  # type: ignore[attr-defined]
    assert facts["finish"] == "stop" and facts["cost"] == 0.000837 and facts["input_tokens"] == 254
    assert (
        facts["response_id"] == "gen-1773012759-4u9w7As08eMtL75bWtu8"
        and facts["time_to_first_chunk_s"] > 0
    )
    assert "error SERVER" in failed.getMessage() and "usage unknown" in failed.getMessage()
    # the failed attempt itself is still the WARNING it always was
    assert any(
        r.levelno == logging.WARNING and "attempt 1 failed: SERVER" in r.getMessage()
        for r in caplog.records
    )


def test_the_line_is_written_once_with_observers_on_both_levels_and_redacted(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(PATH, BODY)
    keyish_model = fake_key("sk-proj-", 36)
    adapter = make_adapter(server, observer=Recorder())
    service, _ = make_service(server, Recorder(), adapter=adapter)
    caplog.set_level(logging.INFO, logger="dshstream")

    service.stream(options(model=keyish_model)).result()

    [line] = _observe_lines(caplog)
    assert keyish_model not in line.getMessage() and "stop in" in line.getMessage()


def test_an_adapter_used_directly_writes_its_own_line(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(PATH, BODY)
    adapter = make_adapter(server)
    caplog.set_level(logging.INFO, logger="dshstream")

    list(adapter.stream(options()))

    [line] = _observe_lines(caplog)
    assert "stop in" in line.getMessage()


def test_nobody_watching_costs_nothing(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server)
    caplog.set_level(logging.WARNING, logger="dshstream")

    stream = service.stream(options())
    assert stream._watch is None
    assert stream.result().text == "Hello!"
    assert _observe_lines(caplog) == []


def test_an_observer_or_the_log_line_set_after_an_unwatched_stream_hears_the_next(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The attempt loop tells "nobody listens" inline for each stream (_observe rule 2), so
    an observer attached, or the INFO line enabled, after the adapter was made and after a
    stream nobody watched hears the next stream."""
    server.add(PATH, BODY)
    adapter = make_adapter(server)
    caplog.set_level(logging.WARNING, logger="dshstream")
    list(adapter.stream(options()))  # nobody listens: no watch
    assert _observe_lines(caplog) == []

    recorder = Recorder()
    adapter.observer = recorder
    list(adapter.stream(options()))
    assert recorder.one_stream().kind == "stop"

    adapter.observer = None
    caplog.set_level(logging.INFO, logger="dshstream")
    list(adapter.stream(options()))
    [line] = _observe_lines(caplog)
    assert "stop in" in line.getMessage()


# --------------------------------------------------------------------------- exactly once


def test_concurrent_streams_through_one_service_each_finish_once(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, _ = make_service(server, recorder)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            for _ in range(3):
                assert service.stream(options()).result().text == "Hello!"
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(SLOW)

    assert errors == []
    by_stream: dict[str, list[str]] = {}
    for record in recorder.records:
        by_stream.setdefault(record.stream_id, []).append(type(record).__name__)
    assert len(by_stream) == 18
    assert all(
        kinds == ["StreamStarted", "FirstChunkRecord", "AttemptRecord", "StreamFinished"]
        for kinds in by_stream.values()
    )


def test_the_finish_is_reported_once_when_many_threads_end_a_stream_at_once() -> None:
    for _ in range(20):
        recorder = Recorder()
        watch = StreamWatch(options(), level="service", observer=recorder)
        watch.start(options())
        barrier = threading.Barrier(8)

        def end(watch: StreamWatch = watch, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            watch.finish()
            watch.close(None, 0)

        threads = [threading.Thread(target=end) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        finished = recorder.one_stream()
        assert (
            finished.kind == "error" and finished.code == "STREAM_CLOSED"
        )  # no finish chunk ever came
        watch.end_attempt("ok", 3)  # nothing after the finish
        assert recorder.records[-1] is finished


# --------------------------------------------------------------------------- live


@pytest.mark.live
@pytest.mark.skipif(
    not os.environ.get("DSHSTREAM_TEST_SERVER"), reason="DSHSTREAM_TEST_SERVER is not set"
)
def test_live_llama_server_reports_usage_and_time_to_first_chunk() -> None:
    base = os.environ["DSHSTREAM_TEST_SERVER"].rstrip("/")
    recorder = Recorder()
    service = LlmService(observer=recorder)
    service.register_adapter(
        ["llamacpp"], OpenAIChatAdapter(base_url=f"{base}/v1", dialect="llamacpp")
    )

    result = service.stream(
        GenerateOptions(
            provider="llamacpp",
            model="m",
            messages=(Message.user("Say hello in five words."),),
            max_tokens=16,
            timeout=60.0,
        )
    ).result()

    finished = recorder.one_stream()
    assert (
        result.ok and finished.ok and finished.usage == result.usage and finished.usage is not None
    )
    assert finished.usage.output_tokens > 0
    assert (
        finished.time_to_first_chunk is not None
        and finished.time_to_first_chunk <= finished.duration
    )


def _race_at(monkeypatch: pytest.MonkeyPatch, name: str, end: Any) -> list[threading.Thread]:
    """Make the ``name`` record class of ``_observe`` run ``end`` on another thread (and give
    it half a second) at the moment the record is built: between "not finished yet?" and
    handing the record out, the window a close() from another thread can hit."""
    import dshstream._observe as observe_module

    real = getattr(observe_module, name)
    closers: list[threading.Thread] = []

    def racing(*args: Any, **kwargs: Any) -> Any:
        closer = threading.Thread(target=end)
        closers.append(closer)
        closer.start()
        closer.join(0.5)  # before the fix it finished here; after it, it waits for the record
        return real(*args, **kwargs)

    monkeypatch.setattr(observe_module, name, racing)
    return closers


def test_close_racing_the_first_chunk_never_emits_after_the_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    opts = options()
    batches: Iterator[list[StreamChunk]] = iter(
        [[BlockStart(0, "text"), TextDelta(0, "hi")], [Finish(FinishReason("stop"))]]
    )
    stream = ChunkStream(batches, options=opts, watch=open_watch(recorder, opts, "service"))
    closers = _race_at(monkeypatch, "FirstChunkRecord", stream.close)
    next(stream)
    for closer in closers:
        closer.join(SLOW)
    finished = recorder.one_stream()  # StreamFinished is the last record
    assert finished.kind == "aborted" and len(recorder.of(FirstChunkRecord)) == 1


def test_a_finish_racing_an_attempt_record_never_precedes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    opts = options()
    watch = open_watch(recorder, opts, "service")
    assert watch is not None
    real_emit = StreamWatch._emit
    closers: list[threading.Thread] = []

    def racing_emit(self: StreamWatch, record: ObserverRecord) -> None:
        if isinstance(record, AttemptRecord):  # the record is out of the lock's hands here
            closer = threading.Thread(target=watch.finish)
            closers.append(closer)
            closer.start()
            closer.join(0.5)
        real_emit(self, record)

    monkeypatch.setattr(StreamWatch, "_emit", racing_emit)
    watch.begin_attempt(1, "https://api.example.com/v1")
    watch.end_attempt("failed", 0)
    for closer in closers:
        closer.join(SLOW)
    finished = recorder.one_stream()
    assert finished.attempts == 1 and recorder.attempts[0].server_address == "api.example.com"


def test_an_observer_may_close_the_stream_from_inside_a_record() -> None:
    holder: list[ChunkStream] = []
    recorder = Recorder()

    def closing(record: ObserverRecord) -> None:
        recorder(record)
        if isinstance(record, FirstChunkRecord):
            holder[0].close()  # re-enters the watch on the same thread: no deadlock

    opts = options()
    batches: Iterator[list[StreamChunk]] = iter(
        [[BlockStart(0, "text"), TextDelta(0, "hi")], [Finish(FinishReason("stop"))]]
    )
    stream = ChunkStream(batches, options=opts, watch=open_watch(closing, opts, "service"))
    holder.append(stream)
    done = threading.Event()
    def consume() -> None:
        for _chunk in stream:
            pass
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    assert done.wait(SLOW)
    assert recorder.one_stream().kind == "aborted"


# --------------------------------------------------------------------------- telemetry facts and chunk gaps


def test_stream_started_carries_what_the_adapter_says_of_the_request(server: ReplayServer) -> None:
    server.add(PATH, BODY)
    recorder = Recorder()
    service, adapter = make_service(server, recorder)
    service.stream(options()).result()
    [started] = recorder.of(StreamStarted)
    host, port = server.url.removeprefix("http://").split(":")
    assert started.telemetry == Telemetry(None, "chat", host, int(port))  # openrouter: no well-known name
    assert started.telemetry == adapter.telemetry(options())
    assert started.settings.output_type == "text"
    # an adapter observed directly says the same
    direct = Recorder()
    list(make_adapter(server, observer=direct).stream(options()))
    assert [s.telemetry for s in direct.of(StreamStarted)] == [started.telemetry]


def test_chunk_gaps_are_timed_only_for_an_observer_that_asks(server: ReplayServer) -> None:
    class Gaps(Recorder):
        chunk_gaps = True

    for recorder, wanted in ((Recorder(), False), (Gaps(), True)):
        server.add(PATH, paused(0.15))
        service, _ = make_service(server, recorder)
        service.stream(options()).result()
        [finished] = recorder.finished
        if wanted:
            assert finished.chunk_gaps and max(finished.chunk_gaps) >= 0.1 and min(finished.chunk_gaps) >= 0
            assert len(finished.chunk_gaps) <= MAX_CHUNK_GAPS
        else:
            assert finished.chunk_gaps == ()
def test_the_prompt_cache_saving_is_in_the_record_and_the_line(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A recorded Anthropic stream that read 6,289 tokens from the prompt cache: the record
    and the INFO line say what share of the input that was (issue 33)."""
    from dshstream import AnthropicAdapter

    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/cache_creation_and_read_code_execution.sse")))
    recorder = Recorder()
    adapter = AnthropicAdapter(api_key=fake_key("test-", 24), base_url=server.url, observer=recorder)
    caplog.set_level(logging.INFO, logger="dshstream")

    list(adapter.stream(options()))

    [finished] = recorder.of(StreamFinished)
    usage = finished.usage
    assert usage is not None and usage.cache_read_tokens == 6289
    expected = round(6289 / usage.total_input_tokens, 4)
    assert finished.cached_input_share == expected
    [line] = _observe_lines(caplog)
    assert f"cached={6289 / usage.total_input_tokens:.0%}" in line.getMessage()
    assert line.dshstream["cached_input_share"] == expected  # type: ignore[attr-defined]
