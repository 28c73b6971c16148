"""The LiteLLM chunk wire: the OpenAI-shaped chunk dicts ``litellm.completion(stream=True)``
yields (``ModelResponseStream.model_dump()``), for every provider LiteLLM reaches.

Contract (sans-IO; chunk dicts in, chunks out; LiteLLM itself is never imported here):

1. Each chunk dict goes through the chat-completions translator's per-payload path
   (:meth:`~dshstream._core.wires.openai_chat.OpenAIChatTranslator.on_payload`), under its
   rules: text, ``reasoning_content``, tool-call deltas, usage made disjoint (cached
   tokens — ``prompt_tokens_details.cached_tokens`` and ``cache_write_tokens``, which
   LiteLLM fills from Anthropic's ``cache_read_input_tokens``/``cache_creation_input_tokens``
   — come out of ``prompt_tokens``), finish reasons, in-band errors. Nothing of it is
   translated twice.
2. What LiteLLM adds: ``delta.thinking_blocks`` (Anthropic thinking, one entry per delta,
   keyed by the provider's content-block ``index``) are merged per block into replay
   state, and a block's ``signature`` is set on the reasoning block; a thinking entry
   whose text did not also come as ``reasoning_content`` becomes reasoning.
   ``redacted_thinking`` entries are kept for replay only (as the Anthropic wire does).
3. The chunk dicts are taken as given: what LiteLLM made up rather than received (a
   finish reason for a stream that ended without one, usage counted with its tokenizer,
   a cost from its price map) is removed by the adapter, which can see LiteLLM's state
   (:mod:`dshstream._adapters.litellm`, rule 4).
4. LiteLLM has no terminal marker: the end of its iterator is :meth:`LiteLLMTranslator.end`,
   a finish only after a finish reason arrived (else ``STREAM_CLOSED``, rule 7 of the
   adapter contract).
5. A failure LiteLLM raises ends the stream through :meth:`LiteLLMTranslator.end_with`:
   partial output and usage are kept, and the finish is ``error`` or ``aborted``.
6. Replay state: ``{"wire": "litellm", "thinking_blocks": [...]}`` — each thinking block
   as LiteLLM takes it back on an assistant message (``thinking`` with its ``signature``,
   ``redacted_thinking`` with its ``data``), in stream order — plus whatever the chat wire
   keeps (OpenRouter ``reasoning_details``, Gemini tool signatures).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from ..filters.pipeline import REASONING_KEY
from ..types import Finish, FinishKind, LlmFailure, StreamChunk
from .openai_chat import OpenAIChatTranslator

__all__ = ["LiteLLMTranslator"]

WIRE = "litellm"


class LiteLLMTranslator(OpenAIChatTranslator):
    """LiteLLM's chunk dicts to dshstream chunks (see the module docstring)."""

    wire = WIRE

    def __init__(
        self,
        *,
        provider: str | None = None,
        request_id: str | None = None,
        think_tags: bool | None = None,
        max_tokens: int | None = None,
        client_tools: Collection[str] | None = None,
    ) -> None:
        super().__init__(
            dialect="openai",
            provider=provider or WIRE,
            request_id=request_id,
            think_tags=think_tags,
            max_tokens=max_tokens,
            client_tools=client_tools,
        )
        self._thinking: list[dict[str, Any]] = []
        self._thinking_at: dict[object, dict[str, Any]] = {}

    # ------------------------------------------------------------------ input

    def feed_chunk(self, chunk: Mapping[str, Any]) -> list[StreamChunk]:
        """Translate one chunk dict; returns the chunks produced."""
        if not self.writer.finished:
            self.on_payload("message", chunk if type(chunk) is dict else dict(chunk))
        return self.writer.take()

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is dict:
            choices = payload.get("choices")
            if type(choices) is list and choices:
                choice = choices[0] if type(choices[0]) is dict else None
                if choice is not None and choice.get("index", 0) in (0, None):
                    delta = choice.get("delta")
                    if type(delta) is dict and delta.get("thinking_blocks"):
                        self._on_thinking_blocks(delta["thinking_blocks"], delta.get("reasoning_content"))
        super().on_payload(event, payload)

    def _on_thinking_blocks(self, blocks: Any, reasoning_content: Any) -> None:
        if type(blocks) is not list:
            return
        streamed = isinstance(reasoning_content, str) and bool(reasoning_content)
        for entry in blocks:
            if type(entry) is not dict:
                continue
            kind = entry.get("type")
            if kind not in ("thinking", "redacted_thinking"):
                continue
            merged = self._merge_thinking(kind, entry)
            if kind != "thinking":
                continue
            text = entry.get("thinking")
            if isinstance(text, str) and text and not streamed:
                self._reasoning(text)
            signature = entry.get("signature")
            if isinstance(signature, str) and signature:
                merged["signature"] = signature
                self.writer.reasoning(REASONING_KEY, "", signature=signature)

    def _merge_thinking(self, kind: str, entry: dict[str, Any]) -> dict[str, Any]:
        """The replay entry ``entry`` continues (by its ``index``; without one, the last
        entry of the same kind that has no signature yet), created on first sight."""
        index = entry.get("index")
        key: object = ("index", index) if isinstance(index, int) else None
        merged = self._thinking_at.get(key) if key is not None else None
        if merged is None and key is None and self._thinking:
            last = self._thinking[-1]
            if last["type"] == kind == "thinking" and "signature" not in last:
                merged = last
        if merged is None:
            merged = {"type": kind, "thinking": ""} if kind == "thinking" else {"type": kind}
            self._thinking.append(merged)
            if key is not None:
                self._thinking_at[key] = merged
        if kind == "thinking":
            text = entry.get("thinking")
            if isinstance(text, str) and text:
                merged["thinking"] += text
        else:
            data = entry.get("data")
            if isinstance(data, str) and data:
                merged["data"] = merged.get("data", "") + data
        return merged

    # ------------------------------------------------------------------ endings

    def end(self) -> list[StreamChunk]:
        """LiteLLM's iterator ended (rule 4)."""
        return self.close()

    def end_with(self, failure: LlmFailure, kind: FinishKind = "error") -> list[StreamChunk]:
        """End the stream with ``failure`` (``kind``: ``error`` or ``aborted``), keeping the
        partial output and usage (rule 5)."""
        if not self.writer.finished:
            self.flush(cut=True)
            self.writer.fail(failure)
        out = self.writer.take()
        if kind != "error" and out and type(out[-1]) is Finish:
            last = out[-1]
            assert isinstance(last, Finish)
            out[-1] = replace(last, reason=replace(last.reason, kind=kind))
        return out

    def replay_state(self) -> Any:
        state = super().replay_state()
        merged: dict[str, Any] = dict(state) if isinstance(state, dict) else {}
        blocks = [b for b in self._thinking if b["type"] != "thinking" or b["thinking"] or "signature" in b]
        if blocks:
            merged["thinking_blocks"] = blocks
        if not merged:
            return None
        merged["wire"] = WIRE
        return merged
