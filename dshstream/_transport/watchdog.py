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
2. **The limits, in order.** :func:`limit_reached` is the one test, applied by each tick
   and by a call about to start: the caller's ``cancel`` event set (``ABORTED``, the one
   cancel message), then the total ``deadline`` passed (``TIMEOUT``), then no content for
   ``idle_timeout`` seconds since the last content (``TIMEOUT``).
3. **One abort state.** :class:`WatchedStream` is what every transport's stream shares:
   its limits, ``touch`` (content restarts the idle clock), the tick's ``check``, and the
   abort — recorded once under the stream's lock (the first code wins; nothing after a
   close), then the stream's own ``_interrupt`` (shut a socket, wake a wait) outside it —
   and ``raise_if_aborted``, the one error an abort becomes.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self

from .._core.errors import cancelled_message, error_for, make_failure

__all__ = ["WATCH_INTERVAL", "Watched", "WatchedStream", "limit_reached", "watchdog"]

#: seconds between two checks of every open stream (rule 1)
WATCH_INTERVAL = 0.05


class Watched(Protocol):
    """What the watchdog watches."""

    def check(self, now: float) -> None:
        """Abort if a limit ran out by ``now`` (``time.monotonic()``)."""


def limit_reached(
    provider: str,
    cancel: threading.Event | None,
    deadline: float | None,
    idle_timeout: float | None,
    last_content: float,
    now: float,
) -> tuple[str, str] | None:
    """The ``(code, message)`` of the first limit reached by ``now`` (rule 2), or ``None``."""
    if cancel is not None and cancel.is_set():
        return "ABORTED", cancelled_message(provider)
    if deadline is not None and now >= deadline:
        return "TIMEOUT", f"{provider}: total timeout expired (TIMEOUT)"
    if idle_timeout is not None and now - last_content >= idle_timeout:
        return "TIMEOUT", f"{provider}: no content for {idle_timeout:g}s (idle timeout, TIMEOUT)"
    return None


class WatchedStream:
    """The limits and abort state every transport's stream shares (rule 3)."""

    def __init__(
        self,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        started: float,
    ) -> None:
        #: the provider's request id, once the headers are in
        self.request_id: str | None = None
        self._provider = provider
        self._cancel = cancel
        self._idle_timeout = idle_timeout
        self._deadline = deadline
        self._last_content = started
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
        reached = limit_reached(
            self._provider, self._cancel, self._deadline, self._idle_timeout, self._last_content, now
        )
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
