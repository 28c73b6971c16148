"""The old import path of what every wire shares, kept while its importers move.

What lived here now lives one concern per module: :mod:`.writer` (``ChunkWriter``),
:mod:`.translator` (``Translator``), :mod:`.deltas` (the fast delta constructors),
:mod:`.json_values` (typed reads of wire JSON) and :mod:`.usage` (usage records).

Contract:

1. Nothing is defined here: every name is the very object its home module defines, so
   ``isinstance`` checks, subclassing and monkeypatching see one class.
2. Nothing in ``dshstream._core`` imports from here; new code imports from the home
   modules. The module goes once the adapters and tests that still name it have moved
   (one import line each).
"""

from __future__ import annotations

from .deltas import reasoning_delta, text_delta, tool_call_delta
from .json_values import cost_or_none, dict_or_empty, first_str, int_or_none, list_or_empty
from .translator import Translator
from .usage import add_usage, split_iterations
from .writer import ChunkWriter

__all__ = [
    "ChunkWriter",
    "Translator",
    "add_usage",
    "cost_or_none",
    "dict_or_empty",
    "first_str",
    "int_or_none",
    "list_or_empty",
    "reasoning_delta",
    "split_iterations",
    "text_delta",
    "tool_call_delta",
]
