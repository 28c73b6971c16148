"""HttpStream: one request sent with ``requests`` and its streaming response.

Contract: an :class:`HttpStream` is the :class:`~dshstream._transport.interface.ResponseStream`
of :class:`~dshstream._transport.client.HttpTransport`. It exists before its request is
sent, is registered with the :mod:`~dshstream._transport.watchdog` from then until it is
closed or released, and is always closed.

1. **Limits hold from the first connect.** The total ``deadline``, the content-idle clock
   (header bytes are not content), the ``cancel`` event and :meth:`HttpStream.abort` end
   a request within one watchdog tick (~50 ms) while it is connecting, sending or waiting
   for headers, exactly as they do once the body flows; the pool hooks
   (:mod:`~dshstream._transport.pool` rule 1) tell the stream which connection and socket
   its sender uses. Where every step can be cut by a socket shutdown (``inline``:
   :func:`~dshstream._transport.pool.inline_safe`, pool rule 4 — the common case, and
   a host name is then resolved on a thread the caller can leave), the request is sent on
   the caller's own thread: no thread per request. Otherwise (a caller's custom adapter,
   a pool whose connects are not hooked, such as a SOCKS proxy's: refused at checkout,
   before anything is connected or sent) it is sent on a short-lived worker thread
   (``dshstream-send``) while the caller waits on an event the abort sets. A ``KeyboardInterrupt`` while sending or
   waiting cuts the request off too. Redirects are never followed (``allow_redirects=False``,
   :mod:`~dshstream._transport.answers` rule 2); informational answers are read past
   (:mod:`~dshstream._transport.readers` rule 3).
2. **An abort ends it now.** :meth:`HttpStream.abort` (any thread: the watchdog, the
   caller, a ``close()`` before the answer) takes the stream's lock, records its code and
   shuts the response's socket down (or the socket being connected, and the checked-out
   connection's), so a blocked connect, send or read returns at once; the caller then
   raises the abort's error (``ABORTED`` or ``TIMEOUT``), never a transport failure. A
   worker's next step sees the abort under the same lock (pool rule 2).
3. **The answer.** Status and headers are kept as received, and the request id taken
   from them, as every stream keeps them (:mod:`~dshstream._transport.base` rule 4). The
   body is read with the reader :mod:`~dshstream._transport.readers` picks; a read that
   fails is mapped once (:mod:`~dshstream._transport.failures` rule 2).
4. **A short release.** After the stream's terminal marker, handing the connection back
   (reading what is left of the body: the chunked terminator) takes at most
   :data:`RELEASE_WAIT` seconds in all, however the bytes trickle; anything after the end
   (pings, stray bytes, an endless trailer) or no end within that time closes the
   connection instead of reusing it.
5. **A tap sees the body as read.** :attr:`HttpStream.tap` (a
   :class:`BodyTap`, set before the body is read: a cassette recording) is told every
   piece the body reads return — the drain of rule 4 included — in order, the body's end
   (an empty piece), a read that failed, and the stream's close or release (once). It
   only watches: what is read, and when, is the same with it or without it, and a tap
   that raises is dropped, never the stream.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Protocol

import requests

from .._core.http_request import HttpRequest
from .failures import read_failure, send_failure
from .base import BaseStream
from .interface import ERROR_BODY_LIMIT
from .pool import NotInline, note_keep_alive, sending
from .readers import INTERIM, ChunkedReader, Reader, final_response, reader_for, socket_of
from .sockets import shutdown_response, shutdown_socket
from .watchdog import Limits, watchdog

__all__ = ["RELEASE_WAIT", "BodyTap", "HttpStream"]

#: the most seconds handing a finished stream's connection back takes (rule 4)
RELEASE_WAIT = 0.05


class BodyTap(Protocol):
    """What watches a stream's body as it is read (rule 5)."""

    def read(self, data: bytes) -> None:
        """A piece the body reads returned; ``b""``: the body's end."""

    def failed(self) -> None:
        """A read failed (the connection was cut, or an abort ended it)."""

    def closed(self) -> None:
        """The stream was closed or released (told once)."""


class HttpStream(BaseStream):
    """One request and its streaming response: iterate for byte pieces; always closed.

    It exists before the request is sent, so the watchdog covers every phase (rule 1);
    its limits and abort state are every stream's (watchdog rule 3), and so is what it
    keeps of the answer (base rule 4).
    """

    def __init__(self, request: HttpRequest, limits: Limits, started: float) -> None:
        super().__init__(request, limits, started)
        self.response: requests.Response | None = None
        self._ready = threading.Event()
        self._outcome: requests.Response | BaseException | None = None
        self._conn: Any = None  # the connection a worker checked out (rule 1)
        self._sock: socket.socket | None = None  # the socket a worker is connecting (rule 2)
        self._read: Reader | None = None
        #: whether the request is sent on the caller's own thread (rule 1; pool rule 4): an
        #: attribute, not a property, as the pool hooks read it on every connection step
        self.inline = False
        #: watches the body as it is read (rule 5); ``None``: nobody does
        self.tap: BodyTap | None = None
        watchdog.add(self)

    # ------------------------------------------------------------------ sending

    def send(self, session: requests.Session, method: str, kwargs: dict[str, Any], *, inline: bool = False) -> None:
        """Send the request — on this thread when ``inline``, else on a worker thread
        (rule 1); return when headers are in, or raise the classified failure (including
        this stream's own abort) — never later than the limits allow."""
        self.inline = inline
        try:
            if inline:
                self._work(session, method, kwargs)
                if isinstance(self._outcome, NotInline):  # pool rule 4: nothing sent yet
                    with self._lock:
                        self._outcome = None
                        self._ready.clear()  # the worker sets it again (or an abort does)
                    self.inline = False
            if not self.inline:
                threading.Thread(
                    target=self._work, args=(session, method, kwargs), name="dshstream-send", daemon=True
                ).start()
                self._ready.wait()
        except BaseException:  # KeyboardInterrupt while sending or waiting: cut the request off
            self._give_up()
            raise
        with self._lock:
            outcome = self._outcome
            aborted = self._abort_code is not None or self._closed
            if aborted and self._abort_code is None:  # closed by another thread meanwhile
                self._abort_closed()
        if aborted:
            if isinstance(outcome, requests.Response):
                outcome.close()  # else the worker closes it when it gets it
            self.close()
            self.raise_if_aborted()
        if isinstance(outcome, BaseException):
            self.close()
            raise send_failure(outcome, self._request, self._provider) from None
        assert isinstance(outcome, requests.Response)
        self.response = outcome
        note_keep_alive(self._conn, outcome.headers)  # pool rule 5
        self._answered(outcome.status_code, outcome.headers)  # rule 3
        self._read = reader_for(outcome, self.headers)

    def _work(self, session: requests.Session, method: str, kwargs: dict[str, Any]) -> None:
        sending.stream = self
        outcome: requests.Response | BaseException
        try:
            outcome = session.request(method, stream=True, allow_redirects=False, **kwargs)
            while outcome.status_code in INTERIM:
                outcome = final_response(outcome)
        except Exception as exc:  # noqa: BLE001 - handed to send()
            outcome = exc
        except BaseException as exc:  # a KeyboardInterrupt: the caller's own, when inline
            if self.inline:
                raise
            outcome = exc
        finally:
            sending.stream = None
        with self._lock:
            abandoned = self._abort_code is not None or self._closed
            self._outcome = outcome
        if abandoned and isinstance(outcome, requests.Response):
            outcome.close()
        self._ready.set()

    def attach(self, *, conn: Any = None, sock: socket.socket | None = None) -> bool:
        """The worker's connection or connecting socket, made known to :meth:`abort`; ``False``
        (nothing registered) once the stream is stopped (pool rule 2)."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return False
            if conn is not None:
                self._conn = conn
            if sock is not None:
                self._sock = sock
            return True

    def stopped(self) -> bool:
        """Whether the worker must not go on: aborted, closed, or a limit reached that the
        watchdog has not acted on yet (pool rule 2)."""
        if self._abort_code is None and not self._closed:
            self.check(time.monotonic())
        return self._abort_code is not None or self._closed

    # ------------------------------------------------------------------ control

    def _hold(self) -> tuple[requests.Response | None, Any, socket.socket | None]:
        """What an abort cuts (rule 2), taken under the lock: the response once headers are
        in, else the checked-out connection and the socket being connected."""
        return self.response, self._conn, self._sock

    def _interrupt(self, held: tuple[requests.Response | None, Any, socket.socket | None]) -> None:
        response, conn, sock = held
        if response is not None:
            shutdown_response(response)
        else:
            # A connect in progress fails at once; a sent request's wait for headers ends.
            shutdown_socket(getattr(conn, "sock", None))
            shutdown_socket(sock)
            self._ready.set()

    def release(self) -> None:
        """The stream reached its terminal marker: hand the connection back to the session's
        pool for the next request when the rest of the body (usually just the chunked
        terminator) arrives within :data:`RELEASE_WAIT` in all; otherwise close it (rule 4)."""
        if self._closed or self.response is None or self._read is None:
            self.close()
            return
        raw: Any = self.response.raw
        sock = socket_of(raw)
        if sock is None or self._abort_code is not None:
            self.close()
            return
        read = self._read
        end = time.monotonic() + RELEASE_WAIT
        # One read can loop on trickling bytes (an endless chunked trailer) past any socket
        # timeout: the watchdog cuts the socket at ``end`` (rule 4).
        self._limits = self._limits.ending_by(end)
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
                if self.tap is not None:
                    self._tell("read", data)
                if not data:
                    break
                drained += len(data)
            sock.settimeout(None)
        except Exception:  # noqa: BLE001 - any trouble: just close
            self.close()
            return
        owner = getattr(read, "__self__", None)
        if isinstance(owner, ChunkedReader) and not owner.reusable:
            self.close()  # bytes after the body's end, or no final CRLF: not reusable
            return
        with self._lock:  # an abort (the watchdog at ``end``) and reuse exclude each other
            reuse = self._abort_code is None and not self._closed
            self._closed = True
        watchdog.remove(self)
        self._untap()
        if not reuse:
            self.response.close()
            return
        try:
            raw.release_conn()
        except Exception:  # noqa: BLE001
            self.response.close()

    def close(self) -> None:
        """Release the connection (idempotent). Closed before its answer arrived, the
        request's worker is cut off as by :meth:`abort` (rule 2)."""
        with self._lock:
            if self._closed:
                return
            if self.response is None and self._outcome is None and self._abort_code is None:
                self._abort_closed()
                cut = True
            else:
                cut = False
            self._closed = True
            response = self.response
            conn, sock = self._conn, self._sock
        watchdog.remove(self)
        self._untap()
        if response is None:
            if cut:
                shutdown_socket(getattr(conn, "sock", None))
                shutdown_socket(sock)
            self._ready.set()
            return
        try:
            response.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass

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
                if self.tap is not None:
                    self._tell("failed")
                self.raise_if_aborted()
                raise read_failure(exc, self._request.secrets, self._provider, self.request_id) from None
            if self.tap is not None:
                self._tell("read", data)
            if not data:
                self.raise_if_aborted()
                return
            yield data

    def _tell(self, what: str, *args: bytes) -> None:
        """Tell the tap ``what`` happened (rule 5); a tap that raises is dropped."""
        tap = self.tap
        if tap is None:
            return
        try:
            getattr(tap, what)(*args)
        except Exception:  # noqa: BLE001 - a tap never breaks the stream
            self.tap = None

    def _untap(self) -> None:
        """The close, told once (rule 5)."""
        if self.tap is not None:
            self._tell("closed")
            self.tap = None

