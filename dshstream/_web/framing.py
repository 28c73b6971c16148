"""The bytes of a web stream: server-sent events and NDJSON, one message per piece.

Contract: stdlib only, pure functions; JSON as browsers' ``JSON.stringify`` writes it
(compact, UTF-8, non-ASCII as it is).

1. **One piece per message.** Each function returns the complete bytes of one message, so
   a server that writes (and flushes) every piece it is given sends each message as soon
   as it exists — never half of one, never two held back together.
2. **Server-sent events** are ``data: <json>\\n\\n``: one ``data`` line (JSON has no raw
   newline), no event name (``EventSource.onmessage`` and the AI SDK's parser read it);
   :data:`SSE_DONE` is the UI message stream's last message, ``data: [DONE]``.
3. **NDJSON** is one JSON document per line, ``\\n``-terminated.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["SSE_DONE", "ndjson_line", "sse_message"]

#: the UI message stream's terminator (rule 2)
SSE_DONE = b"data: [DONE]\n\n"


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def sse_message(value: Any) -> bytes:
    """One server-sent event carrying ``value`` as JSON (rule 2)."""
    return b"data: " + _json(value) + b"\n\n"


def ndjson_line(value: Any) -> bytes:
    """One NDJSON line carrying ``value`` (rule 3)."""
    return _json(value) + b"\n"
