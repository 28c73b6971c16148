"""What a caller asks for: messages, tool specs and generation options.

Contract: stdlib, ``types``, ``validate``, ``parts``, ``prompt_cache`` and ``response_format`` only; plain frozen
values. Nothing here knows a provider's wire format; adapters translate these into request
bodies.

Every value is checked where it is built (``__post_init__``, so ``dataclasses.replace``
checks too): a wrong type raises :class:`~dshstream._core.errors.ConfigurationTypeError` (also a
``TypeError``), a bad value :class:`~dshstream._core.errors.ConfigurationError` (also a
``ValueError``); the message names the field (``GenerateOptions.max_tokens``), the type of
the value given and what is expected. :func:`check_options` runs the same checks again on
an existing :class:`GenerateOptions` (one altered behind the dataclass's back).
:func:`with_cancel` is ``dataclasses.replace(options, cancel=event)`` for options that
:func:`check_options` has just passed, without those checks run a third time (once per
stream: the service gives every stream its cancel event).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeAlias

from .response_format import JsonMode, JsonSchema, check_response_format
from .parts import MediaPart
from .prompt_cache import CachePoint, PromptCache, check_cache_point
from .types import Block, FileBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .validate import (
    check_choice,
    check_event,
    check_finite_number,
    check_mapping,
    check_nonneg_int,
    check_positive_int,
    check_str,
    check_str_or_none,
    check_timeout,
    describe,
    invalid,
)

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]
ReasoningEffort: TypeAlias = Literal["off", "minimal", "low", "medium", "high", "max"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")
REASONING_EFFORTS: tuple[ReasoningEffort, ...] = ("off", "minimal", "low", "medium", "high", "max")
_BLOCK_CLASSES = (TextBlock, ReasoningBlock, ToolCallBlock, ToolResultBlock, FileBlock)
_NOT_A_SEQUENCE = (str, bytes, bytearray, Mapping)


def _as_tuple(value: object, field: str, expected: str) -> tuple[Any, ...]:
    """``value`` as a tuple when it is a list, tuple or other iterable (not text or a dict)."""
    if type(value) is tuple:
        return value
    if isinstance(value, _NOT_A_SEQUENCE) or not isinstance(value, Iterable):
        raise invalid(f"{field} must be {expected}, got {describe(value)}", wrong_type=True)
    return tuple(value)


@dataclass(frozen=True, slots=True)
class Message:
    """One turn of a conversation.

    ``content`` is plain text or a sequence of blocks; a user turn may mix in media parts
    (:class:`~dshstream._core.parts.ImagePart`, ``DocumentPart``, ``AudioPart``), in the
    order they should reach the model: ``Message.user("What is this?",
    ImagePart.from_path("cat.png"))``. Assistant turns produced by dshstream
    (``AssembledResponse.message()``) also carry the ``provider`` and ``model`` that wrote
    them and the adapter-owned ``replay_state`` the next request needs. ``cache`` (a
    :class:`~dshstream._core.prompt_cache.CachePoint`) asks the provider to cache the
    prompt up to and including this turn.
    """

    role: Role
    content: str | tuple[Block | MediaPart, ...]
    provider: str | None = None
    model: str | None = None
    replay_state: Any = None
    cache: CachePoint | None = None

    def __post_init__(self) -> None:
        role: object = self.role
        if role not in ROLES or type(role) is not str:
            check_choice(role, "Message.role", ROLES)
        content: object = self.content
        if not isinstance(content, str):
            blocks = _as_tuple(content, "Message.content", "a str or a sequence of blocks")
            for i, block in enumerate(blocks):
                if isinstance(block, MediaPart):
                    if role != "user":
                        raise invalid(
                            f"Message.content[{i}]: a {type(block).__name__} belongs in a user message, "
                            f"not a {role} message"
                        )
                elif type(block) not in _BLOCK_CLASSES:
                    raise invalid(
                        f"Message.content[{i}] must be a TextBlock, ReasoningBlock, ToolCallBlock, "
                        f"ToolResultBlock, FileBlock, ImagePart, DocumentPart or AudioPart, got {describe(block)}",
                        wrong_type=True,
                    )
            object.__setattr__(self, "content", blocks)
        if self.provider is not None:
            check_str_or_none(self.provider, "Message.provider")
        if self.model is not None:
            check_str_or_none(self.model, "Message.model")
        if self.cache is not None:
            check_cache_point(self.cache, "Message.cache")

    @classmethod
    def user(cls, text: str, *parts: MediaPart | str, cache: CachePoint | None = None) -> Message:
        """A user turn: ``text``, then any media parts (or more text) in order."""
        if not parts:
            return cls("user", text, cache=cache)
        items = (text, *parts) if text else parts
        return cls("user", tuple(TextBlock(p) if isinstance(p, str) else p for p in items), cache=cache)

    @classmethod
    def system(cls, text: str, *, cache: CachePoint | None = None) -> Message:
        """A system prompt (``cache``: cache the prompt up to its end)."""
        return cls("system", text, cache=cache)

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
        """The content's blocks (plain text becomes one text block); media parts are not
        blocks: see :attr:`parts` and :attr:`attachments`."""
        if isinstance(self.content, str):
            return (TextBlock(self.content),) if self.content else ()
        if self.role != "user":  # media parts live in user turns only
            return self.content  # type: ignore[return-value]
        return tuple(b for b in self.content if not isinstance(b, MediaPart))

    @property
    def parts(self) -> tuple[Block | MediaPart, ...]:
        """The whole content in order, blocks and media parts (plain text becomes one
        text block): what an adapter turns into the provider's content array."""
        if isinstance(self.content, str):
            return (TextBlock(self.content),) if self.content else ()
        return self.content

    @property
    def attachments(self) -> tuple[MediaPart, ...]:
        """The media parts (images, documents, audio) of a user turn."""
        if isinstance(self.content, str):
            return ()
        return tuple(p for p in self.content if isinstance(p, MediaPart))

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
    """A tool the model may call; ``parameters`` is a JSON Schema object; ``cache`` (a
    :class:`~dshstream._core.prompt_cache.CachePoint`) caches the tool list up to and
    including this tool."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    cache: CachePoint | None = None

    def __post_init__(self) -> None:
        check_str(self.name, "ToolSpec.name")
        check_str(self.description, "ToolSpec.description", nonempty=False)
        check_mapping(self.parameters, "ToolSpec.parameters")
        if self.cache is not None:
            check_cache_point(self.cache, "ToolSpec.cache")

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
    time between content-bearing events (keep-alives don't count; default 300 s), and
    ``quiet_timeout`` that time while the provider is known to be working without sending
    content — a tool input being buffered, a server tool running, a reasoning item
    (default 900 s; never less than ``idle_timeout``). ``response_format``
    asks for JSON (:class:`JsonSchema` or :class:`JsonMode`; each adapter maps it to its
    provider's mechanism or refuses it at build time). ``max_retries`` of
    ``None`` uses the adapter's setting. ``resumable`` asks a provider that can resume a
    cut stream (OpenAI and Azure Responses: background mode, stored) to do so instead of
    ending it ``STREAM_CLOSED``; on every other wire it is accepted and has no effect.
    ``prompt_cache`` (:class:`~dshstream._core.prompt_cache.PromptCache`) holds the
    request-wide caching settings; the cache points themselves sit on messages and tools.
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
    response_format: JsonSchema | JsonMode | None = None
    quiet_timeout: float | None = None
    resumable: bool = False
    prompt_cache: PromptCache | None = None

    def __post_init__(self) -> None:
        _check(self, normalize=True)

    @property
    def cancelled(self) -> bool:
        """Whether the caller has asked to cancel this request."""
        return self.cancel is not None and self.cancel.is_set()


def check_options(options: object) -> GenerateOptions:
    """``options`` if it is a valid :class:`GenerateOptions` (the checks of its constructor,
    run again); raises ``ConfigurationError``/``ConfigurationTypeError`` otherwise."""
    if not isinstance(options, GenerateOptions):
        raise invalid(f"options must be a GenerateOptions, got {describe(options)}", wrong_type=True)
    _check(options, normalize=False)
    return options


_OPTION_FIELDS = tuple(f for f in GenerateOptions.__slots__ if f != "cancel")
_read_options = operator.attrgetter(*_OPTION_FIELDS)
_OPTION_SETTERS = tuple(getattr(GenerateOptions, f).__set__ for f in _OPTION_FIELDS)
_set_cancel = getattr(GenerateOptions, "cancel").__set__  # noqa: B009 - the slot's descriptor


def with_cancel(options: GenerateOptions, cancel: threading.Event) -> GenerateOptions:
    """``options`` (passed by :func:`check_options` just before) with ``cancel`` as its
    cancel event: what ``dataclasses.replace`` builds, each field copied through its slot
    (the constructor's checks, run by ``replace``, passed a moment ago). Options whose
    sequences are not stored as tuples (altered behind the dataclass's back), or of a
    subclass, go through ``replace``, which stores them as tuples."""
    if (
        type(options) is not GenerateOptions
        or type(options.messages) is not tuple
        or type(options.tools) is not tuple
        or not (options.stop is None or type(options.stop) is tuple)
    ):
        return replace(options, cancel=cancel)
    copy = object.__new__(GenerateOptions)
    for put, value in zip(_OPTION_SETTERS, _read_options(options)):
        put(copy, value)
    _set_cancel(copy, cancel)
    return copy


def check_overridable(options: Any, name: str) -> None:
    """Check the fields a fallback target may override as well (``max_tokens``,
    ``temperature``, ``reasoning_effort``, ``idle_timeout``, ``timeout``,
    ``max_retries``): one set of rules for :class:`GenerateOptions` and ``Target``."""
    if options.max_tokens is not None:
        check_positive_int(options.max_tokens, f"{name}.max_tokens")
    if options.temperature is not None:
        check_finite_number(options.temperature, f"{name}.temperature", minimum=0.0)
    if options.reasoning_effort is not None:
        check_choice(options.reasoning_effort, f"{name}.reasoning_effort", REASONING_EFFORTS)
    check_timeout(options.idle_timeout, f"{name}.idle_timeout")
    check_timeout(options.timeout, f"{name}.timeout")
    if options.max_retries is not None:
        check_nonneg_int(options.max_retries, f"{name}.max_retries")


def _check(options: GenerateOptions, *, normalize: bool) -> None:
    """Validate every field; with ``normalize``, store sequences as tuples."""
    name = "GenerateOptions"
    check_str(options.provider, f"{name}.provider")
    check_str(options.model, f"{name}.model")

    messages = _as_tuple(options.messages, f"{name}.messages", "a sequence of Message")
    for i, message in enumerate(messages):
        if type(message) is not Message and not isinstance(message, Message):
            hint = "; build one with Message.user(text)" if isinstance(message, (str, Mapping)) else ""
            raise invalid(f"{name}.messages[{i}] must be a Message, got {describe(message)}{hint}", wrong_type=True)
    tools = _as_tuple(options.tools, f"{name}.tools", "a sequence of ToolSpec")
    for i, tool in enumerate(tools):
        if not isinstance(tool, ToolSpec):
            hint = "; build one with ToolSpec(name, description, parameters)" if isinstance(tool, Mapping) else ""
            raise invalid(f"{name}.tools[{i}] must be a ToolSpec, got {describe(tool)}{hint}", wrong_type=True)

    stop: object = options.stop
    if stop is not None:
        stops = (stop,) if isinstance(stop, str) else _as_tuple(stop, f"{name}.stop", "a str or a sequence of str")
        for i, item in enumerate(stops):
            if not isinstance(item, str):
                raise invalid(f"{name}.stop[{i}] must be a str, got {describe(item)}", wrong_type=True)
        stop = stops

    check_overridable(options, name)
    if options.cancel is not None:
        check_event(options.cancel, f"{name}.cancel")
    check_timeout(options.quiet_timeout, f"{name}.quiet_timeout")
    if options.extra_body is not None:
        check_mapping(options.extra_body, f"{name}.extra_body")
    check_response_format(options.response_format, f"{name}.response_format")
    if type(options.resumable) is not bool:
        raise invalid(f"{name}.resumable must be a bool, got {describe(options.resumable)}", wrong_type=True)
    if options.prompt_cache is not None and not isinstance(options.prompt_cache, PromptCache):
        raise invalid(
            f"{name}.prompt_cache must be a PromptCache or None, got {describe(options.prompt_cache)}", wrong_type=True
        )

    if normalize:
        object.__setattr__(options, "messages", messages)
        object.__setattr__(options, "tools", tools)
        object.__setattr__(options, "stop", stop)
