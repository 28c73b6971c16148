"""The byte pump: a response body through a :class:`~dshstream._core.decode.StreamDecoder`
into lists of chunks, with the idle clock and cancellation.

Contract: no sockets of its own — the body is anything with the small
:class:`Body` interface (the transport's ``ResponseStream`` protocol extends it, and both of
its streams, over HTTP and in memory, have it; a test can fake it).

1. One list per read that produced chunks; reads that produce none (keep-alives, partial
   events) yield nothing.
2. Content restarts the idle clock: ``body.touch()`` is called for every read that
   produced chunks; keep-alive comments and pings do not count. When the translator enters
   a quiet phase (translator rule 6: the provider works without content) the body is told
   ``body.quiet(True)``, and ``body.quiet(False)`` when it leaves it: the idle clock then
   allows the stream's quiet budget instead of its idle timeout.
3. When the decoder has seen the wire's terminal marker, the connection is released for
   reuse *before* the last list is handed out (the consumer may stop right there). The
   body's ``release`` is bounded (the HTTP stream's takes at most ``RELEASE_WAIT``, 50 ms,
   in all, then closes instead): bytes after the end marker never hold the last list.
4. A cancel event seen between reads aborts the body and raises ``ABORTED``, with the one
   cancel message (:func:`~dshstream._core.errors.cancelled_message`).
5. At EOF the decoder is closed: a stream cut before its terminal marker ends with the
   decoder's own failure (``STREAM_CLOSED``), never a fabricated stop.
6. The stream's ``Finish`` carries the body's ``longest_silence`` (seconds without
   content, the idle clock's measure) in its metadata.
7. **Resuming.** With ``resume`` (a provider that can continue a cut stream), a body that
   ends before the terminal marker — EOF, or a read that fails with ``TRANSPORT`` — is not
   the end: ``resume(translator.last_sequence)`` gives the continuation's body, which is
   fed to the *same* translator through a fresh framer (:meth:`StreamDecoder.reframe`: a
   partial event of the cut body is dropped; the translator drops replayed events, its
   rule 8). The pump closes each body ``resume`` gave it. ``None``: no continuation, the
   stream ends as in rule 5 (a read failure is raised). A cancel is never resumed.
8. **Told.** With a ``tally`` (:class:`Tally`: the attempt loop above, which then hands the
   lists on with ``yield from`` instead of a loop of its own), a list that ends with a
   ``Finish`` goes to ``tally.finished(chunks)`` just before it is handed out (after rules 3
   and 6; it may replace that ``Finish``), and ``tally.produced`` counts the chunks of
   every list handed out: what the loop would have counted itself, had it iterated. That
   list is the last one handed out (the translator finished with it: nothing follows).
9. **Handed off.** A generator of lists (the attempt loop) that was asked to may yield one
   :class:`Handoff` instead of relaying the pump's lists itself: its consumer (the
   ``ChunkStream``) then iterates ``handoff.source`` directly, as that generator's own
   lists, and resumes the generator with ``next`` once the source is exhausted, or with
   ``throw`` of the ``Exception`` the source raised (the generator's error handling runs
   as if the source had raised inside it; its answer is its next list). Closing the
   generator closes the source. No resume of the relaying generators per read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator
from dataclasses import replace
from typing import Any, Protocol, cast, final

from .decode import StreamDecoder
from .sse import SSEDecoder
from .errors import LlmError, cancelled_message
from .types import Finish, ResponseMetadata, StreamChunk

__all__ = ["Body", "Handoff", "Resume", "Tally", "pump"]


class Body(Protocol):
    """A response body as the pump needs it."""

    def __iter__(self) -> Iterator[bytes]: ...

    def touch(self) -> None:
        """Content arrived: restart the idle clock."""

    def quiet(self, working: bool) -> None:
        """The provider works without content, or no longer (rule 2)."""

    def release(self) -> None:
        """The stream is complete: hand the connection back."""

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        """End the body now."""

    def raise_if_aborted(self) -> None:
        """Raise the abort's error, if there was one."""


#: the continuation of a cut stream after the given sequence number, or ``None`` (rule 7)
Resume = Callable[[int], "Body | None"]


@final
class Handoff:
    """Iterate ``source`` directly, as the yielding generator's own lists (rule 9)."""

    __slots__ = ("source",)

    def __init__(self, source: Iterator[list[StreamChunk]]) -> None:
        self.source = source


class Tally(Protocol):
    """What the pump tells the loop above it (rule 8)."""

    #: chunks handed out so far
    produced: int

    def finished(self, chunks: list[StreamChunk]) -> None:
        """``chunks``, about to be handed out, ends with a ``Finish`` (which this may
        replace); ``produced`` does not count them yet."""


def pump(
    body: Body,
    decoder: StreamDecoder,
    *,
    cancel: threading.Event | None,
    provider: str,
    resume: Resume | None = None,
    tally: Tally | None = None,
) -> Generator[list[StreamChunk], None, None]:
    """Decode ``body`` into lists of chunks (rules 1-8).

    Runs once per read, and with one event per read (what a provider sends) its own cost is
    the stream's per-event overhead: the decoder's two stages are called directly and the
    terminal marker is looked for only when a list ends with a ``Finish``. Without
    ``resume`` the generator handed back is the one body's own (no layer to resume on
    every read).
    """
    if resume is None:
        # The body's generator itself: what it returns (``True``) is read by nobody, as
        # the ``None`` of a generator of pump's own would not be.
        return cast(
            "Generator[list[StreamChunk], None, None]",
            _pump_body(body, decoder, cancel, provider, last=True, tally=tally),
        )
    return _pump_resumable(body, decoder, cancel, provider, resume, tally)


def _pump_resumable(
    body: Body,
    decoder: StreamDecoder,
    cancel: threading.Event | None,
    provider: str,
    resume: Resume,
    tally: Tally | None,
) -> Generator[list[StreamChunk], None, None]:
    """A body and its continuations (rule 7)."""
    first = body
    try:
        while True:
            try:
                ended = yield from _pump_body(body, decoder, cancel, provider, last=False, tally=tally)
            except LlmError as exc:
                if exc.failure.code != "TRANSPORT" or (cancel is not None and cancel.is_set()):
                    raise
                following = resume(decoder.translator.last_sequence)
                if following is None:
                    raise
            else:
                if ended:
                    return
                following = None if cancel is not None and cancel.is_set() else resume(
                    decoder.translator.last_sequence
                )
                if following is None:
                    yield from _close_decoder(decoder, body, tally)
                    return
            if body is not first:
                _close(body)
            body = following
            decoder.reframe()
    finally:
        if body is not first:
            _close(body)


def _pump_body(
    body: Body,
    decoder: StreamDecoder,
    cancel: threading.Event | None,
    provider: str,
    *,
    last: bool,
    tally: Tally | None = None,
) -> Generator[list[StreamChunk], None, bool]:
    """One body through the decoder (rules 1-4); ``True`` when the stream ended in it. At
    EOF of the ``last`` body the decoder is closed (rule 5)."""
    direct = type(decoder) is StreamDecoder  # a subclass may feed differently
    translator = decoder.translator
    translate = translator.feed_events
    framer = decoder.framer
    frame = framer.feed
    # ``StreamDecoder.feed``, inlined: over SSE a whole event reaches the translator as its
    # strings (no event object, no list); an event-stream framer feeds the batch
    feed_with = framer.feed_with if type(framer) is SSEDecoder else None
    one = translator.feed_data
    touch = body.touch
    # rule 4, asked after every read: ``Event.is_set`` returns its ``_flag``, read here
    # directly (one Python call less per read) when the event is a plain one that has it
    flagged: Any = cancel if type(cancel) is threading.Event and "_flag" in vars(cancel) else None
    cancelled = cancel.is_set if cancel is not None and flagged is None else None
    quiet = False
    for piece in body:
        if not direct:
            chunks = decoder.feed(piece)
        elif feed_with is not None:
            chunks = feed_with(piece, one, translate)
        else:
            chunks = translate(frame(piece))
        if translator.quiet is not quiet:  # rule 2
            quiet = translator.quiet
            body.quiet(quiet)
        if chunks:
            touch()
            if type(chunks[-1]) is Finish:
                _stamp(chunks, body)
                done = decoder.done
                if done:
                    body.release()
                if tally is not None:  # rule 8: the last list handed out
                    tally.finished(chunks)
                    tally.produced += len(chunks)
                    done = True
                if done:
                    yield chunks
                    return True
            if tally is not None:
                tally.produced += len(chunks)
            yield chunks
        if (flagged is not None and flagged._flag) or (cancelled is not None and cancelled()):
            body.abort("ABORTED", cancelled_message(provider))
            body.raise_if_aborted()
    if not last:
        return decoder.done
    yield from _close_decoder(decoder, body, tally)
    return True


def _close_decoder(
    decoder: StreamDecoder, body: Body, tally: Tally | None = None
) -> Generator[list[StreamChunk], None, None]:
    chunks = decoder.close()
    if chunks:
        if type(chunks[-1]) is Finish:
            body.touch()
            _stamp(chunks, body)
            if tally is not None:  # rule 8
                tally.finished(chunks)
        if tally is not None:
            tally.produced += len(chunks)
        yield chunks


def _close(body: Body) -> None:
    close = getattr(body, "close", None)
    if close is not None:
        close()


def _stamp(chunks: list[StreamChunk], body: Body) -> None:
    """The last chunk, a ``Finish``, with the body's longest silence (rule 6)."""
    silence = getattr(body, "longest_silence", None)
    if silence is None:
        return
    finish = chunks[-1]
    assert isinstance(finish, Finish)
    metadata = finish.metadata or ResponseMetadata()
    chunks[-1] = replace(finish, metadata=replace(metadata, longest_silence=round(silence, 3)))
