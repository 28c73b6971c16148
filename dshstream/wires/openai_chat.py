"""The OpenAI chat-completions wire and every OpenAI-compatible dialect.

Contract (sans-IO; events of ``data: {chat.completion.chunk}`` frames, ``[DONE]`` last):

1. Choice 0 only (``n > 1`` streams use choice 0). Within one delta the order is reasoning,
   content, tool calls, finish reason.
2. Reasoning from ``reasoning_content`` or ``reasoning`` (or Mistral ``thinking`` parts);
   OpenRouter ``reasoning_details`` are merged per entry into replay state, and a
   ``reasoning.text`` signature is set on the reasoning block. Content from a string or a
   Mistral part list (legacy ``/completions`` ``choices[].text`` too); ``refusal`` text is
   visible text. A block opens only on its first non-empty payload; optional think-tag
   stripping and the reasoning spill guard run on content.
3. Tool calls are correlated by id, then wire index, then the latest open call (Ollama
   omits ``index``); a repeated id or name is identity, never appended.
4. Usage from any chunk that carries it, last wins (trailing ``choices: []`` chunk, vLLM
   continuous stats, Groq ``x_groq.usage``); cached tokens are subtracted from input;
   a server that reports reasoning outside ``completion_tokens`` (xAI) gets it added.
   ``usage.cost`` (OpenRouter) and ``cost_in_usd_ticks`` (xAI) become ``cost``.
5. ``finish_reason``: ``""`` is null; stop/tool_calls/length map to stop/tool-calls/
   max-tokens; content_filter is an ``error`` finish with ``CONTENT_FILTER``; anything
   else an ``error`` finish with the reason upper-cased; ``raw`` keeps
   ``native_finish_reason`` when present.
6. An ``{"error": ...}`` payload or an ``event: error`` frame ends the stream with a
   classified error finish, keeping partial output and usage.
7. ``[DONE]`` is the terminal marker; EOF without it is normal only after a finish reason.
"""

from __future__ import annotations

import json
from dataclasses import replace
from collections.abc import Mapping, Sequence
from typing import Any

from ..classify import classify_error_payload
from ..dialects import get_dialect
from ..filters.spill_guard import ReasoningSpillGuard
from ..filters.think_tags import ThinkTagStripper
from ..filters.verbatim_tools import VerbatimToolCallParser
from ..sse import ServerSentEvent
from ..types import FinishKind, TokenUsage, ToolCallBlock
from .base import (
    ChunkWriter,
    Translator,
    cost_or_none,
    dict_or_empty,
    dump_json,
    first_str,
    int_or_none,
    list_or_empty,
)

_REASONING = "reasoning"
_TEXT = "text"
_FINISH_KINDS: dict[str, FinishKind] = {
    "stop": "stop",
    "end": "stop",
    "eos": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens",
    "max_tokens": "max-tokens",
}
_USD_TICKS = 1e10  # xAI bills in ticks of 1e-10 USD


def openai_chat_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """Normalize a chat-completions ``usage`` object to disjoint counts."""
    prompt = int_or_none(usage.get("prompt_tokens"))
    completion = int_or_none(usage.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    prompt = prompt or 0
    completion = completion or 0
    prompt_details = dict_or_empty(usage.get("prompt_tokens_details"))
    completion_details = dict_or_empty(usage.get("completion_tokens_details"))
    cache_read = int_or_none(prompt_details.get("cached_tokens"))
    if cache_read is None:
        cache_read = int_or_none(usage.get("prompt_cache_hit_tokens"))
    cache_write = int_or_none(prompt_details.get("cache_write_tokens"))
    reasoning = int_or_none(completion_details.get("reasoning_tokens"))
    total = int_or_none(usage.get("total_tokens"))
    output = completion
    if reasoning and total is not None and total == prompt + completion + reasoning:
        output = completion + reasoning  # reasoning billed outside completion_tokens (xAI)
    cost = cost_or_none(usage.get("cost"))
    if cost is None:
        ticks = cost_or_none(usage.get("cost_in_usd_ticks"))
        cost = ticks / _USD_TICKS if ticks is not None else None
    return TokenUsage(
        input_tokens=max(0, prompt - (cache_read or 0) - (cache_write or 0)),
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        cost=cost,
    )


class ContentFilters:
    """The visible-content pipeline: think tags → reasoning spill guard → verbatim tool
    calls → text. Each stage is optional; a settled spill guard drops out of the hot path."""

    __slots__ = ("writer", "stripper", "guard", "verbatim", "_verbatim_calls")

    def __init__(
        self,
        writer: ChunkWriter,
        *,
        think_tags: bool,
        spill_guard: bool,
        verbatim_tools: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.writer = writer
        self.stripper = ThinkTagStripper() if think_tags else None
        self.guard: ReasoningSpillGuard | None = ReasoningSpillGuard() if spill_guard else None
        self.verbatim = VerbatimToolCallParser(list(verbatim_tools)) if verbatim_tools else None
        self._verbatim_calls = 0

    def reasoning(self, text: str) -> None:
        if self.guard is not None and text:
            self.guard.observe_reasoning(text)
        self.writer.reasoning(_REASONING, text)

    def content(self, text: str) -> None:
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
                self.writer.reasoning(_REASONING, spilled)
            if guard.settled:
                self.guard = None
        if self.verbatim is not None:
            self._emit(self.verbatim.feed(text))
        else:
            self.writer.text(_TEXT, text)

    def _emit(self, items: list[str | ToolCallBlock]) -> None:
        for item in items:
            if isinstance(item, str):
                self.writer.text(_TEXT, item)
                continue
            key = ("verbatim", self._verbatim_calls)
            self._verbatim_calls += 1
            self.writer.tool_call(key, call_id=item.id, name=item.name, arguments=item.arguments)
            self.writer.end(key)

    def flush(self, *, cut: bool = False) -> None:
        if self.stripper is not None:
            visible, thought = self.stripper.flush(cut=cut)
            if thought:
                self.reasoning(thought)
            self._visible(visible)
        if self.guard is not None:
            visible, spilled = self.guard.flush()
            if spilled:
                self.writer.reasoning(_REASONING, spilled)
            self.guard = None
            self._visible(visible)
        if self.verbatim is not None:
            self._emit(self.verbatim.flush())


class OpenAIChatTranslator(Translator):
    """Chat-completions chunks (any dialect) to dshstream chunks."""

    wire = "openai-chat"

    def __init__(
        self,
        *,
        dialect: str = "openai",
        provider: str | None = None,
        request_id: str | None = None,
        think_tags: bool | None = None,
        spill_guard: bool = True,
        verbatim_tools: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        preset = get_dialect(dialect)
        super().__init__(provider=provider or preset.name, request_id=request_id)
        self.dialect = preset
        use_tags = preset.think_tags if think_tags is None else think_tags
        self._filters: ContentFilters | None = (
            ContentFilters(
                self.writer,
                think_tags=use_tags,
                spill_guard=spill_guard,
                verbatim_tools=verbatim_tools,
            )
            if use_tags or spill_guard or verbatim_tools
            else None
        )
        self._by_id: dict[str, int] = {}
        self._by_index: dict[int, int] = {}
        self._last_call: int | None = None
        self._calls = 0
        self._reasoning_details: list[dict[str, Any]] = []
        self._details_by_index: dict[Any, dict[str, Any]] = {}
        self._tool_signatures: dict[str, str] = {}
        self._error: Any = None

    # ------------------------------------------------------------------ events

    def on_event(self, event: ServerSentEvent) -> None:
        data = event.data
        if data == "[DONE]":
            self._finish_stream()
            return
        payload = self.parse_json(data)
        if type(payload) is not dict:
            if event.event == "error":
                self._fail(payload)
            return
        writer = self.writer
        if writer.response_id is None:
            rid = payload.get("id")
            if isinstance(rid, str) and rid:
                writer.response_id = rid
        model = payload.get("model")
        if model and model != writer.model and type(model) is str:
            writer.model = model
        if writer.serving_provider is None:
            served = payload.get("provider")
            if isinstance(served, str) and served:
                writer.serving_provider = served
        usage = payload.get("usage")
        if usage is None and "x_groq" in payload:
            usage = dict_or_empty(payload["x_groq"]).get("usage")
        if usage is not None and type(usage) is dict and ("prompt_tokens" in usage or "completion_tokens" in usage):
            writer.defer_usage(openai_chat_usage, usage)
        choices = payload.get("choices")
        if choices and type(choices) is list:
            first = choices[0]
            if type(first) is dict and first.get("index", 0) in (0, None):
                self._on_choice(first)
            else:
                choice = self._choice_zero(choices)
                if choice is not None:
                    self._on_choice(choice)
        if event.event == "error" or payload.get("error") is not None:
            self._fail(payload)

    @staticmethod
    def _choice_zero(choices: list[Any]) -> dict[str, Any] | None:
        for choice in choices:
            if type(choice) is dict and choice.get("index", 0) in (0, None):
                return choice
        return None

    def _on_choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta")
        if type(delta) is dict:
            self._on_delta(delta)
        elif delta is None:
            text = choice.get("text")  # legacy /completions streams
            if isinstance(text, str) and text:
                if self._filters is not None:
                    self._filters.content(text)
                else:
                    self.writer.text(_TEXT, text)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            native = choice.get("native_finish_reason")
            raw = native if isinstance(native, str) and native else reason
            self._on_finish_reason(reason, raw)

    def _on_delta(self, delta: dict[str, Any]) -> None:
        if len(delta) == 1:
            # Fast path: most deltas carry exactly one field.
            ((field, value),) = delta.items()
            if field == "content" and type(value) is str:
                if value:
                    if self._filters is not None:
                        self._filters.content(value)
                    else:
                        self.writer.text(_TEXT, value)
                return
            if field == "tool_calls" and type(value) is list:
                for call in value:
                    if type(call) is dict:
                        self._on_tool_call(call)
                return
        filters = self._filters
        writer = self.writer
        reasoning = delta.get("reasoning_content")
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if filters is not None:
                filters.reasoning(reasoning)
            else:
                writer.reasoning(_REASONING, reasoning)
        details = delta.get("reasoning_details")
        if type(details) is list and details:
            self._merge_reasoning_details(details, bool(reasoning))
        content = delta.get("content")
        if isinstance(content, str):
            if content:
                if filters is not None:
                    filters.content(content)
                else:
                    writer.text(_TEXT, content)
        elif type(content) is list:
            self._on_content_parts(content)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            writer.text(_TEXT, refusal)
        tool_calls = delta.get("tool_calls")
        if type(tool_calls) is list:
            for call in tool_calls:
                if type(call) is dict:
                    self._on_tool_call(call)

    def _on_content_parts(self, parts: list[Any]) -> None:
        for part in parts:
            if type(part) is not dict:
                continue
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if isinstance(text, str) and text:
                    if self._filters is not None:
                        self._filters.content(text)
                    else:
                        self.writer.text(_TEXT, text)
            elif kind == "thinking":
                thinking = part.get("thinking")
                pieces = thinking if type(thinking) is list else [thinking]
                for piece in pieces:
                    text = piece.get("text") if type(piece) is dict else piece
                    if isinstance(text, str) and text:
                        if self._filters is not None:
                            self._filters.reasoning(text)
                        else:
                            self.writer.reasoning(_REASONING, text)

    def _merge_reasoning_details(self, details: list[Any], text_already_streamed: bool) -> None:
        for entry in details:
            if type(entry) is not dict:
                continue
            kind, position = entry.get("type"), entry.get("index", len(self._reasoning_details))
            if not isinstance(kind, (str, type(None))) or not isinstance(position, (str, int, type(None))):
                continue  # not a reasoning-details entry we can merge
            key = (kind, position)
            merged = self._details_by_index.get(key)
            if merged is None:
                merged = dict(entry)
                self._details_by_index[key] = merged
                self._reasoning_details.append(merged)
            else:
                for field, value in entry.items():
                    if field in ("text", "summary") and isinstance(value, str):
                        merged[field] = str(merged.get(field) or "") + value
                    elif value not in (None, ""):
                        merged[field] = value
            text = first_str(entry.get("text"), entry.get("summary")) if not text_already_streamed else None
            signature = first_str(entry.get("signature")) if entry.get("type") == "reasoning.text" else None
            if text or (signature and self.writer.is_open(_REASONING)):
                # Some routes stream reasoning only inside reasoning_details; a signature
                # belongs to the reasoning block it closes.
                self.writer.reasoning(_REASONING, text or "", signature=signature)

    def _on_tool_call(self, call: dict[str, Any]) -> None:
        if len(call) == 2 and "function" in call:
            # Fast path for the continuation shape {"index": i, "function": {"arguments": s}}.
            index = call.get("index")
            known = self._by_index.get(index) if type(index) is int else None
            function = call["function"]
            if known is not None and type(function) is dict and len(function) == 1:
                fragment = function.get("arguments")
                if type(fragment) is str:
                    self._last_call = known
                    self.writer.tool_call(known, None, None, fragment)
                    return
        call_id = call.get("id")
        if not call_id or type(call_id) is not str:
            call_id = None
        wire_index = call.get("index")
        if type(wire_index) is not int:
            wire_index = None
        key: int | None = None
        if call_id is not None:
            key = self._by_id.get(call_id)
        if key is None and wire_index is not None:
            key = self._by_index.get(wire_index)
        if key is None and call_id is None and wire_index is None:
            key = self._last_call
        if key is None:
            key = self._calls
            self._calls += 1
        if call_id is not None and call_id not in self._by_id:
            self._by_id[call_id] = key
        if wire_index is not None and wire_index not in self._by_index:
            self._by_index[wire_index] = key
        self._last_call = key
        function = call.get("function")
        name = arguments = None
        if type(function) is dict:
            name = function.get("name")
            arguments = function.get("arguments")
        if type(arguments) is not str:
            arguments = (dump_json(arguments) or "") if isinstance(arguments, (dict, list)) else ""
        self.writer.tool_call(key, call_id, name if type(name) is str else None, arguments)
        extra = call.get("extra_content")
        if extra:
            signature = dict_or_empty(dict_or_empty(extra).get("google")).get("thought_signature")
            if isinstance(signature, str) and signature:
                self._tool_signatures[call_id or f"#{key}"] = signature

    def _on_finish_reason(self, reason: str, raw: str) -> None:
        kind = _FINISH_KINDS.get(reason)
        writer = self.writer
        if kind is not None:
            writer.set_finish(kind, raw)
            return
        who = writer.provider
        if reason == "content_filter":
            failure = writer.failure(
                "CONTENT_FILTER", f"{who}: response blocked by the provider's content filter"
            )
        elif reason == "error":
            if self._error is not None:
                return  # the error payload carries the classified failure
            failure = writer.failure("SERVER", f"{who}: stream terminated due to a provider error")
        else:
            code = "".join(c if c.isalnum() else "_" for c in reason.upper())[:40] or "UNKNOWN"
            failure = writer.failure(code, f"{who}: model stopped: {code.lower()}")
        writer.set_finish("error", raw, failure)

    # ------------------------------------------------------------------ end

    def _fail(self, payload: Any) -> None:
        self._error = payload
        failure = classify_error_payload(payload, provider=self.writer.provider)
        if self.writer.serving_provider and failure.serving_provider is None:
            failure = replace(failure, serving_provider=self.writer.serving_provider)
        self._flush_filters(cut=True)
        self._set_replay()
        self.writer.fail(failure)

    def _flush_filters(self, *, cut: bool = False) -> None:
        if self._filters is not None:
            self._filters.flush(cut=cut)

    def _set_replay(self) -> None:
        state: dict[str, Any] = {}
        if self._reasoning_details:
            state["reasoning_details"] = self._reasoning_details
        if self._tool_signatures:
            state["tool_signatures"] = self._tool_signatures
        if state:
            self.writer.replay_state = {"wire": "openai-chat", **state}

    def _finish_stream(self) -> None:
        self._flush_filters()
        self._set_replay()
        self.writer.complete()

    def on_close(self) -> None:
        # EOF before [DONE] is a cut unless a finish reason already arrived.
        self._flush_filters(cut=self.writer.finish_kind is None)
        self._set_replay()
