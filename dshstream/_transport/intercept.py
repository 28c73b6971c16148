"""The interception hook: what :class:`~dshstream._transport.client.HttpTransport` sends
through while a cassette is in use (``dshstream.testing.use_cassette``, the pytest plugin).

Contract: stdlib only; no ``requests``, no sockets. The hook lives here, in the transport,
so that it reaches every request made over HTTP — whatever built the adapter, and when:
an adapter made at import time, deep inside an application, before the test began, sends
through the cassette all the same, and so do the OAuth token fetches the credentials make.

1. **Process-wide, one at a time.** :func:`install` puts an :class:`Interceptor` in place
   for every thread of the process (a web app's worker threads, a thread pool) until
   :func:`remove` takes it away; installs nest, the latest one acting, and removing one
   that is not the latest leaves the others in place. Both are thread-safe; an exchange
   asks once, before it sends: :func:`current`, or the same read of :data:`installed`
   inline (the HTTP transport's, no call when none is in place).
2. **HTTP only, real sends direct.** Only :class:`~dshstream._transport.client.HttpTransport`
   asks: a transport given explicitly that is not one (``MemoryTransport``, your own) is
   never intercepted. The interceptor gets the transport and sends for real with its
   ``send_direct`` (its session, its connect timeout), which never asks the hook again.
3. **The outcome is the exchange's.** What the interceptor returns or raises is what the
   exchange returns or raises: a stream with its status and headers in, or a classified
   :class:`~dshstream._core.errors.LlmError`; the transport judges the answer afterwards
   as it judges any other (:mod:`~dshstream._transport.base` rule 2).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, NamedTuple, Protocol

from .._core.http_request import HttpRequest
from .watchdog import Limits

if TYPE_CHECKING:
    from .client import HttpTransport
    from .stream import HttpStream

__all__ = ["Exchange", "Interceptor", "current", "install", "installed", "remove"]


class Exchange(NamedTuple):
    """One request about to be sent: ``data`` its body bytes, under ``limits`` (the idle
    clock running from ``started``; ``now`` the time of the check)."""

    method: str
    request: HttpRequest
    data: bytes | None
    limits: Limits
    started: float
    now: float


class Interceptor(Protocol):
    """Sends one exchange in place of an :class:`HttpTransport` (rules 2, 3)."""

    def exchange(self, transport: HttpTransport, exchange: Exchange) -> HttpStream:
        """The exchange's stream, headers in, or the classified failure raised."""


_lock = threading.Lock()
#: the interceptors in place, the latest last (rule 1): changed only by :func:`install` and
#: :func:`remove`, in place (never rebound), so a transport may read it without a call
installed: list[Interceptor] = []


def install(interceptor: Interceptor) -> Interceptor:
    """Put ``interceptor`` in place for the whole process (rule 1); returns it, the token
    :func:`remove` takes."""
    with _lock:
        installed.append(interceptor)
    return interceptor


def remove(interceptor: Interceptor) -> None:
    """Take ``interceptor`` away (idempotent); the others stay in place (rule 1)."""
    with _lock:
        for at in range(len(installed) - 1, -1, -1):
            if installed[at] is interceptor:
                del installed[at]
                return


def current() -> Interceptor | None:
    """The interceptor in place now (the latest installed), or ``None``."""
    return installed[-1] if installed else None
