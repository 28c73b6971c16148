"""The Anthropic Messages wire (``POST /v1/messages`` with ``stream: true``).

Contract (sans-IO; events ``event: <type>`` + ``data: {json}``, ``message_stop`` last):

1. ``message_start`` carries the response id, the model and the first usage record;
   ``input_tokens`` is already uncached, ``cache_read_input_tokens`` and
   ``cache_creation_input_tokens`` become ``cache_read_tokens``/``cache_write_tokens``.
   A ``message_start`` whose message already holds content (the turn of a programmatic
   tool call: a ``tool_use`` whose ``caller`` is the code execution, with ``stop_reason``
   and ``container`` set, and no block event or ``message_delta`` after it) is read as if
   its blocks had streamed — each one started and stopped in order, at its list index —
   and its ``stop_reason`` and ``container`` as a ``message_delta``'s (rule 3).
   One message per stream: a repeated ``message_start`` of the open message (the same
   id, or one that names none) is ignored; one naming another id before the first's
   ``message_stop`` — two generations spliced together by a proxy or a retrying gateway —
   ends the stream in band with ``MALFORMED_RESPONSE``, the first message's output kept
   and nothing of the second merged into it (its thinking signature and tool calls
   would corrupt the replay state).
2. Each wire content block of type ``text``, ``thinking`` or ``tool_use`` becomes one
   dshstream block, opened on its first non-empty payload: ``text_delta`` is text,
   ``thinking_delta`` reasoning, ``signature_delta`` the reasoning block's signature,
   ``input_json_delta`` a raw arguments fragment (appended, never parsed per delta; a
   tool call whose input streamed as nothing ends with ``"{}"``). Every other block type
   (``redacted_thinking``, ``server_tool_use``, ``*_tool_result``, ``mcp_tool_use``,
   ``compaction``, anything unknown) is kept for replay only and never becomes a
   ``ToolCallBlock``; ``server_tool_use`` and ``mcp_tool_use`` blocks are summarized in
   the finish's ``metadata.server_tools``. A text block's citations (its start's
   ``citations`` and every ``citations_delta``) are kept for replay and become the
   :class:`~dshstream._core.types.Citation` s of its ``TextBlock``; ``compaction_delta``
   is kept for replay. A ``fallback`` block (server-side fallback: the ``from`` model
   declined, the ``to`` model writes what follows; no deltas) is a fact, not text: it is
   kept for replay in its place and becomes an entry of ``metadata.server_fallbacks``
   (``from``, ``to``, ``trigger``, ``category``), and its ``to`` model is the response's
   ``model`` from there on (the model that served).
3. ``message_delta`` carries the stop reason and **cumulative** usage: each field present
   replaces the earlier value. With ``usage.iterations`` the billed usage is the sum over
   the serving model's iterations (``message``, ``compaction``: entries that name no
   model, or the serving model); an entry naming another model (an ``advisor_message``,
   the ``message`` of a model that declined) is that model's usage, reported in
   ``metadata.usage_by_model`` and never added to the response's. The serving model is
   the one a ``fallback_message`` entry names — the fallback model that answered, even
   when ``message_start`` named the requested one — else the response's model (rule 2).
   The delta's ``stop_details`` (a refusal's ``category``, ``explanation``,
   ``fallback_credit_token``, ``recommended_model``...) is kept as sent in
   ``metadata.stop_details``, and its ``container`` (``id``, ``expires_at``: the
   code-execution container) in ``metadata.container`` and in the replay state.
4. ``message_stop`` is the terminal marker; the finish is decided there (EOF before it is
   ``STREAM_CLOSED``, even after a ``message_delta``). end_turn/stop_sequence/pause_turn
   and unknown reasons are ``stop``, tool_use ``tool-calls``, max_tokens and
   model_context_window_exceeded ``max-tokens``, refusal an ``error`` finish with
   ``CONTENT_FILTER`` (its message names the ``recommended_model`` when one is given, never
   the credit token); ``raw`` keeps the provider's word.
5. ``ping`` is liveness only. An ``error`` event ends the stream with a classified
   failure (overloaded_error: ``OVERLOADED``, retryable; rate_limit_error: ``RATE_LIMIT``),
   keeping partial output.
6. Replay state: ``{"wire": "anthropic", "content": [...]}`` — the assistant content
   blocks exactly as received (thinking with its signature, redacted_thinking with its
   data, tool_use with its parsed input, text with its citations, server tool blocks,
   ``fallback`` blocks verbatim in their place: the API needs them to validate the thinking
   around them), in wire order; empty text blocks, which the API refuses in a request, are
   left out. A container the response ran in adds ``"container": <id>`` (rule 3), which
   the wire sends as the next request's ``container``. A tool call written as text (a
   forced tool's structured-output answer,
   :meth:`~dshstream._core.wires.translator.Translator.unwrap_tool_call`) is a text block,
   and prose held beside it (writer rule 5) keeps its own text block.
7. The legacy Text Completions stream (``POST /v1/complete``: ``completion`` events, no
   ``message_*``) is read too: each event's ``completion`` is text, its ``id`` and
   ``model`` identify the response, and the event with a ``stop_reason`` is the last one
   (finish words as in rule 4). It sends no usage.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..strict_json import dump_json, parse_json_object
from ..types import (
    Citation,
    FailureCategory,
    FinishKind,
    ReasoningBlock,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from .json_values import dict_or_empty, first_str, int_or_none
from .replay_blocks import BlockReplayTranslator, PendingBlock
from .usage import counted_usage, split_iterations

WIRE = "anthropic"

_FINISH_KINDS: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# document citation type -> (what its span counts, start field, end field); ends are exclusive
_DOCUMENT_SPANS = {
    "char_location": ("chars", "start_char_index", "end_char_index"),
    "page_location": ("pages", "start_page_number", "end_page_number"),
    "content_block_location": ("blocks", "start_block_index", "end_block_index"),
}


def _span(unit: str, start: Any, end: Any) -> str | None:
    """``"pages 3-4"`` from an exclusive end; ``None`` without a valid start."""
    first = int_or_none(start)
    stop = int_or_none(end)
    if first is None:
        return None
    last = stop - 1 if stop is not None and stop > first else first
    return f"{unit} {first}" if last == first else f"{unit} {first}-{last}"


def _joined(*parts: str | None) -> str | None:
    present = [p for p in parts if p]
    return ", ".join(present) if present else None


def anthropic_citation(raw: Any) -> Citation | None:
    """An Anthropic citation object as a :class:`Citation` (``None`` when not an object)."""
    if type(raw) is not dict:
        return None
    kind = first_str(raw.get("type")) or "unknown"
    cited = first_str(raw.get("cited_text"))
    title = first_str(raw.get("title"))
    if kind == "web_search_result_location":
        return Citation("url", url=first_str(raw.get("url")), title=title, cited_text=cited)
    span = _DOCUMENT_SPANS.get(kind)
    if span is not None:
        unit, start, end = span
        index = int_or_none(raw.get("document_index"))
        document = f"document {index}" if index is not None else None
        location = _joined(document, _span(unit, raw.get(start), raw.get(end)))
        title = first_str(raw.get("document_title"))
        return Citation("document", title=title, cited_text=cited, location=location)
    if kind == "search_result_location":
        source = first_str(raw.get("source"))
        index = int_or_none(raw.get("search_result_index"))
        location = _joined(
            f"search result {index}" if index is not None else None,
            _span("blocks", raw.get("start_block_index"), raw.get("end_block_index")),
        )
        is_url = source is not None and source.startswith(("http://", "https://"))
        return Citation(
            "search-result",
            url=source if is_url else None,
            title=title,
            cited_text=cited,
            location=location if is_url or source is None else _joined(source, location),
        )
    return Citation(kind, url=first_str(raw.get("url")), title=title, cited_text=cited)


def anthropic_usage(record: dict[str, Any]) -> TokenUsage | None:
    """One usage record (a top-level one or an iteration entry) as disjoint counts."""
    return counted_usage(*[record.get(name) for name in _USAGE_FIELDS])


#: blocks whose start begins a phase without content (translator rule 6)
_SERVER_TOOL_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})
_QUIET_BLOCKS = _SERVER_TOOL_BLOCKS | {"tool_use"}


class AnthropicTranslator(BlockReplayTranslator):
    """Anthropic Messages stream events to dshstream chunks."""

    wire = WIRE
    forced_error_codes: ClassVar[Mapping[str, tuple[str, FailureCategory, str]]] = {
        "overloaded_error": ("OVERLOADED", "provider_overloaded", "overloaded"),
        "rate_limit_error": ("RATE_LIMIT", "rate_limit", "rate limited"),
    }

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider or "anthropic", request_id=request_id, max_tokens=max_tokens)
        # the base's self._blocks: wire blocks between content_block_start and
        # content_block_stop, and the replay content (rules 2 and 6)
        self._usage: dict[str, int] = {}
        self._iterations: list[Any] | None = None
        self._stop_reason: str | None = None
        # rule 1: the open message (its id, "" when it named none); None before message_start
        self._message: str | None = None

    # ------------------------------------------------------------------ events

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is not dict:
            if event == "error":
                self.fail_with({"error": payload})
            return
        kind = payload.get("type")
        if not isinstance(kind, str):
            kind = event
        if kind == "content_block_delta":  # most events: the delta's handling inlined here
            index = payload.get("index")
            delta = payload.get("delta")
            if not isinstance(index, int) or type(delta) is not dict:
                return
            kind = delta.get("type")
            pending = self._pending.get(index)
            if pending is None:
                if kind not in ("text_delta", "thinking_delta"):
                    return  # nothing to attach it to
                block_kind = "text" if kind == "text_delta" else "thinking"
                pending = self._blocks.open(index, block_kind, {"type": block_kind})
            key = ("block", index)
            writer = self.writer
            if kind == "text_delta":
                text = delta.get("text")
                if isinstance(text, str) and pending.kind == "text":
                    writer.text(key, text)
            elif kind == "thinking_delta":
                thinking = delta.get("thinking")
                if isinstance(thinking, str) and pending.kind == "thinking":
                    writer.reasoning(key, thinking)
            elif kind == "signature_delta":
                signature = delta.get("signature")
                if isinstance(signature, str) and signature:
                    if pending.kind == "thinking":
                        writer.reasoning(key, "", signature)
                    else:
                        pending.entry["signature"] = signature
            elif kind == "input_json_delta":
                partial = delta.get("partial_json")
                if isinstance(partial, str) and partial:
                    if pending.kind == "tool_use":
                        pending.streamed = True
                        writer.tool_call(key, None, None, partial)
                    else:
                        pending.pieces.append(partial)
            elif kind == "citations_delta":
                citation = delta.get("citation")
                if citation is not None:
                    if pending.citations is None:
                        pending.citations = []
                    pending.citations.append(citation)
            elif kind == "compaction_delta":
                content = delta.get("content")
                if isinstance(content, str):
                    pending.pieces.append(content)
        elif kind == "content_block_start":
            self._on_start(payload.get("index"), payload.get("content_block"))
        elif kind == "content_block_stop":
            index = payload.get("index")
            if isinstance(index, int) and index in self._pending:
                pending = self._pending.pop(index)
                # a client tool's input is complete; a server tool now runs (translator rule 6)
                self.quiet = pending.kind in _SERVER_TOOL_BLOCKS
                self._stop(index, pending)
        elif kind == "message_start":
            self._on_message_start(dict_or_empty(payload.get("message")))
        elif kind == "message_delta":
            delta = dict_or_empty(payload.get("delta"))
            reason = delta.get("stop_reason")
            if isinstance(reason, str) and reason:
                self._stop_reason = reason
            details = delta.get("stop_details")
            if type(details) is dict:
                self.writer.stop_details = details  # rule 3: as sent
            container = delta.get("container")
            if type(container) is dict and first_str(container.get("id")):
                self.writer.container = container  # rule 3: metadata, and replayed (rule 6)
            usage = payload.get("usage")
            if type(usage) is dict:
                self._merge_usage(usage)
        elif kind == "message_stop":
            self._finish_stream()
        elif kind == "error" or event == "error":
            self.fail_with(payload)
        elif kind == "completion":
            self._on_completion(payload)
        # ping and unknown event types: liveness only

    def _on_completion(self, payload: dict[str, Any]) -> None:
        """A legacy Text Completions event (rule 7)."""
        writer = self.writer
        writer.identify(payload.get("id"), payload.get("model"))
        text = payload.get("completion")
        if isinstance(text, str) and text:
            writer.text(("completion", 0), text)
        reason = first_str(payload.get("stop_reason"))
        if reason is not None:  # the last event: no message_stop follows
            self._stop_reason = reason
            self._finish_stream()

    def _on_message_start(self, message: dict[str, Any]) -> None:
        name = message.get("id")
        name = name if isinstance(name, str) else ""
        opened = self._message
        if opened is not None:  # rule 1: a message is open (its message_stop ends the stream)
            if name and opened and name != opened:
                self.end_spliced("message", name, opened)
            return  # else the same message started again: nothing new
        self._message = name
        self.writer.identify(name, message.get("model"))
        details = message.get("stop_details")
        if type(details) is dict:
            self.writer.stop_details = details
        usage = message.get("usage")
        if type(usage) is dict:
            self._merge_usage(usage)
        content = message.get("content")
        if type(content) is list and content:  # rule 1: blocks given whole, not streamed
            for index, block in enumerate(content):
                self._on_start(index, block)
                pending = self._pending.pop(index, None)
                if pending is not None:
                    self._stop(index, pending)
            self.quiet = False
            reason = message.get("stop_reason")
            if isinstance(reason, str) and reason:
                self._stop_reason = reason
            container = message.get("container")
            if type(container) is dict and first_str(container.get("id")):
                self.writer.container = container

    def _on_start(self, index: Any, block: Any) -> None:
        if not isinstance(index, int) or type(block) is not dict:
            return
        kind = block.get("type")
        kind = kind if isinstance(kind, str) else ""
        if index in self._pending:  # a repeated start: close what was there first
            self._stop(index, self._pending.pop(index))
        pending = self._blocks.open(index, kind, dict(block))
        # the input of a tool (buffered whole without eager streaming) or a server tool
        # call: the provider may say nothing for minutes (translator rule 6)
        self.quiet = kind in _QUIET_BLOCKS
        key = ("block", index)
        writer = self.writer
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                writer.text(key, text)
            citations = block.get("citations")
            if type(citations) is list:
                pending.citations = list(citations)
        elif kind == "thinking":
            thinking = block.get("thinking")
            signature = block.get("signature")
            writer.reasoning(key, first_str(thinking) or "", first_str(signature))
        elif kind == "tool_use":
            call_id = block.get("id")
            name = block.get("name")
            writer.tool_call(
                key,
                call_id=call_id if isinstance(call_id, str) else None,
                name=name if isinstance(name, str) else None,
            )
        elif kind == "fallback":
            self._on_fallback(block)

    def _on_fallback(self, block: dict[str, Any]) -> None:
        """A server-side fallback hop (rule 2): a metadata fact; the ``to`` model serves."""
        trigger = dict_or_empty(block.get("trigger"))
        hop: dict[str, Any] = {
            "from": first_str(dict_or_empty(block.get("from")).get("model")),
            "to": first_str(dict_or_empty(block.get("to")).get("model")),
            "trigger": first_str(trigger.get("type")),
        }
        category = first_str(trigger.get("category"))
        if category is not None:
            hop["category"] = category
        self.writer.server_fallbacks.append(hop)
        self.writer.identify(model=hop["to"])

    def _stop(self, index: int, pending: PendingBlock, *, cut: bool = False) -> None:
        """Finish one wire block: close its dshstream block and complete its replay entry."""
        key = ("block", index)
        writer = self.writer
        entry: dict[str, Any] | None = pending.entry
        assert entry is not None
        kind = pending.kind
        if kind == "text":
            if pending.citations:
                cited = [anthropic_citation(raw) for raw in pending.citations]
                writer.cite(key, [c for c in cited if c is not None])
            done = writer.end(key, cut=cut)
            # prose held beside a structured answer (writer rule 5) is still replayed
            text = done.text if isinstance(done, TextBlock) else writer.held_text(key) or ""
            entry["text"] = text
            if pending.citations:
                entry["citations"] = pending.citations
            if not text:
                entry = None  # the API refuses empty text blocks in a request
        elif kind == "thinking":
            done = writer.end(key, cut=cut)
            if isinstance(done, ReasoningBlock):
                entry["thinking"] = done.text
                entry["signature"] = done.signature or ""
            else:
                entry = None
        elif kind == "tool_use":
            initial = entry.get("input")
            unserializable = False
            if not pending.streamed and type(initial) is dict and initial:
                arguments = dump_json(initial)
                unserializable = arguments is None
                writer.tool_call(key, arguments=arguments or "")
            done = writer.end(key, cut=cut, truncated=unserializable)
            if writer.is_unwrapped(key):  # a forced tool's JSON answer: replayed as text
                answer = done.text if isinstance(done, TextBlock) else ""
                entry = {"type": "text", "text": answer} if answer else None
            elif isinstance(done, ToolCallBlock):
                entry["input"] = parse_json_object(done.arguments)
        else:
            if pending.pieces:
                joined = "".join(pending.pieces)
                if kind == "compaction":
                    entry["content"] = joined
                else:
                    entry["input"] = parse_json_object(joined)
            if pending.citations:
                entry["citations"] = pending.citations
            if kind in ("server_tool_use", "mcp_tool_use"):
                summary = {"type": kind}
                for field in ("id", "name", "server_name"):
                    value = first_str(entry.get(field))
                    if value is not None:
                        summary[field] = value
                writer.server_tools.append(summary)
            elif kind == "redacted_thinking":
                writer.reasoning_seen = True
        self._blocks.settle(pending, entry)

    # ------------------------------------------------------------------ usage

    def _merge_usage(self, usage: dict[str, Any]) -> None:
        raw = self.writer.raw_usage
        self.writer.raw_usage = {**raw, **usage} if raw else dict(usage)  # metadata.raw_usage: as sent, updated
        fields = self._usage
        for name in _USAGE_FIELDS:
            value = int_or_none(usage.get(name))
            if value is not None:
                fields[name] = value  # cumulative: replace, never add
        thinking = int_or_none(dict_or_empty(usage.get("output_tokens_details")).get("thinking_tokens"))
        if thinking is not None:
            fields["thinking_tokens"] = thinking
        iterations = usage.get("iterations")
        if type(iterations) is list and iterations:
            self._iterations = iterations
        self.writer.usage = self._billed_usage()

    def _billed_usage(self) -> TokenUsage | None:
        fields = self._usage
        if self._iterations is not None:
            served = _fallback_model(self._iterations)
            if served is not None:
                self.writer.identify(model=served)  # the fallback model answered (rule 3)
            own, others = split_iterations(self._iterations, self.writer.model, anthropic_usage)
            self.writer.usage_by_model = others or None
            totals = dict.fromkeys(_USAGE_FIELDS, 0)
            for record in own:
                for name in totals:
                    totals[name] += int_or_none(record.get(name)) or 0
            return TokenUsage(
                input_tokens=totals["input_tokens"],
                output_tokens=totals["output_tokens"],
                cache_read_tokens=totals["cache_read_input_tokens"],
                cache_write_tokens=totals["cache_creation_input_tokens"],
                reasoning_tokens=fields.get("thinking_tokens"),
            )
        if "input_tokens" not in fields and "output_tokens" not in fields:
            return None
        return TokenUsage(
            input_tokens=fields.get("input_tokens", 0),
            output_tokens=fields.get("output_tokens", 0),
            cache_read_tokens=fields.get("cache_read_input_tokens"),
            cache_write_tokens=fields.get("cache_creation_input_tokens"),
            reasoning_tokens=fields.get("thinking_tokens"),
        )

    # ------------------------------------------------------------------ end

    def replay_state(self) -> Any:
        state = self._blocks.state()
        container = self.writer.container
        container_id = first_str(container.get("id")) if container is not None else None
        if container_id is not None:  # rule 6: the next request reuses the container
            state = state or {"wire": WIRE, "content": []}
            state["container"] = container_id
        return state

    def token_counts(self) -> tuple[int | None, int | None]:
        return (self._usage.get("input_tokens"), self._usage.get("output_tokens"))

    def _finish_stream(self) -> None:
        writer = self.writer
        reason = self._stop_reason
        if reason is not None:
            kind = _FINISH_KINDS.get(reason)
            if reason == "refusal":
                details = writer.stop_details or {}
                recommended = first_str(details.get("recommended_model"))
                hint = f"; recommended model: {recommended[:80]}" if recommended else ""
                failure = writer.failure(
                    "CONTENT_FILTER", f"{writer.provider}: the model refused to answer (refusal){hint}"
                )
                writer.set_finish("error", reason, failure)
            elif kind == "tool-calls" and not writer.tool_call_count:
                writer.set_finish("stop", reason)  # only server tools ran
            else:
                writer.set_finish(kind or "stop", reason)
        self.complete()


def _fallback_model(iterations: list[Any]) -> str | None:
    """The model a ``fallback_message`` entry names (the last one): the fallback model
    that served the response (rule 3); ``None`` when no fallback served."""
    served = None
    for entry in iterations:
        if type(entry) is dict and entry.get("type") == "fallback_message":
            served = first_str(entry.get("model")) or served
    return served


__all__ = ["AnthropicTranslator"]
