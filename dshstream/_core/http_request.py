"""HttpRequest: the value an adapter prepares and the transport sends (sans-IO).

Contract: stdlib + redact + validate only. ``repr`` masks credential headers and key-like
query values, so logging a request never logs a key. The body is serialized once, when the
request is built: strict JSON (``allow_nan=False``), compact UTF-8; a body JSON can't carry
(``NaN``/``Infinity``, an object that is not JSON, a cycle) raises
:class:`~dshstream._core.errors.ConfigurationError` (``INVALID_OPTIONS``) naming the body, so a
caller mistake never reaches the wire or turns into a transport failure. Lone surrogates
in text (``"\\ud800"``) are sent as U+FFFD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .redact import redact
from .validate import invalid

SENSITIVE_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "proxy-authorization", "cookie", "x-amz-security-token"}
)
_SURROGATE = re.compile("[\ud800-\udfff]")


# ``json.dumps`` with these arguments builds an encoder per call; one built once encodes the
# same text (it keeps no state between calls).
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def encode_json_body(body: object) -> bytes:
    """``body`` as compact, strict JSON in UTF-8 (see the module docstring)."""
    try:
        text = _encode(body)
    except (ValueError, TypeError, RecursionError) as exc:
        why = redact(str(exc), limit=120)
        raise invalid(
            f"the request body is not valid JSON ({type(exc).__name__}: {why}); check "
            "GenerateOptions.extra_body and ToolSpec.parameters for NaN/Infinity, objects "
            "that are not JSON (sets, bytes, custom classes) and cycles"
        ) from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate somewhere in the text
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """A POST of a JSON body to ``url``; ``secrets`` are the credentials it carries."""

    url: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    secrets: tuple[str, ...] = field(default=(), repr=False)
    _data: bytes = field(default=b"", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_data", encode_json_body(self.body))

    def body_bytes(self) -> bytes:
        """The JSON body, compact UTF-8 (serialized when the request was built)."""
        return self._data

    def with_headers(self, headers: Mapping[str, str], secrets: tuple[str, ...] = ()) -> HttpRequest:
        """This request with ``headers`` instead of its own and ``secrets`` added — the
        body bytes reused, not serialized again (a signer adds headers once per attempt)."""
        signed = object.__new__(HttpRequest)
        for name, value in (
            ("url", self.url),
            ("headers", headers),
            ("body", self.body),
            ("secrets", self.secrets + secrets),
            ("_data", self._data),
        ):
            object.__setattr__(signed, name, value)
        return signed

    def with_url(self, url: str) -> HttpRequest:
        """This request sent to ``url`` instead — headers, body bytes and secrets the same
        (a cassette replays it on 127.0.0.1)."""
        moved = object.__new__(HttpRequest)
        for name, value in (
            ("url", url),
            ("headers", self.headers),
            ("body", self.body),
            ("secrets", self.secrets),
            ("_data", self._data),
        ):
            object.__setattr__(moved, name, value)
        return moved

    def __repr__(self) -> str:
        headers = {
            k: ("[REDACTED]" if k.lower() in SENSITIVE_HEADERS else redact(v, self.secrets))
            for k, v in self.headers.items()
        }
        return f"HttpRequest(url={redact(self.url, self.secrets)!r}, headers={headers!r})"
