"""A proxy that echoes the caller's key into what it answers: the response ``id``, the
``model``, OpenRouter's ``provider`` (the serving backend), the finish reason, the request
id header. Every field derived from the response is checked where the observer records are
built (``_observe``, records.py rule 6), so nothing that reads the records sees the key:
the observer itself, the structured ``record.dshstream`` dict of the INFO line (what a JSON
log handler writes) and the OpenTelemetry span and metric attributes. Loopback only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from service.test_observer import Recorder

from dshstream import OpenAIChatAdapter
from dshstream._core.log import ROOT_LOGGER_NAME
from dshstream._core.records import StreamFinished
from dshstream._core.request import GenerateOptions, Message
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

# No known key shape: only exact redaction of the registered key can catch it.
KEY = "gw-echo.Qz19Lm02Np38Rs77Tv"
PATH = "/v1/chat/completions"


def echoing_body(key: str, finish: str = "stop") -> bytes:
    """An OpenRouter-style stream whose id, model and provider carry ``key``."""
    head = {"id": f"gen-{key}", "object": "chat.completion.chunk", "model": f"m/{key}", "provider": f"via {key}"}
    events = [
        {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello!"}, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}},
    ]
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


class JsonHandler(logging.Handler):
    """What a JSON log handler does: writes ``record.dshstream`` as it is."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        facts = getattr(record, "dshstream", None)
        if facts is not None:
            self.lines.append(json.dumps({"message": record.getMessage(), **facts}))


@pytest.fixture
def json_log() -> Iterator[JsonHandler]:
    handler = JsonHandler()
    root = logging.getLogger(ROOT_LOGGER_NAME)
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def stream_once(server: ReplayServer, observer: Any, finish: str = "stop") -> tuple[str, StreamFinished | None]:
    server.add(PATH, Route(body=echoing_body(KEY, finish), headers={"x-request-id": f"req-{KEY}"}))
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0)
    service = LlmService(observer=observer)
    service.register_adapter(["openrouter"], adapter)
    result = service.stream(GenerateOptions(provider="openrouter", model="m", messages=(Message.user("hi"),))).result()
    recorder = observer if isinstance(observer, Recorder) else None
    return result.text, (recorder.one_stream() if recorder is not None else None)


def test_an_echoed_key_reaches_no_observer_record(server: ReplayServer, json_log: JsonHandler) -> None:
    recorder = Recorder()
    text, finished = stream_once(server, recorder)
    assert text == "Hello!" and finished is not None
    assert finished.kind == "stop" and finished.usage is not None and finished.usage.output_tokens == 2
    # each field that carried the key is dropped (a redacted id would be a wrong id)
    assert (finished.response_id, finished.response_model, finished.serving_provider) == (None, None, None)
    assert finished.request_id is None and finished.finish.raw == "stop"
    assert all(KEY not in repr(record) for record in recorder.records)
    [line] = json_log.lines
    assert KEY not in line
    facts = json.loads(line)
    assert facts["response_id"] is None and facts["response_model"] is None and facts["serving_provider"] is None
    assert facts["finish"] == "stop" and facts["output_tokens"] == 2


def test_fields_without_a_secret_are_kept(server: ReplayServer) -> None:
    """The check drops only what carries a secret: the same stream from an honest server
    keeps every field."""
    recorder = Recorder()
    server.add(PATH, Route(body=echoing_body("plain-value", "end plain-value"), headers={"x-request-id": "req-1"}))
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0)
    service = LlmService(observer=recorder)
    service.register_adapter(["openrouter"], adapter)
    service.stream(GenerateOptions(provider="openrouter", model="m", messages=(Message.user("hi"),))).result()
    finished = recorder.one_stream()
    assert finished.response_id == "gen-plain-value" and finished.response_model == "m/plain-value"
    assert finished.serving_provider == "via plain-value" and finished.request_id == "req-1"
    assert finished.finish.raw == "end plain-value"


def test_an_echoed_key_reaches_no_span_or_metric_attribute(server: ReplayServer) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from dshstream.otel import OtelObserver

    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    try:
        text, _ = stream_once(server, OtelObserver(tracer_provider=tracer_provider, meter_provider=meter_provider))
        assert text == "Hello!"
        [span] = exporter.get_finished_spans()
        attributes = dict(span.attributes or {})
        for name in ("gen_ai.response.id", "gen_ai.response.model", "dshstream.serving_provider",
                     "dshstream.request_id"):
            assert name not in attributes
        assert attributes["gen_ai.response.finish_reasons"] == ("stop",)  # the kind, not the echoed word
        events = [dict(event.attributes or {}) for event in span.events]
        assert KEY not in repr(attributes) + repr(events) + span.name
        metrics = reader.get_metrics_data()
        assert metrics is not None and KEY not in metrics.to_json()
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


def test_a_key_echoed_as_the_finish_reason_reaches_no_record(server: ReplayServer, json_log: JsonHandler) -> None:
    """An unknown finish word becomes the failure code, upper-cased (``STOP_GW_ECHO_...``),
    which exact redaction alone would not recognize: the folded check drops it."""
    recorder = Recorder()
    stream_once(server, recorder, finish=f"stop {KEY}")
    finished = recorder.one_stream()
    assert finished.kind == "error" and finished.finish.raw is None
    failure = finished.finish.failure
    assert failure is not None and failure.code == "UNKNOWN"
    folded = "".join(ch if ch.isalnum() else "_" for ch in KEY.upper())
    for text in [repr(record) for record in recorder.records] + json_log.lines:
        assert KEY not in text and folded not in text.upper().replace(".", "_")
    assert json.loads(json_log.lines[0])["code"] == "UNKNOWN"
