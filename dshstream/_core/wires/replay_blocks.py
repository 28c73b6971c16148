"""Wire content blocks held for replay, in wire order: what the Anthropic Messages and the
Bedrock Converse wires share (Converse is Anthropic's content model, reshaped by AWS).

Contract (sans-IO, stdlib only):

1. Both wires stream the assistant's content as blocks addressed by a wire index
   (a start, deltas, a stop); each is a :class:`PendingBlock` from its first event to its
   stop, found under its index in :attr:`ReplayBlocks.pending` (a plain dict: the wires
   read it once per delta).
2. A block's slot in the replay content is reserved when it opens
   (:meth:`ReplayBlocks.open`), so the content keeps the order in which blocks opened,
   whatever order they stop in. An index that opens again is a new block (the wire stops
   the old one first).
3. A stopped block's entry (:meth:`ReplayBlocks.settle`) is what it contributes to the
   replay content, in the wire's own request form; ``None`` contributes nothing (an empty
   text block, which both APIs refuse in a request).
4. At the end of the stream the blocks still open stop in index order
   (:meth:`ReplayBlocks.drain`), cut or not, as the wire decides.
5. :meth:`ReplayBlocks.state` is the replay state, ``{"wire": <wire>, "content": [...]}``,
   or ``None`` when nothing is left to replay.
6. :class:`BlockReplayTranslator` is the base of such a wire's translator: it holds the
   stream's :class:`ReplayBlocks` (``_blocks``, its ``pending`` as ``_pending``), its
   ``flush`` stops every open block (rule 4) through the wire's ``_stop`` and its
   ``replay_state`` is rule 5's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .translator import Translator

__all__ = ["BlockReplayTranslator", "PendingBlock", "ReplayBlocks"]


class PendingBlock:
    """A wire content block between its first event and its stop (rule 1)."""

    __slots__ = ("position", "kind", "entry", "pieces", "citations", "streamed")

    def __init__(self, position: int, kind: str, entry: dict[str, Any]) -> None:
        self.position = position  # its slot in the replay content (rule 2)
        self.kind = kind  # the wire's name for what the block is
        self.entry = entry  # the block as received, completed at its stop
        self.pieces: list[Any] = []  # payload of replay-only parts, joined at the stop
        self.citations: list[Any] | None = None  # raw citation objects, as received
        self.streamed = False  # its arguments went to the writer as they arrived


class ReplayBlocks:
    """The open wire blocks and the replay content of one stream (module rules)."""

    __slots__ = ("wire", "pending", "content")

    def __init__(self, wire: str) -> None:
        self.wire = wire
        #: wire index -> the block open under it (rule 1)
        self.pending: dict[int, PendingBlock] = {}
        #: the replay entries, by slot; ``None`` for a block still open or one that
        #: contributes nothing (rules 2, 3)
        self.content: list[dict[str, Any] | None] = []

    def open(self, index: int, kind: str, entry: dict[str, Any]) -> PendingBlock:
        """Track wire block ``index`` and reserve its slot in the replay content (rule 2)."""
        block = PendingBlock(len(self.content), kind, entry)
        self.content.append(None)
        self.pending[index] = block
        return block

    def settle(self, block: PendingBlock, entry: dict[str, Any] | None) -> None:
        """The stopped ``block`` contributes ``entry`` (rule 3)."""
        self.content[block.position] = entry

    def drain(self) -> Iterator[tuple[int, PendingBlock]]:
        """The blocks still open, removed, in index order (rule 4)."""
        for index in sorted(self.pending):
            yield index, self.pending.pop(index)

    def state(self) -> dict[str, Any] | None:
        """The replay state (rule 5)."""
        content = [entry for entry in self.content if entry is not None]
        return {"wire": self.wire, "content": content} if content else None


class BlockReplayTranslator(Translator):
    """A translator whose replay state is the wire's content blocks, in wire order (rule 6);
    subclasses implement :meth:`_stop`."""

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider, request_id=request_id, max_tokens=max_tokens)
        self._blocks = ReplayBlocks(self.wire)
        self._pending = self._blocks.pending  # read once per delta: one attribute, not two

    def _stop(self, index: int, pending: PendingBlock, *, cut: bool = False) -> None:
        """Finish wire block ``index``: end its dshstream block and settle its replay entry
        (subclasses)."""
        raise NotImplementedError

    def flush(self, *, cut: bool) -> None:
        for index, pending in self._blocks.drain():
            self._stop(index, pending, cut=cut)

    def replay_state(self) -> Any:
        return self._blocks.state()
