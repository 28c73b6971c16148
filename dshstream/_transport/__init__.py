"""The transport: the only package that imports ``requests`` (and ``urllib3``).

A small protocol with two implementations: :class:`~.interface.Transport` (what an adapter
calls: ``open`` a stream, ``get_json``, ``post_form``) is implemented by
:class:`HttpTransport` over a ``requests.Session`` and by :class:`MemoryTransport`, which
serves given answers without sockets. One concern per file, each with its own numbered
rules in its docstring:

==============  ==========================================================================
file            concern
==============  ==========================================================================
interface.py    the ``Transport`` and ``ResponseStream`` protocols, the shared defaults
base.py         BaseTransport: limits before sending, the answer judged, a GET tried
                twice; BaseStream: what every stream keeps of its answer
answers.py      which status and 2xx bodies are handed on; the failure for the others
client.py       HttpTransport: a watched session, socket timeouts within the limits
stream.py       HttpStream: the send worker, abort, the body reads, the short release
watchdog.py     the one thread that ends streams whose limits ran out; a call's Limits
                and their one test; every stream's abort state
pool.py         the pool and connection hooks: cut-off before headers, nothing sent
                after an abort, a caller's session watched
readers.py      prompt and bulk body reads, the inflater, past a 1xx; every private
                attribute of http.client and urllib3 read anywhere in the package
sockets.py      shutting a socket down so a blocked call returns
failures.py     foreign exceptions mapped once, redacted; TLS and proxy failures said
tls.py          TLS trust, client certificates, the system trust store and proxies:
                requests' environment honoured, sent with every request
memory.py       MemoryTransport: answers from memory, the same outcomes, no sockets
websocket.py    WebSocket: one stdlib RFC 6455 client connection — connect, TLS, upgrade,
                frames, pings, the close handshake
ws_stream.py    WsStream: one Responses turn on a socket, read by the pump as SSE events
ws_transport.py WebSocketTransport: Responses turns over one kept socket, the rest over
                HTTP; reconnects, the connection cap, the fallback
ws_chain.py     a turn that continues the socket's last response, sent as
                ``previous_response_id`` plus its new items
==============  ==========================================================================

The names below are the ones the rest of the package imports; the protocol is
:class:`dshstream._transport.interface.Transport`.
"""

from __future__ import annotations

from .client import DEFAULT_CONNECT_TIMEOUT as DEFAULT_CONNECT_TIMEOUT
from .client import HttpTransport as HttpTransport
from .client import Session as Session
from .interface import DEFAULT_IDLE_TIMEOUT as DEFAULT_IDLE_TIMEOUT
from .interface import DEFAULT_QUIET_TIMEOUT as DEFAULT_QUIET_TIMEOUT
from .interface import DEFAULT_JSON_TIMEOUT as DEFAULT_JSON_TIMEOUT
from .interface import ERROR_BODY_LIMIT as ERROR_BODY_LIMIT
from .interface import JSON_BODY_LIMIT as JSON_BODY_LIMIT
from .interface import ResponseStream as ResponseStream
from .memory import MemoryAnswer as MemoryAnswer
from .memory import MemoryStream as MemoryStream
from .memory import MemoryTransport as MemoryTransport
from .memory import SentRequest as SentRequest
from .pool import new_session as new_session
from .stream import RELEASE_WAIT as RELEASE_WAIT
from .stream import HttpStream as HttpStream


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_QUIET_TIMEOUT",
    "DEFAULT_JSON_TIMEOUT",
    "ERROR_BODY_LIMIT",
    "JSON_BODY_LIMIT",
    "RELEASE_WAIT",
    "HttpStream",
    "HttpTransport",
    "MemoryAnswer",
    "MemoryStream",
    "MemoryTransport",
    "ResponseStream",
    "SentRequest",
    "Session",
    "new_session",
]
