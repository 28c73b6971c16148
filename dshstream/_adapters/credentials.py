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
4. After an HTTP 401 the adapter calls :meth:`CredentialSource.invalidate` — which calls
   the callable's own ``invalidate()`` when it has one (dshstream's
   :class:`~dshstream._adapters.google_oauth.AuthorizedUserCredentials` drops its cached
   token) — and tries once more, only for a callable.
5. Nothing here shows a secret: :meth:`CredentialSource.describe` says ``set``,
   ``callable`` or ``none``.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Union

from .._core.errors import LlmError, error_for, make_failure
from .._core.redact import known_secrets, redact, register_secret, unregister_secret
from .._core.validate import check_api_key, check_credential, invalid

__all__ = ["HISTORY", "Credential", "CredentialSource"]

#: what ``api_key=`` accepts: a key, or a zero-argument callable returning the current one
Credential = Union[str, Callable[[], str]]
#: distinct values of one callable kept registered for redaction
HISTORY = 16


class CredentialSource:
    """The credential an adapter sends: a fixed key, a callable, or nothing."""

    __slots__ = ("_field", "_history", "_last", "_lock", "_value")

    def __init__(self, value: object, field: str = "api_key") -> None:
        checked = check_credential(value, field)
        self._value: Credential | None = checked
        self._field = field
        self._last: str | None = checked if isinstance(checked, str) else None
        self._history: deque[str] = deque()
        self._lock = threading.Lock()
        if self._last:
            register_secret(self._last)

    @property
    def is_callable(self) -> bool:
        """Whether the credential is asked for anew before every attempt."""
        return self._value is not None and not isinstance(self._value, str)

    @property
    def value(self) -> Credential | None:
        """The key or the callable, as configured."""
        return self._value

    @property
    def last(self) -> str | None:
        """The fixed key, or the value the callable returned last (``None`` before the first call)."""
        return self._last

    def describe(self) -> str:
        """``set``, ``callable`` or ``none`` (never the secret)."""
        if self._value is None:
            return "none"
        return "callable" if self.is_callable else "set"

    def get(self, provider: str) -> str | None:
        """The secret for one attempt: the fixed key, or the callable's current value
        (checked and registered for redaction, rules 2 and 3)."""
        source = self._value
        if source is None or isinstance(source, str):
            return source
        try:
            result: object = source()
        except LlmError:
            raise
        except Exception as exc:  # noqa: BLE001 - nothing foreign escapes (rule 3)
            detail = redact(f"{type(exc).__name__}: {exc}", known_secrets(), limit=1900)
            raise error_for(
                make_failure(
                    "AUTH",
                    f"{provider}: the {self._field} callable raised {type(exc).__name__} (AUTH)",
                    provider=provider,
                    detail=detail,
                )
            ) from None
        if result is None or result == "":
            raise invalid(f"{self._field}() returned no credential ({type(result).__name__} {result!r})")
        key = check_api_key(result, f"{self._field}()")
        assert key is not None
        self._remember(key)
        return key

    def invalidate(self) -> None:
        """A 401 came back: tell the callable, when it listens (``invalidate()``), to drop
        a cached value; its exceptions are ignored."""
        hook = getattr(self._value, "invalidate", None)
        if self.is_callable and callable(hook):
            try:
                hook()
            except Exception:  # noqa: BLE001 - the retry will show what is wrong
                pass

    def _remember(self, key: str) -> None:
        register_secret(key)
        with self._lock:
            self._last = key
            if key in self._history:
                return
            self._history.append(key)
            forgotten = self._history.popleft() if len(self._history) > HISTORY else None
        if forgotten is not None:
            unregister_secret(forgotten)
