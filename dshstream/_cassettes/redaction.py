"""What a cassette keeps of a request and of its answer: secrets out before anything is
written, and the same redaction when a replayed request is matched.

Contract: stdlib and the core's redaction only; pure functions of the values given and the
secrets known (the request's own, and the process registry every adapter registers its
key in, :func:`~dshstream._core.redact.known_secrets`).

1. **Headers.** The credential headers (:data:`CREDENTIAL_HEADERS`, AWS SigV4's
   ``x-amz-date`` and ``x-amz-content-sha256`` among them: they change with every
   signature) keep their name, their value becomes ``[REDACTED]``; so does any header
   whose name reads as a credential (:func:`~dshstream._core.redact.is_sensitive_key`, or
   a name ending in ``secret``, ``token``, ``key``, ``password``, ``credential(s)`` or
   ``signature``, case, ``-`` and ``_`` aside: ``x-client-secret``, ``x-auth-token``).
   Every other value has each known secret removed (a rate limit's
   ``...-remaining-tokens`` is kept).
2. **The URL** goes through :func:`~dshstream._core.redact.redact`: a key in the query
   (``?key=...``), a password in the authority and every known secret are removed.
3. **A request body.** A JSON body keeps its shape: the value of a sensitive key
   (``api_key``, ``token``, ``password``...) and of each configured field becomes
   ``"[REDACTED]"``, and every string goes through
   :func:`~dshstream._core.redact.redact`; it is written back compact, key order kept. A
   field is named by a key (``"user"``: that key at any depth) or a dotted path from the
   top (``"metadata.user_id"``). A form body (an OAuth token request) is treated the same,
   field by field; any other body has the known secrets removed.
4. **An answer's body** is kept byte for byte, except that each known secret it echoes is
   replaced by ``[REDACTED]``; a JSON document (a token endpoint's answer) also has its
   sensitive keys' values redacted (``access_token``, ``id_token``...). An event stream is
   never rewritten beyond that: the replay serves what the provider sent.
5. **The same on both sides.** A replayed request is redacted exactly like a recorded one
   before it is matched, so neither a changed key nor a configured field (a user id, a
   timestamp) stops a match: :func:`request_key` is what matching compares.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from .._core.redact import MIN_SECRET_LENGTH, REDACTED, is_sensitive_key, known_secrets, redact

__all__ = [
    "CREDENTIAL_HEADERS",
    "Redaction",
    "request_key",
]

#: headers whose value is never written (rule 1)
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "x-amz-security-token",
        "x-amz-date",
        "x-amz-content-sha256",
    }
)


@dataclass(frozen=True, slots=True)
class Redaction:
    """The redaction of one cassette: the configured body ``fields`` (rule 3) and the
    secrets of the request at hand (added to the registry's)."""

    fields: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()

    def _secrets(self) -> list[str]:
        found = set(self.secrets) | set(known_secrets())
        # longest first: a key that contains another is removed whole
        return sorted((s for s in found if s and len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True)

    # ------------------------------------------------------------------ requests

    def url(self, url: str) -> str:
        """``url`` as written (rule 2)."""
        return redact(url, self._secrets())

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` as written (rule 1), in their order."""
        secrets = self._secrets()
        return {name: REDACTED if _credential(name) else _exact(value, secrets) for name, value in headers.items()}

    def request_body(self, data: bytes, content_type: str | None = None) -> bytes:
        """A request body as written (rule 3)."""
        if not data:
            return b""
        secrets = self._secrets()
        try:
            value = json.loads(data)
        except ValueError:
            pass
        else:
            cleaned = _walk(value, self.fields, (), secrets)
            return json.dumps(cleaned, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        text = data.decode("utf-8", "replace")
        if (content_type or "").split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
            pairs = parse_qsl(text, keep_blank_values=True)
            return urlencode(
                [(k, REDACTED if _named(k, (k,), self.fields) or is_sensitive_key(k) else redact(v, secrets)) for k, v in pairs]
            ).encode("ascii")
        return redact(text, secrets).encode("utf-8")

    # ------------------------------------------------------------------ answers

    def answer_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """An answer's headers as written (rule 1)."""
        return self.headers(headers)

    def answer_body(self, data: bytes, content_type: str | None) -> bytes:
        """An answer's body as written (rule 4)."""
        secrets = self._secrets()
        if not data:
            return data
        if "json" in (content_type or "").lower() and "event-stream" not in (content_type or "").lower():
            try:
                value = json.loads(data)
            except ValueError:
                pass
            else:
                if _has_sensitive(value):
                    cleaned = _walk(value, (), (), secrets, rewrite_strings=False)
                    return json.dumps(cleaned, ensure_ascii=False).encode("utf-8")
        if not secrets:
            return data
        out = data
        for secret in secrets:
            raw = secret.encode("utf-8")
            if raw in out:
                out = out.replace(raw, REDACTED.encode("ascii"))
        return out


_CREDENTIAL_ENDINGS = ("secret", "token", "key", "password", "credential", "credentials", "signature")


def _credential(name: str) -> bool:
    """Whether the header ``name`` carries a credential (rule 1)."""
    squashed = "".join(ch for ch in name.lower() if ch.isalnum())
    return name.lower() in CREDENTIAL_HEADERS or is_sensitive_key(name) or squashed.endswith(_CREDENTIAL_ENDINGS)


def _exact(value: str, secrets: list[str]) -> str:
    for secret in secrets:
        if secret in value:
            value = value.replace(secret, REDACTED)
    return value


def _named(key: str, path: tuple[str, ...], fields: tuple[str, ...]) -> bool:
    dotted = ".".join(path)
    return any(name == dotted if "." in name else name == key for name in fields)


def _has_sensitive(value: Any) -> bool:
    if isinstance(value, dict):
        return any((isinstance(k, str) and is_sensitive_key(k)) or _has_sensitive(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_sensitive(item) for item in value)
    return False


def _walk(value: Any, fields: tuple[str, ...], path: tuple[str, ...], secrets: list[str], *, rewrite_strings: bool = True) -> Any:
    """A copy of the JSON ``value``: named and sensitive keys' values redacted, strings
    redacted (rule 3), at any depth."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            here = (*path, key)
            if is_sensitive_key(key) or _named(key, here, fields):
                out[key] = REDACTED
            else:
                out[key] = _walk(item, fields, here, secrets, rewrite_strings=rewrite_strings)
        return out
    if isinstance(value, list):
        return [_walk(item, fields, path, secrets, rewrite_strings=rewrite_strings) for item in value]
    if isinstance(value, str):
        return redact(value, secrets) if rewrite_strings else _exact(value, secrets)
    return value


def request_key(method: str, url: str, body: bytes, match_on: Iterable[str]) -> tuple[object, ...]:
    """What matching compares (rule 5): per criterion of ``match_on``, in order — the
    method, the redacted URL, its path and query alone, or the body's digest (the SHA-256
    of its redacted form, JSON compared by value: key order and spacing aside)."""
    parts: list[object] = []
    for criterion in match_on:
        if criterion == "method":
            parts.append(method.upper())
        elif criterion == "url":
            parts.append(url)
        elif criterion == "path":
            split = urlsplit(url)
            parts.append(split.path + (f"?{split.query}" if split.query else ""))
        elif criterion == "body":
            parts.append(body_digest(body))
        else:  # checked where the cassette is opened
            raise AssertionError(criterion)
    return tuple(parts)


def body_digest(body: bytes) -> str:
    """The SHA-256 of a (redacted) request body; a JSON body by its value (rule 5)."""
    try:
        value = json.loads(body) if body else None
    except ValueError:
        canonical = body
    else:
        canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(canonical).hexdigest()
