"""Azure OpenAI over loopback HTTP: Azure's real host names are routed to 127.0.0.1, so the
adapter builds exactly the URLs it would send (classic deployment URL with
``api-version``, the v1 API, ``/responses``); each URL, query, header and body is
checked, then the recorded Azure streams are replayed. Entra ID tokens (callables), the
environment the official SDK reads (the key only to the ``AZURE_OPENAI_ENDPOINT`` host),
the quirks (prompt filter results, a ``content_filter`` finish, ``stream_options``
refused, Azure error bodies), ``default_service`` and ``dshstream chat -p azure``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from dshstream import ConfigurationError, GenerateOptions, Message, ToolSpec, default_service
from dshstream.adapters import AzureOpenAIAdapter, AzureOpenAIResponsesAdapter
from dshstream._core.attribution import DEFAULT_IDENTITY
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import KNOWN_FINISH, fixture_bytes, routed_session

RESOURCE = "https://traceloop-stg.openai.azure.com"  # the resource of the recorded streams
KEY = "0123456789abcdef0123456789CANARY"  # CANARY: a fake Azure key (32 characters, like Azure's)
ENTRA = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.CANARY-entra.signature"  # a fake token
AZURE_ENV = ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_VERSION", "OPENAI_API_KEY")
AZURE_FIXTURES = sorted(name for name in KNOWN_FINISH if name.startswith("azure/"))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def azure(server: ReplayServer) -> Iterator[tuple[ReplayServer, Any]]:
    """The loopback server standing in for the Azure resource, and a session routed to it."""
    yield server, routed_session(RESOURCE, server.url)


def options(model: str = "openllmetry-testing", **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="azure", model=model, messages=(Message.user("Tell me a joke"),), **fields)


def stream(adapter: Any, **fields: Any) -> Any:
    service = LlmService(check_contract=True)
    service.register_adapter(["azure"], adapter)
    return service.stream(options(**fields)).result()


def recorded_text(name: str) -> str:
    """The content deltas of a recorded chat stream, joined."""
    text = []
    for line in fixture_bytes(name).decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices") or []:
                text.append((choice.get("delta") or {}).get("content") or "")
    return "".join(text)


# --------------------------------------------------------------------------- URL shapes


def test_classic_deployment_url_from_the_environment(azure: tuple[ReplayServer, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    server, session = azure
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", f"{RESOURCE}/")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-02-01")
    server.add("/openai/deployments/", Route(body=fixture_bytes("azure/gpt35_turbo_prompt_filter_first.sse")))
    adapter = AzureOpenAIAdapter(session=session)
    assert adapter.base_url == RESOURCE and adapter.classic
    assert adapter.wire.endpoint(options()) == (
        f"{RESOURCE}/openai/deployments/openllmetry-testing/chat/completions?api-version=2024-02-01"
    )
    result = stream(adapter, max_tokens=50, temperature=0.2)
    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/openai/deployments/openllmetry-testing/chat/completions?api-version=2024-02-01"
    assert sent.headers["api-key"] == KEY and "authorization" not in sent.headers
    assert sent.headers["content-type"] == "application/json" and sent.headers["accept"] == "text/event-stream"
    assert sent.headers["user-agent"] == DEFAULT_IDENTITY.user_agent
    assert sent.body == {
        "model": "openllmetry-testing",
        "messages": [{"role": "user", "content": "Tell me a joke"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 50,  # api-version 2024-02-01 predates max_completion_tokens
        "temperature": 0.2,
    }
    # The first chunk (empty choices, prompt_filter_results) carries no content.
    assert result.finish.kind == "stop" and result.finish.raw == "stop"
    assert result.text == recorded_text("azure/gpt35_turbo_prompt_filter_first.sse") and result.text
    assert result.metadata.model == "gpt-35-turbo"
    assert KEY not in repr(adapter)


def test_classic_url_with_a_fixed_deployment_and_a_new_version(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    server.add("/openai/deployments/", Route(body=fixture_bytes("azure/gpt52_usage_latency_checkpoint.sse")))
    adapter = AzureOpenAIAdapter(
        endpoint=f"{RESOURCE}/openai", api_key=KEY, api_version="2024-12-01-preview",
        deployment="gpt-5.2_2025-12-11", session=session,
    )
    result = stream(adapter, model="gpt-5.2", max_tokens=64)
    sent = server.requests[0]
    assert sent.path == "/openai/deployments/gpt-5.2_2025-12-11/chat/completions?api-version=2024-12-01-preview"
    assert sent.body["model"] == "gpt-5.2" and sent.body["max_completion_tokens"] == 64
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (12, 24)
    assert result.text == recorded_text("azure/gpt52_usage_latency_checkpoint.sse")


def test_v1_chat_url_is_the_default(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    server.add("/openai/v1/chat/completions", Route(body=fixture_bytes("azure/gpt41_mini_filter_results_on_finish_chunk.sse")))
    adapter = AzureOpenAIAdapter(endpoint=f"{RESOURCE}/openai/v1/", api_key=KEY, session=session)
    assert adapter.api_version == "v1" and not adapter.classic and adapter.base_url == RESOURCE
    tool = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    result = stream(adapter, model="gpt-4.1-mini", max_tokens=100, tools=(tool,), reasoning_effort="low")
    sent = server.requests[0]
    assert sent.path == "/openai/v1/chat/completions"
    assert sent.headers["api-key"] == KEY
    assert sent.body == {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "user", "content": "Tell me a joke"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [tool.to_openai()],
        "max_completion_tokens": 100,
        "reasoning_effort": "low",
    }
    assert result.finish.kind == "stop"
    assert result.text == recorded_text("azure/gpt41_mini_filter_results_on_finish_chunk.sse")


#: the request ruby_llm's cassette recorded (the Foundry Models API took it; PROVENANCE.md)
FOUNDRY_BODY = (b'{"model":"grok-4-1-fast-non-reasoning","messages":[{"role":"user","content":"Count from 1 to 3"}],'
                b'"stream":true,"stream_options":{"include_usage":true}}')


def test_foundry_models_api(azure: tuple[ReplayServer, Any]) -> None:
    from dshstream._core.http_request import encode_json_body

    server, session = azure
    server.add("/models/chat/completions", Route(body=fixture_bytes("azure/foundry_models_grok41_fast_text.sse")))
    adapter = AzureOpenAIAdapter(endpoint=f"{RESOURCE}/models", api_key=KEY, session=session, foundry_models=True)
    assert adapter.api_version == "2024-05-01-preview" and adapter.base_url == RESOURCE
    assert adapter.wire.models_url() is None
    count = GenerateOptions(provider="azure", model="grok-4-1-fast-non-reasoning",
                            messages=(Message.user("Count from 1 to 3"),))
    assert encode_json_body(adapter.wire.build_body(count)) == FOUNDRY_BODY  # byte for byte
    service = LlmService(check_contract=True)
    service.register_adapter(["azure"], adapter)
    result = service.stream(count).result()
    sent = server.requests[0]
    assert sent.path == "/models/chat/completions?api-version=2024-05-01-preview"
    assert sent.headers["api-key"] == KEY
    assert result.text == "1, 2, 3."
    # 161 cached beside prompt_tokens 7 (total_tokens 15 = 7 + 8): 7 were uncached
    assert result.usage is not None and (result.usage.input_tokens, result.usage.cache_read_tokens) == (7, 161)
    assert adapter.wire.build_body(options(max_tokens=50))["max_tokens"] == 50
    with pytest.raises(ConfigurationError, match="dated api_version"):
        AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, foundry_models=True, api_version="v1")


def test_v1_preview_and_the_responses_api(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    server.add("/openai/v1/chat/completions", Route(body=fixture_bytes("azure/model_router_prompt_filter_results.sse")))
    # No Azure Responses stream was recorded anywhere; Azure's /responses is OpenAI's wire.
    server.add("/openai/v1/responses", Route(body=fixture_bytes("openai-responses/text.sse")))
    chat = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, api_version="preview", session=session)
    assert stream(chat, model="model-router").finish.kind == "stop"
    assert server.requests[-1].path == "/openai/v1/chat/completions?api-version=preview"
    tokens: list[str] = []

    def entra() -> str:
        tokens.append(ENTRA)
        return ENTRA

    responses = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=entra, session=session)
    result = stream(responses, model="gpt-4.1")
    sent = server.requests[-1]
    assert sent.path == "/openai/v1/responses"
    assert sent.headers["authorization"] == f"Bearer {ENTRA}" and "api-key" not in sent.headers
    assert sent.body["model"] == "gpt-4.1" and sent.body["stream"] is True and sent.body["store"] is False
    assert result.finish.kind == "stop" and result.text and tokens == [ENTRA]
    dated = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, api_version="2025-04-01-preview")
    assert dated.wire.endpoint(options()) == f"{RESOURCE}/openai/responses?api-version=2025-04-01-preview"


def test_model_list_urls(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    server.add("/openai/", Route(body=b'{"data":[{"id":"gpt-4o-2024-11-20"}],"object":"list"}', content_type="application/json"))
    assert [m.id for m in AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, session=session).list_models("azure")] == [
        "gpt-4o-2024-11-20"
    ]
    AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, api_version="2024-10-21", session=session).list_models("azure")
    assert [r.path for r in server.requests] == ["/openai/v1/models", "/openai/models?api-version=2024-10-21"]
    assert all(r.method == "GET" and r.headers["api-key"] == KEY for r in server.requests)


def test_the_responses_adapter_lists_models_and_names_its_version_like_the_chat_one(
    azure: tuple[ReplayServer, Any]
) -> None:
    server, session = azure
    server.add("/openai/", Route(body=b'{"data":[{"id":"gpt-4.1"}],"object":"list"}', content_type="application/json"))
    current = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, session=session)
    dated = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, api_version="2025-04-01-preview", session=session)
    assert (current.api_version, current.classic, dated.api_version, dated.classic) == (
        "v1", False, "2025-04-01-preview", True)
    assert [m.id for m in current.list_models("azure")] == ["gpt-4.1"]
    dated.list_models("azure")
    assert [r.path for r in server.requests] == ["/openai/v1/models", "/openai/models?api-version=2025-04-01-preview"]
    assert all(r.method == "GET" and r.headers["api-key"] == KEY for r in server.requests)
    assert (current.title, AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY).title) == (
        "Azure OpenAI Responses", "Azure OpenAI")
    assert current.provider_info("azure").name == "Azure OpenAI Responses"
    assert AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, title="Mine").title == "Mine"


@pytest.mark.parametrize("name", AZURE_FIXTURES)
def test_every_recorded_azure_stream_replays_through_the_adapter(azure: tuple[ReplayServer, Any], name: str) -> None:
    server, session = azure
    adapter: Any
    if name.startswith("azure/responses_api_"):  # Azure's Responses API (v1)
        server.add("/openai/v1/responses", Route(body=fixture_bytes(name)))
        adapter = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, session=session)
    else:
        server.add("/openai/deployments/", Route(body=fixture_bytes(name)))
        adapter = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, api_version="2024-02-01", session=session)
    result = stream(adapter)
    known = KNOWN_FINISH[name]
    assert (result.finish.kind, result.finish.raw) == (known.kind, known.raw)
    if name.startswith("azure/responses_api_"):
        assert result.text == "" and [c.name for c in result.tool_calls]  # both recordings: a function call
        return
    assert result.text == recorded_text(name)


# --------------------------------------------------------------------------- auth


def test_entra_token_callable_is_bearer_once_per_attempt_and_refreshed_on_401(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    unauthorized = Route(
        body=b'{"error":{"code":"401","message":"Unauthorized. Access token is missing, invalid, audience is '
        b'incorrect (https://cognitiveservices.azure.com), or have expired."}}',
        status=401, content_type="application/json",
    )
    busy = Route(body=b'{"error":{"code":"500","message":"busy"}}', status=500, content_type="application/json",
                 headers={"retry-after-ms": "1"})
    ok = Route(body=fixture_bytes("azure/gpt41_mini_obfuscation_protected_material.sse"))
    server.add("/openai/v1/chat/completions", [busy, unauthorized, ok])
    issued: list[str] = []

    class Provider:
        """Stands in for azure.identity.get_bearer_token_provider(...)."""

        def __call__(self) -> str:
            issued.append(f"{ENTRA}-{len(issued)}")
            return issued[-1]

    adapter = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=Provider(), session=session, max_retries=1)
    assert adapter.auth == "bearer"
    result = stream(adapter)
    assert result.finish.kind == "stop", result.failure
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {t}" for t in issued]
    assert len(issued) == 3 and all("api-key" not in r.headers for r in server.requests)
    # auth= overrides the choice: a rotating key from a vault goes in api-key.
    rotating = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=lambda: KEY, auth="api-key")
    assert rotating.build_request(options()).headers["api-key"] == KEY
    fixed_token = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=ENTRA, auth="bearer")
    assert fixed_token.build_request(options()).headers["authorization"] == f"Bearer {ENTRA}"


def test_the_environment_key_goes_only_to_the_environment_endpoint(
    azure: tuple[ReplayServer, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = azure
    server.add("/", Route(body=fixture_bytes("azure/model_router_prompt_filter_results.sse")))
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", RESOURCE)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-CANARY-0123456789")
    elsewhere = AzureOpenAIAdapter(endpoint=server.url)
    stream(elsewhere)
    assert "api-key" not in server.requests[-1].headers and "authorization" not in server.requests[-1].headers
    assert AzureOpenAIAdapter(endpoint="https://other-resource.openai.azure.com").credential.describe() == "none"
    assert AzureOpenAIAdapter()._api_key == KEY  # its own host
    assert AzureOpenAIAdapter(endpoint=f"{RESOURCE}/openai/v1")._api_key == KEY  # same host, pasted v1 URL
    explicit = AzureOpenAIAdapter(endpoint=server.url, api_key=KEY)
    stream(explicit)
    assert server.requests[-1].headers["api-key"] == KEY  # the caller chose to send it there
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT")
    assert AzureOpenAIAdapter(endpoint=RESOURCE).credential.describe() == "none"  # no environment endpoint


# --------------------------------------------------------------------------- quirks


def test_a_deployment_that_refuses_stream_options_is_asked_once_more(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    refused = Route(
        body=b'{"error":{"message":"Unrecognized request argument supplied: stream_options",'
        b'"type":"invalid_request_error","param":null,"code":null}}',
        status=400, content_type="application/json",
    )
    server.add("/openai/deployments/", [refused, Route(body=fixture_bytes("azure/langchain_lcel_test_azure.sse"))])
    adapter = AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, api_version="2023-12-01-preview", session=session)
    result = stream(adapter, max_retries=0)
    assert result.finish.kind == "stop" and result.text == recorded_text("azure/langchain_lcel_test_azure.sse")
    assert "stream_options" in server.requests[0].body and "stream_options" not in server.requests[1].body
    stream(adapter)
    assert "stream_options" not in server.requests[2].body  # remembered
    assert len(server.requests) == 3


# Constructed, not recorded (no filtered Azure stream was found): the shape of Azure's
# documented content-filtered stream — annotations per choice, finish "content_filter".
FILTERED_STREAM = b"".join(
    b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
    for chunk in (
        {"choices": [], "created": 0, "id": "", "model": "", "object": "",
         "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
             "hate": {"filtered": False, "severity": "safe"}, "jailbreak": {"detected": False, "filtered": False}}}]},
        {"choices": [{"content_filter_results": {}, "delta": {"content": "", "role": "assistant"},
                      "finish_reason": None, "index": 0}], "id": "chatcmpl-1", "model": "gpt-4o",
         "object": "chat.completion.chunk"},
        {"choices": [{"content_filter_results": {"violence": {"filtered": False, "severity": "low"}},
                      "delta": {"content": "Here is how"}, "finish_reason": None, "index": 0}],
         "id": "chatcmpl-1", "model": "gpt-4o", "object": "chat.completion.chunk"},
        {"choices": [{"content_filter_results": {
            "violence": {"filtered": True, "severity": "medium"}, "hate": {"filtered": False, "severity": "safe"},
            "custom_blocklists": {"filtered": True, "details": [{"filtered": True, "id": "weapons-list"}]}},
                      "delta": {}, "finish_reason": "content_filter", "index": 0}],
         "id": "chatcmpl-1", "model": "gpt-4o", "object": "chat.completion.chunk"},
    )
) + b"data: [DONE]\n\n"


def test_a_content_filter_finish_names_the_filtered_categories(azure: tuple[ReplayServer, Any]) -> None:
    server, session = azure
    server.add("/openai/v1/chat/completions", Route(body=FILTERED_STREAM))
    result = stream(AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, session=session))
    failure = result.failure
    assert result.finish.kind == "error" and result.finish.raw == "content_filter"
    assert failure is not None and failure.code == "CONTENT_FILTER" and failure.category == "content_blocked"
    assert failure.detail == "content filter: violence (severity: medium), custom_blocklists (ids: weapons-list)"
    assert result.text == "Here is how"  # the partial answer is kept


@pytest.mark.parametrize(
    ("status", "body", "code", "in_detail"),
    [
        # Azure's documented error bodies (shapes from the Azure OpenAI docs; not recordings).
        (400, {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content "
                         "management policy.", "type": None, "param": "prompt", "code": "content_filter", "status": 400,
                         "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {
                             "hate": {"filtered": True, "severity": "high"}, "jailbreak": {"filtered": True, "detected": True},
                             "sexual": {"filtered": False, "severity": "safe"}}}}},
         "CONTENT_FILTER", "content filter: hate (severity: high), jailbreak (detected)"),
        (404, {"error": {"code": "DeploymentNotFound", "message": "The API deployment for this resource does not exist. "
                         "If you created the deployment within the last 5 minutes, please wait a moment and try again."}},
         "MODEL_NOT_FOUND", "DeploymentNotFound"),
        (401, {"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}},
         "AUTH", "invalid subscription key"),
        (429, {"error": {"code": "429", "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI "
                         "API version 2024-02-01 have exceeded token rate limit of your current OpenAI S0 pricing tier. "
                         "Please retry after 86400 seconds."}},
         "RATE_LIMIT", "exceeded token rate limit"),
    ],
)
def test_azure_error_bodies_are_classified(
    azure: tuple[ReplayServer, Any], status: int, body: dict[str, Any], code: str, in_detail: str
) -> None:
    server, session = azure
    server.add("/openai/", Route(body=json.dumps(body).encode(), status=status, content_type="application/json"))
    result = stream(AzureOpenAIAdapter(endpoint=RESOURCE, api_key=KEY, session=session), max_retries=0)
    failure = result.failure
    assert failure is not None and failure.code == code and failure.status == status
    assert failure.detail is not None and in_detail in failure.detail
    assert KEY not in repr(failure)


# --------------------------------------------------------------------------- configuration


def test_configuration_mistakes_name_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIAdapter(api_key=KEY)
    with pytest.raises(ConfigurationError, match="api_version"):
        AzureOpenAIAdapter(endpoint=RESOURCE, api_version="2024/../x")
    with pytest.raises(ConfigurationError, match="not two different URLs"):
        AzureOpenAIAdapter(endpoint=RESOURCE, base_url="https://other.openai.azure.com")
    with pytest.raises(ConfigurationError, match="auth"):
        AzureOpenAIAdapter(endpoint=RESOURCE, auth="basic")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="endpoint"):
        AzureOpenAIAdapter(endpoint="ftp://x")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "not a url")
    with pytest.raises(ConfigurationError, match="AZURE_OPENAI_ENDPOINT"):
        AzureOpenAIAdapter()
    same = AzureOpenAIAdapter(endpoint=RESOURCE, base_url=f"{RESOURCE}/openai/v1")
    assert same.base_url == RESOURCE


def test_default_service_registers_azure_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "azure" not in {p.id for p in default_service().list_providers()}
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", RESOURCE)
    assert "azure" not in {p.id for p in default_service().list_providers()}  # no key
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_VERSION", "2024-10-21")
    service = default_service()
    info = {p.id: p.name for p in service.list_providers()}
    assert info["azure"] == "Azure OpenAI"
    adapter = service.adapter_for("azure")
    assert isinstance(adapter, AzureOpenAIAdapter)
    assert adapter.api_version == "2024-10-21" and adapter.base_url == RESOURCE and adapter.credential.value == KEY


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in AZURE_ENV}
    return subprocess.run(
        [sys.executable, "-m", "dshstream", *args], capture_output=True, text=True,
        env={**clean, "NO_COLOR": "1", **env}, timeout=120,
    )


def test_cli_chat_with_azure_from_the_environment(server: ReplayServer) -> None:
    server.add("/openai/deployments/", Route(body=fixture_bytes("azure/gpt35_turbo_prompt_filter_first.sse")))
    env = {"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_API_KEY": KEY, "OPENAI_API_VERSION": "2024-02-01"}
    proc = _cli("chat", "-p", "azure", "-m", "openllmetry-testing", "Tell me a joke", env=env)
    assert proc.returncode == 0, proc.stderr
    assert recorded_text("azure/gpt35_turbo_prompt_filter_first.sse") in proc.stdout
    sent = server.requests[0]
    assert sent.path == "/openai/deployments/openllmetry-testing/chat/completions?api-version=2024-02-01"
    assert sent.headers["api-key"] == KEY
    assert KEY not in proc.stdout + proc.stderr


def test_cli_azure_rejected_key_tips_name_azure_openai_api_key(server: ReplayServer) -> None:
    body = json.dumps({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong "
                                 "API endpoint. Make sure to provide a valid key for an active subscription and use "
                                 "a correct regional API endpoint for your resource."}}).encode()
    server.add("/openai/", Route(body=body, status=401))
    env = {"AZURE_OPENAI_ENDPOINT": server.url, "AZURE_OPENAI_API_KEY": KEY}
    proc = _cli("chat", "-p", "azure", "-m", "gpt-4o-mini", "hi", env=env)
    assert proc.returncode == 1 and "(AUTH, HTTP 401)" in proc.stderr
    tips = [line for line in proc.stderr.splitlines() if line.startswith("tip: ")]
    assert tips and "AZURE_OPENAI_API_KEY" in tips[0], proc.stderr
    assert KEY not in proc.stdout + proc.stderr


def test_cli_azure_names_what_is_missing() -> None:
    proc = _cli("chat", "-p", "azure", "-m", "d", "hi", env={})
    assert proc.returncode == 2 and "AZURE_OPENAI_ENDPOINT" in proc.stderr
    proc = _cli("chat", "-p", "azure", "-m", "d", "hi", env={"AZURE_OPENAI_ENDPOINT": RESOURCE})
    assert proc.returncode == 2 and "AZURE_OPENAI_API_KEY" in proc.stderr


def test_azure_responses_takes_the_compaction_option() -> None:
    options = GenerateOptions(provider="azure-responses", model="gpt-5", messages=(Message.user("hi"),))
    plain = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY)
    assert "context_management" not in plain.wire.build_body(options)
    compacting = AzureOpenAIResponsesAdapter(endpoint=RESOURCE, api_key=KEY, compact_threshold=50_000)
    assert compacting.wire.build_body(options)["context_management"] == [{"type": "compaction", "compact_threshold": 50_000}]
    assert compacting.wire.endpoint(options).startswith(f"{RESOURCE}/openai/v1/responses")
