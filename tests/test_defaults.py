"""default_service(), dshstream.stream() and list_models over loopback."""

from __future__ import annotations

import pytest

import dshstream
from dshstream import OpenAIChatAdapter
from dshstream._defaults import default_service
from dshstream._replay_server import ReplayServer, Route

KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "DEEPSEEK_API_KEY",
        "OPENROUTER_API_KEY", "GROQ_API_KEY", "MISTRAL_API_KEY", "XAI_API_KEY")


def test_default_service_registers_keyed_and_local_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    assert [p.id for p in default_service().list_providers()] == ["ollama", "llamacpp", "vllm"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")  # CANARY: a fake key for the test
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-test-000000000000000000000")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-deepseek-000000000000")
    service = default_service()
    providers = {p.id: p.name for p in service.list_providers()}
    assert set(providers) == {"anthropic", "gemini", "deepseek", "ollama", "llamacpp", "vllm"}
    assert type(service.adapter_for("anthropic")).__name__ == "AnthropicAdapter"
    assert type(service.adapter_for("gemini")).__name__ == "GeminiAdapter"
    assert providers["deepseek"] == "DeepSeek"
    assert "sk-test-deepseek" not in repr(service.adapter_for("deepseek"))


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
