"""Typed reads of untrusted wire JSON: the value a translator wants, or a neutral one.

Contract (sans-IO, stdlib only; every wire module reads its payloads through these):

1. Nothing here raises, whatever the value: a provider (or a gateway in front of it) may
   send any JSON where a field is expected, and a wrong type reads as absent.
2. Absent is ``None`` for a scalar (:func:`first_str`, :func:`int_or_none`,
   :func:`cost_or_none`) and an empty, fresh container for a container
   (:func:`dict_or_empty`, :func:`list_or_empty`), so a read can be chained
   (``dict_or_empty(payload.get("usage")).get("input_tokens")``).
3. A count is a non-negative int: ``True``/``False`` are not counts, an integral float
   (``12.0``) is its int, anything else (negative, fractional, string) is absent. A cost is
   a finite, non-negative number of USD, as a float.
4. A string read (:func:`first_str`) is the first *non-empty* string: ``""`` is absent.
5. A container read returns the value itself when it has the type (no copy): the caller
   must not mutate what it did not create.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["cost_or_none", "dict_or_empty", "first_str", "int_or_none", "list_or_empty"]


def cost_or_none(value: Any) -> float | None:
    """A finite, non-negative cost in USD, or ``None`` (huge, NaN or non-numeric values;
    rule 3)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None


def int_or_none(value: Any) -> int | None:
    """``value`` if it is a non-negative int (bools excluded), else ``None`` (rule 3)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None


def first_str(*values: Any) -> str | None:
    """The first non-empty string among ``values`` (rule 4)."""
    for value in values:
        if isinstance(value, str) and value:
            return value
    return None


def dict_or_empty(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty dict (rules 2 and 5)."""
    return value if isinstance(value, dict) else {}


def list_or_empty(value: Any) -> list[Any]:
    """``value`` if it is a list, else an empty list (rules 2 and 5)."""
    return value if isinstance(value, list) else []
