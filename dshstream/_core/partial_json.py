"""partial_json(): the streaming partial-JSON reader run over a chunk stream.

Contract: stdlib + ``types``/``errors``/``validate`` and the string-level reader
(:mod:`dshstream._core.partial_json_reader`, whose rules every snapshot keeps); sans-IO,
no threads. This module only chooses which text of the chunks the reader is fed, and when
a :class:`~dshstream._core.partial_json_reader.JsonSnapshot` is yielded; the chunks are
read as the snapshots are, and every chunk is read to the end of the stream (so it
completes, and assembles, as usual).

1. **What is read.** ``tool=None`` reads the text of every text block, in order (its
   ``TextDelta`` s, or the ``BlockEnd`` of a text block that came whole; reasoning is not
   read); ``tool="name"`` or ``tool="call-id"`` reads the arguments of the first tool
   call with that name or id (fragments held until the call is known to be the one; the
   ``BlockEnd``'s arguments when none streamed).
2. **When.** A snapshot is yielded after each chunk that changed the value. With
   ``tool=`` the last one comes at the call's ``BlockEnd``; in text mode when the value
   completes (the text after it is not read) or when the stream ends.
3. **How it ends.** The last snapshot always has ``done`` or ``truncated`` set.
   ``truncated`` means the stream ended (any finish, or the iterator ran out) before the
   JSON was complete, or the tool call ended flagged ``arguments_truncated``: the value is
   what had settled by then, kept, never thrown away (``None`` if nothing had). Code must
   not act on a truncated value as if it were whole.
4. **Failures.** Malformed text raises ``ProtocolError``; malformed tool arguments raise
   :class:`~dshstream.errors.ToolArgumentsError` (``INVALID_TOOL_ARGUMENTS``). The arguments are
   checked when :func:`partial_json` is called, not when the first snapshot is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import ProtocolError, error_for, make_failure
from .partial_json_reader import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_DEPTH,
    JsonDelta,
    JsonSnapshot,
    PartialJsonReader,
    check_depth,
    check_flag,
    check_max_chars,
    take_snapshot,
)
from .types import BlockEnd, StreamChunk, TextBlock, TextDelta, ToolCallBlock, ToolCallDelta
from .validate import check_str

#: ``JsonSnapshot`` and ``JsonDelta`` are what :func:`partial_json` yields and fills them
#: with; they are named here too for the modules that import them from this one
__all__ = ["JsonDelta", "JsonSnapshot", "partial_json"]


def partial_json(
    chunks: Iterable[StreamChunk],
    *,
    tool: str | None = None,
    deltas: bool = False,
    skip_prose: bool = False,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> Iterator[JsonSnapshot]:
    """Snapshots of the JSON in a chunk stream (rules 1-4): of its text blocks, or with
    ``tool=`` (a name or a call id) of one tool call's arguments. ``deltas=True`` fills
    each snapshot's ``deltas``."""
    if tool is not None:
        tool = check_str(tool, "partial_json(tool=)")
    reader = PartialJsonReader(
        deltas=check_flag(deltas, "partial_json(deltas=)"),
        skip_prose=check_flag(skip_prose, "partial_json(skip_prose=)"),
        max_depth=check_depth(max_depth, "partial_json(max_depth=)"),
        max_chars=check_max_chars(max_chars, "partial_json(max_chars=)"),
    )
    if tool is None:
        return _text_snapshots(chunks, reader)
    return _tool_snapshots(chunks, reader, tool)


def _text_snapshots(chunks: Iterable[StreamChunk], reader: PartialJsonReader) -> Iterator[JsonSnapshot]:
    shown = 0
    fed: set[int] = set()  # text blocks whose deltas were read
    finished = False
    for chunk in chunks:
        if finished:
            continue  # keep reading: the stream completes (and assembles) as usual
        if isinstance(chunk, TextDelta):
            fed.add(chunk.index)
            text = chunk.text
        elif isinstance(chunk, BlockEnd) and isinstance(chunk.block, TextBlock) and chunk.index not in fed:
            text = chunk.block.text  # a text block that came whole, without deltas (rule 1)
        else:
            continue
        changes = reader.feed(text)
        if reader.version != shown or reader.done:  # rule 2
            shown = reader.version
            finished = reader.done
            yield take_snapshot(reader, finished, False, changes)
    if not finished:  # rule 3: the stream ended first
        changes = reader.close()
        yield take_snapshot(reader, reader.done, not reader.done, changes)


def _tool_snapshots(chunks: Iterable[StreamChunk], reader: PartialJsonReader, tool: str) -> Iterator[JsonSnapshot]:
    shown = 0
    selected: int | None = None
    fed = False
    ids: dict[int, str] = {}
    names: dict[int, str] = {}
    held: dict[int, list[str]] = {}  # arguments of calls not yet known to be the one (rule 1)
    others: set[int] = set()  # calls known not to be the one
    finished = False
    for chunk in chunks:
        if finished:
            continue  # keep reading: the stream completes (and assembles) as usual
        if isinstance(chunk, ToolCallDelta):
            index = chunk.index
            text = chunk.arguments_delta
            if selected is None:
                if index in others:
                    continue
                if chunk.id:
                    ids[index] = chunk.id
                if chunk.name is not None:
                    names[index] = chunk.name
                if ids.get(index) != tool and names.get(index) != tool:
                    if index in ids and index in names:
                        others.add(index)
                        held.pop(index, None)
                    else:
                        held.setdefault(index, []).append(text)
                    continue
                selected = index
                text = "".join(held.pop(index, ())) + text
                held.clear()
            elif index != selected:
                continue
            if not text:
                continue
            fed = True
            changes = _feed_arguments(reader, text)
            if reader.version != shown:
                shown = reader.version
                yield take_snapshot(reader, False, False, changes)
        elif isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
            index = chunk.index
            block = chunk.block
            changes = []
            if selected is None and index not in others and tool in (block.id, block.name):
                selected = index  # named only at its end: its held arguments are the ones
                text = "".join(held.pop(index, ()))
                held.clear()
                if text:
                    fed = True
                    changes = _feed_arguments(reader, text)
            if index != selected:
                held.pop(index, None)
                others.add(index)
                continue
            if not fed and not block.arguments_truncated:
                changes = _feed_arguments(reader, block.arguments)  # arguments that came whole
            changes += reader.close()
            done = reader.done and not block.arguments_truncated  # rule 3
            finished = True
            yield take_snapshot(reader, done, not done, changes)
    if not finished:  # rule 3: the stream ended before the call did
        changes = reader.close()
        yield take_snapshot(reader, reader.done, not reader.done, changes)


def _feed_arguments(reader: PartialJsonReader, text: str) -> list[JsonDelta]:
    """``reader.feed``, with malformed arguments as ``INVALID_TOOL_ARGUMENTS`` (rule 4)."""
    try:
        return reader.feed(text)
    except ProtocolError as error:
        if error.failure.code != "MALFORMED_RESPONSE":
            raise
        failure = make_failure(
            "INVALID_TOOL_ARGUMENTS", f"tool call arguments: {error.failure.message}", detail=error.failure.detail
        )
        raise error_for(failure) from error
