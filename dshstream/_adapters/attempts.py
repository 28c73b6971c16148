"""The attempt loop: one stream as a sequence of attempts, written once and used by every
adapter (the HTTP adapters and the LiteLLM one).

Contract (the adapter supplies how to send one attempt; everything about *when* to send
another lives here):

1. **An attempt.** ``open_attempt(number, deadline, watch)`` sends attempt ``number`` and returns
   ``(resource, batches)`` once the provider accepted it — a ``2xx`` status; for LiteLLM,
   its stream opened — or raises that attempt's :class:`~dshstream._core.errors.LlmError`.
   ``batches`` yields the attempt's chunks, a list per network read; it is closed before
   ``resource`` (a context manager: the connection, LiteLLM's worker call) is left, however
   the consumer leaves.
2. **Reported once.** Every failed attempt is reported exactly once through ``report`` —
   a raised failure and an in-band one (a last ``Finish`` carrying a failure) alike — and
   the reported failure (with its diagnostics) is the one the consumer sees. A raised
   failure's diagnostics say whether its attempt had been accepted (``accepted``, rule 3),
   for a caller that retries on its own (the batch executor).
3. **Retried only before acceptance.** An attempt is retried only while it was not
   accepted and produced nothing: an accepted request may be billed, so it is never
   resent. Then, in this order: the auth flow hears the failure
   (``auth.refresh_after(failure, provider)``:
   :meth:`~dshstream._adapters.auth.AuthFlow.refresh_after`, asked after every such
   failed attempt, so a key pool settles the key that attempt used) and, when it answers
   that it changed what it sends — a ``401`` with a callable credential: its token
   dropped; a key pool's key cooled (``RATE_LIMIT``) or parked (``AUTH``, ``QUOTA``,
   ``CREDIT_LIMIT``): the next key —, one more attempt is sent at once, at most
   ``auth.refresh_limit`` times per stream (once; once per key of a pool: bounded), and
   not counted against the policy's ``max_retries`` (a move to another key is no retry;
   when every key of a pool is cooling, the next attempt fails before sending with the
   pool's ``RATE_LIMIT`` and its ``retry_after``: the wait for the first free key is the
   policy's sleep below, a retry like any other); a
   request the server refused in a form the adapter can change (``reshape(error)``:
   without a field) is resent at once; otherwise the retry policy's delay
   (``Retry-After``, backoff with jitter, never past the deadline) is slept — a cancel
   interrupts it (``ABORTED``, with the reported attempt's diagnostics) — and the next
   attempt is sent. When none applies, the reported failure is raised. ``auth`` is the
   stream's own flow (:meth:`~dshstream._adapters.auth.AuthFlow.for_stream`): its
   attempts are sequential, so what it remembers of the attempt that failed — the key a
   pool lent it — is that attempt's, whatever other streams share the pool.
4. **Observed.** The stream is watched by ``observer``
   (:func:`~dshstream._observe.watching`: its end reported exactly once, however the
   consumer leaves; not entered when nobody listens, told inline: _observe rule 2); ``watch.begin_attempt`` opens each attempt (``where``: the base URL it
   goes to), ``watch.received`` sees every list before the consumer does.
5. **The finish, told.** With ``on_finish`` (the service's boundary, which then hands the
   lists on with ``yield from`` instead of a loop of its own: one generator resume less
   per read), the stream's first ``Finish`` is handed to ``on_finish`` after rule 2's
   report and before its list is yielded, and nothing after that list is yielded.
6. **The pump, told.** An unwatched attempt opened with ``open_told`` (``open_attempt``
   with a :class:`~dshstream._core.pump.Tally` for its pump; the HTTP adapters') that the
   opener wired into its pump (``tally.taken``) is handed on with ``yield from``: the pump
   counts the chunks and hands the tally the list with the ``Finish`` (pump rule 8), where
   rules 2 and 5 run as in the loop this generator runs for every other attempt; a failure
   raised while it streams is reported with that count (rule 2). One loop resume less per
   read. With ``handoff`` (asked by a consumer that understands it: the service's
   ``ChunkStream``) the pump's generator is yielded once as a
   :class:`~dshstream._core.pump.Handoff` instead (pump rule 9): the consumer iterates it
   directly and throws what it raises back in here, where this rule and rule 1 run as
   with ``yield from``. No resume of this generator per read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from typing import Any, Protocol

from .._core.errors import LlmError, cancelled_failure, error_for
from .._core.log import get_logger
from .._core.request import GenerateOptions
from .._core.pump import Handoff
from .._core.retry import RetryPolicy
from .._core.types import Finish, LlmFailure, StreamChunk
from .._core.records import Observer, Telemetry
from .._observe import StreamWatch, thread_watch, watching
from .._observe import log as observe_log

log = get_logger("dshstream.adapters")

__all__ = ["OpenAttempt", "Refreshes", "Report", "run_attempts", "stream_policy"]

#: sends one attempt: ``(number, deadline, watch) -> (resource, batches)``, or raises (rule 1)
OpenAttempt = Callable[
    [int, float | None, StreamWatch | None],
    tuple[AbstractContextManager[Any], Generator[list[StreamChunk], None, None]],
]
#: reports one failed attempt: ``(failure, attempt, chunks so far, started, watch)`` (rule 2)
Report = Callable[[LlmFailure, int, int, float, StreamWatch | None], LlmFailure]
#: ``OpenAttempt`` with the pump's tally (rule 6): set ``tally.taken`` when it is wired in
OpenTold = Callable[
    [int, float | None, StreamWatch | None, "AttemptTally"],
    tuple[AbstractContextManager[Any], Generator[list[StreamChunk], None, None]],
]


class AttemptTally:
    """The attempt loop's side of an unwatched attempt's pump (rule 6, pump rule 8): the
    chunks counted, rules 2 and 5 at the finish."""

    __slots__ = ("produced", "taken", "_report", "_attempt", "_started", "_on_finish")

    def __init__(
        self, report: Report, attempt: int, started: float, on_finish: Callable[[Finish], None] | None
    ) -> None:
        self.produced = 0
        #: set by the opener that hands this tally to its pump
        self.taken = False
        self._report = report
        self._attempt = attempt
        self._started = started
        self._on_finish = on_finish

    def finished(self, chunks: list[StreamChunk]) -> None:
        last = chunks[-1]
        assert isinstance(last, Finish)
        if last.reason.failure is not None:  # rule 2
            failure = self._report(last.reason.failure, self._attempt, self.produced, self._started, None)
            last = chunks[-1] = replace(last, reason=replace(last.reason, failure=failure))
        if self._on_finish is not None:  # rule 5
            self._on_finish(last)


class Refreshes(Protocol):
    """What the loop asks of a stream's auth flow (or of a credential source's stream
    view, :meth:`~dshstream._adapters.credentials.CredentialSource.for_stream`): rule 3."""

    def refresh_after(self, failure: LlmFailure, provider: str) -> bool: ...

    @property
    def refresh_limit(self) -> int: ...


#: the watch of a stream nobody listens to (rule 4): none, and nothing to end
_UNWATCHED: AbstractContextManager[None] = nullcontext(None)

#: the last policy ``stream_policy`` built: (adapter's policy, max_retries, the result)
_last_policy: tuple[RetryPolicy, int, RetryPolicy] | None = None


def stream_policy(policy: RetryPolicy, options: GenerateOptions) -> RetryPolicy:
    """The adapter's retry policy with the request's own ``max_retries``, when it sets one
    (a frozen value: the last one built is kept for the next stream that asks the same)."""
    global _last_policy
    wanted = options.max_retries
    if wanted is None or wanted == policy.max_retries:
        return policy
    last = _last_policy
    if last is not None and last[0] is policy and last[1] == wanted:
        return last[2]
    built = replace(policy, max_retries=wanted)
    _last_policy = (policy, wanted, built)
    return built


def run_attempts(
    options: GenerateOptions,
    *,
    open_attempt: OpenAttempt,
    report: Report,
    policy: RetryPolicy,
    auth: Refreshes,
    observer: Observer | None,
    where: str | None,
    reshape: Callable[[LlmError], bool] = lambda error: False,
    telemetry: Callable[[], Telemetry] | None = None,
    on_finish: Callable[[Finish], None] | None = None,
    open_told: OpenTold | None = None,
    handoff: bool = False,
) -> Generator[list[StreamChunk], None, None]:
    """The stream's chunks, a list per read, over as many attempts as the rules allow."""
    started = time.monotonic()
    deadline = started + options.timeout if options.timeout else None
    attempt = 0
    refreshes = 0
    ended = False  # rule 5: the first Finish went to ``on_finish``
    # _observe rule 2, told here without a call into it: no observer, no outer watch, no log
    if observer is None and getattr(thread_watch, "watch", None) is None and not observe_log.isEnabledFor(logging.INFO):
        scope: AbstractContextManager[StreamWatch | None] = _UNWATCHED
    else:
        scope = watching(observer, options, telemetry)
    with scope as watch:  # None: nobody watches (rule 4)
        while True:
            attempt += 1
            produced = 0
            accepted = False
            if watch is not None:
                watch.begin_attempt(attempt, where)
            tally = AttemptTally(report, attempt, started, on_finish) if open_told is not None and watch is None else None
            try:
                if tally is not None:
                    assert open_told is not None
                    resource, batches = open_told(attempt, deadline, watch, tally)
                else:
                    resource, batches = open_attempt(attempt, deadline, watch)
                accepted = True
                with resource:
                    try:
                        if tally is not None and tally.taken:  # rule 6: the pump counts and tells
                            if handoff:
                                yield Handoff(batches)  # type: ignore[misc]  # (pump rule 9)
                            else:
                                yield from batches
                        else:
                            # The batches generator is iterated here, not behind a ``yield from`` in
                            # a generator of its own: one generator resume less per read.
                            for batch in batches:
                                if ended:
                                    continue  # rule 5: nothing after the finish
                                last = batch[-1]
                                if type(last) is Finish:
                                    assert isinstance(last, Finish)
                                    if last.reason.failure is not None:  # rule 2
                                        failure = report(last.reason.failure, attempt, produced, started, watch)
                                        last = batch[-1] = replace(last, reason=replace(last.reason, failure=failure))
                                    if on_finish is not None:  # rule 5
                                        ended = True
                                        on_finish(last)
                                produced += len(batch)
                                if watch is not None:
                                    watch.received(batch)
                                yield batch
                    finally:
                        batches.close()  # before the resource is left (rule 1)
                return
            except LlmError as exc:
                if tally is not None and tally.taken:
                    produced = tally.produced  # rule 6: counted by the pump
                # rule 3's fact, kept for callers that retry themselves (the batch executor)
                first = exc.failure
                first = replace(first, diagnostics={**(first.diagnostics or {}), "accepted": accepted or bool(produced)})
                failure = report(first, attempt, produced, started, watch)
                if produced or accepted:  # rule 3: it may be billed
                    raise error_for(failure) from None
                # asked after every failed attempt: a pool settles that attempt's key (rule 3)
                if auth.refresh_after(failure, options.provider) and refreshes < auth.refresh_limit:
                    refreshes += 1
                    continue
                if reshape(exc):
                    continue
                # an attempt sent again at once after a refresh (another key) is no retry (rule 3)
                delay = policy.delay(failure, attempt - refreshes, now=time.monotonic(), deadline=deadline)
                if delay is None:
                    raise error_for(failure) from None
            _sleep(delay, failure, attempt, options)


def _sleep(delay: float, failure: LlmFailure, attempt: int, options: GenerateOptions) -> None:
    """The backoff before the next attempt; a cancel ends it, and the stream (rule 3)."""
    log.warning("%s: retrying after %s in %.2fs (attempt %d)", options.provider, failure.code, delay, attempt + 1)
    if options.cancel is None:
        time.sleep(delay)
    elif options.cancel.wait(delay):
        # the failed attempt was reported: the abort keeps its diagnostics (which attempt)
        raise error_for(replace(cancelled_failure(options.provider), diagnostics=failure.diagnostics))
