"""Watch every call: an observer printing the records of each stream, the one INFO log line
per finished stream, and (when ``opentelemetry-sdk`` is installed) an OpenTelemetry span.

Offline: a real OpenRouter stream (bundled with the package, ``demo_data``) is served on
127.0.0.1. Three streams are watched:

1. a plain one: ``StreamStarted``, ``FirstChunkRecord``, one ``AttemptRecord``,
   ``StreamFinished``;
2. one whose first attempt is rate limited (HTTP 429, ``Retry-After: 0``): two attempts,
   still exactly one ``StreamFinished``;
3. one the caller leaves after its first chunk (``break`` + ``close()``): its attempt and
   the stream reported ``aborted``, once.

    python examples/observe_calls.py
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from dataclasses import replace
from importlib.resources import files
from typing import Any

from dshstream import GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream.observe import (
    AttemptRecord,
    FirstChunkRecord,
    ObserverRecord,
    StreamFinished,
    StreamStarted,
)
from dshstream.testing import ReplayServer, Route

RATE_LIMITED = Route(
    body=b'{"error": {"message": "Rate limit exceeded: free-models-per-min", "code": 429}}',
    status=429, content_type="application/json", headers={"retry-after": "0"},
)


def watch(record: ObserverRecord) -> None:
    """The observer: called with each frozen record, never with prompt or output text."""
    if isinstance(record, StreamStarted):
        print(f"  started   {record.provider} {record.model} max_tokens={record.settings.max_tokens}")
    elif isinstance(record, FirstChunkRecord):
        print(f"  first     {record.chunk_type} after {record.time_to_first_chunk:.3f}s")
    elif isinstance(record, AttemptRecord):
        failure = f" {record.failure.code}" if record.failure else ""
        if record.failure and record.failure.status:
            failure += f" (HTTP {record.failure.status})"
        print(f"  attempt   #{record.attempt} {record.outcome}{failure}, {record.chunks} chunks, "
              f"server {record.server_address}")
    elif isinstance(record, StreamFinished):
        usage = record.usage
        spent = f"in={usage.input_tokens} out={usage.output_tokens} cost=${usage.cost}" if usage else "no usage"
        print(f"  finished  {record.kind} after {record.attempts} attempt(s), {record.chunk_count} chunks, "
              f"{spent}, response {record.response_id}")


def with_otel() -> tuple[Any, Any] | None:
    """An OtelObserver exporting to memory, when the OpenTelemetry SDK is installed."""
    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from dshstream.otel import OtelObserver

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelObserver(tracer_provider=tracing), exporter


def main() -> None:
    # the one INFO line per finished stream, from the "dshstream.observe" logger
    logging.basicConfig(stream=sys.stdout, format="  log       %(levelname)s %(name)s: %(message)s")
    logging.getLogger("dshstream").setLevel(logging.INFO)

    recording = files("dshstream").joinpath("demo_data/openrouter_reasoning.sse").read_bytes()
    otel = with_otel()
    with ReplayServer() as server:
        server.add("/plain/", recording)
        server.add("/busy/", [RATE_LIMITED, Route(body=recording)])
        # up to the first reasoning text, then a pause the caller leaves the stream in
        head = b"\n\n".join(recording.split(b"\n\n")[:5]) + b"\n\n"
        server.add("/left/", Route(body=b"", script=[head, 0.2, recording[len(head):]]))
        service = LlmService(observer=watch)
        for route in ("plain", "busy", "left"):
            # api_key and base_url only because the "provider" is the loopback server
            adapter = OpenAIChatAdapter(api_key="demo-key", base_url=f"{server.url}/{route}/v1",
                                        dialect="openrouter", observer=otel[0] if otel else None)
            service.register_adapter([route], adapter)
        options = GenerateOptions(provider="plain", model="anthropic/claude-sonnet-4.5", max_tokens=512,
                                  messages=(Message.user("Why is the sky blue?"),))

        print("1. a stream read to its end:")
        service.stream(options).result()
        print("2. a stream whose first attempt was rate limited:")
        service.stream(replace(options, provider="busy")).result()
        print("3. a stream left after its first chunk:")
        stream = service.stream(replace(options, provider="left"))
        for _chunk in stream:
            break
        stream.close()

    if otel is not None:
        print("OpenTelemetry spans (the adapters' observer):")
        for span in otel[1].get_finished_spans():
            attributes = span.attributes or {}
            print(f"  {span.name}: {span.status.status_code.name} error.type={attributes.get('error.type')} "
                  f"input_tokens={attributes.get('gen_ai.usage.input_tokens')} "
                  f"events={[event.name for event in span.events]}")


if __name__ == "__main__":
    main()
