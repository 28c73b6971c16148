"""One input request made a ``GenerateOptions`` with a stable key.

Contract:

1. **What a request is.** A ``GenerateOptions``, or a dict with ``messages`` (a list of
   ``{"role", "content"}``, content a string) or ``prompt`` (a string: one user turn),
   and optionally ``id``, ``provider``, ``model``, ``system``, ``max_tokens``,
   ``temperature``; ``provider`` and ``model`` default to the executor's. Any other key,
   or a value of the wrong shape, is a :class:`~dshstream._core.errors.ConfigurationError`
   naming the row and the field; the executor reports it as that row's failure.
2. **The key.** The caller's ``id`` (as a string) when there is one; else ``sha256:`` and
   the SHA-256 of the request's canonical JSON (sorted keys, no spaces: provider, model,
   messages, tools, and the settings that change the answer), so the same request has the
   same key in every run and process. A media part counts by its bytes' hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._core.errors import LlmError
from .._core.request import GenerateOptions, Message
from .._core.types import block_to_dict
from .._core.validate import invalid

__all__ = ["Prepared", "prepare"]

_DICT_KEYS = frozenset({"id", "provider", "model", "messages", "prompt", "system", "max_tokens", "temperature"})


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to send: its id, key and options (or why it can't be sent)."""

    id: str | None
    key: str
    options: GenerateOptions | None
    error: LlmError | None = None


def _part(part: object) -> Any:
    try:
        return block_to_dict(part)  # type: ignore[arg-type]
    except (AssertionError, AttributeError, TypeError):
        data = getattr(part, "data", None)
        digest = hashlib.sha256(data).hexdigest() if isinstance(data, bytes) else None
        return {"type": type(part).__name__, "url": getattr(part, "url", None), "sha256": digest}


def canonical(options: GenerateOptions) -> dict[str, Any]:
    """The fields of ``options`` that change the answer, JSON-safe (rule 2)."""
    return {
        "provider": options.provider,
        "model": options.model,
        "messages": [
            {
                "role": m.role,
                "content": m.content if isinstance(m.content, str) else [_part(p) for p in m.content],
            }
            for m in options.messages
        ],
        "tools": [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in options.tools],
        "max_tokens": options.max_tokens,
        "temperature": options.temperature,
        "stop": list(options.stop) if options.stop is not None else None,
        "reasoning_effort": options.reasoning_effort,
        "extra_body": options.extra_body,
        "response_format": repr(options.response_format) if options.response_format is not None else None,
    }


def request_key(options: GenerateOptions) -> str:
    """The stable key of a request without an id (rule 2)."""
    text = json.dumps(canonical(options), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _from_dict(row: Mapping[str, Any], where: str, provider: str | None, model: str | None) -> GenerateOptions:
    unknown = sorted(str(k) for k in row if k not in _DICT_KEYS)
    if unknown:
        raise invalid(f"{where}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_DICT_KEYS))})")
    chosen_provider = row.get("provider", provider)
    chosen_model = row.get("model", model)
    if not isinstance(chosen_provider, str) or not chosen_provider:
        raise invalid(f"{where}.provider: a provider is needed (in the row, or run_many(provider=...))")
    if not isinstance(chosen_model, str) or not chosen_model:
        raise invalid(f"{where}.model: a model is needed (in the row, or run_many(model=...))")
    messages: list[Message] = []
    system = row.get("system")
    if system is not None:
        if not isinstance(system, str):
            raise invalid(f"{where}.system must be a string", wrong_type=True)
        messages.append(Message(role="system", content=system))
    if ("prompt" in row) == ("messages" in row):
        raise invalid(f"{where}: give exactly one of 'prompt' or 'messages'")
    if "prompt" in row:
        if not isinstance(row["prompt"], str):
            raise invalid(f"{where}.prompt must be a string", wrong_type=True)
        messages.append(Message(role="user", content=row["prompt"]))
    else:
        turns = row["messages"]
        if not isinstance(turns, list):
            raise invalid(f"{where}.messages must be a list of {{role, content}}", wrong_type=True)
        for i, turn in enumerate(turns):
            if not isinstance(turn, Mapping) or not isinstance(turn.get("content"), str):
                raise invalid(f"{where}.messages[{i}] must be {{role, content}} with string content", wrong_type=True)
            try:
                messages.append(Message(role=turn.get("role"), content=turn["content"]))  # type: ignore[arg-type]  # checked by Message
            except LlmError as exc:
                raise invalid(f"{where}.messages[{i}]: {exc.failure.message}") from None
    settings: dict[str, Any] = {}
    for name in ("max_tokens", "temperature"):
        if row.get(name) is not None:
            settings[name] = row[name]
    try:
        return GenerateOptions(provider=chosen_provider, model=chosen_model, messages=tuple(messages), **settings)
    except LlmError as exc:
        raise invalid(f"{where}: {exc.failure.message}") from None


def prepare(request: object, index: int, provider: str | None, model: str | None) -> Prepared:
    """Request ``index`` as options and a key (rules 1-2); a bad one carries its error."""
    where = f"requests[{index}]"
    raw_id = request.get("id") if isinstance(request, Mapping) else None
    caller_id = None if raw_id is None else str(raw_id)
    try:
        if isinstance(request, GenerateOptions):
            options = request
        elif isinstance(request, Mapping):
            options = _from_dict(request, where, provider, model)
        else:
            raise invalid(f"{where} must be a GenerateOptions or a dict, not {type(request).__name__}", wrong_type=True)
    except LlmError as exc:
        fallback = caller_id if caller_id is not None else f"invalid:{index}"
        return Prepared(caller_id, fallback, None, exc)
    return Prepared(caller_id, caller_id if caller_id is not None else request_key(options), options)
