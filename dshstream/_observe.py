"""Watching streams: the records an ``observer=`` hears, each stream's end reported exactly
once, and one INFO log line per finished stream.

Contract:

1. A :class:`StreamWatch` follows one stream at one level (the service's
   :class:`~dshstream._chunk_stream.ChunkStream`, or an HTTP adapter's generator). It emits
   :class:`~dshstream._core.records.StreamStarted` when it is made,
   :class:`~dshstream._core.records.FirstChunkRecord` on the first content chunk, one
   :class:`~dshstream._core.records.AttemptRecord` when each HTTP attempt ends, and
   :class:`~dshstream._core.records.StreamFinished` exactly once — a lock and a flag; the
   lock is held while a record goes out, so no record from another thread follows it —
   whichever path ends the stream: its finish chunk (a stop or an error finish), an
   exception, ``close()`` from any thread, the cancel event, ``KeyboardInterrupt``, a
   consumer that stops early, or the garbage collection of an abandoned stream (a
   :func:`weakref.finalize` closes the stream's source, then reports ``aborted`` with
   ``ABORTED``). Nothing is emitted after the ``StreamFinished``.
2. A watch exists only when someone listens: an observer is set, or the
   ``dshstream.observe`` logger is enabled for INFO when the stream starts. A stream
   nobody watches carries no watch and pays nothing: the attempt loop tells so inline,
   before any call here — no observer, no current watch in :data:`thread_watch` (rule
   4), :data:`log` quiet at INFO — and then does not enter :func:`watching`.
3. Per chunk a watch does one thing: until the first content chunk has arrived, it looks
   for it. The rest is per batch (a counter) or per stream.
4. Composition. The service starts each adapter generator of a watched stream with the
   stream's watch as the thread's current watch (:func:`linked_start`: around its first
   step only, nothing per batch); the adapter links its own watch to it (when the request
   carries that stream's cancel event, so a stream started meanwhile never links to it):
   the adapter's attempt records go to both levels (the service numbers them over the
   whole stream), its records carry the service's ``stream_id``, and an adapter observer
   that is the very same object as the service's is dropped at the adapter level — so one
   observer hears one ``StreamFinished`` per stream, however it is attached. The INFO line
   is written by the outermost watch only (the service's, or an adapter's used directly).
   An adapter's stream generator takes its watch from :func:`watching` (``with``), which
   ends the open attempt and the stream once however the generator ends; the adapter
   calls :meth:`StreamWatch.begin_attempt` per attempt and :meth:`StreamWatch.received`
   per batch, and its failure reports end failed attempts
   (:func:`~dshstream._adapters.reporting.report_failure`).
5. An observer that raises is logged (redacted; the first failure of each observer at
   ERROR with its traceback, later ones at DEBUG) and the stream goes on. Only
   ``KeyboardInterrupt``/``SystemExit`` propagate.
6. Content — the request's messages and stop sequences, the output blocks — goes only to
   an observer with a true ``capture_content`` attribute; the log line never has any.
7. **No echoed secrets.** What a record takes from the response — ``response_id``,
   ``response_model``, ``serving_provider``, ``request_id``, the finish's ``raw`` word and
   a failure's code, message, detail, request id and serving provider — is checked here,
   once, against every registered secret (:func:`~dshstream._core.redact.known_secrets`:
   the keys the adapters sent) with :func:`~dshstream._core.redact.redact`, and also in
   the folded form a finish word takes in a failure code (upper case, ``_`` for every
   other character). A field that carries one is dropped (``None``; a failure's code
   becomes ``UNKNOWN`` and its message a plain headline): a redacted id would be a wrong
   id. The log line's ``record.dshstream`` dict and the OpenTelemetry attributes are built
   from the records, so they inherit it. A fallback trail's failures are checked the same way.
8. **Fallback chains.** The service's watch of a chain stream (:mod:`dshstream._fallback`)
   is told which target is being streamed (:meth:`StreamWatch.enter_target`): every attempt
   record that reaches it from then on carries that target's position. A target skipped
   before anything was sent is one ``skipped`` attempt record
   (:meth:`StreamWatch.target_skipped`), which no attempt count includes. The
   ``StreamFinished`` carries the finish's trail (``metadata.fallback``), and the log line
   names the target that served.
9. **Chunk gaps.** For an observer with a true ``chunk_gaps`` attribute, the watch times
   every batch with content after the first (one monotonic reading per such batch, nothing
   for other observers) and the ``StreamFinished`` carries the gaps between them
   (``chunk_gaps``, at most ``MAX_CHUNK_GAPS``).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from ._core.assembler import BlockAssembler
from ._core.errors import LlmError, aborted_failure, cancelled_failure, make_failure
from ._core.log import get_logger
from ._core.redact import known_secrets, redact
from ._core.records import (
    MAX_CHUNK_GAPS,
    AttemptOutcome,
    AttemptRecord,
    FirstChunkRecord,
    ObserveLevel,
    Observer,
    ObserverRecord,
    RequestSettings,
    StreamFinished,
    StreamStarted,
    Telemetry,
)
from ._core.request import GenerateOptions
from ._core.types import (
    Block,
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    LlmFailure,
    ReasoningDelta,
    ResponseMetadata,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallDelta,
    UsageChunk,
)
from ._core.validate import describe, invalid

log = get_logger("dshstream.observe")

__all__ = [
    "StreamWatch",
    "check_observer",
    "current",
    "entered",
    "linked_start",
    "open_watch",
    "restore",
    "server_of",
    "thread_watch",
    "watching",
]

#: the chunks that count as content for the time to the first chunk
_CONTENT = frozenset({BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd})
_ID_PREFIX = os.urandom(4).hex()
_ids = itertools.count(1)
#: the current watch of this thread (``watch``, rule 4); read inline by the attempt loop (rule 2)
thread_watch = threading.local()
_failed_observers: set[int] = set()
_failed_lock = threading.Lock()


def check_observer(value: object, field: str = "observer") -> Observer | None:
    """``value`` if it is ``None`` or callable; ``ConfigurationTypeError`` naming ``field``."""
    if value is not None and not callable(value):
        raise invalid(
            f"{field} must be a callable taking one record, got {describe(value)}", wrong_type=True
        )
    return value


def server_of(url: str | None) -> tuple[str | None, int | None]:
    """The host and port ``url`` goes to (the scheme's default port when none is given)."""
    if not url:
        return None, None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None, None
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme.lower())
    return parts.hostname, port


# --------------------------------------------------------------------------- the current watch


def current() -> StreamWatch | None:
    """The watch of the stream whose adapter is starting on this thread, if any (rule 4)."""
    watch: StreamWatch | None = getattr(thread_watch, "watch", None)
    return watch


def entered(watch: StreamWatch) -> StreamWatch | None:
    """Make ``watch`` this thread's current watch; returns the one to restore."""
    outer: StreamWatch | None = getattr(thread_watch, "watch", None)
    thread_watch.watch = watch
    return outer


def restore(outer: StreamWatch | None) -> None:
    """Undo :func:`entered`."""
    thread_watch.watch = outer


def linked_start(
    watch: StreamWatch, batches: Iterator[list[StreamChunk]]
) -> Iterator[list[StreamChunk]]:
    """``batches`` (an adapter's generator), its first step taken now with ``watch`` as the
    thread's current watch, so that the adapter's own watch links to it (rule 4). Close
    ``batches`` itself, not what this returns."""
    outer = entered(watch)
    try:
        first = next(batches, None)
    finally:
        restore(outer)
    return batches if first is None else itertools.chain((first,), batches)


def open_watch(
    observer: Observer | None,
    options: GenerateOptions,
    level: ObserveLevel,
    telemetry: Callable[[], Telemetry | None] | None = None,
) -> StreamWatch | None:
    """A started watch for a stream of ``options``, or ``None`` when nobody listens (rule 2).
    Only an adapter-level watch links to the current one, and only when the options carry
    the same cancel event (rule 4)."""
    parent = current() if level == "adapter" else None
    if parent is not None and (options.cancel is None or parent._cancel is not options.cancel):
        parent = None  # another stream pulled inside that one's pull (a listener's own call)
    if parent is not None and observer is not None and observer is parent.observer:
        observer = None  # the service already tells this observer about the stream
    logs = parent is None and log.isEnabledFor(logging.INFO)
    if observer is None and parent is None and not logs:
        return None
    watch = StreamWatch(options, level=level, observer=observer, parent=parent, logs=logs)
    watch.start(options, telemetry)
    return watch


@contextmanager
def watching(
    observer: Observer | None,
    options: GenerateOptions,
    telemetry: Callable[[], Telemetry | None] | None = None,
) -> Iterator[StreamWatch | None]:
    """The adapter-level watch of one stream for the ``with`` block around an adapter's
    stream generator (``None`` when nobody listens, rule 2); however the block ends, the
    open attempt, then the stream, end exactly once (:meth:`StreamWatch.close`, rule 4)."""
    watch = open_watch(observer, options, "adapter", telemetry)
    if watch is None:
        yield None
        return
    error: BaseException | None = None
    try:
        yield watch
    except BaseException as exc:  # GeneratorExit too: the consumer stopped early
        error = exc
        raise
    finally:
        watch.close(error)
        error = None


# --------------------------------------------------------------------------- the watch


class StreamWatch:
    """One stream at one level: emits its records and reports its end exactly once."""

    __slots__ = (
        "_assembler",
        "_attempt",
        "_attempt_chunks",
        "_attempt_open",
        "_attempt_t0",
        "_attempts",
        "_cancel",
        "_chunks",
        "_done",
        "_finalizer",
        "_finish",
        "_first",
        "_gaps",
        "_last_content",
        "_lock",
        "_passive",
        "_server",
        "_source",
        "_t0",
        "_target",
        "_usage",
        "capture",
        "level",
        "logs",
        "model",
        "observer",
        "parent",
        "provider",
        "stream_id",
    )

    def __init__(
        self,
        options: GenerateOptions,
        *,
        level: ObserveLevel,
        observer: Observer | None,
        parent: StreamWatch | None = None,
        logs: bool = False,
    ) -> None:
        self.stream_id: str = (
            parent.stream_id if parent is not None else f"{_ID_PREFIX}-{next(_ids)}"
        )
        self.provider = options.provider
        self.model = options.model
        self.level: ObserveLevel = level
        self.observer = observer
        self.capture = observer is not None and getattr(observer, "capture_content", False) is True
        #: rule 9: the gaps between content reads, for an observer that asks for them
        self._gaps: list[float] | None = (
            [] if observer is not None and getattr(observer, "chunk_gaps", False) is True else None
        )
        self._last_content = 0.0
        self.parent = parent
        self.logs = logs
        #: nothing to tell but attempts to the parent: batches are not looked at
        self._passive = observer is None and not logs
        self._cancel = options.cancel
        self._t0 = time.monotonic()
        self._first: float | None = None
        self._chunks = 0
        self._attempts = 0
        self._attempt = 0
        self._attempt_chunks = 0
        self._attempt_t0 = 0.0
        self._attempt_open = False
        self._server: tuple[str | None, int | None] = (None, None)
        #: the fallback chain's target being streamed (rule 8)
        self._target: int | None = None
        self._finish: Finish | None = None
        self._usage: TokenUsage | None = None
        # an adapter capturing content folds its own copy; a service watch borrows the stream's
        self._assembler: BlockAssembler | None = (
            BlockAssembler(provider=options.provider, model=options.model)
            if self.capture and level == "adapter"
            else None
        )
        self._source: Iterator[Any] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        # re-entrant: an observer may end the stream from inside a record it is handed
        self._lock = threading.RLock()
        self._done = False

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        return f"StreamWatch({self.stream_id!r}, {self.level}, {self.provider!r}, {state})"

    @property
    def done(self) -> bool:
        return self._done

    # ------------------------------------------------------------------ emitting

    def _emit(self, record: ObserverRecord) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            observer(record)
        except Exception as exc:  # noqa: BLE001 - an observer must never break the stream (rule 5)
            _observer_failed(observer, record, exc)

    def start(self, options: GenerateOptions, telemetry: Callable[[], Telemetry | None] | None = None) -> None:
        """Emit the ``StreamStarted``, with what ``telemetry()`` says of the request (asked
        only when an observer listens; records rule 7)."""
        if self.observer is None:
            return
        about: Telemetry | None = None
        if telemetry is not None:
            try:
                about = telemetry()
            except Exception:  # noqa: BLE001 - telemetry never breaks a stream
                log.debug("an adapter's telemetry() raised", exc_info=True)
        self._emit(
            StreamStarted(
                stream_id=self.stream_id,
                provider=self.provider,
                model=self.model,
                settings=RequestSettings.of(options, capture_content=self.capture),
                started_at=time.time(),
                level=self.level,
                messages=options.messages if self.capture else None,
                telemetry=about,
            )
        )

    # ------------------------------------------------------------------ following a stream

    def follow(self, stream: object, assembler: BlockAssembler, source: Iterator[Any]) -> None:
        """Watch a ``ChunkStream``: borrow its assembler, and report ``aborted`` if it is
        garbage-collected before it ends (closing its source first, rule 1)."""
        self._assembler = assembler
        self._source = source
        self._finalizer = weakref.finalize(stream, self._abandoned)

    def _abandoned(self) -> None:
        source, self._source = self._source, None
        close = getattr(source, "close", None)
        if close is not None:
            try:
                close()
            except Exception:
                log.debug("closing an abandoned stream's source raised", exc_info=True)
        failure = make_failure(
            "ABORTED",
            f"{self.provider}: stream abandoned (garbage-collected before it finished)",
            provider=self.provider,
        )
        self.finish(FinishReason(kind="aborted", failure=failure))

    def received(self, batch: list[StreamChunk]) -> None:
        """A non-empty batch reached the stream (rule 3). The usage is read from the
        finish's batch (it travels with the finish: the adapter contract, rule 1), so a
        consumer that stops before taking the finish still gets what it was billed."""
        self._attempt_chunks += len(batch)
        last = batch[-1]
        if type(last) is Finish:
            self._finish = last
            if not self._passive:
                for chunk in reversed(batch):
                    if type(chunk) is UsageChunk:
                        self._usage = chunk.usage
                        break
        if self._passive:
            return
        self._chunks += len(batch)
        if self._first is None:
            for chunk in batch:
                if type(chunk) in _CONTENT:
                    self._last_content = self._first_chunk(chunk)
                    break
        elif self._gaps is not None and len(self._gaps) < MAX_CHUNK_GAPS:
            for chunk in batch:
                if type(chunk) in _CONTENT:  # rule 9
                    now = time.monotonic()
                    self._gaps.append(now - self._last_content)
                    self._last_content = now
                    break
        if self._assembler is not None and self.level == "adapter":
            self._assembler.extend(batch)

    def _first_chunk(self, chunk: StreamChunk) -> float:
        """Note the first content chunk (and tell the observer); returns when it came."""
        now = time.monotonic()
        self._first = now - self._t0
        if self.observer is None:
            return now
        with self._lock:  # a finish from another thread waits: it can't overtake this record
            if not self._done:
                self._emit(
                    FirstChunkRecord(
                        stream_id=self.stream_id,
                        provider=self.provider,
                        model=self.model,
                        time_to_first_chunk=self._first,
                        chunk_type=type(chunk).__name__,
                        level=self.level,
                    )
                )
        return now

    # ------------------------------------------------------------------ attempts

    def begin_attempt(self, attempt: int, url: str | None = None) -> None:
        """HTTP attempt ``attempt`` (1-based) starts."""
        self._attempt = attempt
        self._attempt_chunks = 0
        self._attempt_t0 = time.monotonic()
        self._attempt_open = True
        if url:
            self._server = server_of(url)

    def attempt_server(self, url: str | None) -> None:
        """The open attempt's server, once it is known (an adapter whose library picks the
        URL learns it when the response starts)."""
        if url:
            self._server = server_of(url)

    def end_attempt(
        self, outcome: AttemptOutcome, chunks: int, failure: LlmFailure | None = None
    ) -> None:
        """The open attempt ended (a second call for the same attempt does nothing)."""
        if not self._attempt_open:
            return
        self._attempt_open = False
        if failure is not None and failure.code == "ABORTED":
            outcome = "aborted"
        if failure is not None:
            failure = _clean_failure(failure, known_secrets())  # rule 7
        self._attempt_ended(
            AttemptRecord(
                stream_id=self.stream_id,
                provider=self.provider,
                model=self.model,
                attempt=self._attempt,
                outcome=outcome,
                duration=time.monotonic() - self._attempt_t0,
                chunks=chunks,
                failure=failure,
                server_address=self._server[0],
                server_port=self._server[1],
                level=self.level,
            )
        )

    def _attempt_ended(self, record: AttemptRecord) -> None:
        with self._lock:  # held while the record goes out (a finish can't overtake it)
            if self._done:
                return
            self._attempts += 1
            if record.server_address is not None:
                self._server = (record.server_address, record.server_port)
            if record.level != self.level:  # an adapter's: numbered over this whole stream
                record = replace(record, attempt=self._attempts, level=self.level, target=self._target)
            self._emit(record)
            if self.parent is not None:  # locks are taken child, then parent: never the reverse
                self.parent._attempt_ended(record)

    def enter_target(self, position: int) -> None:
        """A fallback chain's target ``position`` is being streamed (rule 8)."""
        self._target = position

    def target_skipped(self, position: int, provider: str, model: str, failure: LlmFailure) -> None:
        """A fallback chain's target was skipped before anything was sent (rule 8): one
        ``skipped`` attempt record, counted in no attempt total."""
        record = AttemptRecord(
            stream_id=self.stream_id,
            provider=provider,
            model=model,
            attempt=0,
            outcome="skipped",
            duration=0.0,
            chunks=0,
            failure=_clean_failure(failure, known_secrets()),
            level=self.level,
            target=position,
        )
        with self._lock:
            if not self._done:
                self._emit(record)

    # ------------------------------------------------------------------ the end

    def close(self, error: BaseException | None, chunks: int | None = None) -> None:
        """An adapter's generator ended: with ``error`` (``GeneratorExit`` when its
        consumer stopped), or normally. Ends an open attempt (with ``chunks``, by default
        the chunks :meth:`received` since it began), then the stream."""
        if chunks is None:
            chunks = self._attempt_chunks
        if self._attempt_open:
            if (
                self._finish is not None
            ):  # the provider's finish arrived (a failed one ended the attempt)
                self.end_attempt("ok", chunks)
            else:
                reason = _reason_for(error, self.provider, self._cancelled())
                self.end_attempt(
                    "aborted" if reason.kind == "aborted" else "failed", chunks, reason.failure
                )
        if self._finish is not None:
            self.finish()  # the finish went out: how the consumer left afterwards does not matter
        else:
            self.finish(_reason_for(error, self.provider, self._cancelled()))

    def failed(self, error: BaseException) -> None:
        """The stream's source raised ``error``: the stream is dead."""
        self.finish(_reason_for(error, self.provider, self._cancelled()))

    def finish(self, reason: FinishReason | None = None) -> None:
        """Report the ``StreamFinished`` (once; later calls do nothing). ``reason``
        overrides the finish the stream carried; without either, the stream was cut
        (``STREAM_CLOSED``)."""
        with self._lock:  # held while the record goes out: nothing can follow it (rule 1)
            if self._done:
                return
            self._done = True
            record = self._finished_record(reason)
            self._emit(record)
        if self.logs:
            _log_finished(record)

    def _finished_record(self, reason: FinishReason | None) -> StreamFinished:
        finalizer, self._finalizer = self._finalizer, None
        if finalizer is not None:
            finalizer.detach()
        self._source = None
        usage = self._usage
        metadata: ResponseMetadata | None = None
        output: tuple[Block, ...] | None = None
        assembler = self._assembler
        if assembler is not None:
            if assembler.usage is not None:
                usage = assembler.usage
            if assembler.finished:
                metadata = assembler.metadata
                if reason is None:
                    reason = assembler.finish
            if self.capture:
                output = _blocks_of(assembler)
        if metadata is None and self._finish is not None:
            metadata = self._finish.metadata
            if reason is None:
                reason = self._finish.reason
        if reason is None:
            reason = _reason_for(None, self.provider, self._cancelled())
        secrets = known_secrets()
        reason = _clean_reason(reason, secrets)  # rule 7: the response's words, checked once
        failure = reason.failure
        request_id = _clean(metadata.request_id, secrets) if metadata is not None else None
        if request_id is None and failure is not None:
            request_id = failure.request_id
        served = _clean(metadata.serving_provider, secrets) if metadata is not None else None
        fallback = tuple(
            replace(entry, failure=_clean_failure(entry.failure, secrets)) if entry.failure is not None else entry
            for entry in (metadata.fallback if metadata is not None else ())
        )
        return StreamFinished(
            stream_id=self.stream_id,
            provider=self.provider,
            model=self.model,
            finish=reason,
            usage=usage,
            duration=time.monotonic() - self._t0,
            time_to_first_chunk=self._first,
            chunk_count=self._chunks,
            attempts=self._attempts,
            response_id=_clean(metadata.response_id, secrets) if metadata is not None else None,
            response_model=_clean(metadata.model, secrets) if metadata is not None else None,
            serving_provider=served or (failure.serving_provider if failure is not None else None),
            request_id=request_id,
            server_address=self._server[0],
            server_port=self._server[1],
            level=self.level,
            output=output,
            longest_silence=metadata.longest_silence if metadata is not None else None,
            fallback=fallback,
            chunk_gaps=tuple(self._gaps) if self._gaps else (),
        )

    def _cancelled(self) -> bool:
        cancel = self._cancel
        try:
            return cancel is not None and bool(cancel.is_set())
        except Exception:  # noqa: BLE001 - a broken cancel object is not a cancellation
            return False


# --------------------------------------------------------------------------- echoed secrets (rule 7)

#: the shortest secret looked for in folded form (shorter ones would match by chance)
_MIN_FOLDED = 8
#: how much of a folded secret must appear: a failure code keeps 40 characters
_FOLDED_PREFIX = 16


def _fold(text: str) -> str:
    """``text`` as a finish word becomes a failure code: upper case, ``_`` for the rest."""
    return "".join(ch if ch.isalnum() else "_" for ch in text.upper())


def _carries_secret(text: str, secrets: frozenset[str]) -> bool:
    """Whether ``text`` holds one of ``secrets`` (or its encodings, or a credential
    pattern: what :func:`redact` removes), or a secret's folded form."""
    if redact(text, secrets) != text:
        return True
    folded = ""
    for secret in secrets:
        if len(secret) >= _MIN_FOLDED:
            folded = folded or _fold(text)
            if _fold(secret)[:_FOLDED_PREFIX] in folded:
                return True
    return False


def _clean(value: str | None, secrets: frozenset[str]) -> str | None:
    if not value or _carries_secret(value, secrets):
        return None
    return value


def _clean_failure(failure: LlmFailure, secrets: frozenset[str]) -> LlmFailure:
    """``failure`` with every field that carries a secret dropped (its code and message
    replaced: both are required)."""
    changes: dict[str, Any] = {}
    if _carries_secret(failure.code, secrets) or _carries_secret(failure.message, secrets):
        who = failure.provider or "provider"
        changes["code"] = "UNKNOWN"
        changes["message"] = f"{who}: the answer could not be reported (it carried a credential)"
    for name in ("detail", "request_id", "serving_provider"):
        value = getattr(failure, name)
        if value and _carries_secret(value, secrets):
            changes[name] = None
    return replace(failure, **changes) if changes else failure


def _clean_reason(reason: FinishReason, secrets: frozenset[str]) -> FinishReason:
    raw = _clean(reason.raw, secrets) if reason.raw else None
    failure = _clean_failure(reason.failure, secrets) if reason.failure is not None else None
    if raw == reason.raw and failure is reason.failure:
        return reason
    return replace(reason, raw=raw, failure=failure)


# --------------------------------------------------------------------------- helpers


def _reason_for(error: BaseException | None, provider: str, cancelled: bool) -> FinishReason:
    """The finish of a stream that ended with ``error`` instead of its finish chunk."""
    if isinstance(error, LlmError):
        failure = error.failure
        if failure.provider is None:
            failure = replace(failure, provider=provider)
    elif isinstance(error, GeneratorExit):
        failure = aborted_failure(provider, "stream closed by the consumer")
    elif isinstance(error, KeyboardInterrupt):
        failure = aborted_failure(provider, "interrupted (KeyboardInterrupt)")
    elif error is None:
        failure = make_failure(
            "STREAM_CLOSED",
            f"{provider}: the stream ended without a finish (STREAM_CLOSED)",
            provider=provider,
        )
    else:
        failure = make_failure(
            "UNKNOWN",
            f"{provider}: the stream failed with {type(error).__name__}",
            provider=provider,
        )
    if cancelled and failure.code != "ABORTED":
        failure = cancelled_failure(provider)
    return FinishReason(kind="aborted" if failure.code == "ABORTED" else "error", failure=failure)


def _blocks_of(assembler: BlockAssembler) -> tuple[Block, ...]:
    try:
        return tuple(assembler.blocks())
    except LlmError:  # a block that cannot be completed (a cut tool result): keep the text
        return tuple(assembler.interrupted_blocks())


def _observer_failed(observer: Observer, record: ObserverRecord, exc: Exception) -> None:
    key = id(observer)
    with _failed_lock:
        first = key not in _failed_observers
        if first:
            if len(_failed_observers) > 1000:
                _failed_observers.clear()
            _failed_observers.add(key)
    name = getattr(observer, "__qualname__", None) or type(observer).__qualname__
    kind = type(record).__name__
    if first:
        log.error(
            "observer %s raised on %s; ignored (later failures are logged at DEBUG)",
            name,
            kind,
            exc_info=exc,
        )
    else:
        log.debug("observer %s raised on %s; ignored", name, kind, exc_info=exc)


def _usage_text(usage: TokenUsage | None) -> str:
    if usage is None:
        return "unknown"
    parts = [f"in={usage.input_tokens}", f"out={usage.output_tokens}"]
    if usage.cache_read_tokens:
        parts.append(f"cache_read={usage.cache_read_tokens}")
    if usage.cache_write_tokens:
        parts.append(f"cache_write={usage.cache_write_tokens}")
    share = usage.cached_input_share
    if usage.cache_read_tokens and share is not None:
        parts.append(f"cached={share:.0%}")
    if usage.reasoning_tokens:
        parts.append(f"reasoning={usage.reasoning_tokens}")
    if usage.cost is not None:
        parts.append(f"cost=${usage.cost:.6g}")
    return " ".join(parts)


def _log_finished(record: StreamFinished) -> None:
    """The one INFO line of a finished stream; its facts also ride on the log record as
    ``record.dshstream`` (a dict) for structured handlers."""
    usage = record.usage
    facts: dict[str, Any] = {
        "stream_id": record.stream_id,
        "provider": record.provider,
        "model": record.model,
        "finish": record.kind,
        "code": record.code,
        "duration_s": round(record.duration, 6),
        "time_to_first_chunk_s": None
        if record.time_to_first_chunk is None
        else round(record.time_to_first_chunk, 6),
        "chunks": record.chunk_count,
        "attempts": record.attempts,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "cache_read_tokens": usage.cache_read_tokens if usage else None,
        "cache_write_tokens": usage.cache_write_tokens if usage else None,
        "cached_input_share": record.cached_input_share,
        "reasoning_tokens": usage.reasoning_tokens if usage else None,
        "cost": usage.cost if usage else None,
        "request_id": record.request_id,
        "response_id": record.response_id,
        "response_model": record.response_model,
        "serving_provider": record.serving_provider,
    }
    served = record.served_by
    if record.fallback:
        facts["served_by"] = served.name if served is not None else None
        facts["fallback"] = [
            {"target": e.name, "outcome": e.outcome, "code": e.failure.code if e.failure else None}
            for e in record.fallback
        ]
    first = "-" if record.time_to_first_chunk is None else f"{record.time_to_first_chunk:.3f}s"
    via = f" (served by {served.name}, target {served.position})" if served is not None else ""
    log.info(
        "%s %s%s: %s%s in %.3fs (first chunk %s), %d chunks, %d attempt%s, usage %s, request id %s",
        record.provider,
        record.model,
        via,
        record.kind,
        f" {record.code}" if record.code else "",
        record.duration,
        first,
        record.chunk_count,
        record.attempts,
        "" if record.attempts == 1 else "s",
        _usage_text(usage),
        record.request_id or "-",
        extra={"dshstream": facts},
    )
