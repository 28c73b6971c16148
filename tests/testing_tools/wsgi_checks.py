"""Client-side checks of a streaming web answer, over a raw socket on 127.0.0.1: what a
browser reads (the headers, the server-sent events as they arrive) and what it does when
it goes away mid-answer. Shared by the WSGI tests and the Django run (a subprocess)."""

from __future__ import annotations

import json
import socket
import time
from importlib.resources import files
from typing import Any
from urllib.parse import urlsplit

from dshstream.testing import Route

#: the bundled Gemini demo stream, one recorded event per write
GEMINI_EVENTS = [e + b"\r\n\r\n" for e in (files("dshstream") / "demo_data" / "gemini_thoughts.sse").read_bytes()
                 .split(b"\r\n\r\n") if e.strip()]
QUESTION = {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "How do I cross the street?"}]}]}


def paced(pause: float) -> Route:
    """The Gemini demo stream with ``pause`` seconds between its events."""
    script: list[bytes | float] = []
    for event in GEMINI_EVENTS:
        script += [event, pause]
    return Route(body=b"", script=script)


def _request(url: str, body: dict[str, Any]) -> socket.socket:
    split = urlsplit(url)
    data = json.dumps(body).encode()
    sock = socket.create_connection((split.hostname or "127.0.0.1", split.port or 80), timeout=30)
    sock.sendall(
        f"POST {split.path or '/'} HTTP/1.1\r\nHost: {split.netloc}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data
    )
    return sock


def _events(raw: bytes) -> list[str]:
    """The ``data:`` payloads in ``raw`` (a chunked body's framing is skipped: every event
    sits inside one chunk)."""
    return [line[len("data: "):] for line in raw.decode("utf-8", "replace").split("\n") if line.startswith("data: ")]


def read_all(url: str, body: dict[str, Any] = QUESTION) -> tuple[str, list[str], list[float]]:
    """The answer's head, its events, and when each read that brought an event arrived."""
    sock = _request(url, body)
    raw = b""
    arrivals: list[float] = []
    started = time.monotonic()
    with sock:
        while True:
            data = sock.recv(65536)
            if not data:
                break
            if b"data: " in data:
                arrivals.append(time.monotonic() - started)
            raw += data
    head, _, rest = raw.partition(b"\r\n\r\n")
    return head.decode("latin-1"), _events(rest), arrivals


def hang_up_after(url: str, parts: int, body: dict[str, Any] = QUESTION) -> float:
    """Read until ``parts`` text or reasoning deltas arrived, then close the connection, as
    a browser tab closed mid-answer does; returns when it hung up (``time.monotonic()``)."""
    sock = _request(url, body)
    raw = b""
    with sock:
        while sum('"type":"reasoning-delta"' in e or '"type":"text-delta"' in e for e in _events(raw)) < parts:
            data = sock.recv(65536)
            assert data, "the answer ended before the client hung up"
            raw += data
    return time.monotonic()


def wait_for_disconnect(provider: Any, timeout: float = 5.0) -> float:
    """Seconds until the loopback provider saw its client (our adapter) go away."""
    started = time.monotonic()
    while provider.disconnects == 0:
        assert time.monotonic() - started < timeout, "the model's stream was not closed"
        time.sleep(0.01)
    return time.monotonic() - started
