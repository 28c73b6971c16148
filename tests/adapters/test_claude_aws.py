"""ClaudePlatformAwsAdapter over loopback HTTP: the regional host, the workspace header,
SigV4 (service ``aws-external-anthropic``) over the final body bytes or a workspace key in
``x-api-key``, environment credentials for the real host only, and the early refusals."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any, Iterator
from urllib.parse import quote

import pytest

from dshstream._adapters.claude_aws import ClaudePlatformAwsAdapter, claude_aws_host
from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message
from dshstream._replay_server import ReplayServer, Route
from helpers import fake_key, fixture_bytes, routed_session

HOST = claude_aws_host("us-east-1")
WORKSPACE = "wrkspc_01loopbacktest"
KEY_ID = fake_key("AKIA", 16, seed=29)
SECRET = fake_key("", 40, seed=30)
API_KEY = fake_key("sk-ant-api03-", 40, seed=31)
ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
    "ANTHROPIC_AWS_API_KEY", "ANTHROPIC_AWS_WORKSPACE_ID", "ANTHROPIC_AWS_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def aws(server: ReplayServer) -> Iterator[tuple[ReplayServer, Any]]:
    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/text.sse")))
    yield server, routed_session(HOST, server.url)


def options() -> GenerateOptions:
    return GenerateOptions(provider="claude-aws", model="claude-sonnet-4-6", messages=(Message.user("Hi"),))


def _headers(server: ReplayServer) -> dict[str, str]:
    return {k.lower(): v for k, v in server.requests[-1].headers.items()}


def _expected_signature(path: str, headers: dict[str, str], body: bytes) -> str:
    """SigV4 written out from the AWS documentation (no dshstream code), service
    aws-external-anthropic."""
    auth = headers["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    date = headers["x-amz-date"]
    canonical = "\n".join(
        ["POST", quote(path, safe="/-_.~"), "", "".join(f"{n}:{headers[n].strip()}\n" for n in signed), ";".join(signed),
         hashlib.sha256(body).hexdigest()]
    )
    scope = f"{date[:8]}/us-east-1/aws-external-anthropic/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = f"AWS4{SECRET}".encode()
    for part in (date[:8], "us-east-1", "aws-external-anthropic", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def test_sigv4_signs_the_messages_request_with_the_workspace(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    adapter = ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE, credentials=(KEY_ID, SECRET), session=session)
    assert adapter.auth_mode == "sigv4" and adapter.base_url == "https://aws-external-anthropic.us-east-1.api.aws"
    chunks = list(adapter.stream(options()))
    assert chunks[-1].reason.kind == "stop"  # type: ignore[union-attr]
    request = server.requests[-1]
    assert request.path == "/v1/messages"
    headers = _headers(server)
    assert headers["host"] == "aws-external-anthropic.us-east-1.api.aws"
    assert headers["anthropic-workspace-id"] == WORKSPACE
    assert headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in headers
    signed = headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-date", "anthropic-workspace-id"} <= set(signed)
    body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
    assert headers["authorization"].rsplit("Signature=", 1)[1] == _expected_signature("/v1/messages", headers, body)
    assert request.body["model"] == "claude-sonnet-4-6" and request.body["stream"] is True
    assert SECRET not in repr(adapter)


def test_a_workspace_key_goes_in_x_api_key(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    adapter = ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE, api_key=API_KEY, session=session)
    assert adapter.auth_mode == "api-key"
    list(adapter.stream(options()))
    headers = _headers(server)
    assert headers["x-api-key"] == API_KEY
    assert "authorization" not in headers and "x-amz-date" not in headers
    assert headers["anthropic-workspace-id"] == WORKSPACE
    assert API_KEY not in repr(adapter)


def test_the_environment_configures_region_workspace_and_key_for_the_real_host(
    aws: tuple[ReplayServer, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, session = aws
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("ANTHROPIC_AWS_WORKSPACE_ID", WORKSPACE)
    monkeypatch.setenv("ANTHROPIC_AWS_API_KEY", API_KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)  # the API key wins, as in the SDK
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    adapter = ClaudePlatformAwsAdapter(session=session)
    assert (adapter.region, adapter.workspace_id, adapter.auth_mode) == ("us-east-1", WORKSPACE, "api-key")
    list(adapter.stream(options()))
    assert _headers(server)["x-api-key"] == API_KEY
    monkeypatch.delenv("ANTHROPIC_AWS_API_KEY")
    assert ClaudePlatformAwsAdapter(session=session).auth_mode == "sigv4"


def test_environment_credentials_never_go_to_another_host(monkeypatch: pytest.MonkeyPatch, server: ReplayServer) -> None:
    monkeypatch.setenv("ANTHROPIC_AWS_API_KEY", API_KEY)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/text.sse")))
    adapter = ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE, base_url=server.url)
    assert adapter.auth_mode == "none"
    list(adapter.stream(options()))
    headers = _headers(server)
    assert "x-api-key" not in headers and "authorization" not in headers
    assert headers["anthropic-workspace-id"] == WORKSPACE


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"region": "us-east-1", "api_key": "k"}, "ClaudePlatformAwsAdapter.workspace_id"),
        ({"region": "us-east-1", "workspace_id": "  ", "api_key": "k"}, "ClaudePlatformAwsAdapter.workspace_id"),
        ({"region": "us-east-1", "workspace_id": "bad\nid", "api_key": "k"}, "ClaudePlatformAwsAdapter.workspace_id"),
        ({"workspace_id": WORKSPACE, "api_key": "k"}, "region="),
        ({"region": "US_EAST", "workspace_id": WORKSPACE, "api_key": "k"}, "ClaudePlatformAwsAdapter.region"),
        ({"region": "us-east-1", "workspace_id": WORKSPACE}, "needs credentials"),
        ({"region": "us-east-1", "workspace_id": WORKSPACE, "api_key": "k", "credentials": ("a", "b")}, "not both"),
        ({"region": "us-east-1", "workspace_id": WORKSPACE, "api_key": "k", "fallbacks": [{"modle": "x"}]},
         "ClaudePlatformAwsAdapter.fallbacks[0]"),
    ],
)
def test_caller_mistakes_are_refused_before_anything_is_sent(settings: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        ClaudePlatformAwsAdapter(**settings)
    assert field in caught.value.failure.message


def test_server_side_fallback_rides_on_this_route_too(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    adapter = ClaudePlatformAwsAdapter(
        region="us-east-1", workspace_id=WORKSPACE, api_key=API_KEY, session=session, fallbacks="default"
    )
    list(adapter.stream(options()))
    assert server.requests[-1].body["fallbacks"] == "default"
    assert _headers(server)["anthropic-beta"] == "server-side-fallback-2026-07-01"


def test_repr_and_auth_mode_name_the_flow_never_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    root = f"base_url={HOST!r}, region='us-east-1'"
    cases = [
        (ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE, credentials=(KEY_ID, SECRET)),
         f"ClaudePlatformAwsAdapter({root}, auth=sigv4 <set>)", "sigv4"),
        (ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE, api_key=API_KEY),
         f"ClaudePlatformAwsAdapter({root}, auth=api-key <set>)", "api-key"),
        (ClaudePlatformAwsAdapter(workspace_id=WORKSPACE, base_url="https://proxy.example.com"),
         "ClaudePlatformAwsAdapter(base_url='https://proxy.example.com', region='', auth=none <none>)", "none"),
    ]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    cases.append((ClaudePlatformAwsAdapter(region="us-east-1", workspace_id=WORKSPACE),
                  f"ClaudePlatformAwsAdapter({root}, auth=sigv4 <environment>)", "sigv4"))
    for adapter, text, mode in cases:
        assert (repr(adapter), adapter.auth_mode) == (text, mode)
        assert SECRET not in text and API_KEY not in text
