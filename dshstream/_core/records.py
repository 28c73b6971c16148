"""Observer records: the frozen values an ``observer=`` callable hears about each stream.

Contract: stdlib, ``types`` and ``request`` only; plain frozen values, no behaviour, no
clock, no I/O (the records are built by :mod:`dshstream._observe`).

1. Per stream and per observer, in order: one :class:`StreamStarted`; then at most one
   :class:`FirstChunkRecord` and one :class:`AttemptRecord` per HTTP attempt (in attempt order);
   then exactly one :class:`StreamFinished`. Nothing follows the :class:`StreamFinished`.
   A stream sent to a fallback chain (``LlmService.register_chain``) also gets, at the
   service level, one :class:`AttemptRecord` with outcome ``"skipped"`` (``attempt`` 0: no
   HTTP attempt) per target that was not sent the request; every attempt record of a chain
   carries its target's position (``target``), and the :class:`StreamFinished` the chain's
   trail (``fallback``: every target tried, with its outcome and failure).
2. ``stream_id`` ties the records of one stream together; it is unique within the process.
   An adapter's records for a stream it serves through a service carry the service's id.
3. ``level`` says who observed: ``"service"`` (``LlmService(observer=...)``: every stream
   the service returns, from the ``stream()`` call to the end of the :class:`ChunkStream`)
   or ``"adapter"`` (``observer=`` on an HTTP adapter: the adapter's own generator, from its
   first step to its end).
4. No record holds prompt text, output text, tool arguments, stop sequences, headers or keys,
   unless the observer opted in (a true ``capture_content`` attribute): then
   :attr:`StreamStarted.messages`, :attr:`RequestSettings.stop_sequences` and
   :attr:`StreamFinished.output` are set. Failures are :class:`LlmFailure` values, whose
   ``message`` never holds upstream text and whose ``detail`` is redacted.
5. ``started_at`` is wall-clock time (``time.time()``); every duration is in seconds on the
   monotonic clock, measured from the start of the stream (``time_to_first_chunk``,
   ``duration``) or of the attempt (:attr:`AttemptRecord.duration`).
6. No field a record takes from the response carries a registered secret: a proxy that
   echoes the key into one gets that field dropped (``None``) where the record is built
   (:mod:`dshstream._observe` rule 7 lists the fields), so the log line's
   ``record.dshstream`` and the OpenTelemetry attributes, built from the records, never
   carry it either.
7. :class:`StreamStarted` carries what the adapter says of the request before sending it
   (:class:`Telemetry`, ``LlmAdapter.telemetry``): the conventions' well-known provider
   name, the operation name, and the server's host and port — so a tracer has them at the
   span's start. ``None``: the adapter did not say (a fallback chain, whose targets differ).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .request import GenerateOptions, Message
from .types import Block, FinishKind, FinishReason, LlmFailure, TargetOutcome, TokenUsage

__all__ = [
    "MAX_CHUNK_GAPS",
    "AttemptOutcome",
    "AttemptRecord",
    "FirstChunkRecord",
    "ObserveLevel",
    "Observer",
    "ObserverRecord",
    "RequestSettings",
    "StreamFinished",
    "StreamStarted",
    "Telemetry",
]

ObserveLevel: TypeAlias = Literal["service", "adapter"]
#: the most chunk gaps a :class:`StreamFinished` carries (a long stream keeps its first ones)
MAX_CHUNK_GAPS = 4096
AttemptOutcome: TypeAlias = Literal["ok", "failed", "aborted", "skipped"]


@dataclass(frozen=True, slots=True)
class Telemetry:
    """What an adapter says of a request before sending it (rule 7)."""

    #: the OpenTelemetry GenAI conventions' well-known ``gen_ai.provider.name``
    #: (``anthropic``, ``gcp.vertex_ai``...; ``None``: not a well-known API)
    provider_name: str | None = None
    #: ``gen_ai.operation.name``: ``chat``, or Gemini's ``generate_content``
    operation_name: str = "chat"
    server_address: str | None = None
    server_port: int | None = None


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """The non-secret settings of a request: no prompt, no keys. ``stop_sequences`` is
    caller text, so it is set only for an observer that captures content."""

    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: str | None = None
    #: the names of the tools offered (identifiers, not their schemas)
    tool_names: tuple[str, ...] = ()
    message_count: int = 0
    stop_count: int = 0
    timeout: float | None = None
    idle_timeout: float | None = None
    max_retries: int | None = None
    #: the keys of ``extra_body`` (never its values)
    extra_body_keys: tuple[str, ...] = ()
    stop_sequences: tuple[str, ...] | None = None
    #: ``"json"`` when a JSON schema or JSON mode is asked for, else ``"text"``
    output_type: str = "text"

    @classmethod
    def of(cls, options: GenerateOptions, *, capture_content: bool = False) -> RequestSettings:
        """The settings of ``options`` (stop sequences only with ``capture_content``)."""
        stop = options.stop or ()
        return cls(
            max_tokens=options.max_tokens,
            temperature=options.temperature,
            reasoning_effort=options.reasoning_effort,
            tool_names=tuple(tool.name for tool in options.tools),
            message_count=len(options.messages),
            stop_count=len(stop),
            timeout=options.timeout,
            idle_timeout=options.idle_timeout,
            max_retries=options.max_retries,
            extra_body_keys=tuple(sorted(str(key) for key in options.extra_body or ())),
            stop_sequences=tuple(stop) if capture_content and stop else None,
            output_type="json" if options.response_format is not None else "text",
        )


@dataclass(frozen=True, slots=True)
class StreamStarted:
    """A stream began (the ``stream()`` call, or an adapter generator's first step)."""

    stream_id: str
    provider: str
    model: str
    settings: RequestSettings
    #: wall-clock start, seconds since the epoch
    started_at: float
    level: ObserveLevel = "service"
    #: the request's messages, only for an observer that captures content
    messages: tuple[Message, ...] | None = None
    #: what the adapter says of the request (rule 7; ``None``: nothing)
    telemetry: Telemetry | None = None


@dataclass(frozen=True, slots=True)
class FirstChunkRecord:
    """The first content chunk (a block opening, or text, reasoning or tool-call data)
    reached the stream; usage and the finish don't count."""

    stream_id: str
    provider: str
    model: str
    #: seconds from the start of the stream
    time_to_first_chunk: float
    #: the chunk's class name (``"TextDelta"``, ``"BlockStart"``...)
    chunk_type: str
    level: ObserveLevel = "service"


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One HTTP attempt ended: ``ok`` (the provider's finish arrived), ``failed`` (its
    failure, before any retry decision) or ``aborted`` (cancelled, or closed by the
    consumer). ``skipped``: a fallback chain's target that was not sent the request
    (``attempt`` 0, ``failure`` the reason: a part, schema or tools it can't take, no
    adapter)."""

    stream_id: str
    #: the provider and model the attempt went to (a listener may have rerouted it)
    provider: str
    model: str
    #: 1 for the first attempt; a service counts over the whole stream (a listener that
    #: falls back to another provider continues the count), an adapter per generator
    attempt: int
    outcome: AttemptOutcome
    #: seconds from the attempt's start to its end
    duration: float
    #: chunks this attempt produced
    chunks: int
    failure: LlmFailure | None = None
    #: the host and port the attempt was sent to
    server_address: str | None = None
    server_port: int | None = None
    level: ObserveLevel = "service"
    #: the position (1 for the first) of the fallback chain's target the attempt was for;
    #: ``None`` outside a chain (and at the adapter level, which knows no chain)
    target: int | None = None


@dataclass(frozen=True, slots=True)
class StreamFinished:
    """The stream ended, whichever way: exactly one per stream and observer.

    ``usage`` carries the provider-reported ``cost`` when there is one. ``attempts`` is
    the number of HTTP attempts made (0 when no request was sent: a listener answered, the
    stream was closed before it started, or the adapter reports no attempts).
    ``chunk_count`` counts the chunks that reached the stream. ``longest_silence`` is the
    longest stretch without content, in seconds (the finish metadata's; ``None`` when the
    stream went over no transport).
    """

    stream_id: str
    provider: str
    model: str
    finish: FinishReason
    usage: TokenUsage | None
    #: seconds from the start of the stream to its end
    duration: float
    #: seconds to the first content chunk (None: no content arrived)
    time_to_first_chunk: float | None
    chunk_count: int
    attempts: int
    response_id: str | None = None
    #: the model that answered, as the provider named it
    response_model: str | None = None
    #: the backend behind a gateway (OpenRouter's provider...)
    serving_provider: str | None = None
    #: the HTTP request id, from the response or the failure
    request_id: str | None = None
    server_address: str | None = None
    server_port: int | None = None
    level: ObserveLevel = "service"
    #: the assembled blocks (text, reasoning, tool calls), only for an observer that
    #: captures content
    output: tuple[Block, ...] | None = None
    #: seconds: the longest stretch without content (the finish metadata's)
    longest_silence: float | None = None
    #: a fallback chain's trail: every target tried, in order, with its outcome (the
    #: finish's ``metadata.fallback``); empty outside a chain
    fallback: tuple[TargetOutcome, ...] = ()
    #: seconds between consecutive content-bearing reads after the first one (each read
    #: delivers one or more chunks), in order, at most :data:`MAX_CHUNK_GAPS`; only for an
    #: observer with a true ``chunk_gaps`` attribute (the ``time_per_output_chunk`` metric)
    chunk_gaps: tuple[float, ...] = ()

    @property
    def cached_input_share(self) -> float | None:
        """The share of the billed input read from the prompt cache (``usage``'s, rounded
        to 4 places; ``None``: no usage or no cache counts): what prompt caching saved."""
        share = self.usage.cached_input_share if self.usage is not None else None
        return round(share, 4) if share is not None else None

    @property
    def served_by(self) -> TargetOutcome | None:
        """The fallback chain's target that served the stream, if one did."""
        return next((entry for entry in self.fallback if entry.outcome == "served"), None)

    @property
    def kind(self) -> FinishKind:
        """The finish kind (``stop``, ``tool-calls``, ``max-tokens``, ``error``, ``aborted``)."""
        return self.finish.kind

    @property
    def code(self) -> str | None:
        """The failure code of an ``error`` or ``aborted`` finish, else ``None``."""
        failure = self.finish.failure
        return failure.code if failure is not None else None

    @property
    def ok(self) -> bool:
        """True unless the stream ended in an error or was aborted."""
        return self.finish.kind not in ("error", "aborted")


#: every record an observer hears
ObserverRecord: TypeAlias = StreamStarted | FirstChunkRecord | AttemptRecord | StreamFinished
#: an ``observer=``: hears every record; what it returns is ignored, what it raises is
#: logged and swallowed
Observer: TypeAlias = Callable[[ObserverRecord], object]
