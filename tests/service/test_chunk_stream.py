"""ChunkStream (dshstream/_chunk_stream.py): what ``LlmService.stream`` returns.

Iteration over batches, ``close()`` while idle and from another thread while the consumer
is blocked, ``cancel()``, ``KeyboardInterrupt`` (keeps the partial result and propagates),
``result()`` (never raises for provider failures), ``text_stream``, ``until_done``,
``partial`` and the context manager. No network: a ChunkStream over a list of batches, or
a service over a fake adapter. The same over real HTTP is in tests/transport/test_http.py
(close and cancel from another thread, early break).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    UsageChunk,
)
from dshstream._adapters.base import LlmAdapter
from dshstream._chunk_stream import ChunkStream
from dshstream._core.errors import error_for, make_failure
from dshstream._service import LlmService

USAGE = TokenUsage(3, 2)


def text_stream(text: str) -> list[StreamChunk]:
    return [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text=text),
        BlockEnd(index=0, block=TextBlock(text)),
        Finish(reason=FinishReason(kind="stop"), replay_state={"from": text}),
    ]


REASONED: list[StreamChunk] = [
    BlockStart(index=0, block_type="reasoning"),
    ReasoningDelta(index=0, text="think"),
    BlockEnd(index=0, block=ReasoningBlock("think")),
    BlockStart(index=1, block_type="text"),
    TextDelta(index=1, text="Hel"),
    TextDelta(index=1, text="lo"),
    BlockEnd(index=1, block=TextBlock("Hello")),
    UsageChunk(usage=USAGE),
    Finish(reason=FinishReason(kind="stop", raw="end")),
]


def options(provider: str = "p", cancel: threading.Event | None = None) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="m", messages=(Message.user("hi"),), cancel=cancel)


class Source:
    """Batches to hand out, recording how far they were read and whether they were closed."""

    def __init__(self, *batches: list[StreamChunk]) -> None:
        self.batches = batches
        self.pulled = 0
        self.closed = False

    def __call__(self) -> Iterator[list[StreamChunk]]:
        try:
            for batch in self.batches:
                self.pulled += 1
                yield batch
        finally:
            self.closed = True


def stream_of(*batches: list[StreamChunk], cancel: threading.Event | None = None) -> tuple[ChunkStream, Source]:
    source = Source(*batches)
    return ChunkStream(source(), options=options(cancel=cancel), cancel=cancel), source


class FakeAdapter(LlmAdapter):
    def __init__(self, text: str = "ok") -> None:
        self.text = text

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        yield from text_stream(self.text)


class Batching(FakeAdapter):
    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        yield text_stream(self.text)


class Stalling(LlmAdapter):
    """Sends some text, then waits (bounded) for the request's cancel event, as the HTTP
    transport's watchdog does, and ends with ``ABORTED``."""

    def __init__(self) -> None:
        self.waiting = threading.Event()

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        yield [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="partial")]
        self.waiting.set()
        assert options.cancel is not None
        if not options.cancel.wait(10):
            raise AssertionError("never cancelled")
        raise error_for(make_failure("ABORTED", f"{options.provider}: stream cancelled by the caller"))


def is_done(stream: ChunkStream) -> bool:
    """``stream.done``, read afresh (mypy would keep a narrowed ``stream.done``)."""
    return stream.done


def service_with(adapter: LlmAdapter) -> LlmService:
    service = LlmService()
    service.register_adapter(["p"], adapter)
    return service


# --------------------------------------------------------------------------- iteration


def test_iteration_flattens_batches_and_skips_empty_ones() -> None:
    stream, source = stream_of(REASONED[:2], [], REASONED[2:7], [], REASONED[7:])
    assert not stream.done and repr(stream) == "ChunkStream(provider='p', open)"
    assert list(stream) == REASONED
    assert is_done(stream) and repr(stream) == "ChunkStream(provider='p', done)"
    assert source.closed  # released as soon as the Finish went out
    assert list(stream) == []
    with pytest.raises(StopIteration):
        next(stream)
    result = stream.result()
    assert (result.reasoning, result.text, result.usage, result.finish.raw) == ("think", "Hello", USAGE, "end")


def test_nothing_after_the_finish_is_read_or_handed_out() -> None:
    extra: list[StreamChunk] = [TextDelta(index=0, text="late")]
    stream, source = stream_of(text_stream("a")[:2], text_stream("a")[2:] + extra, extra)
    assert list(stream) == text_stream("a")
    assert source.pulled == 2 and source.closed
    assert stream.result().text == "a"


def test_iter_returns_itself() -> None:
    stream, _ = stream_of(text_stream("a"))
    assert iter(stream) is stream


def test_without_options() -> None:
    stream = ChunkStream(Source(text_stream("a"))())
    assert repr(stream) == "ChunkStream(provider=None, open)"
    assert stream.result().text == "a"


def test_a_plain_iterator_of_batches() -> None:
    stream = ChunkStream(iter([text_stream("a")]))
    assert list(stream) == text_stream("a")


# --------------------------------------------------------------------------- close and cancel


def test_close_while_idle_releases_the_source_and_keeps_the_partial() -> None:
    cancel = threading.Event()
    stream, source = stream_of(REASONED[:5], REASONED[5:], cancel=cancel)
    for _ in range(5):
        next(stream)
    stream.close()
    assert source.closed and cancel.is_set() and stream.done
    assert list(stream) == []
    partial = stream.partial()
    assert (partial.reasoning, partial.text) == ("think", "Hel")
    assert partial.finish.kind == "aborted" and partial.failure is not None
    assert partial.failure.code == "ABORTED"
    assert partial.failure.message == "p: stream closed by the consumer"
    assert stream.result() == partial  # result() after close: the partial, no raise
    stream.close()  # idempotent
    assert stream.partial() == partial


def test_close_before_reading_anything() -> None:
    stream, source = stream_of(text_stream("a"))
    stream.close()
    assert source.pulled == 0 and list(stream) == []
    assert stream.result().finish.kind == "aborted" and stream.result().blocks == ()


def test_close_after_the_finish_changes_nothing() -> None:
    cancel = threading.Event()
    stream, _ = stream_of(text_stream("a"), cancel=cancel)
    assert stream.result().finish.kind == "stop"
    stream.close()
    assert stream.partial().finish.kind == "stop" and not cancel.is_set()


def test_close_never_raises_for_a_source_that_fails_to_close() -> None:
    class Stubborn:
        def __iter__(self) -> Stubborn:
            return self

        def __next__(self) -> list[StreamChunk]:
            return [TextDelta(index=0, text="x")]

        def close(self) -> None:
            raise RuntimeError("cannot close")

    stream = ChunkStream(Stubborn())
    next(stream)
    stream.close()
    assert stream.partial().finish.kind == "aborted"


# moved from tests/service/test_service.py
def test_close_mid_batch_hands_out_nothing_more() -> None:
    service = service_with(Batching("hello"))
    stream = service.stream(options())
    first = next(stream)
    assert isinstance(first, BlockStart)
    stream.close()
    assert list(stream) == []
    assert stream.partial().finish.kind == "aborted"


def test_close_from_another_thread_while_the_consumer_is_blocked() -> None:
    adapter = Stalling()
    stream = service_with(adapter).stream(options())

    def close_when_blocked() -> None:
        adapter.waiting.wait(5)
        time.sleep(0.05)  # the consumer is inside the adapter, waiting
        stream.close()

    closer = threading.Thread(target=close_when_blocked)
    started = time.monotonic()
    closer.start()
    chunks = list(stream)
    closer.join(5)
    assert time.monotonic() - started < 5
    assert chunks[:2] == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="partial")]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert finish.reason.failure is not None and finish.reason.failure.code == "ABORTED"
    result = stream.result()
    assert result.text == "partial" and result.finish.kind == "aborted"


def test_cancel_from_another_thread_ends_result() -> None:
    adapter = Stalling()
    stream = service_with(adapter).stream(options())

    def cancel_when_waiting() -> None:
        adapter.waiting.wait(5)
        stream.cancel()

    canceller = threading.Thread(target=cancel_when_waiting)
    canceller.start()
    result = stream.result()
    canceller.join(5)
    assert result.text == "partial" and result.finish.kind == "aborted"
    assert result.failure is not None and result.failure.code == "ABORTED"


def test_cancel_sets_the_requests_own_event() -> None:
    cancel = threading.Event()
    stream = service_with(FakeAdapter()).stream(options(cancel=cancel))
    stream.cancel()
    assert cancel.is_set()
    result = stream.result()  # the service sees the event before calling the adapter
    assert result.finish.kind == "aborted" and result.failure is not None and result.failure.code == "ABORTED"


def test_cancel_without_an_event_is_a_no_op() -> None:
    stream = ChunkStream(Source(text_stream("a"))())
    stream.cancel()
    assert stream.result().finish.kind == "stop"


def test_context_manager_closes_on_exit() -> None:
    stream, source = stream_of(text_stream("a")[:2], text_stream("a")[2:])
    with stream as entered:
        assert entered is stream
        next(stream)
    assert source.closed and stream.partial().finish.kind == "aborted"
    complete, _ = stream_of(text_stream("a"))
    with complete:
        assert complete.result().ok
    assert complete.partial().finish.kind == "stop"


# --------------------------------------------------------------------------- KeyboardInterrupt


class Interrupting(FakeAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.closed = False

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        try:
            yield BlockStart(index=0, block_type="text")
            yield TextDelta(index=0, text="partial")
            raise KeyboardInterrupt
        finally:
            self.closed = True


# moved from tests/service/test_service.py
def test_keyboard_interrupt_closes_and_keeps_partial() -> None:
    adapter = Interrupting()
    stream = service_with(adapter).stream(options())
    with pytest.raises(KeyboardInterrupt):
        list(stream)
    assert adapter.closed
    partial = stream.partial()
    assert partial.text == "partial" and partial.finish.kind == "aborted"
    assert partial.failure is not None and partial.failure.code == "ABORTED"
    assert partial.failure.message == "p: interrupted (KeyboardInterrupt)"
    assert stream.done and list(stream) == []


def test_keyboard_interrupt_in_result_propagates_too() -> None:
    cancel = threading.Event()
    adapter = Interrupting()
    stream = service_with(adapter).stream(options(cancel=cancel))
    with pytest.raises(KeyboardInterrupt):
        stream.result()
    assert adapter.closed and cancel.is_set()
    partial = stream.partial()
    assert partial.text == "partial" and partial.finish.kind == "aborted"


# --------------------------------------------------------------------------- result


def test_result_never_raises_for_a_provider_failure() -> None:
    class Failing(FakeAdapter):
        def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
            yield from text_stream("partial")[:2]
            raise error_for(make_failure("RATE_LIMIT", "p: rate limited", status=429, provider="p"))

    result = service_with(Failing()).stream(options()).result()
    assert result.text == "partial" and result.finish.kind == "error"
    assert result.failure is not None and result.failure.code == "RATE_LIMIT"


def test_result_after_partial_iteration_takes_the_rest_of_the_batch() -> None:
    stream, _ = stream_of(REASONED[:5], REASONED[5:])
    assert [next(stream) for _ in range(4)] == REASONED[:4]
    result = stream.result()
    assert (result.reasoning, result.text, result.usage) == ("think", "Hello", USAGE)
    assert stream.done and list(stream) == []
    assert stream.result() == result  # again: the same


def test_a_stream_that_ends_without_a_finish_is_not_a_stop() -> None:
    class Unfinished(FakeAdapter):
        def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
            yield from text_stream("cut")[:2]

    result = service_with(Unfinished()).stream(options()).result()
    assert result.text == "cut"
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.code == "STREAM_CLOSED"


# --------------------------------------------------------------------------- helpers


def test_text_stream_is_only_the_visible_text() -> None:
    stream, _ = stream_of(REASONED)
    assert list(stream.text_stream()) == ["Hel", "lo"]
    assert stream.done and stream.result().usage == USAGE


def test_until_done_sees_every_chunk() -> None:
    stream, _ = stream_of(REASONED[:3], REASONED[3:])
    seen: list[StreamChunk] = []
    result = stream.until_done(seen.append)
    assert seen == REASONED and result.text == "Hello"


def test_partial_does_not_consume() -> None:
    stream, source = stream_of(REASONED[:5], REASONED[5:])
    assert stream.partial().blocks == () and source.pulled == 0
    for _ in range(5):
        next(stream)
    assert stream.partial().blocks == (ReasoningBlock("think"), TextBlock("Hel"))
    assert source.pulled == 1
    assert stream.result().text == "Hello"


# moved from tests/service/test_service.py
def test_chunk_stream_helpers() -> None:
    service = service_with(FakeAdapter("hello"))
    assert list(service.stream(options()).text_stream()) == ["hello"]
    seen: list[StreamChunk] = []
    result = service.stream(options()).until_done(seen.append)
    assert result.text == "hello" and len(seen) == 4
    with service.stream(options()) as stream:
        next(stream)
    assert stream.done
    assert stream.partial().finish.kind == "aborted"
