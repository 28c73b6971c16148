"""Credentials: a fixed key, or a zero-argument callable asked for the current secret
before every attempt (rotating tokens: Azure Entra ID, Google OAuth).

Contract: stdlib plus dshstream's validators, errors and redaction; no I/O of its own
(a callable may do what it likes).

1. ``api_key=`` of every HTTP adapter is a ``str`` (``""``/``None``: no key) or a
   zero-argument callable returning one. The adapter asks :meth:`CredentialSource.get`
   once per attempt, retries included, and builds that attempt's headers with the value.
2. Every value a callable returns is checked like a key (no control characters, Latin-1,
   no surrounding whitespace; ``None`` or ``""`` is a mistake:
   :class:`~dshstream._core.errors.ConfigurationError`) and registered for redaction
   (:func:`~dshstream._core.redact.register_secret`) each time. The :data:`HISTORY` most
   recent distinct values of one source stay registered; older ones (long expired) are
   forgotten, so a process that runs for months does not redact against thousands of
   dead tokens.
3. A callable that raises an :class:`~dshstream._core.errors.LlmError` is passed through
   (a token endpoint's timeout stays retryable); any other exception becomes an ``AUTH``
   failure whose message names only the exception's type and whose ``detail`` is its
   text, redacted. Nothing foreign escapes.
4. After an HTTP 401 before the stream started, :meth:`CredentialSource.refresh_after`
   (asked by the attempt loop and by ``list_models``) calls
   :meth:`CredentialSource.invalidate` — which calls the callable's own ``invalidate()``
   when it has one (dshstream's
   :class:`~dshstream._adapters.google_oauth.AuthorizedUserCredentials` drops its cached
   token) — and says to try once more, only for a callable.
5. Nothing here shows a secret: :meth:`CredentialSource.describe` says ``set``,
   ``callable`` or ``none``.
6. **A fetch holds the stream's limits.** Given the attempt's :class:`FetchLimits`, a
   callable (``api_key=``, Bedrock's ``credentials=``, through :func:`call_credential`)
   runs on a short-lived worker thread, with the caller's ``contextvars``, while the
   caller's thread waits at most until the stream's deadline or the end of its idle
   window, checking ``cancel`` every 50 ms (a watchdog tick): then the attempt ends
   ``TIMEOUT`` or ``ABORTED`` at once. A caller's callable cannot be interrupted, so its
   worker is left to finish on its own (a daemon thread; its value is dropped). One of
   dshstream's own (the ``authorized_user`` reader) reads :func:`current_limits` on that
   worker and sends its token request under the same limits, so it ends with the stream.
   No fetch starts after the deadline or a cancel. Without limits (``list_models`` without
   a timeout, direct use) the callable runs on the caller's thread.
7. **A key pool** (:class:`~dshstream._adapters.key_pool.KeyPool`) is a credential too,
   and this is the one place every adapter learns it: :meth:`CredentialSource.get` picks a
   key from the pool per attempt (with no key usable, the pool's failure is raised:
   key_pool rule 4). Its keys are registered for redaction by the pool itself, for its
   lifetime (never through the :data:`HISTORY`, which would forget them).
8. **One stream's view.** :meth:`CredentialSource.for_stream` gives the source as one
   stream's attempts use it (attempts rule 3). For a pool it remembers the lease of the
   stream's current attempt, so :meth:`~CredentialSource.refresh_after` settles exactly
   the key that attempt used (a stream's attempts are sequential, so no other stream's
   pick is mistaken for it) and moves to the next key at once when that key was cooled
   or parked, at most once per key (:attr:`~CredentialSource.refresh_limit`). For a
   callable it refreshes once per stream (rule 4). A fixed key, or none, is its own view.
9. **Fixed, told without a call.** :attr:`CredentialSource.fixed` (set when the source is
   made: its value never changes) says the credential is a fixed key or none, and
   :attr:`CredentialSource.key` is that key: what :meth:`~CredentialSource.get` returns
   and :meth:`~CredentialSource.for_stream` is (the source itself), so an auth flow reads
   them instead of calling either (auth rule 6).
"""

from __future__ import annotations

import contextvars
import copy
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import NamedTuple, Union

from .._core.errors import LlmError, cancelled_failure, error_for, make_failure
from .._core.log import get_logger
from .._core.redact import known_secrets, redact, register_secret, unregister_secret
from .._core.types import LlmFailure
from .._core.validate import check_api_key, check_credential, invalid
from .key_pool import KeyPool, Lease

log = get_logger("dshstream.adapters")

__all__ = [
    "HISTORY",
    "Credential",
    "CredentialSource",
    "FetchLimits",
    "SecretHistory",
    "call_credential",
    "current_limits",
    "holds_keys",
]

#: what ``api_key=`` accepts: a key, or a zero-argument callable returning the current one
#: (a :class:`~dshstream._adapters.key_pool.KeyPool` is one: rule 7)
Credential = Union[str, Callable[[], str]]
#: distinct values of one callable kept registered for redaction
HISTORY = 16
#: how often a waiting fetch looks at the cancel event (the transport's watchdog tick)
_TICK = 0.05


class FetchLimits(NamedTuple):
    """The limits of the attempt a credential is fetched for (rule 6); times are
    ``time.monotonic()`` values."""

    #: the stream's total deadline (``None``: none)
    deadline: float | None = None
    #: the stream's cancel event
    cancel: threading.Event | None = None
    #: the content-idle clock, running from ``started``
    idle_timeout: float | None = None
    #: when the attempt began
    started: float = 0.0

    def until(self) -> float | None:
        """When the fetch must have ended: the deadline or the idle window's end, the earlier."""
        idle_end = None if self.idle_timeout is None else self.started + self.idle_timeout
        ends = [t for t in (self.deadline, idle_end) if t is not None]
        return min(ends) if ends else None

    def bounds(self, provider: str, timeout: float) -> tuple[float, threading.Event | None]:
        """A token endpoint call's ``timeout`` cut to what the limits leave, and the cancel
        it takes; raises :meth:`stop`'s error when nothing is left."""
        now = time.monotonic()
        stop = self.stop(provider, now)
        if stop is not None:
            raise stop
        until = self.until()
        if until is not None:
            timeout = min(timeout, max(0.001, until - now))
        return timeout, self.cancel

    def stop(self, provider: str, now: float) -> LlmError | None:
        """The error that ends the fetch now (cancelled, or past a limit), else ``None``."""
        if self.cancel is not None and self.cancel.is_set():
            return error_for(cancelled_failure(provider))
        if self.deadline is not None and now >= self.deadline:
            return error_for(
                make_failure(
                    "TIMEOUT",
                    f"{provider}: total timeout expired while fetching the credential (TIMEOUT)",
                    provider=provider,
                )
            )
        if self.idle_timeout is not None and now - self.started >= self.idle_timeout:
            return error_for(
                make_failure(
                    "TIMEOUT",
                    f"{provider}: no content for {self.idle_timeout:g}s while fetching the credential "
                    "(idle timeout, TIMEOUT)",
                    provider=provider,
                )
            )
        return None


_fetching = threading.local()


def current_limits() -> FetchLimits | None:
    """The limits of the fetch running on this thread (a credential's worker), if any:
    a credential that does its own I/O sends it under them (rule 6)."""
    limits: FetchLimits | None = getattr(_fetching, "limits", None)
    return limits


def call_credential(
    source: Callable[[], object], provider: str, field: str, limits: FetchLimits | None = None
) -> object:
    """``source()`` — under ``limits`` on a worker thread when given (rule 6) — with its
    exceptions mapped (rule 3): an ``LlmError`` passes through, anything else is an
    ``AUTH`` failure naming only its type."""
    try:
        if limits is None:
            return source()
        return _call_within(source, provider, limits)
    except LlmError:
        raise
    except Exception as exc:  # noqa: BLE001 - nothing foreign escapes (rule 3)
        detail = redact(f"{type(exc).__name__}: {exc}", known_secrets(), limit=1900)
        raise error_for(
            make_failure(
                "AUTH",
                f"{provider}: the {field} callable raised {type(exc).__name__} (AUTH)",
                provider=provider,
                detail=detail,
            )
        ) from None


def _call_within(source: Callable[[], object], provider: str, limits: FetchLimits) -> object:
    """Run ``source`` on a worker; wait for it no longer than ``limits`` allow."""
    stop = limits.stop(provider, time.monotonic())
    if stop is not None:
        raise stop  # no fetch after the deadline or a cancel
    done = threading.Event()
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        _fetching.limits = limits
        try:
            outcome.append((True, source()))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append((False, exc))
        finally:
            _fetching.limits = None
            done.set()

    context = contextvars.copy_context()  # the caller's tracing context, request settings
    threading.Thread(target=context.run, args=(work,), name="dshstream-credential", daemon=True).start()
    until = limits.until()
    while True:
        wait = _TICK if limits.cancel is not None else None
        if until is not None:
            left = until - time.monotonic()
            wait = left if wait is None else min(wait, left)
        if done.wait(max(0.0, wait) if wait is not None else None):
            break
        stop = limits.stop(provider, time.monotonic())
        if stop is not None:
            raise stop  # the worker finishes on its own; its value is dropped
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value


class SecretHistory:
    """The most recent distinct secrets of one credential source, kept registered for
    redaction; older ones (long expired) are forgotten (rule 2). The one registry every
    source uses — keys, tokens, AWS secret keys and session tokens alike."""

    __slots__ = ("_limit", "_lock", "_values")

    def __init__(self, limit: int = HISTORY) -> None:
        self._limit = limit
        self._values: deque[str] = deque()
        self._lock = threading.Lock()

    def remember(self, *secrets: str | None) -> None:
        """Register each non-empty secret, forgetting the oldest past the limit."""
        for secret in secrets:
            if not secret:
                continue
            register_secret(secret)
            with self._lock:
                if secret in self._values:
                    continue
                self._values.append(secret)
                forgotten = self._values.popleft() if len(self._values) > self._limit else None
            if forgotten is not None:
                unregister_secret(forgotten)


def holds_keys(value: object) -> bool:
    """Whether a credential setting is API keys — a ``str`` or a
    :class:`~dshstream._adapters.key_pool.KeyPool` — rather than a token callable (for an
    adapter that sends keys and tokens in different headers)."""
    return isinstance(value, (str, KeyPool))


class CredentialSource:
    """The credential an adapter sends: a fixed key, a callable, a key pool, or nothing."""

    __slots__ = ("_field", "_history", "_last", "_lease", "_parent", "_pool", "_refreshes", "_value", "fixed", "key")

    def __init__(self, value: object, field: str = "api_key") -> None:
        checked = check_credential(value, field)
        self._value: Credential | None = checked
        #: a fixed key or none: the same value every attempt, its own stream view (rule 9)
        self.fixed = checked is None or isinstance(checked, str)
        #: the fixed key (``None``: none, or not a fixed key), what :meth:`get` returns then (rule 9)
        self.key: str | None = checked if isinstance(checked, str) else None
        self._field = field
        self._pool = checked if isinstance(checked, KeyPool) else None  # rule 7
        self._last: str | None = checked if isinstance(checked, str) else None
        self._history = SecretHistory()
        self._parent: CredentialSource | None = None  # set on one stream's view (rule 8)
        self._lease: Lease | None = None
        self._refreshes = 0
        if self._last:
            register_secret(self._last)

    @property
    def is_callable(self) -> bool:
        """Whether the credential is asked for anew before every attempt (a key pool too)."""
        return self._value is not None and not isinstance(self._value, str)

    @property
    def pool(self) -> KeyPool | None:
        """The key pool, when the credential is one (rule 7)."""
        return self._pool

    @property
    def value(self) -> Credential | None:
        return self._value

    @property
    def last(self) -> str | None:
        """The fixed key, or the value the callable (or pool) gave last (``None`` before
        the first call). Informational: which key an attempt used is its stream's (rule 8)."""
        return self._last

    def describe(self) -> str:
        """``set``, ``callable``, ``pool of N keys`` or ``none`` (never the secret)."""
        if self._value is None:
            return "none"
        if self._pool is not None:
            return f"pool of {len(self._pool)} keys"
        return "callable" if self.is_callable else "set"

    def for_stream(self) -> CredentialSource:
        """This source as one stream's attempts use it (rule 8): a view that remembers the
        current attempt's key and its refreshes; a fixed key (or none) is its own view."""
        if not self.is_callable:
            return self
        view = copy.copy(self)
        view._parent = self
        view._lease = None
        view._refreshes = 0
        return view

    @property
    def refresh_limit(self) -> int:
        """How many times one stream may be sent again at once after a refresh (rule 8):
        once per key of a pool; once otherwise."""
        return len(self._pool) if self._pool is not None else 1

    def get(self, provider: str, limits: FetchLimits | None = None) -> str | None:
        """The secret for one attempt: the fixed key, the callable's current value
        (checked and registered for redaction, rules 2 and 3), fetched under the attempt's
        ``limits`` (rule 6), or a key picked from the pool (rule 7)."""
        source = self._value
        if source is None or isinstance(source, str):
            return source
        if self._pool is not None:
            lease = self._pool.acquire(provider)
            if self._parent is not None:
                self._lease = lease  # this stream's current attempt (rule 8)
            self._set_last(lease.key)
            return lease.key
        result = call_credential(source, provider, self._field, limits)
        if result is None or result == "":
            raise invalid(f"{self._field}() returned no credential ({type(result).__name__} {result!r})")
        key = check_api_key(result, f"{self._field}()")
        assert key is not None
        self._remember(key)
        return key

    def refresh_after(self, failure: LlmFailure, provider: str) -> bool:
        """Whether ``failure`` (before any ``2xx``) is one this credential may cure: a
        pool's key cooled or parked — the attempt moves to the next key (rules 7, 8) —; a
        401 for a callable, told to drop its cached value (rule 4)."""
        if self._pool is not None:
            lease, self._lease = self._lease, None
            if lease is None or not self._pool.settle(lease, failure, provider):
                return False
            return self._refreshed()
        if failure.status != 401 or not self.is_callable:
            return False
        if self._parent is not None and self._refreshes >= 1:
            return False  # once per stream (rule 4)
        log.info("%s: HTTP 401; refreshing the credential and trying once more", provider)
        self.invalidate()
        self._refreshes += 1
        return True

    def _refreshed(self) -> bool:
        """Count one refresh of this stream's view; ``False`` past its limit (rule 8)."""
        if self._parent is None:
            return True
        if self._refreshes >= self.refresh_limit:
            return False
        self._refreshes += 1
        return True

    def invalidate(self) -> None:
        """A 401 came back: tell the callable, when it listens (``invalidate()``), to drop
        a cached value; its exceptions are ignored."""
        hook = getattr(self._value, "invalidate", None)
        if self.is_callable and callable(hook):
            try:
                hook()
            except Exception:  # noqa: BLE001 - the retry will show what is wrong
                pass

    def _set_last(self, key: str) -> None:
        self._last = key
        if self._parent is not None:
            self._parent._last = key

    def _remember(self, key: str) -> None:
        self._history.remember(key)
        self._set_last(key)
