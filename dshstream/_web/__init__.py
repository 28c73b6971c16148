"""Streams to a browser from a synchronous web app: a chunk stream as the Vercel AI SDK's UI
message stream, or as our own chunk dicts (server-sent events, NDJSON), each a WSGI answer
that flushes every part and closes the model's stream when the client goes away.

One concern per file, each with its numbered rules:

==============  ============================================================================
file            concern
==============  ============================================================================
ui_stream.py    chunks -> the UI message stream's parts (only the documented keys; all closed)
chunk_dicts.py  chunks -> their dicts, safe for a browser (no failure detail, no replay state)
framing.py      the bytes: one server-sent event or NDJSON line per message
wsgi.py         WsgiStream: a WSGI body and application; close() closes the source
responses.py    the three streams, each with its headers
==============  ============================================================================

The public names are in :mod:`dshstream.web`.
"""

from __future__ import annotations

from .responses import chunk_ndjson_stream as chunk_ndjson_stream
from .responses import chunk_sse_stream as chunk_sse_stream
from .responses import ui_message_stream as ui_message_stream
from .ui_stream import ui_message_parts as ui_message_parts
from .wsgi import WsgiStream as WsgiStream

__all__ = ["WsgiStream", "chunk_ndjson_stream", "chunk_sse_stream", "ui_message_parts", "ui_message_stream"]
