"""BatchResult: one request's outcome, and its JSON line.

Contract:

1. One :class:`BatchResult` per input request, frozen: its ``id`` (the caller's, or
   ``None``), its stable ``key``, its ``index`` in the input, ``ok``, the ``text`` and
   ``tool_calls``, the ``finish`` kind, the ``failure`` (an ``LlmFailure``, already
   redacted, or ``None``), ``usage``, ``cost`` (USD: the provider-reported cost, else what
   the caller's ``price`` gave, else ``None``), ``attempts`` (HTTP attempts, the retries
   after a 429 included), ``request_id``, ``duration`` (seconds, the waits for the rate
   limit included). ``skipped`` rows were never sent (their failure says why);
   ``resumed`` rows were read back from the checkpoint, not sent again. ``response`` is
   the row's ``AssembledResponse`` when it was answered in this run (a live stream's, or
   a provider batch row's read by the same wire translator); ``None`` otherwise.
2. :func:`result_to_dict` / :func:`result_from_dict` are the checkpoint's JSON line and
   round-trip every field but ``resumed`` and ``response``; a failure keeps its ``diagnostics`` out (they
   describe one run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._core.assembler import AssembledResponse
from .._core.types import (
    FinishKind,
    LlmFailure,
    TokenUsage,
    ToolCallBlock,
    block_from_dict,
    block_to_dict,
    failure_from_dict,
    failure_to_dict,
    usage_from_dict,
    usage_to_dict,
)

__all__ = ["BatchResult", "result_from_dict", "result_to_dict"]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One request's outcome (rule 1)."""

    id: str | None
    key: str
    index: int
    ok: bool
    text: str = ""
    tool_calls: tuple[ToolCallBlock, ...] = ()
    finish: FinishKind | None = None
    failure: LlmFailure | None = None
    usage: TokenUsage | None = None
    cost: float | None = None
    attempts: int = 0
    request_id: str | None = None
    duration: float = 0.0
    skipped: bool = False
    resumed: bool = False
    response: AssembledResponse | None = field(default=None, repr=False, compare=False)


def result_to_dict(result: BatchResult) -> dict[str, Any]:
    """The checkpoint line of ``result`` (rule 2)."""
    out: dict[str, Any] = {"key": result.key, "id": result.id, "index": result.index, "ok": result.ok}
    out["text"] = result.text
    if result.tool_calls:
        out["tool_calls"] = [block_to_dict(call) for call in result.tool_calls]
    out["finish"] = result.finish
    if result.failure is not None:
        failure = failure_to_dict(result.failure)
        failure.pop("diagnostics", None)
        out["failure"] = failure
    if result.usage is not None:
        out["usage"] = usage_to_dict(result.usage)
    out["cost"] = result.cost
    out["attempts"] = result.attempts
    out["request_id"] = result.request_id
    out["duration"] = round(result.duration, 3)
    if result.skipped:
        out["skipped"] = True
    return out


def result_from_dict(data: dict[str, Any], *, resumed: bool = False) -> BatchResult:
    """Inverse of :func:`result_to_dict`; ``ValueError``/``KeyError``/``TypeError`` on a
    line that is not one."""
    calls = tuple(block_from_dict(call) for call in data.get("tool_calls") or ())
    if not all(isinstance(call, ToolCallBlock) for call in calls):
        raise ValueError("tool_calls holds a block that is not a tool call")
    failure = data.get("failure")
    usage = data.get("usage")
    return BatchResult(
        id=None if data.get("id") is None else str(data["id"]),
        key=str(data["key"]),
        index=int(data.get("index", -1)),
        ok=bool(data["ok"]),
        text=str(data.get("text") or ""),
        tool_calls=calls,  # type: ignore[arg-type]
        finish=data.get("finish"),
        failure=failure_from_dict(failure) if failure else None,
        usage=usage_from_dict(usage) if usage else None,
        cost=data.get("cost"),
        attempts=int(data.get("attempts") or 0),
        request_id=data.get("request_id"),
        duration=float(data.get("duration") or 0.0),
        skipped=bool(data.get("skipped", False)),
        resumed=resumed,
    )
