"""OpenTelemetry for dshstream: one span and the GenAI client metrics per stream, from the
observer records, following the OpenTelemetry semantic conventions for generative AI.

Install the extra (``opentelemetry-api`` only; the SDK and exporters are the
application's choice)::

    pip install "dshstream[otel]"

    >>> from dshstream import LlmService
    >>> from dshstream.otel import OtelObserver
    >>> service = LlmService(observer=OtelObserver())

This is dshstream's one public module besides the package itself: it is an optional
integration, and ``import dshstream`` never imports it (nor OpenTelemetry).

Contract:

1. One span per stream (``OtelObserver`` is an ``observer=``; see
   :mod:`dshstream._observe` for when records come): named ``{operation} {model}``, kind
   ``CLIENT``, started at the stream's start (``StreamStarted.started_at``, as a child of
   the span current when the stream started) and ended exactly once, at the stream's
   ``StreamFinished`` — whichever way the stream ended (closed, cancelled, interrupted,
   abandoned and garbage-collected). An ``error`` or ``aborted`` finish sets status
   ``ERROR`` with the failure's classified headline (never upstream text) and
   ``error.type`` = the failure code (``RATE_LIMIT``, ``ABORTED``...); success leaves the
   status unset, as the conventions ask.
2. Span attributes, at the span's start (so a sampler sees them): ``gen_ai.operation.name``
   (the adapter's: ``chat``, Gemini's and Vertex Gemini's ``generate_content``),
   ``gen_ai.provider.name`` (the conventions' well-known name of the API the adapter
   speaks — ``openai``, ``anthropic``, ``aws.bedrock``, ``azure.ai.openai``,
   ``gcp.gemini``, ``gcp.vertex_ai``, ``deepseek``, ``groq``, ``mistral_ai``, ``x_ai``...
   — from the adapter (``LlmAdapter.telemetry``), not from the route's name: an
   ``AnthropicAdapter`` registered as ``"claude"`` is ``anthropic``; when the adapter
   names none, the route's well-known name (:data:`PROVIDER_NAMES`) or the route itself;
   ``provider_names=`` overrides by route), ``gen_ai.request.stream`` (``true``: every
   dshstream request streams), ``gen_ai.output.type`` (``json`` when a JSON schema or JSON
   mode is asked for, else ``text``), ``server.address`` / ``server.port`` (where the
   request goes; at the end, the host the last attempt went to),
   ``gen_ai.request.model`` / ``max_tokens`` / ``temperature``,
   ``gen_ai.response.id`` / ``model`` / ``finish_reasons`` (the provider's own word when it
   gave one), ``gen_ai.response.time_to_first_chunk`` (seconds), the usage attributes
   (rule 4), and dshstream's own: ``dshstream.provider`` (the route), ``dshstream.stream_id``,
   ``dshstream.attempts``, ``dshstream.chunk_count``, ``dshstream.finish`` (the finish
   kind), ``dshstream.usage.cost`` (the provider-reported cost in USD: the conventions have
   no cost attribute), ``dshstream.serving_provider``, ``dshstream.request_id``. Each HTTP
   attempt is a span event ``dshstream.attempt`` (number, outcome, duration, chunks,
   ``error.type``, ``http.response.status_code``); the first content chunk is an event
   ``dshstream.first_chunk``.
   A stream sent to a fallback chain (``LlmService.register_chain``): each attempt event
   also names its target (``dshstream.target``: its position; ``dshstream.target.provider``,
   ``dshstream.target.model``; ``dshstream.failure.message``: the failure's classified
   headline), a target skipped before anything was sent is an attempt event with outcome
   ``skipped``; at the end, one event ``dshstream.fallback.target`` per target tried, in
   order (position, provider, model, outcome, ``error.type``, message), the attributes
   ``dshstream.fallback.served_by`` (``provider/model``) and
   ``dshstream.fallback.targets`` (how many were tried), and ``gen_ai.provider.name`` (on
   the span and the metrics) becomes the serving target's provider.
3. Metrics (histograms, the conventions' units; the conventions' explicit bucket
   boundaries are given as advice where the API takes it, opentelemetry-api >= 1.28):
   ``gen_ai.client.operation.duration`` (``s``, every stream),
   ``gen_ai.client.token.usage`` (``{token}``, one point per ``gen_ai.token.type``,
   ``input`` and ``output``, when the provider reported usage) and
   ``gen_ai.client.operation.time_to_first_chunk`` (``s``, streams whose content
   arrived) and ``gen_ai.client.operation.time_per_output_chunk`` (``s``: one point per
   read with content after the first, the time since the previous one — chunks decoded
   from one network read arrive together; at most ``MAX_CHUNK_GAPS`` per stream). Their
   attributes: operation, provider, request and response model, server address and
   port, and ``error.type`` on failures.
4. Token counts. dshstream's counts are **disjoint**: ``TokenUsage.input_tokens`` is the
   uncached input only, beside ``cache_read_tokens`` and ``cache_write_tokens``. The
   conventions' ``gen_ai.usage.input_tokens`` "SHOULD include all types of input tokens,
   including cached tokens", and ``gen_ai.usage.cache_read.input_tokens`` /
   ``gen_ai.usage.cache_creation.input_tokens`` "SHOULD be included in
   gen_ai.usage.input_tokens". So ``gen_ai.usage.input_tokens`` =
   ``input_tokens + cache_read_tokens + cache_write_tokens``
   (:attr:`TokenUsage.total_input_tokens`), and the two cache attributes are the cache
   counts as they are — parts of that total, never to be added to it. Output needs no
   mapping: ``gen_ai.usage.output_tokens`` = ``output_tokens``, which already includes the
   reasoning tokens, and ``gen_ai.usage.reasoning.output_tokens`` = ``reasoning_tokens`` is
   a part of it. The ``input`` point of ``gen_ai.client.token.usage`` is the same
   inclusive (billed) total.
5. Content is off by default. With ``capture_content=True`` (which also makes the records
   carry it): ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
   ``gen_ai.output.messages`` (JSON in the conventions' message schema: text, reasoning,
   tool-call and tool-call-response parts; a media part by URL is a ``uri`` part, one
   with inline bytes a ``blob`` part — ``mime_type`` and ``modality`` (``image``,
   ``document``, ``audio``) — as is a generated file; the bytes themselves, base64 as the
   ``content``, only with ``capture_media=True``, since a span attribute of megabytes
   breaks exporters) and ``gen_ai.request.stop_sequences``.
6. Thread-safe; never raises into a stream (an observer's failure is logged by
   dshstream). Spans of streams still open live in a dict until their finish, which
   dshstream guarantees.

References (the GenAI conventions, now in ``open-telemetry/semantic-conventions-genai``;
formerly ``open-telemetry/semantic-conventions`` ``docs/gen-ai/``): ``gen-ai-spans.md``
(span name ``{gen_ai.operation.name} {gen_ai.request.model}``, kind ``CLIENT``, the
request/response/usage attributes, ``error.type``, content opt-in),
``gen-ai-metrics.md`` (``gen_ai.client.token.usage`` with ``gen_ai.token.type``,
``gen_ai.client.operation.duration``, ``gen_ai.client.operation.time_to_first_chunk``:
"SHOULD be reported for streaming calls"; the bucket boundaries below), the attribute
registry ``registry/attributes/gen-ai.md`` (``gen_ai.provider.name`` replacing
``gen_ai.system`` and its well-known values; the cache and reasoning token attributes),
and ``gen-ai-input-messages.json`` / ``gen-ai-output-messages.json`` (the message schema).
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._core.parts import MediaPart
from ._core.records import AttemptRecord, FirstChunkRecord, ObserverRecord, StreamFinished, StreamStarted
from ._core.request import Message
from ._core.types import (
    FileBlock,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    TargetOutcome,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ._version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, TracerProvider
    from opentelemetry.util.types import AttributeValue

__all__ = ["PROVIDER_NAMES", "OtelObserver"]

#: dshstream route -> the conventions' well-known ``gen_ai.provider.name``
PROVIDER_NAMES: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "azure-responses": "azure.ai.openai",
    "gemini": "gcp.gemini",
    "gemini-interactions": "gcp.gemini",
    "vertex": "gcp.vertex_ai",
    "vertex-anthropic": "gcp.vertex_ai",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "xai-chat": "x_ai",
    "perplexity": "perplexity",
    "cohere": "cohere",
}
#: gen_ai.client.operation.duration and time_to_first_chunk (seconds)
DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
#: gen_ai.client.token.usage
TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
#: a finish kind in the conventions' finish-reason words (when the provider gave none)
_FINISH_WORDS = {
    "stop": "stop",
    "tool-calls": "tool_call",
    "max-tokens": "length",
    "error": "error",
}


class OtelObserver:
    """An ``observer=`` that turns dshstream's records into OpenTelemetry spans and GenAI
    metrics (see the module docstring). ``tracer_provider``/``meter_provider`` default to
    the global ones; ``capture_content`` opts in to prompt and output text."""

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        provider_names: Mapping[str, str] | None = None,
        capture_media: bool = False,
    ) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as exc:  # the extra is not installed
            raise ImportError(
                "dshstream.otel needs the OpenTelemetry API: pip install 'dshstream[otel]'"
            ) from exc
        #: read by dshstream: records carry prompt and output text only when this is true
        self.capture_content = capture_content is True
        #: media bytes in captured messages (rule 5)
        self.capture_media = capture_media is True
        #: read by dshstream: records carry the gaps between content reads (rule 3)
        self.chunk_gaps = True
        #: by route, over what the adapter says (rule 2)
        self.overrides: dict[str, str] = dict(provider_names or {})
        self.provider_names: dict[str, str] = {**PROVIDER_NAMES, **self.overrides}
        self._tracer = trace.get_tracer("dshstream", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("dshstream", __version__, meter_provider=meter_provider)
        self._duration = _histogram(
            meter,
            "gen_ai.client.operation.duration",
            "s",
            "GenAI operation duration.",
            DURATION_BUCKETS,
        )
        self._tokens = _histogram(
            meter,
            "gen_ai.client.token.usage",
            "{token}",
            "Number of input and output tokens used.",
            TOKEN_BUCKETS,
        )
        self._first_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            "Time to receive the first chunk, from the request to the first chunk of the response stream.",
            DURATION_BUCKETS,
        )
        self._per_chunk = _histogram(
            meter,
            "gen_ai.client.operation.time_per_output_chunk",
            "s",
            "Time per output chunk, recorded for each chunk received after the first one.",
            DURATION_BUCKETS,
        )
        #: the streams not finished yet, by (stream id, level): their span, and the
        #: operation and provider names their start settled
        self._open: dict[tuple[str, str], tuple[Span, str, str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OtelObserver(capture_content={self.capture_content}, open_spans={len(self._open)})"

    def __call__(self, record: ObserverRecord) -> None:
        if isinstance(record, StreamStarted):
            self._started(record)
        elif isinstance(record, FirstChunkRecord):
            span = self._span_of(record.stream_id, record.level)
            if span is not None:
                span.add_event("dshstream.first_chunk", {"dshstream.chunk_type": record.chunk_type})
        elif isinstance(record, AttemptRecord):
            span = self._span_of(record.stream_id, record.level)
            if span is not None:
                span.add_event("dshstream.attempt", _attempt_attributes(record))
        elif isinstance(record, StreamFinished):
            self._finished(record)

    # ------------------------------------------------------------------ spans

    def _provider_name(self, provider: str, said: str | None = None) -> str:
        """The route's override, else what the adapter ``said``, else the route's
        well-known name, else the route (rule 2)."""
        override = self.overrides.get(provider)
        if override is not None:
            return override
        return said or self.provider_names.get(provider, provider)

    @staticmethod
    def _operation_attributes(operation: str, provider_name: str, model: str) -> dict[str, AttributeValue]:
        """What a stream's span and its metric points both carry: the operation, the
        provider's name and the requested model (rules 2, 3)."""
        return {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": provider_name,
            "gen_ai.request.model": model,
        }

    def _span_attributes(
        self, record: StreamStarted | StreamFinished, operation: str, provider_name: str
    ) -> dict[str, AttributeValue]:
        """A stream's span attributes from its start (rule 2)."""
        return {
            **self._operation_attributes(operation, provider_name, record.model),
            "gen_ai.request.stream": True,
            "dshstream.provider": record.provider,
            "dshstream.stream_id": record.stream_id,
        }

    def _span_of(self, stream_id: str, level: str) -> Span | None:
        with self._lock:
            found = self._open.get((stream_id, level))
        return found[0] if found is not None else None

    def _started(self, record: StreamStarted) -> None:
        from opentelemetry.trace import SpanKind

        settings = record.settings
        about = record.telemetry
        operation = about.operation_name if about is not None else "chat"
        provider_name = self._provider_name(record.provider, about.provider_name if about is not None else None)
        attributes = self._span_attributes(record, operation, provider_name)
        attributes["gen_ai.output.type"] = settings.output_type
        _put(
            attributes,
            ("gen_ai.request.max_tokens", settings.max_tokens),
            ("gen_ai.request.temperature", settings.temperature),
            ("dshstream.request.reasoning_effort", settings.reasoning_effort),
        )
        if about is not None:
            _put_server(attributes, about.server_address, about.server_port)
        if self.capture_content:
            if settings.stop_sequences:
                attributes["gen_ai.request.stop_sequences"] = list(settings.stop_sequences)
            if record.messages is not None:
                system, messages = _input_messages(record.messages, self.capture_media)
                if system:
                    attributes["gen_ai.system_instructions"] = _dumps(system)
                attributes["gen_ai.input.messages"] = _dumps(messages)
        span = self._tracer.start_span(
            f"{operation} {record.model}",
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=int(record.started_at * 1e9),
        )
        with self._lock:
            self._open[(record.stream_id, record.level)] = (span, operation, provider_name)

    def _finished(self, record: StreamFinished) -> None:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        with self._lock:
            found = self._open.pop((record.stream_id, record.level), None)
        if found is not None:
            span, operation, provider_name = found
        else:  # a finish without its start (the observer was attached late)
            operation, provider_name = "chat", self._provider_name(record.provider)
            span = self._tracer.start_span(
                f"{operation} {record.model}",
                kind=SpanKind.CLIENT,
                attributes=self._span_attributes(record, operation, provider_name),
            )
        served = record.served_by
        metric_attributes = self._operation_attributes(operation, provider_name, record.model)
        if served is not None:  # a fallback chain: the provider that served
            metric_attributes["gen_ai.provider.name"] = self._provider_name(served.provider)
        attributes: dict[str, AttributeValue] = {
            "dshstream.finish": record.kind,
            "dshstream.attempts": record.attempts,
            "dshstream.chunk_count": record.chunk_count,
        }
        _put(metric_attributes, ("gen_ai.response.model", record.response_model or None))
        _put_server(metric_attributes, record.server_address, record.server_port)
        failure = record.finish.failure
        if failure is not None:
            metric_attributes["error.type"] = failure.code
        attributes.update(metric_attributes)
        reasons = _finish_reasons(record.finish)
        _put(
            attributes,
            ("gen_ai.response.id", record.response_id or None),
            ("gen_ai.response.finish_reasons", list(reasons) if reasons else None),
            ("gen_ai.response.time_to_first_chunk", record.time_to_first_chunk),
            ("dshstream.serving_provider", record.serving_provider or None),
            ("dshstream.request_id", record.request_id or None),
        )
        usage = record.usage
        if usage is not None:
            attributes["gen_ai.usage.input_tokens"] = usage.total_input_tokens
            attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
            _put(
                attributes,
                ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
                ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
                ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
                ("dshstream.usage.cost", usage.cost),
            )
        if self.capture_content and record.output is not None:
            attributes["gen_ai.output.messages"] = _dumps(
                [
                    {
                        "role": "assistant",
                        "parts": _parts(record.output, self.capture_media),
                        "finish_reason": _finish_word(record.finish),
                    }
                ]
            )
        if record.fallback:
            for entry in record.fallback:
                span.add_event("dshstream.fallback.target", _target_attributes(entry))
            attributes["dshstream.fallback.targets"] = len(record.fallback)
            if served is not None:
                attributes["dshstream.fallback.served_by"] = served.name
        span.set_attributes(attributes)
        if failure is not None:
            span.set_status(Status(StatusCode.ERROR, failure.message))
        span.end()
        self._duration.record(record.duration, metric_attributes)
        if record.time_to_first_chunk is not None:
            self._first_chunk.record(record.time_to_first_chunk, metric_attributes)
        for gap in record.chunk_gaps:
            self._per_chunk.record(gap, metric_attributes)
        if usage is not None:
            self._tokens.record(
                usage.total_input_tokens, {**metric_attributes, "gen_ai.token.type": "input"}
            )
            self._tokens.record(
                usage.output_tokens, {**metric_attributes, "gen_ai.token.type": "output"}
            )


# --------------------------------------------------------------------------- helpers


def _histogram(
    meter: Meter, name: str, unit: str, description: str, buckets: Sequence[float]
) -> Histogram:
    try:
        return meter.create_histogram(
            name, unit, description, explicit_bucket_boundaries_advisory=buckets
        )
    except TypeError:  # opentelemetry-api before 1.28 takes no advice
        return meter.create_histogram(name, unit, description)


def _put(attributes: dict[str, AttributeValue], *items: tuple[str, AttributeValue | None]) -> None:
    """Set each attribute whose value is given (not ``None``)."""
    for key, value in items:
        if value is not None:
            attributes[key] = value


def _put_server(attributes: dict[str, AttributeValue], address: str | None, port: int | None) -> None:
    """``server.address``, and ``server.port`` beside it, where the request went (rule 2)."""
    if address:
        attributes["server.address"] = address
        if port is not None:
            attributes["server.port"] = port


def _failure_attributes(failure: LlmFailure, *, message: bool) -> dict[str, AttributeValue]:
    """A failure's ``error.type``, its classified headline where asked (a fallback chain's:
    rule 2) and its HTTP status."""
    attributes: dict[str, AttributeValue] = {"error.type": failure.code}
    if message:
        attributes["dshstream.failure.message"] = failure.message
    if failure.status is not None:
        attributes["http.response.status_code"] = failure.status
    return attributes


def _target_names(position: int, provider: str, model: str) -> dict[str, AttributeValue]:
    """Which fallback target (rule 2)."""
    return {"dshstream.target": position, "dshstream.target.provider": provider, "dshstream.target.model": model}


def _attempt_attributes(record: AttemptRecord) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        "dshstream.attempt": record.attempt,
        "dshstream.attempt.outcome": record.outcome,
        "dshstream.attempt.duration": record.duration,
        "dshstream.attempt.chunks": record.chunks,
    }
    if record.target is not None:  # a fallback chain's attempt (rule 2)
        attributes.update(_target_names(record.target, record.provider, record.model))
    if record.failure is not None:
        attributes.update(_failure_attributes(record.failure, message=record.target is not None))
    return attributes


def _target_attributes(entry: TargetOutcome) -> dict[str, AttributeValue]:
    """One fallback target's outcome as an event's attributes (rule 2)."""
    attributes = _target_names(entry.position, entry.provider, entry.model)
    attributes["dshstream.target.outcome"] = entry.outcome
    if entry.failure is not None:
        attributes.update(_failure_attributes(entry.failure, message=True))
    return attributes


def _finish_word(finish: FinishReason) -> str:
    failure = finish.failure
    if failure is not None and failure.category == "content_blocked":
        return "content_filter"
    return _FINISH_WORDS.get(finish.kind, "error")


def _finish_reasons(finish: FinishReason) -> tuple[str, ...]:
    """The provider's own word when it gave one; none for a stream that was cut off."""
    if finish.raw:
        return (finish.raw,)
    if finish.kind == "aborted":
        return ()
    return (_finish_word(finish),)


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # truncated arguments stay the raw text they were


#: a media part's kind -> the conventions' modality
_MODALITIES = {"image": "image", "document": "document", "audio": "audio"}


def _media_part(item: MediaPart | FileBlock, with_bytes: bool) -> dict[str, Any]:
    """A media part or generated file as the conventions' ``uri`` or ``blob`` part (rule 5)."""
    if isinstance(item, FileBlock):
        media_type: str | None = item.media_type
        modality = media_type.partition("/")[0] if media_type else "file"
        modality = {"application": "document", "text": "document"}.get(modality, modality)
        url: str | None = None
        data: bytes | None = item.data
    else:
        media_type, modality, url, data = item.media_type, _MODALITIES.get(item.kind, item.kind), item.url, item.data
    part: dict[str, Any] = {"type": "uri" if url is not None else "blob", "modality": modality}
    if media_type:
        part["mime_type"] = media_type
    if url is not None:
        part["uri"] = url
    elif with_bytes and data is not None:
        part["content"] = base64.b64encode(data).decode("ascii")
    return part


def _parts(items: Sequence[object], with_bytes: bool = False) -> list[dict[str, Any]]:
    """Blocks (and media parts) in the conventions' message-part schema."""
    parts: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, TextBlock):
            parts.append({"type": "text", "content": item.text})
        elif isinstance(item, ReasoningBlock):
            parts.append({"type": "reasoning", "content": item.text})
        elif isinstance(item, ToolCallBlock):
            parts.append(
                {
                    "type": "tool_call",
                    "id": item.id,
                    "name": item.name,
                    "arguments": _arguments(item.arguments),
                }
            )
        elif isinstance(item, ToolResultBlock):
            parts.append(
                {"type": "tool_call_response", "id": item.call_id, "response": item.content}
            )
        elif isinstance(item, (MediaPart, FileBlock)):
            parts.append(_media_part(item, with_bytes))
        else:  # other parts: their kind only
            parts.append({"type": type(item).__name__})
    return parts


def _input_messages(
    messages: Sequence[Message], with_bytes: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, the other messages) in the conventions' schema."""
    system: list[dict[str, Any]] = []
    chat: list[dict[str, Any]] = []
    for message in messages:
        content: Sequence[object] = getattr(message, "parts", None) or message.blocks
        if message.role == "system":
            system.extend(_parts(content, with_bytes))
        else:
            chat.append({"role": message.role, "parts": _parts(content, with_bytes)})
    return system, chat
