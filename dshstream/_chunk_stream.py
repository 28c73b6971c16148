"""ChunkStream: what ``LlmService.stream`` returns — an iterator of chunks that is also a
context manager, assembles as it goes, and can be closed from any thread.

Contract: one consumer thread iterates; any thread may call :meth:`ChunkStream.close` or
set the request's cancel event. Closing releases the HTTP connection (directly when the
stream is idle, through the cancel event and the transport's watchdog when another thread
is blocked reading). ``KeyboardInterrupt`` (the notebook stop button) closes the stream,
keeps the partial result, and propagates. :meth:`result` never raises for provider
failures: they are in ``result().finish``. :meth:`display` renders the stream and returns
``None``; ``result()`` then returns what it rendered. A watched stream (``watch=``, see
:mod:`dshstream._observe`) reports its end exactly once, however it comes: its finish, a
source that ends or raises, ``close()``, ``KeyboardInterrupt``, an ``until_done`` callback
that raises (the stream is closed), or garbage collection of an unfinished stream. A
source may hand it a :class:`~dshstream._core.pump.Handoff` (pump rule 9: the service's
HTTP streams): its lists are then read from the generator it names, directly, as the
source's own; an ``Exception`` that generator raises is thrown into the source, whose
answer is its next list; at its end the source is resumed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from typing import TYPE_CHECKING, Any, cast

from ._core.assembler import AssembledResponse, BlockAssembler
from ._core.errors import aborted_failure
from ._core.pump import Handoff
from ._core.types import Finish, FinishReason, StreamChunk, TextDelta

if TYPE_CHECKING:
    from ._core.partial_json import JsonSnapshot
    from ._core.request import GenerateOptions
    from ._observe import StreamWatch


class ChunkStream:
    """What ``LlmService.stream`` returns: an iterator of chunks that assembles as it goes,
    with ``close()`` (from any thread), ``result()``, ``partial()`` and ``text_stream()``."""

    def __init__(
        self,
        batches: Iterator[list[StreamChunk] | Handoff],
        *,
        options: GenerateOptions | None = None,
        cancel: threading.Event | None = None,
        watch: StreamWatch | None = None,
    ) -> None:
        self._source = batches
        #: the generator a Handoff named, read directly until it ends (pump rule 9)
        self._inner: Iterator[list[StreamChunk]] | None = None
        self._batch: list[StreamChunk] = []
        self._pos = 0
        self.options = options
        self._cancel = cancel
        provider = options.provider if options is not None else None
        model = options.model if options is not None else None
        self._assembler = BlockAssembler(provider=provider, model=model)
        self._done = False
        self._running = False
        self._lock = threading.Lock()
        #: observers and the finished-stream log line (``_observe``); None: nobody watches
        self._watch = watch
        if watch is not None:
            watch.follow(self, self._assembler, batches)

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        provider = self.options.provider if self.options is not None else None
        return f"ChunkStream(provider={provider!r}, {state})"

    # ------------------------------------------------------------------ iteration

    def __iter__(self) -> ChunkStream:
        return self

    def __next__(self) -> StreamChunk:
        pos = self._pos
        batch = self._batch
        if pos >= len(batch):
            batch = self._refill()
            pos = 0
        chunk = batch[pos]
        self._pos = pos + 1
        self._assembler.push(chunk)
        if type(chunk) is Finish:
            self._batch = []
            self._finished()
        return chunk

    def _refill(self) -> list[StreamChunk]:
        """The next non-empty batch from the source (raises StopIteration at the end)."""
        if self._done:
            raise StopIteration
        self._running = True
        watch = self._watch
        try:
            batch: list[StreamChunk] = []
            while not batch:
                inner = self._inner
                if inner is None:
                    item = next(self._source)
                    if type(item) is Handoff:  # pump rule 9
                        self._inner = item.source
                        continue
                    batch = item
                    continue
                try:
                    batch = next(inner)
                except StopIteration:
                    self._inner = None  # its end: the source goes on
                except Exception as exc:  # noqa: BLE001 - the source's own handlers decide
                    self._inner = None
                    batch = self._throw(exc)
        except StopIteration:
            self._done = True
            if watch is not None:
                watch.finish()
            raise
        except KeyboardInterrupt:
            self._running = False
            self._abort("interrupted (KeyboardInterrupt)")
            raise
        except Exception as exc:
            if watch is not None:
                watch.failed(exc)
            raise
        finally:
            self._running = False
        if watch is not None:
            watch.received(batch)
        self._batch = batch  # __next__ sets ``_pos``
        return batch

    def _close_source(self) -> None:
        close = getattr(self._source, "close", None)  # a plain iterator has none
        if close is not None:
            close()

    def __enter__(self) -> ChunkStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ control

    @property
    def done(self) -> bool:
        """Whether the stream has ended (finished, failed or closed)."""
        return self._done

    def cancel(self) -> None:
        """Ask the stream to stop from any thread (the reader ends with ``aborted``)."""
        if self._cancel is not None:
            self._cancel.set()

    def close(self) -> None:
        """Release the connection now; safe from any thread and idempotent."""
        if self._done:
            return
        if self._running:
            # Another thread is inside the generator: it can't be closed from here, so
            # signal it; the transport watchdog shuts its socket down.
            self.cancel()
            return
        self._abort("stream closed by the consumer")

    def _abort(self, why: str) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            self._batch = []  # chunks decoded but not yet handed out are dropped with the stream
            self._pos = 0
        if self._cancel is not None:
            self._cancel.set()
        try:
            self._close_source()
        except Exception:  # noqa: BLE001 - closing never raises
            pass
        if not self._assembler.finished:
            provider = self.options.provider if self.options is not None else "stream"
            failure = aborted_failure(provider, why)
            self._assembler.push(Finish(reason=FinishReason(kind="aborted", failure=failure)))
        if self._watch is not None:
            self._watch.finish()

    # ------------------------------------------------------------------ results

    def result(self) -> AssembledResponse:
        """Consume the rest and return the assembled response (partial if it failed)."""
        push = self._assembler.push
        pos, batch = self._pos, self._batch
        if pos < len(batch):  # what an interrupted iteration left of its batch
            self._batch = []
            self._pos = 0
            for chunk in batch[pos:]:
                push(chunk)
                if type(chunk) is Finish:
                    self._finished()
                    return self._assembler.result()
        if not self._done:
            self._drain(push)
        return self._assembler.result()

    def _drain(self, push: Callable[[StreamChunk], None]) -> None:
        """Push every batch from the source until the ``Finish`` or the source's end.

        ``result()``'s loop, with what ``_refill`` does per batch done once per call: the
        stream counts as running (``close()`` from another thread goes through the cancel
        event) from the first read to the last, and nothing is stored on ``self`` per read.
        The watch hears each batch, the finish, and a source that raises, as with iteration.
        """
        watch = self._watch
        reading = True  # False while a batch is pushed: an exception there is not the source's
        self._running = True
        try:
            for item in self._source:
                if type(item) is Handoff:  # pump rule 9: its lists read here, directly
                    relayed = self._relay(item.source, push)
                    if relayed is None:
                        return  # the Finish was pushed
                    batch = relayed
                else:
                    batch = item
                if not batch:
                    continue
                reading = False
                if self._push_batch(batch, push):
                    return
                reading = True
        except KeyboardInterrupt:
            self._running = False
            self._abort("interrupted (KeyboardInterrupt)")
            raise
        except Exception as exc:
            if reading and watch is not None:
                watch.failed(exc)
            raise
        finally:
            self._running = False
        self._done = True  # the source ended without a Finish
        if watch is not None:
            watch.finish()

    def _relay(
        self, inner: Iterator[list[StreamChunk]], push: Callable[[StreamChunk], None]
    ) -> list[StreamChunk] | None:
        """``_drain``'s loop over a handed-off generator (pump rule 9): ``None`` once the
        ``Finish`` was pushed; else the source's answer to what ``inner`` raised (a list
        to push like any other), or ``[]`` at ``inner``'s end (the source goes on)."""
        reading = True
        try:
            for batch in inner:
                reading = False
                if self._push_batch(batch, push):
                    return None
                reading = True
        except Exception as exc:
            if not reading:
                raise
            try:
                return self._throw(exc)
            except StopIteration:  # the source ended there
                return []
        return []

    def _push_batch(self, batch: list[StreamChunk], push: Callable[[StreamChunk], None]) -> bool:
        """One read batch through ``push``, the watch told first; ``True`` once the
        ``Finish`` was pushed (the stream is done, its source closed from this thread)."""
        if self._watch is not None:
            self._watch.received(batch)
        for chunk in batch:
            push(chunk)
            if type(chunk) is Finish:
                self._running = False
                self._finished()
                return True
        return False

    def _throw(self, exc: Exception) -> list[StreamChunk]:
        """``exc``, raised by a handed-off generator, thrown into the source (pump rule 9):
        its answer, its next list."""
        source = cast("Generator[list[StreamChunk], None, None]", self._source)
        return source.throw(exc)

    def _finished(self) -> None:
        """The ``Finish`` was handed out: the stream is done; release the source."""
        self._done = True
        self._close_source()
        if self._watch is not None:
            self._watch.finish()

    def partial(self) -> AssembledResponse:
        """What has been assembled so far, without consuming more."""
        return self._assembler.result()

    def text_stream(self) -> Iterator[str]:
        """Only the visible text, as it arrives."""
        for chunk in self:
            if type(chunk) is TextDelta:
                yield chunk.text

    def partial_json(
        self, *, tool: str | None = None, deltas: bool = False, skip_prose: bool = False
    ) -> Iterator[JsonSnapshot]:
        """Snapshots of the JSON being streamed (the text, or with ``tool=`` a tool call's
        arguments by name or call id) that never change type; the last one is ``done`` or
        ``truncated``. See :func:`dshstream.sansio.partial_json` (which also takes size limits)."""
        from ._core.partial_json import partial_json

        return partial_json(self, tool=tool, deltas=deltas, skip_prose=skip_prose)

    def until_done(self, on_chunk: Callable[[StreamChunk], Any]) -> AssembledResponse:
        """Call ``on_chunk`` for every chunk, then return the assembled response; if
        ``on_chunk`` raises, the stream is closed and the exception propagates."""
        try:
            for chunk in self:
                on_chunk(chunk)
        except KeyboardInterrupt:
            self._abort("interrupted (KeyboardInterrupt)")
            raise
        except BaseException:
            self._abort("stream closed: on_chunk raised")
            raise
        return self._assembler.result()

    def display(self, **options: Any) -> None:
        """Render live in a notebook (plain text elsewhere); the assembled response is then
        :meth:`result` (and :meth:`partial`). Returns ``None``, as IPython's own
        ``display()`` does, so a cell ending in ``stream.display()`` shows the rendering
        and nothing else. ``options``: see :func:`dshstream._notebook.display`."""
        from ._notebook import display

        display(self, **options)
