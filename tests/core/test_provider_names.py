"""dshstream/_core/provider_names.py: the OpenTelemetry GenAI conventions' well-known
``gen_ai.provider.name`` of an API root by its host, and of every built-in adapter by the
API it speaks (its own default host, wherever ``base_url`` points)."""

from __future__ import annotations

from typing import Any

import pytest

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.azure import AzureOpenAIAdapter, AzureOpenAIResponsesAdapter
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.gemini import GeminiAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._adapters.vertex import VertexAnthropicAdapter, VertexGeminiAdapter
from dshstream._adapters.xai import XAIAdapter
from dshstream._core.provider_names import provider_name_for_url
from dshstream._core.request import GenerateOptions, Message
from helpers import fake_key

KEY = fake_key("sk-", 40)
PROXY = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://api.anthropic.com", "anthropic"),
        ("https://generativelanguage.googleapis.com", "gcp.gemini"),
        ("https://aiplatform.googleapis.com/v1", "gcp.vertex_ai"),
        ("https://us-central1-aiplatform.googleapis.com", "gcp.vertex_ai"),
        ("https://bedrock-runtime.eu-west-1.amazonaws.com", "aws.bedrock"),
        ("https://s3.eu-west-1.amazonaws.com", None),  # another AWS service
        ("https://my-resource.openai.azure.com", "azure.ai.openai"),
        ("https://api.deepseek.com", "deepseek"),
        ("https://api.groq.com/openai/v1", "groq"),
        ("https://api.mistral.ai/v1", "mistral_ai"),
        ("https://API.X.AI/v1", "x_ai"),
        ("https://openrouter.ai/api/v1", None),
        ("http://127.0.0.1:8080/v1", None),
        ("not a url", None),
        ("http://[::1", None),
    ],
)
def test_a_hosts_well_known_name(url: str, name: str | None) -> None:
    assert provider_name_for_url(url) == name


def _options(provider: str = "p", model: str = "m") -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=(Message.user("hi"),))


@pytest.mark.parametrize(
    ("make", "name", "operation"),
    [
        (lambda: OpenAIChatAdapter(api_key=KEY, base_url=PROXY), "openai", "chat"),
        (lambda: OpenAIChatAdapter(api_key=KEY, base_url=PROXY, dialect="groq"), "groq", "chat"),
        (lambda: OpenAIChatAdapter(api_key=KEY, base_url=PROXY, dialect="openrouter"), None, "chat"),
        (lambda: OpenAIChatAdapter(dialect="llamacpp"), None, "chat"),
        (lambda: OpenAIResponsesAdapter(api_key=KEY, base_url=PROXY), "openai", "chat"),
        (lambda: XAIAdapter(api_key=KEY, base_url=PROXY), "x_ai", "chat"),
        (lambda: AnthropicAdapter(api_key=KEY, base_url=PROXY), "anthropic", "chat"),
        (lambda: GeminiAdapter(api_key=KEY, base_url=PROXY), "gcp.gemini", "generate_content"),
        (lambda: VertexGeminiAdapter(api_key=lambda: KEY, project="p", location="global", base_url=PROXY),
         "gcp.vertex_ai", "generate_content"),
        (lambda: VertexAnthropicAdapter(api_key=lambda: KEY, project="p", location="global", base_url=PROXY),
         "gcp.vertex_ai", "chat"),
        (lambda: AzureOpenAIAdapter(endpoint="https://contoso.example.com", api_key=KEY), "azure.ai.openai", "chat"),
        (lambda: AzureOpenAIResponsesAdapter(endpoint="https://contoso.example.com", api_key=KEY),
         "azure.ai.openai", "chat"),
        (lambda: BedrockAdapter(region="eu-west-1", api_key=KEY, base_url=PROXY), "aws.bedrock", "chat"),
    ],
)
def test_every_adapter_names_the_api_it_speaks_wherever_it_points(make: Any, name: str | None, operation: str) -> None:
    about = make().telemetry(_options())
    assert (about.provider_name, about.operation_name) == (name, operation)
    assert about.server_address is not None and about.server_port is not None
