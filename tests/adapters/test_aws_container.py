"""The AWS container credentials endpoint (``_adapters/aws_container.py``): named by the
environment only, the full URIs the SDKs allow, the authorization token (a file read again
per fetch), credentials reused until shortly before they expire, a malformed answer, and a
Bedrock stream signed with the endpoint's credentials, served on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.test_bedrock import _expected_signature, options
from dshstream._adapters.aws_container import REFRESH_BEFORE, ContainerCredentials, container_credentials
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._core.errors import ConfigurationError, LlmError
from dshstream._core.sigv4 import AwsCredentials
from dshstream._core.types import Finish
from dshstream._replay_server import ReplayServer, Route
from helpers import fixture_bytes, routed_session

KEY_ID = "ASIACONTAINEREXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+containerSECRETkey"
TOKEN = "IQoJb3JpZ2luX2VjContainerSessionCANARY"  # CANARY: a fake session token
AUTH = "agent-authorization-CANARY-0001"  # CANARY: a fake agent token


def _answer(expiration: str | None = "2030-01-01T00:00:00Z", **extra: Any) -> Route:
    body: dict[str, Any] = {"AccessKeyId": KEY_ID, "SecretAccessKey": SECRET, "Token": TOKEN, **extra}
    if expiration is not None:
        body["Expiration"] = expiration
    return Route(body=json.dumps(body).encode(), content_type="application/json", chunked=False)


def test_nothing_named_nothing_probed() -> None:
    assert container_credentials() is None
    assert BedrockAdapter(region="us-east-1").auth_mode == "none"


@pytest.mark.parametrize(
    "url", ["http://169.254.170.23/v1/credentials", "http://127.0.0.1:9/creds", "https://creds.example.com/x"]
)
def test_the_full_uris_the_sdks_allow(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url)
    source = container_credentials()
    assert source is not None and source.url == url


@pytest.mark.parametrize("url", ["http://creds.example.com/x", "http://10.0.0.1/creds", "file:///etc/passwd"])
def test_any_other_full_uri_is_refused_naming_the_variable(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url)
    with pytest.raises(ConfigurationError, match="AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        BedrockAdapter(region="us-east-1")


def test_the_relative_uri_goes_to_the_ecs_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc")
    source = container_credentials()
    assert source is not None and source.url == "http://169.254.170.2/v2/credentials/abc"


def test_a_token_file_is_read_per_fetch_and_the_credentials_reused_until_near_expiry(
    server: ReplayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(AUTH + "\n")
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", str(token_file))
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "not-this-one")
    server.add("/creds", _answer())
    now = [1_800_000_000.0]
    source = ContainerCredentials(f"{server.url}/creds", clock=lambda: now[0])
    assert source() == AwsCredentials(KEY_ID, SECRET, TOKEN) and source() == source()
    assert len(server.requests) == 1 and server.requests[0].headers["authorization"] == AUTH
    token_file.write_text("agent-authorization-CANARY-0002")  # rotated by the agent
    now[0] = 1_893_456_000.0 - REFRESH_BEFORE + 1
    source()
    assert len(server.requests) == 2 and server.requests[1].headers["authorization"] == "agent-authorization-CANARY-0002"


@pytest.mark.parametrize(
    ("route", "says"),
    [
        (Route(body=b"[]", content_type="application/json", chunked=False), "no AccessKeyId"),
        (_answer(expiration="tomorrow"), "ISO 8601"),
    ],
)
def test_a_malformed_answer_is_malformed_response(server: ReplayServer, route: Route, says: str) -> None:
    server.add("/creds", route)
    with pytest.raises(LlmError) as info:
        ContainerCredentials(f"{server.url}/creds")()
    assert info.value.failure.code == "MALFORMED_RESPONSE" and says in info.value.failure.message
    assert SECRET not in str(info.value)


def test_a_refused_fetch_is_the_transports_failure(server: ReplayServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH)
    server.add("/creds", Route(body=b'{"message":"denied"}', status=403, content_type="application/json", chunked=False))
    with pytest.raises(LlmError) as info:
        ContainerCredentials(f"{server.url}/creds")()
    assert info.value.failure.code == "AUTH" and AUTH not in str(info.value)


def test_a_token_with_a_line_break_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "a\r\nX-Injected: 1")
    with pytest.raises(ConfigurationError, match="line break"):
        ContainerCredentials("http://127.0.0.1:9/creds")()


def test_a_bedrock_stream_is_signed_with_the_containers_credentials(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ReplayServer({"/creds": _answer()}) as agent:
        monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"{agent.url}/creds")
        monkeypatch.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH)
        server.add("/model/", Route(body=fixture_bytes("bedrock/nova_micro_text.eventstream"),
                                    content_type="application/vnd.amazon.eventstream"))
        session: Any = routed_session("https://bedrock-runtime.us-east-1.amazonaws.com", server.url)
        adapter = BedrockAdapter(region="us-east-1", session=session)
        assert adapter.auth_mode == "sigv4" and "container" in repr(adapter) and not agent.requests
        for _ in range(2):
            last = list(adapter.stream(options()))[-1]
            assert isinstance(last, Finish) and last.reason.kind == "stop"
        assert len(agent.requests) == 1  # fetched once, reused
    request = server.requests[-1]
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert headers["x-amz-security-token"] == TOKEN
    body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
    assert headers["authorization"].endswith(f"Signature={_expected_signature('POST', request.path, headers, body, SECRET)}")
