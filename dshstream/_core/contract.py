"""check_contract: a pass-through iterator that enforces the adapter contract (DESIGN §2).

Contract: yields every chunk unchanged and raises :class:`~dshstream._core.errors.ProtocolError`
(code ``CONTRACT_VIOLATION``) at the first breach:

1. only the seven chunk types; nothing after ``Finish``; a stream that ends normally ends
   with exactly one ``Finish``; at most one ``UsageChunk``, before ``Finish``;
2. block indices are allocated in first-appearance order (0, 1, 2, ...) by ``BlockStart``;
   a delta or ``BlockEnd`` targets a started, still-open block of the matching type;
   text and reasoning deltas are never empty; a closed text block is never empty;
3. tool-call arguments are strings; a file block carries a non-empty media type and
   non-empty bytes;
4. a ``stop``/``tool-calls``/``max-tokens`` finish comes after every block has ended, and a
   ``stop`` with no block at all is a violation (it must be ``EMPTY_RESPONSE``) unless its
   metadata lists tools the provider ran itself (``server_tools``: their output is the
   response, e.g. a generated image).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import error_for, make_failure
from .types import (
    BlockEnd,
    BlockStart,
    BlockType,
    FileBlock,
    Finish,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolResultBlock,
    UsageChunk,
)

_BLOCK_TYPE_OF_BLOCK: dict[type, BlockType] = {
    TextBlock: "text",
    ReasoningBlock: "reasoning",
    ToolCallBlock: "tool-call",
    ToolResultBlock: "tool-result",
    FileBlock: "file",
}


def _violation(message: str) -> Exception:
    return error_for(make_failure("CONTRACT_VIOLATION", f"adapter contract violated: {message}"))


def check_contract(chunks: Iterable[StreamChunk]) -> Iterator[StreamChunk]:
    """Yield ``chunks`` unchanged, raising ``CONTRACT_VIOLATION`` on the first breach."""
    open_blocks: dict[int, BlockType] = {}
    seen = 0
    usage_seen = False
    finished = False
    for chunk in chunks:
        if finished:
            raise _violation(f"{type(chunk).__name__} after Finish")
        if isinstance(chunk, BlockStart):
            if chunk.index != seen:
                raise _violation(
                    f"BlockStart index {chunk.index}, expected {seen} (first-appearance order)"
                )
            if chunk.block_type not in _BLOCK_TYPE_OF_BLOCK.values():
                raise _violation(f"unknown block type {chunk.block_type!r}")
            open_blocks[chunk.index] = chunk.block_type
            seen += 1
        elif isinstance(chunk, TextDelta):
            _expect_open(open_blocks, chunk.index, "text", "TextDelta")
            if not chunk.text:
                raise _violation(f"empty TextDelta for block {chunk.index}")
        elif isinstance(chunk, ReasoningDelta):
            _expect_open(open_blocks, chunk.index, "reasoning", "ReasoningDelta")
            if not chunk.text:
                raise _violation(f"empty ReasoningDelta for block {chunk.index}")
        elif isinstance(chunk, ToolCallDelta):
            _expect_open(open_blocks, chunk.index, "tool-call", "ToolCallDelta")
            if not isinstance(chunk.arguments_delta, str):
                raise _violation("ToolCallDelta.arguments_delta is not a string")
        elif isinstance(chunk, BlockEnd):
            block_type = _BLOCK_TYPE_OF_BLOCK.get(type(chunk.block))
            if block_type is None:
                raise _violation(f"BlockEnd carries a non-block {type(chunk.block).__name__}")
            _expect_open(open_blocks, chunk.index, block_type, "BlockEnd")
            if isinstance(chunk.block, TextBlock) and not chunk.block.text:
                raise _violation(f"empty text block {chunk.index}")
            if isinstance(chunk.block, ToolCallBlock) and not isinstance(chunk.block.arguments, str):
                raise _violation("tool-call arguments are not a JSON string")
            if isinstance(chunk.block, FileBlock) and not (
                isinstance(chunk.block.data, bytes) and chunk.block.data
                and isinstance(chunk.block.media_type, str) and chunk.block.media_type
            ):
                raise _violation(f"file block {chunk.index} without a media type or bytes")
            del open_blocks[chunk.index]
        elif isinstance(chunk, UsageChunk):
            if usage_seen:
                raise _violation("more than one UsageChunk")
            usage_seen = True
        elif isinstance(chunk, Finish):
            kind = chunk.reason.kind
            if kind in ("stop", "tool-calls", "max-tokens") and open_blocks:
                raise _violation(f"{kind!r} finish with blocks still open: {sorted(open_blocks)}")
            if kind == "stop" and seen == 0 and not (chunk.metadata is not None and chunk.metadata.server_tools):
                raise _violation("'stop' finish with no content (must be EMPTY_RESPONSE)")
            finished = True
        else:
            raise _violation(f"not a chunk: {type(chunk).__name__}")
        yield chunk
    if not finished:
        raise _violation("stream ended without a Finish chunk")


def _expect_open(open_blocks: dict[int, BlockType], index: int, block_type: BlockType, what: str) -> None:
    actual = open_blocks.get(index)
    if actual is None:
        raise _violation(f"{what} for block {index}, which is not open")
    if actual != block_type:
        raise _violation(f"{what} of type {block_type!r} for a {actual!r} block {index}")
