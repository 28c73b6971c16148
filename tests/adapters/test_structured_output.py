"""Structured output (``GenerateOptions.response_format``): the values and their checks, the
exact request body every adapter and dialect sends (compared with each provider's
published shape), the refusals at build time, and the forced-tool path end to end over
loopback — the caller sees the JSON as text, no tool call, a ``stop`` finish, and the
next turn replays it as text."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    ConfigurationError,
    Finish,
    GenerateOptions,
    JsonMode,
    JsonSchema,
    Message,
    TextBlock,
    TextDelta,
    ToolCallDelta,
    ToolSpec,
)
from dshstream.errors import ConfigurationTypeError
from dshstream.sansio import check_contract
from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.azure import AzureOpenAIAdapter
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.custom import CustomAdapter
from dshstream._adapters.gemini import GeminiAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._adapters.structured_output import DEFAULT_TOOL_DESCRIPTION
from dshstream._adapters.vertex import VertexAnthropicAdapter, VertexGeminiAdapter
from dshstream._core.decode import StreamDecoder, decode
from dshstream._core.dialects import DIALECTS
from dshstream._core.request import check_options
from dshstream._core.types import StreamChunk, ToolCallBlock
from dshstream._core.wires.anthropic import AnthropicTranslator
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import fixture_bytes

KEY = "sk-structured-loopback-key-0123456789"  # CANARY: a fake key for the test
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
    "additionalProperties": False,
}
SCHEMA = JsonSchema("city_info", CITY, description="A city and its population")
LOOSE = JsonSchema("city_info", CITY, strict=False)
WEATHER = ToolSpec(
    "get_weather",
    "Weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}},
)
EVENTSTREAM = "application/vnd.amazon.eventstream"


def opts(provider: str, model: str, **fields: Any) -> GenerateOptions:
    return GenerateOptions(
        provider=provider, model=model, messages=(Message.user("Paris?"),), **fields
    )


def refused(call: Any, *needles: str) -> str:
    with pytest.raises(ConfigurationError) as info:
        call()
    message = str(info.value)
    assert message.startswith("GenerateOptions.response_format"), message
    for needle in needles:
        assert needle in message, message
    return message


# --------------------------------------------------------------------------- values


def test_json_schema_keeps_a_private_strict_json_copy() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    fmt = JsonSchema("a-b_1", schema)
    schema["properties"]["a"]["type"] = "integer"  # the caller's dict changes afterwards
    assert fmt.schema == {"type": "object", "properties": {"a": {"type": "string"}}}
    assert fmt.strict is True and fmt.description == ""
    assert fmt.root_is_object
    assert not JsonSchema("x", {"type": "array"}).root_is_object
    assert JsonMode() == JsonMode()


@pytest.mark.parametrize(
    ("build", "field", "wrong_type"),
    [
        (lambda: JsonSchema("", CITY), "JsonSchema.name", False),
        (lambda: JsonSchema("has space", CITY), "JsonSchema.name", False),
        (lambda: JsonSchema("x" * 65, CITY), "JsonSchema.name", False),
        (lambda: JsonSchema("caf\u00e9", CITY), "JsonSchema.name", False),
        (lambda: JsonSchema(7, CITY), "JsonSchema.name", True),  # type: ignore[arg-type]
        (lambda: JsonSchema("x", "{}"), "JsonSchema.schema", True),  # type: ignore[arg-type]
        (lambda: JsonSchema("x", {1: "a"}), "JsonSchema.schema", True),  # type: ignore[dict-item]
        (lambda: JsonSchema("x", {"minimum": float("nan")}), "JsonSchema.schema", False),
        (lambda: JsonSchema("x", {"enum": {1, 2}}), "JsonSchema.schema", False),
        (lambda: JsonSchema("x", CITY, strict="yes"), "JsonSchema.strict", True),  # type: ignore[arg-type]
        (lambda: JsonSchema("x", CITY, strict=1), "JsonSchema.strict", True),  # type: ignore[arg-type]
        (lambda: JsonSchema("x", CITY, description=None), "JsonSchema.description", True),  # type: ignore[arg-type]
        (
            lambda: opts("openai", "m", response_format={"type": "json_object"}),
            "GenerateOptions.response_format",
            True,
        ),
        (
            lambda: opts("openai", "m", response_format="json"),
            "GenerateOptions.response_format",
            True,
        ),
    ],
)
def test_bad_values_name_the_field(build: Any, field: str, wrong_type: bool) -> None:
    with pytest.raises(ConfigurationError) as info:
        build()
    assert str(info.value).startswith(field), str(info.value)
    assert isinstance(info.value, ConfigurationTypeError) is wrong_type
    assert isinstance(info.value, TypeError if wrong_type else ValueError)


def test_response_format_is_checked_again_on_replace_and_check_options() -> None:
    good = opts("openai", "m", response_format=SCHEMA)
    assert check_options(good) is good
    with pytest.raises(ConfigurationTypeError, match="JsonSchema or JsonMode"):
        dataclasses.replace(good, response_format={"type": "json_object"})  # type: ignore[arg-type]
    object.__setattr__(good, "response_format", 3)
    with pytest.raises(ConfigurationTypeError, match=r"GenerateOptions\.response_format"):
        check_options(good)


# --------------------------------------------------------------------------- chat completions

OPENAI_SHAPE = {
    "type": "json_schema",
    "json_schema": {
        "name": "city_info",
        "schema": CITY,
        "strict": True,
        "description": "A city and its population",
    },
}
RESPONSE_FORMAT_DIALECTS = sorted(
    name for name, d in DIALECTS.items() if d.schema_via == "response_format"
)


def chat_body(dialect: str, **fields: Any) -> dict[str, Any]:
    adapter = OpenAIChatAdapter(dialect=dialect, api_key=KEY, base_url="http://127.0.0.1:9/v1")
    return adapter.wire.build_body(opts(dialect, "m", **fields))


def test_the_dialects_that_spell_it_response_format() -> None:
    assert RESPONSE_FORMAT_DIALECTS == [
        "custom",
        "groq",
        "lmstudio",
        "mistral",
        "ollama",
        "openai",
        "openrouter",
        "perplexity",
        "together",
        "vllm",
        "xai",
    ]


@pytest.mark.parametrize("dialect", RESPONSE_FORMAT_DIALECTS)
def test_chat_dialects_send_openai_response_format(dialect: str) -> None:
    plain = chat_body(dialect)
    body = chat_body(dialect, response_format=SCHEMA)
    assert body == {**plain, "response_format": OPENAI_SHAPE}
    assert list(body)[-1] == "response_format"
    loose = chat_body(dialect, response_format=LOOSE)["response_format"]
    assert loose == {
        "type": "json_schema",
        "json_schema": {"name": "city_info", "schema": CITY, "strict": False},
    }
    if DIALECTS[dialect].json_mode:
        assert chat_body(dialect, response_format=JsonMode())["response_format"] == {
            "type": "json_object"
        }


def test_llamacpp_sends_the_schema_as_its_top_level_json_schema_field() -> None:
    plain = chat_body("llamacpp")
    assert chat_body("llamacpp", response_format=SCHEMA) == {**plain, "json_schema": CITY}
    assert chat_body("llamacpp", response_format=JsonMode()) == {
        **plain,
        "response_format": {"type": "json_object"},
    }


def test_deepseek_has_json_mode_only_and_lmstudio_schema_mode_only() -> None:
    assert chat_body("deepseek", response_format=JsonMode())["response_format"] == {
        "type": "json_object"
    }
    refused(
        lambda: chat_body("deepseek", response_format=SCHEMA),
        "JSON-schema output",
        "DeepSeek",
        "'deepseek'",
        "JsonMode()",
    )
    refused(lambda: chat_body("lmstudio", response_format=JsonMode()), "JSON mode", "LM Studio")


def test_none_adds_nothing_and_extra_body_still_wins() -> None:
    for dialect in DIALECTS:
        body = chat_body(dialect)
        assert "response_format" not in body and "json_schema" not in body
    body = chat_body(
        "openai", response_format=SCHEMA, extra_body={"response_format": {"type": "text"}}
    )
    assert body["response_format"] == {"type": "text"}


def test_a_body_is_a_fresh_copy_of_the_schema() -> None:
    body = chat_body("openai", response_format=SCHEMA)
    body["response_format"]["json_schema"]["schema"]["properties"].clear()
    assert chat_body("openai", response_format=SCHEMA)["response_format"] == OPENAI_SHAPE


def test_request_as_sent_over_loopback(server: ReplayServer) -> None:
    server.add("/v1/chat/completions", [Route(body=fixture_bytes("openai/text_include_usage.sse"))])
    service = LlmService(check_contract=True)
    service.register_adapter(
        ["openai"], OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1")
    )
    service.stream(opts("openai", "gpt-5-mini", response_format=SCHEMA, max_tokens=50)).result()
    assert server.requests[-1].body == {
        "model": "gpt-5-mini",
        "messages": [{"role": "user", "content": "Paris?"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_completion_tokens": 50,
        "response_format": OPENAI_SHAPE,
    }


def test_azure_refuses_a_schema_before_2024_08_01_preview() -> None:
    def body(version: str, fmt: JsonSchema | JsonMode) -> dict[str, Any]:
        adapter = AzureOpenAIAdapter(
            endpoint="https://r.openai.azure.com", api_key=KEY, api_version=version
        )
        return adapter.wire.build_body(opts("azure", "gpt-4o", response_format=fmt))

    refused(lambda: body("2024-06-01", SCHEMA), "2024-08-01-preview", "Azure OpenAI")
    assert body("2024-06-01", JsonMode())["response_format"] == {"type": "json_object"}
    assert body("2024-08-01-preview", SCHEMA)["response_format"] == OPENAI_SHAPE
    assert body("v1", SCHEMA)["response_format"] == OPENAI_SHAPE


def test_custom_adapter_refuses_prose_tools_with_a_format() -> None:
    adapter = CustomAdapter(base_url="http://127.0.0.1:9/v1")
    assert (
        adapter.wire.build_body(opts("custom", "m", response_format=SCHEMA))["response_format"]
        == OPENAI_SHAPE
    )
    refused(
        lambda: adapter.wire.build_body(opts("custom", "m", response_format=SCHEMA, tools=(WEATHER,))),
        "prose",
    )


# --------------------------------------------------------------------------- responses


def test_responses_text_format() -> None:
    adapter = OpenAIResponsesAdapter(api_key=KEY)
    plain = adapter.wire.build_body(opts("openai", "gpt-5"))
    body = adapter.wire.build_body(opts("openai", "gpt-5", response_format=SCHEMA))
    assert body == {
        **plain,
        "text": {
            "format": {
                "type": "json_schema",
                "name": "city_info",
                "schema": CITY,
                "strict": True,
                "description": "A city and its population",
            }
        },
    }
    json_mode = adapter.wire.build_body(opts("openai", "gpt-5", response_format=JsonMode()))
    assert json_mode["text"] == {"format": {"type": "json_object"}}


# --------------------------------------------------------------------------- anthropic

FORCED_ANTHROPIC = {
    "tools": [
        {
            "name": "city_info",
            "description": DEFAULT_TOOL_DESCRIPTION,
            "input_schema": CITY,
            "eager_input_streaming": True,
        }
    ],
    "tool_choice": {"type": "tool", "name": "city_info"},
}


def anthropic_body(
    model: str, adapter: AnthropicAdapter | None = None, **fields: Any
) -> dict[str, Any]:
    adapter = adapter or AnthropicAdapter(api_key=KEY)
    return adapter.wire.build_body(opts("anthropic", model, **fields))


@pytest.mark.parametrize(
    "model",
    ["claude-sonnet-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-7", "claude-sonnet-5"],
)
def test_anthropic_native_output_config_format(model: str) -> None:
    body = anthropic_body(model, response_format=SCHEMA)
    assert body == {
        **anthropic_body(model),
        "output_config": {"format": {"type": "json_schema", "schema": CITY}},
    }
    assert (
        anthropic_body(model, response_format=SCHEMA, tools=(WEATHER,))["tools"][0]["name"]
        == "get_weather"
    )


def test_anthropic_native_format_joins_the_adaptive_effort() -> None:
    body = anthropic_body("claude-opus-4-6", response_format=SCHEMA, reasoning_effort="low")
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {
        "effort": "low",
        "format": {"type": "json_schema", "schema": CITY},
    }


@pytest.mark.parametrize(
    "model", ["claude-opus-4-1-20250805", "claude-sonnet-4-20250514", "claude-3-5-haiku-latest"]
)
def test_anthropic_forced_tool_where_the_model_has_no_native_format(model: str) -> None:
    body = anthropic_body(model, response_format=LOOSE)
    assert body == {**anthropic_body(model), **FORCED_ANTHROPIC}
    assert (
        AnthropicAdapter(api_key=KEY).wire.forced_tool_name(
            opts("anthropic", model, response_format=LOOSE)
        )
        == "city_info"
    )


def test_anthropic_forced_tool_refusals_name_the_problem() -> None:
    old = "claude-opus-4-1"
    refused(
        lambda: anthropic_body(old, response_format=SCHEMA),
        "strict=True",
        "strict=False",
        "Anthropic",
        old,
    )
    refused(lambda: anthropic_body(old, response_format=LOOSE, tools=(WEATHER,)), "tools")
    refused(lambda: anthropic_body(old, response_format=LOOSE, reasoning_effort="low"), "thinking")
    refused(
        lambda: anthropic_body(
            old, response_format=JsonSchema("a", {"type": "array"}, strict=False)
        ),
        "root",
    )
    refused(lambda: anthropic_body(old, response_format=JsonMode()), "JSON mode")
    refused(lambda: anthropic_body("claude-sonnet-4-5", response_format=JsonMode()), "JSON mode")
    # thinking "off" is no thinking: the forced tool is fine
    assert (
        anthropic_body(old, response_format=LOOSE, reasoning_effort="off")["tool_choice"]["name"]
        == "city_info"
    )


def test_structured_output_setting_overrides_the_model_rule() -> None:
    tool = AnthropicAdapter(api_key=KEY, structured_output="tool")
    assert (
        anthropic_body("claude-sonnet-4-5", tool, response_format=LOOSE)["tool_choice"]
        == FORCED_ANTHROPIC["tool_choice"]
    )
    native = AnthropicAdapter(api_key=KEY, structured_output="native")
    assert "output_config" in anthropic_body("claude-opus-4-1", native, response_format=SCHEMA)
    with pytest.raises(ValueError):
        AnthropicAdapter(api_key=KEY, structured_output="sometimes")  # type: ignore[arg-type]


def test_vertex_claude_uses_the_forced_tool_unless_told_native() -> None:
    adapter = VertexAnthropicAdapter(project="p", location="us-east5", api_key=KEY)
    body = adapter.wire.build_body(opts("vertex", "claude-sonnet-4-5@20250929", response_format=LOOSE))
    assert body["tool_choice"] == FORCED_ANTHROPIC["tool_choice"] and "output_config" not in body
    native = VertexAnthropicAdapter(
        project="p", location="us-east5", api_key=KEY, structured_output="native"
    )
    body = native.wire.build_body(opts("vertex", "claude-sonnet-4-5@20250929", response_format=SCHEMA))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": CITY}}


# --------------------------------------------------------------------------- gemini


def test_gemini_mime_type_and_json_schema() -> None:
    adapter = GeminiAdapter(api_key=KEY)
    body = adapter.wire.build_body(
        opts("gemini", "gemini-2.5-flash", response_format=SCHEMA, temperature=0.1)
    )
    assert body["generationConfig"] == {
        "temperature": 0.1,
        "responseMimeType": "application/json",
        "responseJsonSchema": CITY,
    }
    json_mode = adapter.wire.build_body(opts("gemini", "gemini-2.5-flash", response_format=JsonMode()))
    assert json_mode["generationConfig"] == {"responseMimeType": "application/json"}
    assert "generationConfig" not in adapter.wire.build_body(opts("gemini", "gemini-2.5-flash"))


def test_gemini_before_3_refuses_tools_with_a_format() -> None:
    adapter = GeminiAdapter(api_key=KEY)
    refused(
        lambda: adapter.wire.build_body(
            opts("gemini", "gemini-2.5-pro", response_format=SCHEMA, tools=(WEATHER,))
        ),
        "Gemini 3",
        "'gemini-2.5-pro'",
    )
    body = adapter.wire.build_body(
        opts("gemini", "gemini-3-pro-preview", response_format=SCHEMA, tools=(WEATHER,))
    )
    assert body["generationConfig"]["responseJsonSchema"] == CITY and body["tools"]
    vertex = VertexGeminiAdapter(location="us-central1", api_key=KEY)  # express mode
    assert vertex.wire.build_body(opts("vertex", "gemini-2.5-flash", response_format=SCHEMA))[
        "generationConfig"
    ] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": CITY,
    }


# --------------------------------------------------------------------------- bedrock

CLAUDE3 = "anthropic.claude-3-sonnet-20240229-v1:0"
SONNET45 = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "us.amazon.nova-micro-v1:0"


def bedrock(**settings: Any) -> BedrockAdapter:
    settings.setdefault("api_key", KEY)
    return BedrockAdapter(region="us-east-1", **settings)


def test_bedrock_converse_native_output_config() -> None:
    body = bedrock().wire.build_body(opts("bedrock", SONNET45, response_format=SCHEMA))
    assert body == {
        "messages": [{"role": "user", "content": [{"text": "Paris?"}]}],
        "outputConfig": {
            "textFormat": {
                "type": "json_schema",
                "structure": {
                    "jsonSchema": {
                        "schema": json.dumps(CITY, separators=(",", ":")),
                        "name": "city_info",
                        "description": "A city and its population",
                    }
                },
            }
        },
    }
    assert (
        json.loads(body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]) == CITY
    )
    refused(
        lambda: bedrock().wire.build_body(opts("bedrock", SONNET45, response_format=JsonMode())),
        "JSON mode",
        "Converse",
    )


@pytest.mark.parametrize("model", [CLAUDE3, NOVA])
def test_bedrock_converse_forced_tool(model: str) -> None:
    body = bedrock().wire.build_body(opts("bedrock", model, response_format=LOOSE, max_tokens=300))
    assert body == {
        "messages": [{"role": "user", "content": [{"text": "Paris?"}]}],
        "inferenceConfig": {"maxTokens": 300},
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "city_info",
                        "description": DEFAULT_TOOL_DESCRIPTION,
                        "inputSchema": {"json": CITY},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": "city_info"}},
        },
    }
    refused(
        lambda: bedrock().wire.build_body(opts("bedrock", model, response_format=SCHEMA)),
        "strict=True",
        "Converse",
    )
    refused(
        lambda: bedrock().wire.build_body(
            opts("bedrock", model, response_format=LOOSE, tools=(WEATHER,))
        ),
        "tools",
    )


def test_bedrock_structured_output_setting_and_claude_thinking() -> None:
    native = bedrock(structured_output="native").wire.build_body(
        opts("bedrock", NOVA, response_format=SCHEMA)
    )
    assert "outputConfig" in native and "toolConfig" not in native
    tool = bedrock(structured_output="tool").wire.build_body(
        opts("bedrock", SONNET45, response_format=LOOSE)
    )
    assert "toolConfig" in tool and "outputConfig" not in tool
    refused(
        lambda: bedrock().wire.build_body(
            opts("bedrock", CLAUDE3, response_format=LOOSE, reasoning_effort="low")
        ),
        "thinking",
    )
    with pytest.raises(ConfigurationError, match="structured_output"):
        bedrock(structured_output="maybe")


def test_bedrock_invoke_claude_uses_the_anthropic_body() -> None:
    invoke = bedrock(api="invoke")
    body = invoke.wire.build_body(opts("bedrock", SONNET45, response_format=SCHEMA))
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": CITY}}
    old = invoke.wire.build_body(opts("bedrock", CLAUDE3, response_format=LOOSE))
    assert {k: old[k] for k in ("tools", "tool_choice")} == FORCED_ANTHROPIC
    assert invoke.wire.forced_tool_name(opts("bedrock", CLAUDE3, response_format=LOOSE)) == "city_info"
    assert invoke.wire.forced_tool_name(opts("bedrock", SONNET45, response_format=SCHEMA)) is None


# ------------------------------------------------------------------- forced tool, end to end

# Bedrock Converse, claude-3-sonnet, a real recording whose first block is the toolUse of
# ``get_cities_list`` (19 input fragments), stopReason tool_use.
FORCED_FIXTURE = "bedrock/claude3_sonnet_tool_use_first.eventstream"
CITIES = JsonSchema(
    "get_cities_list",
    {
        "type": "object",
        "properties": {"cities": {"type": "array", "items": {"type": "string"}}},
        "required": ["cities"],
    },
    strict=False,
)


def chunks_of(service: LlmService, options: GenerateOptions) -> tuple[list[StreamChunk], Any]:
    with service.stream(options) as stream:
        chunks = list(stream)
        return chunks, stream.result()


def test_bedrock_forced_tool_is_seen_as_json_text_and_replays_as_text(server: ReplayServer) -> None:
    raw = fixture_bytes(FORCED_FIXTURE)
    server.add(
        "/model/",
        [
            Route(body=raw, content_type=EVENTSTREAM, piece_size=11),
            Route(body=raw, content_type=EVENTSTREAM),
        ],
    )
    adapter = bedrock(base_url=server.url)
    service = LlmService(check_contract=True)
    service.register_adapter(["bedrock"], adapter)
    first = opts("bedrock", CLAUDE3, response_format=CITIES)
    chunks, result = chunks_of(service, first)

    # what the same bytes are as a tool call, decoded without the forced-tool setting
    plain = list(decode(raw, wire="bedrock-converse"))
    call = next(
        c.block for c in plain if type(c) is BlockEnd and isinstance(c.block, ToolCallBlock)
    )
    assert call.name == "get_cities_list"

    assert list(check_contract(chunks)) == chunks
    assert not any(type(c) is ToolCallDelta for c in chunks)
    assert [c for c in chunks if type(c) is BlockStart] == [BlockStart(0, "text")]
    streamed = "".join(c.text for c in chunks if type(c) is TextDelta)
    assert streamed == call.arguments and len([c for c in chunks if type(c) is TextDelta]) > 5
    assert result.blocks == (TextBlock(streamed),)
    assert json.loads(result.text) == {
        "cities": [
            "Tokyo",
            "Osaka",
            "Kyoto",
            "Hiroshima",
            "Nara",
            "Yokohama",
            "Sapporo",
            "Fukuoka",
            "Sendai",
            "Nagoya",
        ]
    }
    final = chunks[-1]
    assert isinstance(final, Finish)
    assert final.reason.kind == "stop" and final.reason.raw == "tool_use"
    assert final.replay_state == {"wire": "bedrock-converse", "content": [{"text": streamed}]}
    assert result.usage is not None and result.usage.output_tokens == 43

    # the request asked for the forced tool ...
    assert server.requests[0].body["toolConfig"]["toolChoice"] == {
        "tool": {"name": "get_cities_list"}
    }
    # ... and the next turn sends the answer back as the text the caller saw
    second = dataclasses.replace(
        first, messages=(*first.messages, result.message(), Message.user("More?"))
    )
    chunks_of(service, second)
    assert server.requests[1].body["messages"] == [
        {"role": "user", "content": [{"text": "Paris?"}]},
        {"role": "assistant", "content": [{"text": streamed}]},
        {"role": "user", "content": [{"text": "More?"}]},
    ]


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def forced_stream(
    fragments: list[str], stop_reason: str = "tool_use", name: str = "city_info"
) -> bytes:
    """An Anthropic Messages stream answering a forced tool choice: one tool_use block
    (no text before it: a forced tool choice prefills the turn), input streamed as
    ``input_json_delta`` fragments."""
    return sse(
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-1-20250805",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 412, "output_tokens": 1},
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_01", "name": name, "input": {}},
        },
        {"type": "ping"},
        *(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": f},
            }
            for f in fragments
        ),
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": 21},
        },
        {"type": "message_stop"},
    )


def test_anthropic_forced_tool_end_to_end_and_replay(server: ReplayServer) -> None:
    fragments = ["", '{"city": "Pa', 'ris", "popul', 'ation": 2102650}']
    server.add(
        "/v1/messages",
        [Route(body=forced_stream(fragments)), Route(body=fixture_bytes("anthropic/text.sse"))],
    )
    service = LlmService(check_contract=True)
    service.register_adapter(["anthropic"], AnthropicAdapter(api_key=KEY, base_url=server.url))
    first = opts("anthropic", "claude-opus-4-1", response_format=LOOSE)
    chunks, result = chunks_of(service, first)
    assert server.requests[0].body["tool_choice"] == {"type": "tool", "name": "city_info"}
    assert [type(c).__name__ for c in chunks] == [
        "BlockStart",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "BlockEnd",
        "UsageChunk",
        "Finish",
    ]
    assert result.text == '{"city": "Paris", "population": 2102650}'
    assert json.loads(result.text) == {"city": "Paris", "population": 2102650}
    assert result.finish.kind == "stop" and result.finish.raw == "tool_use"
    assert result.tool_calls == ()
    assert result.message().replay_state == {
        "wire": "anthropic",
        "content": [{"type": "text", "text": result.text}],
    }

    second = dataclasses.replace(
        first, messages=(*first.messages, result.message(), Message.user("And Rome?"))
    )
    chunks_of(service, second)
    assert server.requests[1].body["messages"] == [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": [{"type": "text", "text": result.text}]},
        {"role": "user", "content": "And Rome?"},
    ]


def unwrapped(body: bytes, name: str) -> list[StreamChunk]:
    translator = AnthropicTranslator(provider="anthropic", max_tokens=16)
    translator.unwrap_tool_call(name)
    decoder = StreamDecoder(translator)
    out = decoder.feed(body)
    out += decoder.close()
    return list(check_contract(out))


def test_a_forced_call_cut_at_max_tokens_keeps_the_partial_text() -> None:
    chunks = unwrapped(
        forced_stream(['{"city": "Pa', 'ris", "popu'], stop_reason="max_tokens"), "city_info"
    )
    final = chunks[-1]
    assert isinstance(final, Finish) and final.reason.kind == "max-tokens"
    assert "".join(c.text for c in chunks if type(c) is TextDelta) == '{"city": "Paris", "popu'
    assert final.replay_state == {
        "wire": "anthropic",
        "content": [{"type": "text", "text": '{"city": "Paris", "popu'}],
    }


def test_a_forced_call_with_empty_input_is_an_empty_object() -> None:
    # real recording: one tool_use (pelican_name_generator) whose input streams as ""
    chunks = unwrapped(
        fixture_bytes("anthropic/tool_use_empty_input.sse"), "pelican_name_generator"
    )
    assert [c.block for c in chunks if type(c) is BlockEnd] == [TextBlock("{}")]
    final = chunks[-1]
    assert (
        isinstance(final, Finish) and final.reason.kind == "stop" and final.reason.failure is None
    )


def test_a_second_call_of_the_forced_tool_stays_a_tool_call() -> None:
    # a model may call the forced tool twice anyway: the answer is the first call, as text
    # that stays one JSON document; the second is delivered as the tool call it is
    first = forced_stream(['{"city": "Paris"}'])
    second = first.replace(b'"index": 0', b'"index": 1').replace(b"toolu_01", b"toolu_02")
    start, _, rest = first.partition(b"event: content_block_stop")
    tail = b"event: content_block_stop" + rest
    blocks_only = second.split(b"event: content_block_start", 1)[1].split(b"event: message_delta", 1)[0]
    body = start + tail.split(b"event: message_delta", 1)[0] + b"event: content_block_start" + blocks_only
    body += b"event: message_delta" + tail.split(b"event: message_delta", 1)[1]
    chunks = unwrapped(body, "city_info")
    ends = [c.block for c in chunks if type(c) is BlockEnd]
    assert ends[0] == TextBlock('{"city": "Paris"}')
    assert isinstance(ends[1], ToolCallBlock) and ends[1].name == "city_info" and ends[1].id == "toolu_02"
    final = chunks[-1]
    assert isinstance(final, Finish) and final.reason.kind == "tool-calls"


def test_other_tool_calls_are_left_alone() -> None:
    chunks = unwrapped(forced_stream(['{"a": 1}'], name="another_tool"), "city_info")
    assert [type(c.block) for c in chunks if type(c) is BlockEnd] == [ToolCallBlock]
    final = chunks[-1]
    assert isinstance(final, Finish) and final.reason.kind == "tool-calls"


def test_a_refusal_through_the_service_is_an_error_finish_and_sends_nothing(
    server: ReplayServer,
) -> None:
    server.add("/v1/messages", [Route(body=fixture_bytes("anthropic/text.sse"))])
    service = LlmService(check_contract=True)
    service.register_adapter(
        ["anthropic"], AnthropicAdapter(api_key=KEY, base_url=server.url, max_retries=3)
    )
    result = service.stream(
        opts("anthropic", "claude-sonnet-4-5", response_format=JsonMode())
    ).result()
    assert result.finish.kind == "error"
    failure = result.failure
    assert failure is not None and failure.code == "INVALID_OPTIONS" and not failure.retryable
    assert failure.message.startswith(
        "GenerateOptions.response_format (JsonMode): JSON mode is not available"
    )
    assert server.requests == []
    with pytest.raises(ConfigurationError):
        result.raise_for_failure()
