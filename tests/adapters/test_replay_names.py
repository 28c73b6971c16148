"""Tool names in history (wire rule 10): a call the model made under a name the strict
APIs refuse goes back renamed, on every wire that sends tool calls back to one.

The model-made names are the kinds seen in the field: gpt-oss's ``repo_browser.open_file``
(an OpenAI 400, "string does not match pattern"), a name carrying a harmony channel token,
and ``$READFILE`` (Bedrock's ValidationException, vercel/ai#10202). A name the request
declares is the caller's and is never changed; calls and their results pair by id.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.litellm import LiteLLMAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._adapters.wire import replay_name
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._core.types import TextBlock, ToolCallBlock

DECLARED = (ToolSpec("weather", "The weather", {"type": "object"}), ToolSpec("odd.name", "Declared as is", {"type": "object"}))
CALLS = (
    ToolCallBlock("call_1", "repo_browser.open_file", '{"path": "a.py"}'),
    ToolCallBlock("call_2", "weather<|channel|>commentary", '{"city": "Rome"}'),
    ToolCallBlock("call_3", "$READFILE", "{}"),
    ToolCallBlock("call_4", "odd.name", "{}"),
    ToolCallBlock("call_5", "weather", "{}"),
)
EXPECTED = ["repo_browser_open_file", "weather__channel__commentary", "_READFILE", "odd.name", "weather"]


def _history() -> tuple[Message, ...]:
    return (
        Message.user("go"),
        Message.assistant([TextBlock("Looking."), *CALLS]),
        *(Message.tool_result(call.id, "Not run: there is no tool by that name.") for call in CALLS[:3]),
        Message.tool_result("call_4", "ok"),
        Message.tool_result("call_5", "18C"),
        Message.user("and now?"),
    )


def _options(provider: str, model: str, history: tuple[Message, ...] | None = None) -> GenerateOptions:
    return GenerateOptions(provider=provider, model=model, messages=history or _history(), tools=DECLARED)


def _names_chat(body: dict[str, Any]) -> list[str]:
    return [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or ()]


def _names_responses(body: dict[str, Any]) -> list[str]:
    return [item["name"] for item in body["input"] if item.get("type") == "function_call"]


def _names_messages(body: dict[str, Any]) -> list[str]:
    return [b["name"] for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]
            if b.get("type") == "tool_use"]


def _names_converse(body: dict[str, Any]) -> list[str]:
    return [b["toolUse"]["name"] for m in body["messages"] for b in m["content"] if "toolUse" in b]


@pytest.mark.parametrize(
    ("make", "model", "names"),
    [
        (lambda: OpenAIChatAdapter(api_key="sk-test"), "gpt-oss-120b", _names_chat),
        (lambda: OpenAIResponsesAdapter(api_key="sk-test", key_env=None), "gpt-oss-120b", _names_responses),
        (lambda: AnthropicAdapter(api_key="sk-ant-test"), "claude-sonnet-4-5", _names_messages),
        (lambda: BedrockAdapter(region="us-east-1", credentials=("AKID", "secret")), "openai.gpt-oss-120b-1:0", _names_converse),
        (lambda: BedrockAdapter(region="us-east-1", credentials=("AKID", "secret"), api="invoke"),
         "anthropic.claude-sonnet-4-5-20250929-v1:0", _names_messages),
    ],
    ids=["chat", "responses", "anthropic", "bedrock-converse", "bedrock-invoke-claude"],
)
def test_a_made_up_name_goes_back_renamed_and_a_declared_one_as_is(make: Any, model: str, names: Any) -> None:
    body = make().wire.build_body(_options("p", model))
    if "input" in body and "invokeModel" in json.dumps(body):
        body = json.loads(body["input"]["invokeModel"]["body"])
    assert names(body) == EXPECTED


def test_litellm_sends_the_renamed_history_too() -> None:
    kwargs = LiteLLMAdapter(model_prefix="bedrock/").call_kwargs(_options("litellm", "gpt-oss"))
    assert [c["function"]["name"] for m in kwargs["messages"] for c in m.get("tool_calls") or ()] == EXPECTED


def test_the_callers_replay_state_is_left_as_it_was() -> None:
    """An Anthropic turn replays its blocks from the replay state: the renamed block is a
    copy, the caller's history keeps what the model said."""
    state = {"wire": "anthropic", "content": [
        {"type": "tool_use", "id": "call_1", "name": "repo_browser.open_file", "input": {"path": "a.py"}}]}
    turn = Message("assistant", (CALLS[0],), replay_state=state)
    before = copy.deepcopy(state)
    history = (Message.user("go"), turn, Message.tool_result("call_1", "no such tool"), Message.user("next"))
    body = AnthropicAdapter(api_key="sk-ant-test").wire.build_body(_options("anthropic", "claude-sonnet-4-5", history))
    assert _names_messages(body) == ["repo_browser_open_file"]
    assert state == before


@pytest.mark.parametrize(
    ("name", "sent"),
    [("a" * 64, "a" * 64), ("a" * 65, "a" * 64), ("<|>", "unknown_tool"), ("...", "unknown_tool"), ("get-time_2", "get-time_2"),
     ("名前", "unknown_tool"), ("x名", "x_")],
)
def test_replay_name(name: str, sent: str) -> None:
    assert replay_name(name, ()) == sent
    assert replay_name(name, (name,)) == name
