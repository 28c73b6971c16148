"""dshstream.web: stream a model's answer to a browser from a synchronous web app (Flask,
Django, any WSGI server).

Contract: nothing here needs a web framework; what it returns is plain WSGI (PEP 3333).

- :func:`ui_message_stream` turns a chunk stream — what ``LlmService.stream`` or
  ``run_tools`` returns — into the Vercel AI SDK's UI message stream (server-sent events,
  header ``x-vercel-ai-ui-message-stream: v1``), what ``useChat`` and
  ``readUIMessageStream`` read: each part with exactly the keys its schema documents, every
  part opened closed, a failure sent as its classified headline only (``errorText``: never
  its detail, never a key), ``data: [DONE]`` last. :func:`ui_message_parts` gives the same
  parts as dicts.
- :func:`chunk_sse_stream` and :func:`chunk_ndjson_stream` send our own chunk dicts
  (``chunk_to_dict``, without a failure's detail or the replay state) as server-sent
  events or NDJSON.
- Each returns a :class:`WsgiStream`: a WSGI body that yields one message per piece (the
  server flushes each), carries its headers (``stream.headers``, ``x-accel-buffering: no``
  included), is a WSGI application itself (a Flask view may return it), and whose
  ``close()`` — called by the server when the client disconnects — closes the model's
  stream at once.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._web.responses import (
        chunk_ndjson_stream as chunk_ndjson_stream,
        chunk_sse_stream as chunk_sse_stream,
        ui_message_stream as ui_message_stream,
    )
    from ._web.ui_stream import ui_message_parts as ui_message_parts
    from ._web.wsgi import WsgiStream as WsgiStream

__all__ = _exports.public_names("web")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("web", name)


def __dir__() -> list[str]:
    return _exports.dir_of("web")
