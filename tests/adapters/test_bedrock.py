"""Amazon Bedrock over loopback HTTP: the real bedrock-runtime host is routed to 127.0.0.1,
so the adapter builds the URL, headers and SigV4 signature it would send to AWS; each is
checked (the signature recomputed here, independently), then every recorded Converse
stream is replayed and must equal the offline decode."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from dshstream import GenerateOptions, Message, ToolSpec
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._core.decode import decode
from dshstream._core.errors import ConfigurationError, LlmError
from dshstream._core.eventstream import encode_message
from dshstream._core.sigv4 import AwsCredentials
from dshstream._core.types import Finish, ToolCallBlock
from dshstream._replay_server import ReplayServer, Route
from helpers import FIXTURES, fixture_bytes, routed_session

HOST = "https://bedrock-runtime.us-east-1.amazonaws.com"
EVENTSTREAM = "application/vnd.amazon.eventstream"
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"  # the SigV4 suite's example secret
TOKEN = "FQoGZXIvYXdzCANARYsessiontoken"  # CANARY: a fake session token
BEARER = "ABSKQmVkcm9ja0FQSUtleS1DANARY"  # CANARY: a fake Bedrock API key
AWS_ENV = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
    "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK",
)
CONVERSE = sorted(
    p.name for p in (FIXTURES / "bedrock").glob("*.eventstream") if not p.name.startswith("invoke_")
)
NOVA = "us.amazon.nova-micro-v1:0"
ARN = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def aws(server: ReplayServer) -> Iterator[tuple[ReplayServer, Any]]:
    yield server, routed_session(HOST, server.url)


def options(model: str = NOVA, **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="bedrock", model=model, messages=(Message.user("Hi"),), **fields)


def _route(body: bytes, piece: int = 7) -> Route:
    return Route(body=body, content_type=EVENTSTREAM, piece_size=piece)


def _expected_signature(method: str, path: str, headers: dict[str, str], body: bytes, secret: str) -> str:
    """SigV4 written out again from the AWS documentation (no dshstream code)."""
    auth = headers["authorization"]
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
    date = headers["x-amz-date"]
    canonical = "\n".join(
        [
            method,
            quote(path, safe="/-_.~"),
            "",
            "".join(f"{name}:{headers[name].strip()}\n" for name in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date[:8]}/us-east-1/bedrock/aws4_request"
    to_sign = f"AWS4-HMAC-SHA256\n{date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
    key = f"AWS4{secret}".encode()
    for part in (date[:8], "us-east-1", "bedrock", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def _headers(server: ReplayServer, index: int = -1) -> dict[str, str]:
    return {k.lower(): v for k, v in server.requests[index].headers.items()}


@pytest.mark.parametrize(
    ("model", "path"),
    [
        (NOVA, "/model/us.amazon.nova-micro-v1%3A0/converse-stream"),
        (ARN, "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123/converse-stream"),
    ],
)
@pytest.mark.parametrize("token", [None, TOKEN])
def test_sigv4_request(aws: tuple[ReplayServer, Any], model: str, path: str, token: str | None) -> None:
    server, session = aws
    server.add("/model/", _route(fixture_bytes("bedrock/nova_micro_text.eventstream")))
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, token), session=session)
    list(adapter.stream(options(model)))
    (request,) = server.requests
    assert request.method == "POST"
    assert request.path == path
    headers = _headers(server)
    assert headers["host"] == "bedrock-runtime.us-east-1.amazonaws.com"
    assert headers["accept"] == EVENTSTREAM
    assert headers["content-type"] == "application/json"
    assert headers.get("x-amz-security-token") == token
    signed = headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-date", "content-type"} <= set(signed)
    assert ("x-amz-security-token" in signed) == (token is not None)
    assert "user-agent" not in signed
    assert headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
    signature = headers["authorization"].rsplit("Signature=", 1)[1]
    assert signature == _expected_signature("POST", path, headers, body, SECRET)


def test_body(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    server.add("/model/", _route(fixture_bytes("bedrock/nova_micro_text.eventstream")))
    adapter = BedrockAdapter(region="us-east-1", credentials=AwsCredentials(KEY_ID, SECRET), session=session)
    replay = {"wire": "bedrock-converse", "content": [{"text": "Let me check."}, {"toolUse": {"toolUseId": "t0", "name": "w", "input": {}}}]}
    messages = (
        Message.system("Be brief."),
        Message.user("Weather?"),
        Message(role="assistant", content=(ToolCallBlock(id="t1", name="get_weather", arguments='{"city":"Paris"}'),)),
        Message.tool_result("t1", "sunny"),
        Message(role="assistant", content="ignored", replay_state=replay),
        Message.user("Thanks"),
    )
    opts = GenerateOptions(
        provider="bedrock", model="us.anthropic.claude-sonnet-4-20250514-v1:0", messages=messages,
        max_tokens=4000, temperature=0.5, stop=("END",), reasoning_effort="low",
        tools=(ToolSpec(name="get_weather", description="Weather", parameters={"type": "object"}),),
        extra_body={"performanceConfig": {"latency": "standard"}},
    )
    list(adapter.stream(opts))
    body = server.requests[0].body
    assert body == {
        "messages": [
            {"role": "user", "content": [{"text": "Weather?"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "get_weather", "input": {"city": "Paris"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "sunny"}], "status": "success"}}]},
            {"role": "assistant", "content": replay["content"]},
            {"role": "user", "content": [{"text": "Thanks"}]},
        ],
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 4000, "stopSequences": ["END"]},
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_weather", "description": "Weather", "inputSchema": {"json": {"type": "object"}}}}]},
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2000}},
        "performanceConfig": {"latency": "standard"},
    }


@pytest.mark.parametrize("name", CONVERSE)
def test_recorded_streams_equal_offline_decode(aws: tuple[ReplayServer, Any], name: str) -> None:
    server, session = aws
    data = fixture_bytes(f"bedrock/{name}")
    server.add("/model/", _route(data, piece=5))
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, None), session=session)
    assert list(adapter.stream(options())) == list(decode(data, wire="bedrock-converse"))


def test_bearer_mode_and_env(aws: tuple[ReplayServer, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    server, session = aws
    server.add("/model/", [_route(fixture_bytes("bedrock/nova_micro_text.eventstream"))] * 2)
    list(BedrockAdapter(region="us-east-1", api_key=BEARER, session=session).stream(options()))
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    adapter = BedrockAdapter(session=session)
    assert adapter.auth_mode == "bearer"
    list(adapter.stream(options()))
    for index in (0, 1):
        headers = _headers(server, index)
        assert headers["authorization"] == f"Bearer {BEARER}"
        assert "x-amz-date" not in headers


def test_env_credentials_only_for_the_real_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    home = BedrockAdapter()
    assert home.auth_mode == "sigv4" and home.region == "eu-west-1"
    assert home.base_url == "https://bedrock-runtime.eu-west-1.amazonaws.com"
    proxy = BedrockAdapter(base_url="https://proxy.example.com")
    assert proxy.auth_mode == "none"
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", BEARER)
    assert BedrockAdapter(base_url="https://proxy.example.com").auth_mode == "none"
    explicit = BedrockAdapter(base_url="https://proxy.example.com", credentials=(KEY_ID, SECRET, None))
    assert explicit.auth_mode == "sigv4"


def test_configuration_errors() -> None:
    with pytest.raises(ConfigurationError):
        BedrockAdapter()
    with pytest.raises(ConfigurationError):
        BedrockAdapter(region="not a region")
    with pytest.raises(ConfigurationError):
        BedrockAdapter(region="us-east-1", api_key=BEARER, credentials=(KEY_ID, SECRET, None))
    with pytest.raises(ConfigurationError):
        BedrockAdapter(region="us-east-1", credentials=("", SECRET, None))


def _throttle() -> bytes:
    return encode_message(
        {":exception-type": "throttlingException", ":content-type": "application/json", ":message-type": "exception"},
        b'{"message":"Too many requests, please wait before trying again."}',
    )


def test_throttling_before_content_is_retried(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    data = fixture_bytes("bedrock/nova_micro_text.eventstream")
    rejected = Route(
        body=b'{"message":"Too many requests, please wait before trying again."}', status=429, chunked=False,
        content_type="application/json", headers={"x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "retry-after-ms": "1"},
    )
    server.add("/model/", [rejected, _route(data)])
    calls: list[int] = []

    def creds() -> AwsCredentials:
        calls.append(1)
        return AwsCredentials(KEY_ID, SECRET, TOKEN)

    adapter = BedrockAdapter(region="us-east-1", credentials=creds, session=session)
    chunks = list(adapter.stream(options()))
    assert chunks == list(decode(data, wire="bedrock-converse"))
    assert len(server.requests) == 2 and len(calls) == 2
    first, second = _headers(server, 0), _headers(server, 1)
    assert first["authorization"] != second["authorization"] or first["x-amz-date"] == second["x-amz-date"]


def test_throttling_frame_after_2xx_is_not_retried(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    server.add("/model/", [_route(_throttle()), _route(fixture_bytes("bedrock/nova_micro_text.eventstream"))])
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, TOKEN), session=session)
    chunks = list(adapter.stream(options()))
    last = chunks[-1]
    assert isinstance(last, Finish) and last.reason.failure is not None
    assert last.reason.failure.code == "RATE_LIMIT"
    assert len(server.requests) == 1


def test_secrets_absent_from_repr_and_failures(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    server.add(
        "/model/",
        Route(body=json.dumps({"message": f"bad signature {SECRET} {TOKEN}"}).encode(), status=403, chunked=False,
              content_type="application/json"),
    )
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, TOKEN), session=session, max_retries=0)
    request = adapter.build_request(options())  # as sent: signed by the SigV4 flow
    signature = request.headers["authorization"].rsplit("=", 1)[1]
    texts = [repr(adapter), repr(request)]
    with pytest.raises(LlmError) as caught:
        list(adapter.stream(options()))
    failure = caught.value.failure
    texts += [str(caught.value), failure.message, str(failure.detail), repr(failure)]
    for text in texts:
        assert SECRET not in text and TOKEN not in text and signature not in text
    assert failure.code == "AUTH"
    bearer = BedrockAdapter(region="us-east-1", api_key=BEARER)
    assert BEARER not in repr(bearer)


# --------------------------------------------------------------------------- environment: service and CLI


def test_default_service_registers_bedrock_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from dshstream import default_service

    assert "bedrock" not in [p.id for p in default_service().list_providers()]
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    service = default_service()
    assert "bedrock" in [p.id for p in service.list_providers()]
    adapter = service.adapter_for("bedrock")
    assert "bedrock-runtime.us-west-2.amazonaws.com" in adapter.base_url  # type: ignore[attr-defined]
    assert "wJalrXUtnFEMI" not in repr(adapter)


def test_cli_says_what_bedrock_needs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from dshstream._cli import main

    assert main(["chat", "-p", "bedrock", "-m", "amazon.nova-lite-v1:0", "hi"]) == 2
    assert "AWS_REGION" in capsys.readouterr().err
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    assert main(["chat", "-p", "bedrock", "-m", "amazon.nova-lite-v1:0", "hi"]) == 2
    err = capsys.readouterr().err
    assert "AWS_ACCESS_KEY_ID" in err and "AWS_BEARER_TOKEN_BEDROCK" in err


# --------------------------------------------------------------------------- InvokeModel

CLAUDE = "anthropic.claude-3-sonnet-20240229-v1:0"
INVOKE = "bedrock/invoke_claude3_sonnet_messages.eventstream"


def test_invoke_posts_the_anthropic_body_and_decodes_the_invoke_wire(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    data = fixture_bytes(INVOKE)
    server.add("/model/", _route(data, piece=5))
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, None), api="invoke", session=session)
    replay = {"wire": "anthropic", "content": [{"type": "text", "text": "Earlier."}]}
    messages = (
        Message.system("Be brief."),
        Message.user("Summarize LOTR."),
        Message(role="assistant", content="ignored", replay_state=replay),
        Message.tool_result("t1", "sunny"),
    )
    opts = GenerateOptions(
        provider="bedrock", model=CLAUDE, messages=messages, max_tokens=300, temperature=0.5,
        tools=(ToolSpec(name="get_weather", description="Weather", parameters={"type": "object"}),),
    )
    chunks = list(adapter.stream(opts))
    assert chunks == list(decode(data, wire="bedrock-invoke"))
    (request,) = server.requests
    path = f"/model/{quote(CLAUDE, safe='')}/invoke-with-response-stream"
    assert request.path == path
    # the Anthropic adapter's own body, less model/stream, plus Bedrock's anthropic_version
    from dshstream._adapters.messages_body import MessagesBody

    expected = MessagesBody().build_body(opts)
    del expected["model"], expected["stream"]
    assert request.body == {"anthropic_version": "bedrock-2023-05-31", **expected}
    assert request.body["messages"][1] == {"role": "assistant", "content": replay["content"]}
    headers = _headers(server)
    body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
    signature = headers["authorization"].rsplit("Signature=", 1)[1]
    assert signature == _expected_signature("POST", path, headers, body, SECRET)
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "stop"


def test_invoke_refuses_other_families_and_bad_api(aws: tuple[ReplayServer, Any]) -> None:
    server, session = aws
    adapter = BedrockAdapter(region="us-east-1", credentials=(KEY_ID, SECRET, None), api="invoke", session=session)
    with pytest.raises(ConfigurationError, match="api='converse'"):
        list(adapter.stream(options(NOVA)))
    assert not server.requests
    with pytest.raises(ConfigurationError, match="api"):
        BedrockAdapter(region="us-east-1", api="chat")  # type: ignore[arg-type]


def test_repr_and_auth_mode_name_the_flow_never_a_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    creds = AwsCredentials(KEY_ID, SECRET, TOKEN)
    root = f"base_url={HOST!r}, region='us-east-1'"
    cases = [
        (BedrockAdapter(region="us-east-1", credentials=creds), f"BedrockAdapter({root}, auth=sigv4 <set>)", "sigv4"),
        (BedrockAdapter(region="us-east-1", credentials=lambda: creds),
         f"BedrockAdapter({root}, auth=sigv4 <callable>)", "sigv4"),
        (BedrockAdapter(region="us-east-1", api_key=BEARER), f"BedrockAdapter({root}, auth=bearer <set>)", "bearer"),
        (BedrockAdapter(region="us-west-2", base_url="https://proxy.example.com"),
         "BedrockAdapter(base_url='https://proxy.example.com', region='us-west-2', auth=none <none>)", "none"),
    ]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    cases.append((BedrockAdapter(region="us-east-1"), f"BedrockAdapter({root}, auth=sigv4 <environment>)", "sigv4"))
    for adapter, text, mode in cases:
        assert (repr(adapter), adapter.auth_mode) == (text, mode)
        assert SECRET not in text and BEARER not in text and TOKEN not in text
