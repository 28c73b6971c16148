"""decode: the sans-IO entry point — bytes of a recorded or live stream in, chunks out.

Contract: no I/O. :class:`StreamDecoder` joins an :class:`~dshstream._core.sse.SSEDecoder` to a
wire translator (``feed(bytes) -> chunks``, ``close() -> chunks``); :func:`decode` runs it
over bytes or an iterable of byte pieces. The output is identical however the bytes are
split. Wires: ``openai-chat`` and each dialect name (``deepseek``, ``openrouter``, ...),
``anthropic``, ``gemini``, ``gemini-interactions``, ``openai-responses``, ``bedrock-converse``,
``bedrock-invoke``.
A translator whose
``framing`` is ``"eventstream"`` (Bedrock) gets an
:class:`~dshstream._core.eventstream.EventStreamDecoder` instead of the SSE decoder; the
SSE path is unchanged. :meth:`StreamDecoder.reframe` starts a fresh framer for the same
translator (a resumed body: a partial event of the cut one is dropped).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .dialects import DIALECTS
from .eventstream import PRELUDE_SIZE, EventStreamDecoder
from .sse import SSEDecoder
from .types import StreamChunk
from .wires.translator import Translator


def _openai_chat(dialect: str) -> Callable[..., Translator]:
    def make(**options: Any) -> Translator:
        from .wires.openai_chat import OpenAIChatTranslator

        options.setdefault("dialect", dialect)
        return OpenAIChatTranslator(**options)

    return make


def _lazy(module: str, name: str) -> Callable[..., Translator]:
    def make(**options: Any) -> Translator:
        import importlib

        cls: Callable[..., Translator] = getattr(importlib.import_module(module, __package__), name)
        return cls(**options)

    return make


WIRES: dict[str, Callable[..., Translator]] = {
    "openai-chat": _openai_chat("openai"),
    **{name: _openai_chat(name) for name in DIALECTS},
    "anthropic": _lazy(".wires.anthropic", "AnthropicTranslator"),
    "cohere": _lazy(".wires.cohere", "CohereTranslator"),
    "gemini": _lazy(".wires.gemini", "GeminiTranslator"),
    "gemini-interactions": _lazy(".wires.gemini_interactions", "GeminiInteractionsTranslator"),
    "openai-responses": _lazy(".wires.openai_responses", "OpenAIResponsesTranslator"),
    "bedrock-converse": _lazy(".wires.bedrock", "BedrockConverseTranslator"),
    "bedrock-invoke": _lazy(".wires.bedrock_invoke", "BedrockInvokeTranslator"),
}


def translator_for(wire: str, **options: Any) -> Translator:
    """A fresh translator for ``wire``; raises ``ValueError`` naming the known wires."""
    factory = WIRES.get(wire)
    if factory is None:
        raise ValueError(f"unknown wire {wire!r}; known: {', '.join(WIRES)}")
    return factory(**options)


class StreamDecoder:
    """Bytes in, chunks out: the translator's framing (SSE, or AWS event-stream) plus one
    wire translator."""

    __slots__ = ("framer", "translator", "_max_event_size")

    def __init__(self, translator: Translator, *, max_event_size: int = 16 * 1024 * 1024) -> None:
        #: the framing decoder: SSE, or AWS event-stream for a translator that reads it
        self.framer: SSEDecoder | EventStreamDecoder
        self._max_event_size = max_event_size
        self.translator = translator
        self.reframe()

    def reframe(self) -> None:
        """A fresh framer, the same translator: the next bytes are a new body (a resumed
        stream); whatever the old framer held of a partial event is dropped."""
        if self.translator.framing == "eventstream":
            self.framer = EventStreamDecoder(max_event_size=self._max_event_size)
        else:
            self.framer = SSEDecoder(max_event_size=self._max_event_size)

    @property
    def sse(self) -> SSEDecoder | EventStreamDecoder:
        """The old name of :attr:`framer` (it may hold an event-stream decoder)."""
        return self.framer

    @property
    def done(self) -> bool:
        """Whether the wire's terminal marker (or an in-band error) ended the stream."""
        return self.translator.done

    def feed(self, data: bytes) -> list[StreamChunk]:
        """Decode a piece of the body; returns the chunks it completed. Over SSE a whole
        event goes from the framer to the translator as its strings (``feed_with`` into
        ``feed_data``: no event object on the common path)."""
        framer = self.framer
        translator = self.translator
        if type(framer) is SSEDecoder:
            return framer.feed_with(data, translator.feed_data, translator.feed_events)
        return translator.feed_events(framer.feed(data))

    def close(self) -> list[StreamChunk]:
        """End of body: flush the framer and finish the stream."""
        translator = self.translator
        out = translator.feed_events(self.framer.close())
        out += translator.close()
        return out


def decode(
    data: bytes | Iterable[bytes],
    *,
    wire: str,
    max_event_size: int = 16 * 1024 * 1024,
    **options: Any,
) -> Iterator[StreamChunk]:
    """Decode a whole stream (bytes, or an iterable of byte pieces) into chunks.

    ``options`` go to the wire's translator (``provider=``, ``think_tags=`` ...).
    """
    decoder = StreamDecoder(translator_for(wire, **options), max_event_size=max_event_size)
    pieces = (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data
    for piece in pieces:
        chunks = decoder.feed(bytes(piece))
        if chunks:
            yield from chunks
        if decoder.done:
            break
    yield from decoder.close()


_DIALECT_HINTS: tuple[tuple[bytes, str], ...] = (
    (b'"x_groq"', "groq"),
    (b'"provider":"', "openrouter"),
    (b'"provider": "', "openrouter"),
    (b'"native_finish_reason"', "openrouter"),
    (b'"prompt_cache_hit_tokens"', "deepseek"),
    (b'"model":"deepseek', "deepseek"),
    (b'"timings"', "llamacpp"),
    (b'"model":"grok', "xai"),
    (b'"cost_in_usd_ticks"', "xai"),
    (b'"model":"magistral', "mistral"),
    (b'"model":"mistral', "mistral"),
    (b'"search_context_size"', "perplexity"),  # in every Sonar chunk's usage
    (b'"chat.completion.done"', "perplexity"),  # Sonar's last chunk, before search_context_size
)


#: an Interactions event's own type, however the JSON is spaced
_INTERACTIONS_TYPE = re.compile(rb'"event_type"\s*:\s*"(?:interaction|step)\.')


def _is_prelude(head: bytes) -> bool:
    import zlib

    total = int.from_bytes(head[:4], "big")
    headers = int.from_bytes(head[4:8], "big")
    return (
        zlib.crc32(head[:8]) == int.from_bytes(head[8:12], "big")
        and total >= PRELUDE_SIZE + 4
        and headers <= total - PRELUDE_SIZE - 4
    )


def _bedrock_wire(data: bytes) -> str:
    """``bedrock-invoke`` if the first whole message's payload is a ``{"bytes": ...}``
    object (InvokeModelWithResponseStream), else ``bedrock-converse``."""
    import json

    total = int.from_bytes(data[:4], "big")
    headers = int.from_bytes(data[4:8], "big")
    payload = data[PRELUDE_SIZE + headers : total - 4] if len(data) >= total else b""
    try:
        first = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return "bedrock-converse"
    return "bedrock-invoke" if type(first) is dict and isinstance(first.get("bytes"), str) else "bedrock-converse"


def detect_wire(data: bytes) -> str:
    """Guess the wire of a recorded stream from its first bytes.

    ``event: message_start`` is Anthropic (``message-start``, hyphenated, Cohere), and so
    is a stream opening with ``event: completion`` (its legacy Text Completions);
    ``response.*`` event types are the Responses
    API; an ``event_type`` of ``interaction.*`` or ``step.*`` is Gemini's Interactions API;
    ``candidates`` objects are Gemini; ``chat.completion.chunk`` is the chat wire,
    with the dialect guessed from provider-specific fields. A body that opens with an AWS
    event-stream prelude (a valid prelude CRC over its first 12 bytes) is
    ``bedrock-invoke`` when the first message's payload is a ``{"bytes": ...}`` object,
    else ``bedrock-converse``.
    """
    if len(data) >= PRELUDE_SIZE and _is_prelude(data[:PRELUDE_SIZE]):
        return _bedrock_wire(data)
    head = data[:65536]
    if b"message_start" in head and (b"event: message_start" in head or b'"type":"message_start"' in head or b'"type": "message_start"' in head):
        return "anthropic"
    if head.startswith((b"event: completion\n", b"event: completion\r", b'data: {"type":"completion"')):
        return "anthropic"  # the legacy Text Completions stream (anthropic rule 7)
    if b'"type":"response.' in head or b'"type": "response.' in head or b"event: response." in head:
        return "openai-responses"
    if b"event: interaction." in head or b"event: step." in head or _INTERACTIONS_TYPE.search(head):
        return "gemini-interactions"
    if b"event: message-start" in head or b'"type":"message-start"' in head:  # Cohere's hyphens
        return "cohere"
    if (b'"candidates"' in head or b'"usageMetadata"' in head) and b'"choices"' not in head:
        return "gemini"  # (a chat chunk may carry Gemini's usageMetadata: Vercel's provider_metadata)
    for hint, dialect in _DIALECT_HINTS:
        if hint in head:
            return dialect
    return "openai-chat"
