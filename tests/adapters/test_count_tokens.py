"""count_tokens (http rule 8, wire rule 7): the provider's own counting endpoint, the
stream's request body less its generation fields, through the auth flow and the transport;
a provider without an endpoint is a ConfigurationError, never an estimate."""

from __future__ import annotations

import json

import pytest

from dshstream import ConfigurationError, LlmError, OpenAIChatAdapter
from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.gemini import GeminiAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

KEY = "sk-count-loopback-test-key-0123456789"  # CANARY: a fake key for the test
TOOL = ToolSpec(name="lookup", description="Looks up", parameters={"type": "object", "properties": {}})


def options(provider: str = "p") -> GenerateOptions:
    return GenerateOptions(
        provider=provider,
        model="m-1",
        messages=(Message.system("Be brief."), Message.user("How many tokens?")),
        tools=(TOOL,),
        max_tokens=99,
    )


def json_route(payload: object, status: int = 200) -> Route:
    return Route(body=json.dumps(payload).encode(), status=status, chunked=False, content_type="application/json")


def test_openai_responses_input_tokens(server: ReplayServer) -> None:
    server.add("/v1/responses/input_tokens", json_route({"object": "response.input_tokens", "input_tokens": 42}))
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1")
    assert adapter.count_tokens(options()) == 42
    (sent,) = server.requests
    assert sent.method == "POST" and sent.path == "/v1/responses/input_tokens"
    assert sent.headers.get("authorization") == f"Bearer {KEY}"
    body = sent.body
    assert body["model"] == "m-1" and body["instructions"] == "Be brief."
    assert body["tools"][0]["name"] == "lookup" and body["input"]
    assert "stream" not in body and "store" not in body and "max_output_tokens" not in body


def test_anthropic_count_tokens(server: ReplayServer) -> None:
    server.add("/v1/messages/count_tokens", json_route({"input_tokens": 17}))
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url)
    assert adapter.count_tokens(options()) == 17
    (sent,) = server.requests
    assert sent.path == "/v1/messages/count_tokens"
    assert sent.headers.get("x-api-key") == KEY and sent.headers.get("anthropic-version")
    body = sent.body
    assert body["model"] == "m-1" and body["system"] == "Be brief." and body["messages"][0]["role"] == "user"
    assert body["tools"][0]["name"] == "lookup"
    assert "stream" not in body and "max_tokens" not in body


def test_gemini_count_tokens_through_the_service(server: ReplayServer) -> None:
    server.add("/v1beta/models/m-1:countTokens", json_route({"totalTokens": 9, "cachedContentTokenCount": 0}))
    service = LlmService()
    service.register_adapter(["gem"], GeminiAdapter(api_key=KEY, base_url=server.url))
    assert service.count_tokens(options("gem")) == 9
    (sent,) = server.requests
    assert sent.path == "/v1beta/models/m-1:countTokens"
    inner = sent.body["generateContentRequest"]
    assert inner["model"] == "models/m-1" and inner["contents"][0]["parts"][0]["text"] == "How many tokens?"
    assert inner["systemInstruction"]["parts"][0]["text"] == "Be brief."


def test_a_provider_without_an_endpoint_says_so() -> None:
    adapter = OpenAIChatAdapter(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigurationError, match="no token-counting endpoint"):
        adapter.count_tokens(options())


def test_failures_are_classified_and_redacted(server: ReplayServer) -> None:
    server.add("/v1/messages/count_tokens", json_route({"type": "error", "error": {
        "type": "authentication_error", "message": f"invalid x-api-key {KEY}"}}, status=401))
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url)
    with pytest.raises(LlmError) as info:
        adapter.count_tokens(options())
    assert info.value.failure.code == "AUTH"
    assert KEY not in repr(info.value.failure)


def test_an_answer_without_a_count_is_malformed(server: ReplayServer) -> None:
    server.add("/v1/messages/count_tokens", json_route({"tokens": "many"}))
    with pytest.raises(LlmError) as info:
        AnthropicAdapter(api_key=KEY, base_url=server.url).count_tokens(options())
    assert info.value.failure.code == "MALFORMED_RESPONSE"


def test_bounded_in_time(server: ReplayServer) -> None:
    server.add("/v1/messages/count_tokens", Route(body=b"", script=[2.0, b"{}"], chunked=False,
                                                   content_type="application/json"))
    with pytest.raises(LlmError) as info:
        AnthropicAdapter(api_key=KEY, base_url=server.url).count_tokens(options(), timeout=0.3)
    assert info.value.failure.code == "TIMEOUT"
