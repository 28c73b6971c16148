"""ProviderLimiter: how many requests to one provider may run, and when the next may start.

Contract (one limiter per provider key, shared by every thread that sends to it):

1. **The protocol.** :class:`Limiter` is what the executor asks: ``acquire(stop)`` blocks
   until a request may start (``False`` when ``stop`` is set first), ``release()`` after
   each attempt, ``observe(limits, tokens)`` with the attempt's
   :class:`~dshstream._core.types.RateLimits` (or ``None``) and tokens used, and
   ``rate_limited(retry_after)`` on a 429. A cross-process limiter (a shared store) is
   any object with these four methods, handed to ``run_many(limiter=...)``.
2. **AIMD.** The allowed concurrency starts at the executor's ``concurrency``; a 429
   halves it (at least 1), each success adds ``1/allowed`` (one more slot per window of
   successes), never past the start.
3. **Waiting for the reset.** A 429 stops every launch until its ``retry_after`` (else
   the learned reset, else one second) has passed, then lets one probe through at a time
   until a response says how much is left.
4. **Counting down.** A response's ``remaining_requests`` (and its reset) is the budget
   of the current window, less every request launched after the one that reported it
   (conservative: those may not have been counted yet). Each launch spends one; with
   nothing left, launches wait for the window's reset, after which the budget is the
   learned ``limit_requests`` (else one probe). A report older than the newest one seen
   (a request launched earlier that finished later) is ignored. When the budget is at
   most the allowed concurrency, launches are paced evenly to the reset.
5. **Tokens.** When ``remaining_tokens`` is below what the requests in flight are likely
   to use (the mean tokens per request so far), launches wait for ``reset_tokens``.
6. Times are ``time.monotonic()``; the clock and sleep are injectable for tests.
7. **Shared.** :meth:`ProviderLimiter.acquire_launch` is ``acquire`` with a timeout that
   returns the launch's number, and ``observe(launch=...)`` takes it back: a limiter held
   by one process and asked by others over calls that may land on any of its threads
   (:mod:`~dshstream._batch.ray_limiter`) needs no thread-local state.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from .._core.types import RateLimits

__all__ = ["Limiter", "ProviderLimiter"]

#: a margin past a learned reset, for the clocks of two machines and the request's travel
RESET_MARGIN = 0.05
#: the wait after a 429 that says nothing about when to come back
DEFAULT_BACKOFF = 1.0


@runtime_checkable
class Limiter(Protocol):
    """What the executor asks before and after each attempt (rule 1)."""

    def acquire(self, stop: threading.Event) -> bool: ...

    def release(self) -> None: ...

    def observe(self, limits: RateLimits | None, tokens: int | None = None) -> None: ...

    def rate_limited(self, retry_after: float | None) -> None: ...


class ProviderLimiter:
    """The in-process :class:`Limiter` (rules 2-5)."""

    def __init__(self, concurrency: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_concurrency = concurrency
        self.allowed = float(concurrency)
        self.in_flight = 0
        self.launched = 0
        self.rate_limited_count = 0
        self._clock = clock
        self._cond = threading.Condition()
        self._not_before = 0.0
        self._budget: int | None = None  # None: unknown, launch freely
        self._window_end: float | None = None
        self._limit: int | None = None
        self._newest_report = -1
        self._next_paced = 0.0
        self._probing = False
        self._token_wait_until = 0.0
        self._tokens_used = 0
        self._token_reports = 0
        self._seq = threading.local()

    def __repr__(self) -> str:
        return (
            f"ProviderLimiter(allowed={self.allowed:.1f}, in_flight={self.in_flight}, "
            f"budget={self._budget!r}, rate_limited={self.rate_limited_count})"
        )

    # ------------------------------------------------------------------ the wait

    def _wait_needed(self, now: float) -> float:
        """Seconds until a launch may happen now (0: go)."""
        if self.in_flight >= max(1, math.floor(self.allowed)):
            return math.inf  # woken by release
        if self._probing and self.in_flight > 0:
            return math.inf
        waits = [self._not_before - now, self._token_wait_until - now]
        if self._budget is not None:
            if self._budget <= 0:
                if self._window_end is not None and now < self._window_end:
                    waits.append(self._window_end - now)
                else:  # the window turned over
                    self._window_end = None
                    self._budget = self._limit if self._limit else None
                    self._probing = self._limit is None
                    if self._probing and self.in_flight > 0:
                        return math.inf
            elif self._window_end is not None and self._budget <= max(1, math.floor(self.allowed)):
                waits.append(self._next_paced - now)
        return max(0.0, *waits)

    def acquire(self, stop: threading.Event) -> bool:
        """Block until a request may start (rules 2-5); ``False`` once ``stop`` is set."""
        return self.acquire_launch(stop) is not None

    def acquire_launch(self, stop: threading.Event, timeout: float | None = None) -> int | None:
        """:meth:`acquire`, giving the launch's number (rule 7), or ``None`` once ``stop``
        is set or ``timeout`` seconds (of the real clock) passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if stop.is_set():
                    return None
                now = self._clock()
                wait = self._wait_needed(now)
                if wait <= 0:
                    break
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = min(wait, left)
                self._cond.wait(min(wait, 0.1))
            self.in_flight += 1
            self.launched += 1
            self._seq.value = self.launched
            if self._budget is not None:
                self._budget -= 1
                if self._window_end is not None and self._budget > 0:
                    self._next_paced = now + max(0.0, self._window_end - now) / (self._budget + 1)
            return self.launched

    def release(self) -> None:
        """One attempt ended."""
        with self._cond:
            self.in_flight = max(0, self.in_flight - 1)
            self._cond.notify_all()

    # ------------------------------------------------------------------ what was learned

    def observe(self, limits: RateLimits | None, tokens: int | None = None, *, launch: int | None = None) -> None:
        """A successful attempt's rate-limit facts (rules 2, 4, 5); call before ``release``
        on the thread that acquired, or name the launch (rule 7)."""
        seq = launch if launch is not None else getattr(self._seq, "value", self.launched)
        with self._cond:
            now = self._clock()
            self.allowed = min(float(self.max_concurrency), self.allowed + 1.0 / max(1.0, self.allowed))
            self._probing = False
            if tokens:
                self._tokens_used += tokens
                self._token_reports += 1
            if limits is not None and seq > self._newest_report:
                self._newest_report = seq
                if limits.limit_requests is not None:
                    self._limit = limits.limit_requests
                reset = limits.reset_requests if limits.reset_requests is not None else limits.window
                if limits.remaining_requests is not None:
                    self._budget = limits.remaining_requests - (self.launched - seq)
                    self._window_end = now + reset + RESET_MARGIN if reset is not None else None
                if limits.remaining_tokens is not None and limits.reset_tokens is not None and self._token_reports:
                    mean = self._tokens_used / self._token_reports
                    if limits.remaining_tokens < mean * max(1, self.in_flight):
                        self._token_wait_until = now + limits.reset_tokens + RESET_MARGIN
            self._cond.notify_all()

    def rate_limited(self, retry_after: float | None) -> None:
        """A 429 (rules 2, 3); call before ``release``."""
        with self._cond:
            now = self._clock()
            self.rate_limited_count += 1
            self.allowed = max(1.0, self.allowed / 2)
            wait = retry_after
            if wait is None and self._window_end is not None and self._window_end > now:
                wait = self._window_end - now
            self._not_before = max(self._not_before, now + (wait if wait is not None else DEFAULT_BACKOFF))
            self._budget = 0
            self._window_end = self._not_before
            self._probing = True
            self._cond.notify_all()
