"""The Cohere Chat v2 wire (``POST /v2/chat`` with ``stream: true``).

Contract (sans-IO; events ``event: <type>`` + ``data: {json}`` whose ``type`` repeats the
event's, ``data: [DONE]`` last):

1. ``message-start`` carries the response id. Content blocks are keyed by ``index``:
   ``content-start`` announces one (its ``type``, ``text`` or ``thinking``, is also the
   field its deltas carry), each ``content-delta`` appends ``delta.message.content.text``
   (visible text) or ``.thinking`` (reasoning), ``content-end`` ends it. A block opens on
   its first non-empty payload.
2. ``tool-plan-delta`` (``delta.message.tool_plan``: what the model says it will do before
   it calls tools) is reasoning, a block of its own, and goes back with the calls on the
   next turn (rule 6). ``tool-call-start`` opens a call (``id``, ``function.name``, a first
   ``arguments`` fragment), ``tool-call-delta`` appends an arguments fragment (raw JSON
   text, never parsed per delta), ``tool-call-end`` ends it; a call whose arguments
   streamed as nothing ends with ``"{}"``.
3. ``citation-start`` cites a span of the text (``start``/``end``, ``text``: the answer's
   words the sources support) with its ``sources``: one
   :class:`~dshstream._core.types.Citation` per source — ``"document"`` for a document
   the request supplied (its ``title``, else its id; ``location`` the source id; a
   document with a ``url`` is ``"url"``), ``"tool"`` for a tool result (``location`` the
   source id: the call id and the output's position). They belong to the open text block
   (they arrive before its ``content-end``); citations of the reasoning
   (``type: THINKING_CONTENT``) are not kept. ``citation-end`` and ``debug`` carry nothing.
4. ``message-end`` carries the finish reason and the usage: ``COMPLETE`` and
   ``STOP_SEQUENCE`` are ``stop``, ``MAX_TOKENS`` ``max-tokens``, ``TOOL_CALL``
   ``tool-calls``, ``CONTENT_BLOCKED`` an ``error`` finish with ``CONTENT_FILTER``;
   ``ERROR``, ``ERROR_LIMIT``, ``TIMEOUT`` and unknown words an ``error`` finish coded from
   the word, ``delta.error`` its detail. ``raw`` keeps the word. Usage from
   ``usage.tokens`` (what the model read and wrote; ``billed_units`` when absent):
   ``cached_tokens`` are subtracted from the input and are ``cache_read_tokens``;
   ``reasoning_tokens`` are inside ``output_tokens``.
5. ``[DONE]`` is the terminal marker; EOF after ``message-end`` completes with its
   reason, EOF before it is ``STREAM_CLOSED``. An ``error`` event, or a payload of
   ``type: "error"``, ends the stream with a classified failure, keeping partial output.
6. Replay state: ``{"wire": "cohere", "thinking": [...], "tool_plan": "..."}`` — the
   reasoning blocks' texts and the tool plan, each only when present: the assistant turn
   sends them back (``thinking`` content items before its text, ``tool_plan`` beside its
   ``tool_calls``).
"""

from __future__ import annotations

from typing import Any

from ..types import Citation, FinishKind, ReasoningBlock, TokenUsage
from .json_values import dict_or_empty, first_str, int_or_none
from .translator import Translator
from .usage import counted_usage

__all__ = ["CohereTranslator", "WIRE", "cohere_citations", "cohere_usage"]

WIRE = "cohere"

_FINISH_KINDS: dict[str, FinishKind] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "max-tokens",
    "TOOL_CALL": "tool-calls",
}
_PLAN = "plan"  # the writer key of the tool plan's reasoning block (rule 2)
# writer keys: ("text", index), ("thinking", index), ("call", index) — one content index
# may carry both kinds of delta in a malformed stream, each its own block


def cohere_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """A ``message-end`` usage record as a :class:`TokenUsage` (rule 4)."""
    tokens = usage.get("tokens")
    counts = tokens if type(tokens) is dict else dict_or_empty(usage.get("billed_units"))
    cached = int_or_none(usage.get("cached_tokens"))
    counted = counted_usage(counts.get("input_tokens"), counts.get("output_tokens"), cached)
    if counted is None:
        return None
    return TokenUsage(
        input_tokens=max(0, counted.input_tokens - (cached or 0)),
        output_tokens=counted.output_tokens,
        cache_read_tokens=cached,
        reasoning_tokens=int_or_none(counts.get("reasoning_tokens")),
    )


def cohere_citations(raw: Any) -> list[Citation]:
    """A ``citation-start``'s citation object as one :class:`Citation` per source (rule 3)."""
    if type(raw) is not dict:
        return []
    text = first_str(raw.get("text"))
    start, end = int_or_none(raw.get("start")), int_or_none(raw.get("end"))
    sources = raw.get("sources")
    out: list[Citation] = []
    for source in sources if type(sources) is list else ():
        if type(source) is not dict:
            continue
        where = first_str(source.get("id"))
        if source.get("type") == "tool":
            out.append(Citation("tool", cited_text=text, location=where, start=start, end=end))
            continue
        document = dict_or_empty(source.get("document"))
        url = first_str(document.get("url"))
        title = first_str(document.get("title"), document.get("id"))
        out.append(Citation("url" if url else "document", url=url, title=title, cited_text=text,
                            location=where, start=start, end=end))
    return out


class CohereTranslator(Translator):
    """Cohere Chat v2 events to dshstream chunks (module rules)."""

    wire = WIRE
    terminal_data = "[DONE]"

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider, request_id=request_id, max_tokens=max_tokens)
        self._open: set[int] = set()  # content indices with a block begun (rule 1)
        self._text: int | None = None  # the open text block's index: citations go there (rule 3)
        self._plan: list[str] = []  # the tool plan's pieces (rules 2, 6)
        self._thinking: list[str] = []  # finished reasoning blocks' texts, for replay (rule 6)

    # ------------------------------------------------------------------ events

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is not dict:
            if event == "error":
                self.fail_with(payload)
            return
        kind = payload.get("type") or event
        writer = self.writer
        if kind == "content-delta":
            index = payload.get("index")
            content = dict_or_empty(dict_or_empty(dict_or_empty(payload.get("delta")).get("message")).get("content"))
            text = content.get("text")
            if type(text) is str and type(index) is int:
                if text:
                    self._text = index
                    self._open.add(index)
                    writer.text(("text", index), text)
                return
            thought = content.get("thinking")
            if type(thought) is str and thought and type(index) is int:
                self._open.add(index)
                writer.reasoning(("thinking", index), thought)
        elif kind == "tool-call-delta":
            call = self._call_of(payload)
            fragment = dict_or_empty(call.get("function")).get("arguments")
            index = payload.get("index")
            if type(fragment) is str and fragment and type(index) is int:
                writer.tool_call(("call", index), arguments=fragment)
        elif kind == "content-end":
            index = payload.get("index")
            if type(index) is int:
                self._end_content(index)
        elif kind == "tool-plan-delta":
            plan = dict_or_empty(dict_or_empty(payload.get("delta")).get("message")).get("tool_plan")
            if type(plan) is str and plan:
                self._plan.append(plan)
                writer.reasoning(_PLAN, plan)
        elif kind == "tool-call-start":
            index = payload.get("index")
            if type(index) is not int:
                return
            writer.end(_PLAN)  # the plan comes before the calls
            call = self._call_of(payload)
            function = dict_or_empty(call.get("function"))
            fragment = function.get("arguments")
            self.quiet = True  # a call's arguments being written (translator rule 6)
            writer.tool_call(
                ("call", index),
                call_id=first_str(call.get("id")),
                name=first_str(function.get("name")),
                arguments=fragment if type(fragment) is str else "",
            )
        elif kind == "tool-call-end":
            self.quiet = False
            index = payload.get("index")
            if type(index) is int:
                writer.end(("call", index))
        elif kind == "citation-start":
            raw = dict_or_empty(dict_or_empty(payload.get("delta")).get("message")).get("citations")
            if self._text is not None and dict_or_empty(raw).get("type") != "THINKING_CONTENT":
                writer.cite(("text", self._text), cohere_citations(raw))
        elif kind == "message-start":
            rid = payload.get("id")
            if isinstance(rid, str) and rid and writer.response_id is None:
                writer.response_id = rid
        elif kind == "message-end":
            delta = dict_or_empty(payload.get("delta"))
            usage = delta.get("usage")
            if type(usage) is dict:
                writer.defer_usage(cohere_usage, usage)
            self._on_finish(delta)
        elif kind == "error" or event == "error":
            self.fail_with(payload)

    @staticmethod
    def _call_of(payload: dict[str, Any]) -> dict[str, Any]:
        return dict_or_empty(dict_or_empty(dict_or_empty(payload.get("delta")).get("message")).get("tool_calls"))

    def _end_content(self, index: int, cut: bool = False) -> None:
        self._open.discard(index)
        done = self.writer.end(("thinking", index), cut=cut)
        if isinstance(done, ReasoningBlock):
            self._thinking.append(done.text)
        self.writer.end(("text", index), cut=cut)
        if self._text == index:
            self._text = None

    def _on_finish(self, delta: dict[str, Any]) -> None:
        word = first_str(delta.get("finish_reason"))
        if word is None:
            return
        writer = self.writer
        reason = word.upper()
        kind = _FINISH_KINDS.get(reason)
        if kind is not None:
            writer.set_finish(kind, word)
            return
        detail = first_str(delta.get("error"))
        if reason == "CONTENT_BLOCKED":
            failure = writer.failure(
                "CONTENT_FILTER", f"{writer.provider}: the response was blocked by a content filter ({word})",
                detail=detail,
            )
        elif reason == "TIMEOUT":
            failure = writer.failure("TIMEOUT", f"{writer.provider}: the generation timed out ({word})", detail=detail)
        else:
            failure = writer.stop_failure(reason, detail=detail)
        writer.set_finish("error", word, failure)

    # ------------------------------------------------------------------ end

    def flush(self, *, cut: bool) -> None:
        for index in sorted(self._open):
            self._end_content(index, cut)
        self.writer.end(_PLAN, cut=cut)

    def replay_state(self) -> Any:
        state: dict[str, Any] = {"wire": WIRE}
        if self._thinking:
            state["thinking"] = list(self._thinking)
        if self._plan:
            state["tool_plan"] = "".join(self._plan)
        return state if len(state) > 1 else None

    def token_counts(self) -> tuple[int | None, int | None]:
        raw = self.writer.raw_usage
        tokens = dict_or_empty(dict_or_empty(raw).get("tokens"))
        return (int_or_none(tokens.get("input_tokens")), int_or_none(tokens.get("output_tokens")))
