"""The watchdog: one daemon thread that ends every open stream whose limits ran out.

Contract: stdlib and the core's errors only; it knows a stream only as something with a
``check(now)`` method (what the stream then does — shut a socket down, wake a wait — is
the stream's business).

1. **One thread for every stream.** Every open stream of every transport is registered
   with :data:`watchdog` and removed when it is closed or released; the thread (started on
   the first registration, a daemon, ``dshstream-watchdog``) calls each stream's
   ``check(time.monotonic())`` every :data:`WATCH_INTERVAL` seconds, so a blocked send or
   read never outlives its limits by more than one tick (~50 ms). With no stream open it
   sleeps until the next registration.
2. **The limits, in order.** A call's limits travel together, as one :class:`Limits`
   (the provider its errors name, ``cancel``, ``deadline``, ``idle_timeout``,
   ``quiet_timeout``), and
   :meth:`Limits.reached` is the one test, applied by each tick and by a call about to
   start: the caller's ``cancel`` event set (``ABORTED``, the one cancel message), then the
   total ``deadline`` passed (``TIMEOUT``), then no content for ``idle_timeout`` seconds
   since the last content (``TIMEOUT``) — or, while the stream is in a quiet phase (the
   provider known to be working without content: :meth:`WatchedStream.quiet`), for the
   ``quiet_timeout`` seconds instead (never less than the idle timeout).
3. **One abort state.** :class:`WatchedStream` is what every transport's stream shares:
   its limits, ``touch`` (content restarts the idle clock, and the longest silence between
   content is kept: :attr:`WatchedStream.longest_silence`), ``quiet``, the tick's ``check``, and the
   abort — recorded once under the stream's lock (the first code wins; nothing after a
   close; a close before the answer is the one ``ABORTED`` "closed by the caller"), then
   the stream's own ``_interrupt`` (shut a socket, wake a wait) outside it — and
   ``raise_if_aborted``, the one error an abort becomes.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self

from .._core.errors import cancelled_message, error_for, make_failure

__all__ = ["WATCH_INTERVAL", "Limits", "Watched", "WatchedStream", "watchdog"]

#: seconds between two checks of every open stream (rule 1)
WATCH_INTERVAL = 0.05


class Watched(Protocol):
    """What the watchdog watches."""

    def check(self, now: float) -> None:
        """Abort if a limit ran out by ``now`` (``time.monotonic()``)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """One call's limits (rule 2), and the provider their errors name."""

    provider: str
    #: an event another thread may set: ``ABORTED``
    cancel: threading.Event | None = None
    #: a ``time.monotonic()`` value: ``TIMEOUT`` once passed
    deadline: float | None = None
    #: seconds without content: ``TIMEOUT``
    idle_timeout: float | None = None
    #: seconds without content during a quiet phase: ``TIMEOUT`` (``None``: the idle timeout)
    quiet_timeout: float | None = None

    @property
    def read_timeout(self) -> float | None:
        """The longest a socket read may wait: the longer of the idle and quiet budgets —
        the watchdog enforces which applies, and its message names it; the socket's own
        timeout is the backstop, a few ticks later."""
        idle, quiet = self.idle_timeout, self.quiet_timeout
        if idle is None:
            return None
        return (idle if quiet is None else max(idle, quiet)) + 4 * WATCH_INTERVAL

    def start(self, started: float | None, now: float) -> float:
        """When the idle clock starts — ``started``, at most ``now`` (default ``now``) —
        once no limit is reached by ``now``; else the first one is raised (nothing starts
        past a limit)."""
        started = now if started is None else min(started, now)
        reached = self.reached(started, now)
        if reached is not None:
            raise error_for(make_failure(*reached, provider=self.provider))
        return started

    def reached(self, last_content: float, now: float, quiet: bool = False) -> tuple[str, str] | None:
        """The ``(code, message)`` of the first limit reached by ``now`` (rule 2), or
        ``None``; the idle clock runs from ``last_content``, with the quiet budget instead
        of the idle timeout during a quiet phase."""
        cancel, deadline, idle_timeout = self.cancel, self.deadline, self.idle_timeout
        if cancel is not None and cancel.is_set():
            return "ABORTED", cancelled_message(self.provider)
        if deadline is not None and now >= deadline:
            return "TIMEOUT", f"{self.provider}: total timeout expired (TIMEOUT)"
        if quiet and idle_timeout is not None and self.quiet_timeout is not None:
            budget = max(idle_timeout, self.quiet_timeout)
            if now - last_content >= budget:
                return "TIMEOUT", (
                    f"{self.provider}: no content for {budget:g}s while the provider worked "
                    "(quiet timeout, TIMEOUT)"
                )
        elif idle_timeout is not None and now - last_content >= idle_timeout:
            return "TIMEOUT", f"{self.provider}: no content for {idle_timeout:g}s (idle timeout, TIMEOUT)"
        return None

    def ending_by(self, end: float) -> Limits:
        """These limits with the deadline no later than ``end``."""
        return replace(self, deadline=end if self.deadline is None else min(self.deadline, end))


class WatchedStream:
    """The limits and abort state every transport's stream shares (rule 3)."""

    def __init__(self, limits: Limits, started: float) -> None:
        #: the provider's request id, once the headers are in
        self.request_id: str | None = None
        self._provider = limits.provider
        self._limits = limits
        self._last_content = started  # the idle clock runs from here (rule 2)
        self._quiet = False
        #: the longest stretch without content so far, in seconds (rule 3)
        self.longest_silence = 0.0
        self._abort_code: str | None = None
        self._abort_message = ""
        self._closed = False
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` (or a limit) ended the stream."""
        return self._abort_code is not None

    def touch(self) -> None:
        """Content arrived: restart the idle clock (and keep the longest silence)."""
        now = time.monotonic()
        silence = now - self._last_content
        if silence > self.longest_silence:
            self.longest_silence = silence
        self._last_content = now

    def quiet(self, working: bool) -> None:
        """The provider works without content (``True``) or is out of that phase: the
        idle clock allows the quiet budget meanwhile (rule 2)."""
        self._quiet = working

    def check(self, now: float) -> None:
        """Watchdog tick: abort on cancel or an expired limit (rule 2)."""
        if self._closed or self._abort_code is not None:
            return
        reached = self._limits.reached(self._last_content, now, self._quiet)
        if reached is not None:
            self.abort(*reached)

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        """End a blocked send, read or wait now, from any thread; the caller raises
        ``code`` (rule 3)."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return
            self._abort_code = code
            self._abort_message = message or cancelled_message(self._provider)
            held = self._hold()
        self._interrupt(held)

    def _abort_closed(self) -> None:
        """Under the lock: the stream is closed before its answer, the abort ``ABORTED``
        (rule 3)."""
        self._abort_code = "ABORTED"
        self._abort_message = f"{self._provider}: stream closed by the caller"

    def _give_up(self) -> None:
        """Interrupted (a ``KeyboardInterrupt``) while waiting for the answer: the request
        is given up, aborted then closed; the caller re-raises."""
        self.abort("ABORTED", f"{self._provider}: interrupted")
        self.close()

    def _hold(self) -> Any:
        """Under the lock, as an abort is recorded: what :meth:`_interrupt` will cut."""
        return None

    def _interrupt(self, held: Any) -> None:
        """After an abort is recorded, outside the lock: make a blocked call return."""

    def close(self) -> None:
        """End the stream (idempotent, never raises): each transport's own."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def raise_if_aborted(self) -> None:
        """Raise the abort's error if the stream was aborted (rule 3)."""
        if self._abort_code is not None:
            raise error_for(
                make_failure(self._abort_code, self._abort_message, provider=self._provider, request_id=self.request_id)
            )


class _Watchdog:
    """One daemon thread that enforces cancel and time limits on every open stream."""

    def __init__(self) -> None:
        self._streams: set[Watched] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, stream: Watched) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="dshstream-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()

    def remove(self, stream: Watched) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _run(self) -> None:
        while True:
            with self._lock:
                streams = list(self._streams)
            if not streams:
                self._wake.wait(5.0)
                self._wake.clear()
                continue
            now = time.monotonic()
            for stream in streams:
                stream.check(now)
            time.sleep(WATCH_INTERVAL)


#: the one watchdog (rule 1)
watchdog = _Watchdog()
