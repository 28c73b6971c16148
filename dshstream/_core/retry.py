"""RetryPolicy: whether, and after how long, a failed attempt is tried again.

Contract: a pure value — no I/O, no sleeping; the clock and the random source are
arguments, so every decision can be tested without HTTP.

1. Only retryable failures are retried (``LlmFailure.retryable``), never ``ABORTED``, and
   at most ``max_retries`` times after the first attempt.
2. The wait honours the provider's ``Retry-After`` (already parsed into
   ``failure.retry_after``); one longer than ``retry_after_cap`` means "not now": no retry.
3. Otherwise the wait is exponential — ``backoff_base * 2 ** (attempt - 1)``, capped at
   ``backoff_cap`` — with jitter: a random factor in ``[0.5, 1)``.
4. A wait that would end at or past the deadline is no retry: no attempt starts after it.

Whether a request may be retried at all (never once a ``2xx`` status arrived) is the
adapter's rule, not this one's: this module only sees failures.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from .types import LlmFailure

__all__ = ["RetryPolicy"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many retries, and how long to wait before each."""

    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_cap: float = 10.0
    retry_after_cap: float = 60.0

    def delay(
        self,
        failure: LlmFailure,
        attempt: int,
        *,
        now: float,
        deadline: float | None = None,
        jitter: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or None for no retry.

        ``attempt`` counts from 1 (the attempt that just failed); ``now`` and
        ``deadline`` are on the same monotonic clock; ``jitter`` returns a float in
        ``[0, 1)``."""
        if not failure.retryable or failure.code == "ABORTED" or attempt > self.max_retries:
            return None
        if failure.retry_after is not None:
            if failure.retry_after > self.retry_after_cap:
                return None
            wait = max(0.0, failure.retry_after)
        else:
            wait = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
            wait *= 0.5 + jitter() / 2
        if deadline is not None and now + wait >= deadline:
            return None
        return wait
