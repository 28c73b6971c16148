"""Pool hooks: the sessions, pools and connections a send worker goes through, watched.

Contract: the hooks act only on a thread that is sending for a stream (its
:data:`sending` slot holds the stream, what :class:`Sending` describes); on any other
thread the watched classes behave exactly as urllib3's own (but for rule 5, which only
acts on a connection a stream noted a hint on), so a session works as before for its
owner's requests. The private urllib3 names relied on here are the three methods
overridden (``_get_conn``, ``_put_conn``, ``_new_conn``); the private attributes read are
read through :mod:`~dshstream._transport.readers`.

1. **Cut off before headers.** The pools of a watched session tell the sending stream
   which connection its worker checked out, and the connect hook registers each socket
   with it before the connect starts, so an abort ends a connect in progress at once
   (Linux), or a request waiting for its headers, instead of leaving the worker to run
   into its connect or read timeout.
2. **Nothing is written after an abort.** A worker checks its stream (abort, ``close()``,
   the cancel event, the limits) when its connect completes and before every write of the
   request, under the lock the stream's abort takes: a request the caller gave up is never
   sent (a provider would run and bill it), and its worker thread and socket end at once.
   The refusal is an ``OSError`` (:class:`Aborted`), which urllib3 handles as any failed
   connection; the caller's thread raises the abort's own error.
3. **A caller's session is watched too.** The ``HTTPAdapter`` objects mounted on a
   ``session=`` (and their proxy managers) build watched pools, exactly as the
   transport's own session (:func:`new_session`) does; an aborted connection is dropped,
   never pooled. Pools it had opened already are switched to the watched classes
   (urllib3's own pool classes only: the watched ones add methods, nothing else); custom
   pool or connection classes get the checkout hook, not the connect hook. Adapters
   mounted later are watched at their first stream (:func:`watch_session` runs before
   every send).
4. **Sent on the caller's thread where every step can be cut.** :func:`inline_safe` says
   whether a request may be sent on the caller's own thread instead of a send worker
   (:mod:`~dshstream._transport.stream` rule 1): its adapter is ``requests``' own (or the
   transport's), whose pools are all watched. A pool whose connects are not hooked (a
   custom or SOCKS proxy pool, found when the connection is checked out, before anything
   is connected or written) refuses the inline send with :class:`NotInline`, and the
   request is sent on a worker instead. Every other step is one an abort cuts by shutting
   a socket down — HTTP proxies and their ``CONNECT`` tunnels included — except a host
   name's lookup, which :func:`_connect` runs on a resolver thread while the caller's
   thread waits in ticks it can leave (:func:`resolve`): a thread per new connection to a
   named host, none per request.
5. **Not reused past the server's keep-alive hint.** A server that says how long it keeps
   an idle connection (``Keep-Alive: timeout=N``: llama.cpp, Node and Apache say 5 s) closes
   it then, and a request sent on it as the close happens fails before any answer — a
   POST that must not be resent (RFC 9112 9.3.1). So a stream notes the hint on its
   connection (:func:`note_keep_alive`), the pool stamps when the connection went back
   idle, and a checkout closes one idle for longer than the hint less a margin (1 s, or half
   a short hint), as urllib3 closes one it finds dropped: the request opens a new
   connection instead. A connection no stream noted a hint on is reused as urllib3 would.
6. **Enough idle connections for concurrent streams.** The transport's own session keeps
   up to :data:`POOL_SIZE` idle connections per host (``requests`` keeps 10: a service
   streaming from more threads than that closed every extra connection as it went idle,
   so the next request paid a new TCP and TLS handshake, and urllib3 logged a WARNING for
   each). A connection coming back to a watched pool that is full (more streams at once
   than its size, or a caller's smaller pool) is closed with a DEBUG line, not urllib3's
   WARNING; a blocking pool (``pool_block=True``) keeps urllib3's own behaviour.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, Protocol

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.exceptions
import urllib3.util.connection

from .._core.headers import keep_alive_seconds
from .._core.log import get_logger
from .environment import EnvironmentSession
from .readers import dns_host

__all__ = [
    "Aborted",
    "NotInline",
    "POOL_SIZE",
    "Sending",
    "WatchedPoolMixin",
    "inline_safe",
    "new_session",
    "note_keep_alive",
    "resolve",
    "sending",
    "watch_session",
]

log = get_logger("dshstream.transport")


class Sending(Protocol):
    """The stream a worker thread sends for, as the hooks see it."""

    def attach(self, *, conn: Any = None, sock: socket.socket | None = None) -> bool:
        """Register the checked-out connection or the connecting socket; ``False`` once
        the stream is stopped (rule 2)."""

    def stopped(self) -> bool:
        """Whether the worker must not go on (rule 2)."""

    @property
    def inline(self) -> bool:
        """Whether it is sent on the caller's own thread (rule 4)."""


#: ``sending.stream``: the stream the current thread is sending for, or ``None`` (rules 1, 2)
sending = threading.local()


class Aborted(ConnectionAbortedError):
    """A worker's request refused because its stream was aborted (rule 2); urllib3 treats
    it as any failed connection, and the caller's thread raises the abort's own error."""


class NotInline(Exception):
    """An inline send reached a pool whose connects are not hooked: nothing was connected
    or written, and the request goes to a send worker (rule 4). Not an ``OSError``, so
    neither urllib3 nor requests handles it on the way out."""


class WatchedPoolMixin:
    """Tells the worker's stream which connection it checked out, so an abandoned request
    can be cut off (rule 1); refuses an inline send where connects are not hooked (rule 4)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        if conn is not None and _past_keep_alive(conn):
            conn.close()  # rule 5: http.client connects it again when the request is sent
        stream: Sending | None = getattr(sending, "stream", None)
        if stream is not None:
            if stream.inline and type(self) not in _HOOKED:
                # urllib3 puts a fresh slot back for the connection it never got
                if conn is not None:
                    conn.close()
                raise NotInline(type(self).__name__)
            stream.attach(conn=conn)
        return conn

    def _put_conn(self, conn: Any) -> None:
        if conn is not None and getattr(conn, _HINT, None) is not None:
            setattr(conn, _IDLE_SINCE, time.monotonic())  # rule 5
        idle = getattr(self, "pool", None)
        if conn is not None and idle is not None and not getattr(self, "block", True) and idle.full():  # rule 6
            conn.close()
            log.debug("connection pool for %s is full (%d idle): a connection was closed", self.host, idle.qsize())  # type: ignore[attr-defined]
            return
        super()._put_conn(conn)  # type: ignore[misc]


#: the attributes rule 5 keeps on a connection: the server's hint, when it went idle
_HINT = "_dshstream_keep_alive"
_IDLE_SINCE = "_dshstream_idle_since"


def note_keep_alive(conn: Any, headers: Mapping[str, str]) -> None:
    """Rule 5: keep the ``Keep-Alive`` timeout of the response just received on ``conn``
    (``headers``: ``requests``' case-insensitive mapping, one lookup)."""
    if conn is None:
        return
    try:
        setattr(conn, _HINT, keep_alive_seconds(headers.get("keep-alive")))
        setattr(conn, _IDLE_SINCE, None)
    except Exception:  # noqa: BLE001 - a connection class that takes no attributes: reused as before
        pass


def _past_keep_alive(conn: Any) -> bool:
    """Whether ``conn`` has been idle longer than its server's hint allows (rule 5)."""
    hint: float | None = getattr(conn, _HINT, None)
    since: float | None = getattr(conn, _IDLE_SINCE, None)
    if hint is None or since is None:
        return False
    return time.monotonic() - since > hint - min(1.0, hint / 2)


class _WatchedConnectionMixin:
    """Connects a worker's socket where its stream can cut it, and writes nothing after an
    abort (rules 1, 2). Inert on any other thread."""

    def _new_conn(self) -> Any:
        stream: Sending | None = getattr(sending, "stream", None)
        if stream is None:
            return super()._new_conn()  # type: ignore[misc]
        return _connect(self, stream)

    def send(self, data: Any) -> None:
        stream: Sending | None = getattr(sending, "stream", None)
        if stream is not None and stream.stopped():
            raise Aborted("the stream was aborted; nothing is sent")
        super().send(data)  # type: ignore[misc]


class _WatchedHTTPConnection(_WatchedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _WatchedHTTPConnectionPool(WatchedPoolMixin, urllib3.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(WatchedPoolMixin, urllib3.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


#: urllib3's own pool classes and their watched subclasses (same layout: an open pool's
#: class can be switched, rule 3)
_WATCHED_POOLS: dict[type, type] = {
    urllib3.HTTPConnectionPool: _WatchedHTTPConnectionPool,
    urllib3.HTTPSConnectionPool: _WatchedHTTPSConnectionPool,
}
_WATCHED_LOCK = threading.Lock()


def _watched_pool_class(cls: type) -> type:
    """``cls`` with the checkout hook (and the connect hook for urllib3's own connection
    classes); made once per class."""
    if issubclass(cls, WatchedPoolMixin):
        return cls
    with _WATCHED_LOCK:
        watched = _WATCHED_POOLS.get(cls)
        if watched is None:
            attrs: dict[str, Any] = {"__module__": __name__}
            connection = getattr(cls, "ConnectionCls", None)
            if connection is urllib3.connection.HTTPConnection:
                attrs["ConnectionCls"] = _WatchedHTTPConnection
            elif connection is urllib3.connection.HTTPSConnection:
                attrs["ConnectionCls"] = _WatchedHTTPSConnection
            watched = _WATCHED_POOLS[cls] = type(f"Watched{cls.__name__}", (WatchedPoolMixin, cls), attrs)
        return watched


def _watch_manager(manager: Any) -> None:
    """Make ``manager`` (a urllib3 ``PoolManager``) build watched pools, and switch its open
    stock pools to them (rule 3). Cheap when it is watched already."""
    classes = getattr(manager, "pool_classes_by_scheme", None)
    if not isinstance(classes, dict) or all(
        issubclass(cls, WatchedPoolMixin) for cls in classes.values() if isinstance(cls, type)
    ):
        return
    # A copy: by default the manager holds urllib3's module-wide dict.
    manager.pool_classes_by_scheme = {
        scheme: _watched_pool_class(cls) if isinstance(cls, type) else cls for scheme, cls in classes.items()
    }
    pools = getattr(manager, "pools", None)
    try:
        opened = [pools[key] for key in pools.keys()] if pools is not None else []
    except Exception:  # noqa: BLE001 - a pool evicted meanwhile: watch the others next time
        opened = []
    for pool in opened:
        if type(pool) in (urllib3.HTTPConnectionPool, urllib3.HTTPSConnectionPool):
            pool.__class__ = _WATCHED_POOLS[type(pool)]  # methods added, nothing else


def watch_session(session: requests.Session) -> None:
    """Rule 3: the pools of every ``HTTPAdapter`` mounted on ``session`` are watched."""
    try:
        for adapter in list(getattr(session, "adapters", {}).values()):
            if isinstance(adapter, requests.adapters.HTTPAdapter):
                _watch_manager(getattr(adapter, "poolmanager", None))
                for manager in list(getattr(adapter, "proxy_manager", {}).values()):
                    _watch_manager(manager)
    except Exception as exc:  # noqa: BLE001 - an exotic adapter or pool: sent unwatched, as before
        log.debug("session not watched: %s", type(exc).__name__)


#: the watched stock pool classes: their connects and writes are all hooked (rule 4)
_HOOKED = frozenset({_WatchedHTTPConnectionPool, _WatchedHTTPSConnectionPool})


def inline_safe(session: requests.Session, url: str) -> bool:
    """Whether the request may be sent on the caller's thread (rule 4): ``requests``' own
    adapter (or the transport's) serves ``url``; its pools refuse it if they must."""
    try:
        adapter = session.get_adapter(url)
    except Exception:  # noqa: BLE001 - no adapter: requests raises the same on the worker
        return False
    return type(adapter) in (_WatchedAdapter, requests.adapters.HTTPAdapter)


def _literal(host: str) -> bool:
    """Whether ``host`` is an IPv4 or IPv6 address (no lookup needed)."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except (OSError, ValueError):
            continue
        return True
    return False


#: seconds between two looks at the stream while a name is resolved (rule 4)
_RESOLVE_TICK = 0.05


def resolve(host: str, port: int, family: int, stream: Sending) -> list[Any]:
    """``socket.getaddrinfo`` for a connect. For a stream sent on the caller's thread and
    a host name (not an IP literal), the lookup runs on a ``dshstream-resolve`` thread and
    the caller waits for it in ticks, leaving with :class:`Aborted` once the stream is
    stopped: a lookup can't be cut by a socket shutdown (rule 4)."""
    if not stream.inline or _literal(host):
        return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    done = threading.Event()
    outcome: list[Any] = []

    def lookup() -> None:
        try:
            outcome.append(socket.getaddrinfo(host, port, family, socket.SOCK_STREAM))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome.append(exc)
        done.set()

    threading.Thread(target=lookup, name="dshstream-resolve", daemon=True).start()
    while not done.wait(_RESOLVE_TICK):
        if stream.stopped():
            raise Aborted("the stream was aborted while its host name was resolved")
    if stream.stopped():
        raise Aborted("the stream was aborted while its host name was resolved")
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    addresses: list[Any] = result
    return addresses


class _WatchedAdapter(requests.adapters.HTTPAdapter):
    """``requests``' adapter whose pools are watched (the same pools otherwise)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _watch_manager(self.poolmanager)

    def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(*args, **kwargs)
        _watch_manager(manager)
        return manager


#: idle connections per host the transport's own session keeps (rule 6)
POOL_SIZE = 64


def new_session() -> requests.Session:
    """A ``requests.Session`` whose abandoned requests can be cut off before headers, with
    room for :data:`POOL_SIZE` idle connections per host (rule 6)."""
    session = EnvironmentSession()  # the environment read per send only where it can matter
    session.mount("http://", _WatchedAdapter(pool_maxsize=POOL_SIZE))
    session.mount("https://", _WatchedAdapter(pool_maxsize=POOL_SIZE))
    return session


def _connect(conn: Any, stream: Sending) -> socket.socket:
    """urllib3's ``create_connection`` for a worker: each socket is registered with
    ``stream`` before it connects, and checked once connected (rules 1, 2)."""
    host = dns_host(conn)
    timeout = conn.timeout
    try:
        addresses = resolve(host, conn.port, urllib3.util.connection.allowed_gai_family(), stream)
    except Aborted as exc:
        raise urllib3.exceptions.NewConnectionError(conn, f"Connection aborted: {exc}") from exc
    except OSError as exc:
        raise urllib3.exceptions.NewConnectionError(conn, f"Failed to resolve {host!r} ({exc})") from exc
    error: OSError | None = None
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            if not stream.attach(sock=sock):
                raise Aborted("the stream was aborted before its connect")
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if timeout is None or isinstance(timeout, (int, float)):  # not urllib3's "default" token
                sock.settimeout(timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            if stream.stopped():  # an abort just now found no connect to cut
                raise Aborted("the stream was aborted before its connect")
            sock.connect(address)
            if stream.stopped():  # the connect outlived an abort: send nothing
                raise Aborted("the stream was aborted while it connected")
        except OSError as exc:
            sock.close()
            if stream.stopped():
                raise urllib3.exceptions.NewConnectionError(conn, f"Connection aborted: {exc}") from exc
            error = exc
            continue
        sys.audit("http.client.connect", conn, conn.host, conn.port)
        return sock
    if isinstance(error, TimeoutError):
        raise urllib3.exceptions.ConnectTimeoutError(
            conn, f"Connection to {conn.host} timed out. (connect timeout={timeout})"
        ) from error
    raise urllib3.exceptions.NewConnectionError(
        conn, f"Failed to establish a new connection: {error or 'no address'}"
    ) from error
