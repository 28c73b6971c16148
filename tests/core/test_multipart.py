"""multipart/form-data bodies: what the OpenAI batch upload sends, read back by the
standard library's own multipart parser."""

from __future__ import annotations

import secrets
from email.parser import BytesParser
from email.policy import HTTP

import pytest

from dshstream import ConfigurationError
from dshstream._core.multipart import encode_multipart


def _parsed(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    message = BytesParser(policy=HTTP).parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + body)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        out[str(name)] = (part.get_filename(), payload)
    return out


def test_fields_and_a_file_read_back_exactly() -> None:
    content = b'{"custom_id":"r1"}\n{"custom_id":"r2"}\n'
    body, content_type = encode_multipart({"purpose": "batch"}, [("file", "batch.jsonl", "application/jsonl", content)])
    assert content_type.startswith("multipart/form-data; boundary=dshstream-")
    parts = _parsed(body, content_type)
    assert parts == {"purpose": (None, b"batch"), "file": ("batch.jsonl", content)}


def test_a_part_holding_the_boundary_gets_another(monkeypatch: pytest.MonkeyPatch) -> None:
    tokens = iter(["a" * 32, "b" * 32])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(tokens))
    body, content_type = encode_multipart({}, [("file", "f", "text/plain", b"x--dshstream-" + b"a" * 32 + b"y")])
    assert content_type.endswith("b" * 32)
    assert _parsed(body, content_type)["file"][1] == b"x--dshstream-" + b"a" * 32 + b"y"


@pytest.mark.parametrize("bad", ['na"me', "line\r\nbreak", "nul\0"])
def test_a_name_that_would_break_the_part_headers_is_refused(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="multipart"):
        encode_multipart({bad: "v"})
    with pytest.raises(ConfigurationError, match="multipart"):
        encode_multipart({}, [("file", bad, "text/plain", b"")])
