"""The cassette file: recorded HTTP exchanges, as JSON text people read and diff.

Contract: stdlib only, no network; the file's own I/O and nothing else. A cassette is what
a recording wrote (:mod:`~dshstream._cassettes.recorder`): the redaction has happened
before an :class:`Interaction` exists (:mod:`~dshstream._cassettes.redaction`).

1. **One JSON document.** ``{"dshstream_cassette": 1, "interactions": [...]}``; each
   interaction is ``{"request": {method, url, headers, body}, "response": {status,
   headers, end, body, timing}}``. ``end`` says how the body ended when it was recorded:
   ``complete`` (read to its end), ``cut`` (a read failed: the connection broke) or
   ``open`` (the client closed it first: it stopped reading, or a limit ended it).
   ``timing``, when recorded, is one ``[seconds, bytes]`` row per read: when it returned
   (after the headers) and how many bytes it had.
2. **Readable, and diffs well.** Two-space indentation, one key per line, keys in this
   fixed order; a JSON request body as the JSON value itself (the request rebuilt from it
   has the bytes dshstream sends: compact UTF-8, key order kept); a text body as
   ``body_text``, one array item per line (each keeps its ``\\n``; CRLF and a last line
   without one are kept); a binary body as ``body_base64``, in lines of 76 characters; a
   timing row on one line; UTF-8 with non-ASCII text as it is. Saving what was loaded
   gives the same bytes.
3. **Text where it is text.** A body is text when it decodes as UTF-8 and its content type
   is absent, text, JSON, an event stream or a form; anything else — Bedrock's
   ``application/vnd.amazon.eventstream`` — is base64. Either way the bytes come back
   exactly.
4. **Checked when loaded.** A file that is not a cassette, or a field of the wrong shape,
   raises :class:`~dshstream._core.errors.ConfigurationError` naming the file and the
   field (``interactions[2].response.status``); a later version's file is refused, not
   misread. Writing is atomic (a temporary file, then a rename): a reader, or another
   process of the test run, never sees half a cassette.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias

from .._core.validate import invalid

__all__ = ["BodyEnd", "FORMAT_VERSION", "Interaction", "dump", "dumps", "load", "loads"]

#: the version written as ``dshstream_cassette``; a later one is refused (rule 4)
FORMAT_VERSION = 1
#: how a recorded body ended (rule 1)
BodyEnd: TypeAlias = Literal["complete", "cut", "open"]
_ENDS: tuple[BodyEnd, ...] = ("complete", "cut", "open")
_BASE64_LINE = 76


@dataclass(frozen=True, slots=True, repr=False)
class Interaction:
    """One recorded exchange (rule 1): ``request_body`` as dshstream sent it, redacted;
    ``body`` exactly as the stream read it, a known secret echoed in it redacted."""

    method: str
    url: str
    request_headers: Mapping[str, str]
    request_body: bytes
    status: int
    response_headers: Mapping[str, str]
    body: bytes
    end: BodyEnd = "complete"
    #: ``(seconds after the headers, bytes)`` per read; empty when not recorded
    timing: tuple[tuple[float, int], ...] = field(default=())

    def request_json(self) -> Any:
        """The request body parsed as JSON (``None`` when it is empty)."""
        return json.loads(self.request_body) if self.request_body else None

    def text(self) -> str:
        """The answer's body as text (UTF-8, undecodable bytes replaced)."""
        return self.body.decode("utf-8", "replace")

    def header(self, name: str) -> str | None:
        """The answer's header ``name`` (any case), or ``None``."""
        wanted = name.lower()
        return next((value for key, value in self.response_headers.items() if key.lower() == wanted), None)

    def __repr__(self) -> str:
        return f"Interaction({self.method} {self.url} -> {self.status}, {len(self.body)} bytes, {self.end})"


# --------------------------------------------------------------------------- writing


def _is_text_type(content_type: str | None) -> bool:
    if not content_type:
        return True
    kind = content_type.split(";", 1)[0].strip().lower()
    return (
        kind.startswith("text/")
        or kind.endswith(("json", "+json", "event-stream"))
        or kind in ("application/x-www-form-urlencoded", "application/x-ndjson", "application/jsonl")
    )


def _lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n`` (rule 2); joining the pieces gives it back."""
    pieces = text.split("\n")
    out = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        out.append(pieces[-1])
    return out


def _body_fields(data: bytes, content_type: str | None, *, as_json: bool) -> dict[str, Any]:
    """The body's field: the JSON value (request bodies), text lines, or base64 (rule 3)."""
    if not data:
        return {"body_text": []}
    if as_json:
        try:
            value = json.loads(data)
        except ValueError:
            pass
        else:
            if json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8") == data:
                return {"body": value}
    if _is_text_type(content_type):
        try:
            return {"body_text": _lines(data.decode("utf-8"))}
        except UnicodeDecodeError:
            pass
    encoded = base64.b64encode(data).decode("ascii")
    return {"body_base64": [encoded[i : i + _BASE64_LINE] for i in range(0, len(encoded), _BASE64_LINE)]}


def _header(headers: Mapping[str, str], name: str) -> str | None:
    return next((value for key, value in headers.items() if key.lower() == name), None)


def _to_document(interactions: list[Interaction] | tuple[Interaction, ...]) -> dict[str, Any]:
    rows = []
    for item in interactions:
        request: dict[str, Any] = {"method": item.method, "url": item.url, "headers": dict(item.request_headers)}
        request.update(_body_fields(item.request_body, _header(item.request_headers, "content-type"), as_json=True))
        response: dict[str, Any] = {
            "status": item.status,
            "headers": dict(item.response_headers),
            "end": item.end,
        }
        response.update(_body_fields(item.body, _header(item.response_headers, "content-type"), as_json=False))
        if item.timing:
            response["timing"] = [[round(seconds, 3), size] for seconds, size in item.timing]
        rows.append({"request": request, "response": response})
    return {"dshstream_cassette": FORMAT_VERSION, "interactions": rows}


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _write(value: Any, indent: str, out: list[str]) -> None:
    """The JSON text of ``value`` (rule 2): containers one item per line, except a list of
    numbers (a timing row), which stays on one line."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{\n")
        for position, (key, item) in enumerate(value.items()):
            out.append(f"{inner}{json.dumps(key, ensure_ascii=False)}: ")
            _write(item, inner, out)
            out.append(",\n" if position < len(value) - 1 else "\n")
        out.append(indent + "}")
    elif isinstance(value, list):
        if not value:
            out.append("[]")
        elif all(isinstance(item, (int, float)) and not isinstance(item, bool) for item in value):
            out.append("[" + ", ".join(json.dumps(item) for item in value) + "]")
        else:
            out.append("[\n")
            for position, item in enumerate(value):
                out.append(inner)
                _write(item, inner, out)
                out.append(",\n" if position < len(value) - 1 else "\n")
            out.append(indent + "]")
    else:
        assert _scalar(value), type(value)
        out.append(json.dumps(value, ensure_ascii=False))


def dumps(interactions: list[Interaction] | tuple[Interaction, ...]) -> str:
    """The cassette text of ``interactions`` (rules 1-3), ending in a newline."""
    out: list[str] = []
    _write(_to_document(interactions), "", out)
    out.append("\n")
    return "".join(out)


def dump(interactions: list[Interaction] | tuple[Interaction, ...], path: str | os.PathLike[str]) -> None:
    """Write the cassette at ``path``, atomically, its directories made (rule 4)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = dumps(interactions)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


# --------------------------------------------------------------------------- reading


class _Reader:
    """Typed reads of the parsed document, each naming the file and the field (rule 4)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, field_name: str, what: str) -> Exception:
        return invalid(f"{self.where}: {field_name} {what} (is this a dshstream cassette?)")

    def mapping(self, value: object, field_name: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field_name, "must be an object")
        return value

    def text(self, value: object, field_name: str) -> str:
        if not isinstance(value, str):
            raise self.fail(field_name, "must be a string")
        return value

    def headers(self, value: object, field_name: str) -> dict[str, str]:
        found = self.mapping(value, field_name)
        if not all(isinstance(v, str) for v in found.values()):
            raise self.fail(field_name, "must map header names to strings")
        return found

    def body(self, value: dict[str, Any], field_name: str) -> bytes:
        if "body" in value:
            return json.dumps(value["body"], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        if "body_base64" in value:
            lines = value["body_base64"]
            if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
                raise self.fail(f"{field_name}.body_base64", "must be a list of strings")
            try:
                return base64.b64decode("".join(lines), validate=True)
            except binascii.Error:
                raise self.fail(f"{field_name}.body_base64", "is not base64") from None
        lines = value.get("body_text", [])
        if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
            raise self.fail(f"{field_name}.body_text", "must be a list of strings")
        return "".join(lines).encode("utf-8")

    def timing(self, value: object, field_name: str) -> tuple[tuple[float, int], ...]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(field_name, "must be a list of [seconds, bytes] rows")
        rows = []
        for row in value:
            if (
                not isinstance(row, list)
                or len(row) != 2
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
                or row[0] < 0
                or not isinstance(row[1], int)
                or row[1] < 0
            ):
                raise self.fail(field_name, "must be a list of [seconds, bytes] rows")
            rows.append((float(row[0]), int(row[1])))
        return tuple(rows)


def loads(text: str, where: str = "<cassette>") -> list[Interaction]:
    """The interactions of the cassette text ``text``; ``where`` names it in errors (rule 4)."""
    read = _Reader(where)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise read.fail("the file", f"is not JSON ({exc.msg}, line {exc.lineno})") from None
    document = read.mapping(document, "the document")
    version = document.get("dshstream_cassette")
    if version != FORMAT_VERSION:
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
            raise invalid(f"{where}: a cassette of format {version}; this dshstream reads format {FORMAT_VERSION}")
        raise read.fail("dshstream_cassette", f"must be {FORMAT_VERSION}")
    rows = document.get("interactions")
    if not isinstance(rows, list):
        raise read.fail("interactions", "must be a list")
    found = []
    for number, row in enumerate(rows):
        at = f"interactions[{number}]"
        row = read.mapping(row, at)
        request = read.mapping(row.get("request"), f"{at}.request")
        response = read.mapping(row.get("response"), f"{at}.response")
        status = response.get("status")
        if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
            raise read.fail(f"{at}.response.status", "must be an HTTP status (100-599)")
        end = response.get("end", "complete")
        if end not in _ENDS:
            raise read.fail(f"{at}.response.end", f"must be one of {', '.join(_ENDS)}")
        found.append(
            Interaction(
                method=read.text(request.get("method"), f"{at}.request.method").upper(),
                url=read.text(request.get("url"), f"{at}.request.url"),
                request_headers=read.headers(request.get("headers", {}), f"{at}.request.headers"),
                request_body=read.body(request, f"{at}.request"),
                status=status,
                response_headers=read.headers(response.get("headers", {}), f"{at}.response.headers"),
                body=read.body(response, f"{at}.response"),
                end=end,
                timing=read.timing(response.get("timing"), f"{at}.response.timing"),
            )
        )
    return found


def load(path: str | os.PathLike[str]) -> list[Interaction]:
    """The interactions of the cassette at ``path`` (rule 4); ``FileNotFoundError`` when
    there is none."""
    target = Path(path)
    return loads(target.read_text(encoding="utf-8"), str(target))
