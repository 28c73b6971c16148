"""The fuzzing tests' shared corpus and oracle (tests/robustness/test_fuzz.py,
test_every_field.py, test_size_bounds.py).

The corpus is every real recording's SSE events, by wire family and by the wire that
decodes the recording; :func:`run_wire` is the oracle every fuzzed input goes through:

1. Only :class:`LlmError` escapes ``decode``, within :data:`PER_INPUT_SECONDS`.
2. The chunks (with a synthetic error ``Finish`` appended when an ``LlmError`` cut them
   short, which must not come after a ``Finish``) pass ``check_contract``.
3. The assembler folds them and every chunk serializes to JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

from dshstream._core.assembler import BlockAssembler
from dshstream._core.contract import check_contract
from dshstream._core.decode import WIRES, decode
from dshstream._core.dialects import DIALECTS
from dshstream._core.errors import LlmError
from dshstream._core.sse import ServerSentEvent, SSEDecoder
from dshstream._core.types import Finish, FinishReason, StreamChunk, chunk_to_dict

from helpers import all_fixtures, fixture_bytes, fixture_wire

CHAT_FAMILY = frozenset({"openai-chat", *DIALECTS})
#: every non-chat wire, and chat dialects that differ in behaviour: plain OpenAI, a
#: think-tag dialect (llamacpp), OpenRouter (reasoning_details), Mistral (content parts)
FUZZ_WIRES = [
    "anthropic", "cohere", "gemini", "gemini-interactions", "openai-responses", "openai-chat", "llamacpp", "openrouter",
    "mistral",
]
assert all(w in WIRES for w in FUZZ_WIRES)
# the Bedrock wires are binary (AWS event-stream), not SSE: their framing is fuzzed in
# tests/core/test_eventstream.py and their payloads in tests/wires/test_bedrock*.py
_BEDROCK = ("bedrock-converse", "bedrock-invoke")
assert {w for w in WIRES if w not in CHAT_FAMILY and w not in _BEDROCK} <= set(FUZZ_WIRES)

#: a single input must never take this long (a quadratic path or a hang)
PER_INPUT_SECONDS = 10.0


# --------------------------------------------------------------------------- the corpus

Event = tuple[str, str]  # (event name, data)


def events_of(data: bytes) -> list[Event]:
    decoder = SSEDecoder()
    items = decoder.feed(data) + decoder.close()
    return [(item.event, item.data) for item in items if isinstance(item, ServerSentEvent)]


def family(wire: str) -> str:
    """The family whose corpus ``wire`` is fuzzed with (a chat dialect: the chat family's)."""
    return "openai-chat" if wire in CHAT_FAMILY else wire


CORPUS: dict[str, list[list[Event]]] = {}  # by wire family
OWN_CORPUS: dict[str, list[list[Event]]] = {}  # by the wire that decodes the recording
for _rel in all_fixtures():
    _streamed = events_of(fixture_bytes(_rel))
    CORPUS.setdefault(family(fixture_wire(_rel)), []).append(_streamed)
    OWN_CORPUS.setdefault(fixture_wire(_rel), []).append(_streamed)


def nested_dict(depth: int) -> Any:
    value: Any = {"leaf": 1}
    for _ in range(depth):
        value = {"k": value}
    return value


def nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def frame(events: Sequence[Event], crlf: bool) -> bytes:
    out: list[str] = []
    for name, data in events:
        lines = [] if name == "message" else [f"event: {name}"]
        lines += [f"data: {line}" for line in data.split("\n")]
        out.append("\n".join(lines) + "\n\n")
    text = "".join(out)
    if crlf:
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8", "surrogatepass")


def run_wire(wire: str, pieces: Sequence[bytes], **options: Any) -> list[StreamChunk]:
    """Decode ``pieces`` on ``wire``; fail on anything but ``LlmError`` or a contract
    breach. Returns the chunks (cut short by an ``LlmError``, if one was raised)."""
    chunks: list[StreamChunk] = []
    started = time.monotonic()
    error: LlmError | None = None
    try:
        for chunk in decode(pieces, wire=wire, **options):
            chunks.append(chunk)
    except LlmError as exc:
        error = exc
    elapsed = time.monotonic() - started
    assert elapsed < PER_INPUT_SECONDS, f"{wire}: one input took {elapsed:.1f}s"
    checked = chunks
    if error is not None:  # a sanctioned raise: what came before must still be valid
        assert not any(type(c) is Finish for c in chunks), "raised after Finish"
        checked = chunks + [Finish(reason=FinishReason(kind="error", failure=error.failure))]
    list(check_contract(checked))
    assembler = BlockAssembler()
    assembler.extend(checked)
    assembler.result()
    for chunk in checked:
        json.dumps(chunk_to_dict(chunk))
    return chunks
