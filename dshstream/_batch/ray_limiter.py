"""RayLimiter: one limiter for every worker of a Ray cluster, held by a Ray actor.

Contract (the ``ray`` extra; ``ray`` is imported when a :class:`RayLimiter` is made or
asked, never before):

1. **One holder.** ``RayLimiter(concurrency, name=...)`` starts (or, with a ``name`` that
   is already running in the namespace, joins) an actor holding one
   :class:`~dshstream._batch.limiter.ProviderLimiter` per provider key, ``concurrency``
   being the most requests in flight across the whole cluster. The handle is picklable:
   hand it to :class:`~dshstream._batch.ray_data.RayMapper` (``limiter=``) or to
   ``run_many(limiter=...)`` in any task; it is the factory those take.
2. **Each attempt is two calls.** ``acquire`` asks the actor for a launch, waiting there at
   most :data:`POLL` seconds a call so a stopped run is seen; ``release`` sends the
   attempt's report (its rate-limit facts and tokens, or its 429) with the release, in
   one call, so the actor learns the facts before the slot is reused. The launch number
   travels with the calls (limiter rule 7), whichever thread of the actor serves them.
3. **Dead workers.** A launch not released within ``lease`` seconds (its worker died) gives
   its slot back; its late report, if one comes, is ignored.
4. ``stats()`` gives, per provider key: ``in_flight``, ``launched``, ``rate_limited``,
   ``allowed``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .._core.types import RateLimits
from .._core.validate import invalid
from .limiter import Limiter, ProviderLimiter

__all__ = ["POLL", "RayLimiter"]

#: the longest one acquire call waits in the actor (rule 2)
POLL = 0.5
#: the actor's threads: blocked acquires hold one each, so room for every worker thread
ACTOR_THREADS = 256


class _Holder:
    """The actor's state (rules 1-3); its methods run on the actor's threads."""

    def __init__(self, concurrency: int, lease: float) -> None:
        self.concurrency = concurrency
        self.lease = lease
        self.lock = threading.Lock()
        self.limiters: dict[str, ProviderLimiter] = {}
        self.leases: dict[tuple[str, int], float] = {}
        self.never = threading.Event()

    def _limiter(self, provider: str) -> ProviderLimiter:
        with self.lock:
            found = self.limiters.get(provider)
            if found is None:
                found = self.limiters[provider] = ProviderLimiter(self.concurrency)
            return found

    def _expire(self) -> None:
        """Rule 3."""
        now = time.monotonic()
        with self.lock:
            expired = [lease for lease, until in self.leases.items() if until <= now]
            for lease in expired:
                del self.leases[lease]
        for provider, _launch in expired:
            self._limiter(provider).release()

    def acquire(self, provider: str, timeout: float) -> int | None:
        self._expire()
        limiter = self._limiter(provider)
        launch = limiter.acquire_launch(self.never, timeout)
        if launch is not None:
            with self.lock:
                self.leases[(provider, launch)] = time.monotonic() + self.lease
        return launch

    def finish(self, provider: str, launch: int, report: tuple[Any, ...] | None) -> None:
        with self.lock:
            if self.leases.pop((provider, launch), None) is None:
                return  # expired: its slot was given back already (rule 3)
        limiter = self._limiter(provider)
        try:
            if report is not None and report[0] == "observe":
                limiter.observe(report[1], report[2], launch=launch)
            elif report is not None and report[0] == "rate_limited":
                limiter.rate_limited(report[1])
        finally:
            limiter.release()

    def stats(self) -> dict[str, dict[str, float]]:
        with self.lock:
            limiters = dict(self.limiters)
        return {
            key: {"in_flight": found.in_flight, "launched": found.launched,
                  "rate_limited": found.rate_limited_count, "allowed": found.allowed}
            for key, found in limiters.items()
        }


class _RemoteLimiter:
    """One provider's :class:`~dshstream._batch.limiter.Limiter`, asked of the actor (rule 2)."""

    def __init__(self, handle: Any, provider: str) -> None:
        self._handle = handle
        self._provider = provider
        self._local = threading.local()

    def acquire(self, stop: threading.Event) -> bool:
        import ray

        while not stop.is_set():
            launch = ray.get(self._handle.acquire.remote(self._provider, POLL))
            if launch is not None:
                self._local.launch = launch
                self._local.report = None
                return True
        return False

    def observe(self, limits: RateLimits | None, tokens: int | None = None) -> None:
        self._local.report = ("observe", limits, tokens)

    def rate_limited(self, retry_after: float | None) -> None:
        self._local.report = ("rate_limited", retry_after)

    def release(self) -> None:
        import ray

        launch = getattr(self._local, "launch", None)
        if launch is None:
            return
        self._local.launch = None
        ray.get(self._handle.finish.remote(self._provider, launch, getattr(self._local, "report", None)))


class RayLimiter:
    """A limiter shared by a Ray cluster's workers (rules 1-4); picklable, the factory
    ``run_many(limiter=...)`` takes."""

    def __init__(self, concurrency: int, *, name: str | None = None, lease: float = 600.0) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise invalid(f"RayLimiter(concurrency=...) must be an int >= 1, not {concurrency!r}")
        if isinstance(lease, bool) or not isinstance(lease, (int, float)) or not lease > 0:
            raise invalid(f"RayLimiter(lease=...) must be a number of seconds > 0, not {lease!r}")
        import ray

        actor = ray.remote(_Holder).options(
            name=name, get_if_exists=name is not None, max_concurrency=ACTOR_THREADS, num_cpus=0
        )
        self._handle: Any = actor.remote(concurrency, float(lease))

    def __call__(self, provider: str) -> Limiter:
        return _RemoteLimiter(self._handle, provider)

    def stats(self) -> dict[str, dict[str, float]]:
        """Rule 4."""
        import ray

        result: dict[str, dict[str, float]] = ray.get(self._handle.stats.remote())
        return result
