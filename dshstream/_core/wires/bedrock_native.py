"""The text-completion families' own InvokeModelWithResponseStream events (Amazon Titan
text, Meta Llama, Mistral, Cohere Command, Anthropic Claude Text Completions), as the
Bedrock invoke wire decodes them from its chunks.

Contract (sans-IO; fed decoded inner events through ``on_payload`` by
:class:`~dshstream._core.wires.bedrock_invoke.BedrockInvokeTranslator`; shapes as AWS
documents them for each family's streaming response and as public recordings show them,
tests/fixtures/real/PROVENANCE.md):

1. The family is the first event's shape (:func:`native_family`): ``outputText`` is Titan
   text, ``generation`` is Llama, ``outputs`` (a list of ``{text, stop_reason}``) is
   Mistral, ``completion`` is Claude Text Completions (``anthropic-text``), and
   ``is_finished``, ``event_type`` or a ``generations`` list is Cohere Command. Every
   event's text is one text block, in order; later events are read by the same family.
2. Cohere: a streamed event's ``text`` belongs to generation ``index`` (0 when absent);
   each generation is its own text block, in the order the generations start (one
   request asking ``num_generations`` > 1 gets that many answers, never glued together).
   Command R's ``event_type`` events are read the same way (``text-generation`` carries
   ``text``; ``stream-end`` the finish word; its ``response`` repeats the whole answer and
   is not read). A ``generations`` list (the answer in one event, when the request did not
   ask ``stream``) gives each generation's ``text`` and ``finish_reason``.
3. The finish word is the family's own: Titan ``completionReason`` (``FINISH`` -> ``stop``,
   ``LENGTH`` -> ``max-tokens``, ``CONTENT_FILTERED`` -> ``CONTENT_FILTER``); Llama and
   Mistral ``stop_reason`` (``stop`` -> ``stop``, ``length`` -> ``max-tokens``); Claude
   text ``stop_reason`` (``stop_sequence`` -> ``stop``, ``max_tokens`` -> ``max-tokens``);
   Cohere ``finish_reason`` (``COMPLETE``/``STOP_SEQUENCE`` -> ``stop``, ``MAX_TOKENS`` ->
   ``max-tokens``, ``ERROR_TOXIC`` -> ``CONTENT_FILTER``). Any other non-null word is an
   error finish with that word as the code. The event that carries a finish word
   completes the stream (no other terminal marker exists): events after it are not read.
4. A guardrail that blocks: an event with ``amazon-bedrock-guardrailAction``
   ``INTERVENED`` and an ``amazon-bedrock-trace.guardrail`` record but no finish word
   (Titan's "Input blocked" answer) completes the stream as ``CONTENT_FILTER``, the
   guardrail's ``actionReason`` in the failure's detail; its text is kept. A guardrail that
   only masks (the trace comes with a finish word) leaves the finish alone.
5. Usage: ``amazon-bedrock-invocationMetrics`` (read by the invoke wire, its rule 3),
   else the family's own counts on the last event that has them (Titan
   ``inputTextTokenCount``/``totalOutputTextTokenCount``, Llama
   ``prompt_token_count``/``generation_token_count``; whole-number floats count).
6. A stream that ends before a finish word is ``STREAM_CLOSED``; there is no replay state
   (text completion has no hidden state to send back).
"""

from __future__ import annotations

from typing import Any

from ..redact import redact
from .json_values import dict_or_empty, first_str, int_or_none, list_or_empty
from .translator import Translator
from .usage import counted_usage

WIRE = "bedrock-invoke"
GUARDRAIL_ACTION = "amazon-bedrock-guardrailAction"
TRACE = "amazon-bedrock-trace"
#: family -> finish word (lower-cased) -> finish kind (rule 3)
_FINISH = {
    "titan": {"finish": "stop", "length": "max-tokens"},
    "llama": {"stop": "stop", "length": "max-tokens"},
    "mistral": {"stop": "stop", "length": "max-tokens"},
    "anthropic-text": {"stop_sequence": "stop", "end_turn": "stop", "max_tokens": "max-tokens"},
    "cohere": {"complete": "stop", "stop_sequence": "stop", "max_tokens": "max-tokens"},
}
_CONTENT_FILTER = frozenset({"content_filtered", "content_filter", "error_toxic"})


def native_family(payload: dict[str, Any]) -> str | None:
    """The text-completion family an inner event's shape names (rule 1), or ``None``."""
    if "outputText" in payload:
        return "titan"
    if "generation" in payload:
        return "llama"
    if isinstance(payload.get("outputs"), list):
        return "mistral"
    if "completion" in payload:
        return "anthropic-text"
    if "is_finished" in payload or isinstance(payload.get("event_type"), str) or isinstance(
        payload.get("generations"), list
    ):
        return "cohere"
    return None


class BedrockNativeTranslator(Translator):
    """Titan text, Llama, Mistral, Cohere and Claude text events to chunks (module rules)."""

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
        self._counts: list[int | None] = [None, None]  # the family's own input, output counts (rule 5)

    def on_payload(self, event: str, payload: Any) -> None:
        if type(payload) is not dict or self.done:
            return
        pieces: list[tuple[int, Any]]  # (generation, text)
        word: str | None
        family = self.family
        if family == "mistral":
            pieces, word = [], None
            for output in list_or_empty(payload.get("outputs")):
                if type(output) is dict:
                    pieces.append((0, output.get("text")))
                    word = first_str(output.get("stop_reason")) or word
        elif family == "titan":
            pieces, word = [(0, payload.get("outputText"))], first_str(payload.get("completionReason"))
        elif family == "llama":
            pieces, word = [(0, payload.get("generation"))], first_str(payload.get("stop_reason"))
        elif family == "anthropic-text":
            pieces, word = [(0, payload.get("completion"))], first_str(payload.get("stop_reason"))
        else:
            pieces, word = self._cohere(payload)
        for generation, text in pieces:
            if isinstance(text, str) and text:
                self.writer.text(("text", generation), text)
        for position, value in enumerate(self._own_counts(payload)):
            count = int_or_none(value)
            if count is not None:
                self._counts[position] = count
        if word is not None:
            self._finish(word)
        elif payload.get(GUARDRAIL_ACTION) == "INTERVENED" and "guardrail" in dict_or_empty(payload.get(TRACE)):
            self._blocked(dict_or_empty(dict_or_empty(payload.get(TRACE)).get("guardrail")))

    @staticmethod
    def _cohere(payload: dict[str, Any]) -> tuple[list[tuple[int, Any]], str | None]:
        """A Cohere event's (generation, text) pieces and finish word (rule 2)."""
        word = first_str(payload.get("finish_reason"))
        generations = payload.get("generations")
        if isinstance(generations, list):
            pieces: list[tuple[int, Any]] = []
            for position, generation in enumerate(generations):
                if type(generation) is dict:
                    pieces.append((position, generation.get("text")))
                    word = word or first_str(generation.get("finish_reason"))
            return pieces, word
        index = int_or_none(payload.get("index"))
        return [(index if index is not None else 0, payload.get("text"))], word

    def _own_counts(self, payload: dict[str, Any]) -> tuple[Any, Any]:
        """The family's own input and output counts on one event (rule 5; the last valid
        one of each wins)."""
        if self.family == "titan":
            return payload.get("inputTextTokenCount"), payload.get("totalOutputTextTokenCount")
        if self.family == "llama":
            return payload.get("prompt_token_count"), payload.get("generation_token_count")
        return None, None

    def flush(self, *, cut: bool) -> None:
        if self.writer.usage is None:
            self.writer.usage = counted_usage(*self._counts)  # rule 5: invocation metrics win

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

    def _blocked(self, guardrail: dict[str, Any]) -> None:
        """A guardrail blocked the request or the answer and no finish word came (rule 4)."""
        writer = self.writer
        reason = first_str(guardrail.get("actionReason"))
        failure = writer.failure(
            "CONTENT_FILTER", f"{writer.provider}: blocked by a Bedrock guardrail", detail=redact(reason, limit=200) if reason else None
        )
        writer.set_finish("error", "INTERVENED", failure)
        self.complete()

    def token_counts(self) -> tuple[int | None, int | None]:
        return (self._counts[0], self._counts[1])


__all__ = ["BedrockNativeTranslator", "native_family"]
