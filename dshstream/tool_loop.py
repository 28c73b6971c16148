"""dshstream.tool_loop: what ``dshstream.run_tools`` returns and records.

Contract: ``run_tools`` streams a reply, runs the tool calls it asks for (never a truncated
one), appends the results and streams again, until the model stops asking or a limit is
reached. It returns a :class:`ToolLoopStream`: an iterator of every step's chunks (a
context manager, closed or cancelled like a ``ChunkStream``) whose ``result()`` is a
:class:`ToolLoopResult` — the steps (:class:`ToolLoopStep`, each with the
:class:`ToolOutcome` of every call), the history to continue from, the summed usage and
why the loop stopped. A step that fails ends the loop with a
``dshstream.errors.ToolLoopError`` (raised by iteration after that step's finish, and by
``result()``), which carries the steps and history so far.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._tool_loop import (
        ToolLoopResult as ToolLoopResult,
        ToolLoopStep as ToolLoopStep,
        ToolLoopStream as ToolLoopStream,
        ToolOutcome as ToolOutcome,
    )

__all__ = _exports.public_names("tool_loop")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("tool_loop", name)


def __dir__() -> list[str]:
    return _exports.dir_of("tool_loop")
