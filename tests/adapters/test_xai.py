"""XAIAdapter (dshstream/_adapters/xai.py), the ``xai`` route on xAI's Responses API: the
request (``/v1/responses``, stateless, the encrypted reasoning asked for, no reasoning
summary or background mode), the real grok-code-fast-1 recording streamed over 127.0.0.1
and its encrypted reasoning sent back on the next turn, the 900 s idle default, the key
kept to xAI's host, the ``xai``/``xai-chat`` routes of ``default_service()``, and the
provider's telemetry name.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import fake_key, fixture_bytes

from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._adapters.xai import IDLE_TIMEOUT, XAIAdapter
from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message
from dshstream._defaults import default_service
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._transport.memory import MemoryTransport

RECORDING = "xai/responses_api_reasoning_encrypted_store_false.sse"
KEY = fake_key("xai-", 80)


def request(*messages: Message, **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="xai", model="grok-code-fast-1", messages=messages, **fields)


def test_the_request_is_a_stateless_responses_request_with_encrypted_reasoning() -> None:
    adapter = XAIAdapter(api_key=KEY)
    assert adapter.base_url == "https://api.x.ai/v1"
    options = request(Message.user("hi"), reasoning_effort="high")
    assert adapter.wire.endpoint(options) == "https://api.x.ai/v1/responses"
    body = adapter.wire.build_body(options)
    assert body["store"] is False and body["stream"] is True
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high"}  # no summary: xAI's docs name none
    assert "background" not in adapter.wire.build_body(request(Message.user("hi"), resumable=True))
    assert adapter.wire.count_tokens_url(options) is None
    assert "context_management" not in body


def test_the_recording_streams_and_its_encrypted_reasoning_goes_back_every_turn(server: ReplayServer) -> None:
    server.add("/v1/responses", [Route(body=fixture_bytes(RECORDING))])
    service = LlmService(check_contract=True)
    service.register_adapter(["xai"], XAIAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0))
    first = service.stream(request(Message.user("What is notable about Sonoran food?"))).result()
    assert first.ok and first.finish.kind == "stop" and first.text.startswith("### Overview of Sonoran Cuisine")
    assert first.reasoning.startswith("First, the question is")
    assert first.usage is not None and (first.usage.cache_read_tokens, first.usage.reasoning_tokens) == (192, 253)
    (reasoning, message) = first.replay_state["items"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"].startswith("WjtnRFdC")

    history = [Message.user("What is notable about Sonoran food?"), first.message(), Message.user("And its tortillas?")]
    second = service.stream(request(*history)).result()
    assert second.ok
    sent = server.requests[1].body
    assert sent["store"] is False and server.requests[1].path == "/v1/responses"
    replayed = sent["input"][1]
    assert replayed["type"] == "reasoning" and replayed["id"] == reasoning["id"]
    assert replayed["encrypted_content"] == reasoning["encrypted_content"]
    assert sent["input"][2]["type"] == "message" and sent["input"][2]["content"][0]["text"] == first.text
    assert sent["input"][3] == {"role": "user", "content": "And its tortillas?"}


@pytest.mark.parametrize(("idle", "expected"), [(None, IDLE_TIMEOUT), (12.5, 12.5)])
def test_a_request_without_an_idle_timeout_may_wait_900_seconds(idle: float | None, expected: float) -> None:
    transport = MemoryTransport(fixture_bytes(RECORDING))
    adapter = XAIAdapter(api_key=KEY, transport=transport)
    result = LlmService()
    result.register_adapter(["xai"], adapter)
    assert result.stream(request(Message.user("hi"), idle_timeout=idle)).result().ok
    assert IDLE_TIMEOUT >= 900 and transport.streams[0]._limits.idle_timeout == expected


def test_xai_api_key_goes_only_to_xais_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XAI_API_KEY", KEY)
    assert XAIAdapter().credential.describe() != "none"
    assert XAIAdapter(base_url="http://127.0.0.1:9/v1").credential.describe() == "none"
    # a variable the caller names goes where they point it
    monkeypatch.setenv("MY_GROK_KEY", KEY)
    assert XAIAdapter(base_url="http://127.0.0.1:9/v1", key_env="MY_GROK_KEY").credential.describe() != "none"


def test_default_service_routes_xai_to_responses_and_keeps_chat_as_xai_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XAI_API_KEY", KEY)
    service = default_service()
    assert isinstance(service.adapter_for("xai"), XAIAdapter)
    chat = service.adapter_for("xai-chat")
    assert isinstance(chat, OpenAIChatAdapter) and chat.dialect.name == "xai"
    assert chat.wire.endpoint(request(Message.user("hi"))) == "https://api.x.ai/v1/chat/completions"


def test_telemetry_names_the_provider_x_ai_on_both_routes() -> None:
    options = request(Message.user("hi"))
    about = XAIAdapter(api_key=KEY, base_url="http://127.0.0.1:9/v1").telemetry(options)
    assert (about.provider_name, about.operation_name, about.server_address, about.server_port) == (
        "x_ai", "chat", "127.0.0.1", 9)
    assert OpenAIChatAdapter(api_key=KEY, dialect="xai").telemetry(options).provider_name == "x_ai"


def test_compaction_is_off_unless_asked_and_unknown_settings_are_refused() -> None:
    options = request(Message.user("hi"))
    assert "context_management" not in XAIAdapter(api_key=KEY).wire.build_body(options)
    asked = XAIAdapter(api_key=KEY, compact_threshold=1000)  # the Responses setting, sent as asked
    assert asked.wire.build_body(options)["context_management"] == [{"type": "compaction", "compact_threshold": 1000}]
    with pytest.raises(ConfigurationError, match="max_retrys"):
        XAIAdapter(api_key=KEY, max_retrys=1)  # type: ignore[call-arg]
