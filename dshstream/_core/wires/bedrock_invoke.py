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
   Mistral ``outputs``) is that family's (``BedrockNativeTranslator``: text, finish words,
   usage). A first event of any other shape (Cohere, AI21 ...) ends the stream at once
   with ``MALFORMED_RESPONSE`` naming the family (guessed from its keys) and saying to
   use the Converse API — never a silent ``STREAM_CLOSED``.
3. ``amazon-bedrock-invocationMetrics`` (on the last event) gives the usage
   (``inputTokenCount``, ``outputTokenCount``, ``cacheReadInputTokenCount``,
   ``cacheWriteInputTokenCount``) only when the inner events carried none; it is applied
   before the event that carries it is forwarded, so it is in the finish.
4. Exception and error messages end the stream with the failure the Converse wire gives
   them, keeping partial output: both Bedrock wires read their messages in one base,
   :class:`~dshstream._core.wires.bedrock.BedrockTranslator`.
5. A ``bytes`` field that is not valid base64, or decodes to invalid JSON, is
   ``MALFORMED_RESPONSE``, like any invalid payload.
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
    ("generations", "Cohere"),
    ("is_finished", "Cohere"),
    ("finish_reason", "Cohere"),
    ("completions", "AI21"),
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
        metrics = payload.get(METRICS)
        writer = self.writer
        if metrics is not None and writer.usage is None and writer.raw_usage is None:
            writer.usage = invocation_usage(metrics)
        inner.on_payload(name, body)

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
                f"{writer.provider}: the invoke wire does not decode the {family} model family's stream "
                f"(first event keys: {', '.join(keys[:8]) or 'none'}); use the Bedrock Converse API",
            )
        )

    # ------------------------------------------------------------------ end

    def flush(self, *, cut: bool) -> None:
        if self.inner is not None:
            self.inner.flush(cut=cut)

    def replay_state(self) -> Any:
        return self.inner.replay_state() if self.inner is not None else None

    def token_counts(self) -> tuple[int | None, int | None]:
        return self.inner.token_counts() if self.inner is not None else (None, None)


__all__ = ["BedrockInvokeTranslator", "invocation_usage"]
