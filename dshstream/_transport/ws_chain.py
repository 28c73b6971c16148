"""Chaining turns on one socket: a request that continues the socket's last response is
sent as ``previous_response_id`` plus its new input items only (``connect(chain=True)``).

Contract: pure functions over request bodies (dicts) and the last response's terminal
object; no I/O. The WebSocket mode keeps the last response of a connection in memory —
also with ``store: false`` — so a turn may name it instead of resending the conversation
(OpenAI's WebSocket-mode guide: "continue each turn by sending only new input items plus
``previous_response_id``").

1. **Only an exact continuation.** A body continues the last turn when every field but
   ``input`` equals the last turn's, it names no ``previous_response_id`` of its own, its
   ``input`` begins with the last turn's whole input, and what follows begins with every
   output item of the last response, in order, as the wire replays them — a
   ``function_call`` by its ``call_id``, ``name`` and ``arguments``, an assistant
   ``message`` by its text, a ``reasoning`` item by its ``id`` (or its encrypted content),
   any other item by its ``id`` and ``type``. An edited history, a dropped or reordered
   item, another model or tool list: no continuation, the whole body is sent.
2. **What is sent.** The body less ``input``, with ``previous_response_id`` the last
   response's id and ``input`` the items after the replayed output (at least one).
3. **One socket's memory.** A chain belongs to the socket its response came over; a new
   socket starts with none. A turn the server answers with ``previous_response_not_found``
   (the connection lost it) is sent again at once, whole, on the same socket.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Chain", "NOT_FOUND_CODE", "continuation"]

#: the error code of a chained id the connection does not hold (rule 3)
NOT_FOUND_CODE = "previous_response_not_found"


@dataclass(frozen=True)
class Chain:
    """The last turn on a socket: what was asked, and what came back (rule 3)."""

    body: Mapping[str, Any]
    response_id: str
    output: Sequence[Mapping[str, Any]]


def continuation(chain: Chain, body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The chained body for ``body`` (rule 2), or ``None`` when it is no exact
    continuation of ``chain`` (rule 1)."""
    if "previous_response_id" in body:
        return None
    before, now = chain.body.get("input"), body.get("input")
    if not isinstance(before, list) or not isinstance(now, list) or len(now) <= len(before):
        return None
    if {k: v for k, v in body.items() if k != "input"} != {k: v for k, v in chain.body.items() if k != "input"}:
        return None
    if now[: len(before)] != before:
        return None
    rest = now[len(before) :]
    if len(rest) <= len(chain.output):
        return None
    for sent, produced in zip(rest, chain.output):
        if not isinstance(sent, Mapping) or not _same(sent, produced):
            return None
    chained = {k: v for k, v in body.items() if k != "input"}
    chained["previous_response_id"] = chain.response_id
    chained["input"] = rest[len(chain.output) :]
    return chained


def _same(sent: Mapping[str, Any], produced: Mapping[str, Any]) -> bool:
    """Whether a replayed item is the output item it came from (rule 1)."""
    kind = produced.get("type")
    if sent.get("type") != kind:
        return False
    if kind == "function_call":
        return all(sent.get(k) == produced.get(k) for k in ("call_id", "name", "arguments"))
    if kind == "message":
        return sent.get("role") == "assistant" and _text(sent) == _text(produced)
    if kind == "reasoning":
        if produced.get("id") is not None and sent.get("id") == produced.get("id"):
            return True
        encrypted = produced.get("encrypted_content")
        return encrypted is not None and sent.get("encrypted_content") == encrypted
    return produced.get("id") is not None and sent.get("id") == produced.get("id")


def _text(item: Mapping[str, Any]) -> str | None:
    content = item.get("content")
    if not isinstance(content, list):
        return None
    parts = [part.get("text") for part in content if isinstance(part, Mapping) and part.get("type") == "output_text"]
    return "".join(p for p in parts if isinstance(p, str))
