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
from helpers import fake_key

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


# --------------------------------------------------------------------------- Bedrock, Vertex, Azure (issue 33)


def test_bedrock_converse_count_tokens_is_signed_over_its_body(server: ReplayServer) -> None:
    """botocore's CountTokens: POST /model/{modelId}/count-tokens, {"input": {"converse": ...}},
    answered {"inputTokens": N}; SigV4 covers the bytes actually sent."""
    from adapters.test_bedrock import KEY_ID, SECRET, _expected_signature
    from dshstream._adapters.bedrock import BedrockAdapter

    server.add("/model/", json_route({"inputTokens": 31}))
    adapter = BedrockAdapter(region="us-east-1", base_url=server.url, credentials=(KEY_ID, SECRET, None))
    assert adapter.count_tokens(options()) == 31
    (sent,) = server.requests
    path = "/model/m-1/count-tokens"
    assert sent.method == "POST" and sent.path == path
    converse = sent.body["input"]["converse"]
    assert set(converse) == {"messages", "system", "toolConfig"}  # no inferenceConfig: nothing generated
    assert converse["system"] == [{"text": "Be brief."}]
    assert converse["toolConfig"]["tools"][0]["toolSpec"]["name"] == "lookup"
    headers = {k.lower(): v for k, v in sent.headers.items()}
    raw = json.dumps(sent.body, ensure_ascii=False, separators=(",", ":")).encode()
    assert headers["authorization"].rsplit("Signature=", 1)[1] == _expected_signature(
        "POST", path, headers, raw, SECRET
    )


def test_bedrock_invoke_count_tokens_sends_the_invoke_body_as_base64(server: ReplayServer) -> None:
    import base64

    from dshstream._adapters.bedrock import BedrockAdapter

    server.add("/model/", json_route({"inputTokens": 12}))
    adapter = BedrockAdapter(region="us-east-1", base_url=server.url, api="invoke", api_key=fake_key("ABSK", 40))
    claude = GenerateOptions(provider="b", model="anthropic.claude-sonnet-4-5", messages=options().messages)
    assert adapter.count_tokens(claude) == 12
    (sent,) = server.requests
    body = json.loads(base64.b64decode(sent.body["input"]["invokeModel"]["body"]))
    assert body["anthropic_version"] == "bedrock-2023-05-31" and body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": "How many tokens?"}]


def test_vertex_gemini_count_tokens(server: ReplayServer) -> None:
    from dshstream._adapters.vertex import VertexGeminiAdapter

    server.add("/v1/projects/", json_route({"totalTokens": 7, "totalBillableCharacters": 30}))
    adapter = VertexGeminiAdapter(project="proj", location="us-central1", api_key=lambda: "tok", base_url=server.url)
    assert adapter.count_tokens(options()) == 7
    (sent,) = server.requests
    assert sent.path == "/v1/projects/proj/locations/us-central1/publishers/google/models/m-1:countTokens"
    assert sent.headers.get("authorization") == "Bearer tok"
    # Vertex's CountTokensRequest: contents, systemInstruction, tools at the top level
    assert set(sent.body) == {"contents", "systemInstruction", "tools"}
    assert sent.body["systemInstruction"]["parts"][0]["text"] == "Be brief."


def test_vertex_claude_count_tokens(server: ReplayServer) -> None:
    from dshstream._adapters.vertex import VertexAnthropicAdapter

    server.add("/v1/projects/", json_route({"input_tokens": 23}))
    adapter = VertexAnthropicAdapter(project="proj", location="us-east5", api_key=lambda: "tok", base_url=server.url)
    assert adapter.count_tokens(options()) == 23
    (sent,) = server.requests
    # the path the Anthropic SDK's Vertex client uses; the model travels in the body
    assert sent.path == "/v1/projects/proj/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict"
    assert sent.body["model"] == "m-1" and sent.body["anthropic_version"] == "vertex-2023-10-16"
    assert "max_tokens" not in sent.body and "stream" not in sent.body


def test_azure_responses_says_counting_is_not_offered(server: ReplayServer) -> None:
    from dshstream._adapters.azure import AzureOpenAIResponsesAdapter

    adapter = AzureOpenAIResponsesAdapter(endpoint=server.url, api_key=fake_key("az", 32))
    with pytest.raises(ConfigurationError, match="Azure OpenAI does not serve POST /responses/input_tokens"):
        adapter.count_tokens(options())
    assert server.requests == []


def test_vertex_gemini_refuses_to_count_without_the_cached_content(server: ReplayServer) -> None:
    from dshstream._adapters.vertex import VertexGeminiAdapter
    from dshstream.adapters import PromptCache

    adapter = VertexGeminiAdapter(project="proj", location="us-central1", api_key=lambda: "tok", base_url=server.url)
    cached = GenerateOptions(provider="v", model="m-1", messages=(Message.user("Q"),),
                             prompt_cache=PromptCache(cached_content="projects/proj/locations/us-central1/cachedContents/1"))
    with pytest.raises(ConfigurationError, match=r"countTokens takes no cached content"):
        adapter.count_tokens(cached)
    assert server.requests == []
