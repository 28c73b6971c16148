"""The Bedrock ConverseStream wire (``POST /model/{modelId}/converse-stream``).

Contract (sans-IO; fed :class:`~dshstream._core.eventstream.EventStreamMessage` s, not SSE
events: :attr:`BedrockConverseTranslator.framing` is ``"eventstream"``). The event type is
the ``:event-type`` header and the payload is JSON; the ``"p"`` padding field is ignored.

1. ``messageStart`` carries nothing but the role. Blocks are keyed by
   ``contentBlockIndex``; ``contentBlockStart`` arrives only for tool blocks
   (``start.toolUse`` with ``toolUseId`` and ``name``) and Nova server tool results
   (``start.toolResult``). A ``toolUse`` whose ``type`` is ``server_tool_use`` ran on the
   provider: it is summarized in ``metadata.server_tools`` and kept for replay, never a
   ``ToolCallBlock``; so is a ``toolResult`` block.
2. ``contentBlockDelta`` has one of: ``text`` (visible text), ``toolUse.input`` (a raw
   JSON *string* fragment, appended), ``reasoningContent`` (``text`` reasoning,
   ``signature`` the reasoning block's signature, ``redactedContent`` a replay-only
   redacted block), ``citation`` (a ``Citation`` of its text block) or ``toolResult``
   (server tool output, replay only). ``contentBlockStop`` ends the block; a text block's
   end waits for the next event that is not a citation: Nova's web grounding sends the
   citations of a text block as blocks of their own right after it (a ``citation`` delta
   under a new index, no text), and they are that text block's.
3. ``messageStop.stopReason``: end_turn/stop_sequence and unknown reasons are ``stop``,
   tool_use ``tool-calls``, max_tokens and model_context_window_exceeded ``max-tokens``,
   guardrail_intervened/content_filtered an ``error`` finish with ``CONTENT_FILTER``,
   malformed_model_output/malformed_tool_use an ``error`` finish coded from the word;
   ``raw`` keeps the word.
4. ``metadata`` is the terminal marker once ``messageStop`` has come (before it — a relay
   that reorders the two — it is held, and ``messageStop`` ends the stream): ``usage``
   (``inputTokens`` is already uncached; ``cacheReadInputTokens``/``cacheWriteInputTokens``,
   or the older ``…TokenCount`` spellings, are the cache counts) and ``metrics.latencyMs``
   (the finish's ``metadata.latency_ms``). A stream cut after ``messageStop`` completes
   with its reason; one cut before is ``STREAM_CLOSED``.
5. A message whose ``:message-type`` is ``exception`` (``:exception-type`` names it) or
   ``error`` (``:error-code``/``:error-message`` headers) ends the stream with a
   classified failure, keeping partial output: throttlingException/serviceQuotaExceeded
   ``RATE_LIMIT``, serviceUnavailable/modelNotReady ``OVERLOADED``,
   modelStreamError/internalServer ``SERVER``, modelTimeout ``TIMEOUT``, validation
   ``INVALID_REQUEST`` (``CONTEXT_WINDOW_EXCEEDED`` when the text says so), accessDenied
   ``AUTH``, resourceNotFound ``MODEL_NOT_FOUND``; other types are classified from their
   text. The failure's message never holds upstream text; its ``detail`` does (redacted).
   :class:`BedrockTranslator` reads the messages (this rule) for both Bedrock wires.
6. Replay state: ``{"wire": "bedrock-converse", "content": [...]}``: the assistant
   content blocks in Converse request form, in wire order: ``{"text"}``,
   ``{"reasoningContent": {"reasoningText": {"text", "signature"}}}``,
   ``{"reasoningContent": {"redactedContent"}}`` (base64, as received),
   ``{"toolUse": {"toolUseId", "name", "input"}}`` (input parsed), server tool blocks as
   received. Empty text blocks are left out. A tool call written as text (a forced
   tool's structured-output answer) is a ``{"text"}`` block.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..classify import classify_error_payload
from ..eventstream import EventStreamMessage
from ..redact import redact
from ..strict_json import EventJsonError, loads_event, parse_json_object
from ..types import Citation, FinishKind, LlmFailure, ReasoningBlock, StreamChunk, TextBlock, TokenUsage, ToolCallBlock
from .json_values import dict_or_empty, first_str, int_or_none
from .replay_blocks import BlockReplayTranslator, PendingBlock
from .translator import Translator
from .usage import counted_usage
from .writer import ChunkWriter

WIRE = "bedrock-converse"

_FINISH_KINDS: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "max-tokens",
    "model_context_window_exceeded": "max-tokens",
}
_FILTERED = ("guardrail_intervened", "content_filtered")
_ERROR_REASONS = ("malformed_model_output", "malformed_tool_use")

#: exception type (first letter lower-cased, ``Exception`` suffix kept) -> (code, headline)
EXCEPTION_CODES: dict[str, tuple[str, str]] = {
    "throttlingException": ("RATE_LIMIT", "rate limited"),
    "serviceQuotaExceededException": ("RATE_LIMIT", "service quota exceeded"),
    "serviceUnavailableException": ("OVERLOADED", "service unavailable"),
    "modelNotReadyException": ("OVERLOADED", "model not ready"),
    "modelStreamErrorException": ("SERVER", "model stream error"),
    "internalServerException": ("SERVER", "internal server error"),
    "modelTimeoutException": ("TIMEOUT", "model timed out"),
    "validationException": ("INVALID_REQUEST", "request rejected"),
    "accessDeniedException": ("AUTH", "access denied"),
    "resourceNotFoundException": ("MODEL_NOT_FOUND", "model or resource not found"),
    "modelErrorException": ("SERVER", "model error"),
}


def bedrock_usage(record: dict[str, Any]) -> TokenUsage | None:
    """A Converse ``usage`` object as disjoint counts (``inputTokens`` excludes cache; the
    cache counts under either spelling, rule 4)."""
    read = int_or_none(record.get("cacheReadInputTokens"))
    if read is None:
        read = int_or_none(record.get("cacheReadInputTokenCount"))
    write = int_or_none(record.get("cacheWriteInputTokens"))
    if write is None:
        write = int_or_none(record.get("cacheWriteInputTokenCount"))
    return counted_usage(record.get("inputTokens"), record.get("outputTokens"), read, write)


def bedrock_citation(raw: Any) -> Citation | None:
    """A Converse ``citation`` delta as a :class:`Citation`."""
    if type(raw) is not dict:
        return None
    location = dict_or_empty(raw.get("location"))
    where: str | None = None
    for kind, unit in (("documentChar", "chars"), ("documentPage", "pages"), ("documentChunk", "chunks")):
        spot = location.get(kind)
        if type(spot) is dict:
            index = int_or_none(spot.get("documentIndex"))
            start, end = int_or_none(spot.get("start")), int_or_none(spot.get("end"))
            parts = [f"document {index}"] if index is not None else []
            if start is not None:
                parts.append(f"{unit} {start}-{end}" if end is not None and end != start else f"{unit} {start}")
            where = ", ".join(parts) or None
            break
    web = dict_or_empty(location.get("web"))
    cited = [first_str(dict_or_empty(s).get("text")) for s in raw.get("sourceContent") or () if type(s) is dict]
    text = "".join(c for c in cited if c) or None
    title = first_str(raw.get("title"), web.get("domain"))
    url = first_str(web.get("url"))
    return Citation("url" if url else "document", url=url, title=title, cited_text=text, location=where)


def exception_of(message: EventStreamMessage, text: str) -> tuple[str, str]:
    """An exception (or error) message's type and upstream text: ``:exception-type`` or
    ``:error-code``; the payload's ``message``/``Message``, ``:error-message``, or the
    payload itself."""
    headers = message.headers
    kind = first_str(headers.get(":exception-type"), headers.get(":error-code")) or "unknown"
    payload = loads_event(text) if text.strip().startswith("{") else None
    upstream = first_str(
        dict_or_empty(payload).get("message"), dict_or_empty(payload).get("Message"), headers.get(":error-message")
    ) or text
    return kind, upstream


def exception_failure(writer: ChunkWriter, kind: str, upstream: str) -> LlmFailure:
    """The failure an exception frame of type ``kind`` with text ``upstream`` means, for
    the stream ``writer`` writes (both Bedrock wires)."""
    key = kind[:1].lower() + kind[1:]
    if not key.endswith("Exception"):
        key += "Exception"
    known = EXCEPTION_CODES.get(key)
    detail = redact(upstream, limit=2000) if upstream else None
    if known is None:
        failure = classify_error_payload({"error": {"type": kind, "message": upstream}}, provider=writer.provider)
        return replace(failure, request_id=failure.request_id or writer.request_id)
    code, headline = known
    if code == "INVALID_REQUEST":
        guess = classify_error_payload({"error": {"type": kind, "message": upstream}}, provider=writer.provider)
        if guess.code == "CONTEXT_WINDOW_EXCEEDED":
            code, headline = guess.code, "input too long for the model's context window"
    return writer.failure(code, f"{writer.provider}: {headline} ({kind})", detail=detail)


class BedrockTranslator(Translator):
    """What both Bedrock wires share (this one and ``bedrock-invoke``): fed event-stream
    messages, an exception or error message ends the stream (rule 5), every other one goes
    to :meth:`on_frame`; the provider is ``"bedrock"`` unless told otherwise."""

    framing = "eventstream"

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider or "bedrock", request_id=request_id, max_tokens=max_tokens)

    def feed_events(self, items: Iterable[object]) -> list[StreamChunk]:
        """Translate a batch of event-stream messages (anything else is skipped); the hot
        path, so each message is read here, inlined."""
        try:
            for item in items:
                # self.writer each time: bedrock-invoke adopts its family's writer mid-batch
                if type(item) is EventStreamMessage and self.writer.state != "finished":
                    headers = item.headers
                    kind = headers.get(":message-type", "event")
                    text = item.payload.decode("utf-8", "replace")
                    if kind == "exception" or kind == "error":
                        self.fail_exception(*exception_of(item, text))
                    else:
                        self.on_frame(headers, text)
        except EventJsonError as exc:
            self.end_malformed(exc.text)
        return self.writer.take()

    def on_frame(self, headers: Mapping[str, Any], text: str) -> None:
        """One event message (not an exception): its headers and its payload as text
        (subclasses)."""
        raise NotImplementedError

    def exception_failure(self, kind: str, upstream: str) -> LlmFailure:
        """The failure an exception frame of type ``kind`` with text ``upstream`` means."""
        return exception_failure(self.writer, kind, upstream)

    def fail_exception(self, kind: str, upstream: str) -> None:
        """End the stream with the failure of an exception frame, keeping partial output."""
        failure = self.exception_failure(kind, upstream)
        self.flush(cut=True)
        self.writer.fail(failure)


class BedrockConverseTranslator(BedrockTranslator, BlockReplayTranslator):
    """ConverseStream event-stream messages to dshstream chunks; ``self._blocks`` holds
    the wire blocks between their first event and ``contentBlockStop`` (kind ``text``,
    ``reasoning``, ``tool`` or ``server``) and the replay content (rule 6)."""

    wire = WIRE
    #: a text block stopped, its end held for the citation blocks that may follow (rule 2)
    _held: tuple[int, PendingBlock] | None = None
    #: ``messageStop`` came; ``metadata`` came before it (rule 4)
    _stopped = False
    _metadata_first = False

    # ------------------------------------------------------------------ input

    def on_frame(self, headers: Mapping[str, Any], text: str) -> None:
        event = headers.get(":event-type")
        if isinstance(event, str):
            self.on_payload(event, loads_event(text) if text else {})

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is not dict:
            return
        if event == "contentBlockDelta":
            self._on_delta(payload.get("contentBlockIndex"), payload.get("delta"))
        elif event == "contentBlockStart":
            self._on_start(payload.get("contentBlockIndex"), dict_or_empty(payload.get("start")))
        elif event == "contentBlockStop":
            self.quiet = False
            index = payload.get("contentBlockIndex")
            if isinstance(index, int) and index in self._pending:
                self._stop(index, self._pending.pop(index), hold=True)
        elif event == "messageStop":
            if self._held is not None:
                self._release()
            self._stopped = True
            self._on_stop_reason(payload.get("stopReason"))
            if self._metadata_first:
                self.complete()
        elif event == "metadata":
            usage = payload.get("usage")
            if type(usage) is dict:
                self.writer.defer_usage(bedrock_usage, usage)
            latency = int_or_none(dict_or_empty(payload.get("metrics")).get("latencyMs"))
            if latency is not None:
                self.writer.latency_ms = latency
            if self._stopped:
                self.complete()
            else:
                self._metadata_first = True
        # messageStart and unknown events: nothing to emit

    # ------------------------------------------------------------------ blocks

    def _release(self) -> None:
        """End the held text block (rule 2)."""
        assert self._held is not None
        index, pending = self._held
        self._held = None
        self._stop(index, pending)

    def flush(self, *, cut: bool) -> None:
        if self._held is not None:
            self._release()  # it had its stop: complete, even in a cut stream
        super().flush(cut=cut)

    def _on_start(self, index: Any, start: dict[str, Any]) -> None:
        if not isinstance(index, int):
            return
        if self._held is not None:
            self._release()
        if index in self._pending:
            self._stop(index, self._pending.pop(index))
        tool = start.get("toolUse")
        if type(tool) is dict:
            self.quiet = True  # a tool's input, or a server tool: minutes may pass (translator rule 6)
            entry = {k: v for k, v in tool.items() if k in ("toolUseId", "name", "type")}
            if tool.get("type") == "server_tool_use":
                self._blocks.open(index, "server", {"toolUse": entry})
                return
            self._blocks.open(index, "tool", {"toolUse": entry})
            self.writer.tool_call(("b", index), call_id=first_str(tool.get("toolUseId")), name=first_str(tool.get("name")))
            return
        result = start.get("toolResult")
        if type(result) is dict:
            self._blocks.open(index, "server", {"toolResult": dict(result)})

    def _on_delta(self, index: Any, delta: Any) -> None:
        if not isinstance(index, int) or type(delta) is not dict:
            return
        pending = self._pending.get(index)
        if self._held is not None:
            if pending is None and index != self._held[0] and type(delta.get("citation")) is dict:
                held = self._held[1]  # a citation block of the held text block (rule 2)
                if held.citations is None:
                    held.citations = []
                held.citations.append(delta["citation"])
                return
            self._release()
        key = ("b", index)
        writer = self.writer
        text = delta.get("text")
        if isinstance(text, str):
            if pending is None:
                pending = self._blocks.open(index, "text", {})
            if pending.kind == "text":
                writer.text(key, text)
            return
        reasoning = delta.get("reasoningContent")
        if type(reasoning) is dict:
            if pending is None:
                pending = self._blocks.open(index, "reasoning", {})
            if pending.kind != "reasoning":
                return
            redacted = reasoning.get("redactedContent")
            if isinstance(redacted, str) and redacted:
                pending.pieces.append(redacted)  # a reasoning block's pieces: redacted content
                writer.reasoning_seen = True
            thought = reasoning.get("text")
            signature = reasoning.get("signature")
            writer.reasoning(
                key,
                thought if isinstance(thought, str) else "",
                signature if isinstance(signature, str) and signature else None,
            )
            return
        tool = delta.get("toolUse")
        if type(tool) is dict:
            fragment = tool.get("input")
            if pending is None or not isinstance(fragment, str) or not fragment:
                return
            if pending.kind == "tool":
                writer.tool_call(key, arguments=fragment)
            elif pending.kind == "server":
                pending.pieces.append(fragment)
            return
        citation = delta.get("citation")
        if type(citation) is dict:
            if pending is None:
                pending = self._blocks.open(index, "text", {})
            if pending.citations is None:
                pending.citations = []
            pending.citations.append(citation)
            return
        result = delta.get("toolResult")
        if result is not None and pending is not None and pending.kind == "server":
            pending.pieces.append(result)

    def _stop(self, index: int, pending: PendingBlock, *, cut: bool = False, hold: bool = False) -> None:
        key = ("b", index)
        writer = self.writer
        entry: dict[str, Any] | None = pending.entry
        kind = pending.kind
        if kind == "text" and hold and not cut and writer.is_open(key):
            if self._held is not None:
                self._release()
            self._held = (index, pending)
            return
        if kind == "text":
            if pending.citations and writer.is_open(key):
                cited = [bedrock_citation(raw) for raw in pending.citations]
                writer.cite(key, [c for c in cited if c is not None])
            done = writer.end(key, cut=cut)
            # prose held beside a structured answer (writer rule 5) is still replayed
            text = done.text if isinstance(done, TextBlock) else writer.held_text(key) or ""
            entry = {"text": text} if text else None
        elif kind == "reasoning":
            done = writer.end(key, cut=cut)
            if pending.pieces:
                entry = {"reasoningContent": {"redactedContent": "".join(pending.pieces)}}
            elif isinstance(done, ReasoningBlock):
                reasoning_text: dict[str, Any] = {"text": done.text}
                if done.signature:
                    reasoning_text["signature"] = done.signature
                entry = {"reasoningContent": {"reasoningText": reasoning_text}}
            else:
                entry = None
        elif kind == "tool":
            done = writer.end(key, cut=cut)
            tool = dict(pending.entry["toolUse"])
            tool.pop("type", None)
            if writer.is_unwrapped(key):  # a forced tool's JSON answer: replayed as text
                answer = done.text if isinstance(done, TextBlock) else ""
                entry = {"text": answer} if answer else None
            else:
                if isinstance(done, ToolCallBlock):
                    tool["input"] = parse_json_object(done.arguments)
                    tool.setdefault("toolUseId", done.id)
                entry = {"toolUse": tool}
        else:  # server tool use or result
            if "toolUse" in pending.entry:
                tool = pending.entry["toolUse"]
                tool["input"] = parse_json_object("".join(str(p) for p in pending.pieces))
                summary = {"type": "server_tool_use"}
                for field, wire_name in (("id", "toolUseId"), ("name", "name")):
                    value = first_str(tool.get(wire_name))
                    if value is not None:
                        summary[field] = value
                writer.server_tools.append(summary)
            else:
                result = pending.entry["toolResult"]
                content: list[Any] = []
                for piece in pending.pieces:
                    content.extend(piece if type(piece) is list else [piece])
                result["content"] = content
        self._blocks.settle(pending, entry)

    # ------------------------------------------------------------------ finish

    def _on_stop_reason(self, reason: Any) -> None:
        if not isinstance(reason, str) or not reason:
            return
        writer = self.writer
        if reason in _FILTERED:
            failure = writer.failure(
                "CONTENT_FILTER", f"{writer.provider}: the response was blocked by a content filter ({reason})"
            )
            writer.set_finish("error", reason, failure)
        elif reason in _ERROR_REASONS:
            writer.set_finish("error", reason, writer.stop_failure(reason))
        else:
            kind = _FINISH_KINDS.get(reason, "stop")
            if kind == "tool-calls" and not writer.tool_call_count:
                kind = "stop"  # only server tools ran
            writer.set_finish(kind, reason)

    def token_counts(self) -> tuple[int | None, int | None]:
        raw = self.writer.raw_usage
        if raw is None:
            return (None, None)
        return (int_or_none(raw.get("inputTokens")), int_or_none(raw.get("outputTokens")))


__all__ = [
    "BedrockConverseTranslator",
    "BedrockTranslator",
    "EXCEPTION_CODES",
    "bedrock_citation",
    "bedrock_usage",
    "exception_failure",
    "exception_of",
]
