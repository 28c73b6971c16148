"""A model's parallel dispatch wrapper: one tool call that stands for several.

Contract (sans-IO, stdlib + the strict JSON reader only): OpenAI models can send their
internal parallel dispatch as one call named ``multi_tool_use.parallel`` (Chat
Completions) or ``parallel`` (the Responses API: Azure OpenAI's gpt-5.4, vercel/ai#19067)
whose arguments list the real calls::

    {"tool_uses": [{"recipient_name": "functions.weather", "parameters": {"location": "SF"}}, ...]}

1. **Only what can be checked.** A call is a wrapper when its name is one of
   :data:`PARALLEL_WRAPPERS`, the request declared tools and none of that name (a caller's
   own ``parallel`` tool is theirs), and its whole arguments are exactly that shape: a
   non-empty ``tool_uses`` list whose every entry names a declared tool as
   ``functions.NAME`` and gives a JSON object of ``parameters``. Anything else is the one
   call it says it is (:func:`parallel_calls` returns ``None``).
2. **Its calls, in order.** A wrapper is one tool call per entry: the entry's tool, its
   parameters as compact JSON arguments, and the id :func:`child_id` (``{call_id}_{i}``),
   from which :func:`wrapper_of` reads the wrapper's id and the position back.
3. Whether a call is a wrapper is known only once its arguments are whole, so a wire
   holds a candidate's arguments until then; one cut off before is the one call, cut.
"""

from __future__ import annotations

from collections.abc import Collection

from ..strict_json import dump_json, loads_or_none

__all__ = ["PARALLEL_WRAPPERS", "child_id", "may_wrap", "parallel_calls", "wrapper_of"]

#: the names a model's parallel dispatch wrapper goes by (rule 1)
PARALLEL_WRAPPERS = frozenset({"parallel", "multi_tool_use.parallel"})
_RECIPIENT_PREFIX = "functions."


def may_wrap(name: object, client_tools: Collection[str] | None) -> bool:
    """Whether a call named ``name`` may be a wrapper, the request declaring
    ``client_tools`` (``None``: unknown) (rule 1)."""
    return isinstance(name, str) and name in PARALLEL_WRAPPERS and client_tools is not None and name not in client_tools


def parallel_calls(arguments: str, client_tools: Collection[str]) -> list[tuple[str, str]] | None:
    """The (name, arguments) of each call a wrapper's whole ``arguments`` dispatch, or
    ``None`` when they are not exactly that shape over ``client_tools`` (rules 1, 2)."""
    value = loads_or_none(arguments)
    uses = value.get("tool_uses") if type(value) is dict else None
    if type(uses) is not list or not uses:
        return None
    calls: list[tuple[str, str]] = []
    for use in uses:
        if type(use) is not dict:
            return None
        recipient, parameters = use.get("recipient_name"), use.get("parameters")
        if not isinstance(recipient, str) or not recipient.startswith(_RECIPIENT_PREFIX) or type(parameters) is not dict:
            return None
        name = recipient[len(_RECIPIENT_PREFIX) :]
        text = dump_json(parameters)
        if not name or name not in client_tools or text is None:
            return None
        calls.append((name, text))
    return calls


def child_id(call_id: str, position: int) -> str:
    """The id of the wrapper ``call_id``'s call at ``position`` (rule 2)."""
    return f"{call_id}_{position}"


def wrapper_of(child: str) -> tuple[str, int]:
    """The wrapper's call id and the position of :func:`child_id`'s ``child`` (rule 2)."""
    wrapper, _, position = child.rpartition("_")
    return wrapper, int(position) if position.isdigit() else 0
