"""default_service(), dshstream.stream() and list_models over loopback."""

from __future__ import annotations

import pytest

import dshstream
from dshstream import OpenAIChatAdapter
from dshstream._defaults import default_service
from dshstream._replay_server import ReplayServer, Route

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "XAI_API_KEY", "TOGETHER_API_KEY")
URL_VARIABLES = ("OLLAMA_HOST", "OLLAMA_BASE_URL", "LLAMACPP_BASE_URL", "VLLM_BASE_URL", "LMSTUDIO_BASE_URL")
LOCAL = ["ollama", "llamacpp", "vllm", "lmstudio"]


@pytest.fixture(autouse=True)
def _no_local_urls(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in URL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_default_service_registers_keyed_and_local_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    assert [p.id for p in default_service().list_providers()] == LOCAL
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")  # CANARY: a fake key for the test
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-000000000000000000000")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-deepseek-000000000000")
    service = default_service()
    providers = {p.id: p.name for p in service.list_providers()}
    assert set(providers) == {"anthropic", "gemini", "gemini-interactions", "deepseek", "deepseek-anthropic", *LOCAL}
    assert type(service.adapter_for("anthropic")).__name__ == "AnthropicAdapter"
    assert type(service.adapter_for("gemini")).__name__ == "GeminiAdapter"
    assert type(service.adapter_for("gemini-interactions")).__name__ == "GeminiInteractionsAdapter"
    assert providers["deepseek"] == "DeepSeek"
    assert "sk-test-deepseek" not in repr(service.adapter_for("deepseek"))
    # DeepSeek's Anthropic-compatible endpoint, with the same key
    messages = service.adapter_for("deepseek-anthropic")
    assert type(messages).__name__ == "AnthropicAdapter"
    assert getattr(messages, "base_url") == "https://api.deepseek.com/anthropic"
    assert providers["deepseek-anthropic"] == "DeepSeek (Anthropic API)"


def test_claude_platform_on_aws_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers import fake_key

    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("ANTHROPIC_AWS_API_KEY", fake_key("sk-ant-api03-", 40, seed=7))
    assert "claude-aws" not in [p.id for p in default_service().list_providers()]  # no workspace
    monkeypatch.setenv("ANTHROPIC_AWS_WORKSPACE_ID", "wrkspc_env")
    adapter = default_service().adapter_for("claude-aws")
    assert type(adapter).__name__ == "ClaudePlatformAwsAdapter"
    assert getattr(adapter, "base_url") == "https://aws-external-anthropic.eu-west-1.api.aws"
    assert getattr(adapter, "workspace_id") == "wrkspc_env"


def test_setup_hints_name_the_new_routes() -> None:
    from dshstream._defaults import setup_hint

    assert "ANTHROPIC_AWS_WORKSPACE_ID" in (setup_hint("claude-aws") or "")
    assert "ClaudePlatformAwsAdapter" in (setup_hint("claude-aws") or "")
    assert 'AnthropicAdapter(dialect="deepseek"' in (setup_hint("deepseek-anthropic") or "")
    assert "DEEPSEEK_API_KEY" in (setup_hint("deepseek-anthropic") or "")
    assert 'AnthropicAdapter(dialect="ollama")' in (setup_hint("ollama-anthropic") or "")


def test_stream_one_liner_with_an_explicit_service() -> None:
    body = (
        b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"pong"}}]}\n\n'
        b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    with ReplayServer({"/v1/": body}) as server:
        service = dshstream.LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="llamacpp"))
        result = dshstream.stream("local", "m", "ping", system="Be brief.", service=service, max_tokens=8).result()
        assert result.text == "pong"
        sent = server.requests[-1].body
        assert sent["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "ping"},
        ]
        assert sent["max_tokens"] == 8


def test_list_models_over_http() -> None:
    models = b'{"object":"list","data":[{"id":"qwen2.5-coder","object":"model"},{"id":"smollm2"}]}'
    with ReplayServer({"/v1/models": Route(body=models, content_type="application/json")}) as server:
        service = dshstream.LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="llamacpp"))
        assert [m.id for m in service.list_models("local")] == ["qwen2.5-coder", "smollm2"]
        assert server.requests[-1].method == "GET"


# --------------------------------------------------------------------------- local servers' URLs


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1:11434", "http://127.0.0.1:11434/v1"),  # Ollama's own form: no scheme
        ("gpu-box", "http://gpu-box:11434/v1"),
        (":5678", "http://127.0.0.1:5678/v1"),
        ("https://ollama.example.com", "https://ollama.example.com/v1"),
        ("http://gpu-box:8000/", "http://gpu-box:8000/v1"),
        ("http://gpu-box:8000/v1", "http://gpu-box:8000/v1"),
        ("[::1]:11434", "http://[::1]:11434/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str, url: str) -> None:
    from dshstream._defaults import ollama_url

    assert ollama_url(host) == url


def test_local_servers_take_their_urls_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:1234")
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://127.0.0.1:9090/v1/")
    monkeypatch.setenv("VLLM_BASE_URL", "http://vllm.internal:8000/v1")
    monkeypatch.setenv("LMSTUDIO_BASE_URL", "http://127.0.0.1:4321/v1")
    service = default_service()
    urls = {p: getattr(service.adapter_for(p), "base_url") for p in LOCAL}
    assert urls == {
        "ollama": "http://gpu-box:1234/v1",
        "llamacpp": "http://127.0.0.1:9090/v1",
        "vllm": "http://vllm.internal:8000/v1",
        "lmstudio": "http://127.0.0.1:4321/v1",
    }
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://other:1/v1")  # the <PROVIDER>_BASE_URL scheme wins
    assert getattr(default_service().adapter_for("ollama"), "base_url") == "http://other:1/v1"


def test_a_local_url_that_is_not_a_url_leaves_that_server_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", "vllm.internal:8000")  # no scheme: not a URL
    with caplog.at_level("WARNING", logger="dshstream"):
        providers = [p.id for p in default_service().list_providers()]
    assert providers == ["ollama", "llamacpp", "lmstudio"]
    assert any("VLLM_BASE_URL" in record.getMessage() for record in caplog.records)


def test_models_of_a_local_server_at_its_environment_url(monkeypatch: pytest.MonkeyPatch) -> None:
    models = b'{"object":"list","data":[{"id":"smollm2"}]}'
    with ReplayServer({"/v1/models": Route(body=models, content_type="application/json")}) as server:
        monkeypatch.setenv("LLAMACPP_BASE_URL", f"{server.url}/v1")
        assert [m.id for m in default_service().list_models("llamacpp")] == ["smollm2"]


def test_an_environment_key_does_not_follow_a_local_url_to_another_host(monkeypatch: pytest.MonkeyPatch) -> None:
    # VLLM_API_KEY is for vLLM's own default address; VLLM_BASE_URL elsewhere is keyless
    body = (
        b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"pong"}}]}\n\n'
        b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    with ReplayServer({"/v1/": body}) as server:
        monkeypatch.setenv("VLLM_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("VLLM_API_KEY", "sk-vllm-test-0000000000")  # CANARY: a fake key for the test
        result = dshstream.stream("vllm", "m", "ping", service=default_service()).result()
        assert result.text == "pong"
        assert "authorization" not in server.requests[-1].headers
