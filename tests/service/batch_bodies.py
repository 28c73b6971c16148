"""Non-streaming answer bodies built from recorded streams, the way the providers' SDKs
accumulate a stream into the object the non-streaming endpoint returns (openai-python's
``ChatCompletionStreamState``, the Responses ``response.completed`` object, the Anthropic
SDK's ``accumulate_event``, Gemini's chunk merge): the non-streaming equivalent of each
recording, for the batch-equals-stream tests. Test code: it never shares a line with the
wires' translators, so the two paths are compared, not one path with itself."""

from __future__ import annotations

import json
from typing import Any

from dshstream._core.sse import ServerSentEvent, SSEDecoder


def events(data: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    found = [*decoder.feed(data), *decoder.close()]
    return [item for item in found if isinstance(item, ServerSentEvent)]


def payloads(data: bytes) -> list[tuple[str, Any]]:
    out = []
    for event in events(data):
        if event.data == "[DONE]":
            continue
        out.append((event.event, json.loads(event.data)))
    return out


def chat_body(data: bytes) -> dict[str, Any] | None:
    """The ``chat.completion`` a stream of chunks adds up to (choice 0), or ``None`` when
    the stream has no chat equivalent (legacy completions, in-band errors)."""
    body: dict[str, Any] = {"object": "chat.completion"}
    message: dict[str, Any] = {"role": "assistant"}
    calls: dict[int, dict[str, Any]] = {}
    executed: dict[int, dict[str, Any]] = {}
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": None}
    for _, chunk in payloads(data):
        if not isinstance(chunk, dict) or chunk.get("error") is not None:
            return None
        if chunk.get("id") and not body.get("id"):
            body["id"] = chunk["id"]  # the first id given: groq/compound numbers each chunk anew
        for key in ("model", "created", "system_fingerprint", "service_tier", "provider", "search_results", "citations"):
            if key in chunk:
                body[key] = chunk[key]
        if chunk.get("usage") is not None:
            body["usage"] = chunk["usage"]
        elif isinstance(chunk.get("x_groq"), dict) and chunk["x_groq"].get("usage") is not None:
            body["usage"] = chunk["x_groq"]["usage"]  # Groq streams it there; its body has it top-level
        for entry in chunk.get("choices") or []:
            if entry.get("index", 0) != 0:
                continue
            if "text" in entry:
                return None  # legacy /completions: no chat equivalent
            delta = entry.get("delta") or {}
            for field in ("content", "reasoning_content", "reasoning", "refusal"):
                piece = delta.get(field)
                if isinstance(piece, str):
                    if isinstance(message.get(field), list):
                        message[field].append({"type": "text", "text": piece})
                    else:
                        message[field] = (message.get(field) or "") + piece
                elif isinstance(piece, list):  # Mistral's content parts: kept as parts
                    previous = message.get(field)
                    if isinstance(previous, str):
                        previous = [{"type": "text", "text": previous}]
                    message[field] = (previous or []) + piece
            for detail in delta.get("reasoning_details") or []:
                merged = message.setdefault("reasoning_details", [])
                index = detail.get("index", len(merged))
                found = next((d for d in merged if d.get("index") == index and d.get("type") == detail.get("type")), None)
                if found is None:
                    merged.append(dict(detail))
                else:
                    for key, value in detail.items():
                        if key in ("text", "summary", "data") and isinstance(value, str):
                            found[key] = (found.get(key) or "") + value
                        elif value is not None:
                            found[key] = value
            if delta.get("annotations"):
                message.setdefault("annotations", []).extend(delta["annotations"])
            for tool in delta.get("executed_tools") or []:  # Groq compound: one entry per index, completed
                executed[tool["index"]] = {**executed.get(tool["index"], {}), **tool}
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", len(calls)), {"type": "function", "function": {}})
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] = slot["function"].get("arguments", "") + (function.get("arguments") or "")
            if entry.get("finish_reason"):
                choice["finish_reason"] = entry["finish_reason"]
            if entry.get("native_finish_reason"):
                choice["native_finish_reason"] = entry["native_finish_reason"]
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    if executed:
        message["executed_tools"] = [executed[i] for i in sorted(executed)]
    body["choices"] = [choice]
    return body


def responses_body(data: bytes) -> dict[str, Any] | None:
    """The Responses object: the terminal event's ``response`` (what a non-streaming call
    returns), or ``None`` when the stream ended in an error event."""
    for _, payload in payloads(data):
        if isinstance(payload, dict) and payload.get("type") == "error":
            return None
        if isinstance(payload, dict) and payload.get("type") in ("response.completed", "response.incomplete"):
            response: dict[str, Any] = payload["response"]
            return response
    return None


def anthropic_body(data: bytes) -> dict[str, Any] | None:
    """The message an Anthropic stream adds up to, each block's deltas applied."""
    message: dict[str, Any] | None = None
    pieces: dict[int, str] = {}
    for _, payload in payloads(data):
        kind = payload.get("type")
        if kind == "error":
            return None
        if kind == "message_start":
            message = dict(payload["message"])
            message["content"] = list(message.get("content") or [])
            message["usage"] = dict(message.get("usage") or {})
        elif message is None:
            continue
        elif kind == "content_block_start":
            message["content"].append(dict(payload["content_block"]))
        elif kind == "content_block_delta":
            index = payload["index"]
            block = message["content"][index]
            delta = payload["delta"]
            dtype = delta.get("type")
            if dtype == "text_delta":
                block["text"] = block.get("text", "") + delta["text"]
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
            elif dtype == "signature_delta":
                block["signature"] = delta["signature"]
            elif dtype == "input_json_delta":
                pieces[index] = pieces.get(index, "") + delta["partial_json"]
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta["citation"])
            elif dtype == "compaction_delta":
                block["content"] = (block.get("content") or "") + delta["content"]
        elif kind == "content_block_stop":
            index = payload["index"]
            if index in pieces:
                text = pieces.pop(index)
                message["content"][index]["input"] = json.loads(text) if text.strip() else {}
        elif kind == "message_delta":
            delta = payload.get("delta") or {}
            message["stop_reason"] = delta.get("stop_reason")
            message["stop_sequence"] = delta.get("stop_sequence")
            for key in ("stop_details", "container"):  # the final message's own fields
                if delta.get(key) is not None:
                    message[key] = delta[key]
            message["usage"].update(payload.get("usage") or {})
    return message


def gemini_body(data: bytes) -> dict[str, Any] | None:
    """The ``GenerateContentResponse`` a Gemini stream adds up to: candidate 0's parts in
    order (adjacent text parts of one kind joined, as the SDK's merge does), the last
    finish reason, grounding and usage."""
    body: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    candidate: dict[str, Any] = {"index": 0}
    seen = False
    for _, chunk in payloads(data):
        if not isinstance(chunk, dict) or chunk.get("error") is not None:
            return None
        for key in ("responseId", "modelVersion", "usageMetadata", "promptFeedback", "createTime"):
            if key in chunk:
                body[key] = chunk[key]
        for entry in chunk.get("candidates") or []:
            if entry.get("index", 0) != 0:
                continue
            seen = True
            for key, value in entry.items():
                if key != "content":
                    candidate[key] = value
            content = entry.get("content") or {}
            if "role" in content:
                candidate.setdefault("content", {})["role"] = content["role"]
            for part in content.get("parts") or []:
                last = parts[-1] if parts else None
                joinable = (
                    last is not None and set(part) <= {"text", "thought"} and set(last) <= {"text", "thought"}
                    and "text" in part and "text" in last and bool(part.get("thought")) == bool(last.get("thought"))
                )
                if joinable:
                    assert last is not None
                    last["text"] += part["text"]
                else:
                    parts.append(dict(part))
    if seen:
        candidate.setdefault("content", {})["parts"] = parts
        body["candidates"] = [candidate]
    return body
