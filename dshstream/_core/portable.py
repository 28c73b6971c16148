"""History made portable for one target: what a conversation carries from the provider that
wrote each turn is sent back to that provider only.

Contract: stdlib, ``types`` and ``request`` only; pure functions, no I/O. The service calls
:func:`portable_history` for each target of a fallback chain, with ``native(message)``
(which turns are native: :mod:`dshstream._fallback` rule 1). A message is
*foreign* to the target when its provider is another adapter's (or none the service
knows); a turn of the target's own provider by another model is neither native nor foreign.

1. **A native turn is sent as it is**: its replay state (Anthropic content blocks with
   thinking signatures, Gemini parts with their ``thoughtSignature``, Responses reasoning
   items with ``encrypted_content``, item ids and ``phase``, OpenRouter
   ``reasoning_details``...), its reasoning signatures and its tool-call ids.
2. **Any other turn loses its replay state**, and an assistant turn another provider wrote
   (``foreign(message)``) also loses what that provider put in its blocks: the reasoning
   signatures (an Anthropic, Bedrock or Gemini signature is valid for its own API only; an
   adapter that finds one sends it back as that API's). Text, reasoning text, tool calls,
   files and citations stay. A turn with no ``provider`` is the caller's own and keeps its
   blocks; so does a turn of the target's own provider by another model (its replay state
   goes, its signed reasoning stays).
3. **Tool-call ids stay consistent and valid everywhere.** In a turn that is not native, a
   call id that some API would refuse — not 1-40 characters of ``A-Z a-z 0-9 _ -``, or
   used by an earlier call of the conversation (Gemini numbers its calls per turn,
   Anthropic and Bedrock refuse a repeated id) — is replaced by a fresh one
   (``call_`` + 24 hex digits, the same for the same history every time), and every tool
   result that answers that call (a later ``ToolResultBlock`` with its id, up to the next
   call with the same original id) carries the new id. Native turns keep their ids, and a
   foreign id that collides with a native one is the one renamed.
4. The caller's messages are never mutated: changed turns are new :class:`Message` values,
   unchanged ones are passed through as they are.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from .request import Message
from .types import Block, ReasoningBlock, ToolCallBlock, ToolResultBlock

__all__ = ["PORTABLE_ID", "portable_history"]

#: a tool-call id every API takes (OpenAI chat caps them at 40 characters; Anthropic and
#: Bedrock take letters, digits, ``_`` and ``-``)
PORTABLE_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def portable_history(
    messages: Sequence[Message],
    native: Callable[[Message], bool],
    foreign: Callable[[Message], bool] | None = None,
) -> tuple[Message, ...]:
    """``messages`` as one target is sent them (rules 1-4); ``foreign`` defaults to: the
    message names a provider and is not native."""
    if foreign is None:
        foreign = lambda message: message.provider is not None and not native(message)  # noqa: E731
    natives = [m.replay_state is not None and native(m) for m in messages]
    used: set[str] = {
        call.id for message, own in zip(messages, natives) if own and message.role == "assistant" for call in message.tool_calls
    }
    renamed: dict[str, str] = {}  # original id -> the id sent, for the latest call with it
    out: list[Message] = []
    for position, (message, own) in enumerate(zip(messages, natives)):
        if own:  # rule 1
            for call in message.tool_calls:
                renamed.pop(call.id, None)
            out.append(message)
            continue
        if message.role == "assistant":
            out.append(_other_turn(message, position, foreign(message), used, renamed))
        else:
            out.append(_answers(message, renamed))
    return tuple(out)


def _other_turn(message: Message, position: int, strip: bool, used: set[str], renamed: dict[str, str]) -> Message:
    """An assistant turn that is not native (rules 2 and 3); ``strip``: it is foreign."""
    changed = message.replay_state is not None
    if isinstance(message.content, str):
        return replace(message, replay_state=None) if changed else message
    blocks: list[Block] = []
    for block in message.content:
        if isinstance(block, ReasoningBlock) and strip and block.signature is not None:
            block = ReasoningBlock(block.text)
            changed = True
        elif isinstance(block, ToolCallBlock):
            new_id = block.id
            if not PORTABLE_ID.fullmatch(block.id) or block.id in used:
                new_id = _fresh_id(block.id, position, used)
            used.add(new_id)
            if new_id != block.id:
                renamed[block.id] = new_id
                block = replace(block, id=new_id)
                changed = True
            else:
                renamed.pop(block.id, None)
        blocks.append(block)  # type: ignore[arg-type]  # media parts live in user turns only
    if not changed:
        return message
    return replace(message, content=tuple(blocks), replay_state=None)


def _answers(message: Message, renamed: dict[str, str]) -> Message:
    """A user, tool or system turn: its replay state dropped, its tool results pointed at
    the ids their calls were sent with (rule 3)."""
    changed = message.replay_state is not None
    if isinstance(message.content, str) or not renamed:
        return replace(message, replay_state=None) if changed else message
    parts = []
    for part in message.content:
        if isinstance(part, ToolResultBlock) and part.call_id in renamed:
            part = replace(part, call_id=renamed[part.call_id])
            changed = True
        parts.append(part)
    if not changed:
        return message
    return replace(message, content=tuple(parts), replay_state=None)


def _fresh_id(original: str, position: int, used: set[str]) -> str:
    """A portable id for the call ``original`` of turn ``position``, not in ``used``."""
    salt = 0
    while True:
        digest = hashlib.sha256(f"{position}\x00{salt}\x00{original}".encode("utf-8", "surrogatepass")).hexdigest()
        candidate = f"call_{digest[:24]}"
        if candidate not in used:
            return candidate
        salt += 1
