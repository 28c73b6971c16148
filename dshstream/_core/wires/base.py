"""What every wire translator shares: block bookkeeping and the end-of-stream protocol.

Contract: sans-IO (no sockets, time, threads or environment).

1. A :class:`ChunkWriter` allocates block indices in first-appearance order, opens a block
   only on its first non-empty payload, accumulates each block by appending (joined once,
   at its end) and defers usage and finish until the stream ends. A file the model
   produced arrives whole: :meth:`ChunkWriter.file` writes its start and end at once.
2. A stream ends in exactly one of three ways: :meth:`ChunkWriter.complete` (terminal
   marker seen), :meth:`ChunkWriter.fail` (in-band provider error, partial output kept)
   or :meth:`ChunkWriter.cut` (EOF before the marker: ``STREAM_CLOSED`` unless a finish
   reason already arrived, open tool calls marked truncated). A ``stop`` with no block at
   all becomes ``EMPTY_RESPONSE``, whose failure explains itself: its ``diagnostics``
   hold ``finish_raw``, ``input_tokens``/``output_tokens`` (the provider's own counts from
   the translator's ``token_counts()`` hook; ``None`` when missing or invalid, never 0),
   ``reasoning_present``, ``max_tokens`` (the request's output limit, ``None`` when not
   set) and ``response_id``, and its ``request_id`` falls back to the response id. A
   ``tool-calls`` finish with a truncated or invalid call is ``max-tokens`` when the
   usage reached ``max_tokens`` (vLLM says ``tool_calls`` for a call it cut at
   ``length``). Each way asks the translator's ``replay_state()`` hook once, as the
   finish is emitted.
3. A :class:`Translator` is fed one SSE event at a time (``feed``) and told about the end
   of the input (``close``); both return the chunks produced so far. The default
   ``on_event`` completes the stream on the wire's :attr:`Translator.terminal_data` and
   hands every other event's parsed data to ``on_payload`` (``feed_events`` runs it
   inlined); the delta chunks are built by :func:`text_delta`, :func:`reasoning_delta`
   and :func:`tool_call_delta` (equal to their constructors, cheaper). Its endings
   (``complete``, ``fail_with``, ``end_input``) flush the subclass's held state first
   (``flush(cut=...)``); ``fail_with`` classifies an error payload once for every wire
   (:meth:`Translator.classify_error`: forced codes, then the stream's serving provider
   and request id back-filled where the payload names none). ``max_tokens`` (the output
   limit the adapter requested) is a constructor argument of every translator.
4. Translators parse each payload with :func:`~dshstream._core.strict_json.loads_event`, called
   directly (it runs once per event): lone surrogate escapes become U+FFFD, so every text
   a translator emits is valid UTF-8, and the ``EventJsonError`` of a payload that is not
   JSON leaves ``feed`` and ``feed_events`` as ``MALFORMED_RESPONSE``.
5. Citations for a text block are attached with :meth:`ChunkWriter.cite` while the block
   is open and ride in its ``BlockEnd`` (``TextBlock.citations``); other models' usage
   (``usage_by_model``) and the tools the provider ran itself (``server_tools``) ride in
   the finish's metadata. None of them costs anything per delta.
6. Unwrapped tool call (structured output through a forced tool): with
   :attr:`ChunkWriter.unwrap_tool` set (:meth:`Translator.unwrap_tool_call`), a tool call
   of that name is written as a text block — its raw arguments fragments are the text,
   it opens on the first non-empty fragment, it does not count as a tool call (so the
   finish is ``stop``, not ``tool-calls``), and one that streamed nothing but ended
   normally is ``"{}"`` (as a tool call's arguments would be). The wire's replay state
   records it as text (:meth:`ChunkWriter.is_unwrapped` tells the translator). Only the
   first such call is the answer: a model that calls the forced tool again gets that call
   as an ordinary tool call (so the text stays one JSON document and nothing is dropped).

Why the writer's :class:`_OpenBlock` is not the assembler's ``_Partial`` (both append
every delta): the chunk stream is the only interface between the two. The writer must
finish a block itself, because ``BlockEnd`` carries the assembled block to consumers that
never assemble (and Anthropic's replay needs the text); the assembler folds chunks from
any source (listeners, recorded or deserialized streams, custom adapters) and must rebuild
the blocks of a stream cut before its ``BlockEnd``. Neither can lean on the other's copy;
each append is O(1) and each join happens once, so the cost stays linear.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import fields, replace
from typing import Any, ClassVar, TypeVar

from ..classify import classify_error_payload
from ..errors import error_for, make_failure
from ..filters.json_repair import finalize_tool_arguments
from ..redact import redact
from ..sse import ServerSentEvent
from ..strict_json import EventJsonError, loads_event
from ..types import (
    Block,
    BlockEnd,
    BlockStart,
    BlockType,
    Citation,
    FailureCategory,
    FileBlock,
    Finish,
    FinishKind,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    ResponseMetadata,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

__all__ = [
    "ChunkWriter",
    "Translator",
    "add_usage",
    "cost_or_none",
    "dict_or_empty",
    "first_str",
    "int_or_none",
    "list_or_empty",
    "reasoning_delta",
    "split_iterations",
    "sum_optional",
    "text_delta",
    "tool_call_delta",
]


_D = TypeVar("_D", TextDelta, ReasoningDelta, ToolCallDelta)


def _delta_maker(cls: type[_D]) -> Callable[..., _D]:
    """A constructor for the delta chunk class ``cls`` (a frozen, slotted dataclass without
    ``__post_init__``) that fills its slots through their descriptors: the object its
    dataclass ``__init__`` builds (which goes through ``object.__setattr__`` once per
    field), at about two thirds of the cost. Deltas are made once per event, so this is the
    hot path; ``tests/test_hot_paths.py`` checks the equivalence for every field."""
    names = [f.name for f in fields(cls)]
    if hasattr(cls, "__post_init__") or getattr(cls, "__slots__", None) != tuple(names):
        raise TypeError(f"{cls.__name__} is not a plain slotted dataclass")
    new = object.__new__
    setters = [cls.__dict__[name].__set__ for name in names]
    if len(setters) == 2:
        set_a, set_b = setters

        def make2(a: Any, b: Any) -> _D:
            chunk = new(cls)
            set_a(chunk, a)
            set_b(chunk, b)
            return chunk

        return make2
    set_a, set_b, set_c, set_d = setters

    def make4(a: Any, b: Any, c: Any, d: Any) -> _D:
        chunk = new(cls)
        set_a(chunk, a)
        set_b(chunk, b)
        set_c(chunk, c)
        set_d(chunk, d)
        return chunk

    return make4


#: ``TextDelta(index, text)``, ``ReasoningDelta(index, text)`` and
#: ``ToolCallDelta(index, id, name, arguments_delta)``, made for the hot path
text_delta: Callable[[int, str], TextDelta] = _delta_maker(TextDelta)
reasoning_delta: Callable[[int, str], ReasoningDelta] = _delta_maker(ReasoningDelta)
tool_call_delta: Callable[[int, str, str | None, str], ToolCallDelta] = _delta_maker(ToolCallDelta)


class _OpenBlock:
    """A block between its first payload and its end (see the module docstring for why
    the assembler keeps its own)."""

    __slots__ = ("index", "block_type", "pieces", "call_id", "name", "signature", "citations")

    def __init__(self, index: int, block_type: BlockType) -> None:
        self.index = index
        self.block_type = block_type
        self.pieces: list[str] = []
        self.call_id = ""
        self.name = ""
        self.signature: str | None = None
        self.citations: list[Citation] | None = None


class ChunkWriter:
    """Turns a translator's observations into contract-valid chunks, appended to ``out``."""

    def __init__(
        self,
        *,
        provider: str | None = None,
        request_id: str | None = None,
        replay_state: Callable[[], Any] | None = None,
        token_counts: Callable[[], tuple[int | None, int | None]] | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.out: list[StreamChunk] = []
        self.provider = provider
        self._open: dict[Hashable, _OpenBlock] = {}
        self.block_count = 0
        self.tool_call_count = 0
        #: tool calls that ended with ``arguments_truncated``
        self.truncated_calls = 0
        #: the stream carried reasoning (a reasoning block, or a translator saw some)
        self.reasoning_seen = False
        #: the output limit the request set (``None``: not set or unknown)
        self.max_tokens = max_tokens
        self.usage: TokenUsage | None = None
        #: usage of other models that took part (model -> usage), never in ``usage``
        self.usage_by_model: dict[str, TokenUsage] | None = None
        #: summaries of the tools the provider ran itself, in output order
        self.server_tools: list[dict[str, Any]] = []
        self._raw_usage: tuple[Callable[[dict[str, Any]], TokenUsage | None], dict[str, Any]] | None = None
        #: the last usage record handed to :meth:`defer_usage`, kept after it is parsed
        self.raw_usage: dict[str, Any] | None = None
        self._token_counts = token_counts
        self.finish_kind: FinishKind | None = None
        self.finish_raw: str | None = None
        self.finish_failure: LlmFailure | None = None
        self.response_id: str | None = None
        self.model: str | None = None
        self.serving_provider: str | None = None
        self.request_id = request_id
        #: the provider's own latency measure, in milliseconds (Bedrock ``metrics.latencyMs``)
        self.latency_ms: int | None = None
        self._replay_state = replay_state
        self.finished = False
        #: the name of the tool call written as text (rule 6); ``None``: none
        self.unwrap_tool: str | None = None
        self._unwrapped: set[Hashable] = set()

    # ------------------------------------------------------------------ blocks

    def _start(self, key: Hashable, block_type: BlockType) -> _OpenBlock:
        block = _OpenBlock(self.block_count, block_type)
        self.block_count += 1
        if block_type == "reasoning":
            self.reasoning_seen = True
        self._open[key] = block
        self.out.append(BlockStart(block.index, block_type))
        return block

    def is_open(self, key: Hashable) -> bool:
        """Whether the block under ``key`` is open."""
        return key in self._open

    def text(self, key: Hashable, text: str) -> None:
        """Visible text for the text block under ``key`` (opened on the first non-empty text)."""
        if not text:
            return
        block = self._open.get(key)
        if block is None:
            block = self._start(key, "text")
        block.pieces.append(text)
        self.out.append(text_delta(block.index, text))

    def reasoning(self, key: Hashable, text: str, signature: str | None = None) -> None:
        """Reasoning text (and optionally its signature) for the block under ``key``."""
        block = self._open.get(key)
        if block is None:
            if not text and not signature:
                return
            block = self._start(key, "reasoning")
        if text:
            block.pieces.append(text)
            self.out.append(reasoning_delta(block.index, text))
        if signature:
            block.signature = signature

    def tool_call(
        self,
        key: Hashable,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str = "",
    ) -> None:
        """A tool-call fragment: id and name when known, a raw JSON arguments fragment."""
        block = self._open.get(key)
        if self.unwrap_tool is not None and (
            key in self._unwrapped or (block is None and name == self.unwrap_tool and not self._unwrapped)
        ):
            self._unwrapped.add(key)  # rule 6: the arguments are the answer's text
            self.text(key, arguments)
            return
        if block is None:
            block = self._start(key, "tool-call")
            self.tool_call_count += 1
        if call_id:
            block.call_id = call_id
        if name and name != block.name:
            # Some proxies repeat the full name on every delta; others stream fragments.
            # A repeat or an extension replaces; only a true fragment is appended.
            if block.name and not name.startswith(block.name):
                block.name += name
            else:
                block.name = name
        if arguments:
            block.pieces.append(arguments)
        self.out.append(tool_call_delta(block.index, block.call_id, block.name or None, arguments))

    def is_unwrapped(self, key: Hashable) -> bool:
        """Whether the tool call under ``key`` was written as text (rule 6)."""
        return key in self._unwrapped

    def file(self, media_type: str, data: bytes, name: str | None = None) -> FileBlock:
        """A whole file the model produced (a generated image): its ``BlockStart`` (type
        ``"file"``) and at once its ``BlockEnd`` carrying the :class:`FileBlock`."""
        block = FileBlock(media_type=media_type, data=data, name=name)
        index = self.block_count
        self.block_count += 1
        self.out.append(BlockStart(index, "file"))
        self.out.append(BlockEnd(index=index, block=block))
        return block

    def cite(self, key: Hashable, citations: Iterable[Citation]) -> bool:
        """Attach ``citations`` to the open text block under ``key`` (they ride in its
        ``BlockEnd``); ``False`` when no text block is open there."""
        block = self._open.get(key)
        if block is None or block.block_type != "text":
            return False
        if block.citations is None:
            block.citations = []
        block.citations.extend(citations)
        return True

    def end(self, key: Hashable, *, cut: bool = False, truncated: bool = False) -> Block | None:
        """Close the block under ``key`` and return the finished block (``None`` when it is
        not open). ``truncated`` marks a tool call cut short even when its arguments parse
        (a wire that assembles arguments itself knows more than the JSON does)."""
        block = self._open.pop(key, None)
        if block is None:
            if key in self._unwrapped and not cut:
                self.text(key, "{}")  # rule 6: an unwrapped call that streamed nothing
                block = self._open.pop(key)
            else:
                return None
        done: Block
        if block.block_type == "text":
            if block.citations:
                done = TextBlock("".join(block.pieces), tuple(block.citations))
            else:
                done = TextBlock("".join(block.pieces))
        elif block.block_type == "reasoning":
            done = ReasoningBlock("".join(block.pieces), signature=block.signature)
        else:
            raw = "".join(block.pieces)
            arguments, repaired = finalize_tool_arguments(raw)
            if cut and not repaired and not raw.strip():
                repaired = True  # cut before any argument arrived: nothing proves "{}"
            done = ToolCallBlock(
                id=block.call_id or f"call-{block.index}",
                name=block.name,
                arguments=arguments,
                arguments_truncated=repaired or truncated,
                raw_arguments=raw if arguments != raw else None,
            )
            if done.arguments_truncated:
                self.truncated_calls += 1
        self.out.append(BlockEnd(index=block.index, block=done))
        return done

    def end_all(self, *, cut: bool = False) -> None:
        """Close every open block in the order they were opened."""
        for key in list(self._open):
            self.end(key, cut=cut)

    # ------------------------------------------------------------------ finish

    def set_finish(self, kind: FinishKind, raw: str | None = None, failure: LlmFailure | None = None) -> None:
        """Record the finish reason, emitted later by :meth:`complete` (last one wins)."""
        self.finish_kind = kind
        self.finish_raw = raw
        self.finish_failure = failure

    def identify(
        self, response_id: Any = None, model: Any = None, serving_provider: Any = None
    ) -> None:
        """Record the response's identifiers from wire values: the first response id and
        serving provider win, the latest model wins; a value that is not a non-empty
        string is ignored."""
        if self.response_id is None and isinstance(response_id, str) and response_id:
            self.response_id = response_id
        if isinstance(model, str) and model:
            self.model = model
        if self.serving_provider is None and isinstance(serving_provider, str) and serving_provider:
            self.serving_provider = serving_provider

    def metadata(self) -> ResponseMetadata | None:
        """The response identifiers, other models' usage and server tools gathered so far."""
        if not (
            self.response_id
            or self.model
            or self.serving_provider
            or self.request_id
            or self.usage_by_model
            or self.server_tools
            or self.latency_ms is not None
        ):
            return None
        return ResponseMetadata(
            response_id=self.response_id,
            model=self.model,
            serving_provider=self.serving_provider,
            request_id=self.request_id,
            usage_by_model=dict(self.usage_by_model) if self.usage_by_model else None,
            server_tools=tuple(self.server_tools),
            latency_ms=self.latency_ms,
        )

    def defer_usage(
        self, parse: Callable[[dict[str, Any]], TokenUsage | None], raw: dict[str, Any]
    ) -> None:
        """Remember the latest cumulative usage record; ``parse`` runs once, at the end.

        Providers that repeat usage on every event (Gemini, vLLM continuous stats) would
        otherwise pay for normalizing thousands of records only the last of which counts.
        """
        self._raw_usage = (parse, raw)
        self.raw_usage = raw

    def _resolve_usage(self) -> None:
        if self._raw_usage is not None:
            parse, raw = self._raw_usage
            self._raw_usage = None
            usage = parse(raw)
            if usage is not None:
                self.usage = usage

    def _emit_finish(self, reason: FinishReason) -> None:
        self._resolve_usage()
        if self.usage is not None:
            self.out.append(UsageChunk(usage=self.usage))
        # Asked once; dropping the hook also breaks the translator <-> writer cycle, so a
        # finished stream is freed by reference counting alone.
        hook, self._replay_state = self._replay_state, None
        self._token_counts = None  # the other translator hook: the cycle is broken
        replay = hook() if hook is not None else None
        self.out.append(Finish(reason=reason, replay_state=replay, metadata=self.metadata()))
        self.finished = True

    def failure(self, code: str, message: str, **fields: Any) -> LlmFailure:
        """A failure attributed to this stream's provider and serving provider."""
        fields.setdefault("provider", self.provider)
        fields.setdefault("serving_provider", self.serving_provider)
        fields.setdefault("request_id", self.request_id)
        return make_failure(code, message, **fields)

    def stop_failure(self, reason: str, **fields: Any) -> LlmFailure:
        """The failure of a finish reason no wire rule maps: the reason, upper-cased with
        every other character as ``_`` (at most 40), is the code."""
        code = "".join(c if c.isalnum() else "_" for c in reason.upper())[:40] or "UNKNOWN"
        return self.failure(code, f"{self.provider}: model stopped: {code.lower()}", **fields)

    def complete(self) -> None:
        """The wire's terminal marker arrived: close blocks, emit usage and finish."""
        if self.finished:
            return
        kind = self.finish_kind or ("tool-calls" if self.tool_call_count else "stop")
        failure = self.finish_failure
        self.end_all(cut=kind == "max-tokens")
        if kind == "stop" and self.tool_call_count:
            kind = "tool-calls"  # e.g. a forced tool choice reports "stop"
        if kind == "tool-calls" and self.truncated_calls and self._output_limit_reached():
            kind = "max-tokens"  # the call was cut at the limit, whatever the word says
        if kind == "stop" and self.block_count == 0 and not self.server_tools:
            kind = "error"
            failure = self._empty_failure()
        if kind in ("error", "aborted") and failure is None:
            failure = self.failure("UNKNOWN", f"{self.provider or 'provider'}: stream ended in an error")
        self._emit_finish(FinishReason(kind=kind, failure=failure, raw=self.finish_raw))

    def _output_limit_reached(self) -> bool:
        self._resolve_usage()
        limit = self.max_tokens
        return limit is not None and self.usage is not None and self.usage.output_tokens >= limit

    def _empty_failure(self) -> LlmFailure:
        """``EMPTY_RESPONSE``, with the facts that explain an empty reply."""
        self._resolve_usage()
        counts = self._token_counts() if self._token_counts is not None else (None, None)
        usage = self.usage
        diagnostics = {
            "finish_raw": self.finish_raw,
            "input_tokens": int_or_none(counts[0]),
            "output_tokens": int_or_none(counts[1]),
            "reasoning_present": self.reasoning_seen or bool(usage is not None and usage.reasoning_tokens),
            "max_tokens": self.max_tokens,
            "response_id": self.response_id,
        }
        failure = self.failure(
            "EMPTY_RESPONSE",
            f"{self.provider or 'provider'}: model returned a completed response with no content",
            request_id=self.request_id or self.response_id,
        )
        return replace(failure, diagnostics=diagnostics)

    def fail(self, failure: LlmFailure) -> None:
        """An in-band provider error ends the stream; partial output is kept."""
        if self.finished:
            return
        self.end_all(cut=True)
        self._emit_finish(FinishReason(kind="error", failure=failure, raw=self.finish_raw))

    def cut(self) -> None:
        """EOF before the terminal marker: normal only if a finish reason was seen."""
        if self.finished:
            return
        if self.finish_kind is not None:
            self.complete()
            return
        self.end_all(cut=True)
        who = self.provider or "provider"
        self._emit_finish(
            FinishReason(
                kind="error",
                failure=self.failure(
                    "STREAM_CLOSED", f"{who}: stream ended before the provider's end-of-stream marker"
                ),
            )
        )

    def take(self) -> list[StreamChunk]:
        """Hand over the chunks produced since the last call."""
        out = self.out
        self.out = []
        return out


class Translator:
    """Base of every wire translator: SSE events in, chunks out.

    A subclass implements :meth:`on_event` and, where it holds state, the two end-of-stream
    hooks: :meth:`flush` (release what it holds) and :meth:`replay_state`. The ways a
    stream ends live here once: :meth:`complete` (the wire's terminal marker),
    :meth:`fail_with` (an in-band error payload), :meth:`end_input` (EOF, or a marker that
    only ends the input).
    """

    wire = "base"
    #: the body's framing: ``"sse"``, or ``"eventstream"`` (AWS event-stream messages are
    #: fed to :meth:`feed_events` instead of SSE events)
    framing: ClassVar[str] = "sse"
    #: in-band error ``error.type`` values whose code is fixed whatever their wording says:
    #: type -> (code, category, headline); such a failure is retryable
    forced_error_codes: ClassVar[Mapping[str, tuple[str, FailureCategory, str]]] = {}
    #: the ``data`` of the event that is the wire's terminal marker (``"[DONE]"`` on the
    #: chat wire) for the default :meth:`on_event`; ``None``: the marker is a payload
    terminal_data: ClassVar[str | None] = None

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        self.writer = ChunkWriter(
            provider=provider or self.wire,
            request_id=request_id,
            replay_state=self.replay_state,
            token_counts=self.token_counts,
            max_tokens=max_tokens,
        )
        self._default_on_event = type(self).on_event is Translator.on_event

    @property
    def done(self) -> bool:
        """Whether the stream has ended (nothing more will be produced)."""
        return self.writer.finished

    def feed(self, event: ServerSentEvent) -> list[StreamChunk]:
        """Translate one SSE event."""
        if not self.writer.finished:
            try:
                self.on_event(event)
            except EventJsonError as exc:
                raise self._malformed(exc.text) from None
        return self.writer.take()

    def feed_events(self, items: Iterable[object]) -> list[StreamChunk]:
        """Translate a batch of decoder output (comments are skipped); the hot path.

        With the default :meth:`on_event` its body runs here, inlined: one call less per
        event (with one event per read, every call counts)."""
        writer = self.writer
        try:
            if self._default_on_event:
                on_payload = self.on_payload
                terminal = self.terminal_data
                for item in items:
                    if type(item) is ServerSentEvent and not writer.finished:
                        data = item.data
                        if data == terminal:
                            self.complete()
                        else:
                            on_payload(item.event, loads_event(data))
            else:
                on_event = self.on_event
                for item in items:
                    if type(item) is ServerSentEvent and not writer.finished:
                        on_event(item)
        except EventJsonError as exc:  # from loads_event, anywhere in on_event
            raise self._malformed(exc.text) from None
        return writer.take()

    def unwrap_tool_call(self, name: str) -> None:
        """Write the tool call named ``name`` as text (rule 6): the JSON answer of a forced
        tool call, seen by the caller as on the native structured-output path."""
        self.writer.unwrap_tool = name

    def close(self) -> list[StreamChunk]:
        """End of input: finish the stream (``STREAM_CLOSED`` if cut short)."""
        if not self.writer.finished:
            self.end_input()
        return self.writer.take()

    # ------------------------------------------------------------------ subclass hooks

    def on_event(self, event: ServerSentEvent) -> None:
        """Handle one event. The default (rule 4): the :attr:`terminal_data` event
        completes the stream, any other event's data is parsed with ``loads_event`` and
        handed to :meth:`on_payload` with its type. Wires that need more override it."""
        data = event.data
        if data == self.terminal_data:
            self.complete()
            return
        self.on_payload(event.event, loads_event(data))

    def on_payload(self, event: str, payload: Any) -> None:
        """Handle one event already parsed: its type (the SSE ``event:`` field or the
        event-stream ``:event-type``) and its JSON payload. Wires whose events can arrive
        wrapped in another wire (Bedrock InvokeModel carries Anthropic and Converse events
        base64-encoded) implement it (subclasses)."""
        raise NotImplementedError

    def flush(self, *, cut: bool) -> None:
        """Release held state (filters, open wire blocks) before the writer ends the
        stream; ``cut``: the stream ended without its finish (subclasses)."""

    def replay_state(self) -> Any:
        """The replay state the finish carries; the writer asks once, as it emits the
        finish, whichever way the stream ends (subclasses; ``None``: nothing to replay)."""
        return None

    def token_counts(self) -> tuple[int | None, int | None]:
        """The provider's own input and output token counts, as it reported them (each
        ``None`` when it reported none valid); asked only to explain an empty reply. The
        default reads the deferred usage record's chat-completions fields (subclasses)."""
        raw = self.writer.raw_usage
        if raw is None:
            return (None, None)
        return (int_or_none(raw.get("prompt_tokens")), int_or_none(raw.get("completion_tokens")))

    # ------------------------------------------------------------------ endings

    def complete(self) -> None:
        """The wire's terminal marker arrived: flush, close blocks, emit usage and finish."""
        self.flush(cut=False)
        self.writer.complete()

    def end_input(self) -> None:
        """No more input: complete if a finish reason arrived, else ``STREAM_CLOSED``."""
        self.flush(cut=self.writer.finish_kind is None)
        self.writer.cut()

    def fail_with(self, payload: Any) -> None:
        """An in-band error payload ends the stream; partial output is kept."""
        failure = self.classify_error(payload)
        self.flush(cut=True)
        self.writer.fail(failure)

    def classify_error(self, payload: Any) -> LlmFailure:
        """The failure an in-band error payload describes, attributed to this stream:
        :attr:`forced_error_codes` applied, serving provider and request id back-filled."""
        writer = self.writer
        failure = classify_error_payload(payload, provider=writer.provider)
        updates: dict[str, Any] = {}
        if self.forced_error_codes and type(payload) is dict:
            kind = dict_or_empty(payload.get("error")).get("type")
            forced = self.forced_error_codes.get(kind) if isinstance(kind, str) else None
            if forced is not None and failure.code != forced[0]:
                code, category, headline = forced
                updates.update(
                    code=code,
                    category=category,
                    retryable=True,
                    message=f"{writer.provider}: {headline} ({code})",
                )
        if failure.serving_provider is None and writer.serving_provider:
            updates["serving_provider"] = writer.serving_provider
        if failure.request_id is None and writer.request_id:
            updates["request_id"] = writer.request_id
        return replace(failure, **updates) if updates else failure

    # ------------------------------------------------------------------ helpers

    def _malformed(self, data: str) -> Exception:
        who = self.writer.provider
        return error_for(
            self.writer.failure(
                "MALFORMED_RESPONSE",
                f"{who}: stream carried a payload that is not valid JSON",
                detail=redact(data, limit=120),
            )
        )


def add_usage(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    """The sum of two usage records (an optional count stays ``None`` when both are)."""

    def both(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    cost = None if a.cost is None and b.cost is None else (a.cost or 0.0) + (b.cost or 0.0)
    return TokenUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=both(a.cache_read_tokens, b.cache_read_tokens),
        cache_write_tokens=both(a.cache_write_tokens, b.cache_write_tokens),
        reasoning_tokens=both(a.reasoning_tokens, b.reasoning_tokens),
        cost=cost,
    )


def split_iterations(
    iterations: Any, model: str | None, parse: Callable[[dict[str, Any]], TokenUsage | None]
) -> tuple[list[dict[str, Any]], dict[str, TokenUsage]]:
    """Split a usage record's per-iteration entries (Anthropic ``usage.iterations``, or the
    same shape relayed by a gateway) by the model that produced them: the responding
    model's own entries (naming no model, or ``model``), and, per other model named, the
    sum of its entries parsed with ``parse``. Entries that are not objects are skipped."""
    own: list[dict[str, Any]] = []
    others: dict[str, TokenUsage] = {}
    for entry in iterations if type(iterations) is list else ():
        if type(entry) is not dict:
            continue
        named = entry.get("model")
        if not isinstance(named, str) or not named or named == model:
            own.append(entry)
            continue
        usage = parse(entry)
        if usage is not None:
            known = others.get(named)
            others[named] = usage if known is None else add_usage(known, usage)
    return own, others


def cost_or_none(value: Any) -> float | None:
    """A finite, non-negative cost in USD, or ``None`` (huge, NaN or non-numeric values)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None


def int_or_none(value: Any) -> int | None:
    """``value`` if it is a non-negative int (bools excluded), else ``None``."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def first_str(*values: Any) -> str | None:
    """The first non-empty string among ``values``."""
    for value in values:
        if isinstance(value, str) and value:
            return value
    return None


def dict_or_empty(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty dict (wire JSON is untrusted)."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list."""
    return value if isinstance(value, list) else []


def sum_optional(values: Iterable[int | None]) -> int | None:
    """Sum of the values that are present; ``None`` when none is."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None
