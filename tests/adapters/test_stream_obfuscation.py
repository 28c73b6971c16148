"""``stream_options.include_obfuscation`` (wire rule 8): ``false`` by default on OpenAI's own
API host for chat completions and Responses, nothing sent to any other server unless the
caller asks, the caller's choice either way, and a server that refuses ``stream_options``
asked once more without it. Request bodies built by the wires, and sent over loopback."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream import ConfigurationError
from dshstream._adapters.azure import AzureOpenAIAdapter, AzureOpenAIResponsesAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._adapters.wire import obfuscation_field
from dshstream._core.dialects import DIALECTS
from dshstream._core.request import GenerateOptions, Message
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import fake_key, fixture_bytes

CHAT_BODY = (
    b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
REJECTION = json.dumps(
    {"error": {"message": "Unrecognized request argument supplied: stream_options", "type": "invalid_request_error"}}
).encode()


def request(provider: str = "p") -> GenerateOptions:
    return GenerateOptions(provider=provider, model="m", messages=(Message.user("hi"),))


def chat_options(adapter: OpenAIChatAdapter) -> Any:
    return adapter.wire.build_body(request()).get("stream_options")


def responses_options(adapter: OpenAIResponsesAdapter) -> Any:
    return adapter.wire.build_body(request()).get("stream_options")


# --------------------------------------------------------------------------- the default


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.openai.com/v1", False),
        ("https://API.OpenAI.com/v1/", False),
        ("https://eu.api.openai.com/v1", False),  # data residency hosts are OpenAI's API too
        ("https://us.api.openai.com/v1", False),
        ("http://127.0.0.1:8080/v1", None),
        ("https://api.openai.com.example.net/v1", None),
        ("https://my-resource.openai.azure.com/openai/v1", None),
        ("https://openrouter.ai/api/v1", None),
    ],
)
def test_the_default_is_false_on_openai_s_host_only(base_url: str, expected: bool | None) -> None:
    assert obfuscation_field(base_url, None) is expected


def test_chat_on_openai_asks_for_usage_and_no_padding() -> None:
    adapter = OpenAIChatAdapter(api_key=fake_key("sk-", 24))
    assert chat_options(adapter) == {"include_usage": True, "include_obfuscation": False}
    assert OpenAIChatAdapter(api_key=fake_key("sk-", 24), include_usage=False).wire.build_body(request())[
        "stream_options"
    ] == {"include_obfuscation": False}


@pytest.mark.parametrize("dialect", sorted(name for name in DIALECTS if name != "openai"))
def test_chat_sends_nothing_of_it_to_the_compatible_servers(dialect: str) -> None:
    adapter = OpenAIChatAdapter(api_key=fake_key("k-", 24), dialect=dialect)
    assert "include_obfuscation" not in (chat_options(adapter) or {})


def test_chat_on_another_host_with_the_openai_dialect_sends_nothing_of_it() -> None:
    adapter = OpenAIChatAdapter(api_key=fake_key("sk-", 24), base_url="http://127.0.0.1:9/v1")
    assert chat_options(adapter) == {"include_usage": True}


def test_responses_on_openai_asks_for_no_padding_elsewhere_nothing() -> None:
    assert responses_options(OpenAIResponsesAdapter(api_key=fake_key("sk-", 24))) == {"include_obfuscation": False}
    for base_url in ("https://api.deepseek.com/v1", "https://openrouter.ai/api/v1", "http://127.0.0.1:9/v1"):
        adapter = OpenAIResponsesAdapter(api_key=fake_key("sk-", 24), key_env=None, base_url=base_url)
        assert "stream_options" not in adapter.wire.build_body(request()), base_url


def test_azure_sends_nothing_of_it() -> None:
    endpoint = "https://my-resource.openai.azure.com"
    chat = AzureOpenAIAdapter(endpoint=endpoint, api_key=fake_key("az-", 24))
    assert chat.wire.build_body(request())["stream_options"] == {"include_usage": True}
    responses = AzureOpenAIResponsesAdapter(endpoint=endpoint, api_key=fake_key("az-", 24))
    assert "stream_options" not in responses.wire.build_body(request())


def test_counting_tokens_never_sends_it() -> None:
    adapter = OpenAIResponsesAdapter(api_key=fake_key("sk-", 24))
    assert "stream_options" not in adapter.wire.count_tokens_body(request())


# --------------------------------------------------------------------------- the caller's choice


def test_the_caller_s_choice_is_sent_as_given_anywhere() -> None:
    assert chat_options(OpenAIChatAdapter(api_key=fake_key("sk-", 24), include_obfuscation=True)) == {
        "include_usage": True,
        "include_obfuscation": True,
    }
    local = OpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", dialect="vllm", include_obfuscation=False)
    assert chat_options(local) == {"include_usage": True, "include_obfuscation": False}
    assert responses_options(OpenAIResponsesAdapter(api_key=fake_key("sk-", 24), include_obfuscation=True)) == {
        "include_obfuscation": True
    }
    remote = OpenAIResponsesAdapter(api_key=fake_key("sk-", 24), key_env=None, base_url="http://127.0.0.1:9/v1",
                                    include_obfuscation=False)
    assert responses_options(remote) == {"include_obfuscation": False}


def test_extra_body_still_has_the_last_word() -> None:
    adapter = OpenAIChatAdapter(api_key=fake_key("sk-", 24))
    options = GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),),
                              extra_body={"stream_options": {"include_usage": True}})
    assert adapter.wire.build_body(options)["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("adapter_class", [OpenAIChatAdapter, OpenAIResponsesAdapter])
@pytest.mark.parametrize("value", ["false", 0, 1])
def test_a_wrong_type_is_refused_naming_the_field(adapter_class: Any, value: object) -> None:
    with pytest.raises(ConfigurationError, match=f"{adapter_class.__name__}.include_obfuscation"):
        adapter_class(api_key=fake_key("sk-", 24), include_obfuscation=value)


# --------------------------------------------------------------------------- over loopback


def test_chat_sends_it_and_a_refusal_is_retried_without_stream_options(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=REJECTION, status=400, content_type="application/json"), Route(body=CHAT_BODY)])
    adapter = OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="vllm", include_usage=False,
                                include_obfuscation=False, max_retries=0)
    service = LlmService(check_contract=True)
    service.register_adapter(["p"], adapter)
    assert service.stream(request()).result().text == "ok"
    assert service.stream(request()).result().text == "ok"
    sent = [r.body for r in server.requests]
    assert sent[0]["stream_options"] == {"include_obfuscation": False}
    assert "stream_options" not in sent[1] and "stream_options" not in sent[2]  # remembered
    assert adapter.wire.include_obfuscation is None


def test_responses_sends_it_and_a_refusal_is_retried_without_stream_options(server: ReplayServer) -> None:
    server.add("/v1/", [Route(body=REJECTION, status=400, content_type="application/json"),
                        Route(body=fixture_bytes("openai-responses/text.sse"))])
    adapter = OpenAIResponsesAdapter(api_key=fake_key("sk-", 24), key_env=None, base_url=f"{server.url}/v1",
                                     include_obfuscation=False, max_retries=0)
    service = LlmService(check_contract=True)
    service.register_adapter(["p"], adapter)
    assert service.stream(request()).result().ok
    sent = [r.body for r in server.requests]
    assert sent[0]["stream_options"] == {"include_obfuscation": False}
    assert "stream_options" not in sent[1]
    assert adapter.wire.include_obfuscation is None
    assert adapter.wire.include_encrypted_reasoning is True  # the other second form untouched


def test_the_websocket_turn_carries_no_stream_options() -> None:
    """``response.create`` over a socket: the HTTP stream's transport fields stay behind."""
    from dshstream._core.http_request import HttpRequest
    from dshstream._transport.ws_transport import _create_body

    body = OpenAIResponsesAdapter(api_key=fake_key("sk-", 24)).wire.build_body(request())
    assert body["stream_options"] == {"include_obfuscation": False}
    sent = _create_body(HttpRequest(url="https://api.openai.com/v1/responses", headers={}, body=body))
    assert "stream_options" not in sent and "stream" not in sent and sent["model"] == "m"
