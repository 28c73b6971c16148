"""What a caller asks for: messages, tool specs and generation options.

Contract: stdlib + ``types`` only; plain frozen values. Nothing here knows a provider's wire
format; adapters translate these into request bodies.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .types import Block, TextBlock, ToolCallBlock, ToolResultBlock

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ReasoningEffort: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "max"]


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation.

    ``content`` is plain text or a sequence of blocks. Assistant turns produced by dshstream
    (``AssembledResponse.message()``) also carry the ``provider`` and ``model`` that wrote
    them and the adapter-owned ``replay_state`` the next request needs.
    """

    role: Role
    content: str | tuple[Block, ...]
    provider: str | None = None
    model: str | None = None
    replay_state: Any = None

    def __post_init__(self) -> None:
        if self.role not in ("system", "user", "assistant", "tool"):
            raise ValueError(f"unknown role {self.role!r}")
        if not isinstance(self.content, str):
            object.__setattr__(self, "content", tuple(self.content))

    @classmethod
    def user(cls, text: str) -> Message:
        """A user turn."""
        return cls("user", text)

    @classmethod
    def system(cls, text: str) -> Message:
        """A system prompt."""
        return cls("system", text)

    @classmethod
    def assistant(cls, content: str | Sequence[Block]) -> Message:
        """An assistant turn written by hand (no replay state)."""
        return cls("assistant", content if isinstance(content, str) else tuple(content))

    @classmethod
    def tool_result(cls, call_id: str, content: str, is_error: bool = False) -> Message:
        """The result of running tool call ``call_id``."""
        return cls("tool", (ToolResultBlock(call_id=call_id, content=content, is_error=is_error),))

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The content as blocks (plain text becomes one text block)."""
        if isinstance(self.content, str):
            return (TextBlock(self.content),) if self.content else ()
        return self.content

    @property
    def text(self) -> str:
        """All visible text of the turn, joined."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The tool calls of an assistant turn."""
        return tuple(b for b in self.blocks if isinstance(b, ToolCallBlock))


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call; ``parameters`` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry for this spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True, slots=True)
class GenerateOptions:
    """One generation request.

    ``cancel`` is a :class:`threading.Event`; setting it from any thread ends the stream
    with an ``aborted`` finish. ``timeout`` bounds the whole request, ``idle_timeout`` the
    time between content-bearing events (keep-alives don't count). ``max_retries`` of
    ``None`` uses the adapter's setting.
    """

    provider: str
    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: ReasoningEffort | None = None
    cancel: threading.Event | None = None
    idle_timeout: float | None = None
    timeout: float | None = None
    extra_body: Mapping[str, Any] | None = None
    max_retries: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        stop: object = self.stop
        if isinstance(stop, str):
            object.__setattr__(self, "stop", (stop,))
        elif stop is not None:
            object.__setattr__(self, "stop", tuple(stop))  # type: ignore[arg-type]

    @property
    def cancelled(self) -> bool:
        """Whether the caller has asked to cancel this request."""
        return self.cancel is not None and self.cancel.is_set()
