"""Prompt caching over loopback HTTP (issue 33): one portable way to say "cache up to
here" — a CachePoint on a message, the system prompt or a tool, and PromptCache for the
request-wide settings — sent as each provider's own mechanism, or refused with a
ConfigurationError naming the field and the provider before anything is sent. The cache
counts of recorded streams come back as usage and its cached share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dshstream import (
    AnthropicAdapter,
    CachePoint,
    ConfigurationError,
    GeminiAdapter,
    GenerateOptions,
    Message,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
    ToolSpec,
)
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.custom import CustomAdapter
from dshstream._adapters.vertex import VertexAnthropicAdapter
from dshstream._core.assembler import assemble
from dshstream._replay_server import ReplayServer, Route
from dshstream.adapters import PromptCache
from helpers import fake_key, fixture_bytes

KEY = fake_key("test-", 32)
TOOLS = (
    ToolSpec("search", "Searches", {"type": "object", "properties": {}}),
    ToolSpec("lookup", "Looks up", {"type": "object", "properties": {}}, cache=CachePoint("1h")),
)
EVENTSTREAM = "application/vnd.amazon.eventstream"


def options(provider: str = "p", model: str = "m-1", **fields: Any) -> GenerateOptions:
    """A long stable prefix (system, tools, a document turn) cached, then the question."""
    messages = fields.pop(
        "messages",
        (
            Message.system("You answer from the handbook.", cache=CachePoint("1h")),
            Message.user("The handbook: ...", cache=CachePoint()),
            Message.assistant("Read it."),
            Message.user("What does chapter 2 say?"),
        ),
    )
    return GenerateOptions(provider=provider, model=model, messages=messages, **fields)


# --------------------------------------------------------------------------- the values


def test_values_are_checked_where_they_are_built() -> None:
    with pytest.raises(ConfigurationError, match=r"CachePoint\.ttl"):
        CachePoint("10m")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"Message\.cache must be a CachePoint"):
        Message("user", "x", cache="5m")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"ToolSpec\.cache must be a CachePoint"):
        ToolSpec("t", cache=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"PromptCache\.retention"):
        PromptCache(retention="7d")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="automatic=True"):
        PromptCache(ttl="1h")
    with pytest.raises(ConfigurationError, match=r"PromptCache\.key must not be empty"):
        PromptCache(key="")
    with pytest.raises(ConfigurationError, match=r"GenerateOptions\.prompt_cache must be a PromptCache"):
        options(prompt_cache={"automatic": True})
    assert Message.user("x", cache=CachePoint()).cache == CachePoint()
    assert Message.system("s", cache=CachePoint("1h")).cache == CachePoint("1h")


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_breakpoints_on_system_tools_and_messages(server: ReplayServer) -> None:
    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/cache_creation_and_read_code_execution.sse")))
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url)
    result = assemble(adapter.stream(options(tools=TOOLS, prompt_cache=PromptCache(automatic=True, ttl="5m"))))
    (sent,) = server.requests
    body = sent.body
    assert body["system"] == [
        {"type": "text", "text": "You answer from the handbook.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    first = body["messages"][0]
    assert first["content"] == [{"type": "text", "text": "The handbook: ...", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"][2]["content"] == "What does chapter 2 say?"  # unmarked turns unchanged
    assert body["cache_control"] == {"type": "ephemeral", "ttl": "5m"}  # the automatic mode, top level
    # the recorded stream's cache counts: written 3337, read 6289
    usage = result.usage
    assert usage is not None and usage.cache_read_tokens == 6289 and usage.cache_write_tokens == 3337
    share = usage.cached_input_share
    assert share is not None and share == pytest.approx(6289 / usage.total_input_tokens)


def test_anthropic_replayed_assistant_turn_is_marked_on_a_copy(server: ReplayServer) -> None:
    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/text.sse")))
    replay = {"wire": "anthropic", "content": [{"type": "text", "text": "Earlier."}]}
    turn = Message("assistant", "Earlier.", replay_state=replay, cache=CachePoint())
    messages = (Message.user("Hi"), turn, Message.user("And now?"))
    list(AnthropicAdapter(api_key=KEY, base_url=server.url).stream(options(messages=messages)))
    assert server.requests[0].body["messages"][1]["content"] == [
        {"type": "text", "text": "Earlier.", "cache_control": {"type": "ephemeral"}}
    ]
    assert replay["content"] == [{"type": "text", "text": "Earlier."}]  # the caller's state untouched


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        (
            {"messages": tuple(Message.user(f"turn {i}", cache=CachePoint()) for i in range(5))},
            r"at most 4 cache points per request, 5 were set \(GenerateOptions\.messages\[4\]\.cache\)",
        ),
        (
            {"messages": (Message.system("s", cache=CachePoint()), Message.user("u", cache=CachePoint("1h")))},
            r"1h cache points before 5m ones .*GenerateOptions\.messages\[1\]\.cache",
        ),
        ({"prompt_cache": PromptCache(key="tenant-7")}, r"prompt cache key .*GenerateOptions\.prompt_cache\.key"),
        (
            {"prompt_cache": PromptCache(cached_content="cachedContents/abc")},
            r"cached content .*GenerateOptions\.prompt_cache\.cached_content",
        ),
    ],
)
def test_anthropic_refuses_before_sending(server: ReplayServer, fields: dict[str, Any], match: str) -> None:
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url)
    with pytest.raises(ConfigurationError, match=match) as info:
        list(adapter.stream(options(**fields)))
    assert "Anthropic" in str(info.value)
    assert server.requests == []


def test_compatible_messages_servers_refuse_caching(server: ReplayServer) -> None:
    adapter = AnthropicAdapter(dialect="ollama", base_url=server.url)
    with pytest.raises(ConfigurationError, match=r"Ollama takes no cache points \(GenerateOptions\.messages\[0\]"):
        list(adapter.stream(options()))
    assert server.requests == []


def test_claude_on_vertex_takes_points_but_not_the_automatic_mode(server: ReplayServer) -> None:
    server.add("/v1/projects/", Route(body=fixture_bytes("anthropic/text.sse")))
    adapter = VertexAnthropicAdapter(project="proj", location="us-east5", api_key=lambda: "tok", base_url=server.url)
    list(adapter.stream(options()))
    assert server.requests[0].body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ConfigurationError, match=r"no automatic prompt caching .*prompt_cache\.automatic"):
        list(adapter.stream(options(prompt_cache=PromptCache(automatic=True))))
    assert len(server.requests) == 1


# --------------------------------------------------------------------------- Bedrock


def test_bedrock_converse_cache_points(server: ReplayServer) -> None:
    data = fixture_bytes("bedrock/claude37_cache_write.eventstream")
    server.add("/model/", Route(body=data, content_type=EVENTSTREAM))
    adapter = BedrockAdapter(region="us-east-1", base_url=server.url, api_key=fake_key("ABSK", 40))
    result = assemble(adapter.stream(options(model="us.anthropic.claude-3-7-sonnet-20250219-v1:0", tools=TOOLS)))
    body = server.requests[0].body
    assert body["system"] == [{"text": "You answer from the handbook."}, {"cachePoint": {"type": "default", "ttl": "1h"}}]
    assert body["toolConfig"]["tools"][1:] == [
        {"toolSpec": body["toolConfig"]["tools"][1]["toolSpec"]},
        {"cachePoint": {"type": "default", "ttl": "1h"}},
    ]
    assert body["messages"][0]["content"] == [{"text": "The handbook: ..."}, {"cachePoint": {"type": "default"}}]
    assert body["messages"][2]["content"] == [{"text": "What does chapter 2 say?"}]
    usage = result.usage
    assert usage is not None and usage.cache_write_tokens == 1028 and usage.cached_input_share == 0.0


def test_bedrock_invoke_is_claudes_cache_control(server: ReplayServer) -> None:
    adapter = BedrockAdapter(region="us-east-1", base_url=server.url, api="invoke", api_key=fake_key("ABSK", 40))
    body = adapter.wire.build_body(options(model="anthropic.claude-sonnet-4-5"))
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    with pytest.raises(ConfigurationError, match=r"automatic prompt caching"):
        adapter.wire.build_body(options(model="anthropic.claude-sonnet-4-5", prompt_cache=PromptCache(automatic=True)))


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"prompt_cache": PromptCache(automatic=True)}, r"Converse\) has no automatic prompt caching"),
        ({"prompt_cache": PromptCache(retention="24h")}, r"prompt_cache\.retention"),
        (
            {"messages": tuple(Message.user(f"t{i}", cache=CachePoint()) for i in range(4)), "tools": TOOLS},
            r"at most 4 cache points",
        ),
    ],
)
def test_bedrock_refuses_before_sending(server: ReplayServer, fields: dict[str, Any], match: str) -> None:
    adapter = BedrockAdapter(region="us-east-1", base_url=server.url, api_key=fake_key("ABSK", 40))
    with pytest.raises(ConfigurationError, match=match):
        list(adapter.stream(options(**fields)))
    assert server.requests == []


# --------------------------------------------------------------------------- OpenAI


CHAT_BODY = fixture_bytes("openai/text_include_usage.sse")


def test_openai_chat_breakpoints_key_and_retention(server: ReplayServer) -> None:
    server.add("/v1/", CHAT_BODY)
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=f"{server.url}/v1")
    settings = PromptCache(automatic=True, key="tenant-7", retention="24h")
    messages = (
        Message.system("You answer from the handbook.", cache=CachePoint()),
        Message.user("The handbook: ...", cache=CachePoint("5m")),  # within OpenAI's 30 minutes
        Message.assistant("Read it."),
        Message.user("What does chapter 2 say?"),
    )
    list(adapter.stream(options(messages=messages, prompt_cache=settings)))
    body = server.requests[0].body
    assert body["prompt_cache_key"] == "tenant-7" and body["prompt_cache_retention"] == "24h"
    breakpoint_ = {"mode": "explicit"}
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "You answer from the handbook.", "prompt_cache_breakpoint": breakpoint_}
    ]
    assert body["messages"][1]["content"][-1]["prompt_cache_breakpoint"] == breakpoint_
    assert body["messages"][3]["content"] == "What does chapter 2 say?"


def test_openai_responses_breakpoints(server: ReplayServer) -> None:
    server.add("/v1/", fixture_bytes("openai-responses/text.sse"))
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1")
    messages = (Message.system("Rules.", cache=CachePoint()), Message.user("Q"))
    list(adapter.stream(options(messages=messages, prompt_cache=PromptCache(key="k1"))))
    body = server.requests[0].body
    assert "instructions" not in body  # a plain string can't carry the breakpoint
    assert body["input"][0] == {
        "role": "system",
        "content": [{"type": "input_text", "text": "Rules.", "prompt_cache_breakpoint": {"mode": "explicit"}}],
    }
    assert body["prompt_cache_key"] == "k1"


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"tools": TOOLS, "messages": (Message.user("q"),)}, r"no cache point on a tool \(GenerateOptions\.tools\[1\]"),
        ({"messages": (Message.user("q", cache=CachePoint("1h")),)}, r"cannot keep a prompt cache for 1h"),
        ({"prompt_cache": PromptCache(cached_content="cachedContents/x")}, r"prompt_cache\.cached_content"),
    ],
)
@pytest.mark.parametrize("make", [OpenAIChatAdapter, OpenAIResponsesAdapter])
def test_openai_refuses_before_sending(
    server: ReplayServer, make: Callable[..., Any], fields: dict[str, Any], match: str
) -> None:
    adapter = make(api_key=KEY, base_url=f"{server.url}/v1")
    with pytest.raises(ConfigurationError, match=match):
        list(adapter.stream(options(**fields)))
    assert server.requests == []


def test_responses_refuses_a_point_on_an_assistant_turn(server: ReplayServer) -> None:
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1")
    messages = (Message.user("q"), Message("assistant", "a", cache=CachePoint()), Message.user("r"))
    with pytest.raises(ConfigurationError, match=r"messages\[1\]\.cache is on a assistant turn"):
        list(adapter.stream(options(messages=messages)))


def test_openrouter_takes_anthropic_style_cache_control(server: ReplayServer) -> None:
    server.add("/v1/", fixture_bytes("openrouter/cache_usage_bedrock_claude.sse"))
    adapter = OpenAIChatAdapter(dialect="openrouter", api_key=KEY, base_url=f"{server.url}/v1")
    list(adapter.stream(options(model="anthropic/claude-4.6-sonnet", prompt_cache=PromptCache(automatic=True))))
    body = server.requests[0].body
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "You answer from the handbook.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]
    assert body["messages"][1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["cache_control"] == {"type": "ephemeral"}  # its automatic mode
    assert "prompt_cache_key" not in body
    with pytest.raises(ConfigurationError, match=r"prompt_cache\.key"):
        list(adapter.stream(options(prompt_cache=PromptCache(key="k"))))


def test_compatible_servers_refuse_caching(server: ReplayServer) -> None:
    adapter = OpenAIChatAdapter(dialect="llamacpp", base_url=f"{server.url}/v1")
    with pytest.raises(ConfigurationError, match=r"takes no cache points \(GenerateOptions\.messages\[0\]\.cache\)"):
        list(adapter.stream(options()))
    with pytest.raises(ConfigurationError, match=r"prompt_cache\.key"):
        list(CustomAdapter(base_url=f"{server.url}/v1").stream(options(messages=(Message.user("q"),),
                                                                      prompt_cache=PromptCache(key="k"))))
    assert server.requests == []
    # LiteLLM: refused by the check a fallback chain and its stream run before sending
    from dshstream.adapters import LiteLLMAdapter

    with pytest.raises(ConfigurationError, match=r"LiteLLM \(LiteLLMAdapter\) takes no cache points"):
        LiteLLMAdapter().check_media(options(messages=(Message.user("q", cache=CachePoint()),)))


# --------------------------------------------------------------------------- Gemini


def test_gemini_cached_content(server: ReplayServer) -> None:
    server.add("/v1beta/models/", Route(body=fixture_bytes("gemini/text.sse")))
    adapter = GeminiAdapter(api_key=KEY, base_url=server.url)
    settings = PromptCache(automatic=True, cached_content="cachedContents/handbook-1")
    list(adapter.stream(options(messages=(Message.user("What does chapter 2 say?"),), prompt_cache=settings)))
    body = server.requests[0].body
    assert body["cachedContent"] == "cachedContents/handbook-1"
    assert "systemInstruction" not in body and "tools" not in body


def test_gemini_interactions_refuses_caching(server: ReplayServer) -> None:
    from dshstream.adapters import GeminiInteractionsAdapter

    adapter = GeminiInteractionsAdapter(api_key=KEY, base_url=server.url)
    with pytest.raises(ConfigurationError, match=r"takes no cache points \(GenerateOptions\.messages\[0\]\.cache\)"):
        list(adapter.stream(options()))
    assert server.requests == []


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({}, r"takes no cache points \(GenerateOptions\.messages\[0\]\.cache\); create a cache"),
        (
            {"messages": (Message.system("s"), Message.user("q")), "prompt_cache": PromptCache(cached_content="c/1")},
            r"refuses a system prompt or tools beside cached content",
        ),
        ({"messages": (Message.user("q"),), "prompt_cache": PromptCache(retention="in_memory")}, r"retention"),
    ],
)
def test_gemini_refuses_before_sending(server: ReplayServer, fields: dict[str, Any], match: str) -> None:
    adapter = GeminiAdapter(api_key=KEY, base_url=server.url)
    with pytest.raises(ConfigurationError, match=match) as info:
        list(adapter.stream(options(**fields)))
    assert "Gemini" in str(info.value)
    assert server.requests == []
