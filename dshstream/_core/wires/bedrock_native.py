"""The text-completion families' own InvokeModelWithResponseStream events (Amazon Titan
text, Meta Llama, Mistral), as the Bedrock invoke wire decodes them from its chunks.

Contract (sans-IO; fed decoded inner events through ``on_payload`` by
:class:`~dshstream._core.wires.bedrock_invoke.BedrockInvokeTranslator`; shapes as AWS
documents them for each family's streaming response):

1. The family is the first event's shape (:func:`native_family`): ``outputText`` is Titan
   text, ``generation`` is Llama, ``outputs`` (a list of ``{text, stop_reason}``) is
   Mistral. Every event's text is one text block, in order; later events are read by the
   same family.
2. The finish word is the family's own: Titan ``completionReason`` (``FINISH`` -> ``stop``,
   ``LENGTH`` -> ``max-tokens``, ``CONTENT_FILTERED`` -> ``CONTENT_FILTER``), Llama and
   Mistral ``stop_reason`` (``stop`` -> ``stop``, ``length`` -> ``max-tokens``); any other
   non-null word is an error finish with that word as the code. The event that carries a
   finish word completes the stream (no other terminal marker exists): events after it
   are not read.
3. Usage: ``amazon-bedrock-invocationMetrics`` (read by the invoke wire, its rule 3),
   else the family's own counts on the last event that has them (Titan
   ``inputTextTokenCount``/``totalOutputTextTokenCount``, Llama
   ``prompt_token_count``/``generation_token_count``).
4. A stream that ends before a finish word is ``STREAM_CLOSED``; there is no replay state
   (text completion has no hidden state to send back).
"""

from __future__ import annotations

from typing import Any

from .json_values import first_str, int_or_none, list_or_empty
from .translator import Translator
from .usage import counted_usage

WIRE = "bedrock-invoke"
#: family -> finish word (lower-cased) -> finish kind
_FINISH = {
    "titan": {"finish": "stop", "length": "max-tokens"},
    "llama": {"stop": "stop", "length": "max-tokens"},
    "mistral": {"stop": "stop", "length": "max-tokens"},
}
_CONTENT_FILTER = frozenset({"content_filtered", "content_filter"})


def native_family(payload: dict[str, Any]) -> str | None:
    """The text-completion family an inner event's shape names (rule 1), or ``None``."""
    if "outputText" in payload:
        return "titan"
    if "generation" in payload:
        return "llama"
    if isinstance(payload.get("outputs"), list):
        return "mistral"
    return None


class BedrockNativeTranslator(Translator):
    """Titan text, Llama and Mistral streaming events to chunks (module rules)."""

    wire = WIRE

    def __init__(
        self,
        family: str,
        *,
        provider: str | None = None,
        request_id: str | None = None,
        max_tokens: int | None = None,
    ) -> None:
        super().__init__(provider=provider, request_id=request_id, max_tokens=max_tokens)
        self.family = family
        self._counts: list[int | None] = [None, None]  # the family's own input, output counts (rule 3)

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is not dict or self.done:
            return
        word: str | None
        if self.family == "mistral":
            texts, word = [], None
            for output in list_or_empty(payload.get("outputs")):
                if type(output) is dict:
                    texts.append(output.get("text"))
                    word = first_str(output.get("stop_reason")) or word
        elif self.family == "titan":
            texts, word = [payload.get("outputText")], first_str(payload.get("completionReason"))
        else:
            texts, word = [payload.get("generation")], first_str(payload.get("stop_reason"))
        for text in texts:
            if isinstance(text, str) and text:
                self.writer.text(("text", 0), text)
        for position, value in enumerate(self._own_counts(payload)):
            count = int_or_none(value)
            if count is not None:
                self._counts[position] = count
        if word is not None:
            self._finish(word)

    def _own_counts(self, payload: dict[str, Any]) -> tuple[Any, Any]:
        """The family's own input and output counts on one event (rule 3; the last valid
        one of each wins)."""
        if self.family == "titan":
            return payload.get("inputTextTokenCount"), payload.get("totalOutputTextTokenCount")
        if self.family == "llama":
            return payload.get("prompt_token_count"), payload.get("generation_token_count")
        return None, None

    def flush(self, *, cut: bool) -> None:
        if self.writer.usage is None:
            self.writer.usage = counted_usage(*self._counts)  # rule 3: invocation metrics win

    def _finish(self, word: str) -> None:
        writer = self.writer
        lowered = word.lower()
        kind = _FINISH[self.family].get(lowered)
        if kind == "stop":
            writer.set_finish("stop", word)
        elif kind == "max-tokens":
            writer.set_finish("max-tokens", word)
        elif lowered in _CONTENT_FILTER:
            writer.set_finish(
                "error", word, writer.failure("CONTENT_FILTER", f"{writer.provider}: response blocked by the content filter")
            )
        else:
            writer.set_finish("error", word, writer.stop_failure(word))
        self.complete()

    def token_counts(self) -> tuple[int | None, int | None]:
        return (self._counts[0], self._counts[1])


__all__ = ["BedrockNativeTranslator", "native_family"]
