"""The cassette file (format rules 1-4) and what is redacted before it is written
(redaction rules 1-5), on the recorded provider streams of tests/fixtures/real."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dshstream._cassettes.format import Interaction, dump, dumps, load, loads
from dshstream._cassettes.redaction import Redaction, body_digest, request_key
from dshstream._core.errors import ConfigurationError
from dshstream._core.redact import register_secret, unregister_secret
from helpers import all_fixtures, fake_key, fixture_bytes


def _interaction(body: bytes, content_type: str, **fields: object) -> Interaction:
    values: dict[str, object] = {
        "method": "POST",
        "url": "https://api.example.com/v1/chat",
        "request_headers": {"content-type": "application/json", "authorization": "[REDACTED]"},
        "request_body": b'{"model":"m","messages":[{"role":"user","content":"caf\xc3\xa9"}],"stream":true}',
        "status": 200,
        "response_headers": {"content-type": content_type, "x-request-id": "req_1"},
        "body": body,
    }
    values.update(fields)
    return Interaction(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", all_fixtures())
def test_every_recorded_stream_round_trips_exactly(name: str) -> None:
    binary = name.endswith(".eventstream")
    content_type = "application/vnd.amazon.eventstream" if binary else "text/event-stream"
    original = _interaction(fixture_bytes(name), content_type, timing=((0.0, 10), (0.125, 20)))
    text = dumps([original])
    (again,) = loads(text)
    assert again.body == original.body and again.request_body == original.request_body
    assert again.timing == original.timing and again.response_headers == original.response_headers
    assert dumps([again]) == text, "saving what was loaded gives the same bytes"
    response = json.loads(text)["interactions"][0]["response"]
    assert ("body_base64" in response) == binary, "text where it is text, base64 where it is not"


def test_the_layout_is_one_item_per_line() -> None:
    text = dumps([_interaction(b"data: {\"a\":1}\r\n\r\ndata: [DONE]\n\nno newline", "text/event-stream",
                               timing=((0.0, 5), (0.0125, 7)))])
    assert text.endswith("\n") and "\t" not in text
    assert '          "data: {\\"a\\":1}\\r\\n",\n          "\\r\\n",\n' in text
    assert '"no newline"\n' in text
    assert "[0.0, 5]" in text and "[0.013, 7]" in text, "a timing row on one line, milliseconds"
    assert '"content": "café"' in text, "non-ASCII as it is"
    assert '"request": {\n        "method": "POST",\n        "url"' in text


def test_a_request_body_that_is_not_our_compact_json_is_kept_as_text() -> None:
    form = _interaction(b"", "text/event-stream", request_body=b"grant_type=refresh_token&refresh_token=%5BREDACTED%5D",
                        request_headers={"content-type": "application/x-www-form-urlencoded"})
    (again,) = loads(dumps([form]))
    assert again.request_body == form.request_body
    assert "body_text" in json.loads(dumps([form]))["interactions"][0]["request"]


def test_writing_is_atomic_and_makes_the_directories(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "c.json"
    dump([_interaction(b"data: 1\n\n", "text/event-stream")], path)
    assert load(path)[0].body == b"data: 1\n\n"
    assert [p.name for p in path.parent.iterdir()] == ["c.json"], "no temporary file left"
    assert oct(os.stat(path).st_mode)[-3:] != "000"


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ("[]", "the document"),
        ('{"dshstream_cassette": 1}', "interactions"),
        ('{"dshstream_cassette": 0, "interactions": []}', "dshstream_cassette"),
        ('{"dshstream_cassette": 1, "interactions": [{"response": {}}]}', r"interactions\[0\]\.request"),
        ('{"dshstream_cassette": 1, "interactions": [{"request": {"url": "u"}, "response": {"status": 200}}]}',
         r"interactions\[0\]\.request\.method"),
        ('{"dshstream_cassette": 1, "interactions": [{"request": {"method": "GET", "url": "u"}, '
         '"response": {"status": 200, "end": "later"}}]}', r"interactions\[0\]\.response\.end"),
        ('{"dshstream_cassette": 1, "interactions": [{"request": {"method": "GET", "url": "u"}, '
         '"response": {"status": 200, "body_base64": ["@@"]}}]}', r"response\.body_base64"),
        ('{"dshstream_cassette": 1, "interactions": [{"request": {"method": "GET", "url": "u"}, '
         '"response": {"status": 200, "timing": [[1, -2]]}}]}', r"response\.timing"),
        ("{not json", "is not JSON"),
    ],
)
def test_a_malformed_file_names_the_field(document: str, field: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"tape\.json: .*{field}"):
        loads(document, "tape.json")


def test_a_later_format_is_refused_not_misread() -> None:
    with pytest.raises(ConfigurationError, match="format 2; this dshstream reads format 1"):
        loads('{"dshstream_cassette": 2, "interactions": []}', "new.json")


# --------------------------------------------------------------------------- redaction


KEY = fake_key("sk-proj-", 48)


def test_credential_headers_are_redacted_and_known_secrets_removed_from_the_rest() -> None:
    redaction = Redaction(secrets=(KEY,))
    headers = redaction.headers({
        "Authorization": f"Bearer {KEY}", "x-api-key": KEY, "api-key": KEY, "x-goog-api-key": KEY,
        "X-Amz-Security-Token": "tok", "x-amz-date": "20250101T000000Z", "x-amz-content-sha256": "abc",
        "Cookie": "a=b", "x-client-secret": "s3cr3t", "x-echo": f"key={KEY}", "accept": "text/event-stream",
    })
    assert headers["accept"] == "text/event-stream" and KEY not in headers["x-echo"]
    assert [name for name, value in headers.items() if value == "[REDACTED]"] == [
        "Authorization", "x-api-key", "api-key", "x-goog-api-key", "X-Amz-Security-Token", "x-amz-date",
        "x-amz-content-sha256", "Cookie", "x-client-secret",
    ]


def test_the_url_loses_its_key_query_and_password() -> None:
    url = Redaction().url(f"https://user:pw@host.example/v1/models/m:stream?alt=sse&key={fake_key('AIza', 35)}")
    assert "pw@" not in url and "AIza" not in url and "alt=sse" in url


def test_body_fields_by_name_at_any_depth_or_by_dotted_path() -> None:
    body = json.dumps({"model": "m", "user": "alice", "api_key": "k-123456",
                       "metadata": {"user_id": "u1", "trace": {"user": "bob"}}, "note": f"use {KEY}"}).encode()
    cleaned = json.loads(Redaction(fields=("user", "metadata.user_id"), secrets=(KEY,)).request_body(body))
    assert cleaned == {"model": "m", "user": "[REDACTED]", "api_key": "[REDACTED]",
                       "metadata": {"user_id": "[REDACTED]", "trace": {"user": "[REDACTED]"}},
                       "note": "use [REDACTED]"}
    form = Redaction(secrets=()).request_body(b"grant_type=refresh_token&refresh_token=abc&client_secret=xyz",
                                              "application/x-www-form-urlencoded")
    assert form == b"grant_type=refresh_token&refresh_token=%5BREDACTED%5D&client_secret=%5BREDACTED%5D"


def test_an_answer_keeps_its_bytes_but_not_an_echoed_secret() -> None:
    register_secret(KEY)
    try:
        stream = fixture_bytes("anthropic/text.sse")
        assert Redaction().answer_body(stream, "text/event-stream") == stream
        echoed = stream + f'data: {{"echo": "{KEY}"}}\n\n'.encode()
        assert KEY.encode() not in Redaction().answer_body(echoed, "text/event-stream")
        token = b'{"access_token": "ya29.abcdef", "expires_in": 3599, "token_type": "Bearer"}'
        assert json.loads(Redaction().answer_body(token, "application/json")) == {
            "access_token": "[REDACTED]", "expires_in": 3599, "token_type": "Bearer"}
    finally:
        unregister_secret(KEY)


def test_matching_compares_json_bodies_by_value_and_criteria_in_order() -> None:
    assert body_digest(b'{"a":1,"b":[1,2]}') == body_digest(b'{ "b": [1, 2], "a": 1 }')
    assert body_digest(b'{"a":1}') != body_digest(b'{"a":2}')
    assert request_key("post", "http://h:1/v1/x?q=1", b"{}", ("method", "path")) == ("POST", "/v1/x?q=1")
