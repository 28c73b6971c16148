"""The Google Gemini wire (``streamGenerateContent?alt=sse``, Gemini API and Vertex AI).

Contract (sans-IO; every event is one whole ``GenerateContentResponse``, no terminator):

1. Candidate 0 only. Parts in order: ``text`` is visible text, ``text`` with
   ``thought: true`` reasoning (a ``thoughtSignature`` on a thought part becomes the
   reasoning block's signature); a change of kind closes the open block, so blocks keep
   the order of the parts. ``functionCall`` on the Gemini API arrives whole: one block
   with one delta, the compact JSON of ``args`` (``"{}"`` without args), then its end.
   Vertex streamed arguments arrive as a name with ``willContinue``, then ``partialArgs``
   entries addressed by ``jsonPath`` (string values continue while ``willContinue``),
   closed by a ``functionCall`` without ``willContinue`` (usually ``{}``); they are
   assembled into one JSON string, emitted at the close. The call id is the wire's
   ``id`` or ``call-<block index>``. A whole call is held until the next part of another
   kind, or the end: a ``functionResponse`` part in the model's own output (the server
   ran the tool: ``tools: [{"mcpServers": ...}]``) makes the calls it answers (by ``id``,
   else by ``name``) server-run — no tool-call block, one ``{"type": "function_call",
   "name", "id"?, "arguments"}`` entry each in ``metadata.server_tools``, both parts
   kept for replay (their ``call_ids`` entry ``None``) — so the finish is ``stop`` when
   nothing is left for the client to run; the ``STOP`` that came with such a call ended
   its step only: the stream is open again until the answer's own finish (rule 5).
2. ``inlineData`` (a generated image) is a file block — :class:`~dshstream._core.types.FileBlock`
   with its ``mimeType`` and decoded ``data`` — closing the open text block, and is kept
   for replay; a ``thought`` image (a draft) and inline data that is not base64 are kept
   for replay only. ``executableCode``, ``codeExecutionResult`` and any unknown part are
   kept for replay only and never break the stream. The candidate's ``groundingMetadata`` (the
   last one with grounding chunks wins) becomes the citations of the text block open at
   the end of the stream: one :class:`~dshstream._core.types.Citation` per grounding
   support and chunk it names (``cited_text``: the supported passage of the answer;
   ``start``/``end``: where it is in the block, from the segment's UTF-8 byte offsets into
   the candidate's text, kept only when they cut out that passage), or one per chunk when
   there are no supports; a ``web`` chunk is ``"url"``,
   ``retrievedContext`` ``"document"`` (its file search store, or document name, is the
   ``location``), ``maps`` ``"place"``. The candidate's ``urlContextMetadata`` (the
   url_context tool's fetches; the last one wins) is a server tool's report: one
   ``{"type": "url_context", "urls": [{"url", "status"}]}`` entry in
   ``metadata.server_tools``, so a failed retrieval is seen, not dropped.
3. ``usageMetadata`` is cumulative, the last record with counts wins: input =
   promptTokenCount + toolUsePromptTokenCount − cachedContentTokenCount, cache_read =
   cachedContentTokenCount, output = candidatesTokenCount + thoughtsTokenCount,
   reasoning = thoughtsTokenCount.
4. Finish: STOP is ``stop`` (``tool-calls`` when a function call was made), MAX_TOKENS
   ``max-tokens``; ``promptFeedback.blockReason`` and SAFETY, RECITATION, BLOCKLIST,
   PROHIBITED_CONTENT, SPII, IMAGE_SAFETY (and the other IMAGE_ block reasons) are
   ``error`` finishes with ``CONTENT_FILTER`` (content_blocked, not retryable);
   MALFORMED_FUNCTION_CALL and UNEXPECTED_TOOL_CALL ``error`` finishes (model_error,
   retryable), TOO_MANY_TOOL_CALLS one (model_error, not retryable); every other reason,
   future ones included, an ``error`` finish with the reason as code. A word other than
   STOP is never overridden by a later STOP. ``raw`` keeps Google's word.
5. No terminator: EOF after a finish reason completes the stream, EOF before one is
   ``STREAM_CLOSED`` (an open streamed call is marked truncated). An ``{"error": ...}``
   object in the stream ends it with a classified failure, keeping partial output.
6. Replay state: ``{"wire": "gemini", "parts": [...], "call_ids": [...]}`` — the model
   turn's parts in order, every ``thoughtSignature`` on the exact part it came with
   (a signed part is never merged; consecutive unsigned text parts of the same kind are
   joined), streamed calls assembled into one ``functionCall`` part; ``call_ids`` gives
   the dshstream call id of each ``functionCall`` part, in order (``None`` for a
   server-run call, rule 1).
"""

from __future__ import annotations

import re
from typing import Any

from ..parts import decode_base64, normalize_media_type, sniff_media_type
from ..redact import redact
from ..strict_json import dump_json
from ..types import Citation, FinishKind, LlmFailure, TokenUsage
from .json_values import dict_or_empty, first_str, int_or_none, list_or_empty
from .translator import Translator
from .usage import reported_counts
from .writer import ChunkWriter

WIRE = "gemini"

_BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_FINISH_KINDS: dict[str, FinishKind] = {"STOP": "stop", "MAX_TOKENS": "max-tokens"}
#: tool-call finish reasons: reason -> (headline, retryable); all are model errors
TOOL_CALL_FAILURES: dict[str, tuple[str, bool]] = {
    "MALFORMED_FUNCTION_CALL": ("the model produced a malformed function call", True),
    "UNEXPECTED_TOOL_CALL": ("the model called a tool that was not enabled", True),
    "TOO_MANY_TOOL_CALLS": ("the model called too many tools in a row", False),
}
# grounding chunk key -> citation kind
_GROUNDING_KINDS = {"web": "url", "retrievedContext": "document", "maps": "place"}
_TEXT_PART_KEYS = frozenset({"text", "thought", "thoughtSignature"})
#: a text part with no signature: ``on_payload``'s own case
_PLAIN_PART_KEYS = frozenset({"text", "thought"})
_PATH_TOKEN = re.compile(r"""\.([^.\[\]]+)|\[(\d+)\]|\['((?:[^'\\]|\\.)*)'\]|\["((?:[^"\\]|\\.)*)"\]""")


_MAX_PATH_INDEX_DIGITS = 6  # an array index beyond this is not a real argument path


def parse_json_path(path: str) -> list[str | int] | None:
    """``$.a.b[0]['c d']`` → ``["a", "b", 0, "c d"]``; ``None`` when it is not a path."""
    if not path.startswith("$"):
        return None
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_TOKEN.match(path, pos)
        if match is None:
            return None
        name, number, single, double = match.groups()
        if number is not None:
            if len(number) > _MAX_PATH_INDEX_DIGITS:
                return None
            out.append(int(number))
        else:
            raw = name if name is not None else single if single is not None else double
            out.append(re.sub(r"\\(.)", r"\1", raw) if name is None else raw)
        pos = match.end()
    return out


class _Pieces(list[str]):
    """A string value still streaming in (joined when the call closes)."""


def _settle(value: Any) -> Any:
    if isinstance(value, _Pieces):
        return "".join(value)
    if isinstance(value, dict):
        return {k: _settle(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_settle(v) for v in value]
    return value


class _StreamedCall:
    """A Vertex function call whose arguments arrive as ``partialArgs``."""

    __slots__ = ("key", "call_id", "wire_id", "name", "signature", "args", "continuing", "position")

    def __init__(self, key: tuple[str, int], call_id: str, wire_id: str | None, name: str, position: int) -> None:
        self.key = key
        self.call_id = call_id
        self.wire_id = wire_id
        self.name = name
        self.signature: str | None = None
        self.args: dict[str, Any] = {}
        self.continuing: set[tuple[str | int, ...]] = set()
        self.position = position

    def apply(self, entry: dict[str, Any]) -> None:
        """Apply one ``partialArgs`` entry."""
        path = entry.get("jsonPath")
        steps = parse_json_path(path) if isinstance(path, str) else None
        if not steps:
            return
        if "stringValue" in entry:
            value: Any = entry.get("stringValue")
            value = value if isinstance(value, str) else ""
        elif "numberValue" in entry:
            value = entry.get("numberValue")
        elif "boolValue" in entry:
            value = entry.get("boolValue")
        elif "nullValue" in entry:
            value = None
        elif "structValue" in entry:
            value = entry.get("structValue")
        elif "listValue" in entry:
            value = entry.get("listValue")
        else:
            return
        container: Any = self.args
        for step, following in zip(steps, steps[1:]):
            child = _get(container, step)
            if not isinstance(child, (dict, list)) or isinstance(child, _Pieces):
                child = [] if isinstance(following, int) else {}
                _put(container, step, child)
            container = child
        last = steps[-1]
        ident = tuple(steps)
        current = _get(container, last)
        if isinstance(value, str):
            if ident in self.continuing and isinstance(current, _Pieces):
                current.append(value)
            else:
                _put(container, last, _Pieces([value]))
        else:
            _put(container, last, value)
        if entry.get("willContinue") is True:
            self.continuing.add(ident)
        else:
            self.continuing.discard(ident)


def _get(container: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return container[step] if isinstance(container, list) and step < len(container) else None
    return container.get(step) if isinstance(container, dict) else None


def _put(container: Any, step: str | int, value: Any) -> None:
    if isinstance(step, int):
        if isinstance(container, list):
            # Members arrive in order; a step past the end would pad with invented nulls.
            if step == len(container):
                container.append(value)
            elif step < len(container):
                container[step] = value
    elif isinstance(container, dict):
        container[step] = value


class _HeldCall:
    """A whole function call not yet written (rule 1); ``position`` is its ``call_ids`` entry."""

    __slots__ = ("key", "call_id", "wire_id", "name", "args", "position")

    def __init__(
        self, key: tuple[str, int], call_id: str, wire_id: str | None, name: str, args: Any, position: int
    ) -> None:
        self.key = key
        self.call_id = call_id
        self.wire_id = wire_id
        self.name = name
        self.args = args
        self.position = position


class _TextPart:
    """A replay text part being accumulated (unsigned parts of one kind are joined)."""

    __slots__ = ("pieces", "thought", "signature")

    def __init__(self, text: str, thought: bool, signature: str | None) -> None:
        self.pieces = [text]
        self.thought = thought
        self.signature = signature

    def to_part(self) -> dict[str, Any]:
        part: dict[str, Any] = {"text": "".join(self.pieces)}
        if self.thought:
            part["thought"] = True
        if self.signature is not None:
            part["thoughtSignature"] = self.signature
        return part


#: Gemini's finish words other than STOP and MAX_TOKENS (a gateway relays them as its
#: "native" finish reason); a word not listed here is handled the same way on this wire
GEMINI_FAILURE_WORDS = frozenset(
    _BLOCKED
    | TOOL_CALL_FAILURES.keys()
    | {"LANGUAGE", "OTHER", "IMAGE_OTHER", "NO_IMAGE", "MISSING_THOUGHT_SIGNATURE", "MALFORMED_RESPONSE"}
)


def gemini_finish_failure(writer: ChunkWriter, reason: str, detail: str | None = None) -> LlmFailure:
    """The failure of a Gemini finish word other than STOP and MAX_TOKENS: blocked
    content is ``CONTENT_FILTER``, the tool-call words model errors under their own code,
    any other word (future ones included) its own code."""
    who = writer.provider
    if reason in _BLOCKED:
        return writer.failure("CONTENT_FILTER", f"{who}: response blocked by the provider ({reason})", detail=detail)
    tool_failure = TOOL_CALL_FAILURES.get(reason)
    if tool_failure is not None:
        headline, retryable = tool_failure
        return writer.failure(
            reason, f"{who}: {headline} ({reason})", category="model_error", retryable=retryable, detail=detail
        )
    return writer.stop_failure(reason, detail=detail)


def _grounding_source(chunk: Any) -> Citation | None:
    if type(chunk) is not dict:
        return None
    for key, kind in _GROUNDING_KINDS.items():
        source = chunk.get(key)
        if type(source) is dict:
            return Citation(
                kind,
                url=first_str(source.get("uri")),
                title=first_str(source.get("title"), source.get("domain")),
                cited_text=first_str(source.get("text")) if kind == "document" else None,
                # rule 2: where a retrieved document came from (file search)
                location=(
                    first_str(source.get("fileSearchStore"), source.get("documentName"))
                    if kind == "document"
                    else None
                ),
            )
    return None


def _span(segment: dict[str, Any], text: bytes, before: int, passage: str | None) -> tuple[int, int] | None:
    """A support segment's ``startIndex``/``endIndex`` — UTF-8 byte offsets into the
    candidate's text (a zero start is left out, as protobuf JSON leaves out zeros) — as
    character offsets into the text block, which starts at character ``before`` of it;
    ``None`` when they do not cut the text where its own ``text`` says (rule 2)."""
    start, end = int_or_none(segment.get("startIndex", 0)), int_or_none(segment.get("endIndex"))
    if start is None or end is None or not 0 <= start <= end <= len(text):
        return None
    try:
        head = len(text[:start].decode("utf-8"))
        span = text[start:end].decode("utf-8")
    except UnicodeDecodeError:  # not on character boundaries: not byte offsets of this text
        return None
    if passage is not None and span != passage:
        return None
    if head < before:  # the passage is in an earlier text block
        return None
    return head - before, head - before + len(span)


def grounding_citations(
    metadata: dict[str, Any], text: str | None = None, block_start: int = 0
) -> list[Citation]:
    """The citations of a ``groundingMetadata`` object, in support order; with the
    candidate's visible ``text`` (and the character where the cited text block starts in
    it), each support's span in that block as ``start``/``end`` (rule 2)."""
    sources = [_grounding_source(chunk) for chunk in list_or_empty(metadata.get("groundingChunks"))]
    supports = [s for s in list_or_empty(metadata.get("groundingSupports")) if type(s) is dict]
    if not supports:
        return [source for source in sources if source is not None]
    encoded = text.encode("utf-8", "surrogatepass") if text is not None else None
    out: list[Citation] = []
    for support in supports:
        segment = dict_or_empty(support.get("segment"))
        passage = first_str(segment.get("text"))
        span = _span(segment, encoded, block_start, passage) if encoded is not None else None
        for index in list_or_empty(support.get("groundingChunkIndices")):
            source = sources[index] if type(index) is int and 0 <= index < len(sources) else None
            if source is not None:
                out.append(
                    Citation(
                        source.kind,
                        url=source.url,
                        title=source.title,
                        cited_text=passage or source.cited_text,
                        location=source.location,
                        start=span[0] if span is not None else None,
                        end=span[1] if span is not None else None,
                    )
                )
    return out


class GeminiTranslator(Translator):
    """Gemini / Vertex ``GenerateContentResponse`` events to dshstream chunks."""

    wire = WIRE

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider or "gemini", request_id=request_id, max_tokens=max_tokens)
        self._grounding: dict[str, Any] | None = None
        self._url_context: Any = None
        self._kind: str | None = None  # "text" or "reasoning": the open text-like block
        self._key: tuple[str, int] = ("text", 0)
        self._seq = 0
        self._call: _StreamedCall | None = None
        #: whole calls not yet written: a ``functionResponse`` may show the server ran them (rule 1)
        self._held: list[_HeldCall] = []
        self._parts: list[dict[str, Any] | _TextPart] = []
        self._call_ids: list[str | None] = []
        #: the last ``usageMetadata`` with counts (rule 3), handed to the writer by ``flush``
        self._usage: dict[str, Any] | None = None

    # ------------------------------------------------------------------ events

    def on_payload(self, event: str, payload: Any) -> None:
        """One ``GenerateContentResponse`` (or error) already parsed; ``event`` is the SSE
        event type. The base class's default dispatch feeds it (no terminal marker: rule 5)."""
        if type(payload) is list and len(payload) == 1:
            payload = payload[0]  # a JSON array of one response (or one error)
        if type(payload) is not dict:
            if event == "error":
                self.fail_with(payload)
            return
        if payload.get("error") is not None or event == "error":
            self.fail_with(payload)
            return
        writer = self.writer
        model = payload.get("modelVersion")
        if writer.response_id is None or model != writer.model:  # every event repeats them
            writer.identify(payload.get("responseId"), model)
        candidates = payload.get("candidates")
        if type(candidates) is list:
            for candidate in candidates:
                if type(candidate) is dict and candidate.get("index", 0) in (0, None):
                    # the candidate, handled here: once per event (rule 1)
                    content = candidate.get("content")  # ``dict_or_empty``, inlined
                    parts = content.get("parts") if isinstance(content, dict) else None
                    if type(parts) is list:
                        for part in parts:
                            if type(part) is not dict:
                                continue
                            # A plain text part (only ``text`` and ``thought``, no signature) of
                            # the open block's kind, the common case, handled here: no call
                            text = part.get("text")
                            if type(text) is str and text and part.keys() <= _PLAIN_PART_KEYS:
                                thought = part.get("thought") is True
                                if self._kind == ("reasoning" if thought else "text"):
                                    if thought:
                                        writer.reasoning(self._key, text)
                                    else:
                                        writer.text(self._key, text)
                                    held = self._parts
                                    last = held[-1] if held else None
                                    if type(last) is _TextPart and last.signature is None and last.thought == thought:
                                        last.pieces.append(text)
                                    else:
                                        held.append(_TextPart(text, thought, None))
                                    continue
                            self._on_part(part)
                    if "groundingMetadata" in candidate:
                        grounding = candidate["groundingMetadata"]
                        if type(grounding) is dict and grounding.get("groundingChunks"):
                            self._grounding = grounding
                    if "urlContextMetadata" in candidate:  # rule 2: the url_context tool's report
                        self._url_context = candidate["urlContextMetadata"]
                    reason = candidate.get("finishReason")
                    if isinstance(reason, str) and reason and reason != "FINISH_REASON_UNSPECIFIED":
                        message = candidate.get("finishMessage")
                        self._on_finish_reason(reason, message if isinstance(message, str) else None)
                    break
        usage = payload.get("usageMetadata")
        # (the usual first key tested alone: one ``in`` instead of a method call per event;
        # the record is kept here, not deferred with the writer per event: ``flush`` does it)
        if type(usage) is dict and ("promptTokenCount" in usage or not _USAGE_COUNT_KEYS.isdisjoint(usage)):
            self._usage = usage
        if "promptFeedback" not in payload:
            return
        feedback = dict_or_empty(payload["promptFeedback"])
        block_reason = feedback.get("blockReason")
        if isinstance(block_reason, str) and block_reason and block_reason != "BLOCK_REASON_UNSPECIFIED":
            message = feedback.get("blockReasonMessage")
            failure = writer.failure(
                "CONTENT_FILTER",
                f"{writer.provider}: prompt blocked by the provider ({block_reason})",
                detail=redact(message, limit=2000) if isinstance(message, str) and message else None,
            )
            writer.set_finish("error", block_reason, failure)

    def _on_part(self, part: dict[str, Any]) -> None:
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        call = part.get("functionCall")
        if type(call) is dict:
            self._on_function_call(part, call, signature)
            return
        if self._held:
            response = part.get("functionResponse")
            if type(response) is dict:
                self._on_function_response(part, response)
                return
            self._write_held()
        text = part.get("text")
        if isinstance(text, str) and part.keys() <= _TEXT_PART_KEYS:  # a plain text part (inlined)
            thought = part.get("thought") is True
            if text and not thought and self._kind == "text":  # _emit_text's common case, inlined
                self.writer.text(self._key, text)
            else:
                self._emit_text(text, thought, signature)
            if not text and signature is None:
                return
            last = self._parts[-1] if self._parts else None
            if (
                signature is None
                and isinstance(last, _TextPart)
                and last.signature is None
                and last.thought == thought
            ):
                last.pieces.append(text)
            else:
                self._parts.append(_TextPart(text, thought, signature))
            return
        if isinstance(text, str) and text:
            # A text part with extra fields: stream it, replay it verbatim.
            self._emit_text(text, part.get("thought") is True, signature)
        inline = part.get("inlineData")
        if type(inline) is dict and part.get("thought") is not True:
            self._on_inline_data(inline)
        self._parts.append(dict(part))

    def _on_inline_data(self, inline: dict[str, Any]) -> None:
        """A file the model produced (rule 2)."""
        data = decode_base64(inline.get("data"))
        if data is None:
            return
        self._end_text_block()
        mime = inline.get("mimeType")
        media_type = normalize_media_type(mime) if isinstance(mime, str) and mime.strip() else None
        name = inline.get("displayName")
        self.writer.file(
            media_type or sniff_media_type(data) or "application/octet-stream",
            data,
            name if isinstance(name, str) and name else None,
        )

    # ------------------------------------------------------------------ text

    def _block_key(self, kind: str) -> tuple[str, int]:
        if self._kind != kind:
            self._end_text_block()
            self._kind = kind
            self._seq += 1
            self._key = (kind, self._seq)
        return self._key

    def _end_text_block(self) -> None:
        if self._kind is not None:
            self.writer.end(self._key)
            self._kind = None

    def _emit_text(self, text: str, thought: bool, signature: str | None) -> None:
        if thought:
            if text or signature:
                self.writer.reasoning(self._block_key("reasoning"), text, signature)
        elif text:
            self.writer.text(self._block_key("text"), text)

    # ------------------------------------------------------------------ function calls

    def _on_function_call(self, part: dict[str, Any], call: dict[str, Any], signature: str | None) -> None:
        name = call.get("name")
        name = name if isinstance(name, str) and name else None
        partial = call.get("partialArgs")
        entries = partial if type(partial) is list else None
        more = call.get("willContinue") is True
        open_call = self._call
        if name is not None:
            if open_call is not None:
                self._close_call()
            if not more and entries is None:
                self._whole_call(part, call, name)
                return
            open_call = self._start_call(call, name)
        elif open_call is None:
            return  # arguments or a close with no call to attach them to
        if signature is not None and open_call.signature is None:
            open_call.signature = signature
        args = call.get("args")
        if type(args) is dict and args and not open_call.args:
            open_call.args = dict(args)
        for entry in entries or ():
            if type(entry) is dict:
                open_call.apply(entry)
        if not more:
            self._close_call()

    def _new_call_id(self, call: dict[str, Any]) -> tuple[str, str | None]:
        wire_id = call.get("id")
        wire_id = wire_id if isinstance(wire_id, str) and wire_id else None
        # the block index the call will have: held calls are blocks not yet written
        return (wire_id or f"call-{self.writer.block_count + len(self._held)}", wire_id)

    def _whole_call(self, part: dict[str, Any], call: dict[str, Any], name: str) -> None:
        self._end_text_block()
        call_id, wire_id = self._new_call_id(call)
        self._seq += 1
        args = call.get("args")
        self._held.append(_HeldCall(("call", self._seq), call_id, wire_id, name, args, len(self._call_ids)))
        self._parts.append(dict(part))
        self._call_ids.append(call_id)

    def _write_held(self) -> None:
        """The held whole calls are the client's to run: write them (rule 1)."""
        writer = self.writer
        for held in self._held:
            args = held.args
            arguments = dump_json(args) if isinstance(args, (dict, list)) else ""
            writer.tool_call(held.key, call_id=held.call_id, name=held.name, arguments=arguments or "")
            writer.end(held.key, truncated=arguments is None)
        self._held.clear()

    def _on_function_response(self, part: dict[str, Any], response: dict[str, Any]) -> None:
        """The server's answer to a held call: that call was server-run (rule 1)."""
        held = self._held
        wire_id = first_str(response.get("id"))
        name = first_str(response.get("name"))
        match = next((h for h in held if wire_id is not None and h.wire_id == wire_id), None)
        if match is None:
            match = next((h for h in held if h.name == name), None)
        if match is not None:
            held.remove(match)
            self._call_ids[match.position] = None
            summary: dict[str, Any] = {"type": "function_call", "name": match.name}
            if match.wire_id is not None:
                summary["id"] = match.wire_id
            summary["arguments"] = match.args if type(match.args) is dict else {}
            writer = self.writer
            writer.server_tools.append(summary)
            if writer.finish_kind == "stop":  # the STOP ended the call's step: the answer follows
                writer.withdraw_finish()
        self._parts.append(dict(part))

    def _start_call(self, call: dict[str, Any], name: str) -> _StreamedCall:
        self._write_held()
        self._end_text_block()
        call_id, wire_id = self._new_call_id(call)
        self._seq += 1
        streamed = _StreamedCall(("call", self._seq), call_id, wire_id, name, len(self._parts))
        self._parts.append({})  # filled in when the call closes
        self._call_ids.append(call_id)
        self.writer.tool_call(streamed.key, call_id=call_id, name=name)
        self._call = streamed
        return streamed

    def _close_call(self, *, truncated: bool = False) -> None:
        streamed = self._call
        if streamed is None:
            return
        self._call = None
        try:
            args = _settle(streamed.args)
            arguments = dump_json(args)
        except RecursionError:
            args, arguments = {}, None
        if arguments is None:  # nesting JSON can't carry: keep the call, flag it
            args, arguments, truncated = {}, "", True
        writer = self.writer
        writer.tool_call(streamed.key, arguments=arguments)
        writer.end(streamed.key, cut=truncated, truncated=truncated)
        function_call: dict[str, Any] = {"name": streamed.name, "args": args}
        if streamed.wire_id is not None:
            function_call["id"] = streamed.wire_id
        part: dict[str, Any] = {"functionCall": function_call}
        if streamed.signature is not None:
            part["thoughtSignature"] = streamed.signature
        self._parts[streamed.position] = part

    # ------------------------------------------------------------------ finish

    def _on_finish_reason(self, reason: str, message: str | None) -> None:
        writer = self.writer
        kind = _FINISH_KINDS.get(reason)
        if kind is not None:
            if writer.finish_kind != "error":  # a STOP never hides an earlier failure word
                writer.set_finish(kind, reason)
            return
        detail = redact(message, limit=2000) if message else None
        writer.set_finish("error", reason, gemini_finish_failure(writer, reason, detail))

    # ------------------------------------------------------------------ end

    def flush(self, *, cut: bool) -> None:
        if self._usage is not None:  # the last record with counts (rule 3), before the finish
            self.writer.defer_usage(gemini_usage, self._usage)
            self._usage = None
        self._write_held()  # no answer came: the client's calls (rule 1)
        # No terminator: a streamed call still open here never got its close, so it is cut
        # short whether or not a finish reason arrived.
        self._close_call(truncated=True)
        if self._grounding is not None and self._kind == "text":
            visible = "".join(
                "".join(part.pieces) for part in self._parts if isinstance(part, _TextPart) and not part.thought
            )
            block = self.writer.open_text(self._key) or ""
            self.writer.cite(self._key, grounding_citations(self._grounding, visible, len(visible) - len(block)))
        self._end_text_block()
        if self._url_context is not None:
            urls = [
                {"url": first_str(entry.get("retrievedUrl")), "status": first_str(entry.get("urlRetrievalStatus"))}
                for entry in list_or_empty(dict_or_empty(self._url_context).get("urlMetadata"))
                if type(entry) is dict
            ]
            if urls:
                self.writer.server_tools.append({"type": "url_context", "urls": urls})

    def token_counts(self) -> tuple[int | None, int | None]:
        return reported_counts(
            self.writer.raw_usage, "promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"
        )

    def replay_state(self) -> Any:
        parts = [p.to_part() if isinstance(p, _TextPart) else p for p in self._parts]
        parts = [p for p in parts if p]
        if not parts:
            return None
        state: dict[str, Any] = {"wire": WIRE, "parts": parts}
        if self._call_ids:
            state["call_ids"] = list(self._call_ids)
        return state


# the fields gemini_usage needs; a record without any of them keeps the previous usage
_USAGE_COUNT_KEYS = frozenset({"promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"})


def gemini_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """Normalize a ``usageMetadata`` record to disjoint counts (``None`` without counts)."""
    prompt = int_or_none(usage.get("promptTokenCount"))
    candidates = int_or_none(usage.get("candidatesTokenCount"))
    thoughts = int_or_none(usage.get("thoughtsTokenCount"))
    if prompt is None and candidates is None and thoughts is None:
        return None  # e.g. Vertex's {"trafficType": ...} on intermediate chunks
    tool_prompt = int_or_none(usage.get("toolUsePromptTokenCount")) or 0
    cached = int_or_none(usage.get("cachedContentTokenCount"))
    input_tokens = max(0, (prompt or 0) + tool_prompt - (cached or 0))
    return TokenUsage(
        input_tokens=input_tokens,
        output_tokens=(candidates or 0) + (thoughts or 0),
        cache_read_tokens=cached,
        reasoning_tokens=thoughts,
    )


__all__ = [
    "GEMINI_FAILURE_WORDS",
    "GeminiTranslator",
    "gemini_finish_failure",
    "gemini_usage",
    "grounding_citations",
    "parse_json_path",
]
