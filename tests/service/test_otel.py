"""dshstream.otel: OpenTelemetry spans and GenAI metrics from the observer records.

With the OpenTelemetry SDK's in-memory exporter and metric reader, over the loopback
server and the real HTTP path: every way a stream can end (normal, HTTP 500 after retries,
an in-band error, a listener that raises, ``close()`` from another thread, cancel,
``break`` then garbage collection, ``KeyboardInterrupt``, a stream never iterated, an
adapter used directly, observers on both levels) yields exactly one ended span with the
right status and attributes; the token attributes follow the conventions' inclusive
input count (real Anthropic cache and xAI reasoning recordings); content only on opt-in.
Skipped without ``opentelemetry-sdk``.
"""

from __future__ import annotations

import base64
import gc
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from helpers import fake_key, fixture_bytes
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from service.test_observer import (
    BODY,
    MODEL,
    PATH,
    PROMPT,
    PROVIDER,
    SLOW,
    STOP,
    SYSTEM,
    Recorder,
    fast_retries,
    make_adapter,
    make_service,
    options,
    paused,
    server_error,
)

from core.test_parts import PNG
from dshstream import (
    AnthropicAdapter,
    GeminiAdapter,
    ImagePart,
    JsonMode,
    FinishReason,
    GenerateOptions,
    Message,
    OpenAIChatAdapter,
    StreamChunk,
    Target,
)
from dshstream.adapters import VertexGeminiAdapter
from dshstream.observe import FirstChunkRecord, StreamFinished
from dshstream._core.errors import make_failure
from dshstream._replay_server import ReplayServer
from dshstream._service import LlmService, Next
from dshstream.otel import DURATION_BUCKETS, TOKEN_BUCKETS, OtelObserver

RESPONSE_ID = "gen-1773012759-4u9w7As08eMtL75bWtu8"


class Telemetry:
    """An SDK tracer and meter provider writing to memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def observer(self, **settings: Any) -> OtelObserver:
        return OtelObserver(
            tracer_provider=self.tracer_provider, meter_provider=self.meter_provider, **settings
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def one_span(self) -> ReadableSpan:
        [span] = self.spans()
        assert (
            span.end_time is not None
            and span.start_time is not None
            and span.end_time >= span.start_time
        )
        assert span.name == f"chat {span.attributes['gen_ai.request.model']}"  # type: ignore[index]
        assert span.kind == SpanKind.CLIENT
        assert span.attributes is not None and span.attributes["gen_ai.operation.name"] == "chat"
        return span

    def points(self, name: str) -> list[tuple[HistogramDataPoint, str]]:
        data = self.reader.get_metrics_data()
        out: list[tuple[HistogramDataPoint, str]] = []
        if data is None:
            return out
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        for point in metric.data.data_points:
                            assert isinstance(point, HistogramDataPoint)
                            out.append((point, metric.unit or ""))
        return out

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    t = Telemetry()
    yield t
    t.shutdown()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def assert_failed(span: ReadableSpan, code: str) -> None:
    assert span.status.status_code == StatusCode.ERROR
    assert attrs(span)["error.type"] == code and span.status.description


# --------------------------------------------------------------------------- the normal path


def test_a_stream_is_one_client_span_with_the_genai_attributes_and_metrics(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())

    assert service.stream(options()).result().text == "Hello!"

    span = telemetry.one_span()
    a = attrs(span)
    assert span.status.status_code == StatusCode.UNSET and "error.type" not in a
    assert a["gen_ai.provider.name"] == PROVIDER and a["dshstream.provider"] == PROVIDER
    assert (
        a["gen_ai.request.model"],
        a["gen_ai.request.max_tokens"],
        a["gen_ai.request.temperature"],
    ) == (MODEL, 64, 0.25)
    assert a["gen_ai.response.id"] == RESPONSE_ID
    assert a["gen_ai.response.model"] == "anthropic/claude-4.6-sonnet-20260217"
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (254, 5)
    assert (
        a["dshstream.usage.cost"] == 0.000837
        and a["dshstream.serving_provider"] == "Amazon Bedrock"
    )
    host, port = server.url.removeprefix("http://").split(":")
    assert (a["server.address"], a["server.port"]) == (host, int(port))
    assert 0 < a["gen_ai.response.time_to_first_chunk"] < (span.end_time - span.start_time) / 1e9  # type: ignore[operator]
    assert (a["dshstream.attempts"], a["dshstream.chunk_count"], a["dshstream.finish"]) == (
        1,
        5,
        "stop",
    )
    assert [e.name for e in span.events] == ["dshstream.first_chunk", "dshstream.attempt"]
    assert dict(span.events[1].attributes or {})["dshstream.attempt.outcome"] == "ok"
    for content in (
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
    ):
        assert content not in a
    assert PROMPT not in repr(a) and "Hello!" not in repr(a)

    [(duration, unit)] = telemetry.points("gen_ai.client.operation.duration")
    assert (
        unit == "s" and duration.count == 1 and tuple(duration.explicit_bounds) == DURATION_BUCKETS
    )
    assert dict(duration.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.request.model": MODEL,
        "gen_ai.response.model": "anthropic/claude-4.6-sonnet-20260217",
        "server.address": host,
        "server.port": int(port),
    }
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: (p.sum, unit)
        for p, unit in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": (254, "{token}"), "output": (5, "{token}")}
    assert all(
        tuple(p.explicit_bounds) == TOKEN_BUCKETS
        for p, _ in telemetry.points("gen_ai.client.token.usage")
    )
    [(first, unit)] = telemetry.points("gen_ai.client.operation.time_to_first_chunk")
    assert (
        unit == "s" and first.count == 1 and first.sum == a["gen_ai.response.time_to_first_chunk"]
    )


def test_the_span_is_a_child_of_the_span_current_when_the_stream_started(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())
    tracer = telemetry.tracer_provider.get_tracer("app")

    with tracer.start_as_current_span("handle request") as parent:
        stream = service.stream(options())
    stream.result()

    chat = next(s for s in telemetry.spans() if s.name.startswith("chat "))
    assert chat.parent is not None and chat.parent.span_id == parent.get_span_context().span_id


def test_cached_input_counts_into_input_tokens_and_the_cache_attributes_are_parts_of_it(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    """dshstream's counts are disjoint; the conventions' input_tokens includes the cache."""
    server.add("/", fixture_bytes("anthropic/cache_creation_and_read_code_execution.sse"))
    service = LlmService(observer=telemetry.observer())
    service.register_adapter(
        ["anthropic"], AnthropicAdapter(api_key="k", base_url=server.url, max_retries=0)
    )

    usage = service.stream(options(provider="anthropic", model="claude-sonnet-5")).result().usage

    assert usage is not None and (
        usage.input_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    ) == (6, 6289, 3337)
    a = attrs(telemetry.one_span())
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.usage.input_tokens"] == 6 + 6289 + 3337
    assert a["gen_ai.usage.cache_read.input_tokens"] == 6289
    assert a["gen_ai.usage.cache_creation.input_tokens"] == 3337
    assert a["gen_ai.usage.output_tokens"] == 198 and a["gen_ai.response.finish_reasons"] == (
        "end_turn",
    )
    tokens = {
        dict(p.attributes or {})["gen_ai.token.type"]: p.sum
        for p, _ in telemetry.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": 6 + 6289 + 3337, "output": 198}


def test_reasoning_tokens_are_a_part_of_the_output_tokens(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add("/", fixture_bytes("xai/grok3mini_reasoning_content_text.sse"))
    service = LlmService(observer=telemetry.observer())
    service.register_adapter(
        ["xai"],
        OpenAIChatAdapter(api_key="k", base_url=f"{server.url}/v1", dialect="xai", max_retries=0),
    )

    service.stream(options(provider="xai", model="grok-3-mini")).result()

    a = attrs(telemetry.one_span())
    assert a["gen_ai.provider.name"] == "x_ai"
    assert (a["gen_ai.usage.output_tokens"], a["gen_ai.usage.reasoning.output_tokens"]) == (
        342,
        340,
    )
    assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.cache_read.input_tokens"]) == (
        1 + 11,
        11,
    )
    assert a["dshstream.usage.cost"] == 0.000172125


def test_provider_names_can_be_overridden(server: ReplayServer, telemetry: Telemetry) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(
        server, telemetry.observer(provider_names={PROVIDER: "openrouter.ai"})
    )

    service.stream(options()).result()

    assert attrs(telemetry.one_span())["gen_ai.provider.name"] == "openrouter.ai"


# --------------------------------------------------------------------------- every way to end


def test_http_500_after_retries_is_one_error_span_with_an_event_per_attempt(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, server_error())
    service, adapter = make_service(server, telemetry.observer())
    fast_retries(adapter, 2)

    service.stream(options()).result()

    span = telemetry.one_span()
    assert_failed(span, "SERVER")
    assert "upstream busy" not in (
        span.status.description or ""
    )  # the headline, never upstream text
    attempts = [dict(e.attributes or {}) for e in span.events if e.name == "dshstream.attempt"]
    assert [(e["dshstream.attempt"], e["error.type"], e["http.response.status_code"]) for e in attempts] == [
        (1, "SERVER", 500), (2, "SERVER", 500), (3, "SERVER", 500),
    ]  # fmt: skip
    assert "gen_ai.usage.input_tokens" not in attrs(
        span
    ) and "gen_ai.response.time_to_first_chunk" not in attrs(span)
    [(duration, _)] = telemetry.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {})["error.type"] == "SERVER"
    assert telemetry.points("gen_ai.client.token.usage") == []
    assert telemetry.points("gen_ai.client.operation.time_to_first_chunk") == []


def test_a_fallback_chain_names_each_target_and_its_failure_on_the_events(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add("/first" + PATH, server_error())
    server.add(PATH, BODY)
    service = LlmService(observer=telemetry.observer())
    first = OpenAIChatAdapter(
        api_key="sk-test-observe", base_url=f"{server.url}/first/v1", dialect="openrouter", max_retries=0
    )
    service.register_adapter(["first"], first)
    service.register_adapter(["second"], make_adapter(server))
    service.register_chain("chain", [Target("first", MODEL), Target("second", MODEL)])

    result = service.stream(options(provider="chain")).result()

    assert result.ok and result.metadata is not None
    [failed, served] = result.metadata.fallback
    assert failed.failure is not None and served.failure is None
    message = failed.failure.message
    assert message and "upstream busy" not in message  # the headline, never upstream text
    span = telemetry.one_span()
    attempts = [dict(e.attributes or {}) for e in span.events if e.name == "dshstream.attempt"]
    assert attempts[0] == {
        "dshstream.attempt": 1, "dshstream.attempt.outcome": "failed",
        "dshstream.attempt.duration": attempts[0]["dshstream.attempt.duration"],
        "dshstream.attempt.chunks": 0,
        "dshstream.target": 1, "dshstream.target.provider": "first", "dshstream.target.model": MODEL,
        "error.type": "SERVER", "http.response.status_code": 500, "dshstream.failure.message": message,
    }  # fmt: skip
    assert attempts[1]["dshstream.target"] == 2 and attempts[1]["dshstream.target.provider"] == "second"
    assert "error.type" not in attempts[1] and "dshstream.failure.message" not in attempts[1]
    targets = [dict(e.attributes or {}) for e in span.events if e.name == "dshstream.fallback.target"]
    assert targets == [
        {"dshstream.target": 1, "dshstream.target.provider": "first", "dshstream.target.model": MODEL,
         "dshstream.target.outcome": "failed", "error.type": "SERVER", "http.response.status_code": 500,
         "dshstream.failure.message": message},
        {"dshstream.target": 2, "dshstream.target.provider": "second", "dshstream.target.model": MODEL,
         "dshstream.target.outcome": "served"},
    ]  # fmt: skip
    assert attrs(span)["dshstream.fallback.targets"] == 2


def test_an_in_band_error_is_one_error_span(server: ReplayServer, telemetry: Telemetry) -> None:
    server.add(PATH, fixture_bytes("openrouter/midstream_error_chunk.sse"))
    service, _ = make_service(server, telemetry.observer())

    result = service.stream(options()).result()

    assert result.finish.failure is not None
    assert_failed(telemetry.one_span(), result.finish.failure.code)


def test_a_listener_that_raises_is_one_error_span(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())

    def listener(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        for chunk in next_(opts):
            yield chunk
            raise RuntimeError("listener bug")

    service.add_listener(listener)
    list(service.stream(options()))

    assert_failed(telemetry.one_span(), "UNKNOWN")


def test_close_from_another_thread_is_one_aborted_span(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, paused())
    recorder = Recorder()
    observer = telemetry.observer()

    def both(record: Any) -> None:
        observer(record)
        recorder(record)

    service, _ = make_service(server, both)
    stream = service.stream(options())
    thread = threading.Thread(target=lambda: list(stream), daemon=True)
    thread.start()
    recorder.wait_for(FirstChunkRecord)
    stream.close()
    thread.join(SLOW / 3)

    assert not thread.is_alive()
    span = telemetry.one_span()
    assert_failed(span, "ABORTED")
    assert "gen_ai.response.finish_reasons" not in attrs(span)
    assert "gen_ai.response.time_to_first_chunk" in attrs(span)


def test_the_cancel_event_is_one_aborted_span(server: ReplayServer, telemetry: Telemetry) -> None:
    server.add(PATH, paused())
    service, _ = make_service(server, telemetry.observer())
    cancel = threading.Event()
    stream = service.stream(options(cancel=cancel))
    next(stream)

    cancel.set()
    list(stream)

    assert_failed(telemetry.one_span(), "ABORTED")


def test_break_then_garbage_collection_is_one_aborted_span(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, paused())
    service, _ = make_service(server, telemetry.observer())

    stream = service.stream(options())
    for _chunk in stream:
        break
    assert telemetry.spans() == []
    del stream, _chunk
    gc.collect()

    span = telemetry.one_span()
    assert_failed(span, "ABORTED")
    assert [
        dict(e.attributes or {})["dshstream.attempt.outcome"]
        for e in span.events
        if e.name == "dshstream.attempt"
    ] == ["aborted"]


def test_keyboard_interrupt_is_one_aborted_span(server: ReplayServer, telemetry: Telemetry) -> None:
    server.add(PATH, paused())
    service, _ = make_service(server, telemetry.observer())

    def listener(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        for chunk in next_(opts):
            yield chunk
            raise KeyboardInterrupt

    service.add_listener(listener)
    with pytest.raises(KeyboardInterrupt):
        list(service.stream(options()))

    assert_failed(telemetry.one_span(), "ABORTED")


def test_a_stream_never_iterated_is_one_aborted_span_and_no_time_to_first_chunk(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())

    stream = service.stream(options())
    del stream
    gc.collect()

    span = telemetry.one_span()
    assert_failed(span, "ABORTED")
    assert attrs(span)["dshstream.attempts"] == 0 and span.events == ()
    assert telemetry.points("gen_ai.client.operation.time_to_first_chunk") == []
    assert len(telemetry.points("gen_ai.client.operation.duration")) == 1


def test_an_adapter_used_directly_is_one_span(server: ReplayServer, telemetry: Telemetry) -> None:
    server.add(PATH, BODY)
    adapter = make_adapter(server, observer=telemetry.observer())

    list(adapter.stream(options()))

    span = telemetry.one_span()
    assert (
        span.status.status_code == StatusCode.UNSET
        and attrs(span)["gen_ai.response.id"] == RESPONSE_ID
    )


def test_one_otel_observer_on_the_service_and_its_adapter_is_one_span(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    observer = telemetry.observer()
    adapter = make_adapter(server, observer=observer)
    service, _ = make_service(server, observer, adapter=adapter)

    service.stream(options()).result()

    telemetry.one_span()
    assert len(telemetry.points("gen_ai.client.operation.duration")) == 1
    [(duration, _)] = telemetry.points("gen_ai.client.operation.duration")
    assert duration.count == 1


# --------------------------------------------------------------------------- content


def test_capture_content_records_messages_instructions_output_and_stop_sequences(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer(capture_content=True))

    service.stream(options()).result()

    a = attrs(telemetry.one_span())
    assert json.loads(a["gen_ai.system_instructions"]) == [{"type": "text", "content": SYSTEM}]
    assert json.loads(a["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}
    ]
    assert json.loads(a["gen_ai.output.messages"]) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Hello!"}],
            "finish_reason": "stop",
        }
    ]
    assert a["gen_ai.request.stop_sequences"] == (STOP,)
    assert "sk-test-observe" not in repr(a)


def test_tool_calls_are_captured_as_tool_call_parts(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, fixture_bytes("openai/single_tool_call.sse"))
    service, _ = make_service(server, telemetry.observer(capture_content=True))

    result = service.stream(options()).result()

    [call] = result.tool_calls
    [message] = json.loads(attrs(telemetry.one_span())["gen_ai.output.messages"])
    assert message["finish_reason"] == "tool_call"
    assert message["parts"] == [
        {
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": json.loads(call.arguments),
        }
    ]


# --------------------------------------------------------------------------- the conventions' newer attributes


class StartAttributes(SpanProcessor):
    """A span processor that keeps each span's attributes as they were at its start (what
    a sampler sees)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.seen.append(dict(span.attributes or {}))


def test_stream_output_type_server_and_provider_are_set_at_the_span_start(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    started = StartAttributes()
    telemetry.tracer_provider.add_span_processor(started)
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())

    service.stream(options()).result()
    service.stream(options(response_format=JsonMode())).result()

    host, port = server.url.removeprefix("http://").split(":")
    text, json_mode = started.seen
    for at_start in (text, json_mode):
        assert at_start["gen_ai.request.stream"] is True
        assert (at_start["server.address"], at_start["server.port"]) == (host, int(port))
        assert (at_start["gen_ai.operation.name"], at_start["gen_ai.provider.name"]) == ("chat", PROVIDER)
    assert (text["gen_ai.output.type"], json_mode["gen_ai.output.type"]) == ("text", "json")
    assert [attrs(s)["gen_ai.output.type"] for s in telemetry.spans()] == ["text", "json"]


def test_the_provider_name_is_the_adapters_not_the_routes(server: ReplayServer, telemetry: Telemetry) -> None:
    """An AnthropicAdapter registered as "claude" (pointed at a loopback proxy) is anthropic."""
    server.add("/", fixture_bytes("anthropic/text.sse"))
    service = LlmService(observer=telemetry.observer())
    service.register_adapter(["claude"], AnthropicAdapter(api_key="k", base_url=server.url, max_retries=0))

    service.stream(options(provider="claude", model="claude-haiku-4-5")).result()

    a = attrs(telemetry.one_span())
    assert (a["gen_ai.provider.name"], a["dshstream.provider"]) == ("anthropic", "claude")
    [(duration, _)] = telemetry.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {})["gen_ai.provider.name"] == "anthropic"


#: a bearer token for Vertex (long and random: every key an adapter sends is redacted everywhere)
VERTEX_TOKEN = fake_key("ya29.", 60)


@pytest.mark.parametrize(
    ("make", "provider_name"),
    [
        (lambda url: GeminiAdapter(api_key="k", base_url=url, max_retries=0), "gcp.gemini"),
        (lambda url: VertexGeminiAdapter(api_key=lambda: VERTEX_TOKEN, base_url=url, project="p", location="global", max_retries=0),
         "gcp.vertex_ai"),
    ],
    ids=["gemini", "vertex"],
)
def test_gemini_is_generate_content(server: ReplayServer, telemetry: Telemetry, make: Any, provider_name: str) -> None:
    server.add("/", fixture_bytes("gemini/text.sse"))
    service = LlmService(observer=telemetry.observer())
    service.register_adapter(["g"], make(server.url))

    assert service.stream(options(provider="g", model="gemini-2.5-flash")).result().ok

    [span] = telemetry.spans()
    a = attrs(span)
    assert span.name == "generate_content gemini-2.5-flash"
    assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"]) == ("generate_content", provider_name)
    [(duration, _)] = telemetry.points("gen_ai.client.operation.duration")
    assert dict(duration.attributes or {})["gen_ai.operation.name"] == "generate_content"


def test_time_per_output_chunk_is_a_point_per_content_read_after_the_first(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, paused(0.2))
    service, _ = make_service(server, telemetry.observer())

    service.stream(options()).result()

    points = telemetry.points("gen_ai.client.operation.time_per_output_chunk")
    [(point, unit)] = points  # one series: the stream's attributes
    assert unit == "s" and tuple(point.explicit_bounds) == DURATION_BUCKETS
    assert point.count >= 1 and point.max >= 0.15  # the pause is one of the gaps
    assert dict(point.attributes or {})["gen_ai.provider.name"] == PROVIDER
    # a stream whose content came in one read has no gap to report (in memory: over a
    # socket, one write may still arrive in two reads on a busy machine)
    from dshstream.testing import MemoryAnswer, MemoryTransport

    fresh = Telemetry()
    try:
        whole = MemoryTransport(handler=lambda sent: MemoryAnswer(BODY))
        service, _ = make_service(server, fresh.observer(), transport=whole)
        service.stream(options()).result()
        assert len(whole.requests) == 1
        assert fresh.points("gen_ai.client.operation.time_per_output_chunk") == []
    finally:
        fresh.shutdown()


def test_captured_media_parts_use_the_conventions_uri_and_blob_parts(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    url_part = ImagePart.from_url("https://example.com/cat.png")
    inline = ImagePart.from_bytes(PNG)
    message = Message.user("What is in these?", url_part, inline)
    for observer, with_bytes in ((telemetry.observer(capture_content=True), False),
                                 (telemetry.observer(capture_content=True, capture_media=True), True)):
        service, _ = make_service(server, observer)
        service.stream(options(messages=(message,))).result()
        [captured] = json.loads(attrs(telemetry.spans()[-1])["gen_ai.input.messages"])
        blob: dict[str, Any] = {"type": "blob", "modality": "image", "mime_type": "image/png"}
        if with_bytes:
            blob["content"] = base64.b64encode(PNG).decode("ascii")
        assert captured["parts"] == [
            {"type": "text", "content": "What is in these?"},
            {"type": "uri", "modality": "image", "mime_type": "image/png", "uri": "https://example.com/cat.png"},
            blob,
        ]


# --------------------------------------------------------------------------- packaging


def test_import_dshstream_never_imports_opentelemetry() -> None:
    code = "import sys, dshstream; dshstream.LlmService; print(any(m.startswith('opentelemetry') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_otel_observer_is_usable_with_the_global_providers() -> None:
    observer = OtelObserver()  # the API's no-op providers until the application sets real ones
    assert observer.capture_content is False
    recorder = Recorder()

    def both(record: Any) -> None:  # every record kind is accepted without a configured SDK
        observer(record)
        recorder(record)

    service = LlmService(observer=both)
    stream = service.stream(options(provider="nowhere"))
    assert stream.result().finish.failure is not None
    assert recorder.one_stream().code == "NO_ADAPTER"


def test_options_the_conventions_do_not_cover_are_not_lost(
    server: ReplayServer, telemetry: Telemetry
) -> None:
    server.add(PATH, BODY)
    service, _ = make_service(server, telemetry.observer())

    service.stream(options(reasoning_effort="high", messages=(Message.user("x"),))).result()

    assert attrs(telemetry.one_span())["dshstream.request.reasoning_effort"] == "high"


def test_a_finish_heard_without_its_start_is_still_one_ended_span(telemetry: Telemetry) -> None:
    observer = telemetry.observer()
    failure = make_failure("RATE_LIMIT", "p: rate limited", provider=PROVIDER, status=429)
    observer(
        StreamFinished(
            stream_id="late-1",
            provider=PROVIDER,
            model=MODEL,
            finish=FinishReason(kind="error", failure=failure),
            usage=None,
            duration=0.5,
            time_to_first_chunk=None,
            chunk_count=0,
            attempts=1,
        )
    )

    span = telemetry.one_span()
    assert_failed(span, "RATE_LIMIT")
    assert (
        span.status.description == "p: rate limited"
        and attrs(span)["dshstream.stream_id"] == "late-1"
    )


def test_without_opentelemetry_the_module_imports_and_the_observer_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "from dshstream.otel import OtelObserver\n"
        "try:\n"
        "    OtelObserver()\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'dshstream[otel]'" in out.stdout
