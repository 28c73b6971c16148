"""BlockAssembler: a single-pass fold of a chunk stream into finished blocks, usage, a
finish reason and replay state.

Contract (the seed's assembler rules): deltas without a ``BlockStart`` create their block
implicitly; a duplicate ``BlockStart`` keeps what was accumulated; the first ``BlockEnd``
for an index wins and later deltas or ends for it are ignored; a tool call's id is
last-wins and its name changes only on a non-empty name; ``usage`` is last-wins; a
``max-tokens`` finish drops every tool-call block (truncated calls are unsafe to run) and
prunes per-block replay entries at the same positions; a text block's citations come with
its ``BlockEnd`` (``result.citations`` lists them all, in order); a file block exists
only through its ``BlockEnd`` (one started and never ended is left out; ``result.files``
lists them). Anything that is not one
of the seven chunk types raises ``TypeError``. Text is appended to lists and joined once, so the
cost is linear in the bytes streamed. :meth:`BlockAssembler.push` dispatches over the
closed chunk union exhaustively: its last branch is a ``NoReturn`` helper, so mypy flags
an unhandled variant.

The assembler keeps its own per-block accumulator (``_Partial``) rather than sharing the
wire writer's: it folds chunks from any source (listeners, recorded or deserialized
streams, custom adapters), never a translator's internals, and must rebuild the blocks of
a stream cut before their ``BlockEnd``; see :mod:`dshstream._core.wires.writer` for the
writer's side of that argument.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NoReturn

from .errors import error_for, make_failure
from .request import Message
from .types import (
    Block,
    BlockEnd,
    BlockStart,
    BlockType,
    Citation,
    FileBlock,
    Finish,
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

_STOP = FinishReason(kind="stop")


@dataclass(frozen=True, slots=True)
class AssembledResponse:
    """The finished response: blocks in stream order plus usage, finish and replay state."""

    blocks: tuple[Block, ...]
    usage: TokenUsage | None
    finish: FinishReason
    replay_state: Any = None
    metadata: ResponseMetadata | None = None
    provider: str | None = None
    model: str | None = None

    @property
    def text(self) -> str:
        """All visible text, joined."""
        return "".join(b.text for b in self.blocks if isinstance(b, TextBlock))

    @property
    def reasoning(self) -> str:
        """All reasoning text, joined."""
        return "".join(b.text for b in self.blocks if isinstance(b, ReasoningBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The tool calls, in stream order."""
        return tuple(b for b in self.blocks if isinstance(b, ToolCallBlock))

    @property
    def files(self) -> tuple[FileBlock, ...]:
        """The files the model produced (generated images...), in stream order."""
        return tuple(b for b in self.blocks if isinstance(b, FileBlock))

    @property
    def citations(self) -> tuple[Citation, ...]:
        """The sources the provider cited, in order: every text block's ``citations``."""
        return tuple(c for b in self.blocks if isinstance(b, TextBlock) for c in b.citations)

    @property
    def failure(self) -> LlmFailure | None:
        """The failure of an ``error`` or ``aborted`` finish, else ``None``."""
        return self.finish.failure

    @property
    def ok(self) -> bool:
        """True unless the stream ended in an error or was aborted."""
        return self.finish.kind not in ("error", "aborted")

    def raise_for_failure(self) -> AssembledResponse:
        """Raise the failure as its :class:`~dshstream._core.errors.LlmError`; else return self."""
        if self.finish.failure is not None:
            raise error_for(self.finish.failure)
        return self

    def message(self) -> Message:
        """The assistant turn to append to history, with provider, model and replay state.

        For a request sent to a fallback chain, the provider and model are those of the
        target that served it (``metadata.served_by``), so the next turn's replay state
        goes back to the adapter that wrote it."""
        provider, model = self.provider, self.model
        served = self.metadata.served_by if self.metadata is not None else None
        if served is not None:
            provider, model = served.provider, served.model
        if model is None and self.metadata is not None:
            model = self.metadata.model
        return Message(
            role="assistant",
            content=self.blocks,
            provider=provider,
            model=model,
            replay_state=self.replay_state,
        )


class _Partial:
    """One block as its chunks arrive; ``block`` is set by its first ``BlockEnd``."""

    __slots__ = ("block_type", "pieces", "call_id", "name", "block")

    def __init__(self, block_type: BlockType) -> None:
        self.block_type = block_type
        self.pieces: list[str] = []
        self.call_id = ""
        self.name = ""
        self.block: Block | None = None


class BlockAssembler:
    """The single-pass fold of a chunk stream back into blocks, usage, a finish and replay
    state: :meth:`push` each chunk, read :meth:`result` at any point."""

    def __init__(self, *, provider: str | None = None, model: str | None = None) -> None:
        self._parts: dict[int, _Partial] = {}
        self._order: list[int] = []
        self.usage: TokenUsage | None = None
        self._finish: Finish | None = None
        self.provider = provider
        self.model = model

    # ------------------------------------------------------------------ folding

    def _part(self, index: int, block_type: BlockType) -> _Partial:
        part = self._parts.get(index)
        if part is None:
            part = self._parts[index] = _Partial(block_type)
            self._order.append(index)
        return part

    def push(self, chunk: StreamChunk) -> None:
        """Fold one chunk into the state."""
        # An exhaustive dispatch: the chunk classes are final, so mypy narrows on
        # ``type(chunk) is X`` both ways and proves the last branch unreachable. It is the
        # fastest test CPython has (a ``match`` costs ~1.5x more per chunk); deltas first.
        if type(chunk) is TextDelta or type(chunk) is ReasoningDelta:
            part = self._parts.get(chunk.index)
            if part is None:
                part = self._part(chunk.index, "text" if type(chunk) is TextDelta else "reasoning")
            if part.block is None:
                part.pieces.append(chunk.text)
        elif type(chunk) is ToolCallDelta:
            part = self._parts.get(chunk.index)
            if part is None:
                part = self._part(chunk.index, "tool-call")
            if part.block is None:
                part.call_id = chunk.id
                name = chunk.name
                if name:
                    part.name = name
                part.pieces.append(chunk.arguments_delta)
        elif type(chunk) is BlockStart:
            self._part(chunk.index, chunk.block_type)
        elif type(chunk) is BlockEnd:
            part = self._part(chunk.index, _block_type_of(chunk.block))
            if part.block is None:
                part.block = chunk.block
        elif type(chunk) is UsageChunk:
            self.usage = chunk.usage
        elif type(chunk) is Finish:
            self._finish = chunk
        else:
            _not_a_chunk(chunk)

    def extend(self, chunks: Iterable[StreamChunk]) -> None:
        """Push every chunk of ``chunks``."""
        for chunk in chunks:
            self.push(chunk)

    # ------------------------------------------------------------------ read-outs

    @property
    def finish(self) -> FinishReason:
        """The finish reason; ``stop`` until a :class:`Finish` arrives."""
        return self._finish.reason if self._finish is not None else _STOP

    @property
    def finished(self) -> bool:
        """Whether a :class:`Finish` chunk has been pushed."""
        return self._finish is not None

    @property
    def metadata(self) -> ResponseMetadata | None:
        """The response metadata carried by the finish chunk."""
        return self._finish.metadata if self._finish is not None else None

    def _all_blocks(self) -> list[Block]:
        out: list[Block] = []
        for index in self._order:
            part = self._parts[index]
            if part.block is not None:
                out.append(part.block)
            elif part.block_type == "text":
                out.append(TextBlock("".join(part.pieces)))
            elif part.block_type == "reasoning":
                out.append(ReasoningBlock("".join(part.pieces)))
            elif part.block_type == "tool-call":
                out.append(
                    ToolCallBlock(
                        id=part.call_id or f"call-{index}",
                        name=part.name,
                        arguments="".join(part.pieces),
                    )
                )
            elif part.block_type == "file":
                continue  # its bytes come only with its BlockEnd: nothing to rebuild
            else:
                raise error_for(
                    make_failure(
                        "CONTRACT_VIOLATION",
                        f"cannot assemble incomplete block of type {part.block_type!r}",
                    )
                )
        return out

    def blocks(self) -> list[Block]:
        """One block per index in first-seen order (tool calls dropped on max-tokens)."""
        blocks = self._all_blocks()
        if self.finish.kind == "max-tokens":
            return [b for b in blocks if not isinstance(b, ToolCallBlock)]
        return blocks

    def interrupted_blocks(self) -> list[Block]:
        """Text and reasoning worth keeping from an interrupted stream (never tool calls)."""
        out: list[Block] = []
        for index in self._order:
            part = self._parts[index]
            block = part.block
            if block is None:
                if part.block_type == "text":
                    block = TextBlock("".join(part.pieces))
                elif part.block_type == "reasoning":
                    block = ReasoningBlock("".join(part.pieces))
                else:
                    continue
            if isinstance(block, (TextBlock, ReasoningBlock)) and block.text.strip():
                out.append(block)
        return out

    @property
    def replay_state(self) -> Any:
        """The adapter's replay state, pruned in step with dropped tool calls."""
        if self._finish is None:
            return None
        state = self._finish.replay_state
        if not isinstance(state, dict) or not isinstance(state.get("blocks"), list):
            return state
        blocks = self._all_blocks()
        entries: list[Any] = state["blocks"]
        if len(entries) != len(blocks):
            return None
        if self.finish.kind != "max-tokens" or not any(isinstance(b, ToolCallBlock) for b in blocks):
            return state
        kept = [e for e, b in zip(entries, blocks) if not isinstance(b, ToolCallBlock)]
        return {**state, "blocks": kept}

    def result(self) -> AssembledResponse:
        """The assembled response as it stands now."""
        return AssembledResponse(
            blocks=tuple(self.blocks()),
            usage=self.usage,
            finish=self.finish,
            replay_state=self.replay_state,
            metadata=self.metadata,
            provider=self.provider,
            model=self.model,
        )


def _block_type_of(block: Block) -> BlockType:
    if isinstance(block, TextBlock):
        return "text"
    if isinstance(block, ReasoningBlock):
        return "reasoning"
    if isinstance(block, ToolCallBlock):
        return "tool-call"
    if isinstance(block, FileBlock):
        return "file"
    return "tool-result"


def _not_a_chunk(value: NoReturn) -> NoReturn:
    """The last branch of :meth:`BlockAssembler.push`: mypy proves it unreachable for every
    chunk type; at run time anything else is a ``TypeError``."""
    raise TypeError(f"BlockAssembler.push: not a dshstream chunk: {_render(value)}")


def _render(value: object) -> str:
    import json

    try:
        return json.dumps(value, default=repr)[:200]
    except (TypeError, ValueError, RecursionError):
        return type(value).__name__


def assemble(
    chunks: Iterable[StreamChunk], *, provider: str | None = None, model: str | None = None
) -> AssembledResponse:
    """Fold a whole chunk stream and return the result."""
    assembler = BlockAssembler(provider=provider, model=model)
    for chunk in chunks:
        assembler.push(chunk)
    return assembler.result()
