"""The WebSocket opening handshake (RFC 6455 section 4), sans-IO: the client's upgrade
request, the server's answer read incrementally and checked.

Contract: stdlib, the core's errors and the request value only; no I/O.

1. **Where it goes.** :func:`socket_url` turns the HTTP URL a request was built for into
   the socket's: ``https`` becomes ``wss``, ``http`` becomes ``ws`` (a loopback server), the
   host, port, path and query unchanged — the key goes to the host it was built for, and
   nowhere else (the caller never follows a redirect).
2. **The request.** :func:`upgrade_request` writes ``GET`` with ``Host``, ``Upgrade:
   websocket``, ``Connection: Upgrade``, a fresh ``Sec-WebSocket-Key``
   (:func:`new_key`: 16 random bytes, base64) and ``Sec-WebSocket-Version: 13``, then the
   request's own headers (its credential, attribution, the caller's) less those that
   describe an HTTP body or a hop (``content-type``, ``content-length``, ``accept``,
   ``accept-encoding``, ``transfer-encoding``, ``connection``, ``upgrade``, ``host`` and the
   ``sec-websocket-*`` ones). No extension and no subprotocol is offered.
3. **The answer, bounded.** :class:`AnswerReader` takes the bytes after the request in
   pieces of any size and returns the :class:`HandshakeAnswer` (status, headers in lower
   case, and the bytes after the head: the first frames) once the head's blank line is
   in; a head over :data:`MAX_HEAD` bytes, or one that is not an HTTP/1.1 status line and
   header lines, is ``MALFORMED_RESPONSE``.
4. **Checked.** :func:`check_upgrade`: a ``101`` must carry ``Upgrade: websocket``, a
   ``Connection`` with the ``upgrade`` token, the ``Sec-WebSocket-Accept`` of the key sent
   (:func:`accept_for`, section 4.2.2) and no extension or subprotocol (none was offered);
   otherwise ``MALFORMED_RESPONSE``. Any other status is the caller's to judge as an HTTP
   answer.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from typing import NamedTuple, NoReturn
from urllib.parse import urlsplit

from .errors import error_for, make_failure

__all__ = [
    "MAX_HEAD",
    "AnswerReader",
    "HandshakeAnswer",
    "SocketUrl",
    "accept_for",
    "check_upgrade",
    "new_key",
    "socket_url",
    "upgrade_request",
]

#: the most bytes of an answer's status line and headers (rule 3)
MAX_HEAD = 65536
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_DROPPED = frozenset(
    {
        "content-type",
        "content-length",
        "accept",
        "accept-encoding",
        "transfer-encoding",
        "connection",
        "upgrade",
        "host",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-extensions",
        "sec-websocket-protocol",
    }
)


class SocketUrl(NamedTuple):
    """Where a socket connects (rule 1)."""

    secure: bool
    host: str
    port: int
    target: str

    @property
    def url(self) -> str:
        """The ``wss://`` (or ``ws://``) URL."""
        default = 443 if self.secure else 80
        netloc = self.host if self.port == default else f"{self.host}:{self.port}"
        if ":" in self.host and not self.host.startswith("["):
            netloc = f"[{self.host}]" if self.port == default else f"[{self.host}]:{self.port}"
        return f"{'wss' if self.secure else 'ws'}://{netloc}{self.target}"


class HandshakeAnswer(NamedTuple):
    """The server's answer to the upgrade request (rule 3)."""

    status: int
    reason: str
    headers: dict[str, str]
    rest: bytes


def _malformed(what: str) -> NoReturn:
    raise error_for(make_failure("MALFORMED_RESPONSE", f"{what} (MALFORMED_RESPONSE)"))


def socket_url(url: str) -> SocketUrl:
    """The socket's address for the HTTP ``url`` a request was built for (rule 1)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http") or not parts.hostname:
        raise error_for(
            make_failure("INVALID_OPTIONS", f"a WebSocket needs an http(s) URL with a host, got {scheme or 'none'}")
        )
    secure = scheme == "https"
    port = parts.port or (443 if secure else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return SocketUrl(secure, parts.hostname, port, target)


def new_key() -> str:
    """A fresh ``Sec-WebSocket-Key``: 16 random bytes, base64 (section 4.1)."""
    return base64.b64encode(os.urandom(16)).decode("ascii")


def accept_for(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a server answers ``key`` with (section 4.2.2)."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def upgrade_request(where: SocketUrl, headers: Mapping[str, str], key: str) -> bytes:
    """The upgrade request (rule 2), as bytes."""
    default = 443 if where.secure else 80
    host = f"[{where.host}]" if ":" in where.host else where.host
    lines = [
        f"GET {where.target} HTTP/1.1",
        f"Host: {host if where.port == default else f'{host}:{where.port}'}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    for name, value in headers.items():
        if name.lower() in _DROPPED:
            continue
        if any(c in name or c in value for c in "\r\n"):  # never a header split in two
            raise error_for(make_failure("INVALID_OPTIONS", f"a header with a line break: {name.lower()!r}"))
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


class AnswerReader:
    """The server's handshake answer, read incrementally and bounded (rule 3)."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> HandshakeAnswer | None:
        """The answer once its head is complete, else ``None``."""
        searched = max(0, len(self._buffer) - 3)
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n", searched)
        if end < 0:
            if len(self._buffer) > MAX_HEAD:
                _malformed(f"a WebSocket handshake answer whose head exceeds {MAX_HEAD} bytes")
            return None
        if end > MAX_HEAD:
            _malformed(f"a WebSocket handshake answer whose head exceeds {MAX_HEAD} bytes")
        head = bytes(self._buffer[:end]).decode("iso-8859-1")
        rest = bytes(self._buffer[end + 4 :])
        self._buffer = bytearray()
        status_line, *header_lines = head.split("\r\n")
        version, _, tail = status_line.partition(" ")
        code, _, reason = tail.partition(" ")
        if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not code.isdigit():
            _malformed("a WebSocket handshake answer without an HTTP status line")
        headers: dict[str, str] = {}
        for line in header_lines:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                _malformed("a malformed header line in a WebSocket handshake answer")
            key = name.lower()
            value = value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        return HandshakeAnswer(int(code), reason, headers, rest)


def check_upgrade(answer: HandshakeAnswer, key: str) -> None:
    """Refuse a ``101`` that is not the upgrade asked for (rule 4)."""
    headers = answer.headers
    if headers.get("upgrade", "").lower() != "websocket":
        _malformed("a WebSocket handshake answer without 'Upgrade: websocket'")
    if "upgrade" not in (token.strip().lower() for token in headers.get("connection", "").split(",")):
        _malformed("a WebSocket handshake answer without 'Connection: Upgrade'")
    if headers.get("sec-websocket-accept") != accept_for(key):
        _malformed("a WebSocket handshake answer with the wrong Sec-WebSocket-Accept")
    if headers.get("sec-websocket-extensions") or headers.get("sec-websocket-protocol"):
        _malformed("a WebSocket handshake answer with an extension or subprotocol nobody asked for")
