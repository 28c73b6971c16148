"""The delta chunks, built for the hot path: one is made for almost every event.

Contract (sans-IO, stdlib + ``types`` only):

1. :func:`text_delta`, :func:`reasoning_delta` and :func:`tool_call_delta` take their
   class's fields positionally, in declaration order (``TextDelta(index, text)``,
   ``ReasoningDelta(index, text)``, ``ToolCallDelta(index, id, name, arguments_delta)``),
   and return an object equal to the one the class itself builds, with every field the
   same; ``tests/core/test_hot_paths.py`` checks the equivalence for every field.
2. They cost about two thirds of the dataclass ``__init__``: the instance is allocated
   with ``object.__new__`` and its slots filled through their descriptors, once per field,
   without ``object.__setattr__`` (the frozen dataclass's only way in).
3. Only a plain slotted frozen dataclass qualifies (no ``__post_init__``, its
   ``__slots__`` exactly its fields, two or four of them): :func:`_delta_maker` refuses
   any other class with ``TypeError`` when the module is imported, so a change to a delta
   class that would make the shortcut wrong fails at once, never silently.
4. :data:`TEXT_DELTA_SLOTS`, :data:`REASONING_DELTA_SLOTS` and :data:`TOOL_CALL_DELTA_SLOTS`
   are the same makers' parts
   (the slot setters, in field order, checked as in rule 3) for the writer, which builds
   its most frequent chunks inline, ``object.__new__`` then each setter: one Python call
   less per delta, the same object as rule 1's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from ..types import ReasoningDelta, TextDelta, ToolCallDelta

__all__ = [
    "REASONING_DELTA_SLOTS",
    "TEXT_DELTA_SLOTS",
    "TOOL_CALL_DELTA_SLOTS",
    "reasoning_delta",
    "text_delta",
    "tool_call_delta",
]

_D = TypeVar("_D", TextDelta, ReasoningDelta, ToolCallDelta)


_Setter = Callable[[Any, Any], None]


def _slot_setters(cls: type[_D]) -> list[_Setter]:
    """The slot setters of the delta chunk class ``cls``, in field order; ``TypeError`` for
    a class the shortcut would get wrong (rule 3)."""
    names = [f.name for f in fields(cls)]
    plain = not hasattr(cls, "__post_init__") and getattr(cls, "__slots__", None) == tuple(names)
    if not plain or len(names) not in (2, 4):
        raise TypeError(f"{cls.__name__} is not a plain slotted dataclass")
    return [cls.__dict__[name].__set__ for name in names]


def _delta_maker(cls: type[_D]) -> Callable[..., _D]:
    """A constructor for the delta chunk class ``cls`` that fills its slots through their
    descriptors (rule 2); ``TypeError`` for a class the shortcut would get wrong (rule 3)."""
    new = object.__new__
    setters = _slot_setters(cls)
    if len(setters) == 2:
        set_a, set_b = setters

        def make2(a: Any, b: Any) -> _D:
            chunk = new(cls)
            set_a(chunk, a)
            set_b(chunk, b)
            return chunk

        return make2
    set_a, set_b, set_c, set_d = setters

    def make4(a: Any, b: Any, c: Any, d: Any) -> _D:
        chunk = new(cls)
        set_a(chunk, a)
        set_b(chunk, b)
        set_c(chunk, c)
        set_d(chunk, d)
        return chunk

    return make4


#: ``TextDelta(index, text)``, ``ReasoningDelta(index, text)`` and
#: ``ToolCallDelta(index, id, name, arguments_delta)``, made for the hot path (rule 1)
text_delta: Callable[[int, str], TextDelta] = _delta_maker(TextDelta)
reasoning_delta: Callable[[int, str], ReasoningDelta] = _delta_maker(ReasoningDelta)
tool_call_delta: Callable[[int, str, str | None, str], ToolCallDelta] = _delta_maker(ToolCallDelta)

#: ``TextDelta``'s and ``ReasoningDelta``'s setters (index, text), and ``ToolCallDelta``'s
#: (index, id, name, arguments_delta), for a chunk built inline (rule 4)
TEXT_DELTA_SLOTS: tuple[_Setter, _Setter] = tuple(_slot_setters(TextDelta))  # type: ignore[assignment]
REASONING_DELTA_SLOTS: tuple[_Setter, _Setter] = tuple(_slot_setters(ReasoningDelta))  # type: ignore[assignment]
TOOL_CALL_DELTA_SLOTS: tuple[_Setter, _Setter, _Setter, _Setter] = tuple(_slot_setters(ToolCallDelta))  # type: ignore[assignment]
