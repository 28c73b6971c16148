"""A loopback Responses WebSocket server for tests and the benchmark: it speaks RFC 6455
(the handshake, masked client frames, pings, the close handshake) on 127.0.0.1 and answers
each ``response.create`` message with the next scripted turn, its events sent as text
frames; an HTTP ``POST`` gets the same turn as an SSE body (the fallback path).

Turns are :class:`Turn` values served in order across connections (the last one
repeating); each can end early — the connection dropped after N events, closed with a
code, stalled — or refuse. Everything it received is kept: the upgrade requests' headers,
every message, and which turns went over which connection. Binds 127.0.0.1 only; daemon
threads; stops by itself when the test leaves the ``with`` block.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dshstream._core.sse import SSEDecoder, ServerSentEvent
from dshstream._core.ws_frames import CLOSE, PING, PONG, TEXT, FrameDecoder, close_payload, encode_frame
from rawserver import wake

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def events_of(sse: bytes) -> list[bytes]:
    """The data of every event of a recorded SSE stream, as the messages a socket sends."""
    decoder = SSEDecoder()
    items = decoder.feed(sse) + decoder.close()
    return [item.data.encode("utf-8") for item in items if isinstance(item, ServerSentEvent) and item.data]


def error_event(code: str, message: str, status: int = 400, kind: str = "invalid_request_error") -> bytes:
    """An ``error`` event as the WebSocket mode documents it: ``status`` and ``error``."""
    return json.dumps(
        {"type": "error", "status": status, "error": {"type": kind, "code": code, "message": message}}
    ).encode()


@dataclass
class Turn:
    """One scripted answer to a ``response.create``."""

    events: Sequence[bytes]
    #: after this many events: ``"drop"`` (TCP closed, no close frame), ``"close"`` (close
    #: frame ``close_code``), ``"stall"`` (nothing more until the client goes)
    cut_after: int | None = None
    how: str = "drop"
    close_code: int = 1011
    #: seconds between events
    pace: float = 0.0
    #: a ping sent before the events (the client must answer it)
    ping: bool = False
    #: seconds before the cut (a close after the turn's end: the socket idle by then)
    cut_delay: float = 0.0
    #: each message sent as this many fragments (a text frame and continuations)
    fragments: int = 1
    #: the bytes of the turn written in pieces cut at these offsets (each piece its own send)
    cuts: Sequence[int] = ()


@dataclass
class Connection:
    """What one connection received."""

    headers: dict[str, str]
    messages: list[dict[str, Any]] = field(default_factory=list)
    pongs: list[bytes] = field(default_factory=list)
    closed_by_client: int | None = None


class WsServer:
    """The loopback server (module docstring)."""

    def __init__(
        self,
        turns: Sequence[Turn],
        *,
        refuse: int | None = None,
        refuse_body: bytes = b"",
        tls: ssl.SSLContext | None = None,
        drop_upgrades: int = 0,
    ) -> None:
        self.turns = list(turns)
        #: upgrade requests answered by closing the connection (a failed connect)
        self.drop_upgrades = drop_upgrades
        self.tls = tls
        #: upgrade requests received (refused ones included)
        self.upgrades = 0
        self.refuse = refuse
        self.refuse_body = refuse_body
        self.connections: list[Connection] = []
        self.http_posts: list[dict[str, Any]] = []
        self.served = 0
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(32)
        self._listener.settimeout(0.05)
        self.port: int = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []

    @property
    def base_url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{'localhost' if self.tls else '127.0.0.1'}:{self.port}/v1"

    def __enter__(self) -> WsServer:
        thread = threading.Thread(target=self._serve, name="ws-server", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for conn in list(self._open):
            try:
                conn.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv; close alone does not
                conn.close()
            except OSError:
                pass
        wake(self._listener)
        for thread in self._threads:
            thread.join(2)
        self._listener.close()

    # ------------------------------------------------------------------ serving

    def _next_turn(self) -> Turn:
        with self._lock:
            turn = self.turns[min(self.served, len(self.turns) - 1)]
            self.served += 1
            return turn

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            conn.settimeout(10)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # one event per write, no Nagle wait
            self._open.append(conn)
            thread = threading.Thread(target=self._handle, args=(conn,), name="ws-conn", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _handle(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            head, rest = _read_head(conn, b"")
            while head is not None and head[1].get("upgrade", "").lower() != "websocket":
                after = self._http(conn, head[0], head[1], rest)  # keep-alive: the next request
                if after is None:
                    return
                head, rest = _read_head(conn, after)
            if head is None:
                return
            request_line, headers = head
            with self._lock:
                self.upgrades += 1
                drop = self.upgrades <= self.drop_upgrades
            if drop:
                return
            if self.refuse is not None:
                body = self.refuse_body
                conn.sendall(
                    b"HTTP/1.1 %d Refused\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                    b"Connection: close\r\n\r\n%s" % (self.refuse, len(body), body)
                )
                return
            accept = base64.b64encode(hashlib.sha1(headers["sec-websocket-key"].encode() + _GUID).digest())
            conn.sendall(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept + b"\r\nx-request-id: req_ws_loopback\r\n\r\n"
            )
            record = Connection(headers)
            with self._lock:
                self.connections.append(record)
            self._frames(conn, record, rest)
        except (OSError, ValueError):
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _frames(self, conn: socket.socket, record: Connection, rest: bytes) -> None:
        decoder = FrameDecoder(masked=True)
        pending = decoder.feed(rest)
        while not self._stop.is_set():
            if not pending:
                try:
                    data = conn.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    return
                pending = decoder.feed(data)
                continue
            opcode, payload = pending.pop(0)
            if opcode == PONG:
                record.pongs.append(payload)
            elif opcode == PING:
                conn.sendall(encode_frame(PONG, payload))
            elif opcode == CLOSE:
                record.closed_by_client = int.from_bytes(payload[:2], "big") if payload else 1005
                conn.sendall(encode_frame(CLOSE, payload[:2]))
                return
            elif opcode == TEXT:
                record.messages.append(json.loads(payload))
                if not self._answer(conn, self._next_turn()):
                    return

    def _answer(self, conn: socket.socket, turn: Turn) -> bool:
        """Send one turn; ``False`` when the connection is over."""
        if turn.ping:
            conn.sendall(encode_frame(PING, b"are-you-there"))
        if turn.fragments > 1 or turn.cuts:
            wire = b"".join(_fragmented(event, turn.fragments) for event in turn.events)
            start = 0
            cuts = sorted({c for c in turn.cuts if 0 < c < len(wire)}) + [len(wire)]
            # Each piece its own read, most of the time; thousands of pieces (a few bytes at
            # a time) only yield, so the reader takes whatever arrived: still arbitrary
            # splits, without ~0.5 ms of sleep per piece.
            pause = 0.0005 if len(cuts) <= 200 else 0.0
            for cut in cuts:
                conn.sendall(wire[start:cut])
                start = cut
                time.sleep(pause)
            return True
        for index, event in enumerate(turn.events):
            if turn.cut_after is not None and index == turn.cut_after:
                return self._cut(conn, turn)
            if turn.pace:
                time.sleep(turn.pace)
            conn.sendall(encode_frame(TEXT, event))
        if turn.cut_after is not None and turn.cut_after >= len(turn.events):
            return self._cut(conn, turn)
        return True

    def _cut(self, conn: socket.socket, turn: Turn) -> bool:
        time.sleep(turn.cut_delay)
        if turn.how == "close":
            conn.sendall(encode_frame(CLOSE, close_payload(turn.close_code, "going away")))
        elif turn.how == "stall":
            while not self._stop.is_set():
                try:
                    if not conn.recv(65536):
                        break
                except socket.timeout:
                    continue
                except OSError:
                    break
        return False

    def _http(self, conn: socket.socket, request_line: str, headers: dict[str, str], rest: bytes) -> bytes | None:
        """The same turn as an SSE body (what the fallback gets), one HTTP chunk per event
        as providers write them, on a kept-alive connection; the bytes after the request,
        or ``None`` when the client went."""
        length = int(headers.get("content-length", "0"))
        body = rest
        while len(body) < length:
            data = conn.recv(65536)
            if not data:
                return None
            body += data
        body, rest = body[:length], body[length:]
        self.http_posts.append({"line": request_line, "headers": headers, "body": json.loads(body or b"{}")})
        turn = self._next_turn()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        for event in turn.events:
            if turn.pace:
                time.sleep(turn.pace)
            data = b"data: " + event + b"\n\n"
            conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
        conn.sendall(b"0\r\n\r\n")
        return rest


def _fragmented(message: bytes, parts: int) -> bytes:
    """``message`` as ``parts`` frames: a text frame, then continuations, the last with FIN."""
    if parts <= 1 or len(message) < parts:
        return encode_frame(TEXT, message)
    size = -(-len(message) // parts)
    pieces = [message[i : i + size] for i in range(0, len(message), size)]
    out = bytearray()
    for index, piece in enumerate(pieces):
        frame = bytearray(encode_frame(TEXT if index == 0 else 0x0, piece))
        if index < len(pieces) - 1:
            frame[0] &= 0x7F  # FIN clear: more fragments follow
        out += frame
    return bytes(out)


def _read_head(conn: socket.socket, data: bytes) -> tuple[tuple[str, dict[str, str]] | None, bytes]:
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None, b""
        data += piece
        if len(data) > 65536:
            return None, b""
    head, _, rest = data.partition(b"\r\n\r\n")
    line, *lines = head.decode("iso-8859-1").split("\r\n")
    headers = {}
    for item in lines:
        name, _, value = item.partition(":")
        headers[name.strip().lower()] = value.strip()
    return (line, headers), rest
