"""Our chunks as the Vercel AI SDK's UI message stream: the parts ``useChat`` and
``readUIMessageStream`` build a message from.

Contract: stdlib and the core only, no I/O; a generator of part dicts (the framing and the
HTTP answer are :mod:`~dshstream._web.framing` and :mod:`~dshstream._web.wsgi`). The
parts' schemas are vercel/ai's ``packages/ai/src/ui-message-stream/ui-message-chunks.ts``.

1. **Only the documented keys.** Each part carries exactly the keys its schema declares,
   in the ``ai`` 5.0.92 schema as in 6.x and 7.x (clients built before vercel/ai PR #17010
   reject a part with any key more): ``start`` (``messageId``), ``start-step``,
   ``text-start``/``text-delta``/``text-end`` and ``reasoning-*`` (``id``, ``delta``),
   ``tool-input-start`` (``toolCallId``, ``toolName``), ``tool-input-delta``
   (``inputTextDelta``), ``tool-input-available``/``tool-input-error`` (``input``;
   ``errorText``), ``tool-output-available``/``tool-output-error``, ``source-url``
   (``sourceId``, ``url``, ``title``), ``file`` (``url``, ``mediaType``), ``finish-step``,
   ``finish`` (``finishReason``; ``finish_reason=False`` leaves it out, for ``ai`` clients
   older than 5.0.92), ``error`` (``errorText``) and ``abort``.
2. **The mapping.** A message is ``start`` and ``start-step``, then per block: text and
   reasoning as ``*-start``, a delta per non-empty piece, ``*-end``; a tool call as
   ``tool-input-start`` once its id and name are known, its argument pieces as
   ``tool-input-delta``, then ``tool-input-available`` with the parsed arguments — or
   ``tool-input-error`` (the arguments as text) when they were cut off
   (``arguments_truncated``) or are not JSON; a file (a generated image) as ``file``
   with a ``data:`` URL; a text block's URL citations as ``source-url`` parts after it
   (each URL once per message). Usage is not sent. The finish maps to ``finishReason``:
   ``stop``, ``tool-calls``, ``max-tokens`` is ``length``, an error is ``error``
   (``content-filter`` when the provider filtered the answer); an aborted stream ends with
   ``abort`` instead of ``finish``. Ids are unique in the message (``text-<step>-<block>``).
3. **Every part opened is closed.** At a finish, a failure, a source that raises or ends
   without a finish, each open text or reasoning part gets its ``*-end`` and each announced
   tool call that did not complete its ``tool-input-error``; then ``finish-step``, then
   ``finish`` (or ``abort``). The stream always ends with one of the two.
4. **Failures: the headline only.** A failure is one ``error`` part whose ``errorText`` is
   the failure's classified headline (``LlmFailure.message``, redacted once more) — never
   its ``detail``, its diagnostics or a key. A source that raises an
   :class:`~dshstream._core.errors.LlmError` gives its failure's headline; any other
   exception gives ``"the answer could not be completed"`` (and one log line naming its
   type). Nothing raises out of the generator.
5. **Tool loops.** A source with ``steps`` (what ``run_tools`` returns) is one message of
   several steps: each step its own ``start-step``/``finish-step``, and the outcome of each
   tool call it announced sent, before the step ends, as ``tool-output-available`` (the
   result the model got) or ``tool-output-error`` (a headline saying why the tool failed or
   did not run — never the exception's text).
6. **Closed with it.** Closing the generator (a client that went away) closes the source
   (``close()``, when it has one: a ``ChunkStream`` releases its connection); so does its
   end.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .._core.closing import close_quietly
from .._core.errors import LlmError
from .._core.log import get_logger
from .._core.redact import known_secrets, redact
from .._core.types import (
    BlockEnd,
    BlockStart,
    FileBlock,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from .._core.validate import invalid

__all__ = ["FAILED", "ui_message_parts"]

log = get_logger("dshstream.web")

#: ``errorText`` for a source that raised something other than an LlmError (rule 4)
FAILED = "the answer could not be completed"
_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool-calls", "max-tokens": "length", "error": "error"}
#: ``tool-output-error`` headlines by tool-loop status (rule 5)
_TOOL_ERRORS = {
    "raised": "the tool failed",
    "abandoned": "the tool did not finish",
    "truncated": "not run: the arguments were cut off",
    "invalid_arguments": "not run: the arguments are not a JSON object",
    "unknown_tool": "not run: there is no such tool",
    "vetoed": "not run: the call was not approved",
    "skipped": "not run",
    "limited": "not run: too many calls in one step",
    "withheld": "not sent: the step's results were too long",
}


def headline(failure: LlmFailure | None) -> str:
    """A failure's ``errorText`` (rule 4)."""
    if failure is None:
        return FAILED
    return redact(failure.message, known_secrets(), limit=300) or FAILED


@dataclass
class _Open:
    """A block the message has open."""

    kind: str
    id: str = ""
    name: str = ""
    text: str = ""
    announced: bool = False  # a tool call's tool-input-start was sent


@dataclass
class _Message:
    """The state of one UI message (rules 2, 3, 5)."""

    source: object
    finish_reason: bool
    step: int = 0
    in_step: bool = False
    step_ending: bool = False  # a finish came: finish-step waits for the loop's outcomes
    open: dict[int, _Open] = field(default_factory=dict)
    urls: set[str] = field(default_factory=set)
    announced: set[str] = field(default_factory=set)
    steps_answered: int = 0
    last: FinishReason | None = None
    error_sent: bool = False

    # ------------------------------------------------------------------ steps

    def begin(self) -> Iterator[dict[str, Any]]:
        yield from self.end_step()
        self.step += 1
        self.in_step = True
        yield {"type": "start-step"}

    def end_step(self) -> Iterator[dict[str, Any]]:
        """The loop's outcomes for the step, then its ``finish-step`` (rule 5)."""
        if not self.step_ending:
            return
        self.step_ending = False
        yield from self.outcomes()
        yield {"type": "finish-step"}

    def outcomes(self) -> Iterator[dict[str, Any]]:
        steps = getattr(self.source, "steps", None)
        if not isinstance(steps, tuple) or len(steps) <= self.steps_answered:
            return
        for step in steps[self.steps_answered :]:
            for outcome in getattr(step, "outcomes", ()):
                call_id = outcome.call.id
                if call_id not in self.announced:
                    continue
                if outcome.status == "ok":
                    yield {"type": "tool-output-available", "toolCallId": call_id, "output": outcome.result.content}
                else:
                    why = _TOOL_ERRORS.get(outcome.status, "the tool did not run")
                    yield {"type": "tool-output-error", "toolCallId": call_id, "errorText": why}
        self.steps_answered = len(steps)

    # ------------------------------------------------------------------ chunks

    def chunk(self, chunk: StreamChunk) -> Iterator[dict[str, Any]]:
        if type(chunk) is TextDelta:
            if chunk.text:
                part = self._opened(chunk.index, "text")
                yield from part[1]
                yield {"type": "text-delta", "id": part[0].id, "delta": chunk.text}
        elif type(chunk) is ReasoningDelta:
            if chunk.text:
                part = self._opened(chunk.index, "reasoning")
                yield from part[1]
                yield {"type": "reasoning-delta", "id": part[0].id, "delta": chunk.text}
        elif type(chunk) is ToolCallDelta:
            yield from self._tool_delta(chunk)
        elif type(chunk) is BlockStart:
            if chunk.block_type in ("text", "reasoning"):
                yield from self._opened(chunk.index, chunk.block_type)[1]
            elif chunk.block_type == "tool-call":
                self.open[chunk.index] = _Open("tool-call")
        elif type(chunk) is BlockEnd:
            yield from self._ended(chunk.index, chunk.block)
        elif type(chunk) is Finish:
            yield from self.finish(chunk.reason)
        else:
            assert type(chunk) is UsageChunk, type(chunk)

    def _opened(self, index: int, kind: str) -> tuple[_Open, list[dict[str, Any]]]:
        """The open text or reasoning part of ``index`` (opened now when it is not)."""
        part = self.open.get(index)
        if part is not None and part.kind == kind:
            return part, []
        started: list[dict[str, Any]] = []
        if part is not None:
            started += self._close(index)
        part = _Open(kind, id=f"{kind}-{self.step}-{index}")
        self.open[index] = part
        started.append({"type": f"{kind}-start", "id": part.id})
        return part, started

    def _tool_delta(self, chunk: ToolCallDelta) -> Iterator[dict[str, Any]]:
        part = self.open.get(chunk.index)
        if part is None or part.kind != "tool-call":
            part = self.open[chunk.index] = _Open("tool-call")
        part.id = part.id or chunk.id
        part.name = part.name or (chunk.name or "")
        if part.announced:
            if chunk.arguments_delta:
                yield {"type": "tool-input-delta", "toolCallId": part.id, "inputTextDelta": chunk.arguments_delta}
            return
        part.text += chunk.arguments_delta
        if part.id and part.name:
            yield from self._announce(part)

    def _announce(self, part: _Open) -> Iterator[dict[str, Any]]:
        part.announced = True
        self.announced.add(part.id)
        yield {"type": "tool-input-start", "toolCallId": part.id, "toolName": part.name}
        if part.text:
            yield {"type": "tool-input-delta", "toolCallId": part.id, "inputTextDelta": part.text}

    def _ended(self, index: int, block: object) -> Iterator[dict[str, Any]]:
        part = self.open.pop(index, None)
        if type(block) is TextBlock:
            if part is None or part.kind != "text":
                part = _Open("text", id=f"text-{self.step}-{index}")
                yield {"type": "text-start", "id": part.id}
            yield {"type": "text-end", "id": part.id}
            for citation in block.citations:
                if citation.url and citation.url not in self.urls:
                    self.urls.add(citation.url)
                    source: dict[str, Any] = {
                        "type": "source-url",
                        "sourceId": f"source-{len(self.urls)}",
                        "url": citation.url,
                    }
                    if citation.title:
                        source["title"] = citation.title
                    yield source
        elif type(block) is ReasoningBlock:
            if part is None or part.kind != "reasoning":
                part = _Open("reasoning", id=f"reasoning-{self.step}-{index}")
                yield {"type": "reasoning-start", "id": part.id}
            yield {"type": "reasoning-end", "id": part.id}
        elif type(block) is ToolCallBlock:
            if part is None or part.kind != "tool-call":
                part = _Open("tool-call")
            part.id, part.name = part.id or block.id, part.name or block.name
            if not part.announced:
                yield from self._announce(part)
            yield self._tool_input(part, block)
        elif type(block) is FileBlock:
            yield {"type": "file", "url": f"data:{block.media_type};base64,{block.base64}", "mediaType": block.media_type}

    def _tool_input(self, part: _Open, block: ToolCallBlock) -> dict[str, Any]:
        text = block.raw_arguments if block.raw_arguments is not None else block.arguments
        common = {"toolCallId": part.id, "toolName": part.name}
        if block.arguments_truncated:
            why = "the tool call was cut off before its arguments were complete"
            return {"type": "tool-input-error", **common, "input": text, "errorText": why}
        try:
            value = json.loads(block.arguments) if block.arguments.strip() else {}
        except ValueError:
            return {"type": "tool-input-error", **common, "input": text, "errorText": "the arguments are not JSON"}
        return {"type": "tool-input-available", **common, "input": value}

    def _close(self, index: int) -> list[dict[str, Any]]:
        """End the open part of ``index`` without its block (rule 3)."""
        part = self.open.pop(index)
        if part.kind in ("text", "reasoning"):
            return [{"type": f"{part.kind}-end", "id": part.id}]
        if part.kind == "tool-call" and part.announced:
            why = "the answer ended before the tool call was complete"
            return [
                {
                    "type": "tool-input-error",
                    "toolCallId": part.id,
                    "toolName": part.name,
                    "input": part.text,
                    "errorText": why,
                }
            ]
        return []

    def close_all(self) -> Iterator[dict[str, Any]]:
        for index in sorted(self.open):
            yield from self._close(index)

    def finish(self, reason: FinishReason) -> Iterator[dict[str, Any]]:
        yield from self.close_all()
        self.last = reason
        if reason.kind == "error" and not self.error_sent:
            self.error_sent = True
            yield {"type": "error", "errorText": headline(reason.failure)}
        self.in_step = False
        self.step_ending = True

    # ------------------------------------------------------------------ the end

    def end(self) -> Iterator[dict[str, Any]]:
        """The source ended (rule 3)."""
        if self.in_step:  # no finish came
            yield from self.close_all()
            self.in_step = False
            self.step_ending = True
        yield from self.end_step()
        last = self.last
        if last is not None and last.kind == "aborted":
            yield {"type": "abort"}
            return
        part: dict[str, Any] = {"type": "finish"}
        if self.finish_reason and last is not None:
            content_filter = last.failure is not None and last.failure.code == "CONTENT_FILTER"
            part["finishReason"] = "content-filter" if content_filter else _FINISH_REASONS[last.kind]
        yield part

    def fail(self, failure: LlmFailure | None) -> Iterator[dict[str, Any]]:
        """The source raised (rules 3, 4)."""
        yield from self.close_all()
        aborted = (failure is not None and failure.code == "ABORTED") or (
            self.last is not None and self.last.kind == "aborted"
        )
        if not self.error_sent and not aborted:
            self.error_sent = True
            yield {"type": "error", "errorText": headline(failure)}
        if self.in_step:
            self.in_step = False
            self.step_ending = True
        yield from self.end_step()
        if aborted:
            yield {"type": "abort"}
            return
        part: dict[str, Any] = {"type": "finish"}
        if self.finish_reason:
            part["finishReason"] = "error"
        yield part


def ui_message_parts(
    chunks: Iterable[StreamChunk],
    *,
    message_id: str | None = None,
    finish_reason: bool = True,
) -> Generator[dict[str, Any], None, None]:
    """The UI message stream parts of ``chunks`` — a ``ChunkStream``, a tool loop
    (``run_tools``) or any iterable of chunks — as dicts, in order (rules 1-6).
    ``message_id`` is the ``start`` part's ``messageId``; ``finish_reason=False`` leaves
    ``finishReason`` out of ``finish`` (``ai`` clients older than 5.0.92 reject it)."""
    if message_id is not None and (not isinstance(message_id, str) or not message_id):
        raise invalid("ui_message_parts message_id must be a non-empty string or None", wrong_type=not isinstance(message_id, str))
    if not isinstance(finish_reason, bool):
        raise invalid("ui_message_parts finish_reason must be True or False", wrong_type=True)
    if not isinstance(chunks, Iterable):
        raise invalid(f"ui_message_parts takes an iterable of chunks, got {type(chunks).__name__}", wrong_type=True)
    return _parts(chunks, message_id, finish_reason)


def _parts(
    chunks: Iterable[StreamChunk], message_id: str | None, finish_reason: bool
) -> Generator[dict[str, Any], None, None]:
    message = _Message(source=chunks, finish_reason=finish_reason)
    try:
        yield {"type": "start", "messageId": message_id} if message_id is not None else {"type": "start"}
        try:
            for chunk in chunks:
                if not message.in_step:
                    yield from message.begin()
                yield from message.chunk(chunk)
        except LlmError as exc:
            yield from message.fail(exc.failure)
            return
        except Exception as exc:  # noqa: BLE001 - rule 4: nothing raises out of the stream
            log.error("the chunk source raised %s; the UI message stream ends with an error part", type(exc).__name__)
            yield from message.fail(None)
            return
        yield from message.end()
    finally:
        close_quietly(chunks)

