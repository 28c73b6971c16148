"""KeyPool: one credential that is several API keys, shared by every stream — and every
adapter — it is given to. A rate-limited key cools down, a rejected one is parked, and the
attempt moves to the next key at once.

Contract: stdlib plus dshstream's validators, errors, logging and redaction; no I/O and no
waiting (when to try again is the attempt loop's: attempts rule 3). One lock per pool,
held only to read or change its state.

1. **Keys.** ``KeyPool(keys)`` takes a non-empty sequence of keys, labelled ``key #1``,
   ``key #2``... by position, or a mapping of labels to keys (the caller's own labels).
   Each key is checked like an ``api_key`` (:func:`~dshstream._core.validate.check_api_key`,
   the message naming the key by its label only), no key may repeat, and every key is
   registered for redaction (:func:`~dshstream._core.redact.register_secret`) when the
   pool is built, for the pool's lifetime. A label is a short plain name (letters, digits,
   ``_ .:#/-`` and spaces) that redaction leaves unchanged, so it can never be a key.
   Caller mistakes raise :class:`~dshstream._core.errors.ConfigurationError` at once,
   naming the field.
2. **Picking.** :meth:`KeyPool.acquire` picks one attempt's key: the next usable one —
   neither cooling nor parked — in round-robin order, counts its use and returns a
   :class:`Lease` (the key and which slot it is). Every stream of every adapter that holds
   the pool shares this state; picks from many threads at once are safe.
3. **Settling.** :meth:`KeyPool.settle` is told the failure of the attempt that used a
   lease — exactly that attempt's key, never "the key picked last" — and returns whether
   the key was taken out of the rotation, so the attempt should move to another key at
   once. ``RATE_LIMIT`` cools the key for the failure's ``retry_after`` (the provider's
   ``Retry-After``, ``retry-after-ms`` or rate-limit reset headers: headers rule 4), else
   for ``cooldown`` seconds; a cooling key is never picked before its time, and a shorter
   cooling never ends a longer one early. ``AUTH`` (401/403), ``QUOTA`` and
   ``CREDIT_LIMIT`` park the key until :meth:`KeyPool.reinstate`: reported once, at
   WARNING on the ``dshstream.adapters`` logger, naming the key by its label (never the
   key), while the other keys carry on. Any other failure (a server error, a timeout) is
   the provider's or the network's, not the key's: counted, nothing more.
4. **Nothing usable.** When every key is cooling or parked, :meth:`KeyPool.acquire`
   raises the real failure: the most recent failure of the keys that decide (the cooling
   ones when any cools, else the parked ones), its message saying that all N keys are
   cooling or parked and when the first is free, its ``retry_after`` the seconds until
   then. Nothing is sent; the attempt loop waits for that key as for any ``Retry-After``
   (attempts rule 3). With every key parked the failure is not retryable: the stream ends
   at once.
5. **State.** :meth:`KeyPool.state` is a snapshot for dashboards: one frozen
   :class:`KeyState` per key (label, uses, failures, cooling until — a Unix time —,
   parked, last failure code). No secret appears in a ``repr``, a state, a log line or a
   message.
6. **A callable.** ``pool()`` is a key picked as in rule 2, so a pool is
   accepted wherever a key callable is. The adapters use it through
   :class:`~dshstream._adapters.credentials.CredentialSource` (credentials rule 7): one
   lease per attempt, settled by the attempt loop's refresh question (attempts rule 3).

Replay state tied to a key stays the caller's concern: Gemini thought signatures are
valid only for the project that produced them, so a pool given to a Gemini adapter holds
keys of one project.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from .._core.errors import error_for, make_failure
from .._core.log import get_logger
from .._core.redact import redact, register_secret
from .._core.types import LlmFailure
from .._core.validate import check_api_key, invalid

log = get_logger("dshstream.adapters")

__all__ = ["COOLS", "PARKS", "KeyPool", "KeyState", "Lease"]

#: failure codes that cool a key down (rule 3)
COOLS = frozenset({"RATE_LIMIT"})
#: failure codes that park a key (rule 3)
PARKS = frozenset({"AUTH", "QUOTA", "CREDIT_LIMIT"})
_LABEL = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .:#/-]{0,63}")


@dataclass(frozen=True, slots=True)
class KeyState:
    """One key of a :class:`KeyPool`, as :meth:`KeyPool.state` saw it (no secret)."""

    #: the key's label: ``key #1``... by position, or the caller's own
    label: str
    #: attempts it was picked for
    uses: int
    #: failed attempts settled against it
    failures: int
    #: when its cooling ends, a Unix time (``time.time()``); ``None`` when it is not cooling
    cooling_until: float | None
    #: taken out of the rotation after ``AUTH``, ``QUOTA`` or ``CREDIT_LIMIT``
    parked: bool
    #: the code of its last failure, if any
    last_code: str | None

    @property
    def available(self) -> bool:
        """Whether it may be picked now: neither cooling nor parked."""
        return not self.parked and self.cooling_until is None


class Lease:
    """One attempt's key: what :meth:`KeyPool.acquire` hands out and :meth:`KeyPool.settle`
    takes back. Its ``repr`` names the label, never the key."""

    __slots__ = ("key", "label", "pool", "slot")

    def __init__(self, pool: KeyPool, slot: int, key: str, label: str) -> None:
        self.pool = pool
        self.slot = slot
        self.key = key
        self.label = label

    def __repr__(self) -> str:
        return f"Lease({self.label!r})"


class _Slot:
    """One key's mutable state, guarded by the pool's lock."""

    __slots__ = ("failure", "failures", "key", "label", "last_code", "parked", "settled", "until", "uses")

    def __init__(self, key: str, label: str) -> None:
        self.key = key
        self.label = label
        self.uses = 0
        self.failures = 0
        self.until = 0.0  # monotonic end of its cooling (0: not cooling)
        self.parked = False
        self.last_code: str | None = None
        self.failure: LlmFailure | None = None  # its last cooling or parking failure
        self.settled = 0.0  # when that failure was settled (monotonic)


class KeyPool:
    """Several API keys as one credential: ``api_key=KeyPool(["key-1", "key-2"])`` on any
    adapter (rule 1). Thread-safe; one pool may be given to several adapters.

    ``cooldown``: seconds a rate-limited key rests when the provider said nothing about
    when to come back (rule 3)."""

    __slots__ = ("_cursor", "_lock", "_slots", "cooldown")

    def __init__(self, keys: Sequence[str] | Mapping[str, str], *, cooldown: float = 2.0) -> None:
        pairs = _labelled(keys)
        self.cooldown = _seconds(cooldown, "KeyPool.cooldown")
        seen: dict[str, str] = {}
        for label, key in pairs:
            if key in seen:
                raise invalid(f"KeyPool: {label} repeats {seen[key]}; give each key once")
            seen[key] = label
            register_secret(key)
        self._slots = tuple(_Slot(key, label) for label, key in pairs)
        self._lock = threading.Lock()
        self._cursor = 0

    def __len__(self) -> int:
        return len(self._slots)

    def __repr__(self) -> str:
        labels = ", ".join(slot.label for slot in self._slots)
        return f"KeyPool({len(self._slots)} keys: {labels})"

    @property
    def labels(self) -> tuple[str, ...]:
        """The keys' labels, in order."""
        return tuple(slot.label for slot in self._slots)

    # ------------------------------------------------------------------ picking (rules 2, 4)

    def acquire(self, provider: str = "KeyPool") -> Lease:
        """A key for one attempt (rule 2), or, when none is usable, the real failure
        raised (rule 4)."""
        now = time.monotonic()
        with self._lock:
            lease = self._pick(now)
            if lease is not None:
                return lease
            earliest = min((s.until for s in self._slots if not s.parked), default=None)
            failure = self._exhausted(provider, now, earliest)
        raise error_for(failure)

    def _pick(self, now: float) -> Lease | None:
        count = len(self._slots)
        for step in range(count):
            index = (self._cursor + step) % count
            slot = self._slots[index]
            if slot.parked or slot.until > now:
                continue
            slot.until = 0.0
            slot.uses += 1
            self._cursor = (index + 1) % count
            return Lease(self, index, slot.key, slot.label)
        return None

    def _exhausted(self, provider: str, now: float, earliest: float | None) -> LlmFailure:
        """The real failure when no key is usable (rule 4); called under the lock."""
        count = len(self._slots)
        deciding = [s for s in self._slots if not s.parked] if earliest is not None else list(self._slots)
        known = [s for s in deciding if s.failure is not None]
        last = max(known, key=lambda s: s.settled).failure if known else None
        if earliest is None:
            state = f"all {count} keys of the pool are parked"
            retry_after = None
        else:
            wait = max(earliest - now, 0.001)
            at = datetime.fromtimestamp(time.time() + wait, tz=timezone.utc).strftime("%H:%M:%S")
            state = f"all {count} keys of the pool are cooling or parked; the first is free at {at} UTC, in {wait:.1f}s"
            retry_after = wait
        if last is None:  # no failure recorded (a state no settle leaves)
            return make_failure("RATE_LIMIT" if earliest is not None else "AUTH", f"{provider}: {state}",
                                provider=provider, retry_after=retry_after)
        headline = last.message
        if last.provider and headline.startswith(f"{last.provider}: "):
            headline = headline[len(last.provider) + 2 :]
        return replace(last, message=f"{provider}: {headline}; {state}", provider=provider,
                       retry_after=retry_after, diagnostics=None)

    def __call__(self) -> str:
        """A key picked now (rule 6)."""
        return self.acquire().key

    # ------------------------------------------------------------------ settling (rule 3)

    def settle(self, lease: Lease, failure: LlmFailure, provider: str = "KeyPool") -> bool:
        """Record the failure of the attempt that used ``lease``; ``True`` when its key was
        cooled or parked, so the attempt should move to another key at once (rule 3)."""
        if lease.pool is not self:
            raise invalid("KeyPool.settle: the lease belongs to another pool")
        code = failure.code
        kept = replace(failure, diagnostics=None)  # another stream's attempt is not this one
        parked_now = False
        with self._lock:
            slot = self._slots[lease.slot]
            slot.failures += 1
            slot.last_code = code
            if code in COOLS:
                rest = failure.retry_after if failure.retry_after is not None else self.cooldown
                slot.until = max(slot.until, time.monotonic() + rest)
                slot.failure, slot.settled = kept, time.monotonic()
            elif code in PARKS:
                parked_now = not slot.parked
                slot.parked = True
                slot.failure, slot.settled = kept, time.monotonic()
            left = sum(1 for s in self._slots if not s.parked)
        if parked_now:  # the one thread that parked it reports it (rule 3)
            status = f", HTTP {failure.status}" if failure.status is not None else ""
            log.warning(
                "%s: %s of the key pool parked after %s%s; %d of %d keys left",
                redact(provider), lease.label, code, status, left, len(self._slots),
            )
        return code in COOLS or code in PARKS

    def reinstate(self, label: str | None = None) -> None:
        """Put a parked or cooling key (by label; ``None``: every key) back in the rotation."""
        with self._lock:
            chosen = [s for s in self._slots if label is None or s.label == label]
            if not chosen:
                raise invalid(f"KeyPool.reinstate: no key is labelled {label!r}")
            for slot in chosen:
                slot.parked = False
                slot.until = 0.0
                slot.failure = None

    # ------------------------------------------------------------------ state (rule 5)

    def state(self) -> tuple[KeyState, ...]:
        """A snapshot of every key, in order (rule 5)."""
        now, wall = time.monotonic(), time.time()
        with self._lock:
            return tuple(
                KeyState(
                    label=s.label,
                    uses=s.uses,
                    failures=s.failures,
                    cooling_until=wall + (s.until - now) if s.until > now else None,
                    parked=s.parked,
                    last_code=s.last_code,
                )
                for s in self._slots
            )


def _labelled(keys: object) -> list[tuple[str, str]]:
    """``(label, key)`` pairs from a sequence (``key #N``) or a mapping (rule 1)."""
    if isinstance(keys, Mapping):
        raw = list(keys.items())
        for label, _ in raw:
            if not isinstance(label, str):
                raise invalid(f"KeyPool labels must be str, got {type(label).__name__}", wrong_type=True)
            if not _LABEL.fullmatch(label) or redact(label) != label:
                raise invalid(
                    "KeyPool labels are short plain names (letters, digits, '_ .:#/-', at most 64), "
                    "never a key"
                )
    elif isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
        raise invalid(
            f"KeyPool takes a list of keys or a mapping of labels to keys, got {type(keys).__name__}",
            wrong_type=True,
        )
    else:
        raw = [(f"key #{number}", key) for number, key in enumerate(keys, 1)]
    if not raw:
        raise invalid("KeyPool needs at least one key")
    pairs: list[tuple[str, str]] = []
    labels: set[str] = set()
    for label, key in raw:
        if label in labels:
            raise invalid(f"KeyPool: the label {label!r} is given twice")
        labels.add(label)
        checked = check_api_key(key, f"KeyPool {label}")
        if checked is None:
            raise invalid(f"KeyPool {label} is empty")
        pairs.append((label, checked))
    for label, key in pairs:  # a label that contains another key is a key in disguise
        if any(other in label for _, other in pairs if len(other) >= 4):
            raise invalid("KeyPool labels are short plain names, never a key")
    return pairs


def _seconds(value: object, field: str, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(f"{field} must be a number of seconds, got {type(value).__name__}", wrong_type=True)
    if not (value >= 0 if zero else value > 0) or value != value or value == float("inf"):
        raise invalid(f"{field} must be a finite number of seconds{' (0 or more)' if zero else ' above 0'}")
    return float(value)

