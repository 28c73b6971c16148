"""Translator: the base of every wire translator, SSE events in, chunks out.

Contract (sans-IO: no sockets, time, threads or environment):

1. **Input.** A translator is fed one SSE event at a time (:meth:`Translator.feed`), a
   batch of decoder output (:meth:`Translator.feed_events`), or one whole event as its
   type, data and last event ID (:meth:`Translator.feed_data`, the hot path: what
   :meth:`~dshstream._core.sse.SSEDecoder.feed_with` hands on; a wire that overrides
   ``on_event`` gets the same :class:`~dshstream._core.sse.ServerSentEvent` it would
   get from ``feed_events``), and told about
   the end of the input (:meth:`Translator.close`); each returns the chunks produced so
   far. Nothing is fed once its writer is ``"finished"`` (the writer's rule 2: one
   attribute read per event).
2. **Default dispatch.** The default :meth:`Translator.on_event` completes the stream on
   the wire's :attr:`Translator.terminal_data` and hands every other event's parsed data,
   with its type, to :meth:`Translator.on_payload`; :meth:`Translator.feed_events` runs it
   inlined (one call less per event). Wires that need more override ``on_event``.
3. **JSON.** Payloads are parsed with :func:`~dshstream._core.strict_json.loads_event`,
   called directly (it runs once per event; :meth:`Translator.feed_data` inlines its
   standard-library case: the C scanner over the whole text, and leaves every other case
   to it, so values and failures are the same): lone surrogate escapes become U+FFFD, so
   every text a translator emits is valid UTF-8, and a payload that is not JSON ends the
   stream in band with ``MALFORMED_RESPONSE`` (its ``detail`` a redacted excerpt;
   :meth:`Translator.end_malformed`): every chunk decoded before it is delivered, however
   the reads split the bytes (a raise would lose the chunks of its own read).
4. **Endings.** The ways a stream ends live here once: :meth:`Translator.complete` (the
   wire's terminal marker), :meth:`Translator.fail_with` (an in-band error payload),
   :meth:`Translator.end_input` (EOF, or a marker that only ends the input) and
   :meth:`Translator.end_spliced` (a second message or response begun in the stream
   before the first ended: ``MALFORMED_RESPONSE``, the first one's output kept). Each flushes
   the subclass's held state first (``flush(cut=...)``: ``cut`` when no finish reason
   arrived), then ends the writer (the writer's rule 3).
5. **One failure path.** ``fail_with`` classifies an error payload once for every wire
   (:meth:`Translator.classify_error`): the wire's :attr:`Translator.forced_error_codes`
   first (retryable), then the stream's serving provider and request id back-filled where
   the payload names none.
6. **Quiet phases.** :attr:`Translator.quiet` is ``True`` while the wire is in a phase
   in which the provider is known to work without sending content — a tool's input being
   buffered, a server tool running, a reasoning item being thought — and ``False`` once it
   is out of it; the pump hands the change to the body, whose idle clock then allows the
   stream's quiet budget instead of its idle timeout (pump rule 2). Set by the wires that
   have such phases (Anthropic, Responses, Bedrock Converse); never by content.
7. **Hooks.** A subclass implements ``on_payload`` (or ``on_event``) and, where it holds
   state, ``flush``, ``replay_state`` (asked once, as the finish is emitted) and
   ``token_counts`` (asked only to explain an empty reply). ``max_tokens`` (the output
   limit the adapter requested) is a constructor argument of every translator.
8. **Position.** :attr:`Translator.last_sequence` is the ``sequence_number`` of the last
   event processed, for wires whose events carry one (Responses); ``-1`` before any, and
   on every other wire. Such a wire drops an event whose number is not above it (a replay
   of a resumed stream), so one translator can be fed a cut stream and its continuation.
   A wire whose events carry an opaque resume token instead (Gemini Interactions'
   ``event_id``) keeps the latest in :attr:`Translator.last_event_id` (``None``: none, and
   on every other wire) and counts its events in ``last_sequence``;
   :meth:`Translator.begin_continuation` is called before a continuation's first byte.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from ..classify import classify_error_payload
from ..errors import error_for
from ..redact import redact
from ..sse import ServerSentEvent
from ..strict_json import EventJsonError, _scan_once, fix_surrogates, loads_event
from ..types import FailureCategory, LlmFailure, StreamChunk
from .json_values import dict_or_empty, int_or_none
from .writer import ChunkWriter

__all__ = ["Translator"]

_new = tuple.__new__  # a ServerSentEvent without the Python-level __new__ frame
#: the module whose ``_fast_decode`` ``feed_data`` reads per event (rule 3; chosen there)
strict_json = importlib.import_module("..strict_json", __package__)


class Translator:
    """Base of every wire translator: SSE events in, chunks out (module rules).

    A subclass implements :meth:`on_payload` (or :meth:`on_event`) and, where it holds
    state, the end-of-stream hooks: :meth:`flush` (release what it holds),
    :meth:`replay_state` and :meth:`token_counts` (rule 6). The ways a stream ends live
    here once (rule 4); :attr:`quiet` tells the idle clock about phases that go silent
    (rule 6).
    """

    wire = "base"
    #: the body's framing: ``"sse"``, or ``"eventstream"`` (AWS event-stream messages are
    #: fed to :meth:`feed_events` instead of SSE events)
    framing: ClassVar[str] = "sse"
    #: in-band error ``error.type`` values whose code is fixed whatever their wording says:
    #: type -> (code, category, headline); such a failure is retryable
    forced_error_codes: ClassVar[Mapping[str, tuple[str, FailureCategory, str]]] = {}
    #: the ``data`` of the event that is the wire's terminal marker (``"[DONE]"`` on the
    #: chat wire) for the default :meth:`on_event`; ``None``: the marker is a payload
    terminal_data: ClassVar[str | None] = None
    #: the provider is working without sending content (rule 6)
    quiet = False
    #: the sequence number of the last event processed (rule 8; -1: none, or not numbered)
    last_sequence = -1
    #: the resume token of the last event that carried one (rule 8; ``None``: none)
    last_event_id: str | None = None

    def __init__(
        self, *, provider: str | None = None, request_id: str | None = None, max_tokens: int | None = None
    ) -> None:
        self.writer = ChunkWriter(
            provider=provider or self.wire,
            request_id=request_id,
            replay_state=self.replay_state,
            token_counts=self.token_counts,
            max_tokens=max_tokens,
        )
        self._default_on_event = type(self).on_event is Translator.on_event

    @property
    def done(self) -> bool:
        """Whether the stream has ended (nothing more will be produced)."""
        return self.writer.state == "finished"

    def feed(self, event: ServerSentEvent) -> list[StreamChunk]:
        """Translate one SSE event (rule 1)."""
        if self.writer.state != "finished":
            try:
                self.on_event(event)
            except EventJsonError as exc:
                self.end_malformed(exc.text)
        return self.writer.take()

    def feed_events(self, items: Iterable[object]) -> list[StreamChunk]:
        """Translate a batch of decoder output (comments are skipped); the hot path.

        With the default :meth:`on_event` its body runs here, inlined (rule 2): one call
        less per event (with one event per read, every call counts)."""
        writer = self.writer
        try:
            if self._default_on_event:
                on_payload = self.on_payload
                terminal = self.terminal_data
                for item in items:
                    if type(item) is ServerSentEvent and writer.state != "finished":
                        data = item.data
                        if data == terminal:
                            self.complete()
                        else:
                            on_payload(item.event, loads_event(data))
            else:
                on_event = self.on_event
                for item in items:
                    if type(item) is ServerSentEvent and writer.state != "finished":
                        on_event(item)
        except EventJsonError as exc:  # from loads_event, anywhere in on_event
            self.end_malformed(exc.text)
        out = writer.out  # ``writer.take()``, inlined: once per read
        writer.out = []
        return out

    def feed_data(self, event: str, data: str, last_id: str | None) -> list[StreamChunk]:
        """Translate one whole event given as its type, data and last event ID (rule 1):
        :meth:`feed_events` of that one event, without the event object or its list for
        the default :meth:`on_event` (rule 2, inlined as there)."""
        writer = self.writer
        if writer.state != "finished":
            try:
                if self._default_on_event:
                    if data == self.terminal_data:
                        self.complete()
                    elif strict_json._fast_decode is None:
                        # ``loads_event(data)`` with the standard library (rule 3), inlined: one
                        # Python call less per event. Its common case only: the C scanner read
                        # the whole text (lone surrogates fixed as there); anything else —
                        # padding, a constant, malformed text — is ``loads_event``'s own.
                        try:
                            value, end = _scan_once(data, 0)
                        except Exception:  # noqa: BLE001 - decided again by loads_event
                            end = -1
                        if end != len(data):
                            value = loads_event(data)
                        elif "\\" in data and "\\u" in data and ("\\ud" in data or "\\uD" in data):
                            value = fix_surrogates(value)
                        self.on_payload(event, value)
                    else:
                        self.on_payload(event, loads_event(data))
                else:
                    self.on_event(_new(ServerSentEvent, (event, data, last_id, None)))
            except EventJsonError as exc:
                self.end_malformed(exc.text)
        out = writer.out  # ``writer.take()``, inlined: once per read
        writer.out = []
        return out

    def unwrap_tool_call(self, name: str) -> None:
        """Write the tool call named ``name`` as text (the writer's rule 5): the JSON answer
        of a forced tool call, seen by the caller as on the native structured-output path."""
        self.writer.unwrap_tool = name

    def close(self) -> list[StreamChunk]:
        """End of input: finish the stream (``STREAM_CLOSED`` if cut short; rule 4)."""
        if self.writer.state != "finished":
            self.end_input()
        return self.writer.take()

    def begin_continuation(self) -> None:
        """The next bytes are a resumed stream's continuation (rule 8): a wire that must
        drop what it replays gets ready (subclasses; the default does nothing)."""

    # ------------------------------------------------------------------ subclass hooks

    def on_event(self, event: ServerSentEvent) -> None:
        """Handle one event. The default (rules 2 and 3): the :attr:`terminal_data` event
        completes the stream, any other event's data is parsed with ``loads_event`` and
        handed to :meth:`on_payload` with its type. Wires that need more override it."""
        data = event.data
        if data == self.terminal_data:
            self.complete()
            return
        self.on_payload(event.event, loads_event(data))

    def on_payload(self, event: str, payload: Any) -> None:
        """Handle one event already parsed: its type (the SSE ``event:`` field or the
        event-stream ``:event-type``) and its JSON payload. Wires whose events can arrive
        wrapped in another wire (Bedrock InvokeModel carries Anthropic and Converse events
        base64-encoded) implement it (subclasses)."""
        raise NotImplementedError

    def flush(self, *, cut: bool) -> None:
        """Release held state (filters, open wire blocks) before the writer ends the
        stream; ``cut``: the stream ended without its finish (subclasses)."""

    def replay_state(self) -> Any:
        """The replay state the finish carries; the writer asks once, as it emits the
        finish, whichever way the stream ends (subclasses; ``None``: nothing to replay)."""
        return None

    def token_counts(self) -> tuple[int | None, int | None]:
        """The provider's own input and output token counts, as it reported them (each
        ``None`` when it reported none valid); asked only to explain an empty reply (rule
        6). The default reads the deferred usage record's chat-completions fields
        (subclasses)."""
        raw = self.writer.raw_usage
        if raw is None:
            return (None, None)
        return (int_or_none(raw.get("prompt_tokens")), int_or_none(raw.get("completion_tokens")))

    # ------------------------------------------------------------------ endings

    def complete(self) -> None:
        """The wire's terminal marker arrived: flush, close blocks, emit usage and finish
        (rule 4)."""
        self.flush(cut=False)
        self.writer.complete()

    def end_input(self) -> None:
        """No more input: complete if a finish reason arrived (the writer is
        ``"finishing"``), else ``STREAM_CLOSED`` (rule 4)."""
        self.flush(cut=self.writer.state == "open")
        self.writer.cut()

    def end_spliced(self, what: str, second: str, first: str) -> None:
        """``what`` ``second`` began before ``first`` ended: two generations spliced into
        one stream end it in band with ``MALFORMED_RESPONSE``; nothing of the second is
        merged into the first's output, which is kept (rule 4)."""
        writer = self.writer
        failure = writer.failure(
            "MALFORMED_RESPONSE",
            f"{writer.provider}: {what} {second} began before {what} {first} ended "
            "(two generations spliced into one stream; the first one's output is kept)",
        )
        self.flush(cut=True)
        writer.fail(failure)

    def fail_with(self, payload: Any) -> None:
        """An in-band error payload ends the stream; partial output is kept (rules 4, 5)."""
        failure = self.classify_error(payload)
        self.flush(cut=True)
        self.writer.fail(failure)

    def classify_error(self, payload: Any) -> LlmFailure:
        """The failure an in-band error payload describes, attributed to this stream (rule
        5): :attr:`forced_error_codes` applied, serving provider and request id back-filled."""
        writer = self.writer
        failure = classify_error_payload(payload, provider=writer.provider)
        updates: dict[str, Any] = {}
        if self.forced_error_codes and type(payload) is dict:
            kind = dict_or_empty(payload.get("error")).get("type")
            forced = self.forced_error_codes.get(kind) if isinstance(kind, str) else None
            if forced is not None and failure.code != forced[0]:
                code, category, headline = forced
                updates.update(
                    code=code,
                    category=category,
                    retryable=True,
                    message=f"{writer.provider}: {headline} ({code})",
                )
        if failure.serving_provider is None and writer.serving_provider:
            updates["serving_provider"] = writer.serving_provider
        if failure.request_id is None and writer.request_id:
            updates["request_id"] = writer.request_id
        return replace(failure, **updates) if updates else failure

    # ------------------------------------------------------------------ helpers

    def end_malformed(self, data: str) -> None:
        """A payload that is not JSON ends the stream in band with ``MALFORMED_RESPONSE``
        (rule 3): everything decoded before it — in this read or an earlier one — is
        delivered, partial output and usage kept, as after an in-band error payload."""
        writer = self.writer
        failure = writer.failure(
            "MALFORMED_RESPONSE",
            f"{writer.provider}: stream carried a payload that is not valid JSON",
            detail=redact(data, limit=120),
        )
        self.flush(cut=True)
        writer.fail(failure)
