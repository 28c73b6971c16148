"""The three web streams of a chunk stream: the Vercel AI SDK's UI message stream, our own
chunk dicts as server-sent events, and the same as NDJSON — each a ready
:class:`~dshstream._web.wsgi.WsgiStream` with its headers.

Contract: composition only — the parts (:mod:`~dshstream._web.ui_stream`), the safe chunk
dicts (:mod:`~dshstream._web.chunk_dicts`), the framing (:mod:`~dshstream._web.framing`)
and the WSGI answer; arguments are checked when called, naming the argument.

1. **The UI message stream** (:func:`ui_message_stream`): the parts as server-sent
   events, then ``data: [DONE]``; the headers the AI SDK sends with it
   (``content-type: text/event-stream``, ``cache-control: no-cache``,
   ``x-vercel-ai-ui-message-stream: v1``, ``x-accel-buffering: no``), less
   ``connection`` (hop-by-hop: the WSGI server's to set). What ``useChat`` (and
   ``DefaultChatTransport``) reads.
2. **Our chunk dicts** as server-sent events (:func:`chunk_sse_stream`, for
   ``EventSource`` or ``fetch``) or as NDJSON (:func:`chunk_ndjson_stream`,
   ``application/x-ndjson``), each with ``cache-control: no-cache`` and
   ``x-accel-buffering: no``.
3. **Closed together.** Closing the answer (the client went away) closes the chunk stream
   (:mod:`~dshstream._web.wsgi` rule 2).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .._core.types import StreamChunk
from .chunk_dicts import browser_dicts
from .framing import SSE_DONE, ndjson_line, sse_message
from .ui_stream import ui_message_parts
from .wsgi import WsgiStream

__all__ = ["NDJSON_HEADERS", "SSE_HEADERS", "UI_MESSAGE_STREAM_HEADERS", "chunk_ndjson_stream", "chunk_sse_stream", "ui_message_stream"]

#: the UI message stream's headers (rule 1)
UI_MESSAGE_STREAM_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
#: our chunk dicts as server-sent events (rule 2)
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no"}
#: our chunk dicts as NDJSON (rule 2)
NDJSON_HEADERS = {"content-type": "application/x-ndjson; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no"}


def _framed(dicts: Iterator[dict[str, Any]], frame: Any, last: bytes = b"") -> Iterator[bytes]:
    try:
        for value in dicts:
            yield frame(value)
        if last:
            yield last
    finally:
        close = getattr(dicts, "close", None)
        if callable(close):
            close()


def ui_message_stream(
    chunks: Iterable[StreamChunk], *, message_id: str | None = None, finish_reason: bool = True
) -> WsgiStream:
    """``chunks`` as the AI SDK's UI message stream, ready to return from a WSGI view
    (rule 1); ``message_id`` and ``finish_reason``: :func:`ui_message_parts`."""
    parts = ui_message_parts(chunks, message_id=message_id, finish_reason=finish_reason)
    return WsgiStream(_framed(parts, sse_message, SSE_DONE), headers=UI_MESSAGE_STREAM_HEADERS, source=chunks)


def chunk_sse_stream(chunks: Iterable[StreamChunk]) -> WsgiStream:
    """``chunks`` as server-sent events of their browser-safe dicts (rule 2)."""
    return WsgiStream(_framed(browser_dicts(chunks), sse_message), headers=SSE_HEADERS, source=chunks)


def chunk_ndjson_stream(chunks: Iterable[StreamChunk]) -> WsgiStream:
    """``chunks`` as NDJSON of their browser-safe dicts (rule 2)."""
    return WsgiStream(_framed(browser_dicts(chunks), ndjson_line), headers=NDJSON_HEADERS, source=chunks)
