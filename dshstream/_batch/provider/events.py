"""A non-streaming answer body as the event sequence its wire's streaming translator reads.

Contract (sans-IO):

1. **No second translator.** A batch row's body (a chat completion, a Responses object, an
   Anthropic message, a Gemini ``GenerateContentResponse``) is never read here for its
   meaning: it is re-cut into the events the wire's own stream would have carried, and the
   wire's :class:`~dshstream._core.wires.translator.Translator` — the one a live stream
   uses, built by the adapter's wire — turns them into chunks. What a stream and a batch
   row give is therefore decided in one place.
2. **One function per wire**, chosen by the translator's ``wire`` name
   (:func:`events_for`): ``openai-chat`` (and every dialect: one chunk with the whole
   message as its delta and Perplexity's top-level ``search_results``/``citations``, one
   with the finish reason, one with the usage, ``[DONE]``),
   ``openai-responses`` (``response.created``, then the terminal event its ``status``
   names, carrying the whole response), ``anthropic`` (``message_start``, each content
   block started whole and stopped, ``message_delta`` with the stop reason, stop details,
   container and usage, ``message_stop``), ``gemini`` (the response is itself one stream event). A wire
   without one is a ``ValueError``.
3. A body that is not a JSON object gives no events: the translator then ends the row
   ``STREAM_CLOSED``, the same as an empty stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..._core.sse import ServerSentEvent

__all__ = ["events_for"]

Events = list[ServerSentEvent]


def _event(payload: object, event: str = "message") -> ServerSentEvent:
    return ServerSentEvent(event=event, data=json.dumps(payload, ensure_ascii=False, separators=(",", ":")))


def chat_events(body: dict[str, Any]) -> Events:
    """A ``chat.completion`` as ``chat.completion.chunk`` events (rule 2)."""
    head: dict[str, Any] = {key: body[key] for key in ("id", "model", "created", "system_fingerprint", "service_tier", "provider")
            if key in body}
    head["object"] = "chat.completion.chunk"
    choices = body.get("choices")
    choice = next(
        (c for c in choices if isinstance(c, dict) and c.get("index", 0) in (0, None)), None
    ) if isinstance(choices, list) else None
    events: Events = []
    if choice is not None:
        message = choice.get("message")
        delta = dict(message) if isinstance(message, dict) else {}
        calls = delta.get("tool_calls")
        if isinstance(calls, list):  # a delta's calls carry their position (the stream's index)
            delta["tool_calls"] = [
                {**call, "index": position} if isinstance(call, dict) else call for position, call in enumerate(calls)
            ]
        first: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": None}
        sources: dict[str, Any] = {key: body[key] for key in ("search_results", "citations") if key in body}
        events.append(_event({**head, **sources, "choices": [first]}))
        last: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}
        for key in ("native_finish_reason", "content_filter_results", "logprobs"):
            if key in choice:
                last[key] = choice[key]
        events.append(_event({**head, "choices": [last]}))
    if body.get("usage") is not None:
        events.append(_event({**head, "choices": [], "usage": body["usage"]}))
    events.append(ServerSentEvent(data="[DONE]"))
    return events


_RESPONSES_TERMINAL: dict[str, str] = {"completed": "response.completed", "incomplete": "response.incomplete",
                       "failed": "response.failed", "cancelled": "response.failed"}


def responses_events(body: dict[str, Any]) -> Events:
    """A Responses object as ``response.created`` and its terminal event (rule 2)."""
    started = {key: value for key, value in body.items() if key not in ("output", "usage")}
    started.update(status="in_progress", output=[])
    status = body.get("status")
    terminal = _RESPONSES_TERMINAL.get(status if isinstance(status, str) else "", "response.completed")
    return [
        _event({"type": "response.created", "response": started}),
        _event({"type": terminal, "response": body}),
    ]


#: the message fields its stream sends at the end, in ``message_delta.delta``
_ANTHROPIC_END = ("content", "stop_reason", "stop_sequence", "stop_details", "container")


def anthropic_events(body: dict[str, Any]) -> Events:
    """An Anthropic message as its stream's events, each block started whole (rule 2)."""
    usage = body.get("usage")
    start = {key: value for key, value in body.items() if key not in _ANTHROPIC_END}
    start.update(content=[], stop_reason=None, stop_sequence=None)
    events: Events = [_event({"type": "message_start", "message": start}, "message_start")]
    content = body.get("content")
    for index, block in enumerate(content if isinstance(content, list) else []):
        events.append(_event({"type": "content_block_start", "index": index, "content_block": block},
                             "content_block_start"))
        events.append(_event({"type": "content_block_stop", "index": index}, "content_block_stop"))
    ending = {key: body.get(key) for key in ("stop_reason", "stop_sequence")}
    ending.update({key: body[key] for key in ("stop_details", "container") if body.get(key) is not None})
    delta: dict[str, Any] = {"type": "message_delta", "delta": ending}
    if isinstance(usage, dict):
        delta["usage"] = usage
    events.append(_event(delta, "message_delta"))
    events.append(_event({"type": "message_stop"}, "message_stop"))
    return events


def gemini_events(body: dict[str, Any]) -> Events:
    """A ``GenerateContentResponse``: a Gemini stream event already (rule 2)."""
    return [_event(body)]


_BY_WIRE: dict[str, Callable[[dict[str, Any]], Events]] = {
    "openai-chat": chat_events,
    "openai-responses": responses_events,
    "anthropic": anthropic_events,
    "gemini": gemini_events,
}


def events_for(wire: str, body: object) -> Events:
    """The events of ``body`` for the translator of ``wire`` (rules 2, 3)."""
    make = _BY_WIRE.get(wire)
    if make is None:
        raise ValueError(f"no batch events for the {wire!r} wire")
    return make(body) if isinstance(body, dict) else []
