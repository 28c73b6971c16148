"""HttpTransport: the transport over a ``requests.Session``.

Contract: one session per transport (the caller's ``session=``, or a new watched one);
:meth:`HttpTransport._exchange` is all it adds to
:class:`~dshstream._transport.base.BaseTransport`: an :class:`~dshstream._transport.stream.HttpStream`
made before the request is sent, then sent.

1. **A watched session.** The transport's own session is :func:`new_session` (looked up
   on the package when the transport is made, so a test may substitute the factory); a
   caller's session is watched (:mod:`~dshstream._transport.pool` rule 3) when the
   transport is made and again before every send.
2. **Socket timeouts within the limits.** The connect timeout (``connect_timeout``,
   default :data:`DEFAULT_CONNECT_TIMEOUT`) is capped by the time left before the
   deadline; the read timeout is the idle timeout, capped the same way. They back up the
   watchdog, which ends a stream at its limits whatever the socket does.
3. **Intercepted while a cassette is in use.** Each exchange first asks the interception
   hook (:func:`~dshstream._transport.intercept.current`, read inline); an interceptor in place sends
   it instead (a cassette records or replays it), and sends for real through
   :meth:`HttpTransport.send_direct`, which is the exchange itself and never asks again.
4. **TLS and proxies on every send.** The transport's
   :class:`~dshstream._transport.tls.ConnectionSettings` (``verify``, ``client_cert``,
   ``trust_store``, ``proxies``; :mod:`~dshstream._transport.tls`) are prepared on its
   session when it is made and passed with every send, whatever the call (a stream, a
   model list, a token endpoint).
5. **No thread per request.** A request :func:`~dshstream._transport.pool.inline_safe`
   allows is sent on the caller's thread (stream rule 1), any other on a send worker.
6. **No ``.netrc`` credentials.** ``requests`` applies a ``~/.netrc`` entry for the host
   (or its ``default`` entry) as Basic auth to any request sent without ``auth`` — over the
   adapter's ``Authorization`` header (an OpenAI key replaced: a 401), beside an
   ``x-api-key`` (the netrc password sent to the provider). Every send passes an ``auth``
   that changes nothing (:func:`_headers_as_built`), so the request goes out with the
   headers its auth flow built; a caller's ``session.auth`` is left to apply as before.
"""

from __future__ import annotations

from typing import Any

import requests

from .._core.http_request import HttpRequest
from . import intercept
from .base import BaseTransport
from .pool import inline_safe, watch_session
from .stream import HttpStream
from .tls import ConnectionSettings
from .watchdog import Limits

__all__ = ["DEFAULT_CONNECT_TIMEOUT", "HttpTransport", "Session"]

#: the session type adapters accept (re-exported so no other module imports requests)
Session = requests.Session

#: seconds a connect may take (rule 2)
DEFAULT_CONNECT_TIMEOUT = 10.0


def _headers_as_built(prepared: requests.PreparedRequest) -> requests.PreparedRequest:
    """Rule 6: an ``auth`` for ``requests`` that leaves the request as it is."""
    return prepared


def _new_session() -> requests.Session:
    # The package's factory, looked up now: tests replace ``dshstream._transport.new_session``.
    from . import new_session

    return new_session()


class HttpTransport(BaseTransport[HttpStream]):
    """Sends :class:`HttpRequest` values with a ``requests.Session`` (one per transport)."""

    def __init__(
        self,
        session: requests.Session | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        connection: ConnectionSettings | None = None,
    ) -> None:
        self.session = session if session is not None else _new_session()
        self.connect_timeout = connect_timeout
        #: TLS and proxy settings, passed with every send (rule 4)
        self.connection = connection if connection is not None else ConnectionSettings()
        self.connection.prepare(self.session)
        watch_session(self.session)  # pool rule 3

    def __repr__(self) -> str:
        return f"HttpTransport(connect_timeout={self.connect_timeout!r}, connection={self.connection!r})"

    def _exchange(
        self, method: str, request: HttpRequest, data: bytes | None, limits: Limits, started: float, now: float
    ) -> HttpStream:
        exchange = intercept.Exchange(method, request, data, limits, started, now)
        installed = intercept.installed  # rule 3: intercept.current(), read inline
        if installed:
            return installed[-1].exchange(self, exchange)
        return self.send_direct(exchange)

    def send_direct(self, exchange: intercept.Exchange) -> HttpStream:
        """Send ``request`` over this transport's session, never intercepted (rules 2, 3):
        the stream with its status and headers in, or the classified failure raised."""
        method, request, data, limits, started, now = exchange
        connect_timeout = self.connect_timeout
        read_timeout = limits.read_timeout
        if limits.deadline is not None:  # rule 2
            remaining = max(0.001, limits.deadline - now)
            connect_timeout = min(connect_timeout, remaining)
            read_timeout = remaining if read_timeout is None else min(read_timeout, remaining)
        stream = HttpStream(request, limits, started)
        kwargs: dict[str, Any] = {
            "url": request.url,
            "headers": dict(request.headers),
            "timeout": (connect_timeout, read_timeout),
        }
        if data is not None:
            kwargs["data"] = data
        kwargs.update(self.connection.send_kwargs(self.session))  # rule 4
        if self.session.auth is None:
            kwargs["auth"] = _headers_as_built  # rule 6
        watch_session(self.session)  # pool rule 3: adapters mounted since, proxy managers made since
        stream.send(self.session, method, kwargs, inline=inline_safe(self.session, request.url))
        return stream
