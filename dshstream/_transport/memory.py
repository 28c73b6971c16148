"""MemoryTransport: a transport that serves given answers from memory, without sockets.

Contract: no ``requests`` calls, no sockets, no network; for tests (the library's and its
users'): give it the answers a server would send — status, headers, the body in pieces,
pauses, a failure — and hand it to whatever takes a
:class:`~dshstream._transport.interface.Transport`::

    transport = MemoryTransport(MemoryAnswer([b'data: {"a":1}\\n\\n', 0.5, b"data: [DONE]\\n\\n"]))

1. **Answers in order.** Each request takes the next answer given (the last one repeats),
   or the one ``handler`` returns for it; ``bytes`` stand for a 200 event stream with that
   body. A :class:`MemoryAnswer`'s body is read in the pieces given: ``bytes`` are one
   read each, a ``float`` is a pause of that many seconds (``math.inf``: the server goes
   quiet for good), an exception makes that read fail with it.
2. **The outcomes of HTTP.** Everything but the wire is shared with
   :class:`~dshstream._transport.client.HttpTransport`: the limits checked before sending
   (:mod:`~dshstream._transport.base` rule 1), the status judged and non-stream bodies
   refused (:mod:`~dshstream._transport.answers`), a failed GET sent once more (base rule
   3), the request id taken from the headers (never one echoing a credential; base rule
   4), and
   ``fail`` and a failing read mapped as a real send or read failure
   (:mod:`~dshstream._transport.failures`). The same answer fails over HTTP and here with
   the same code.
3. **The limits hold while it waits.** The caller's cancel, the total deadline, the idle
   clock (restarted by ``touch()``, as the consumer calls it on content), ``abort()`` and
   ``close()`` end a wait for headers (``delay``) and a pause between pieces within one
   watchdog tick (~50 ms), with the error the HTTP stream raises (``ABORTED``,
   ``TIMEOUT``); a ``KeyboardInterrupt`` while it waits for headers closes the stream. A
   stream closed before its headers fails to open with ``ABORTED``; closed while its body
   is read, its iteration simply ends.
4. **What happened is kept.** :attr:`MemoryTransport.requests` lists every request sent
   (:class:`SentRequest`: method, URL, headers, body bytes), :attr:`MemoryTransport.streams`
   every stream opened. A stream's ``release()`` counts as handing a connection back
   (:attr:`MemoryStream.released`) only when nothing but the end was left to read (pauses
   aside): bytes or a failure after the terminal marker keep it out of the pool, as over
   HTTP.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._core.http_request import HttpRequest
from .._core.redact import redact
from .._core.validate import invalid
from .base import BaseStream, BaseTransport
from .failures import read_failure, send_failure
from .watchdog import Limits, watchdog

__all__ = ["MemoryAnswer", "MemoryStream", "MemoryTransport", "Piece", "SentRequest"]

#: one piece of a body: bytes (one read), a pause in seconds, or a read that fails
Piece = bytes | float | BaseException


def _event_stream() -> dict[str, str]:
    return {"content-type": "text/event-stream"}


@dataclass(frozen=True, slots=True)
class MemoryAnswer:
    """One answer as a server would send it (rule 1)."""

    #: the body: all of it in one read, or the pieces to read (rule 1)
    body: bytes | Sequence[Piece] = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=_event_stream)
    #: seconds before the headers arrive (``math.inf``: never)
    delay: float = 0.0
    #: the send fails with this instead of answering (``ConnectionRefusedError()``...)
    fail: BaseException | None = None

    def __post_init__(self) -> None:
        if isinstance(self.status, bool) or not isinstance(self.status, int) or not 100 <= self.status <= 599:
            raise invalid("MemoryAnswer.status must be an HTTP status (100-599)")
        if not _is_seconds(self.delay):
            raise invalid("MemoryAnswer.delay must be a number of seconds >= 0")
        if self.fail is not None and not isinstance(self.fail, BaseException):
            raise invalid("MemoryAnswer.fail must be an exception instance", wrong_type=True)
        body: object = self.body
        if not isinstance(body, (bytes, Sequence)) or isinstance(body, str):
            raise invalid("MemoryAnswer.body must be bytes or a sequence of pieces", wrong_type=True)
        for piece in self.pieces():
            if not isinstance(piece, (bytes, BaseException)) and not _is_seconds(piece):
                raise invalid(
                    "MemoryAnswer.body pieces must be bytes, seconds >= 0 or exceptions", wrong_type=True
                )

    @classmethod
    def of_json(cls, payload: object, *, status: int = 200, headers: Mapping[str, str] | None = None) -> MemoryAnswer:
        """A JSON document as the whole body (``application/json``)."""
        return cls(
            body=json.dumps(payload).encode("utf-8"),
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
        )

    def pieces(self) -> tuple[Piece, ...]:
        """The body's pieces (rule 1)."""
        return (self.body,) if isinstance(self.body, bytes) else tuple(self.body)


def _is_seconds(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True, slots=True, repr=False)
class SentRequest:
    """One request the transport was given (rule 4)."""

    method: str
    url: str
    headers: Mapping[str, str]
    #: the body as it would go on the wire
    data: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.data)

    def __repr__(self) -> str:  # headers and body may carry credentials
        return f"SentRequest({self.method} {redact(self.url)})"


class MemoryStream(BaseStream):
    """The stream of one :class:`MemoryAnswer`: a
    :class:`~dshstream._transport.interface.ResponseStream` (rules 1-4), with the limits
    and abort state of every stream (watchdog rule 3) and what every stream keeps of its
    answer (base rule 4)."""

    def __init__(self, request: HttpRequest, answer: MemoryAnswer, limits: Limits, started: float) -> None:
        super().__init__(request, limits, started)
        #: the stream ended cleanly and was released (a connection back to the pool)
        self.released = False
        self._answer = answer
        self._pieces = answer.pieces()
        self._at = 0  # the next piece to read
        self._arrived = False
        self._woken = threading.Event()  # set by an abort or a close: a wait ends
        watchdog.add(self)

    def arrive(self) -> None:
        """Wait for the headers (``delay``) under the limits; then take the answer's status
        and headers, or raise its send failure or the abort's error (rules 2, 3)."""
        try:
            self._pause(self._answer.delay)
        except BaseException:  # KeyboardInterrupt while waiting: the request is given up
            self._give_up()
            raise
        with self._lock:
            self._arrived = True
            stopped = self._abort_code is not None or self._closed
        if stopped:
            self.close()
            self.raise_if_aborted()
        if self._answer.fail is not None:
            self.close()
            raise send_failure(self._answer.fail, self._request, self._provider) from None
        self._answered(self._answer.status, self._answer.headers)

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self._woken.wait(None if math.isinf(seconds) else seconds)

    # ------------------------------------------------------------------ control

    @property
    def closed(self) -> bool:
        """Whether the stream was closed (or released)."""
        return self._closed

    def _interrupt(self, held: Any) -> None:
        self._woken.set()  # a pause or the wait for headers ends (watchdog rule 3)

    def release(self) -> None:
        """The stream reached its terminal marker: released when nothing but the end is
        left to read, else just closed (rule 4)."""
        with self._lock:
            rest = self._pieces[self._at :]
            self.released = (
                self._arrived
                and self._abort_code is None
                and not self._closed
                and not any(isinstance(piece, BaseException) or (isinstance(piece, bytes) and piece) for piece in rest)
            )
        self.close()

    def close(self) -> None:
        """End the stream (idempotent); before its headers, the open fails ``ABORTED``."""
        with self._lock:
            if self._closed:
                return
            if not self._arrived and self._abort_code is None:
                self._abort_closed()
            self._closed = True
        watchdog.remove(self)
        self._woken.set()

    # ------------------------------------------------------------------ reading

    def __iter__(self) -> Iterator[bytes]:
        if self.prefix:
            prefix, self.prefix = self.prefix, b""
            yield prefix
        pieces = self._pieces
        while self._at < len(pieces) and self._abort_code is None and not self._closed:
            piece = pieces[self._at]
            self._at += 1
            if isinstance(piece, bytes):
                if piece:
                    yield piece
            elif isinstance(piece, BaseException):
                self.raise_if_aborted()
                raise read_failure(piece, self._request.secrets, self._provider, self.request_id) from None
            else:
                self._pause(piece)
        self.raise_if_aborted()


class MemoryTransport(BaseTransport[MemoryStream]):
    """A :class:`~dshstream._transport.interface.Transport` serving ``answers`` in order
    (the last one repeating), or what ``handler`` returns for each request (rules 1-4)."""

    def __init__(
        self,
        *answers: MemoryAnswer | bytes,
        handler: Callable[[SentRequest], MemoryAnswer | bytes] | None = None,
    ) -> None:
        if bool(answers) == (handler is not None):
            raise invalid("MemoryTransport takes answers or a handler (one of the two)")
        self._answers = tuple(_answer(a) for a in answers)
        self._handler = handler
        self._lock = threading.Lock()
        self._served = 0
        #: every request sent, in order (rule 4)
        self.requests: list[SentRequest] = []
        #: every stream opened, in order (rule 4)
        self.streams: list[MemoryStream] = []

    def __repr__(self) -> str:
        return f"MemoryTransport({len(self.requests)} requests served)"

    def _exchange(
        self, method: str, request: HttpRequest, data: bytes | None, limits: Limits, started: float, now: float
    ) -> MemoryStream:
        sent = SentRequest(method=method, url=request.url, headers=dict(request.headers), data=data or b"")
        with self._lock:
            self.requests.append(sent)
            index = min(self._served, len(self._answers) - 1)
            self._served += 1
        answer = _answer(self._handler(sent)) if self._handler is not None else self._answers[index]
        stream = MemoryStream(request, answer, limits, started)
        with self._lock:
            self.streams.append(stream)
        stream.arrive()
        return stream


def _answer(value: MemoryAnswer | bytes) -> MemoryAnswer:
    if isinstance(value, MemoryAnswer):
        return value
    if isinstance(value, bytes):
        return MemoryAnswer(value)
    raise invalid("a MemoryTransport answer must be a MemoryAnswer or bytes", wrong_type=True)
