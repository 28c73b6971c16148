"""The per-read fast path of an unwatched HTTP stream (service rule 10, attempts rules 5
and 6, pump rules 8 and 9) against the loops it replaces.

Without listeners or an observer, the service's ``ChunkStream`` reads the pump's
generator directly (a ``Handoff``); with an observer the same stream runs through the
service's and the attempt loop's own per-read loops. Every test streams the same answer
both ways and compares what the caller sees: the chunks, the result, the failure with
its diagnostics, what the failure reporters hear, and the connection closed.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import FIXTURES
from dshstream import GenerateOptions, Message, OpenAIChatAdapter
from dshstream._adapters.attempts import stream_policy
from dshstream._core.pump import Handoff
from dshstream._core.request import with_cancel
from dshstream._core.retry import RetryPolicy
from dshstream._core.types import Finish, LlmFailure, StreamChunk
from dshstream._service import LlmService
from dshstream._transport import MemoryAnswer, MemoryTransport

KEY = "handoff-test-key-123456"


def event(text: str) -> bytes:
    return b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


END = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


def options(**fields: Any) -> GenerateOptions:
    fields.setdefault("max_retries", 0)
    return GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),), **fields)


class Ways:
    """One answer streamed by a service without an observer (the handoff) and by one with
    an observer (the loops), each with its own adapter and reporters."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answer: MemoryAnswer) -> None:
        self.streams: dict[str, list[Any]] = {}
        self.reports: dict[str, list[tuple[str, Any]]] = {}
        self.services: dict[str, LlmService] = {}
        for way in ("handoff", "loops"):
            reports: list[tuple[str, Any]] = []
            transport = MemoryTransport(handler=lambda sent: answer)
            adapter = OpenAIChatAdapter(
                api_key=KEY, base_url="http://memory.invalid/v1", failure_reporter=_reporter(reports, "adapter")
            )
            monkeypatch.setattr(adapter, "transport", transport)
            service = LlmService(
                observer=(lambda record: None) if way == "loops" else None,
                failure_reporter=_reporter(reports, "service"),
            )
            service.register_adapter(["local"], adapter)
            self.services[way] = service
            self.reports[way] = reports
            self.streams[way] = transport.streams


def _reporter(reports: list[tuple[str, Any]], who: str) -> Callable[[LlmFailure, Any], None]:
    def report(failure: LlmFailure, context: Any) -> None:
        reports.append((who, _seen(failure)))

    return report


def _seen(failure: LlmFailure) -> tuple[str, str, Any]:
    diagnostics = dict(failure.diagnostics or {})
    diagnostics.pop("elapsed_s", None)  # a clock reading
    return (failure.code, failure.message, sorted(diagnostics.items()))


def _same_result(ways: Ways, *, iterate: bool) -> tuple[list[StreamChunk], Any]:
    got: dict[str, tuple[list[StreamChunk], Any]] = {}
    for way, service in ways.services.items():
        stream = service.stream(options())
        chunks = list(stream) if iterate else []
        result = stream.result()
        failure = result.failure
        # the finish carries the failure, whose diagnostics hold a clock reading: compared apart
        got[way] = (chunks[:-1], (result.text, result.blocks, result.finish.kind, result.usage,
                                  _seen(failure) if failure is not None else None))
    assert got["handoff"] == got["loops"]
    assert ways.reports["handoff"] == ways.reports["loops"]
    return got["handoff"]


@pytest.mark.parametrize("iterate", [False, True])
def test_a_whole_stream_is_the_same_both_ways(monkeypatch: pytest.MonkeyPatch, iterate: bool) -> None:
    ways = Ways(monkeypatch, MemoryAnswer([event("Hel"), event("lo"), b": ping\n\n", END]))
    chunks, result = _same_result(ways, iterate=iterate)
    assert result[0] == "Hello" and result[2] == "stop"
    assert not iterate or chunks
    for way in ways.streams:
        assert [stream.released for stream in ways.streams[way]] == [True]


@pytest.mark.parametrize("iterate", [False, True])
def test_a_recorded_tool_call_stream_is_the_same_both_ways(monkeypatch: pytest.MonkeyPatch, iterate: bool) -> None:
    body = (FIXTURES / "openai" / "text_moderation_chunk_obfuscation_gpt5.sse").read_bytes()
    events = [e + b"\n\n" for e in body.replace(b"\r\n", b"\n").split(b"\n\n") if e.strip()]
    ways = Ways(monkeypatch, MemoryAnswer(events))
    chunks, result = _same_result(ways, iterate=iterate)
    assert result[2] == "stop" and result[0]


@pytest.mark.parametrize("iterate", [False, True])
def test_a_read_failure_mid_stream_is_reported_the_same_both_ways(monkeypatch: pytest.MonkeyPatch, iterate: bool) -> None:
    ways = Ways(monkeypatch, MemoryAnswer([event("a"), event("b"), ConnectionResetError("reset by peer")]))
    _, result = _same_result(ways, iterate=iterate)
    code, _, diagnostics = result[4]
    assert code == "TRANSPORT" and result[0] == "ab"
    # counted by the pump on the handoff path, by the attempt loop on the other (rule 6)
    assert dict(diagnostics)["chunks_received"] == 3 and dict(diagnostics)["accepted"] is True
    assert [who for who, _ in ways.reports["handoff"]] == ["adapter", "service"]


@pytest.mark.parametrize("iterate", [False, True])
def test_an_in_band_failure_is_reported_once_both_ways(monkeypatch: pytest.MonkeyPatch, iterate: bool) -> None:
    failing = b'data: {"error":{"message":"boom","type":"server_error"}}\n\n'
    ways = Ways(monkeypatch, MemoryAnswer([event("partial"), failing]))
    _, result = _same_result(ways, iterate=iterate)
    assert result[2] == "error" and result[0] == "partial"
    assert [who for who, _ in ways.reports["handoff"]] == ["adapter", "service"]
    # the text block's start, delta and end: the error ends the block where it came
    assert dict(result[4][2])["chunks_received"] == 3


@pytest.mark.parametrize("iterate", [False, True])
def test_a_cut_stream_is_the_same_both_ways(monkeypatch: pytest.MonkeyPatch, iterate: bool) -> None:
    ways = Ways(monkeypatch, MemoryAnswer([event("cut"), event(" short")]))
    _, result = _same_result(ways, iterate=iterate)
    assert result[4][0] == "STREAM_CLOSED" and result[0] == "cut short"


def test_a_foreign_exception_mid_stream_becomes_the_services_finish(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not an ``LlmError``: the attempt loop lets it through, the service's boundary makes it
    the finish (service rule 5) — thrown back into it from the ``ChunkStream``'s read."""
    ways = Ways(monkeypatch, MemoryAnswer([event("x")]))
    for service in ways.services.values():
        adapter = service.adapter_for("local")
        assert isinstance(adapter, OpenAIChatAdapter)
        original = adapter.wire.make_translator

        def broken(*args: Any, original: Any = original) -> Any:
            translator = original(*args)

            def on_payload(event: str, payload: Any) -> None:
                raise RuntimeError("translator bug")

            translator.on_payload = on_payload
            return translator

        monkeypatch.setattr(adapter.wire, "make_translator", broken)
    _, result = _same_result(ways, iterate=True)
    assert result[4][0] == "UNKNOWN" and "RuntimeError" in result[4][1]


def test_closing_mid_stream_closes_the_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    ways = Ways(monkeypatch, MemoryAnswer([event("a"), event("b"), event("c"), END]))
    for way, service in ways.services.items():
        stream = service.stream(options())
        next(stream), next(stream)
        stream.close()
        assert stream.done and stream.result().finish.kind == "aborted"
        assert all(s.closed for s in ways.streams[way]), way


def test_the_handoff_is_taken_only_without_listeners_or_an_observer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    ways = Ways(monkeypatch, MemoryAnswer([event("a"), END]))
    for way, service in ways.services.items():
        stream = service.stream(options())
        first = next(stream._source)
        seen.append(type(first))
        stream.close()
    assert seen == [Handoff, list]
    service = ways.services["handoff"]
    remove = service.add_listener(lambda opts, next_: next_(opts))
    listened = service.stream(options())
    assert type(next(listened._source)) is list
    listened.close()
    remove()


def test_stream_batches_of_an_adapter_never_hands_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """A caller of ``stream_batches`` (no service) gets lists, each once, as before."""
    ways = Ways(monkeypatch, MemoryAnswer([event("a"), event("b"), END]))
    adapter = ways.services["handoff"].adapter_for("local")
    batches = list(adapter.stream_batches(with_cancel(options(), threading.Event())))
    assert all(type(batch) is list for batch in batches) and type(batches[-1][-1]) is Finish


def test_an_overridden_stream_batches_is_streamed_through_the_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    ways = Ways(monkeypatch, MemoryAnswer([event("a"), END]))
    adapter = ways.services["handoff"].adapter_for("local")
    calls: list[bool] = []
    original = adapter.stream_batches

    def wrapped(opts: GenerateOptions) -> Any:
        calls.append(True)
        return original(opts)

    monkeypatch.setattr(adapter, "stream_batches", wrapped)
    assert ways.services["handoff"].stream(options()).result().text == "a" and calls == [True]


# --------------------------------------------------------------------------- with_cancel


_optional = st.one_of(st.none(), st.integers(min_value=1, max_value=10_000))


@settings(max_examples=60, deadline=None)
@given(
    max_tokens=_optional,
    temperature=st.one_of(st.none(), st.floats(min_value=0, max_value=2, allow_nan=False)),
    stop=st.one_of(st.none(), st.lists(st.text(min_size=1, max_size=5), max_size=3)),
    timeout=st.one_of(st.none(), st.floats(min_value=0.5, max_value=60)),
    resumable=st.booleans(),
)
def test_with_cancel_is_dataclasses_replace(
    max_tokens: int | None, temperature: float | None, stop: list[str] | None, timeout: float | None, resumable: bool
) -> None:
    given_options = GenerateOptions(
        provider="p", model="m", messages=(Message.user("x"),), max_tokens=max_tokens, temperature=temperature,
        stop=stop, timeout=timeout, resumable=resumable,  # type: ignore[arg-type]
    )
    cancel = threading.Event()
    fast = with_cancel(given_options, cancel)
    slow = dataclasses.replace(given_options, cancel=cancel)
    assert fast == slow and repr(fast) == repr(slow) and fast.cancel is cancel
    assert all(getattr(fast, name) is getattr(slow, name) or getattr(fast, name) == getattr(slow, name)
               for name in GenerateOptions.__slots__)


def test_with_cancel_stores_sequences_altered_behind_the_dataclass_as_tuples() -> None:
    altered = GenerateOptions(provider="p", model="m", messages=(Message.user("x"),))
    object.__setattr__(altered, "messages", [Message.user("y")])
    copy = with_cancel(altered, threading.Event())
    assert type(copy.messages) is tuple and copy.messages == (Message.user("y"),)


def test_stream_policy_keeps_the_last_one_built() -> None:
    policy = RetryPolicy()
    assert stream_policy(policy, options(max_retries=None)) is policy
    assert stream_policy(policy, options(max_retries=policy.max_retries)) is policy
    first = stream_policy(policy, options(max_retries=5))
    assert first == dataclasses.replace(policy, max_retries=5)
    assert stream_policy(policy, options(max_retries=5)) is first
    other = stream_policy(policy, options(max_retries=6))
    assert other.max_retries == 6 and stream_policy(RetryPolicy(backoff_base=2.0), options(max_retries=6)).backoff_base == 2.0
