"""Recording: real exchanges go through, and each is kept as the stream reads it.

Contract: an :class:`Recorder` is an :class:`~dshstream._transport.intercept.Interceptor`:
installed, it sees every exchange of every
:class:`~dshstream._transport.client.HttpTransport` in the process.

1. **The real exchange, untouched.** The request is sent by the transport it was meant
   for (``send_direct``: its session, its timeouts); what the caller gets — the stream,
   its bytes and their timing, a failure — is what it would get unrecorded. An exchange
   that fails before its answer (no connection) is not recorded.
2. **In the order sent.** Each exchange takes its place in the cassette when it is sent,
   so exchanges made at once from many threads keep the order they were made in, and a
   retried request's answers stay in order (the 429, then the 200).
3. **Bytes as read.** The stream's tap (:mod:`~dshstream._transport.stream` rule 5) keeps
   every piece the reads return — after the transfer coding and any compression, exactly
   what the decoder got — with, when asked, the time of each read after the headers; the
   body's end, a failed read (``cut``) and a close before the end (``open``) are kept as
   its ``end``. The interaction is written when the stream is closed, redacted
   (:mod:`~dshstream._cassettes.redaction`); a stream still open when the recording ends
   is written with what it read so far.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._core.http_request import HttpRequest
from .format import BodyEnd, Interaction
from .redaction import Redaction

if TYPE_CHECKING:
    from .._transport.client import HttpTransport
    from .._transport.stream import HttpStream
    from .._transport.intercept import Exchange

__all__ = ["Recorder"]


def _content_type(headers: Mapping[str, str]) -> str | None:
    return next((value for key, value in headers.items() if key.lower() == "content-type"), None)


class _Tape:
    """The tap of one recorded stream (rule 3)."""

    def __init__(
        self, recorder: Recorder, slot: int, method: str, request: HttpRequest, data: bytes, stream: HttpStream
    ) -> None:
        self._recorder = recorder
        self._slot = slot
        self._method = method
        self._request = request
        self._data = data
        self._status = stream.status
        self._headers = dict(stream.headers)
        self._pieces: list[bytes] = []
        self._timing: list[tuple[float, int]] = []
        self._start = time.monotonic()
        self._end: BodyEnd = "open"
        self._lock = threading.Lock()
        self._written = False

    def read(self, data: bytes) -> None:
        with self._lock:
            if self._written:
                return
            if data:
                self._pieces.append(data)
                self._timing.append((time.monotonic() - self._start, len(data)))
            elif self._end == "open":
                self._end = "complete"

    def failed(self) -> None:
        with self._lock:
            if self._end == "open":
                self._end = "cut"

    def closed(self) -> None:
        self.write()

    def write(self) -> None:
        """Put the interaction in its place, once."""
        with self._lock:
            if self._written:
                return
            self._written = True
            pieces, timing, end = list(self._pieces), list(self._timing), self._end
        redaction = Redaction(self._recorder.fields, self._request.secrets)
        headers = dict(self._request.headers)
        interaction = Interaction(
            method=self._method.upper(),
            url=redaction.url(self._request.url),
            request_headers=redaction.headers(headers),
            request_body=redaction.request_body(self._data, _content_type(headers)),
            status=self._status,
            response_headers=redaction.answer_headers(self._headers),
            body=redaction.answer_body(b"".join(pieces), _content_type(self._headers)),
            end=end,
            timing=tuple(timing) if self._recorder.timing else (),
        )
        self._recorder.put(self._slot, interaction)


class Recorder:
    """Records every HTTP exchange while installed (rules 1-3); :meth:`interactions`
    gives them, in the order sent."""

    def __init__(self, *, fields: tuple[str, ...] = (), timing: bool = False) -> None:
        self.fields = fields
        self.timing = timing
        self._lock = threading.Lock()
        self._slots: list[Interaction | None] = []
        self._open: dict[int, _Tape] = {}
        self._dropped: set[int] = set()

    def exchange(self, transport: HttpTransport, exchange: Exchange) -> HttpStream:
        method, request, data = exchange.method, exchange.request, exchange.data
        with self._lock:  # rule 2: its place, when sent
            slot = len(self._slots)
            self._slots.append(None)
        try:
            stream = transport.send_direct(exchange)
        except BaseException:
            with self._lock:
                self._dropped.add(slot)  # rule 1: no answer, nothing recorded
            raise
        tape = _Tape(self, slot, method, request, data or b"", stream)
        with self._lock:
            self._open[slot] = tape
        stream.tap = tape
        return stream

    def put(self, slot: int, interaction: Interaction) -> None:
        """A stream's interaction, written in its place (rule 3)."""
        with self._lock:
            self._slots[slot] = interaction
            self._open.pop(slot, None)

    def interactions(self) -> list[Interaction]:
        """Every exchange recorded so far, in the order sent; a stream still open is
        written with what it read (rule 3)."""
        with self._lock:
            still_open = list(self._open.values())
        for tape in still_open:
            tape.write()
        with self._lock:
            return [item for slot, item in enumerate(self._slots) if item is not None and slot not in self._dropped]
