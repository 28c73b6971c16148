"""Usage records from wire counts: building, summing and splitting by model.

Contract (sans-IO; stdlib + ``types``; each wire's own field names stay in its module,
what they have in common is here):

1. A wire usage record is a usage only when it has an input or an output count
   (:func:`counted_usage`): ``None`` otherwise, so a record without counts (Vertex's
   ``{"trafficType": ...}``) never replaces a real one; a missing one of the two is 0,
   the optional counts stay ``None`` when absent. Every count is read with
   :func:`~dshstream._core.wires.json_values.int_or_none`.
2. Sums are field by field (:func:`add_usage`); an optional count (cache, reasoning,
   cost) stays ``None`` only when both sides lack it.
3. Per-iteration records (Anthropic ``usage.iterations``, or the same shape relayed by a
   gateway) split by the model that produced them (:func:`split_iterations`): the
   responding model's own entries (naming no model, or the response's model) are billed
   to the response; another model's entries are summed per model and reported apart
   (``metadata.usage_by_model``), never added to the response's usage.
4. The provider's own counts as it reported them (:func:`reported_counts`, asked to
   explain an empty reply): the input count, and the output count summed over the fields
   that bill as output (Gemini's thoughts beside its candidates); each ``None`` when no
   field of it is a valid count.
5. A cost in a usage record (:func:`usage_cost`, USD): ``cost`` as a number (OpenRouter,
   Vercel's gateway), or an object's ``total_cost`` (Perplexity) or ``usd`` (Charm's Hyper
   gateway); else ``cost_in_usd_ticks`` (xAI, on chat and on Responses: 1e-10 USD each).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..types import TokenUsage
from .json_values import cost_or_none, int_or_none

__all__ = ["add_usage", "counted_usage", "reported_counts", "split_iterations", "usage_cost"]

_USD_TICKS = 1e10  # xAI bills in ticks of 1e-10 USD


def usage_cost(usage: dict[str, Any]) -> float | None:
    """The cost a usage record reports, in USD, or ``None`` (rule 5)."""
    cost = usage.get("cost")
    if type(cost) is dict:
        cost = cost.get("total_cost", cost.get("usd"))
    found = cost_or_none(cost)
    if found is None:
        ticks = cost_or_none(usage.get("cost_in_usd_ticks"))
        found = ticks / _USD_TICKS if ticks is not None else None
    return found


def reported_counts(
    raw: dict[str, Any] | None, input_key: str, *output_keys: str
) -> tuple[int | None, int | None]:
    """``raw``'s input count and its output count, summed over ``output_keys`` (rule 4)."""
    if raw is None:
        return (None, None)
    outputs = [count for count in (int_or_none(raw.get(key)) for key in output_keys) if count is not None]
    return (int_or_none(raw.get(input_key)), sum(outputs) if outputs else None)


def counted_usage(
    input_tokens: Any, output_tokens: Any, cache_read: Any = None, cache_write: Any = None
) -> TokenUsage | None:
    """A usage from raw wire counts (rule 1): ``None`` when neither ``input_tokens`` nor
    ``output_tokens`` is a valid count."""
    inputs = int_or_none(input_tokens)
    outputs = int_or_none(output_tokens)
    if inputs is None and outputs is None:
        return None
    return TokenUsage(
        input_tokens=inputs or 0,
        output_tokens=outputs or 0,
        cache_read_tokens=int_or_none(cache_read),
        cache_write_tokens=int_or_none(cache_write),
    )


def add_usage(a: TokenUsage, b: TokenUsage) -> TokenUsage:
    """The sum of two usage records (rule 2)."""

    def both(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    cost = None if a.cost is None and b.cost is None else (a.cost or 0.0) + (b.cost or 0.0)
    return TokenUsage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=both(a.cache_read_tokens, b.cache_read_tokens),
        cache_write_tokens=both(a.cache_write_tokens, b.cache_write_tokens),
        reasoning_tokens=both(a.reasoning_tokens, b.reasoning_tokens),
        cost=cost,
    )


def split_iterations(
    iterations: Any, model: str | None, parse: Callable[[dict[str, Any]], TokenUsage | None]
) -> tuple[list[dict[str, Any]], dict[str, TokenUsage]]:
    """Split a usage record's per-iteration entries by the model that produced them
    (rule 3): the responding model's own entries (naming no model, or ``model``), and, per
    other model named, the sum of its entries parsed with ``parse``. Entries that are not
    objects are skipped."""
    own: list[dict[str, Any]] = []
    others: dict[str, TokenUsage] = {}
    for entry in iterations if type(iterations) is list else ():
        if type(entry) is not dict:
            continue
        named = entry.get("model")
        if not isinstance(named, str) or not named or named == model:
            own.append(entry)
            continue
        usage = parse(entry)
        if usage is not None:
            known = others.get(named)
            others[named] = usage if known is None else add_usage(known, usage)
    return own, others
