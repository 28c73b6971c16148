"""dshstream._core.filters.pipeline: the visible-content pipeline on its own, writing into a
recording sink (the stage order, the keys, the flush, the verbatim blocks)."""

from __future__ import annotations

from collections.abc import Hashable

from dshstream._core.filters.pipeline import REASONING_KEY, TEXT_KEY, ContentFilters
from dshstream._core.wires.writer import ChunkWriter

PATH_SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = [{"name": "read_file", "parameters": PATH_SCHEMA}]


class Sink:
    """Records every write as a tuple."""

    def __init__(self) -> None:
        self.log: list[tuple[object, ...]] = []

    def text(self, key: Hashable, text: str) -> None:
        if text:
            self.log.append(("text", key, text))

    def reasoning(self, key: Hashable, text: str, signature: str | None = None) -> None:
        if text:
            self.log.append(("reasoning", key, text))

    def tool_call(
        self, key: Hashable, call_id: str | None, name: str | None, arguments: str
    ) -> None:
        self.log.append(("tool", key, name, arguments))

    def end(self, key: Hashable, *, cut: bool = False, truncated: bool = False) -> object:
        self.log.append(("end", key))
        return None


def joined(log: list[tuple[object, ...]], kind: str) -> str:
    return "".join(str(entry[2]) for entry in log if entry[0] == kind)


def test_think_tags_become_reasoning_under_the_shared_keys() -> None:
    sink = Sink()
    filters = ContentFilters(sink, think_tags=True, spill_guard=False)
    for piece in ["<thi", "nk>plan</th", "ink>Answer"]:
        filters.content(piece)
    filters.flush()
    assert joined(sink.log, "reasoning") == "plan"
    assert joined(sink.log, "text") == "Answer"
    assert {entry[1] for entry in sink.log} == {TEXT_KEY, REASONING_KEY}


def test_spill_guard_moves_glued_reasoning_back() -> None:
    sink = Sink()
    filters = ContentFilters(sink, think_tags=False, spill_guard=True)
    filters.reasoning("Let me think about the reveal")
    filters.content("the reveal.Wrrrf! Here it is.")
    filters.flush()
    assert joined(sink.log, "reasoning").startswith("Let me think about the reveal")
    assert "the reveal." in joined(sink.log, "reasoning")
    assert joined(sink.log, "text") == "Wrrrf! Here it is."
    assert filters.guard is None  # settled: out of the hot path


def test_verbatim_call_is_a_block_of_its_own() -> None:
    sink = Sink()
    filters = ContentFilters(sink, think_tags=False, spill_guard=False, verbatim_tools=TOOLS)
    filters.content('Reading. read_file({"path": "a.txt"}) done')
    filters.flush()
    tools = [entry for entry in sink.log if entry[0] == "tool"]
    assert tools == [("tool", ("verbatim", 0), "read_file", '{"path": "a.txt"}')]
    assert ("end", ("verbatim", 0)) in sink.log
    assert joined(sink.log, "text") == "Reading.  done"


def test_flush_cut_keeps_an_unclosed_think_tag_as_reasoning() -> None:
    sink = Sink()
    filters = ContentFilters(sink, think_tags=True, spill_guard=False)
    filters.content("<think>still thinking")
    filters.flush(cut=True)
    assert joined(sink.log, "reasoning") == "still thinking"
    assert joined(sink.log, "text") == ""


def test_a_chunk_writer_is_a_sink() -> None:
    writer = ChunkWriter(provider="p")
    filters = ContentFilters(writer, think_tags=True, spill_guard=True, verbatim_tools=TOOLS)
    filters.content("<think>hm</think>Hi")
    filters.flush()
    writer.complete()
    kinds = [type(chunk).__name__ for chunk in writer.take()]
    assert kinds[0] == "BlockStart" and kinds[-1] == "Finish"
    assert "ReasoningDelta" in kinds and "TextDelta" in kinds


def test_a_barrier_releases_held_text_before_the_block_that_follows() -> None:
    # Kimi K2.5 on Avian (recorded): reasoning, then " " and " " as content, then a native
    # tool call. The guard holds whitespace (it may precede a spill); the call's barrier
    # releases it, so the text stays before the call instead of moving after it.
    sink = Sink()
    filters = ContentFilters(sink, think_tags=True, spill_guard=True, verbatim_tools=TOOLS)
    filters.reasoning("Let me call the weather function.")
    filters.content(" ")
    filters.content(" read_fi")  # the start of a verbatim call, held too
    assert [entry for entry in sink.log if entry[0] == "text"] == []
    filters.barrier()
    sink.tool_call("native", "c1", "weather", "{}")
    filters.content("<thi")  # a partial think tag is not released by the barrier
    filters.barrier()
    filters.content("nk>later</think>done")
    filters.flush()
    runs: list[list[str]] = []
    for entry in sink.log:
        if entry[0] in ("text", "tool"):
            if runs and runs[-1][0] == entry[0] == "text":
                runs[-1][1] += str(entry[2])
            else:
                runs.append([str(entry[0]), str(entry[2])])
    assert runs == [["text", "  read_fi"], ["tool", "weather"], ["text", "done"]]
    assert joined(sink.log, "reasoning") == "Let me call the weather function.later"
