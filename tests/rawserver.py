"""A raw loopback TCP server for fault tests: it reads one HTTP request per connection
and hands the socket to a ``behave`` callable that writes whatever bytes the test needs
(half headers, trickles, resets). Binds 127.0.0.1 only; daemon threads; stops by itself.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable

CHUNKED_HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
CLOSE_HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def reset(conn: socket.socket) -> None:
    """Close with an RST instead of a FIN."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def wake(listener: socket.socket) -> None:
    """End an ``accept()`` blocked on ``listener`` now (Linux: it fails with ``EINVAL``),
    not at its next timeout: for a stop that waits for the accepting thread."""
    try:
        listener.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # not connected in the sense some kernels ask for: the timeout ends it


class RawServer:
    """A loopback TCP server that reads one HTTP request per connection and hands the
    socket to ``behave``. Accepts at most ``max_connections``, for at most 60 s."""

    def __init__(self, behave: Callable[[RawServer, socket.socket], None], max_connections: int = 4) -> None:
        self.behave = behave
        self.max_connections = max_connections
        self.accepted = 0
        self.sent = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="raw-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        wake(self._listener)
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + 60
        while not self._stop.is_set() and time.monotonic() < deadline and self.accepted < self.max_connections:
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(30)
            _read_request(conn)
            self.behave(self, conn)
        except OSError:
            pass  # the client went away: that is how most behaviours end
        finally:
            conn.close()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            return
        body += piece


class FullAcceptQueue:
    """A loopback port whose accept queue is full (backlog 0, one connection queued and
    never accepted): a connect to it hangs in the TCP handshake. :meth:`open` starts
    accepting; from then on every connection is accepted and what it sends is recorded in
    :attr:`received` (the queue's own filler connection excluded), so a test can check that
    a client whose connect was still pending sends nothing. Binds 127.0.0.1 only; daemon
    threads; stops by itself within 60 s."""

    def __init__(self) -> None:
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port: int = self.listener.getsockname()[1]
        self.filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.filler.connect(("127.0.0.1", self.port))
        self._filler_address = self.filler.getsockname()
        #: bytes received on each accepted connection (the filler's excluded), in order
        self.received: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def hangs(self) -> bool:
        """Whether a connect really hangs here (some kernels complete handshakes beyond
        the accept queue)."""
        probe = socket.socket()
        probe.settimeout(0.1)  # a loopback handshake the kernel completes takes microseconds
        try:
            probe.connect(("127.0.0.1", self.port))
        except OSError:
            return True
        finally:
            probe.close()
        return False

    def __enter__(self) -> FullAcceptQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        wake(self.listener)
        for thread in self._threads:
            thread.join(5)
        self.filler.close()
        self.listener.close()

    def open(self) -> None:
        """Start accepting (the queue drains: a connect still pending completes)."""
        self.listener.settimeout(0.05)
        thread = threading.Thread(target=self._accept, name="full-queue-server", daemon=True)
        self._threads.append(thread)
        thread.start()

    def total_received(self) -> int:
        with self._lock:
            return sum(len(data) for data in self.received)

    def _accept(self) -> None:
        deadline = time.monotonic() + 60
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, address = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            if address == self._filler_address:
                conn.close()
                continue
            with self._lock:
                index = len(self.received)
                self.received.append(b"")
            threading.Thread(target=self._record, args=(conn, index), daemon=True).start()

    def _record(self, conn: socket.socket, index: int) -> None:
        conn.settimeout(0.1)
        deadline = time.monotonic() + 30
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    return
                with self._lock:
                    self.received[index] += data
        except OSError:
            pass
        finally:
            conn.close()
