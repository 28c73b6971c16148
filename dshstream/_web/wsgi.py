"""WsgiStream: a streamed answer any WSGI server sends as it is made, and stops when the
client goes away.

Contract: stdlib only; no server of its own. A :class:`WsgiStream` is both a WSGI response
body (an iterable of bytes with ``close()``, PEP 3333) and a WSGI application (call it with
``environ, start_response``); Flask views may return it as it is, Django wraps it in
``StreamingHttpResponse(stream, headers=stream.headers)``.

1. **Each piece at once.** Iteration yields one complete message per piece (an event, a
   line); a WSGI server writes and flushes each piece it gets, so the browser has it as
   soon as it exists. :attr:`WsgiStream.headers` are the answer's headers (the content
   type, ``cache-control: no-cache``, ``x-accel-buffering: no`` so nginx does not buffer
   it, and the protocol's own); none is hop-by-hop (WSGI forbids ``connection``).
2. **A client that goes away closes the model's stream.** When the client disconnects the
   server's next write fails and the server closes the iterable (PEP 3333): :meth:`close`
   — idempotent, from any thread, never raising — closes the source (a ``ChunkStream``
   releases its HTTP connection to the provider at once, even while another thread is
   blocked reading it) and then the pieces' generator. Iteration after ``close`` ends.
3. **Nothing raises out.** The pieces end in band when the source fails (the web streams'
   generators end with an error part or finish); the iterable never raises into the
   server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .._core.closing import close_quietly

__all__ = ["WsgiStream"]


class WsgiStream:
    """A WSGI answer that streams ``pieces`` (rules 1-3): iterate it, or call it as a
    WSGI application; :meth:`close` closes ``source`` too."""

    def __init__(
        self,
        pieces: Iterable[bytes],
        *,
        headers: Mapping[str, str],
        source: object = None,
        status: str = "200 OK",
    ) -> None:
        self._pieces = iter(pieces)
        self._source = source
        self._closed = False
        self._lock = threading.Lock()
        #: the answer's status line
        self.status = status
        #: the answer's headers (rule 1)
        self.headers: dict[str, str] = dict(headers)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"WsgiStream({self.headers.get('content-type')!r}, {state})"

    def __iter__(self) -> Iterator[bytes]:
        # an iterable, not an iterator: Flask runs an iterable it can call as a WSGI
        # application (with these headers), where it would wrap an iterator as an HTML body
        for piece in self._pieces:
            if self._closed:
                return
            yield piece

    def __call__(self, environ: Mapping[str, Any], start_response: Callable[..., Any]) -> WsgiStream:
        """As a WSGI application: start the answer, and return this iterable."""
        start_response(self.status, list(self.headers.items()))
        return self

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def close(self) -> None:
        """Close the source, then the pieces (rule 2); idempotent, never raises."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        close_quietly(self._source)
        close_quietly(self._pieces, "the response's pieces")
