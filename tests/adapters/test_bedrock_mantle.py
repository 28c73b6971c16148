"""BedrockMantleAdapter (dshstream/_adapters/bedrock_mantle.py): the Responses wire on
Bedrock Mantle, signed with SigV4 (service ``bedrock-mantle``) or sent with a Bedrock API
key. Checked against a real exchange from crmne/ruby_llm's cassettes
(``providers_bedrock_mantle_responses_chat_streams_through_the_responses_surface.yml``):
the body Bedrock accepted (its ``x-amz-content-sha256`` is recorded) and the stream it
answered (tests/fixtures/real/openai-responses/bedrock_mantle_gpt_oss_text_at_content_index_1.sse)."""

from __future__ import annotations

import hashlib
from datetime import datetime

import pytest

from dshstream import GenerateOptions, LlmService, Message
from dshstream._core.errors import LlmError
from dshstream._core.http_request import encode_json_body
from dshstream.adapters import BedrockMantleAdapter
from dshstream.testing import ReplayServer, Route
from helpers import fixture_bytes

RECORDING = "openai-responses/bedrock_mantle_gpt_oss_text_at_content_index_1.sse"
#: the recorded request's X-Amz-Content-Sha256: the sha256 of the body Bedrock took
RECORDED_BODY_SHA256 = "a64a008718243bad47a3a9e35e07c4ff88ee5c80f9e123ad1aa200754831d7fc"
CREDENTIALS = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")  # the SigV4 test suite's example pair
OPTIONS = GenerateOptions(provider="mantle", model="openai.gpt-oss-20b", messages=(Message.user("Count from 1 to 5."),))


@pytest.fixture(autouse=True)
def no_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID",
                 "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials")


def test_the_body_is_the_one_bedrock_accepted() -> None:
    adapter = BedrockMantleAdapter(region="us-east-1", credentials=CREDENTIALS)
    assert adapter.wire.endpoint(OPTIONS) == "https://bedrock-mantle.us-east-1.api.aws/v1/responses"
    body = encode_json_body(adapter.wire.build_body(OPTIONS))
    assert hashlib.sha256(body).hexdigest() == RECORDED_BODY_SHA256


def test_sigv4_signs_as_the_recorded_request_did() -> None:
    with ReplayServer({"/v1/responses": fixture_bytes(RECORDING)}) as server:
        adapter = BedrockMantleAdapter(region="us-east-1", credentials=CREDENTIALS, base_url=f"{server.url}/v1")
        service = LlmService()
        service.register_adapter(["mantle"], adapter)
        with service.stream(OPTIONS) as stream:
            result = stream.result()
        (request,) = server.requests
    authorization = request.headers["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/bedrock-mantle/aws4_request, SignedHeaders=" in authorization
    signed = authorization.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"host", "x-amz-content-sha256", "x-amz-date"} <= set(signed)  # the recorded request's, and more
    assert request.headers["x-amz-content-sha256"] == RECORDED_BODY_SHA256
    assert adapter.auth_mode == "sigv4" and CREDENTIALS[1] not in repr(adapter)
    # the answer: reasoning text, then the message's one part at content_index 1, once
    assert result.reasoning == "We simply count: 1, 2, 3, 4, 5."
    assert result.text == "Sure! Here\u2019s a quick count:\n\n1  \n2  \n3  \n4  \n5"
    assert (result.finish.kind, result.finish.raw) == ("stop", "completed")
    assert result.usage is not None and result.usage.reasoning_tokens == 20


def test_a_bedrock_api_key_is_a_bearer_token() -> None:
    with ReplayServer({"/v1/responses": fixture_bytes(RECORDING)}) as server:
        adapter = BedrockMantleAdapter(region="us-west-2", api_key="bedrock-api-key-example", base_url=f"{server.url}/v1")
        service = LlmService()
        service.register_adapter(["mantle"], adapter)
        with service.stream(OPTIONS) as stream:
            stream.result()
        (request,) = server.requests
    assert request.headers["authorization"] == "Bearer bedrock-api-key-example"
    assert adapter.auth_mode == "bearer" and adapter.wire.models_url() == f"{server.url}/v1/models"


def test_the_environment_goes_to_the_real_host_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-env")
    assert BedrockMantleAdapter().auth_mode == "bearer"
    assert BedrockMantleAdapter().base_url == "https://bedrock-mantle.eu-west-1.api.aws/v1"
    assert BedrockMantleAdapter(base_url="http://127.0.0.1:9/v1").auth_mode == "none"  # a proxy signs itself
    monkeypatch.delenv("AWS_BEARER_TOKEN_BEDROCK")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS[1])
    signed = BedrockMantleAdapter()
    assert signed.auth_mode == "sigv4"
    assert signed.wire.models_url() == "https://bedrock-mantle.eu-west-1.api.aws/v1/models"


def test_the_model_list_is_a_signed_get_as_botocore_signs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = pytest.importorskip("botocore.auth")
    awsrequest = pytest.importorskip("botocore.awsrequest")
    botocore_credentials = pytest.importorskip("botocore.credentials")
    listing = b'{"object":"list","data":[{"id":"openai.gpt-oss-20b","object":"model","owned_by":"openai"}]}'
    with ReplayServer({"/v1/models": Route(body=listing, content_type="application/json")}) as server:
        adapter = BedrockMantleAdapter(region="us-east-1", credentials=CREDENTIALS, base_url=f"{server.url}/v1")
        service = LlmService()
        service.register_adapter(["mantle"], adapter)
        models = service.list_models("mantle")
        (request,) = server.requests
    assert [m.id for m in models] == ["openai.gpt-oss-20b"]
    assert request.method == "GET" and not request.body
    assert request.headers["x-amz-content-sha256"] == hashlib.sha256(b"").hexdigest()
    # botocore, given the headers we signed and our date, signs the GET the same
    signed = request.headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    headers = {name: request.headers[name] for name in signed if name != "x-amz-date"}
    at = datetime.strptime(request.headers["x-amz-date"], "%Y%m%dT%H%M%SZ")
    monkeypatch.setattr(auth, "get_current_datetime", lambda: at)
    theirs = awsrequest.AWSRequest(method="GET", url=f"{server.url}/v1/models", data=b"", headers=headers)
    auth.SigV4Auth(botocore_credentials.Credentials(*CREDENTIALS), "bedrock-mantle", "us-east-1").add_auth(theirs)
    assert request.headers["authorization"] == theirs.headers["Authorization"]
    assert CREDENTIALS[1] not in repr(adapter)


def test_caller_mistakes_name_the_field() -> None:
    with pytest.raises(LlmError, match="BedrockMantleAdapter needs region="):
        BedrockMantleAdapter(credentials=CREDENTIALS)
    with pytest.raises(LlmError, match="not both"):
        BedrockMantleAdapter(region="us-east-1", credentials=CREDENTIALS, api_key="k")
    with pytest.raises(LlmError, match="BedrockMantleAdapter needs credentials"):
        BedrockMantleAdapter(region="us-east-1")
    with pytest.raises(LlmError, match="BedrockMantleAdapter.region must look like"):
        BedrockMantleAdapter(region="us east 1", credentials=CREDENTIALS)


def test_encrypted_reasoning_is_asked_for_only_on_request() -> None:
    asked = BedrockMantleAdapter(region="us-east-1", credentials=CREDENTIALS, include_encrypted_reasoning=True)
    assert asked.wire.build_body(OPTIONS)["include"] == ["reasoning.encrypted_content"]
