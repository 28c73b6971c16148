"""Readers: a response body read promptly, and everything else read from inside
``http.client`` and ``urllib3``.

Contract: this is the one file of the package that reads private attributes of
``http.client`` or ``urllib3`` objects (``tests/transport/test_http.py`` checks it), each with
a one-line reason where it is read; when urllib3 changes, this is the file to check. The
only other private names the package relies on are the two methods
:mod:`~dshstream._transport.pool` overrides (``HTTPConnectionPool._get_conn``,
``HTTPConnection._new_conn``). Every access degrades to the standard path, never to an
error, when an attribute is missing.

=========================================  ==============================================
private name                               read for
=========================================  ==============================================
``urllib3.HTTPResponse._fp``               the ``http.client`` answer under it (rules 1-3)
``urllib3.HTTPResponse._fp_bytes_read``    whether urllib3 has read body bytes already
``urllib3.HTTPResponse._decoded_buffer``   whether urllib3 holds decoded bytes already
``urllib3.HTTPResponse._original_response`` the ``http.client`` answer (urllib3 1.26)
``urllib3.HTTPResponse._connection``       the connection (its socket; handed on, rule 3)
``urllib3.HTTPResponse._pool``             the pool the connection goes back to (rule 3)
``urllib3.HTTPConnection._dns_host``       the host name a watched connect resolves
``http.client.HTTPResponse._method``       ``HEAD`` has no body; the method, handed on
``http.client.HTTPResponse._close_conn``   ends a body the way ``http.client`` ends one
``socket.SocketIO._sock``                  the socket under a buffered reader
=========================================  ==============================================

(``http.client.HTTPResponse``'s ``fp``, ``chunked``, ``chunk_left``, ``length``,
``will_close`` and ``version`` are undocumented but public names, read here too.)

1. **Prompt reads.** A body is read with the first ``read1`` on offer: urllib3's own
   (2.2 and later) or, on older urllib3 (1.26, 2.0, 2.1), the underlying
   ``http.client`` response's, decompressing gzip/deflate here (:class:`Inflater`,
   bounded per read: a decompression bomb yields many bounded pieces, never one huge
   one). Either way every byte reaches the caller as soon as it arrives, on chunked and
   close-delimited bodies alike (never ``iter_lines()``: a CRLF split across reads
   dispatches a half-built event; never ``iter_content(chunk_size=None)`` or
   ``raw.read(n)`` on a close-delimited body: they wait for ``n`` bytes or EOF).
2. **Bulk reads.** An identity (uncompressed) body of an HTTP/1.1 ``http.client`` answer
   is read from its buffered socket file directly: a ``Transfer-Encoding: chunked`` body
   with ``read1(65536)`` (what is there, at most one system call: the first event is not
   delayed) unframed by :class:`~dshstream._core.chunked.ChunkedDecoder`, many HTTP chunks
   per read instead of one read (and urllib3's and http.client's per-chunk calls) per
   chunk; a close-delimited body with ``http.client``'s own ``read1``. A read that
   follows a short one (under 8 KiB: the server, not the read size, set its length)
   first waits with ``peek`` in the socket file's own buffer, so a silent server leaves
   no 64 KiB ``read1`` buffer allocated per open stream. At the end of a
   chunked body the answer is closed as ``http.client`` closes it, and the connection
   may go back to the pool only when nothing followed the body
   (:attr:`ChunkedReader.reusable`). Anything unusual (compression, another HTTP
   version, unknown response or file types, urllib3 having read already, a
   ``Content-Length`` body) takes the standard path of rule 1. Malformed framing or a
   body cut short is a ``TRANSPORT`` failure, as it is on that path.
3. **Past an informational answer.** ``http.client`` skips only ``100 Continue``; after a
   ``102`` or ``103 Early Hints`` (:data:`INTERIM`) :func:`final_response` reads the
   final answer from the same connection's buffered reader and wraps it the way
   ``requests`` wraps any answer; it takes over the reader, the connection and the pool,
   so closing the interim objects closes nothing.
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import requests
import urllib3

from .._core.chunked import ChunkedDecoder

__all__ = [
    "BULK_READS",
    "INTERIM",
    "ChunkedReader",
    "CloseDelimitedReader",
    "Inflater",
    "Reader",
    "bulk_reader",
    "dns_host",
    "final_response",
    "reader_for",
    "socket_of",
]

#: a prompt read: the body's next bytes as they arrive, ``b""`` at its end
Reader = Callable[[], bytes]

_READ_SIZE = 65536
#: a read shorter than this was not limited by what had arrived: the next one waits (rule 2)
_WAIT_BELOW = 8192
_NO_DECODE = ("", "identity")
#: rule 2 on (tests turn it off to compare with the standard path)
BULK_READS = True


# ---------------------------------------------------------------------- body readers


def reader_for(response: requests.Response, headers: dict[str, str]) -> Reader:
    """A prompt ``read()`` for the body (rule 1): for an identity body the bulk path when it
    applies (:func:`bulk_reader`), else urllib3's ``read1`` when it has one, else the
    ``http.client`` response's ``read1`` with decompression done here."""
    raw: Any = response.raw
    encoding = (headers.get("content-encoding") or headers.get("Content-Encoding") or "").strip().lower()
    decode = encoding not in _NO_DECODE
    if not decode:
        bulk = bulk_reader(raw)
        if bulk is not None:
            return bulk
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        # Decode only a compressed body: urllib3's decoding path buffers and copies every
        # read even for identity bodies.
        return functools.partial(read1, _READ_SIZE, decode_content=decode)  # C-level call per read
    fp = getattr(raw, "_fp", None)  # urllib3 < 2.2 has no read1: http.client's, under it
    fp_read1 = getattr(fp, "read1", None)
    if fp_read1 is None:  # not an http.client response: urllib3's generator is prompt enough
        return _generator_reader(raw.stream(_READ_SIZE, decode_content=decode))
    if not decode:
        return functools.partial(fp_read1, _READ_SIZE)
    if encoding in ("gzip", "x-gzip", "deflate"):
        return Inflater(fp_read1, encoding).read
    return _generator_reader(raw.stream(_READ_SIZE, decode_content=True))


def _generator_reader(pieces: Iterator[bytes]) -> Reader:
    return lambda: next(pieces, b"")


def bulk_reader(raw: Any) -> Reader | None:
    """Rule 2's reader for an identity body, or ``None`` (the standard path) whenever
    anything is unusual: not an ``http.client`` answer over a buffered socket file, not
    HTTP/1.1, a ``HEAD``, bytes already read through urllib3, http.client internals
    missing, or a body framed by ``Content-Length``."""
    if not BULK_READS:
        return None
    answer = getattr(raw, "_fp", None)  # the http.client answer whose socket file we read
    if type(answer) is not http.client.HTTPResponse:
        return None
    fp = answer.fp
    if (
        type(fp) is not io.BufferedReader
        or answer.version != 11
        or answer._method == "HEAD"  # type: ignore[attr-defined]  # a HEAD answer has no body
        or getattr(raw, "_fp_bytes_read", 0)  # urllib3 read some of the body already
        or len(getattr(raw, "_decoded_buffer", None) or b"")  # urllib3 holds decoded bytes
        or not callable(getattr(answer, "_close_conn", None))  # how we end the body (below)
    ):
        return None
    if answer.chunked:
        if answer.chunk_left is not None:
            return None  # http.client has begun unframing it itself
        return ChunkedReader(answer, fp).read
    if answer.length is None and answer.will_close:  # close-delimited
        return CloseDelimitedReader(answer, fp).read
    return None


class ChunkedReader:
    """An identity ``Transfer-Encoding: chunked`` body read from ``http.client``'s buffered
    socket file in large pieces and unframed here (rule 2)."""

    __slots__ = ("_answer", "_read1", "_peek", "_decoder", "_waits", "reusable")

    def __init__(self, answer: http.client.HTTPResponse, fp: io.BufferedReader) -> None:
        self._answer = answer
        self._read1 = fp.read1
        self._peek = fp.peek
        self._decoder = ChunkedDecoder()
        #: the last read came back short: the next one likely waits for the server
        self._waits = True
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
            if self._waits:  # rule 2: wait in the file's buffer, not in a 64 KiB read1 buffer
                self._peek()
            data = read1(_READ_SIZE)
            self._waits = len(data) < _WAIT_BELOW
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


class CloseDelimitedReader:
    """A close-delimited body read with ``http.client``'s own ``read1``; a read that waits
    waits in the socket file's buffer (rule 2)."""

    __slots__ = ("_answer", "_read1", "_peek", "_waits")

    def __init__(self, answer: http.client.HTTPResponse, fp: io.BufferedReader) -> None:
        self._answer = answer
        self._read1 = answer.read1
        self._peek = fp.peek
        self._waits = True

    def read(self) -> bytes:
        """What is there now (one ``read1``); ``b""`` once the server closed."""
        if self._waits and self._answer.fp is not None:  # None: the body ended, the file closed
            self._peek()
        data = self._read1(_READ_SIZE)
        self._waits = len(data) < _WAIT_BELOW
        return data


class Inflater:
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


# ---------------------------------------------------------------------- interim answers

#: informational answers ``http.client`` hands up as if final (it skips only ``100``)
INTERIM = frozenset({100, 102, 103})


def _header_pairs(answer: http.client.HTTPResponse) -> Any:
    # every urllib3 (1.26 to 2.x) builds its header dict from (name, value) pairs
    return answer.getheaders()


class _BufferedSocket:
    """Stands in for a socket whose reader (with the bytes already buffered) exists."""

    def __init__(self, fp: Any) -> None:
        self._fp = fp

    def makefile(self, *args: Any, **kwargs: Any) -> Any:
        return self._fp


def final_response(interim: requests.Response) -> requests.Response:
    """The answer after an informational one (``103 Early Hints``), read from the same
    connection's buffered reader and wrapped the way ``requests`` wraps any answer (rule 3)."""
    raw: Any = interim.raw
    # the http.client answer: urllib3 1.26 keeps it as _original_response, 2.x as _fp
    original: Any = getattr(raw, "_original_response", None) or getattr(raw, "_fp", None)
    fp = getattr(original, "fp", None)
    adapter: Any = getattr(interim, "connection", None)
    if fp is None or adapter is None or interim.request is None:
        raise ValueError(f"cannot read past an informational HTTP {interim.status_code} answer")
    # The final answer takes over the reader and the connection: the interim objects,
    # closed when collected, must not close them.
    connection = getattr(raw, "_connection", None)  # handed on to the final answer
    pool = getattr(raw, "_pool", None)  # where the connection goes back, handed on
    original.fp = None
    raw._connection = None  # the interim answer no longer owns the connection
    raw._pool = None  # nor the pool it goes back to
    answer = http.client.HTTPResponse(
        _BufferedSocket(fp),  # type: ignore[arg-type]
        method=getattr(original, "_method", None),  # a HEAD's final answer has no body either
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


# ---------------------------------------------------------------------- what lies under


def socket_of(raw: Any) -> socket.socket | None:
    """The socket under a urllib3 response, or ``None``."""
    connection = getattr(raw, "_connection", None)  # urllib3 2.x: the connection it reads
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)  # else the http.client answer's file
    sock = getattr(getattr(fp, "raw", None), "_sock", None)  # SocketIO keeps its socket there
    return sock if isinstance(sock, socket.socket) else None


def dns_host(conn: Any) -> str:
    """The host name a urllib3 connection resolves (an IPv6 literal without brackets)."""
    host: str = conn._dns_host  # the host urllib3's own connect would resolve
    if host.startswith("["):
        host = host.strip("[]")
    return host
