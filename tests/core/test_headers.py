"""Response headers (dshstream._core.headers): Retry-After / retry-after-ms parsing and which
request-id header wins. (Ids that echo a secret: tests/core/test_validation.py and the leak
matrix in tests/core/test_classify.py.)"""

from __future__ import annotations

import email.utils

import pytest

from dshstream._core.headers import keep_alive_seconds, parse_retry_after, request_id_from
from dshstream._core.redact import register_secret, unregister_secret

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "5"}, 5.0),
        ({"Retry-After": "5"}, 5.0),
        ({"RETRY-AFTER": " 12 "}, 12.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"Retry-After-Ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "garbage", "retry-after": "9"}, 9.0),
        ({"retry-after-ms": "0", "retry-after": "9"}, 9.0),
        ({"retry-after": "0"}, None),
        ({"retry-after": "-5"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "9" * 400}, None),
        ({"retry-after": "1e3"}, None),
        ({"retry-after": email.utils.formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"retry-after": email.utils.formatdate(NOW - 30, usegmt=True)}, None),
        ({"retry-after": email.utils.formatdate(NOW, usegmt=True)}, None),
        ({"retry-after": "Wed, 99 Foo 2015 07:28:00 GMT"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str] | None, expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_parse_retry_after_date_uses_clock_by_default() -> None:
    far = email.utils.formatdate(4_000_000_000, usegmt=True)
    value = parse_retry_after({"retry-after": far})
    assert value is not None and value > 1_000_000


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"x-request-id": "req_1", "request-id": "req_2", "cf-ray": "ray"}, "req_1"),
        ({"Request-Id": "req_anthropic", "CF-RAY": "ray"}, "req_anthropic"),
        ({"x-deepseek-request-id": "ds", "cf-ray": "ray"}, "ds"),
        ({"x-groq-id": "groq-1"}, "groq-1"),
        ({"x-amzn-requestid": "aws-1"}, "aws-1"),
        ({"cf-ray": "8a1b2c3d4e5f-SJC"}, "8a1b2c3d4e5f-SJC"),
        ({"x-request-id": "", "cf-ray": "ray"}, "ray"),
        ({"x-request-id": "has spaces and <html>", "request-id": "ok"}, "ok"),
        ({"content-type": "application/json"}, None),
        (None, None),
    ],
)
def test_request_id_from(headers: dict[str, str] | None, expected: str | None) -> None:
    assert request_id_from(headers) == expected


def test_request_id_from_reads_the_secrets_registered_by_then_and_only_for_a_candidate() -> None:
    """The registry is read when a header holds a plain id (rule 2), at that call: a secret
    registered after an earlier call still keeps its echo out; ``secrets`` are read once."""
    echo = "late-registered-zq7x-0042"  # no word another test's live adapter registers ("secret")
    headers = {"x-request-id": echo, "cf-ray": "ray-1"}
    assert request_id_from(headers) == echo
    register_secret(echo)
    try:
        assert request_id_from(headers) == "ray-1"
        given = iter(["ray-1"])
        assert request_id_from(headers, given) is None and list(given) == []
    finally:
        unregister_secret(echo)
    assert request_id_from({"content-type": "text/event-stream"}, iter(["unread"])) is None


# --------------------------------------------------------------------------- rule 5: Keep-Alive


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("timeout=5, max=100", 5.0), ("max=1000, timeout=2.5", 2.5), ("Timeout = 7", 7.0), ("timeout=0", None),
     ("timeout=-1", None), ("timeout=1e9", None), ("timeout=86401", None), ("max=5", None), ("timeout=", None),
     ("xtimeout=5", None), ("timeout=5x", None), ("", None)],
)
def test_keep_alive_hint_values(value: str, seconds: float | None) -> None:
    assert keep_alive_seconds(value) == seconds
    assert keep_alive_seconds(None) is None
