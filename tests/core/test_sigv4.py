"""SigV4 signing against AWS's published test suite and, when installed, botocore."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from helpers import TESTS

from dshstream._core.sigv4 import AwsCredentials, canonical_query, canonical_uri, sign_headers

SUITE = TESTS / "fixtures" / "sigv4"
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
WHEN = datetime(2015, 8, 30, 12, 36, tzinfo=timezone.utc)
CASES = sorted(p.stem for p in SUITE.glob("*.txt"))


def _parse(name: str) -> tuple[str, str, dict[str, str], bytes]:
    head, _, body = (SUITE / f"{name}.txt").read_text(encoding="utf-8").partition("\n\n")
    line, *lines = head.split("\n")
    method, target, _ = line.split(" ")
    headers = {}
    for entry in lines:
        key, _, value = entry.partition(":")
        headers[key] = value
    return method, target, headers, body.encode("utf-8")


def test_suite_has_the_cases() -> None:
    assert len(CASES) >= 6


@pytest.mark.parametrize("name", CASES)
def test_aws_suite_vector(name: str) -> None:
    method, target, headers, body = _parse(name)
    expected = headers.pop("Authorization")
    assert headers.pop("X-Amz-Date") == "20150830T123600Z"
    token = headers.pop("X-Amz-Security-Token", None)
    creds = AwsCredentials(KEY_ID, SECRET, token)
    added = sign_headers(
        method, f"https://example.amazonaws.com{target}", headers, body, creds,
        region="us-east-1", service="service", now=WHEN,
    )
    assert added["authorization"] == expected
    assert added["x-amz-date"] == "20150830T123600Z"
    assert added.get("x-amz-security-token") == token


def test_wire_path_is_encoded_again() -> None:
    # boto/botocore aws4_testsuite get-utf8.creq / get-space.creq (PROVENANCE.md)
    assert canonical_uri("/%E1%88%B4") == "/%25E1%2588%25B4"
    assert canonical_uri("/%20/foo") == "/%2520/foo"
    assert canonical_uri("/model/us.amazon.nova-micro-v1%3A0/converse-stream") == (
        "/model/us.amazon.nova-micro-v1%253A0/converse-stream"
    )
    assert canonical_uri("") == "/"


def test_canonical_query_sorts_and_encodes() -> None:
    assert canonical_query("b=2&a=%7E x&A=1") == "A=1&a=~%20x&b=2"


def test_content_sha256_and_repr() -> None:
    creds = AwsCredentials(KEY_ID, SECRET, "TOKEN-SECRET")
    added = sign_headers("POST", "https://h.example/x", {}, b"{}", creds, region="r", service="s", now=WHEN,
                         content_sha256=True)
    assert added["x-amz-content-sha256"] == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    assert "x-amz-content-sha256" in added["authorization"]
    text = repr(creds)
    assert SECRET not in text and "TOKEN-SECRET" not in text and KEY_ID not in text


@pytest.mark.parametrize(
    "url",
    [
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/us.amazon.nova-micro-v1%3A0/converse-stream",
        "https://bedrock-runtime.us-east-1.amazonaws.com/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012"
        "%3Aapplication-inference-profile%2Fabc123/converse-stream",
        "https://example.amazonaws.com/a%20b/?z=1&y=%E1%88%B4&y=a",
    ],
)
@pytest.mark.parametrize("token", [None, "FQoGZXIvYXdzEXAMPLETOKEN"])
def test_matches_botocore(url: str, token: str | None) -> None:
    auth = pytest.importorskip("botocore.auth")
    awsrequest = pytest.importorskip("botocore.awsrequest")
    credentials = pytest.importorskip("botocore.credentials")
    body = b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
    headers = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}
    request = awsrequest.AWSRequest(method="POST", url=url, data=body, headers=dict(headers))
    auth.SigV4Auth(credentials.Credentials(KEY_ID, SECRET, token), "bedrock", "us-east-1").add_auth(request)
    signed_at = datetime.strptime(request.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    ours = sign_headers("POST", url, headers, body, AwsCredentials(KEY_ID, SECRET, token),
                        region="us-east-1", service="bedrock", now=signed_at)
    assert ours["authorization"] == request.headers["Authorization"]


def test_signing_reuses_the_body_bytes_it_signed() -> None:
    # The body is serialized once per attempt: the signer adds headers to the request
    # without encoding the JSON again (the signature covers exactly the bytes sent).
    from dshstream._core.http_request import HttpRequest

    request = HttpRequest(url="https://example.test/x", headers={"a": "1"}, body={"k": "v"}, secrets=("s1",))
    signed = request.with_headers({"a": "1", "authorization": "sig"}, ("s2",))
    assert signed.body_bytes() is request.body_bytes()
    assert signed.headers == {"a": "1", "authorization": "sig"} and signed.secrets == ("s1", "s2")
    assert signed.url == request.url and signed.body == request.body
    assert "sig" not in repr(signed)
