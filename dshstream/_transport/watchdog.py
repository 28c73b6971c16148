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
   (the provider its errors name, ``cancel``, ``deadline``, ``idle_timeout``), and
   :meth:`Limits.reached` is the one test, applied by each tick and by a call about to
   start: the caller's ``cancel`` event set (``ABORTED``, the one cancel message), then the
   total ``deadline`` passed (``TIMEOUT``), then no content for ``idle_timeout`` seconds
   since the last content (``TIMEOUT``).
3. **One abort state.** :class:`WatchedStream` is what every transport's stream shares:
   its limits, ``touch`` (content restarts the idle clock), the tick's ``check``, and the
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

    def reached(self, last_content: float, now: float) -> tuple[str, str] | None:
        """The ``(code, message)`` of the first limit reached by ``now`` (rule 2), or
        ``None``; the idle clock runs from ``last_content``."""
        cancel, deadline, idle_timeout = self.cancel, self.deadline, self.idle_timeout
        if cancel is not None and cancel.is_set():
            return "ABORTED", cancelled_message(self.provider)
        if deadline is not None and now >= deadline:
            return "TIMEOUT", f"{self.provider}: total timeout expired (TIMEOUT)"
        if idle_timeout is not None and now - last_content >= idle_timeout:
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
        self._abort_code: str | None = None
        self._abort_message = ""
        self._closed = False
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` (or a limit) ended the stream."""
        return self._abort_code is not None

    def touch(self) -> None:
        """Content arrived: restart the idle clock."""
        self._last_content = time.monotonic()

    def check(self, now: float) -> None:
        """Watchdog tick: abort on cancel or an expired limit (rule 2)."""
        if self._closed or self._abort_code is not None:
            return
        reached = self._limits.reached(self._last_content, now)
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
