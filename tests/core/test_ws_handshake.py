"""The WebSocket opening handshake (dshstream._core.ws_handshake): the URL, the upgrade
request, the answer read at any split point and bounded, and the checks of a 101."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.errors import LlmError
from dshstream._core.ws_handshake import (
    MAX_HEAD,
    AnswerReader,
    HandshakeAnswer,
    accept_for,
    check_upgrade,
    new_key,
    socket_url,
    upgrade_request,
)
from helpers import fake_key, split_at

_KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 section 1.3's example key
_ANSWER = (
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nx-request-id: req_1\r\n\r\n\x81\x02hi"
)


def test_the_rfc_accept_value() -> None:
    assert accept_for(_KEY) == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert len(new_key()) == 24 and new_key() != new_key()


def test_the_socket_goes_to_the_requests_own_host() -> None:
    assert socket_url("https://api.openai.com/v1/responses").url == "wss://api.openai.com/v1/responses"
    loopback = socket_url("http://127.0.0.1:8123/v1/responses?api-version=v1")
    assert loopback == (False, "127.0.0.1", 8123, "/v1/responses?api-version=v1")
    assert loopback.url == "ws://127.0.0.1:8123/v1/responses?api-version=v1"
    assert socket_url("https://[::1]:9443/r").url == "wss://[::1]:9443/r"
    with pytest.raises(LlmError) as caught:
        socket_url("ftp://example.com/x")
    assert caught.value.failure.code == "INVALID_OPTIONS"


def test_the_upgrade_request_carries_the_credential_and_no_body_headers() -> None:
    key = fake_key("sk-", 40)
    headers = {
        "authorization": f"Bearer {key}",
        "content-type": "application/json",
        "accept": "text/event-stream",
        "accept-encoding": "identity",
        "user-agent": "dshstream/test",
        "Sec-WebSocket-Extensions": "permessage-deflate",
    }
    text = upgrade_request(socket_url("https://api.openai.com/v1/responses"), headers, _KEY).decode()
    lines = text.split("\r\n")
    assert lines[0] == "GET /v1/responses HTTP/1.1"
    assert "Host: api.openai.com" in lines  # the default port is not written
    assert {"Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {_KEY}", "Sec-WebSocket-Version: 13"} <= set(lines)
    assert f"authorization: Bearer {key}" in lines and "user-agent: dshstream/test" in lines
    lowered = text.lower()
    assert "content-type" not in lowered and "accept:" not in lowered and "permessage-deflate" not in lowered
    assert text.endswith("\r\n\r\n")
    port = upgrade_request(socket_url("http://127.0.0.1:8123/v1/responses"), {}, _KEY).decode()
    assert "Host: 127.0.0.1:8123\r\n" in port
    with pytest.raises(LlmError):
        upgrade_request(socket_url("http://127.0.0.1/v1"), {"x-bad": "a\r\nInjected: yes"}, _KEY)


def test_the_answer_and_the_first_frames() -> None:
    answer = AnswerReader().feed(_ANSWER)
    assert answer is not None
    assert answer.status == 101 and answer.headers["x-request-id"] == "req_1"
    assert answer.rest == b"\x81\x02hi"
    check_upgrade(answer, _KEY)


@settings(max_examples=50, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(_ANSWER)), max_size=12))
def test_the_answer_at_any_split(cuts: list[int]) -> None:
    reader = AnswerReader()
    pieces = split_at(_ANSWER, cuts)
    for index, piece in enumerate(pieces):
        answer = reader.feed(piece)
        if answer is not None:
            break
    assert answer is not None and answer.status == 101 and answer.headers["x-request-id"] == "req_1"
    # the first frames: what came with the head's end, then what the caller reads next
    assert answer.rest + b"".join(pieces[index + 1 :]) == b"\x81\x02hi"


def test_byte_by_byte() -> None:
    reader = AnswerReader()
    got = None
    for index in range(len(_ANSWER) - 4):
        assert got is None
        got = reader.feed(_ANSWER[index : index + 1])
    assert got is not None and got.status == 101


@pytest.mark.parametrize(
    "data",
    [
        b"HTTP/1.1 abc Nope\r\n\r\n",
        b"SPDY/3 101 Hm\r\n\r\n",
        b"HTTP/1.1 101 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 101 OK\r\n" + b"x-pad: " + b"a" * MAX_HEAD + b"\r\n\r\n",
    ],
)
def test_malformed_or_oversized_heads(data: bytes) -> None:
    with pytest.raises(LlmError) as caught:
        AnswerReader().feed(data)
    assert caught.value.failure.code == "MALFORMED_RESPONSE"


def test_an_endless_head_is_refused_without_its_end() -> None:
    reader = AnswerReader()
    assert reader.feed(b"HTTP/1.1 101 OK\r\n") is None
    with pytest.raises(LlmError):
        for _ in range(MAX_HEAD // 1000 + 2):
            reader.feed(b"x-pad: " + b"a" * 1000 + b"\r\n")


def _answer(**headers: str) -> HandshakeAnswer:
    base = {"upgrade": "websocket", "connection": "Upgrade", "sec-websocket-accept": accept_for(_KEY)}
    base.update(headers)
    return HandshakeAnswer(101, "Switching Protocols", {k: v for k, v in base.items() if v}, b"")


@pytest.mark.parametrize(
    "headers",
    [
        {"upgrade": ""},
        {"connection": "keep-alive"},
        {"sec-websocket-accept": "wrong"},
        {"sec-websocket-extensions": "permessage-deflate"},
        {"sec-websocket-protocol": "chat"},
    ],
)
def test_a_101_that_is_not_the_upgrade_asked_for(headers: dict[str, str]) -> None:
    with pytest.raises(LlmError) as caught:
        check_upgrade(_answer(**headers), _KEY)
    assert caught.value.failure.code == "MALFORMED_RESPONSE"
    check_upgrade(_answer(connection="keep-alive, Upgrade"), _KEY)
