"""Transport: the only module that imports ``requests`` (and ``urllib3``).

Contract:

1. **Prompt reads.** A body is read with the first ``read1`` on offer: urllib3's own
   (2.2 and later) or, on older urllib3 (1.26, 2.0, 2.1), the underlying
   ``http.client`` response's, decompressing gzip/deflate here. Either way every byte
   reaches the caller as soon as it arrives, on chunked and close-delimited bodies alike
   (never ``iter_lines()``: a CRLF split across reads dispatches a half-built event; never
   ``iter_content(chunk_size=None)`` or ``raw.read(n)`` on a close-delimited body: they
   wait for ``n`` bytes or EOF).
2. **No redirects.** Redirects are never followed (``allow_redirects=False`` on every
   request): a credential goes only to the host it was configured for. A 3xx answer is a
   ``REDIRECT`` failure (not retryable) naming the ``base_url`` to check; the
   ``Location`` goes, redacted, into ``detail``.
3. **Limits hold from the first connect.** A request is sent on a short-lived worker
   thread while the caller waits on an event, so the total ``deadline``, the content-idle
   clock (header bytes are not content), the ``cancel`` event and ``abort()`` end it
   within one watchdog tick (~50 ms) while it is connecting, sending or waiting for
   headers, exactly as they do once the body flows. The connect timeout is capped by the
   time left; a worker left behind is cut off by shutting its socket down: the pools of a
   watched session (rule 10) tell the stream which connection its worker checked out and
   which socket it is connecting, before the connect starts, so an abort ends a connect in
   progress at once (Linux) instead of leaving the worker to finish it.
4. **Watchdog.** A blocked body read never outlives its limits: one shared daemon thread
   shuts the socket down when the caller cancels, when no content arrived for
   ``idle_timeout`` (keep-alives are liveness, not content: the consumer calls
   :meth:`HttpStream.touch` on content) or when the total ``timeout`` ran out.
   ``abort()`` does the same from any thread.
5. **Bounded bodies.** A non-2xx body is read up to :data:`ERROR_BODY_LIMIT` bytes and
   classified into an :class:`LlmError`; a non-stream JSON body (``get_json``, and
   ``post_form``: a form POST such as an OAuth token refresh) up to
   :data:`JSON_BODY_LIMIT` (or the caller's smaller limit) within a total time limit. A 2xx HTML page (captive portal,
   proxy login) is a ``MALFORMED_RESPONSE`` failure saying so.
6. **Foreign exceptions** are mapped here, once, into an :class:`LlmError` whose detail
   is redacted; they are never chained raw (their text can carry a key in a URL).
   Header-derived fields (request ids) are dropped when they echo a credential.
7. **Bulk reads.** An identity (uncompressed) body of an HTTP/1.1 ``http.client`` answer
   is read from its buffered socket file directly: a ``Transfer-Encoding: chunked`` body
   with ``read1(65536)`` (what is there, at most one system call: the first event is not
   delayed) unframed by :class:`~dshstream._core.chunked.ChunkedDecoder`, many HTTP chunks
   per read instead of one read (and urllib3's and http.client's per-chunk calls) per
   chunk; a close-delimited body with ``http.client``'s own ``read1``. At the end of a
   chunked body the answer is closed as ``http.client`` closes it, and the connection
   goes back to the pool only when nothing followed the body. Anything unusual
   (compression, another HTTP version, unknown response or file types, urllib3 having
   read already, a ``Content-Length`` body) takes the standard path of rule 1. Malformed
   framing or a body cut short is a ``TRANSPORT`` failure, as it is on that path.
8. **A GET is tried twice.** ``get_json`` (an idempotent GET: model lists, metadata) that
   fails with ``TRANSPORT`` — typically a pooled keep-alive connection the server had
   already closed (llama.cpp's server closes idle ones after 5 s) — is sent once more at
   once on a fresh connection, within the same total time limit. Streams are POSTs: their
   retries are the adapter's policy, never this layer's.
9. **Nothing is written after an abort.** A worker checks its stream (abort, ``close()``,
   the cancel event, the limits) when its connect completes and before every write of the
   request, under the lock :meth:`HttpStream.abort` takes, and an abort shuts the socket
   it registered: a request the caller gave up is never sent (a provider would run and
   bill it), and its worker thread and socket end at once, not at the connect timeout.
10. **A caller's session is watched too.** The ``HTTPAdapter`` objects mounted on a
    ``session=`` (and their proxy managers) build watched pools, exactly as the
    transport's own session does: the hooks act only on dshstream's send workers, so the
    session works as before for the caller's own requests and after any cancel (an aborted
    connection is dropped, never pooled). Pools it had opened already are switched to the
    watched classes (urllib3's own pool classes only); custom pool or connection classes
    get the checkout hook, not the connect hook. Adapters mounted later are watched at
    their first stream.
11. **A short release.** After the stream's terminal marker, handing the connection back
    (reading what is left of the body: the chunked terminator) takes at most
    :data:`RELEASE_WAIT` seconds in all, however the bytes trickle; anything after the end
    (pings, stray bytes, an endless trailer) or no end within that time closes the
    connection instead of reusing it.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

import requests
import requests.adapters
import urllib3
import urllib3.connection
import urllib3.exceptions
import urllib3.util.connection

from ._core.chunked import ChunkedDecoder
from ._core.classify import classify_error_payload, classify_http_error
from ._core.errors import LlmError, cancelled_failure, cancelled_message, error_for, make_failure
from ._core.headers import request_id_from
from ._core.http_request import HttpRequest
from ._core.log import get_logger
from ._core.redact import redact
from ._core.types import LlmFailure

log = get_logger("dshstream.transport")

#: the session type adapters accept (re-exported so no other module imports requests)
Session = requests.Session

DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_CONNECT_TIMEOUT = 10.0
#: total time limit of a non-streamed JSON request (``list_models``), seconds
DEFAULT_JSON_TIMEOUT = 30.0
#: the most bytes read from an error body
ERROR_BODY_LIMIT = 65536
#: the most bytes read from a non-streamed JSON body (a model list)
JSON_BODY_LIMIT = 16 * 1024 * 1024
_READ_SIZE = 65536
_WATCH_INTERVAL = 0.05
#: the most seconds handing a finished stream's connection back takes (rule 11)
RELEASE_WAIT = 0.05
_NO_DECODE = ("", "identity")
#: rule 7 on (tests turn it off to compare with the standard path)
BULK_READS = True

Reader = Callable[[], bytes]


class _Watchdog:
    """One daemon thread that enforces cancel and time limits on every open stream."""

    def __init__(self) -> None:
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="dshstream-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()

    def remove(self, stream: HttpStream) -> None:
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
            time.sleep(_WATCH_INTERVAL)


_watchdog = _Watchdog()

# The stream a worker thread is sending, for the pool and connection hooks (rules 3, 9).
_sending = threading.local()


class _Aborted(ConnectionAbortedError):
    """A worker's request refused because its stream was aborted (rule 9); urllib3 treats
    it as any failed connection, and the caller's thread raises the abort's own error."""


class _WatchedPoolMixin:
    """Tells the worker's stream which connection it checked out, so an abandoned request
    can be cut off (rule 3)."""

    def _get_conn(self, timeout: float | None = None) -> Any:
        conn = super()._get_conn(timeout)  # type: ignore[misc]
        stream: HttpStream | None = getattr(_sending, "stream", None)
        if stream is not None:
            stream._attach(conn=conn)
        return conn


class _WatchedConnectionMixin:
    """Connects a worker's socket where its stream can cut it, and writes nothing after an
    abort (rule 9). Inert on any other thread."""

    def _new_conn(self) -> Any:
        stream: HttpStream | None = getattr(_sending, "stream", None)
        if stream is None:
            return super()._new_conn()  # type: ignore[misc]
        return _connect(self, stream)

    def send(self, data: Any) -> None:
        stream: HttpStream | None = getattr(_sending, "stream", None)
        if stream is not None and stream._stopped():
            raise _Aborted("the stream was aborted; nothing is sent")
        super().send(data)  # type: ignore[misc]


class _WatchedHTTPConnection(_WatchedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class _WatchedHTTPSConnection(_WatchedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class _WatchedHTTPConnectionPool(_WatchedPoolMixin, urllib3.HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSConnectionPool(_WatchedPoolMixin, urllib3.HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


#: urllib3's own pool classes and their watched subclasses (same layout: an open pool's
#: class can be switched, rule 10)
_WATCHED_POOLS: dict[type, type] = {
    urllib3.HTTPConnectionPool: _WatchedHTTPConnectionPool,
    urllib3.HTTPSConnectionPool: _WatchedHTTPSConnectionPool,
}
_WATCHED_LOCK = threading.Lock()


def _watched_pool_class(cls: type) -> type:
    """``cls`` with the checkout hook (and the connect hook for urllib3's own connection
    classes); made once per class."""
    if issubclass(cls, _WatchedPoolMixin):
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
            watched = _WATCHED_POOLS[cls] = type(f"Watched{cls.__name__}", (_WatchedPoolMixin, cls), attrs)
        return watched


def _watch_manager(manager: Any) -> None:
    """Make ``manager`` (a urllib3 ``PoolManager``) build watched pools, and switch its open
    stock pools to them (rule 10). Cheap when it is watched already."""
    classes = getattr(manager, "pool_classes_by_scheme", None)
    if not isinstance(classes, dict) or all(
        issubclass(cls, _WatchedPoolMixin) for cls in classes.values() if isinstance(cls, type)
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


def _watch_session(session: requests.Session) -> None:
    """Rule 10: the pools of every ``HTTPAdapter`` mounted on ``session`` are watched."""
    try:
        for adapter in list(getattr(session, "adapters", {}).values()):
            if isinstance(adapter, requests.adapters.HTTPAdapter):
                _watch_manager(getattr(adapter, "poolmanager", None))
                for manager in list(getattr(adapter, "proxy_manager", {}).values()):
                    _watch_manager(manager)
    except Exception as exc:  # noqa: BLE001 - an exotic adapter or pool: sent unwatched, as before
        log.debug("session not watched: %s", type(exc).__name__)


class _WatchedAdapter(requests.adapters.HTTPAdapter):
    """``requests``' adapter whose pools are watched (the same pools otherwise)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        _watch_manager(self.poolmanager)

    def proxy_manager_for(self, *args: Any, **kwargs: Any) -> Any:
        manager = super().proxy_manager_for(*args, **kwargs)
        _watch_manager(manager)
        return manager


def new_session() -> requests.Session:
    """A ``requests.Session`` whose abandoned requests can be cut off before headers."""
    session = requests.Session()
    session.mount("http://", _WatchedAdapter())
    session.mount("https://", _WatchedAdapter())
    return session


def _connect(conn: Any, stream: HttpStream) -> socket.socket:
    """urllib3's ``create_connection`` for a worker: each socket is registered with
    ``stream`` before it connects, and checked once connected (rule 9)."""
    host = conn._dns_host
    if host.startswith("["):
        host = host.strip("[]")
    timeout = conn.timeout
    try:
        addresses = socket.getaddrinfo(
            host, conn.port, urllib3.util.connection.allowed_gai_family(), socket.SOCK_STREAM
        )
    except OSError as exc:
        raise urllib3.exceptions.NewConnectionError(conn, f"Failed to resolve {host!r} ({exc})") from exc
    error: OSError | None = None
    for family, kind, proto, _, address in addresses:
        sock = socket.socket(family, kind, proto)
        try:
            if not stream._attach(sock=sock):
                raise _Aborted("the stream was aborted before its connect")
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if timeout is None or isinstance(timeout, (int, float)):  # not urllib3's "default" token
                sock.settimeout(timeout)
            if conn.source_address:
                sock.bind(conn.source_address)
            if stream._stopped():  # an abort just now found no connect to cut
                raise _Aborted("the stream was aborted before its connect")
            sock.connect(address)
            if stream._stopped():  # the connect outlived an abort: send nothing
                raise _Aborted("the stream was aborted while it connected")
        except OSError as exc:
            sock.close()
            if stream._stopped():
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


class HttpStream:
    """One request and its streaming response: iterate for byte pieces; always closed.

    It exists before the request is sent, so the watchdog covers every phase (rule 3).
    """

    def __init__(
        self,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        started: float,
    ) -> None:
        self.response: requests.Response | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self.request_id: str | None = None
        self._request = request
        self._provider = provider
        self._cancel = cancel
        self._idle_timeout = idle_timeout
        self._deadline = deadline
        self._last_content = started
        self._abort_code: str | None = None
        self._abort_message = ""
        #: bytes read ahead (while checking what the body is), handed out first
        self.prefix = b""
        self._closed = False
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._outcome: requests.Response | BaseException | None = None
        self._conn: Any = None  # the connection a worker checked out (rule 3)
        self._sock: socket.socket | None = None  # the socket a worker is connecting (rule 9)
        self._read: Reader | None = None
        _watchdog.add(self)

    # ------------------------------------------------------------------ sending

    def send(self, session: requests.Session, method: str, kwargs: dict[str, Any]) -> None:
        """Send the request on a worker thread; return when headers are in, or raise the
        classified failure (including this stream's own abort) — never later than the
        limits allow."""
        worker = threading.Thread(
            target=self._work, args=(session, method, kwargs), name="dshstream-send", daemon=True
        )
        try:
            worker.start()
            self._ready.wait()
        except BaseException:  # KeyboardInterrupt while waiting: cut the request off
            self.abort("ABORTED", f"{self._provider}: interrupted")
            self.close()
            raise
        with self._lock:
            outcome = self._outcome
            aborted = self._abort_code is not None or self._closed
            if aborted and self._abort_code is None:  # closed by another thread meanwhile
                self._abort_code = "ABORTED"
                self._abort_message = f"{self._provider}: stream closed by the caller"
        if aborted:
            if isinstance(outcome, requests.Response):
                outcome.close()  # else the worker closes it when it gets it
            self.close()
            self.raise_if_aborted()
        if isinstance(outcome, BaseException):
            self.close()
            raise _send_failure(outcome, self._request, self._provider) from None
        assert isinstance(outcome, requests.Response)
        self.response = outcome
        self.status = outcome.status_code
        self.headers = dict(outcome.headers)
        # a server echoing the key back must not put it in a repr
        self.request_id = request_id_from(self.headers, self._request.secrets)
        self._read = _reader_for(outcome, self.headers)

    def _work(self, session: requests.Session, method: str, kwargs: dict[str, Any]) -> None:
        _sending.stream = self
        outcome: requests.Response | BaseException
        try:
            outcome = session.request(method, stream=True, allow_redirects=False, **kwargs)
            while outcome.status_code in _INTERIM:
                outcome = _final_response(outcome)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            outcome = exc
        finally:
            _sending.stream = None
        with self._lock:
            abandoned = self._abort_code is not None or self._closed
            self._outcome = outcome
        if abandoned and isinstance(outcome, requests.Response):
            outcome.close()
        self._ready.set()

    def _attach(self, *, conn: Any = None, sock: socket.socket | None = None) -> bool:
        """The worker's connection or connecting socket, made known to :meth:`abort`; ``False``
        (nothing registered) once the stream is stopped (rule 9)."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return False
            if conn is not None:
                self._conn = conn
            if sock is not None:
                self._sock = sock
            return True

    def _stopped(self) -> bool:
        """Whether the worker must not go on: aborted, closed, or a limit reached that the
        watchdog has not acted on yet (rule 9)."""
        if self._abort_code is None and not self._closed:
            self.check(time.monotonic())
        return self._abort_code is not None or self._closed

    # ------------------------------------------------------------------ control

    def touch(self) -> None:
        """Content arrived: restart the idle clock."""
        self._last_content = time.monotonic()

    def check(self, now: float) -> None:
        """Watchdog tick: abort on cancel or an expired limit."""
        if self._closed or self._abort_code is not None:
            return
        if self._cancel is not None and self._cancel.is_set():
            self.abort("ABORTED", cancelled_message(self._provider))
        elif self._deadline is not None and now >= self._deadline:
            self.abort("TIMEOUT", f"{self._provider}: total timeout expired (TIMEOUT)")
        elif self._idle_timeout is not None and now - self._last_content >= self._idle_timeout:
            self.abort(
                "TIMEOUT",
                f"{self._provider}: no content for {self._idle_timeout:g}s (idle timeout, TIMEOUT)",
            )

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        """End a blocked send or read now, from any thread; the caller raises ``code``."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return
            self._abort_code = code
            self._abort_message = message or cancelled_message(self._provider)
            response = self.response
            conn, sock = self._conn, self._sock
        if response is not None:
            _shutdown(response)
        else:
            # A connect in progress fails at once; a sent request's wait for headers ends.
            _shutdown_socket(getattr(conn, "sock", None))
            _shutdown_socket(sock)
            self._ready.set()

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` ended the stream."""
        return self._abort_code is not None

    def raise_if_aborted(self) -> None:
        """Raise the abort's error if the stream was aborted."""
        if self._abort_code is not None:
            raise error_for(
                make_failure(
                    self._abort_code,
                    self._abort_message,
                    provider=self._provider,
                    request_id=self.request_id,
                )
            )

    def release(self) -> None:
        """The stream reached its terminal marker: hand the connection back to the session's
        pool for the next request when the rest of the body (usually just the chunked
        terminator) arrives within :data:`RELEASE_WAIT` in all; otherwise close it (rule 11)."""
        if self._closed or self.response is None or self._read is None:
            self.close()
            return
        raw: Any = self.response.raw
        sock = _socket_of(raw)
        if sock is None or self._abort_code is not None:
            self.close()
            return
        read = self._read
        end = time.monotonic() + RELEASE_WAIT
        # One read can loop on trickling bytes (an endless chunked trailer) past any socket
        # timeout: the watchdog cuts the socket at ``end`` (rule 11).
        self._deadline = end if self._deadline is None else min(self._deadline, end)
        try:
            drained = 0
            while True:
                left = end - time.monotonic()
                if left <= 0 or drained > ERROR_BODY_LIMIT:
                    # Bytes keep coming after the end marker (pings, stray bytes): never
                    # hold the caller for them, nor reuse the connection.
                    self.close()
                    return
                sock.settimeout(left)
                data = read()
                if not data:
                    break
                drained += len(data)
            sock.settimeout(None)
        except Exception:  # noqa: BLE001 - any trouble: just close
            self.close()
            return
        owner = getattr(read, "__self__", None)
        if isinstance(owner, _ChunkedReader) and not owner.reusable:
            self.close()  # bytes after the body's end, or no final CRLF: not reusable
            return
        with self._lock:  # an abort (the watchdog at ``end``) and reuse exclude each other
            reuse = self._abort_code is None and not self._closed
            self._closed = True
        _watchdog.remove(self)
        if not reuse:
            self.response.close()
            return
        try:
            raw.release_conn()
        except Exception:  # noqa: BLE001
            self.response.close()

    def close(self) -> None:
        """Release the connection (idempotent). Closed before its answer arrived, the
        request's worker is cut off as by :meth:`abort` (rule 9)."""
        with self._lock:
            if self._closed:
                return
            if self.response is None and self._outcome is None and self._abort_code is None:
                self._abort_code = "ABORTED"
                self._abort_message = f"{self._provider}: stream closed by the caller"
                cut = True
            else:
                cut = False
            self._closed = True
            response = self.response
            conn, sock = self._conn, self._sock
        _watchdog.remove(self)
        if response is None:
            if cut:
                _shutdown_socket(getattr(conn, "sock", None))
                _shutdown_socket(sock)
            self._ready.set()
            return
        try:
            response.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass

    def __enter__(self) -> HttpStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def __iter__(self) -> Iterator[bytes]:
        if self.prefix:
            prefix, self.prefix = self.prefix, b""
            yield prefix
        read = self._read
        if read is None:
            return
        while True:
            try:
                data = read()
            except Exception as exc:  # noqa: BLE001 - mapped once, here
                self.raise_if_aborted()
                raise self._read_failure(exc) from None
            if not data:
                self.raise_if_aborted()
                return
            yield data

    def read_bounded(self, limit: int) -> tuple[bytes, bool]:
        """The body up to ``limit`` bytes, and whether more was there."""
        pieces: list[bytes] = []
        size = 0
        for piece in self:
            pieces.append(piece)
            size += len(piece)
            if size > limit:
                return b"".join(pieces)[:limit], True
        return b"".join(pieces), False

    def _read_failure(self, exc: BaseException) -> LlmError:
        detail = redact(f"{type(exc).__name__}: {exc}", self._request.secrets, limit=1900)
        if _is_timeout(exc):
            code, what = "TIMEOUT", "read timed out"
        else:
            code, what = "TRANSPORT", "the response body failed mid-stream"
        return error_for(
            make_failure(
                code,
                f"{self._provider}: {what} ({code})",
                provider=self._provider,
                request_id=self.request_id,
                detail=detail,
            )
        )


# ---------------------------------------------------------------------- interim answers

#: informational answers ``http.client`` hands up as if final (it skips only ``100``)
_INTERIM = frozenset({100, 102, 103})


def _header_pairs(answer: http.client.HTTPResponse) -> Any:
    # every urllib3 (1.26 to 2.x) builds its header dict from (name, value) pairs
    return answer.getheaders()


class _BufferedSocket:
    """Stands in for a socket whose reader (with the bytes already buffered) exists."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp

    def makefile(self, *args: Any, **kwargs: Any) -> Any:
        return self._fp


def _final_response(interim: requests.Response) -> requests.Response:
    """The answer after an informational one (``103 Early Hints``), read from the same
    connection's buffered reader and wrapped the way ``requests`` wraps any answer."""
    raw: Any = interim.raw
    original: Any = getattr(raw, "_original_response", None) or getattr(raw, "_fp", None)
    fp = getattr(original, "fp", None)
    adapter: Any = getattr(interim, "connection", None)
    if fp is None or adapter is None or interim.request is None:
        raise ValueError(f"cannot read past an informational HTTP {interim.status_code} answer")
    # The final answer takes over the reader and the connection: the interim objects,
    # closed when collected, must not close them.
    connection, pool = getattr(raw, "_connection", None), getattr(raw, "_pool", None)
    original.fp = None
    raw._connection = None
    raw._pool = None
    answer = http.client.HTTPResponse(
        _BufferedSocket(fp), method=getattr(original, "_method", None)  # type: ignore[arg-type]
    )
    answer.begin()
    body = urllib3.HTTPResponse(
        body=answer,
        headers=_header_pairs(answer),
        status=answer.status,
        version=answer.version,
        reason=answer.reason,
        preload_content=False,
        decode_content=False,
        original_response=answer,
        pool=pool,
        connection=connection,
    )
    final: requests.Response = adapter.build_response(interim.request, body)
    return final


# ---------------------------------------------------------------------- body readers


def _reader_for(response: requests.Response, headers: dict[str, str]) -> Reader:
    """A prompt ``read()`` for the body (rule 1): for an identity body the bulk path when it
    applies (:func:`_bulk_reader`), else urllib3's ``read1`` when it has one, else the
    ``http.client`` response's ``read1`` with decompression done here."""
    raw: Any = response.raw
    encoding = (headers.get("content-encoding") or headers.get("Content-Encoding") or "").strip().lower()
    decode = encoding not in _NO_DECODE
    if not decode:
        bulk = _bulk_reader(raw)
        if bulk is not None:
            return bulk
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        # Decode only a compressed body: urllib3's decoding path buffers and copies every
        # read even for identity bodies.
        return functools.partial(read1, _READ_SIZE, decode_content=decode)  # C-level call per read
    fp = getattr(raw, "_fp", None)
    fp_read1 = getattr(fp, "read1", None)
    if fp_read1 is None:  # not an http.client response: urllib3's generator is prompt enough
        return _generator_reader(raw.stream(_READ_SIZE, decode_content=decode))
    if not decode:
        return functools.partial(fp_read1, _READ_SIZE)
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Inflater(fp_read1, encoding).read
    return _generator_reader(raw.stream(_READ_SIZE, decode_content=True))


def _generator_reader(pieces: Iterator[bytes]) -> Reader:
    return lambda: next(pieces, b"")


def _bulk_reader(raw: Any) -> Reader | None:
    """Rule 7's reader for an identity body, or ``None`` (the standard path) whenever
    anything is unusual: not an ``http.client`` answer over a buffered socket file, not
    HTTP/1.1, a ``HEAD``, bytes already read through urllib3, http.client internals
    missing, or a body framed by ``Content-Length``."""
    if not BULK_READS:
        return None
    answer = getattr(raw, "_fp", None)
    if type(answer) is not http.client.HTTPResponse:
        return None
    fp = answer.fp
    if (
        type(fp) is not io.BufferedReader
        or answer.version != 11
        or answer._method == "HEAD"  # type: ignore[attr-defined]
        or getattr(raw, "_fp_bytes_read", 0)
        or len(getattr(raw, "_decoded_buffer", None) or b"")
        or not callable(getattr(answer, "_close_conn", None))
    ):
        return None
    if answer.chunked:
        if answer.chunk_left is not None:
            return None  # http.client has begun unframing it itself
        return _ChunkedReader(answer, fp).read
    if answer.length is None and answer.will_close:  # close-delimited
        return functools.partial(answer.read1, _READ_SIZE)
    return None


class _ChunkedReader:
    """An identity ``Transfer-Encoding: chunked`` body read from ``http.client``'s buffered
    socket file in large pieces and unframed here (rule 7)."""

    __slots__ = ("_answer", "_read1", "_decoder", "reusable")

    def __init__(self, answer: http.client.HTTPResponse, fp: io.BufferedReader) -> None:
        self._answer = answer
        self._read1 = fp.read1
        self._decoder = ChunkedDecoder()
        #: the body ended cleanly with nothing after it: the connection may be reused
        self.reusable = False

    def read(self) -> bytes:
        """The payload of what is there now (one ``read1``, more only while a read held
        nothing but framing); ``b""`` once the body ended."""
        decoder = self._decoder
        read1 = self._read1
        while not decoder.done:
            if decoder.failed:
                decoder.close()  # raises the malformed framing found after the last payload
            data = read1(_READ_SIZE)
            if not data:
                if decoder.in_trailers:
                    break  # EOF for the trailer's end: http.client accepts it too (no reuse)
                decoder.close()  # a body cut short: raises TRANSPORT
            out = decoder.feed(data)
            if out:
                return out
        if self._answer.fp is not None:
            self.reusable = decoder.done and not decoder.extra
            self._answer._close_conn()  # type: ignore[attr-defined]  # as http.client does at the end
        return b""


class _Inflater:
    """gzip/deflate decompression over a prompt ``read1``, bounded per read (a
    decompression bomb yields many bounded pieces, never one huge one)."""

    def __init__(self, read1: Callable[[int], bytes], encoding: str) -> None:
        self._read1 = read1
        self._gzip = encoding != "deflate"
        self._zlib_header: bool | None = None
        self._inflate = self._new()
        self._pending = b""

    def _new(self) -> Any:
        if self._gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(zlib.MAX_WBITS if self._zlib_header is not False else -zlib.MAX_WBITS)

    def read(self) -> bytes:
        while True:
            if not self._pending:
                data = self._read1(_READ_SIZE)
                if not data:
                    tail: bytes = self._inflate.flush()
                    return tail
                self._pending = data
            data, self._pending = self._pending, b""
            try:
                out: bytes = self._inflate.decompress(data, _READ_SIZE)
            except zlib.error:
                if self._gzip or self._zlib_header is not None:
                    raise
                self._zlib_header = False  # "deflate" sent raw, as some servers do
                self._inflate = self._new()
                out = self._inflate.decompress(data, _READ_SIZE)
            if not self._gzip and self._zlib_header is None:
                self._zlib_header = True
            self._pending = self._inflate.unconsumed_tail
            if self._inflate.eof and self._inflate.unused_data:  # another gzip member
                self._pending = self._inflate.unused_data + self._pending
                self._inflate = self._new()
            if out:
                return out


# ---------------------------------------------------------------------- sockets


def _is_timeout(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (TimeoutError, socket.timeout, requests.Timeout)):
            return True
        if "timed out" in str(current).lower() or "timeout" in type(current).__name__.lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def _shutdown(response: requests.Response) -> None:
    """Shut the response's socket down so a blocked read returns at once (urllib3 before
    2.3 has no ``HTTPResponse.shutdown``)."""
    raw: Any = response.raw
    try:
        shutdown = getattr(raw, "shutdown", None)
        if shutdown is not None:
            shutdown()
            return
    except Exception:  # noqa: BLE001 - fall back to the socket itself
        pass
    _shutdown_socket(_socket_of(raw))


def _shutdown_socket(sock: object) -> None:
    # ``socket.socket.shutdown`` directly: an SSL socket's own shutdown also tears down its
    # SSL object, which the thread blocked in it may still be using.
    if isinstance(sock, socket.socket):
        try:
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:  # best effort: the socket may be gone already
            pass


def _socket_of(raw: Any) -> socket.socket | None:
    connection = getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


# ---------------------------------------------------------------------- the transport


class Transport:
    """Sends :class:`HttpRequest` values with a ``requests.Session`` (one per transport)."""

    def __init__(
        self,
        session: requests.Session | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        self.session = session if session is not None else new_session()
        self.connect_timeout = connect_timeout
        _watch_session(self.session)  # rule 10

    def __repr__(self) -> str:
        return f"Transport(connect_timeout={self.connect_timeout!r})"

    def open(
        self,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        deadline: float | None = None,
        started: float | None = None,
    ) -> HttpStream:
        """POST ``request`` and return the open stream, or raise a classified LlmError.
        ``started`` (``time.monotonic()``, default now) is when the attempt began: its idle
        clock runs from there (a credential fetch before it counts)."""
        stream = self._send(
            "POST",
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=idle_timeout,
            deadline=deadline,
            data=request.body_bytes(),
            started=started,
        )
        content_type = (stream.headers.get("content-type") or stream.headers.get("Content-Type") or "").lower()
        if "event-stream" not in content_type and "eventstream" not in content_type:
            if "json" in content_type:
                _refuse_json_body(stream, request, provider)
            elif "html" in content_type:
                _refuse_html_body(stream, request, provider)
        return stream

    def get_json(
        self,
        url: str,
        headers: dict[str, str],
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """GET ``url`` and return its JSON — at most ``limit`` bytes, within ``timeout``
        seconds in all — or raise a classified LlmError."""
        request = HttpRequest(url=url, headers=headers, body={}, secrets=secrets)
        deadline = time.monotonic() + timeout if timeout is not None else None
        for last in (False, True):
            try:
                stream = self._send(
                    "GET", request, provider=provider, cancel=cancel, idle_timeout=None, deadline=deadline
                )
                return _json_answer(stream, provider, limit)
            except LlmError as exc:  # rule 8: once more on a fresh connection
                if (
                    last
                    or exc.failure.code != "TRANSPORT"
                    or (cancel is not None and cancel.is_set())
                    or (deadline is not None and time.monotonic() >= deadline)
                ):
                    raise
                log.info("%s: GET failed (%s); trying once more", provider, exc.failure.code)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def post_form(
        self,
        url: str,
        form: Mapping[str, str],
        headers: Mapping[str, str] | None = None,
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float | None = DEFAULT_JSON_TIMEOUT,
        cancel: threading.Event | None = None,
        limit: int = JSON_BODY_LIMIT,
    ) -> Any:
        """POST ``form`` (``application/x-www-form-urlencoded``) to ``url`` and return the
        JSON answer, exactly as :meth:`get_json` reads one: no redirects, at most
        ``limit`` bytes within ``timeout`` seconds in all, a non-2xx answer classified with
        ``secrets`` (the form's credentials) redacted — or raise a classified LlmError."""
        request = HttpRequest(
            url=url,
            headers={
                "content-type": "application/x-www-form-urlencoded",
                "accept": "application/json",
                **(headers or {}),
            },
            body={},
            secrets=secrets,
        )
        deadline = time.monotonic() + timeout if timeout is not None else None
        stream = self._send(
            "POST",
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=None,
            deadline=deadline,
            data=urlencode(dict(form)).encode("ascii"),
        )
        return _json_answer(stream, provider, limit)

    def _send(
        self,
        method: str,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        data: bytes | None = None,
        started: float | None = None,
    ) -> HttpStream:
        """Send ``request`` under the watchdog; return the stream of a 2xx answer, or raise
        the classified failure (3xx: ``REDIRECT``; 4xx/5xx: its bounded, classified body)."""
        now = time.monotonic()
        started = now if started is None else min(started, now)
        if cancel is not None and cancel.is_set():
            raise error_for(
                cancelled_failure(provider)
            )
        if deadline is not None and now >= deadline:
            raise error_for(
                make_failure("TIMEOUT", f"{provider}: total timeout expired (TIMEOUT)", provider=provider)
            )
        if idle_timeout is not None and now - started >= idle_timeout:
            raise error_for(
                make_failure(
                    "TIMEOUT", f"{provider}: no content for {idle_timeout:g}s (idle timeout, TIMEOUT)", provider=provider
                )
            )
        connect_timeout = self.connect_timeout
        read_timeout = idle_timeout
        if deadline is not None:
            remaining = max(0.001, deadline - now)
            connect_timeout = min(connect_timeout, remaining)
            read_timeout = remaining if read_timeout is None else min(read_timeout, remaining)
        stream = HttpStream(
            request, provider=provider, cancel=cancel, idle_timeout=idle_timeout, deadline=deadline, started=started
        )
        kwargs: dict[str, Any] = {
            "url": request.url,
            "headers": dict(request.headers),
            "timeout": (connect_timeout, read_timeout),
        }
        if data is not None:
            kwargs["data"] = data
        _watch_session(self.session)  # rule 10: adapters mounted since, proxy managers made since
        stream.send(self.session, method, kwargs)
        status = stream.status
        if 200 <= status < 300:
            return stream
        if status < 200:
            stream.close()
            raise error_for(
                make_failure(
                    "MALFORMED_RESPONSE",
                    f"{provider}: the server answered HTTP {status}, not a response (MALFORMED_RESPONSE)",
                    provider=provider,
                    status=status,
                )
            )
        try:
            body, _ = stream.read_bounded(ERROR_BODY_LIMIT)
        except LlmError:
            body = b""
        finally:
            stream.close()
        if status < 400:
            raise error_for(_redirect_failure(status, stream, request, provider))
        raise error_for(
            classify_http_error(status, body, stream.headers, provider=provider, secrets=request.secrets)
        )


def _json_answer(stream: HttpStream, provider: str, limit: int) -> Any:
    """The JSON of a 2xx answer read to at most ``limit`` bytes (then closed)."""
    with stream:
        body, more = stream.read_bounded(limit)
    if more:
        raise error_for(
            make_failure(
                "MALFORMED_RESPONSE",
                f"{provider}: the answer is larger than {limit} bytes (MALFORMED_RESPONSE)",
                provider=provider,
                request_id=stream.request_id,
            )
        )
    try:
        return json.loads(body)
    except ValueError:
        raise error_for(
            make_failure(
                "MALFORMED_RESPONSE",
                f"{provider}: the answer is not JSON (MALFORMED_RESPONSE)",
                provider=provider,
                request_id=stream.request_id,
            )
        ) from None


def _send_failure(exc: BaseException, request: HttpRequest, provider: str) -> LlmError:
    if isinstance(exc, requests.exceptions.InvalidURL) or isinstance(
        exc, (requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)
    ):
        code, what = "INVALID_OPTIONS", "the base URL is not valid"
    elif isinstance(exc, requests.exceptions.ConnectTimeout):
        code, what = "TIMEOUT", "connect timed out"
    elif isinstance(exc, requests.exceptions.Timeout):
        code, what = "TIMEOUT", "no response before the timeout"
    elif isinstance(exc, (requests.exceptions.RequestException, OSError, ValueError)):
        code, what = "TRANSPORT", "request failed"
    else:
        code, what = "UNKNOWN", "request failed unexpectedly"
    detail = redact(f"{type(exc).__name__}: {exc}", request.secrets, limit=1900)
    log.warning("%s: %s (%s)", provider, what, code)
    return error_for(make_failure(code, f"{provider}: {what} ({code})", provider=provider, detail=detail))


def _redirect_failure(status: int, stream: HttpStream, request: HttpRequest, provider: str) -> LlmFailure:
    location = stream.headers.get("location") or stream.headers.get("Location")
    detail = redact(f"Location: {location}", request.secrets, limit=1900) if location else None
    return make_failure(
        "REDIRECT",
        f"{provider}: the endpoint answered HTTP {status} (moved); redirects are not followed — "
        "check base_url (REDIRECT)",
        category="api_error",
        retryable=False,
        status=status,
        provider=provider,
        request_id=stream.request_id,
        detail=detail,
    )


def _refuse_json_body(stream: HttpStream, request: HttpRequest, provider: str) -> None:
    """A 2xx answer labelled JSON: some servers report errors that way, others ignore
    ``stream: true``. Raise a classified error for a JSON document; hand anything else
    (an event stream with a wrong label) on to the reader unchanged."""
    pieces = iter(stream)
    head = next(pieces, b"")  # one read: a mislabelled event stream must not be delayed
    if head.lstrip()[:1] not in (b"{", b"["):
        stream.prefix = head
        return
    size = len(head)
    rest = [head]
    for piece in pieces:
        rest.append(piece)
        size += len(piece)
        if size >= ERROR_BODY_LIMIT:
            break
    head = b"".join(rest)
    try:
        payload = json.loads(head)
    except ValueError:
        stream.prefix = head
        return
    stream.close()
    if _has_error(payload):
        raise error_for(classify_error_payload(payload, provider=provider, secrets=request.secrets))
    raise error_for(
        make_failure(
            "MALFORMED_RESPONSE",
            f"{provider}: the server answered with a JSON document instead of an event stream "
            "(MALFORMED_RESPONSE)",
            provider=provider,
            request_id=stream.request_id,
            detail=redact(head.decode("utf-8", "replace"), request.secrets, limit=1900),
        )
    )


def _refuse_html_body(stream: HttpStream, request: HttpRequest, provider: str) -> None:
    """A 2xx HTML page where an event stream belongs: a captive portal, a proxy's login
    page or a web server at the wrong path. Never a stream; say so."""
    try:
        body, _ = stream.read_bounded(2000)
    except LlmError:
        body = b""
    stream.close()
    raise error_for(
        make_failure(
            "MALFORMED_RESPONSE",
            f"{provider}: the server answered with an HTML page, not an event stream (a captive "
            "portal, proxy login or wrong base_url?) (MALFORMED_RESPONSE)",
            provider=provider,
            status=stream.status,
            request_id=stream.request_id,
            detail=redact(body.decode("utf-8", "replace"), request.secrets, limit=1900),
        )
    )


def _has_error(payload: Any) -> bool:
    if isinstance(payload, list) and payload:
        payload = payload[0]
    return isinstance(payload, dict) and (payload.get("error") is not None or payload.get("type") == "error")
