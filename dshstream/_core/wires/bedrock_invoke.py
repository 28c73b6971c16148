"""The Bedrock InvokeModelWithResponseStream wire (``POST /model/{modelId}/invoke-with-response-stream``).

Contract (sans-IO; fed :class:`~dshstream._core.eventstream.EventStreamMessage` s:
:attr:`BedrockInvokeTranslator.framing` is ``"eventstream"``):

1. Every event message is a ``chunk`` whose JSON payload is ``{"bytes": "<base64>"}`` (plus
   the ``"p"`` padding, ignored); the base64 decodes to the model family's own JSON event.
   The translator owns one inner translator and forwards each decoded event to its
   :meth:`~dshstream._core.wires.translator.Translator.on_payload`; the inner one writes the
   chunks, decides the finish and keeps the replay state (no logic is copied here).
2. The family is chosen by the first decoded event: an object with a string ``type``
   (``message_start`` ...) is Anthropic Messages (``AnthropicTranslator``); an object with
   exactly one Converse event name as key (``{"contentBlockDelta": {...}}``, Nova) is
   Converse-shaped (``BedrockConverseTranslator``, the key is the event type); an object
   of a text-completion family's shape (Titan text ``outputText``, Llama ``generation``,
   Mistral ``outputs``, Cohere ``is_finished``/``event_type``/``generations``, Claude
   Text Completions ``completion``) is that family's (``BedrockNativeTranslator``: text,
   finish words, usage). A first event of any other shape (AI21 ...) ends the stream at
   once with ``MALFORMED_RESPONSE``: "unsupported model family", the family guessed from
   its keys, and ``api="converse"`` to use instead — never a silent ``STREAM_CLOSED``.
3. ``amazon-bedrock-invocationMetrics`` (on the last event) gives the usage
   (``inputTokenCount``, ``outputTokenCount``, ``cacheReadInputTokenCount``,
   ``cacheWriteInputTokenCount``) only when the inner events carried none; it is applied
   before the event that carries it is forwarded, so it is in the finish. It is kept as
   sent in ``metadata.raw_usage`` under its own name either way: the counts AWS bills,
   which may differ from the model's own (Claude's ``output_tokens`` 130 beside an
   ``outputTokenCount`` of 98 in one recording).
4. Exception and error messages end the stream with the failure the Converse wire gives
   them, keeping partial output: both Bedrock wires read their messages in one base,
   :class:`~dshstream._core.wires.bedrock.BedrockTranslator`.
5. A ``bytes`` field that is not valid base64, or decodes to invalid JSON, is
   ``MALFORMED_RESPONSE``, like any invalid payload.
6. Nova on invoke may give every text delta a block index of its own, each closed by its
   ``contentBlockStop`` (a recording shows 56 one-delta blocks for one answer). A text
   delta at an index that never had a ``contentBlockStart``, right after a text block's
   stop, continues that text block: the stop of a text block is held until the next
   event and dropped when that event continues it, so one run of text is one block.
   Anything else (a ``contentBlockStart``, a tool or reasoning delta, ``messageStop``,
   the end) releases the held stop first.
"""

from __future__ import annotations

import binascii
from base64 import b64decode
from collections.abc import Mapping
from typing import Any

from ..sse import ServerSentEvent
from ..strict_json import EventJsonError, loads_event
from ..types import TokenUsage
from .bedrock import BedrockTranslator
from .bedrock_native import BedrockNativeTranslator, native_family
from .translator import Translator
from .usage import counted_usage

WIRE = "bedrock-invoke"
METRICS = "amazon-bedrock-invocationMetrics"
_CONVERSE_EVENTS = frozenset(
    ("messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata")
)

#: a key of a first event -> the family it suggests (for the failure of rule 2)
_GUESSES = (
    ("completions", "AI21 Jurassic"),
    ("choices", "AI21 Jamba / OpenAI-compatible"),
)


def invocation_usage(metrics: Any) -> TokenUsage | None:
    """``amazon-bedrock-invocationMetrics`` as disjoint counts (``None`` without counts)."""
    if type(metrics) is not dict:
        return None
    return counted_usage(
        metrics.get("inputTokenCount"),
        metrics.get("outputTokenCount"),
        metrics.get("cacheReadInputTokenCount"),
        metrics.get("cacheWriteInputTokenCount"),
    )


class BedrockInvokeTranslator(BedrockTranslator):
    """InvokeModelWithResponseStream messages to chunks, through the family's translator."""

    wire = WIRE

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        super().__init__(provider=provider, request_id=request_id, max_tokens=max_tokens)
        self._max_tokens = max_tokens
        self._unwrap: str | None = None
        self.inner: Translator | None = None
        self._converse = False  # the inner translator reads Converse events (rule 6 applies)
        self._held_stop: int | None = None  # a text block's index whose stop is held (rule 6)
        self._alias: dict[int, int] = {}  # a wire index -> the text block it continues
        self._started: set[int] = set()  # indices that had a contentBlockStart
        self._text: set[int] = set()  # block indices that are text

    # ------------------------------------------------------------------ input

    def on_event(self, event: ServerSentEvent) -> None:
        """An SSE event whose data is an invoke chunk payload (``{"bytes": ...}``)."""
        self._on_chunk(loads_event(event.data))

    def on_frame(self, headers: Mapping[str, Any], text: str) -> None:
        """One event message: a chunk (rule 1); exception and error messages are the base's
        (rule 4)."""
        if text:
            self._on_chunk(loads_event(text))

    def _on_chunk(self, payload: Any) -> None:
        if type(payload) is not dict:
            return
        wrapped = payload.get("bytes")
        if not isinstance(wrapped, str):
            return
        try:
            raw = b64decode(wrapped, validate=True)
        except (binascii.Error, ValueError):
            raise EventJsonError(wrapped) from None
        self.on_payload("chunk", loads_event(raw.decode("utf-8", "replace")))

    def on_payload(self, event: str, payload: Any) -> None:
        """One decoded inner event: pick the family on the first, then forward."""
        if type(payload) is not dict:
            return
        name: str = event
        body: Any = payload
        if "type" not in payload:
            converse = next((key for key in payload if key in _CONVERSE_EVENTS), None)
            if converse is not None:
                name, body = converse, payload[converse]
        inner = self.inner
        if inner is None:
            inner = self._choose(payload, name)
            if inner is None:
                self._unknown_family(payload)  # rule 2
                return
            self.inner = inner
            self.writer = inner.writer
            self._converse = name in _CONVERSE_EVENTS
        metrics = payload.get(METRICS)
        writer = self.writer
        if type(metrics) is dict:
            if writer.usage is None and writer.raw_usage is None:
                writer.usage = invocation_usage(metrics)
            writer.raw_usage = {**(writer.raw_usage or {}), METRICS: metrics}  # rule 3: as sent
        if self._converse and type(body) is dict:
            body = self._one_text_block(inner, name, body)
            if body is None:
                return
        inner.on_payload(name, body)

    def _one_text_block(self, inner: Translator, name: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """``body`` with its block index mapped onto the text block it continues, or
        ``None`` when the event is a text block's stop held for now (rule 6)."""
        index = body.get("contentBlockIndex")
        if not isinstance(index, int):
            self._release_stop(inner)
            return body
        delta = body.get("delta")
        if name == "contentBlockDelta" and type(delta) is dict and isinstance(delta.get("text"), str):
            held = self._held_stop
            target = self._alias.get(index, index)
            if held is not None and target not in self._started and target not in self._text:
                self._alias[index] = target = held  # continues the held text block
                self._held_stop = None
            else:
                self._release_stop(inner)
            self._text.add(target)
        elif name == "contentBlockStop":
            target = self._alias.get(index, index)
            self._release_stop(inner)
            if target in self._text:
                self._held_stop = target
                return None
        else:
            self._release_stop(inner)
            if name == "contentBlockStart":
                self._started.add(index)
            target = self._alias.get(index, index)
        return body if target == index else {**body, "contentBlockIndex": target}

    def _release_stop(self, inner: Translator) -> None:
        """Forward the held text block's stop (rule 6)."""
        held, self._held_stop = self._held_stop, None
        if held is not None:
            inner.on_payload("contentBlockStop", {"contentBlockIndex": held})

    def unwrap_tool_call(self, name: str) -> None:
        """As the base, and passed on to the family translator once it is chosen."""
        super().unwrap_tool_call(name)
        self._unwrap = name

    def _choose(self, payload: dict[str, Any], name: str) -> Translator | None:
        inner = self._family(payload, name)
        if inner is not None and self._unwrap is not None:
            inner.unwrap_tool_call(self._unwrap)
        return inner

    def _family(self, payload: dict[str, Any], name: str) -> Translator | None:
        """The inner translator the first decoded event calls for (``None``: unknown)."""
        options: dict[str, Any] = {
            "provider": self.writer.provider,
            "request_id": self.writer.request_id,
            "max_tokens": self._max_tokens,
        }
        if isinstance(payload.get("type"), str):
            from .anthropic import AnthropicTranslator

            return AnthropicTranslator(**options)
        if name in _CONVERSE_EVENTS:
            from .bedrock import BedrockConverseTranslator

            return BedrockConverseTranslator(**options)
        family = native_family(payload)
        if family is not None:
            return BedrockNativeTranslator(family, **options)
        return None

    def _unknown_family(self, payload: dict[str, Any]) -> None:
        """A first event of no decoded family's shape: a clear failure, not a cut (rule 2)."""
        keys = sorted(key for key in payload if key != METRICS)
        family = next((name for marker, name in _GUESSES if marker in payload), "unknown")
        writer = self.writer
        writer.fail(
            writer.failure(
                "MALFORMED_RESPONSE",
                f"{writer.provider}: unsupported model family on the invoke wire ({family}; first event "
                f"keys: {', '.join(keys[:8]) or 'none'}); use api=\"converse\" (the Bedrock Converse API)",
            )
        )

    # ------------------------------------------------------------------ end

    def flush(self, *, cut: bool) -> None:
        if self.inner is not None:
            self._release_stop(self.inner)  # rule 6: a held stop is a real one
            self.inner.flush(cut=cut)

    def replay_state(self) -> Any:
        return self.inner.replay_state() if self.inner is not None else None

    def token_counts(self) -> tuple[int | None, int | None]:
        return self.inner.token_counts() if self.inner is not None else (None, None)


__all__ = ["BedrockInvokeTranslator", "invocation_usage"]
