"""The visible-content pipeline of a chat stream: think tags, then the reasoning spill
guard, then tool-call markup, then verbatim tool calls, then text.

Contract: sans-IO and stdlib only. :class:`ContentFilters` writes into a
:class:`BlockSink` (a wire's :class:`~dshstream._core.wires.writer.ChunkWriter`):

1. ``content(text)`` runs visible text through the stages that are on, in that order:
   think-tag content becomes reasoning, a spill the guard moves back becomes reasoning,
   a call written as ``<tool_call>`` markup (:mod:`~dshstream._core.filters.tool_markup`)
   or verbatim in prose becomes a tool-call block of its own (opened and ended at once,
   key ``("markup", n)`` or ``("verbatim", n)``), everything else is text.
2. ``reasoning(text)`` is reasoning from the wire's own field; it arms the spill guard.
3. Text goes to the block under :data:`TEXT_KEY`, reasoning under :data:`REASONING_KEY`,
   so a wire that writes past the pipeline (refusals, signatures) uses the same blocks.
4. ``flush(cut=...)`` releases whatever a stage holds, in stage order, at the end of the
   stream (``cut``: the stream was cut short, so an open think tag is not completed).
5. A settled spill guard drops out of the hot path; a pipeline with every stage off is a
   plain pass-through.
6. ``barrier()``: the wire is about to open a block of another kind (a native tool call).
   What the spill guard and the call parsers hold is released first, so text keeps its
   place before that block (two spaces before a call are not moved after it); the guard is
   settled from there (the first visible text was that). A partial think tag stays held.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Protocol

from ..types import ToolCallBlock
from .spill_guard import ReasoningSpillGuard
from .think_tags import ThinkTagStripper
from .tool_markup import ToolMarkupParser
from .verbatim_tools import VerbatimToolCallParser

__all__ = ["REASONING_KEY", "TEXT_KEY", "BlockSink", "ContentFilters"]

#: the block keys the pipeline writes text and reasoning under
TEXT_KEY = "text"
REASONING_KEY = "reasoning"


class BlockSink(Protocol):
    """Where the pipeline writes: the block-writing half of a wire's ``ChunkWriter``."""

    def text(self, key: Hashable, text: str) -> None: ...

    def reasoning(self, key: Hashable, text: str, signature: str | None = None) -> None: ...

    def tool_call(
        self, key: Hashable, call_id: str | None, name: str | None, arguments: str, /
    ) -> None: ...

    def end(self, key: Hashable, *, cut: bool = False, truncated: bool = False) -> object: ...


class ContentFilters:
    """The visible-content pipeline; each stage is optional (see the module docstring)."""

    __slots__ = ("sink", "stripper", "guard", "markup", "verbatim", "_calls")

    def __init__(
        self,
        sink: BlockSink,
        *,
        think_tags: bool,
        spill_guard: bool,
        verbatim_tools: Sequence[Mapping[str, Any]] = (),
        markup_tools: Sequence[object] = (),
    ) -> None:
        self.sink = sink
        self.stripper = ThinkTagStripper() if think_tags else None
        self.guard: ReasoningSpillGuard | None = ReasoningSpillGuard() if spill_guard else None
        self.markup = ToolMarkupParser(markup_tools) if markup_tools else None
        self.verbatim = VerbatimToolCallParser(list(verbatim_tools)) if verbatim_tools else None
        self._calls = {"markup": 0, "verbatim": 0}

    def reasoning(self, text: str) -> None:
        """Reasoning from the wire's reasoning field (rule 2)."""
        if self.guard is not None and text:
            self.guard.observe_reasoning(text)
        self.sink.reasoning(REASONING_KEY, text)

    def content(self, text: str) -> None:
        """Visible text from the wire (rule 1)."""
        if self.stripper is not None:
            text, thought = self.stripper.feed(text)
            if thought:
                self.reasoning(thought)
        self._visible(text)

    def _visible(self, text: str) -> None:
        guard = self.guard
        if guard is not None and text:
            text, spilled = guard.filter_content(text)
            if spilled:
                self.sink.reasoning(REASONING_KEY, spilled)
            if guard.settled:
                self.guard = None
        if self.markup is not None:
            self._emit_markup(self.markup.feed(text))
        elif self.verbatim is not None:
            self._emit(self.verbatim.feed(text))
        else:
            self.sink.text(TEXT_KEY, text)

    def _emit_markup(self, items: list[str | ToolCallBlock]) -> None:
        verbatim = self.verbatim
        for item in items:
            if isinstance(item, str):
                if verbatim is not None:
                    self._emit(verbatim.feed(item))
                else:
                    self.sink.text(TEXT_KEY, item)
            else:
                self._call("markup", item)

    def _emit(self, items: list[str | ToolCallBlock]) -> None:
        for item in items:
            if isinstance(item, str):
                self.sink.text(TEXT_KEY, item)
            else:
                self._call("verbatim", item)

    def _call(self, stage: str, call: ToolCallBlock) -> None:
        key = (stage, self._calls[stage])
        self._calls[stage] += 1
        self.sink.tool_call(key, call.id, call.name, call.arguments)
        self.sink.end(key)

    def barrier(self) -> None:
        """Release held text before a block of another kind opens (rule 6)."""
        if self.guard is not None:
            visible, spilled = self.guard.flush()
            if spilled:
                self.sink.reasoning(REASONING_KEY, spilled)
            self.guard = None
            if visible:
                self._visible(visible)
        self._flush_calls()

    def _flush_calls(self) -> None:
        if self.markup is not None:
            self._emit_markup(self.markup.flush())
        if self.verbatim is not None:
            self._emit(self.verbatim.flush())

    def flush(self, *, cut: bool = False) -> None:
        """Release held text at the end of the stream (rule 4)."""
        if self.stripper is not None:
            visible, thought = self.stripper.flush(cut=cut)
            if thought:
                self.reasoning(thought)
            self._visible(visible)
        if self.guard is not None:
            visible, spilled = self.guard.flush()
            if spilled:
                self.sink.reasoning(REASONING_KEY, spilled)
            self.guard = None
            self._visible(visible)
        self._flush_calls()
