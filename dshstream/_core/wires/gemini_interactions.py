"""The Gemini Interactions API wire (``POST /v1beta/interactions`` with ``"stream": true``,
and ``GET /v1beta/interactions/{id}?stream=true`` to continue one).

Contract (sans-IO; every event is one JSON object whose ``event_type`` — repeated in the
SSE ``event:`` field — names it; ``data: [DONE]`` ends the body):

1. **Steps.** An interaction's output is a sequence of steps, each ``step.start`` (its
   ``index`` and ``step.type``), ``step.delta`` events, ``step.stop``. ``model_output``
   steps stream ``text`` deltas (visible text) and ``image``/``audio``/``video``/``document``
   deltas (a file block each, closing the step's open text block, kept for replay;
   ``data`` that is not base64 is kept for replay only). ``thought`` steps stream
   ``thought_summary`` deltas (``content.text``: reasoning) and ``thought_signature``
   (the reasoning block's signature; a thought step with a signature and no summary is a
   reasoning block with no text). ``function_call`` steps carry ``id`` and ``name`` on
   ``step.start`` and stream their arguments as ``arguments_delta`` JSON fragments; a call
   that streamed none uses the start's ``arguments`` object (``"{}"`` without one). A
   delta whose step never started opens one of the kind the delta implies. Every other
   step (``google_search_call``, ``code_execution_result``, ``function_result``...) is run
   by the server: kept for replay, its ``*_call`` steps summarized in
   ``metadata.server_tools`` (type, id, queries), and while one runs — from the stop of a
   ``*_call`` step to the next ``step.start`` — the translator is :attr:`quiet`
   (translator rule 6). Unknown delta and event types are skipped.
2. **Citations.** ``text_annotation_delta`` annotations become the citations of the
   step's open text block: ``url_citation`` ``"url"``, ``file_citation`` ``"file"``,
   ``place_citation`` ``"place"`` (``start_index``/``end_index`` as ``start``/``end``).
3. **Usage.** The last ``usage`` seen wins — ``interaction.completed``'s, or the running
   total of an agent's ``step.stop`` (``step_usage``, one step's share, is ignored):
   input = total_input_tokens + total_tool_use_tokens − total_cached_tokens, cache_read =
   total_cached_tokens, output = total_output_tokens + total_thought_tokens (the
   documented totals count thoughts apart: ``total_tokens`` is their sum), reasoning =
   total_thought_tokens.
4. **Finish.** ``interaction.completed`` ends the stream by its ``status``: ``completed``
   is ``stop`` (``tool-calls`` when a function was called), ``requires_action``
   ``tool-calls``, ``incomplete`` ``max-tokens``; ``failed``, ``cancelled``,
   ``budget_exceeded`` and any other word an ``error`` finish with the word as its code.
   ``raw`` keeps the status. An ``error`` event (``{"error": {"code", "message"}}``)
   ends the stream with a classified failure, partial output kept. ``[DONE]`` or EOF
   before ``interaction.completed`` is ``STREAM_CLOSED`` (an open call is truncated).
5. **Position** (translator rule 8). :attr:`last_sequence` counts the events processed
   (``-1`` before any) and :attr:`last_event_id` is the latest ``event_id`` among them:
   a cut stream continues after that id (``last_event_id``). A continuation replays
   what followed that id — the whole interaction when no event carried one — so
   :meth:`begin_continuation` has the translator drop as many events as it processed
   past it: every event is processed once, even when only some events carry an id.
6. **Replay state.** ``{"wire": "gemini-interactions", "interaction_id": ...,
   "steps": [...], "call_ids": [...]}`` — the output steps in order, in the shape the API
   takes back as ``input``: ``model_output`` with its ``content`` (text joined per run,
   files as ``image``... content), ``thought`` with its ``signature`` and ``summary``,
   ``function_call`` with ``id``, ``name`` and parsed ``arguments``, a server step as its
   start plus the fields of its deltas; ``call_ids`` gives the dshstream call id of each
   ``function_call`` step, in order. The interaction id lets the next turn send
   ``previous_interaction_id`` instead of the history.
"""

from __future__ import annotations

from typing import Any

from ..parts import decode_base64, normalize_media_type, sniff_media_type
from ..sse import ServerSentEvent
from ..strict_json import dump_json, loads_event, parse_json_object
from ..types import Citation, FinishKind, TokenUsage
from .json_values import dict_or_empty, first_str, int_or_none, list_or_empty
from .translator import Translator
from .usage import reported_counts

__all__ = ["WIRE", "GeminiInteractionsTranslator", "interactions_usage"]

WIRE = "gemini-interactions"

_STATUS_KINDS: dict[str, FinishKind] = {
    "completed": "stop",
    "requires_action": "tool-calls",
    "incomplete": "max-tokens",
}
_FILE_DELTAS = frozenset({"image", "audio", "video", "document"})
_CITATION_KINDS = {"url_citation": "url", "file_citation": "file", "place_citation": "place"}
# the kind of step a delta implies when its step.start never arrived (rule 1)
_DELTA_STEPS = {
    "text": "model_output",
    "image": "model_output",
    "audio": "model_output",
    "video": "model_output",
    "document": "model_output",
    "text_annotation_delta": "model_output",
    "thought_summary": "thought",
    "thought_signature": "thought",
    "arguments_delta": "function_call",
}
_OWN_STEPS = frozenset({"model_output", "thought", "function_call"})


class _Step:
    """One step between its ``step.start`` and its ``step.stop``."""

    __slots__ = ("index", "kind", "start", "key", "runs", "content", "summary", "signature",
                 "call_id", "pieces", "extra")

    def __init__(self, index: int, kind: str, start: dict[str, Any]) -> None:
        self.index = index
        self.kind = kind
        self.start = start
        self.key: tuple[int, int] = (index, 0)  # the open block's key (rule 1)
        self.runs = 0
        self.content: list[dict[str, Any] | list[str]] = []  # model_output: text runs and files
        self.summary: list[str] = []
        self.signature: str | None = None
        self.call_id = ""
        self.pieces: list[str] = []  # function_call: argument fragments
        self.extra: dict[str, Any] = {}  # a server step's delta fields


class GeminiInteractionsTranslator(Translator):
    """Gemini Interactions API events to dshstream chunks (module rules)."""

    wire = WIRE

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider or "gemini", request_id=request_id, max_tokens=max_tokens)
        #: the number of events processed, less one (rule 5)
        self.last_sequence = -1
        #: the latest ``event_id`` processed (rule 5); ``None``: none yet
        self.last_event_id: str | None = None
        self._skip = 0
        self._since_id = 0  # events processed after the last one with an event_id
        self._steps: dict[int, _Step] = {}
        self._done: list[_Step] = []  # steps in stop order, for replay
        self._call_ids: list[str] = []
        self._interaction_id: str | None = None

    # ------------------------------------------------------------------ position (rule 5)

    def begin_continuation(self) -> None:
        """The next bytes are a continuation after the last event id (without one: from
        the start), so the events already processed past it are dropped (rule 5)."""
        self._skip = self._since_id if self.last_event_id is not None else self.last_sequence + 1

    # ------------------------------------------------------------------ dispatch

    def on_event(self, event: ServerSentEvent) -> None:
        data = event.data
        if data == "[DONE]":
            self.end_input()  # rule 4: the completed event would have finished the stream
            return
        payload = loads_event(data)
        if type(payload) is not dict:
            return
        if self._skip:
            self._skip -= 1
            return
        self.last_sequence += 1
        event_id = payload.get("event_id")
        if isinstance(event_id, str) and event_id:
            self.last_event_id = event_id
            self._since_id = 0
        else:
            self._since_id += 1
        kind = payload.get("event_type")
        if not isinstance(kind, str) or not kind:
            kind = event.event
        if kind == "step.delta":
            self._on_delta(payload)
        elif kind == "step.start":
            self._on_start(payload)
        elif kind == "step.stop":
            self._on_stop(payload)
        elif kind == "interaction.created":
            self._identify(dict_or_empty(payload.get("interaction")))
        elif kind == "interaction.completed":
            self._on_completed(dict_or_empty(payload.get("interaction")))
        elif kind == "error" or (kind not in _KNOWN_EVENTS and type(payload.get("error")) is dict):
            self.fail_with(payload)

    def _identify(self, interaction: dict[str, Any]) -> None:
        interaction_id = interaction.get("id")
        if self._interaction_id is None and isinstance(interaction_id, str) and interaction_id:
            self._interaction_id = interaction_id
        self.writer.identify(interaction_id, interaction.get("model") or interaction.get("agent"))

    # ------------------------------------------------------------------ steps

    def _step(self, index: Any, kind: str, start: dict[str, Any] | None = None) -> _Step:
        number = index if type(index) is int else -1
        step = self._steps.get(number)
        if step is None:
            step = _Step(number, kind, start or {"type": kind})
            self._steps[number] = step
            if kind == "function_call":
                self._open_call(step)
        return step

    def _on_start(self, payload: dict[str, Any]) -> None:
        self.quiet = False
        start = dict_or_empty(payload.get("step"))
        kind = start.get("type")
        kind = kind if isinstance(kind, str) and kind else "unknown"
        index = payload.get("index")
        old = self._steps.get(index if type(index) is int else -1)
        if old is not None:
            self._stop(old)  # a step restarted under its index: the first one is over
        step = self._step(index, kind, dict(start))
        if kind == "thought":
            signature = start.get("signature")
            for item in list_or_empty(start.get("summary")):
                self._summary(step, dict_or_empty(item))
            if isinstance(signature, str) and signature:
                self._signature(step, signature)
        elif kind == "model_output":
            for item in list_or_empty(start.get("content")):
                self._content(step, dict_or_empty(item))

    def _on_delta(self, payload: dict[str, Any]) -> None:
        delta = payload.get("delta")
        if type(delta) is not dict:
            return
        kind = delta.get("type")
        if not isinstance(kind, str):
            kind = ""
        index = payload.get("index")
        step = self._steps.get(index if type(index) is int else -1)
        if step is None:
            implied = _DELTA_STEPS.get(kind)
            if implied is None:
                return
            step = self._step(index, implied)
        if kind == "text" and step.kind == "model_output":  # the hot path
            text = delta.get("text")
            if isinstance(text, str) and text:
                self._text(step, text)
        elif kind == "arguments_delta" and step.kind == "function_call":
            fragment = delta.get("arguments")
            if isinstance(fragment, str) and fragment:
                step.pieces.append(fragment)
                self.writer.tool_call(step.key, arguments=fragment)
        elif kind == "thought_summary" and step.kind == "thought":
            self._summary(step, dict_or_empty(delta.get("content")))
        elif kind == "thought_signature" and step.kind == "thought":
            signature = delta.get("signature")
            if isinstance(signature, str) and signature:
                self._signature(step, signature)
        elif kind == "text_annotation_delta" and step.kind == "model_output":
            citations = [c for c in map(_citation, list_or_empty(delta.get("annotations"))) if c is not None]
            if citations:
                self.writer.cite(step.key, citations)
        elif step.kind == "model_output" and kind in _FILE_DELTAS:
            self._content(step, delta)
        elif step.kind not in _OWN_STEPS:
            step.extra.update((k, v) for k, v in delta.items() if k != "type")

    def _text(self, step: _Step, text: str) -> None:
        self.writer.text(step.key, text)
        runs = step.content
        if runs and type(runs[-1]) is list:
            runs[-1].append(text)
        else:
            runs.append([text])

    def _content(self, step: _Step, item: dict[str, Any]) -> None:
        """A content item of a model_output step: text, or a file (rule 1)."""
        kind = item.get("type")
        if not isinstance(kind, str):
            return
        if kind == "text":
            text = item.get("text")
            if isinstance(text, str) and text:
                self._text(step, text)
            return
        if kind not in _FILE_DELTAS:
            return
        entry = {k: v for k, v in item.items()}
        step.content.append(entry)
        data = decode_base64(item.get("data"))
        if data is None:
            return  # a URI or data that is not base64: kept for replay only
        writer = self.writer
        writer.end(step.key)
        step.runs += 1
        step.key = (step.index, step.runs)
        mime = item.get("mime_type")
        media_type = normalize_media_type(mime) if isinstance(mime, str) and mime.strip() else None
        writer.file(media_type or sniff_media_type(data) or "application/octet-stream", data)

    def _summary(self, step: _Step, content: dict[str, Any]) -> None:
        text = content.get("text")
        if content.get("type", "text") == "text" and isinstance(text, str) and text:
            step.summary.append(text)
            self.writer.reasoning(step.key, text)

    def _signature(self, step: _Step, signature: str) -> None:
        step.signature = signature
        self.writer.reasoning(step.key, "", signature)

    def _open_call(self, step: _Step) -> None:
        start = step.start
        wire_id = first_str(start.get("id"))
        name = first_str(start.get("name")) or ""
        step.call_id = wire_id or f"call-{self.writer.block_count}"
        self._call_ids.append(step.call_id)
        self.writer.tool_call(step.key, call_id=step.call_id, name=name)

    def _on_stop(self, payload: dict[str, Any]) -> None:
        index = payload.get("index")
        step = self._steps.get(index if type(index) is int else -1)
        usage = payload.get("usage")
        if type(usage) is dict and not _USAGE_KEYS.isdisjoint(usage):
            self.writer.defer_usage(interactions_usage, usage)
        if step is not None:
            self._stop(step)
            if step.kind.endswith("_call") and step.kind != "function_call":
                self.quiet = True  # rule 1: the server runs the tool now

    def _stop(self, step: _Step, *, cut: bool = False) -> None:
        del self._steps[step.index]
        writer = self.writer
        if step.kind == "function_call":
            if not step.pieces and not cut:
                arguments = step.start.get("arguments")
                whole = dump_json(arguments) if type(arguments) is dict and arguments else "{}"
                writer.tool_call(step.key, arguments=whole or "{}")
                step.pieces.append(whole or "{}")
            writer.end(step.key, cut=cut, truncated=cut)
        elif step.kind in _OWN_STEPS:
            writer.end(step.key, cut=cut)
        elif step.kind.endswith("_call"):
            summary: dict[str, Any] = {"type": step.kind}
            call_id = first_str(step.start.get("id"))
            if call_id:
                summary["id"] = call_id
            arguments = dict_or_empty(step.extra.get("arguments") or step.start.get("arguments"))
            queries = [q for q in list_or_empty(arguments.get("queries")) if isinstance(q, str)]
            if queries:
                summary["queries"] = queries
            writer.server_tools.append(summary)
        self._done.append(step)

    # ------------------------------------------------------------------ finish

    def _on_completed(self, interaction: dict[str, Any]) -> None:
        self._identify(interaction)
        writer = self.writer
        usage = interaction.get("usage")
        if type(usage) is dict and not _USAGE_KEYS.isdisjoint(usage):
            writer.defer_usage(interactions_usage, usage)
        status = interaction.get("status")
        status = status if isinstance(status, str) and status else "completed"
        kind = _STATUS_KINDS.get(status)
        if kind is not None:
            writer.set_finish(kind, status)
        else:
            writer.set_finish("error", status, writer.stop_failure(status))
        self.complete()

    def flush(self, *, cut: bool) -> None:
        # Steps still open here never got their stop: a call among them is cut short.
        for step in sorted(self._steps.values(), key=lambda s: s.index):
            self._stop(step, cut=True)

    def token_counts(self) -> tuple[int | None, int | None]:
        return reported_counts(
            self.writer.raw_usage, "total_input_tokens", "total_output_tokens", "total_thought_tokens"
        )

    def replay_state(self) -> Any:
        steps = [entry for entry in map(self._replay_step, self._done) if entry is not None]
        if not steps:
            return None
        state: dict[str, Any] = {"wire": WIRE, "steps": steps}
        if self._interaction_id is not None:
            state["interaction_id"] = self._interaction_id
        if self._call_ids:
            state["call_ids"] = list(self._call_ids)
        return state

    def _replay_step(self, step: _Step) -> dict[str, Any] | None:
        """One step in the shape the API takes back as input (rule 6)."""
        if step.kind == "model_output":
            content = [
                {"type": "text", "text": "".join(item)} if type(item) is list else item for item in step.content
            ]
            return {"type": "model_output", "content": content} if content else None
        if step.kind == "thought":
            if step.signature is None and not step.summary:
                return None
            thought: dict[str, Any] = {"type": "thought"}
            if step.signature is not None:
                thought["signature"] = step.signature
            if step.summary:
                thought["summary"] = [{"type": "text", "text": "".join(step.summary)}]
            return thought
        if step.kind == "function_call":
            return {
                "type": "function_call",
                "id": first_str(step.start.get("id")) or step.call_id,
                "name": first_str(step.start.get("name")) or "",
                "arguments": parse_json_object("".join(step.pieces)),
            }
        return {**step.start, **step.extra}


_KNOWN_EVENTS = frozenset(
    {"step.start", "step.delta", "step.stop", "interaction.created", "interaction.completed",
     "interaction.status_update", "error"}
)
# the fields interactions_usage needs; a record without any of them keeps the previous usage
_USAGE_KEYS = frozenset({"total_input_tokens", "total_output_tokens", "total_thought_tokens"})


def _citation(annotation: Any) -> Citation | None:
    if type(annotation) is not dict:
        return None
    kind_word = annotation.get("type")
    kind = _CITATION_KINDS.get(kind_word) if isinstance(kind_word, str) else None
    if kind is None:
        return None
    return Citation(
        kind,
        url=first_str(annotation.get("url"), annotation.get("uri")),
        title=first_str(annotation.get("title"), annotation.get("name"), annotation.get("file_name")),
        start=int_or_none(annotation.get("start_index")),
        end=int_or_none(annotation.get("end_index")),
    )


def interactions_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """An Interactions ``usage`` record as disjoint counts (rule 3; ``None`` without counts)."""
    prompt = int_or_none(usage.get("total_input_tokens"))
    output = int_or_none(usage.get("total_output_tokens"))
    thoughts = int_or_none(usage.get("total_thought_tokens"))
    if prompt is None and output is None and thoughts is None:
        return None
    tool_prompt = int_or_none(usage.get("total_tool_use_tokens")) or 0
    cached = int_or_none(usage.get("total_cached_tokens"))
    return TokenUsage(
        input_tokens=max(0, (prompt or 0) + tool_prompt - (cached or 0)),
        output_tokens=(output or 0) + (thoughts or 0),
        cache_read_tokens=cached,
        reasoning_tokens=thoughts,
    )
