"""The chunk protocol: a closed union of seven frozen chunk types, the blocks they carry,
token usage, finish reasons, failures and response metadata.

Contract: stdlib only, no I/O. Every chunk is a frozen, slotted dataclass with no behaviour;
dispatch over the union with ``match`` and end in :func:`assert_never` so mypy flags an
unhandled variant. ``chunk_to_dict``/``chunk_from_dict`` are the only serialization and
round-trip losslessly through JSON. The union stays closed: values that belong to a block
(a text block's :class:`Citation` s) travel inside it, with its ``BlockEnd``; values that
belong to the whole response (other models' usage, server-run tools) travel in the
finish's :class:`ResponseMetadata` — the fallback chain's trail too (:class:`TargetOutcome`,
one per target the stream tried). A file the model produces (a generated image) is a
block, :class:`FileBlock`: its ``BlockStart`` (type ``"file"``) is followed at once by its
``BlockEnd``, which carries the media type and the bytes (base64 in the dict form).
"""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn, TypeAlias, final, get_args


BlockType: TypeAlias = Literal["text", "reasoning", "tool-call", "tool-result", "file"]
FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "error", "aborted"]
FailureCategory: TypeAlias = Literal[
    "api_error",
    "rate_limit",
    "content_blocked",
    "timeout",
    "provider_overloaded",
    "model_error",
    "unknown",
]

TargetOutcomeKind: TypeAlias = Literal["served", "failed", "skipped"]

# the values each alias admits, in its order: written once, in the alias
BLOCK_TYPES: tuple[BlockType, ...] = get_args(BlockType)
FINISH_KINDS: tuple[FinishKind, ...] = get_args(FinishKind)
TARGET_OUTCOMES: tuple[TargetOutcomeKind, ...] = get_args(TargetOutcomeKind)
FAILURE_CATEGORIES: tuple[FailureCategory, ...] = get_args(FailureCategory)


def assert_never(value: NoReturn) -> NoReturn:
    """Fail loudly on a value that the type checker proved impossible."""
    raise AssertionError(f"unhandled value: {value!r}")


# --------------------------------------------------------------------------- blocks


@final
@dataclass(frozen=True, slots=True)
class Citation:
    """A source the provider ties to a passage of a text block.

    ``kind`` is ``"url"`` (a web page: Anthropic web search, Responses and OpenRouter
    ``url_citation``, Gemini grounding), ``"document"`` (a document or retrieved context
    the request supplied), ``"search-result"`` (an Anthropic search result block),
    ``"file"`` (a Responses file or container file) or ``"place"`` (Gemini Maps
    grounding). ``cited_text`` is the text the provider gives with the citation: the
    quoted source passage (Anthropic) or the passage of the answer it supports (Gemini).
    ``location`` says where in the source, as the provider numbers it (``"document 0,
    pages 3-4"``, a file id). ``start``/``end`` are the offsets of the supported span in
    the block's text, as the provider reports them (Responses, OpenRouter).
    """

    kind: str
    url: str | None = None
    title: str | None = None
    cited_text: str | None = None
    location: str | None = None
    start: int | None = None
    end: int | None = None


@final
@dataclass(frozen=True, slots=True)
class TextBlock:
    """Visible answer text; ``citations`` are the sources the provider tied to it, in the
    order it sent them (empty when it sent none)."""

    text: str
    citations: tuple[Citation, ...] = ()


@final
@dataclass(frozen=True, slots=True)
class ReasoningBlock:
    """Model reasoning; ``signature`` is the provider's integrity token when it sends one."""

    text: str
    signature: str | None = None


@final
@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    """A tool call. ``arguments`` is a raw JSON string, never a parsed object.

    ``arguments_truncated`` marks arguments that were cut short (max-tokens, EOF, invalid
    JSON) and repaired; code that runs tools must refuse such a call. ``raw_arguments``
    keeps the text exactly as streamed when it differs from ``arguments``.
    """

    id: str
    name: str
    arguments: str
    arguments_truncated: bool = False
    raw_arguments: str | None = None


@final
@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """The result of a tool call, sent back in history (never streamed)."""

    call_id: str
    content: str
    is_error: bool = False


def format_size(size: int) -> str:
    """A byte count for people: ``512 B``, ``123 KB``, ``4.2 MB`` (powers of 1,024)."""
    if size < 1024:
        return f"{size} B"
    for unit in ("KB", "MB", "GB"):
        size_f = size / 1024
        if size_f < 1024 or unit == "GB":
            return f"{size_f:.0f} {unit}" if size_f >= 100 else f"{size_f:.1f} {unit}"
        size //= 1024
    raise AssertionError("unreachable")  # pragma: no cover


@final
@dataclass(frozen=True, slots=True, repr=False)
class FileBlock:
    """A file the model produced: a generated image (Gemini ``inlineData``, a Responses
    ``image_generation_call`` result) or another media output, whole. Files arrive in one
    provider event: the stream carries a ``BlockStart`` of type ``"file"`` and at once its
    ``BlockEnd`` with this block. ``repr`` shows the media type and size, never the bytes.
    """

    media_type: str
    data: bytes
    name: str | None = None

    @property
    def size(self) -> int:
        """The size of ``data`` in bytes."""
        return len(self.data)

    @property
    def base64(self) -> str:
        """``data`` as standard base64 text."""
        return base64.b64encode(self.data).decode("ascii")

    def __repr__(self) -> str:
        name = f", name={self.name!r}" if self.name is not None else ""
        return f"FileBlock(media_type={self.media_type!r}, size={format_size(len(self.data))}{name})"


Block: TypeAlias = TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock | FileBlock


# --------------------------------------------------------------------------- usage / finish


@final
@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Token accounting with **disjoint** counts.

    ``input_tokens`` is uncached input only; billed input is
    ``input_tokens + cache_read_tokens + cache_write_tokens``. ``reasoning_tokens`` is
    already inside ``output_tokens`` (informational, never add it again). ``cost`` is the
    provider-reported cost in USD when the provider reports one.
    """

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None

    @property
    def total_input_tokens(self) -> int:
        """Billed input: uncached input plus cache reads and writes."""
        return self.input_tokens + (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)

    @property
    def total_tokens(self) -> int:
        """All billed input plus output."""
        return self.total_input_tokens + self.output_tokens

    @property
    def cached_input_share(self) -> float | None:
        """The share of billed input read from the prompt cache (0.0-1.0): the saving
        prompt caching made, as a fraction of the input; ``None`` when the provider
        reported no cache counts or there was no input."""
        if self.cache_read_tokens is None and self.cache_write_tokens is None:
            return None
        total = self.total_input_tokens
        return (self.cache_read_tokens or 0) / total if total else None


@final
@dataclass(frozen=True, slots=True)
class LlmFailure:
    """A classified failure.

    ``message`` is a headline safe to show an end user: it never contains upstream
    response text. ``detail`` is the upstream text, redacted, at most 2,000 characters.
    ``retry_after`` is in seconds. ``diagnostics`` summarizes the failed request without
    any prompt text (it takes no part in equality). A ``CONTEXT_WINDOW_EXCEEDED`` failure
    whose provider gave the figures carries ``context_limit`` (the window, in tokens) and
    ``context_requested`` (what the request needed); :attr:`context_overflow` is the
    difference.
    """

    code: str
    message: str
    category: FailureCategory
    retryable: bool
    status: int | None = None
    retry_after: float | None = None
    request_id: str | None = None
    provider: str | None = None
    serving_provider: str | None = None
    detail: str | None = None
    #: a bounded, prompt-free summary of the request that failed (model, recent roles,
    #: part counts, chunks received, elapsed time), set by the adapter engine
    diagnostics: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    #: the context window the provider named, in tokens (``CONTEXT_WINDOW_EXCEEDED`` only)
    context_limit: int | None = None
    #: the tokens the request needed, as the provider counted them
    context_requested: int | None = None

    @property
    def context_overflow(self) -> int | None:
        """By how many tokens the request overflowed the context window (``None``: the
        provider gave no figures)."""
        if self.context_limit is None or self.context_requested is None:
            return None
        return self.context_requested - self.context_limit

    def __post_init__(self) -> None:
        if not self.code:
            raise ValueError("LlmFailure.code must be non-empty")
        if not self.message:
            raise ValueError("LlmFailure.message must be non-empty")
        if self.category not in FAILURE_CATEGORIES:
            raise ValueError(f"unknown failure category {self.category!r}")
        if self.status is not None and not 100 <= self.status <= 599:
            raise ValueError(f"LlmFailure.status out of range: {self.status!r}")
        if self.retry_after is not None and not (
            math.isfinite(self.retry_after) and self.retry_after > 0
        ):
            raise ValueError("LlmFailure.retry_after must be finite and > 0")
        if self.detail is not None and len(self.detail) > 2000:
            raise ValueError("LlmFailure.detail must be at most 2,000 characters")


@final
@dataclass(frozen=True, slots=True)
class FinishReason:
    """Why the stream ended. ``raw`` is the provider's own word (``end_turn``, ``SAFETY``...);
    ``failure`` is set for ``error`` and ``aborted``."""

    kind: FinishKind
    failure: LlmFailure | None = None
    raw: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in FINISH_KINDS:
            raise ValueError(f"unknown finish kind {self.kind!r}")
        if self.kind in ("error", "aborted") and self.failure is None:
            raise ValueError(f"a {self.kind!r} finish needs a failure")


@final
@dataclass(frozen=True, slots=True)
class TargetOutcome:
    """One target of a fallback chain, as the stream tried it (``ResponseMetadata.fallback``).

    ``position`` is the target's place in the chain (1 for the first); ``provider`` and
    ``model`` are where it sent the request. ``outcome`` is ``"served"`` (its chunks are the
    stream's, whatever its finish), ``"failed"`` (it failed before any content: ``failure``
    says how; the chain moved on, or ended when the failure was not one that moves on) or
    ``"skipped"`` (nothing was sent to it: it can't take something in the request, it has
    no adapter any more; ``failure`` says why). ``usage`` is what a failed target reported
    before it failed (an empty answer may still be billed); it is never part of the
    response's own usage.
    """

    position: int
    provider: str
    model: str
    outcome: TargetOutcomeKind
    failure: LlmFailure | None = None
    usage: TokenUsage | None = None

    def __post_init__(self) -> None:
        if self.outcome not in TARGET_OUTCOMES:
            raise ValueError(f"unknown target outcome {self.outcome!r}")
        if self.outcome != "served" and self.failure is None:
            raise ValueError(f"a {self.outcome!r} target needs its failure")

    @property
    def name(self) -> str:
        """``provider/model``, as messages and logs name the target."""
        return f"{self.provider}/{self.model}"


@final
@dataclass(frozen=True, slots=True)
class RateLimits:
    """What a provider said about its rate limits in one response's headers (``dshstream._core.rate_limits`` reads them).

    ``*_requests`` and ``*_tokens`` are the request and token limits of the current
    window: its size (``limit_``), what is left of it (``remaining_``) and the seconds
    until it is replenished (``reset_``), each ``None`` when not sent. ``retry_after`` is
    the wait the server asked for, in seconds. ``window`` is the window's length in
    seconds when the headers name it (Mistral's ``-minute`` headers: ``60``).
    """

    limit_requests: int | None = None
    remaining_requests: int | None = None
    reset_requests: float | None = None
    limit_tokens: int | None = None
    remaining_tokens: int | None = None
    reset_tokens: float | None = None
    retry_after: float | None = None
    window: float | None = None

    def to_dict(self) -> dict[str, float | int]:
        """The fields that are set, as a JSON-safe dict."""
        return {name: getattr(self, name) for name in _RATE_LIMIT_FIELDS if getattr(self, name) is not None}


@final
@dataclass(frozen=True, slots=True)
class ResponseMetadata:
    """What the provider said about one response besides its content.

    ``response_id``, ``model`` (the model that answered), ``serving_provider`` (the backend
    behind a gateway) and ``request_id`` (the HTTP request id) identify it.
    ``usage_by_model`` is the usage of *other* models that took part (an Anthropic advisor,
    a declined fallback model...): model name -> :class:`TokenUsage`. It is never part of
    the response's own usage (the ``UsageChunk``), so the two never count a token twice.
    ``server_tools`` summarizes the tools the provider ran itself (Responses
    ``web_search_call``, ``mcp_call``...; Anthropic ``server_tool_use``): one dict per
    call with its ``type``, ``id``, ``status`` and a few descriptive fields, in output
    order; the calls themselves stay in the replay state. ``latency_ms`` is the
    provider's own measure of the request's latency, in milliseconds, when it reports one
    (Bedrock ``metadata.metrics.latencyMs``). ``longest_silence`` is the longest stretch,
    in seconds, in which no content arrived — from the request to the first content, and
    between two reads with content — as the idle clock saw it (streams over a transport;
    compare it with ``GenerateOptions.idle_timeout`` and ``quiet_timeout``).
    ``fallback`` is the trail of a request sent
    to a fallback chain (``LlmService.register_chain``): every target the stream tried, in
    order, with its outcome (:class:`TargetOutcome`); :attr:`served_by` is the one that
    served. It is empty for a request sent to one provider.
    ``server_fallbacks`` are the hops the provider itself made to another model within
    the response (Anthropic server-side fallback): one dict per hop with ``from`` and
    ``to`` (model ids), ``trigger`` (``"refusal"``...) and ``category`` when given, in
    order; ``model`` is then the model that served. ``stop_details`` is the provider's
    account of why it stopped, as sent (an Anthropic refusal's ``category``,
    ``explanation``, ``fallback_credit_token``, ``recommended_model``...). ``container``
    is the code-execution container the response ran in (``id``, ``expires_at``), which
    the next request of the conversation reuses. ``commentary`` is prose the model wrote
    besides a structured-output answer given through a forced tool (a sentence before
    the JSON): never part of the answer's text. ``raw_usage`` is the provider's own usage
    record, as sent (the last one; Anthropic's ``message_start`` usage updated by its
    ``message_delta``): the fields :class:`TokenUsage` has no place for — audio or
    predicted tokens, Anthropic ``server_tool_use.web_search_requests``, a service tier,
    Gemini's per-modality counts — read from there. Like ``longest_silence`` it is left
    out of equality.

    Fields can also be read by name, ``metadata["usage_by_model"]``; a field that is
    ``None`` or empty is absent (``KeyError``, ``in`` is false, ``get`` gives the default).
    """

    response_id: str | None = None
    model: str | None = None
    serving_provider: str | None = None
    request_id: str | None = None
    usage_by_model: Mapping[str, TokenUsage] | None = field(default=None, hash=False)
    server_tools: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    latency_ms: int | None = None
    #: a measure of this run, not of the response: left out of equality (one response read
    #: twice is equal to itself however the network paced it)
    longest_silence: float | None = field(default=None, compare=False)
    #: where a resumable stream that ended without completing can be continued from
    #: (``LlmService.resume``): JSON-safe, no secrets; a fact of this run, not of the response
    resume_cursor: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)
    #: the rate-limit facts of the response's headers (``x-ratelimit-*``,
    #: ``anthropic-ratelimit-*``, ``retry-after``): a
    #: :class:`RateLimits`, set by the HTTP adapter; a fact of
    #: this run, not of the response
    rate_limits: RateLimits | None = field(default=None, compare=False, hash=False)
    fallback: tuple[TargetOutcome, ...] = field(default=(), hash=False)
    server_fallbacks: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    stop_details: Mapping[str, Any] | None = field(default=None, hash=False)
    container: Mapping[str, Any] | None = field(default=None, hash=False)
    commentary: str | None = None
    #: the provider's usage record as sent (JSON values); out of equality: the counts that
    #: matter are the UsageChunk's
    raw_usage: Mapping[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def served_by(self) -> TargetOutcome | None:
        """The fallback chain's target that served the response (``None``: none did, or the
        request named one provider)."""
        for entry in self.fallback:
            if entry.outcome == "served":
                return entry
        return None

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key, None) if key in _METADATA_FIELDS else None
        if value is None or value == ():
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def get(self, key: str, default: Any = None) -> Any:
        """The field named ``key`` when present, else ``default``."""
        try:
            return self[key]
        except KeyError:
            return default


# --------------------------------------------------------------------------- chunks


@final
@dataclass(frozen=True, slots=True)
class BlockStart:
    """A content block opens at ``index``."""

    index: int
    block_type: BlockType


@final
@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible text for block ``index``."""

    index: int
    text: str


@final
@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Reasoning text for block ``index``."""

    index: int
    text: str


@final
@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A raw JSON fragment of a tool call's arguments.

    ``id`` is ``""`` until the provider supplies it; ``name`` is ``None`` until known.
    """

    index: int
    id: str
    name: str | None
    arguments_delta: str


@final
@dataclass(frozen=True, slots=True)
class BlockEnd:
    """Block ``index`` is complete; ``block`` is the fully assembled block."""

    index: int
    block: Block


@final
@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Token accounting for the response (always before :class:`Finish`)."""

    usage: TokenUsage


@final
@dataclass(frozen=True, slots=True)
class Finish:
    """The last chunk of every stream. ``replay_state`` is adapter-owned lossless JSON;
    ``metadata`` identifies the response and carries what belongs to the whole of it
    (other models' usage, tools the provider ran itself)."""

    reason: FinishReason
    replay_state: Any = None
    metadata: ResponseMetadata | None = None


StreamChunk: TypeAlias = (
    BlockStart | TextDelta | ReasoningDelta | ToolCallDelta | BlockEnd | UsageChunk | Finish
)
CHUNK_TYPES: tuple[type, ...] = (
    BlockStart,
    TextDelta,
    ReasoningDelta,
    ToolCallDelta,
    BlockEnd,
    UsageChunk,
    Finish,
)


# --------------------------------------------------------------------------- serialization


def block_to_dict(block: Block) -> dict[str, Any]:
    """A JSON-safe dict for ``block`` with a ``type`` discriminator."""
    match block:
        case TextBlock(text=text, citations=citations):
            if citations:
                return {"type": "text", "text": text, "citations": [citation_to_dict(c) for c in citations]}
            return {"type": "text", "text": text}
        case ReasoningBlock(text=text, signature=signature):
            out: dict[str, Any] = {"type": "reasoning", "text": text}
            if signature is not None:
                out["signature"] = signature
            return out
        case ToolCallBlock():
            out = {
                "type": "tool-call",
                "id": block.id,
                "name": block.name,
                "arguments": block.arguments,
            }
            if block.arguments_truncated:
                out["arguments_truncated"] = True
            if block.raw_arguments is not None:
                out["raw_arguments"] = block.raw_arguments
            return out
        case ToolResultBlock(call_id=call_id, content=content, is_error=is_error):
            return {"type": "tool-result", "call_id": call_id, "content": content, "is_error": is_error}
        case FileBlock(media_type=media_type, name=name):
            out = {"type": "file", "media_type": media_type, "data": block.base64}
            if name is not None:
                out["name"] = name
            return out
        case _:
            assert_never(block)


def block_from_dict(data: dict[str, Any]) -> Block:
    """Inverse of :func:`block_to_dict`; raises ``ValueError`` on an unknown type."""
    kind = data.get("type")
    if kind == "text":
        citations = data.get("citations")
        if citations:
            return TextBlock(str(data["text"]), tuple(citation_from_dict(c) for c in citations))
        return TextBlock(text=str(data["text"]))
    if kind == "reasoning":
        return ReasoningBlock(text=str(data["text"]), signature=data.get("signature"))
    if kind == "tool-call":
        return ToolCallBlock(
            id=str(data["id"]),
            name=str(data["name"]),
            arguments=str(data["arguments"]),
            arguments_truncated=bool(data.get("arguments_truncated", False)),
            raw_arguments=data.get("raw_arguments"),
        )
    if kind == "tool-result":
        return ToolResultBlock(
            call_id=str(data["call_id"]),
            content=str(data["content"]),
            is_error=bool(data.get("is_error", False)),
        )
    if kind == "file":
        try:
            payload = base64.b64decode(str(data["data"]), validate=True)
        except binascii.Error:
            raise ValueError("a file block's data is not base64") from None
        name = data.get("name")
        return FileBlock(media_type=str(data["media_type"]), data=payload, name=None if name is None else str(name))
    raise ValueError(f"unknown block type {kind!r}")


_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cost",
)
_FAILURE_FIELDS = (
    "code",
    "message",
    "category",
    "retryable",
    "status",
    "retry_after",
    "request_id",
    "provider",
    "serving_provider",
    "detail",
    "diagnostics",
    "context_limit",
    "context_requested",
)
_METADATA_FIELDS = (
    "response_id", "model", "serving_provider", "request_id", "usage_by_model", "server_tools", "latency_ms",
    "longest_silence", "resume_cursor", "fallback", "rate_limits", "server_fallbacks", "stop_details", "container",
    "commentary", "raw_usage",
)
_METADATA_IDS = (
    "response_id", "model", "serving_provider", "request_id", "latency_ms", "longest_silence", "commentary",
)
_RATE_LIMIT_FIELDS = (
    "limit_requests", "remaining_requests", "reset_requests", "limit_tokens", "remaining_tokens", "reset_tokens",
    "retry_after", "window",
)
_CITATION_FIELDS = ("kind", "url", "title", "cited_text", "location", "start", "end")


def citation_to_dict(citation: Citation) -> dict[str, Any]:
    """JSON-safe dict of a citation, omitting absent fields."""
    return {f: getattr(citation, f) for f in _CITATION_FIELDS if getattr(citation, f) is not None}


def citation_from_dict(data: dict[str, Any]) -> Citation:
    """Inverse of :func:`citation_to_dict`."""
    return Citation(**{f: data[f] for f in _CITATION_FIELDS if f in data})


def metadata_to_dict(metadata: ResponseMetadata) -> dict[str, Any]:
    """JSON-safe dict of response metadata, omitting absent fields."""
    out: dict[str, Any] = {f: getattr(metadata, f) for f in _METADATA_IDS if getattr(metadata, f) is not None}
    if metadata.usage_by_model:
        out["usage_by_model"] = {model: usage_to_dict(u) for model, u in metadata.usage_by_model.items()}
    if metadata.server_tools:
        out["server_tools"] = [dict(entry) for entry in metadata.server_tools]
    if metadata.resume_cursor:
        out["resume_cursor"] = dict(metadata.resume_cursor)
    if metadata.fallback:
        out["fallback"] = [target_outcome_to_dict(entry) for entry in metadata.fallback]
    if metadata.rate_limits is not None:
        out["rate_limits"] = metadata.rate_limits.to_dict()
    if metadata.server_fallbacks:
        out["server_fallbacks"] = [dict(entry) for entry in metadata.server_fallbacks]
    for name in ("stop_details", "container", "raw_usage"):
        value = getattr(metadata, name)
        if value:
            out[name] = dict(value)
    return out


def metadata_from_dict(data: dict[str, Any]) -> ResponseMetadata:
    """Inverse of :func:`metadata_to_dict`."""
    by_model = data.get("usage_by_model")
    return ResponseMetadata(
        **{f: data[f] for f in _METADATA_IDS if f in data},
        usage_by_model={m: usage_from_dict(u) for m, u in by_model.items()} if by_model else None,
        server_tools=tuple(dict(entry) for entry in data.get("server_tools") or ()),
        resume_cursor=dict(data["resume_cursor"]) if data.get("resume_cursor") else None,
        rate_limits=_rate_limits_from(data.get("rate_limits")),
        fallback=tuple(target_outcome_from_dict(entry) for entry in data.get("fallback") or ()),
        server_fallbacks=tuple(dict(entry) for entry in data.get("server_fallbacks") or ()),
        stop_details=dict(data["stop_details"]) if data.get("stop_details") else None,
        container=dict(data["container"]) if data.get("container") else None,
        raw_usage=dict(data["raw_usage"]) if data.get("raw_usage") else None,
    )


def target_outcome_to_dict(outcome: TargetOutcome) -> dict[str, Any]:
    """JSON-safe dict of one fallback target's outcome, omitting absent fields."""
    out: dict[str, Any] = {
        "position": outcome.position,
        "provider": outcome.provider,
        "model": outcome.model,
        "outcome": outcome.outcome,
    }
    if outcome.failure is not None:
        out["failure"] = failure_to_dict(outcome.failure)
    if outcome.usage is not None:
        out["usage"] = usage_to_dict(outcome.usage)
    return out


def target_outcome_from_dict(data: dict[str, Any]) -> TargetOutcome:
    """Inverse of :func:`target_outcome_to_dict`."""
    failure = data.get("failure")
    usage = data.get("usage")
    return TargetOutcome(
        position=int(data["position"]),
        provider=str(data["provider"]),
        model=str(data["model"]),
        outcome=data["outcome"],
        failure=failure_from_dict(failure) if failure is not None else None,
        usage=usage_from_dict(usage) if usage is not None else None,
    )


def rate_limits_from_dict(data: Mapping[str, object]) -> RateLimits:
    """Inverse of :meth:`RateLimits.to_dict` (unknown keys ignored)."""
    return RateLimits(**{name: data[name] for name in _RATE_LIMIT_FIELDS if data.get(name) is not None})  # type: ignore[arg-type]


def _rate_limits_from(data: Any) -> RateLimits | None:
    if not isinstance(data, dict):
        return None
    return rate_limits_from_dict(data)


def usage_to_dict(usage: TokenUsage) -> dict[str, Any]:
    """JSON-safe dict of a usage record, omitting absent optional counts."""
    return {f: getattr(usage, f) for f in _USAGE_FIELDS if getattr(usage, f) is not None}


def usage_from_dict(data: dict[str, Any]) -> TokenUsage:
    """Inverse of :func:`usage_to_dict` (unknown keys ignored)."""
    return TokenUsage(**{f: v for f, v in data.items() if f in _USAGE_FIELDS})


def failure_to_dict(failure: LlmFailure) -> dict[str, Any]:
    """JSON-safe dict of a failure, omitting absent optional fields."""
    return {f: getattr(failure, f) for f in _FAILURE_FIELDS if getattr(failure, f) is not None}


def failure_from_dict(data: dict[str, Any]) -> LlmFailure:
    """Inverse of :func:`failure_to_dict`."""
    return LlmFailure(**{f: data[f] for f in _FAILURE_FIELDS if f in data})


def chunk_to_dict(chunk: StreamChunk) -> dict[str, Any]:
    """A JSON-safe dict for ``chunk``; ``type`` uses the wire names (``text-delta``...)."""
    match chunk:
        case BlockStart(index=index, block_type=block_type):
            return {"type": "block-start", "index": index, "block_type": block_type}
        case TextDelta(index=index, text=text):
            return {"type": "text-delta", "index": index, "text": text}
        case ReasoningDelta(index=index, text=text):
            return {"type": "reasoning-delta", "index": index, "text": text}
        case ToolCallDelta(index=index, id=id_, name=name, arguments_delta=delta):
            return {
                "type": "tool-call-delta",
                "index": index,
                "id": id_,
                "name": name,
                "arguments_delta": delta,
            }
        case BlockEnd(index=index, block=block):
            return {"type": "block-end", "index": index, "block": block_to_dict(block)}
        case UsageChunk(usage=usage):
            return {"type": "usage", "usage": usage_to_dict(usage)}
        case Finish(reason=reason, replay_state=replay_state, metadata=metadata):
            reason_dict: dict[str, Any] = {"kind": reason.kind}
            if reason.failure is not None:
                reason_dict["failure"] = failure_to_dict(reason.failure)
            if reason.raw is not None:
                reason_dict["raw"] = reason.raw
            out: dict[str, Any] = {"type": "finish", "reason": reason_dict}
            if replay_state is not None:
                out["replay_state"] = replay_state
            if metadata is not None:
                out["metadata"] = metadata_to_dict(metadata)
            return out
        case _:
            assert_never(chunk)


def chunk_from_dict(data: dict[str, Any]) -> StreamChunk:
    """Inverse of :func:`chunk_to_dict`; raises ``ValueError`` on an unknown ``type``."""
    kind = data.get("type")
    if kind == "block-start":
        return BlockStart(index=int(data["index"]), block_type=data["block_type"])
    if kind == "text-delta":
        return TextDelta(index=int(data["index"]), text=str(data["text"]))
    if kind == "reasoning-delta":
        return ReasoningDelta(index=int(data["index"]), text=str(data["text"]))
    if kind == "tool-call-delta":
        return ToolCallDelta(
            index=int(data["index"]),
            id=str(data["id"]),
            name=data.get("name"),
            arguments_delta=str(data["arguments_delta"]),
        )
    if kind == "block-end":
        return BlockEnd(index=int(data["index"]), block=block_from_dict(data["block"]))
    if kind == "usage":
        return UsageChunk(usage=usage_from_dict(data["usage"]))
    if kind == "finish":
        reason = data["reason"]
        failure = reason.get("failure")
        meta = data.get("metadata")
        return Finish(
            reason=FinishReason(
                kind=reason["kind"],
                failure=failure_from_dict(failure) if failure is not None else None,
                raw=reason.get("raw"),
            ),
            replay_state=data.get("replay_state"),
            metadata=metadata_from_dict(meta) if meta is not None else None,
        )
    raise ValueError(f"unknown chunk type {kind!r}")
