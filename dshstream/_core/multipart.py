"""multipart/form-data bodies (RFC 7578), built in memory: the file upload a provider
batch starts with.

Contract (sans-IO, stdlib only):

1. :func:`encode_multipart` takes text fields and files (name, filename, media type,
   bytes) and returns the body and its ``content-type`` (with the boundary).
2. The boundary is random (``secrets.token_hex``) and checked against every part: a part
   that contains it gets a fresh one, so a body never ends early.
3. Field names, filenames and media types are caller values: a quote, CR, LF or NUL in
   one is a ``ConfigurationError`` naming it (it would break the part headers).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence

from .validate import invalid

__all__ = ["MultipartFile", "encode_multipart"]

MultipartFile = tuple[str, str, str, bytes]
"""A file part: field name, filename, media type, content."""

_BAD = ('"', "\r", "\n", "\0")


def _checked(value: str, what: str) -> str:
    if any(bad in value for bad in _BAD):
        raise invalid(f"multipart {what} {value!r} holds a quote, CR, LF or NUL")  # rule 3
    return value


def _parts(fields: Mapping[str, str], files: Sequence[MultipartFile]) -> list[tuple[bytes, bytes]]:
    parts: list[tuple[bytes, bytes]] = []
    for name, value in fields.items():
        head = f'Content-Disposition: form-data; name="{_checked(name, "field name")}"\r\n\r\n'
        parts.append((head.encode("utf-8"), value.encode("utf-8")))
    for name, filename, media_type, content in files:
        head = (
            f'Content-Disposition: form-data; name="{_checked(name, "field name")}"; '
            f'filename="{_checked(filename, "filename")}"\r\n'
            f"Content-Type: {_checked(media_type, 'media type')}\r\n\r\n"
        )
        parts.append((head.encode("utf-8"), content))
    return parts


def encode_multipart(fields: Mapping[str, str], files: Sequence[MultipartFile] = ()) -> tuple[bytes, str]:
    """The ``multipart/form-data`` body of ``fields`` and ``files``, and its content type
    (rules 1, 2)."""
    parts = _parts(fields, files)
    while True:
        boundary = "dshstream-" + secrets.token_hex(16)
        marker = boundary.encode("ascii")
        if not any(marker in head or marker in content for head, content in parts):
            break  # rule 2: never a boundary that a part contains
    out: list[bytes] = []
    for head, content in parts:
        out += [b"--", marker, b"\r\n", head, content, b"\r\n"]
    out += [b"--", marker, b"--\r\n"]
    return b"".join(out), f"multipart/form-data; boundary={boundary}"
