"""ChunkWriter: a translator's observations in, contract-valid chunks out.

Contract (sans-IO: no sockets, time, threads or environment; one translator drives one
writer):

1. **Blocks.** Indices are allocated in first-appearance order; a block opens only on
   its first non-empty payload, accumulates by appending (joined once, at its end), and
   ends with a ``BlockEnd`` carrying the finished block. A file the model produced
   arrives whole: :meth:`ChunkWriter.file` writes its start and end at once. Usage and
   finish are deferred until the stream ends; a usage record handed to
   :meth:`ChunkWriter.defer_usage` is parsed once, at the end (the last one wins).
2. **State.** :attr:`ChunkWriter.state` is the writer's lifecycle, moved on in one place
   (``_advance``; back only by ``withdraw_finish``): ``"open"`` (no finish reason yet:
   EOF now is ``STREAM_CLOSED``) ->
   ``"finishing"`` (a finish reason arrived, :meth:`ChunkWriter.set_finish`: blocks may
   still be written, usage and finish are held until the end) -> ``"finished"`` (the
   ``Finish`` chunk is out). ``"finished"`` is final: every later ending is a no-op, and a
   translator feeds nothing more (it reads ``state``, an attribute, on its hot path).
   :meth:`ChunkWriter.withdraw_finish` takes ``"finishing"`` back to ``"open"`` when the
   provider's word turns out to end one step, not the response (Gemini's ``STOP`` on a call
   the server then runs and answers).
3. **Endings.** A stream ends in exactly one of three ways: :meth:`ChunkWriter.complete`
   (terminal marker seen), :meth:`ChunkWriter.fail` (in-band provider error, partial
   output kept) or :meth:`ChunkWriter.cut` (EOF before the marker: ``STREAM_CLOSED``
   unless the writer is ``"finishing"``, open tool calls marked truncated). A ``stop``
   with no block at all becomes ``EMPTY_RESPONSE``, whose failure explains itself: its
   ``diagnostics`` hold ``finish_raw``, ``input_tokens``/``output_tokens`` (the provider's
   own counts from the translator's ``token_counts()`` hook; ``None`` when missing or
   invalid, never 0), ``reasoning_present``, ``max_tokens`` (the request's output limit,
   ``None`` when not set) and ``response_id``, and its ``request_id`` falls back to the
   response id. A ``tool-calls`` finish with a truncated or invalid call is ``max-tokens``
   when the usage reached ``max_tokens`` (vLLM says ``tool_calls`` for a call it cut at
   ``length``). Each way asks the translator's ``replay_state()`` hook once, as the finish
   is emitted, and then drops both hooks (the translator <-> writer cycle is broken, so a
   finished stream is freed by reference counting alone).
4. **Riders.** Citations for a text block are attached with :meth:`ChunkWriter.cite`
   while the block is open and ride in its ``BlockEnd`` (``TextBlock.citations``); other
   models' usage (``usage_by_model``), the tools the provider ran itself
   (``server_tools``), the provider's own model fallbacks (``server_fallbacks``), its
   ``stop_details``, the code-execution ``container``, the response's identifiers
   (:meth:`ChunkWriter.identify`) and the provider's latency ride in the finish's metadata. None of them costs anything per
   delta.
5. **Unwrapped tool call** (structured output through a forced tool): with
   :attr:`ChunkWriter.unwrap_tool` set (``Translator.unwrap_tool_call``), a tool call of
   that name is written as a text block — its raw arguments fragments are the text, it
   opens on the first non-empty fragment, it does not count as a tool call (so the finish
   is ``stop``, not ``tool-calls``), and one that streamed nothing but ended normally is
   ``"{}"`` (as a tool call's arguments would be). The wire's replay state records it as
   text (:meth:`ChunkWriter.is_unwrapped` tells the translator). Only the first such call
   is the answer: a model that calls the forced tool again gets that call as an ordinary
   tool call (so the text stays one JSON document and nothing is dropped). Prose the model
   writes around the answer is never glued to it: text before the answer is held (not
   written) until the answer starts, and then becomes, with any text after it, the
   finish's ``metadata.commentary``; a stream that ends without the answer writes the
   held text as its text blocks after all (a prose reply, or a refusal's explanation, is
   not lost). :meth:`ChunkWriter.held_text` gives a held block's text to the wire's replay.
6. **Echoed credentials.** A finish word that contains a registered credential (a proxy
   echoing the key) is dropped from ``FinishReason.raw`` and never becomes a failure code
   (which is upper-cased, so no redaction of the exact key would find it): ``UNKNOWN``.

Why the writer's :class:`_OpenBlock` is not the assembler's ``_Partial`` (both append
every delta): the chunk stream is the only interface between the two. The writer must
finish a block itself, because ``BlockEnd`` carries the assembled block to consumers that
never assemble (and Anthropic's replay needs the text); the assembler folds chunks from
any source (listeners, recorded or deserialized streams, custom adapters) and must rebuild
the blocks of a stream cut before its ``BlockEnd``. Neither can lean on the other's copy;
each append is O(1) and each join happens once, so the cost stays linear.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from typing import Any, Literal, TypeAlias

from ..errors import make_failure
from ..redact import known_secrets
from ..filters.json_repair import finalize_tool_arguments
from ..types import (
    Block,
    BlockEnd,
    BlockStart,
    BlockType,
    Citation,
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
from .deltas import REASONING_DELTA_SLOTS, TEXT_DELTA_SLOTS, TOOL_CALL_DELTA_SLOTS

# The three most frequent chunks are built inline (deltas rule 4): one Python call less each.
_new = object.__new__
_set_text_index, _set_text = TEXT_DELTA_SLOTS
_set_reasoning_index, _set_reasoning = REASONING_DELTA_SLOTS
_set_call_index, _set_call_id, _set_call_name, _set_call_arguments = TOOL_CALL_DELTA_SLOTS
from .json_values import int_or_none

__all__ = ["ChunkWriter", "WriterState"]

#: the writer's lifecycle (rule 2)
WriterState: TypeAlias = Literal["open", "finishing", "finished"]


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
    """Turns a translator's observations into contract-valid chunks, appended to ``out``
    (module rules)."""

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
        #: the provider's own hops to another model, in order (rule 4)
        self.server_fallbacks: list[dict[str, Any]] = []
        #: the provider's stop details, as sent (rule 4)
        self.stop_details: dict[str, Any] | None = None
        #: the code-execution container the response ran in (rule 4)
        self.container: dict[str, Any] | None = None
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
        #: ``"open"`` -> ``"finishing"`` -> ``"finished"`` (rule 2); changed by ``_advance``
        #: (and ``withdraw_finish``) only
        self.state: WriterState = "open"
        #: the name of the tool call written as text (rule 5); ``None``: none
        self.unwrap_tool: str | None = None
        self._unwrapped: set[Hashable] = set()
        #: text held before the unwrapped answer started, by key, in arrival order (rule 5)
        self._held: dict[Hashable, list[str]] = {}
        #: prose written around the unwrapped answer (rule 5)
        self._commentary: list[str] = []

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

    def open_call(self, key: Hashable) -> tuple[str | None, list[str]] | None:
        """The id and the argument fragments so far (not to be changed) of the tool call
        open under ``key``, or ``None``."""
        block = self._open.get(key)
        if block is None or block.block_type != "tool-call":
            return None
        return block.call_id, block.pieces

    def open_text(self, key: Hashable) -> str | None:
        """The text so far of the text block open under ``key``, or ``None``."""
        block = self._open.get(key)
        if block is None or block.block_type != "text":
            return None
        return "".join(block.pieces)

    def text(self, key: Hashable, text: str) -> None:
        """Visible text for the text block under ``key`` (opened on the first non-empty
        text; rule 1)."""
        if not text:
            return
        block = self._open.get(key)
        if block is None:
            if self.unwrap_tool is not None and key not in self._unwrapped:
                self._hold(key, text)  # rule 5: prose beside a structured answer
                return
            block = self._start(key, "text")
        block.pieces.append(text)
        chunk = _new(TextDelta)  # ``text_delta(block.index, text)``, inlined
        _set_text_index(chunk, block.index)
        _set_text(chunk, text)
        self.out.append(chunk)

    def reasoning(self, key: Hashable, text: str, signature: str | None = None) -> None:
        """Reasoning text (and optionally its signature) for the block under ``key``."""
        block = self._open.get(key)
        if block is None:
            if not text and not signature:
                return
            block = self._start(key, "reasoning")
        if text:
            block.pieces.append(text)
            chunk = _new(ReasoningDelta)  # ``reasoning_delta(block.index, text)``, inlined
            _set_reasoning_index(chunk, block.index)
            _set_reasoning(chunk, text)
            self.out.append(chunk)
        if signature:
            block.signature = signature

    def tool_call(
        self,
        key: Hashable,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str = "",
    ) -> None:
        """A tool-call fragment: id and name when known, a raw JSON arguments fragment
        (rules 1 and 5)."""
        block = self._open.get(key)
        if self.unwrap_tool is not None and (
            key in self._unwrapped or (block is None and name == self.unwrap_tool and not self._unwrapped)
        ):
            if not self._unwrapped and self._held:
                # the answer starts: the prose before it is commentary (rule 5)
                for pieces in self._held.values():
                    self._commentary.extend(pieces)
                self._held = {}
            self._unwrapped.add(key)  # rule 5: the arguments are the answer's text
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
        chunk = _new(ToolCallDelta)  # ``tool_call_delta(...)``, inlined
        _set_call_index(chunk, block.index)
        _set_call_id(chunk, block.call_id)
        _set_call_name(chunk, block.name or None)
        _set_call_arguments(chunk, arguments)
        self.out.append(chunk)

    def _hold(self, key: Hashable, text: str) -> None:
        """Prose outside the unwrapped answer (rule 5): held before it starts, commentary
        after."""
        if self._unwrapped:
            self._commentary.append(text)
        else:
            self._held.setdefault(key, []).append(text)

    def held_text(self, key: Hashable) -> str | None:
        """The text held under ``key`` (rule 5; ``None``: none)."""
        pieces = self._held.get(key)
        return "".join(pieces) if pieces else None

    def _release_held(self) -> None:
        """At the end (rule 5): held text is commentary once the answer started, else it is
        written as the text blocks it was."""
        held, self._held = self._held, {}
        if self._unwrapped:
            return
        answer, self.unwrap_tool = self.unwrap_tool, None  # written as plain text now
        for key, pieces in held.items():
            for piece in pieces:
                self.text(key, piece)
            self.end(key)
        self.unwrap_tool = answer

    def is_unwrapped(self, key: Hashable) -> bool:
        """Whether the tool call under ``key`` was written as text (rule 5)."""
        return key in self._unwrapped

    def file(self, media_type: str, data: bytes, name: str | None = None) -> FileBlock:
        """A whole file the model produced (a generated image): its ``BlockStart`` (type
        ``"file"``) and at once its ``BlockEnd`` carrying the :class:`FileBlock` (rule 1)."""
        block = FileBlock(media_type=media_type, data=data, name=name)
        index = self.block_count
        self.block_count += 1
        self.out.append(BlockStart(index, "file"))
        self.out.append(BlockEnd(index=index, block=block))
        return block

    def cite(self, key: Hashable, citations: Iterable[Citation]) -> bool:
        """Attach ``citations`` to the open text block under ``key`` (they ride in its
        ``BlockEnd``, rule 4); ``False`` when no text block is open there."""
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
                self.text(key, "{}")  # rule 5: an unwrapped call that streamed nothing
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

    # ------------------------------------------------------------------ state

    @property
    def finished(self) -> bool:
        """Whether the ``Finish`` chunk is out (``state == "finished"``, rule 2)."""
        return self.state == "finished"

    def _advance(self, state: WriterState) -> None:
        """Where :attr:`state` moves forward (rule 2): ``"finishing"`` when a finish
        reason arrives, ``"finished"`` once the ``Finish`` chunk is out; ``"finished"`` is
        final (:meth:`withdraw_finish` is the one step back)."""
        if self.state != "finished":
            self.state = state

    # ------------------------------------------------------------------ finish

    def set_finish(self, kind: FinishKind, raw: str | None = None, failure: LlmFailure | None = None) -> None:
        """Record the finish reason, emitted later by :meth:`complete` (last one wins);
        the writer is ``"finishing"`` from here (rule 2)."""
        self.finish_kind = kind
        self.finish_raw = None if raw is not None and _echoes_secret(raw) else raw  # rule 6
        self.finish_failure = failure
        self._advance("finishing")

    def withdraw_finish(self) -> None:
        """Forget the finish reason set so far: more of the response follows (rule 2);
        ``"finishing"`` is ``"open"`` again. A no-op once the ``Finish`` chunk is out."""
        if self.state == "finishing":
            self.finish_kind = None
            self.finish_raw = None
            self.finish_failure = None
            self.state = "open"

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
        """The response identifiers, other models' usage and server tools gathered so far
        (rule 4)."""
        if not (
            self.response_id
            or self.model
            or self.serving_provider
            or self.request_id
            or self.usage_by_model
            or self.server_tools
            or self.latency_ms is not None
            or self.server_fallbacks
            or self.stop_details
            or self.container
            or self._commentary
            or self.raw_usage
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
            server_fallbacks=tuple(self.server_fallbacks),
            stop_details=self.stop_details,
            container=self.container,
            commentary="".join(self._commentary) or None,
            raw_usage=self.raw_usage or None,
        )

    def defer_usage(
        self, parse: Callable[[dict[str, Any]], TokenUsage | None], raw: dict[str, Any]
    ) -> None:
        """Remember the latest cumulative usage record; ``parse`` runs once, at the end (rule 1).

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
        # Asked once (rule 3); dropping the hook also breaks the translator <-> writer
        # cycle, so a finished stream is freed by reference counting alone.
        hook, self._replay_state = self._replay_state, None
        self._token_counts = None  # the other translator hook: the cycle is broken
        replay = hook() if hook is not None else None
        self.out.append(Finish(reason=reason, replay_state=replay, metadata=self.metadata()))
        self._advance("finished")

    def failure(self, code: str, message: str, **fields: Any) -> LlmFailure:
        """A failure attributed to this stream's provider and serving provider."""
        fields.setdefault("provider", self.provider)
        fields.setdefault("serving_provider", self.serving_provider)
        fields.setdefault("request_id", self.request_id)
        return make_failure(code, message, **fields)

    def stop_failure(self, reason: str, **fields: Any) -> LlmFailure:
        """The failure of a finish reason no wire rule maps: the reason, upper-cased with
        every other character as ``_`` (at most 40), is the code — ``UNKNOWN`` when the
        word echoes a credential (rule 6: upper-cased, no redaction would find it)."""
        if _echoes_secret(reason):
            reason = ""
        code = "".join(c if c.isalnum() else "_" for c in reason.upper())[:40] or "UNKNOWN"
        return self.failure(code, f"{self.provider}: model stopped: {code.lower()}", **fields)

    def complete(self) -> None:
        """The wire's terminal marker arrived: close blocks, emit usage and finish (rule 3)."""
        if self.state == "finished":
            return
        if self._held:
            self._release_held()
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
        """``EMPTY_RESPONSE``, with the facts that explain an empty reply (rule 3)."""
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
        """An in-band provider error ends the stream; partial output is kept (rule 3)."""
        if self.state == "finished":
            return
        if self._held:
            self._release_held()
        self.end_all(cut=True)
        self._emit_finish(FinishReason(kind="error", failure=failure, raw=self.finish_raw))

    def cut(self) -> None:
        """EOF before the terminal marker: normal only if a finish reason was seen (the
        writer is ``"finishing"``), else ``STREAM_CLOSED`` (rule 3)."""
        state = self.state
        if state == "finished":
            return
        if state == "finishing":
            self.complete()
            return
        if self._held:
            self._release_held()
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


def _echoes_secret(word: str) -> bool:
    """Whether a provider's word contains a registered credential (a proxy echoing the
    key into the finish reason): asked once per stream, at its finish."""
    return any(secret in word for secret in known_secrets())
