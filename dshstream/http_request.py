"""HttpRequest: the value an adapter prepares and the transport sends (sans-IO).

Contract: stdlib + redact only. ``repr`` masks credential headers and key-like query
values, so logging a request never logs a key.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .redaction import redact

SENSITIVE_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization", "cookie"}
)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A POST of a JSON body to ``url``; ``secrets`` are the credentials it carries."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def body_bytes(self) -> bytes:
        """The JSON body, compact UTF-8."""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def __repr__(self) -> str:
        headers = {
            k: ("[REDACTED]" if k.lower() in SENSITIVE_HEADERS else redact(v, self.secrets))
            for k, v in self.headers.items()
        }
        return f"HttpRequest(url={redact(self.url, self.secrets)!r}, headers={headers!r})"
