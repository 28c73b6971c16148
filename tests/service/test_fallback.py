"""Fallback chains (issue 30): ``LlmService.register_chain`` over ``Target`` s, on loopback.

Imitations of an OpenAI-compatible server, Anthropic and Gemini on one ``ReplayServer``,
answering with real recorded streams (tests/fixtures/real) or with injected failures: 529
and 503 overloads, 429 rate limits, a stall past a short ``idle_timeout``, empty answers,
failures after the first content. A chain across the three carries a tool-call history
(an assistant tool call with Anthropic's replay state, its tool result) and the request
bodies the servers received are checked: each target gets what its API takes, no other
provider's replay fields, tool ids consistent. The trail — which target served, every
target tried with its failure — is checked in the finish metadata, the observer's
records and OpenTelemetry spans. The history portability rules are also tested directly
(``dshstream._core.portable``), and ``examples/fallback_chain.py`` runs as documented.

``from helpers import ...`` works from this subdirectory: pytest puts ``tests/`` (the
directory of the root ``conftest.py``) on ``sys.path``.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_key, fixture_bytes

from dshstream import (
    AnthropicAdapter,
    AssembledResponse,
    AudioPart,
    ConfigurationError,
    GeminiAdapter,
    GenerateOptions,
    JsonMode,
    LlmService,
    Message,
    OpenAIChatAdapter,
    ReasoningBlock,
    StreamChunk,
    Target,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolResultBlock,
    ToolSpec,
    run_tools,
)
from dshstream.errors import recovery_tips
from dshstream.observe import AttemptRecord, ObserverRecord, StreamFinished, TargetOutcome
from dshstream.sansio import chunk_from_dict, chunk_to_dict
from dshstream.testing import ReplayServer, Route
from dshstream._core.errors import make_failure
from dshstream._core.portable import PORTABLE_ID, portable_history
from dshstream._core.types import Finish, FinishReason, ResponseMetadata
from dshstream._service import Next

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- the three imitations

ANTHROPIC_TOOL_CALL = fixture_bytes("anthropic/thinking_then_tool_use.sse")  # thinking (signed) + tool_use
ANTHROPIC_TEXT = fixture_bytes("anthropic/text.sse")  # "Hello"
GEMINI_TEXT = fixture_bytes("gemini/text.sse")  # "The capital of France is Paris.\n"
GEMINI_CALL = fixture_bytes("gemini/function_call.sse")  # get_capital, id call-0
OPENAI_TEXT = fixture_bytes("openai/text_include_usage.sse")
OPENAI_TEXT_START = "I'm unable to provide real-time weather updates."

ANTHROPIC_OVERLOADED = Route(
    status=529, content_type="application/json",
    body=b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
)
GEMINI_UNAVAILABLE = Route(
    status=503, content_type="application/json",
    body=b'{"error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}}',
)
OPENAI_RATE_LIMITED = Route(
    status=429, content_type="application/json", headers={"retry-after": "20"},
    body=b'{"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}',
)
OPENAI_EMPTY = (
    b'data: {"id":"e","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
    b'"finish_reason":null}]}\n\n'
    b'data: {"id":"e","model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)
OPENAI_FIRST_WORDS = b'data: {"id":"c","model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"Once upon"}}]}\n\n'
ANTHROPIC_OVERLOADED_MID_STREAM = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Partial"}}\n\n'
    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
)
ANTHROPIC_EMPTY = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_0","type":"message","role":"assistant",'
    b'"model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":37,"output_tokens":1}}}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
#: headers, then silence (a stall before the first byte of the body)
STALL = Route(body=b"", script=[4.0])

TOOL = ToolSpec("fixed_version", "The fixed version", {"type": "object", "properties": {}})


def wav() -> bytes:
    """A short silent 16-bit mono WAV."""
    data = b"\x00\x00" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data


class Clouds:
    """One loopback server standing in for OpenAI, Anthropic and Gemini, and a service with
    an adapter for each (``openai``, ``anthropic``, ``gemini``) plus what the test adds."""

    def __init__(self, server: ReplayServer, observer: Any = None) -> None:
        self.server = server
        self.records: list[ObserverRecord] = []
        self.service = LlmService(observer=observer if observer is not None else self.records.append)
        self.keys = {"openai": fake_key("sk-proj-", 48), "anthropic": fake_key("sk-ant-api03-", 60),
                     "gemini": fake_key("AIzaSy", 33)}
        self.service.register_adapter(["openai"], OpenAIChatAdapter(api_key=self.keys["openai"], base_url=f"{server.url}/openai/v1"))
        self.service.register_adapter(["anthropic"], AnthropicAdapter(api_key=self.keys["anthropic"], base_url=f"{server.url}/anthropic"))
        self.service.register_adapter(["gemini"], GeminiAdapter(api_key=self.keys["gemini"], base_url=f"{server.url}/gemini"))

    def answer(self, provider: str, *routes: Route | bytes) -> None:
        self.server.add(f"/{provider}/", [Route(body=r) if isinstance(r, bytes) else r for r in routes])

    def bodies(self, provider: str) -> list[Any]:
        return [r.body for r in self.server.requests if r.path.startswith(f"/{provider}/")]

    def attempts(self) -> list[AttemptRecord]:
        return [r for r in self.records if isinstance(r, AttemptRecord)]

    def finished(self) -> StreamFinished:
        (record,) = [r for r in self.records if isinstance(r, StreamFinished)]
        return record


@pytest.fixture
def clouds(server: ReplayServer) -> Clouds:
    return Clouds(server)


SMART = [Target("openai", "gpt-4o-mini"), Target("anthropic", "claude-sonnet-4-5"), Target("gemini", "gemini-2.5-flash")]


def ask(*messages: Message, provider: str = "smart", **settings: Any) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="default", messages=messages or (Message.user("Hi"),), **settings)


def trail(result: AssembledResponse) -> tuple[TargetOutcome, ...]:
    """The chain's trail of a result (its finish's ``metadata.fallback``)."""
    assert result.metadata is not None
    return result.metadata.fallback


def outcomes(trail: tuple[TargetOutcome, ...]) -> list[tuple[int, str, str, str | None]]:
    return [(e.position, e.name, e.outcome, e.failure.code if e.failure else None) for e in trail]


# --------------------------------------------------------------------------- moving on before content


def test_a_chain_moves_on_from_a_rate_limit_and_an_overload_to_the_target_that_serves(clouds: Clouds) -> None:
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("anthropic", ANTHROPIC_OVERLOADED)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("smart", SMART)
    started = time.monotonic()
    result = clouds.service.stream(ask()).result()
    assert time.monotonic() - started < 5  # no target waited out its Retry-After: it moved on
    assert result.ok and result.text == "The capital of France is Paris.\n"
    assert outcomes(trail(result)) == [
        (1, "openai/gpt-4o-mini", "failed", "RATE_LIMIT"),
        (2, "anthropic/claude-sonnet-4-5", "failed", "OVERLOADED"),
        (3, "gemini/gemini-2.5-flash", "served", None),
    ]
    assert result.metadata is not None and result.metadata["fallback"] == trail(result)
    served = result.metadata.served_by
    assert served is not None and served.position == 3
    # one request each: a target that is not the last makes no retry of its own (max_retries 0)
    assert [len(clouds.bodies(p)) for p in ("openai", "anthropic", "gemini")] == [1, 1, 1]
    assert clouds.bodies("openai")[0]["model"] == "gpt-4o-mini"
    assert clouds.bodies("anthropic")[0]["model"] == "claude-sonnet-4-5"
    assert "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent" in clouds.server.requests[-1].path
    # the next turn names the target that served, so its replay state goes back to Gemini
    turn = result.message()
    assert (turn.provider, turn.model) == ("gemini", "gemini-2.5-flash")
    assert result.provider == "smart"  # what the caller asked for


def test_a_refused_connection_a_503_a_stall_and_empty_answers_each_move_on(clouds: Clouds) -> None:
    clouds.answer("gemini", GEMINI_UNAVAILABLE)
    clouds.answer("openai", STALL)
    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.server.add("/openai-empty/", [Route(body=OPENAI_EMPTY)])
    clouds.service.register_adapter(["openai-empty"], OpenAIChatAdapter(api_key="k", base_url=f"{clouds.server.url}/openai-empty/v1"))
    clouds.server.add("/anthropic-empty/", [Route(body=ANTHROPIC_EMPTY)])
    clouds.service.register_adapter(["anthropic-empty"], AnthropicAdapter(api_key="k", base_url=f"{clouds.server.url}/anthropic-empty"))
    clouds.service.register_adapter(["unreachable"], OpenAIChatAdapter(api_key="k", base_url="http://127.0.0.1:9/v1"))
    clouds.service.register_chain("steady", [
        Target("unreachable", "gpt-4o-mini"),  # nothing listens on the discard port: TRANSPORT
        Target("gemini", "gemini-2.5-flash"),
        Target("openai", "gpt-4o-mini", idle_timeout=0.3),  # a stall is a TIMEOUT after 0.3 s
        Target("openai-empty", "gpt-4o-mini"),
        Target("anthropic-empty", "claude-sonnet-4-5"),
        Target("anthropic", "claude-sonnet-4-5"),
    ])
    started = time.monotonic()
    result = clouds.service.stream(ask(provider="steady")).result()
    assert time.monotonic() - started < 3.5
    assert result.ok and result.text == "Hello"
    codes = [(e.outcome, e.failure.code if e.failure else None) for e in trail(result)]
    assert codes == [("failed", "TRANSPORT"), ("failed", "OVERLOADED"), ("failed", "TIMEOUT"),
                     ("failed", "EMPTY_RESPONSE"), ("failed", "EMPTY_RESPONSE"), ("served", None)]
    empty = trail(result)[4]
    assert empty.failure is not None and empty.failure.message.startswith("anthropic-empty: ")
    assert empty.usage is not None and empty.usage.input_tokens == 37  # an empty answer may be billed
    assert result.usage is not None and result.usage.input_tokens == 10  # ... never as the response's usage


def test_a_failure_that_is_not_in_the_codes_ends_the_stream_and_the_codes_are_configurable(clouds: Clouds) -> None:
    rejected = Route(status=401, content_type="application/json",
                     body=b'{"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}')
    clouds.answer("openai", rejected)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("strict", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
    result = clouds.service.stream(ask(provider="strict")).result()
    assert result.finish.kind == "error" and result.failure is not None and result.failure.code == "AUTH"
    assert outcomes(trail(result)) == [(1, "openai/gpt-4o-mini", "failed", "AUTH")]
    assert clouds.bodies("gemini") == []  # nothing was sent to the second target

    clouds.service.register_chain("lenient", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")],
                                  fall_back_on={*LlmService.DEFAULT_FALLBACK_CODES, "AUTH"})
    assert clouds.service.stream(ask(provider="lenient")).result().text.startswith("The capital")

    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.service.register_chain("no-429", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")],
                                  fall_back_on=("SERVER", "OVERLOADED"))
    limited = clouds.service.stream(ask(provider="no-429", max_retries=0)).result()
    assert limited.failure is not None and limited.failure.code == "RATE_LIMIT"


def test_the_last_target_keeps_its_adapters_retries(clouds: Clouds) -> None:
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("gemini", Route(status=500, content_type="application/json",
                                  body=b'{"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}}'), GEMINI_TEXT)
    adapter = clouds.service.adapter_for("gemini")
    assert isinstance(adapter, GeminiAdapter)
    adapter.retry_policy = type(adapter.retry_policy)(max_retries=2, backoff_base=0.01, backoff_cap=0.02)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
    result = clouds.service.stream(ask()).result()
    assert result.ok and len(clouds.bodies("openai")) == 1 and len(clouds.bodies("gemini")) == 2
    assert [(a.target, a.provider, a.outcome) for a in clouds.attempts()] == [
        (1, "openai", "failed"), (2, "gemini", "failed"), (2, "gemini", "ok")]
    assert [a.attempt for a in clouds.attempts()] == [1, 2, 3]


def test_when_every_target_fails_the_last_failure_ends_the_stream_and_says_the_chain_ran_out(clouds: Clouds) -> None:
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("anthropic", ANTHROPIC_OVERLOADED)
    clouds.answer("gemini", GEMINI_UNAVAILABLE)
    clouds.service.register_chain("smart", SMART)
    result = clouds.service.stream(ask(max_retries=0)).result()
    failure = result.failure
    assert result.finish.kind == "error" and failure is not None
    assert failure.code == "OVERLOADED" and failure.provider == "gemini" and failure.retryable
    assert failure.message.startswith("smart: no target served the request (3 tried); the last: gemini: ")
    assert [e.outcome for e in trail(result)] == ["failed"] * 3
    assert clouds.finished().code == "OVERLOADED"
    tips = recovery_tips(failure, "server")
    assert any("fallback target" in tip and "register_chain" in tip for tip in tips)
    assert not any("fallback" in tip.lower() for tip in recovery_tips(failure, "personal"))


# --------------------------------------------------------------------------- after content, never


def test_a_failure_after_the_first_content_never_moves_on(clouds: Clouds) -> None:
    clouds.answer("openai", Route(body=b"", script=[OPENAI_FIRST_WORDS]))  # one chunk, then the body ends
    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.service.register_chain("smart", SMART)
    chunks = list(clouds.service.stream(ask()))
    text = [c.text for c in chunks if isinstance(c, TextDelta)]
    assert text == ["Once upon"]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"
    assert finish.reason.failure.message.endswith(
        "; target 1 (openai/gpt-4o-mini) failed after content; not falling back")
    assert finish.metadata is not None
    assert outcomes(finish.metadata.fallback) == [(1, "openai/gpt-4o-mini", "served", None)]
    assert clouds.bodies("anthropic") == [] and clouds.bodies("gemini") == []


def test_an_in_band_overload_after_content_ends_the_stream_with_the_partial_answer(clouds: Clouds) -> None:
    clouds.answer("anthropic", ANTHROPIC_OVERLOADED_MID_STREAM)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("claude-first", [Target("anthropic", "claude-sonnet-4-5"), Target("gemini", "gemini-2.5-flash")])
    result = clouds.service.stream(ask(provider="claude-first")).result()
    assert result.text == "Partial" and result.failure is not None and result.failure.code == "OVERLOADED"
    assert "target 1 (anthropic/claude-sonnet-4-5) failed after content; not falling back" in result.failure.message
    assert clouds.bodies("gemini") == []
    assert clouds.finished().served_by is not None and clouds.finished().served_by.provider == "anthropic"  # type: ignore[union-attr]


def test_the_last_target_failing_after_content_does_not_claim_a_fallback_was_withheld(clouds: Clouds) -> None:
    clouds.answer("anthropic", ANTHROPIC_OVERLOADED_MID_STREAM)
    clouds.service.register_chain("solo", [Target("anthropic", "claude-sonnet-4-5")])
    result = clouds.service.stream(ask(provider="solo")).result()
    assert result.failure is not None and "not falling back" not in result.failure.message


# --------------------------------------------------------------------------- skipped before anything is sent


def test_a_target_that_cant_take_the_media_is_skipped_with_nothing_sent(clouds: Clouds) -> None:
    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.answer("openai", OPENAI_TEXT)
    clouds.service.register_chain("voice", [Target("anthropic", "claude-sonnet-4-5"), Target("openai", "gpt-4o-audio-preview")])
    memo = Message.user("What is said here?", AudioPart.from_bytes(wav(), name="memo.wav"))
    result = clouds.service.stream(ask(memo, provider="voice")).result()
    assert result.ok and result.text.startswith(OPENAI_TEXT_START)
    skipped, served = trail(result)
    assert (skipped.outcome, served.outcome) == ("skipped", "served")
    assert skipped.failure is not None and skipped.failure.code == "INVALID_OPTIONS"
    assert "does not take audio parts" in skipped.failure.message
    assert clouds.bodies("anthropic") == []  # nothing was sent
    body = clouds.bodies("openai")[0]
    assert body["messages"][0]["content"][1]["type"] == "input_audio"
    (record, ok) = clouds.attempts()
    assert (record.outcome, record.attempt, record.target, record.provider) == ("skipped", 0, 1, "anthropic")
    assert (ok.outcome, ok.attempt, ok.target) == ("ok", 1, 2)
    assert clouds.finished().attempts == 1  # a skipped target is no HTTP attempt


def test_a_target_that_refuses_the_response_format_is_skipped(clouds: Clouds) -> None:
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("json", [Target("anthropic", "claude-sonnet-4-5"), Target("gemini", "gemini-2.5-flash")])
    result = clouds.service.stream(ask(provider="json", response_format=JsonMode())).result()
    assert result.ok
    skipped = trail(result)[0]
    assert skipped.outcome == "skipped" and skipped.failure is not None
    assert skipped.failure.code == "INVALID_OPTIONS" and "response_format" in skipped.failure.message
    assert clouds.bodies("anthropic") == []
    assert clouds.bodies("gemini")[0]["generationConfig"]["responseMimeType"] == "application/json"


def test_when_no_target_can_take_the_request_nothing_is_sent(clouds: Clouds) -> None:
    clouds.service.register_chain("claudes", [Target("anthropic", "claude-sonnet-4-5"), Target("anthropic", "claude-haiku-4-5")])
    memo = Message.user("What is said here?", AudioPart.from_bytes(wav()))
    result = clouds.service.stream(ask(memo, provider="claudes")).result()
    assert result.failure is not None and result.failure.code == "INVALID_OPTIONS"
    assert result.failure.message.startswith("claudes: no target can take this request (2 tried); the last: ")
    assert [e.outcome for e in trail(result)] == ["skipped", "skipped"]
    assert clouds.server.requests == []


def test_a_target_whose_adapter_was_disposed_is_skipped(clouds: Clouds) -> None:
    clouds.answer("gemini", GEMINI_TEXT)
    registration = clouds.service.register_adapter(["spare"], OpenAIChatAdapter(api_key="k", base_url=f"{clouds.server.url}/spare/v1"))
    clouds.service.register_chain("smart", [Target("spare", "m"), Target("gemini", "gemini-2.5-flash")])
    registration.dispose()
    result = clouds.service.stream(ask()).result()
    assert result.ok
    assert outcomes(trail(result))[0] == (1, "spare/m", "skipped", "NO_ADAPTER")


# --------------------------------------------------------------------------- the history, portable


def _tool_turn(clouds: Clouds) -> list[Message]:
    """A real first turn: Anthropic's signed thinking and a tool call, through the service,
    then the tool's result."""
    question = Message.user("Use the fixed_version tool, then tell me the version.")
    first = clouds.service.stream(GenerateOptions(provider="anthropic", model="claude-sonnet-4-5", messages=(question,),
                                                  tools=(TOOL,))).result()
    assert first.finish.kind == "tool-calls" and first.replay_state["wire"] == "anthropic"
    (call,) = first.tool_calls
    return [question, first.message(), Message.tool_result(call.id, '{"version": "1.4.2"}')]


def test_a_tool_call_history_arrives_valid_at_each_target_of_a_chain_across_three_providers(clouds: Clouds) -> None:
    clouds.answer("anthropic", ANTHROPIC_TOOL_CALL, ANTHROPIC_OVERLOADED)
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("gemini", GEMINI_TEXT)
    history = _tool_turn(clouds)
    call_id = history[1].tool_calls[0].id
    assert call_id.startswith("toolu_")
    clouds.service.register_chain("smart", SMART)
    before = [repr(m) for m in history]
    result = clouds.service.stream(ask(*history, tools=(TOOL,))).result()
    assert result.ok and [e.outcome for e in trail(result)] == ["failed", "failed", "served"]
    assert [repr(m) for m in history] == before  # the caller's history is never mutated
    signature = history[1].replay_state["content"][0]["signature"]

    # OpenAI chat: the call and its result by the same id; nothing of Anthropic's replay state
    (openai,) = clouds.bodies("openai")
    assert [m["role"] for m in openai["messages"]] == ["user", "assistant", "tool"]
    assert openai["messages"][1]["tool_calls"][0]["id"] == call_id
    assert openai["messages"][1]["tool_calls"][0]["function"] == {"name": "fixed_version", "arguments": "{}"}
    assert openai["messages"][2]["tool_call_id"] == call_id
    text = json.dumps(openai)
    assert signature not in text and '"thinking"' not in text and '"signature"' not in text

    # Anthropic, the provider that wrote the turn: its replay state goes back as received
    _, anthropic = clouds.bodies("anthropic")
    assert anthropic["messages"][1]["content"] == history[1].replay_state["content"]
    assert anthropic["messages"][1]["content"][0] == {"type": "thinking", "thinking": history[1].blocks[0].text,  # type: ignore[union-attr]
                                                      "signature": signature}
    assert anthropic["messages"][2]["content"][0]["tool_use_id"] == call_id

    # Gemini: the call rebuilt from its blocks with Google's placeholder signature, the result
    # answering it by name; no Anthropic signature
    (gemini,) = clouds.bodies("gemini")
    model_turn, answer = gemini["contents"][1], gemini["contents"][2]
    assert model_turn == {"role": "model", "parts": [{"functionCall": {"name": "fixed_version", "args": {}},
                                                       "thoughtSignature": "skip_thought_signature_validator"}]}
    assert answer["parts"][0]["functionResponse"] == {"name": "fixed_version", "response": {"version": "1.4.2"}}
    assert signature not in json.dumps(gemini)

    # the next turn, through a chain led by Gemini: Gemini's own replay state goes back to
    # it as received, and the Anthropic turn is sent to Gemini the portable way again
    clouds.answer("gemini", GEMINI_TEXT)
    follow = [*history, result.message(), Message.user("And in French?")]
    clouds.service.register_chain("gemini-first", [Target("gemini", "gemini-2.5-flash"), Target("openai", "gpt-4o-mini")])
    again = clouds.service.stream(ask(*follow, provider="gemini-first", tools=(TOOL,))).result()
    assert again.ok
    last = clouds.bodies("gemini")[-1]
    assert last["contents"][3] == {"role": "model", "parts": result.replay_state["parts"]}
    assert signature not in json.dumps(last)


def test_gemini_history_reaches_anthropic_without_its_signatures_and_with_unique_tool_ids(clouds: Clouds) -> None:
    clouds.answer("gemini", GEMINI_CALL, GEMINI_CALL)
    capital = ToolSpec("get_capital", "A country's capital", {"type": "object", "properties": {"country": {"type": "string"}}})
    history: list[Message] = [Message.user("The capitals of France and Spain? One call at a time.")]
    for country in ("France", "Spain"):
        turn = clouds.service.stream(ask(*history, provider="gemini", tools=(capital,))).result()
        assert turn.replay_state["wire"] == "gemini"
        (call,) = turn.tool_calls
        history += [turn.message(), Message.tool_result(call.id, country)]
    assert history[1].tool_calls[0].id == history[3].tool_calls[0].id == "call-0"  # Gemini numbers per turn
    signed = Message("assistant", (ReasoningBlock("thinking it over", signature="gemini-thought-signature-0123"),
                                   TextBlock("Paris and Madrid.")), provider="gemini", model="gemini-2.5-flash")
    history += [signed, Message.user("Thanks. Now Italy?")]
    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.service.register_chain("claude", [Target("anthropic", "claude-sonnet-4-5")])
    result = clouds.service.stream(ask(*history, provider="claude", tools=(capital,))).result()
    assert result.ok
    (body,) = clouds.bodies("anthropic")
    uses = [b["id"] for m in body["messages"] for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    answers = [b["tool_use_id"] for m in body["messages"] for b in m["content"]
               if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert len(set(uses)) == 2 and uses == answers  # unique, and each result answers its own call
    assert uses[0] == "call-0" and uses[1].startswith("call_") and PORTABLE_ID.fullmatch(uses[1])
    text = json.dumps(body)
    assert "gemini-thought-signature-0123" not in text and '"thinking"' not in text
    assert "thoughtSignature" not in text and "Paris and Madrid." in text


def test_a_turn_another_model_wrote_goes_back_rebuilt_even_to_its_own_adapter(clouds: Clouds) -> None:
    """A thought signature is valid for the model that wrote it: a Gemini 3 turn sent to
    another Gemini model through the same adapter goes back rebuilt from its blocks (with
    Google's placeholder signature), and to the same model as received."""
    clouds.answer("gemini", fixture_bytes("gemini/function_call_thought_signature_gemini3.sse"), GEMINI_TEXT)
    country = ToolSpec("get_country", "The user's country", {"type": "object", "properties": {}})
    question = Message.user("Where am I?")
    first = clouds.service.stream(GenerateOptions(provider="gemini", model="gemini-3-pro-preview", messages=(question,),
                                                  tools=(country,))).result()
    (call,) = first.tool_calls
    signature = first.replay_state["parts"][0]["thoughtSignature"]
    history = (question, first.message(), Message.tool_result(call.id, "France"))
    clouds.service.register_chain("same-model", [Target("gemini", "gemini-3-pro-preview")])
    clouds.service.register_chain("other-model", [Target("gemini", "gemini-2.5-flash")])
    assert clouds.service.stream(ask(*history, provider="same-model", tools=(country,))).result().ok
    assert clouds.service.stream(ask(*history, provider="other-model", tools=(country,))).result().ok
    same, other = (body["contents"][1]["parts"] for body in clouds.bodies("gemini")[1:])
    assert same == first.replay_state["parts"] and same[0]["thoughtSignature"] == signature
    assert other == [{"functionCall": {"name": "get_country", "args": {}}, "thoughtSignature": "skip_thought_signature_validator"}]


def test_portable_history_rules() -> None:
    """dshstream._core.portable rules 1-4, directly."""
    native_state = {"wire": "anthropic", "content": []}
    long_id = "x" * 41
    history = (
        Message.user("q"),
        Message("assistant", (ReasoningBlock("r", signature="sig-a"), ToolCallBlock("toolu_1", "t", "{}")),
                provider="anthropic", replay_state=native_state),
        Message.tool_result("toolu_1", "one"),
        Message("assistant", (ReasoningBlock("r", signature="sig-g"), ToolCallBlock("toolu_1", "t", "{}"),
                              ToolCallBlock(long_id, "t", "{}"), ToolCallBlock("id with spaces", "t", "{}")),
                provider="gemini", replay_state={"wire": "gemini", "parts": []}),
        Message("tool", (ToolResultBlock("toolu_1", "two"), ToolResultBlock(long_id, "three"),
                         ToolResultBlock("id with spaces", "four"))),
        Message("assistant", (ReasoningBlock("mine", signature="hand-written"),)),  # the caller's own: kept
    )
    out = portable_history(history, native=lambda m: m.provider == "anthropic")
    assert out[0] is history[0] and out[1] is history[1] and out[2] is history[2]  # native: as it is
    assert out[5] is history[5]
    foreign = out[3]
    assert foreign.replay_state is None and foreign.blocks[0] == ReasoningBlock("r")
    ids = [c.id for c in foreign.tool_calls]
    assert all(PORTABLE_ID.fullmatch(i) for i in ids) and len(set(ids) | {"toolu_1"}) == 4
    assert [b.call_id for b in out[4].blocks if isinstance(b, ToolResultBlock)] == ids
    assert history[3].tool_calls[1].id == long_id  # nothing mutated
    assert portable_history(history, native=lambda m: m.provider == "anthropic") == out  # the same every time
    everything_foreign = portable_history(history, native=lambda m: False)
    assert everything_foreign[1].replay_state is None and everything_foreign[1].tool_calls[0].id == "toolu_1"
    assert everything_foreign[3].tool_calls[0].id != "toolu_1"  # the repeated id is the one renamed


# --------------------------------------------------------------------------- the request each target gets


def test_each_target_gets_its_own_model_and_overrides_and_the_timeout_bounds_the_whole_chain(clouds: Clouds) -> None:
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.service.register_chain("tuned", [
        Target("openai", max_tokens=64, temperature=0.2, extra_body={"service_tier": "flex"}),
        Target("anthropic", "claude-haiku-4-5", extra_body={"top_k": 5}, reasoning_effort="off"),
    ])
    result = clouds.service.stream(ask(provider="tuned", max_tokens=512)).result()
    assert result.ok
    (openai,), (anthropic,) = clouds.bodies("openai"), clouds.bodies("anthropic")
    assert (openai["model"], openai["max_completion_tokens"], openai["temperature"], openai["service_tier"]) == (
        "default", 64, 0.2, "flex")
    assert (anthropic["model"], anthropic["max_tokens"], anthropic["top_k"]) == ("claude-haiku-4-5", 512, 5)
    assert "service_tier" not in anthropic and "top_k" not in openai
    with pytest.raises(ConfigurationError, match=r"GenerateOptions\.extra_body can't go to the fallback chain 'tuned'"):
        clouds.service.stream(ask(provider="tuned", extra_body={"top_k": 5}))


def test_the_requests_timeout_bounds_the_whole_chain(clouds: Clouds) -> None:
    clouds.answer("openai", STALL)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini", idle_timeout=30), Target("gemini", "gemini-2.5-flash")])
    started = time.monotonic()
    result = clouds.service.stream(ask(timeout=0.6)).result()
    assert time.monotonic() - started < 3
    assert result.failure is not None and result.failure.code == "TIMEOUT"
    assert clouds.bodies("gemini") == []  # no time was left for it: nothing sent


def test_a_cancel_during_a_target_ends_the_chain(clouds: Clouds) -> None:
    clouds.answer("openai", STALL)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
    stream = clouds.service.stream(ask())
    threading.Timer(0.3, stream.close).start()
    result = stream.result()
    assert result.finish.kind == "aborted" and result.failure is not None and result.failure.code == "ABORTED"
    assert clouds.bodies("gemini") == []
    assert clouds.finished().kind == "aborted"


def test_listeners_contract_checking_and_the_tool_loop_work_through_a_chain(server: ReplayServer) -> None:
    clouds = Clouds(server)
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("anthropic", ANTHROPIC_TOOL_CALL, ANTHROPIC_TEXT)
    clouds.service.check_contract = True
    seen: list[str] = []

    def listener(options: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        seen.append(options.provider)
        yield from next_(options)

    clouds.service.add_listener(listener)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini"), Target("anthropic", "claude-sonnet-4-5")])
    loop = run_tools(clouds.service, ask(Message.user("Which version?"), tools=(TOOL,)),
                     {"fixed_version": lambda: "1.4.2"})
    result = loop.result()
    assert result.stopped == "done" and seen == ["smart", "smart"]
    assert [m.provider for m in result.history if m.role == "assistant"] == ["anthropic", "anthropic"]
    first, second = clouds.bodies("anthropic")
    assert second["messages"][1]["content"] == result.history[1].replay_state["content"]  # native replay, turn 2


# --------------------------------------------------------------------------- registration


def test_a_chain_is_checked_when_it_is_registered(clouds: Clouds) -> None:
    service = clouds.service
    with pytest.raises(ConfigurationError, match=r"'SERVER_ERROR' is not a failure code"):
        service.register_chain("smart", SMART, fall_back_on={"SERVER_ERROR"})
    with pytest.raises(ConfigurationError, match="ABORTED"):
        service.register_chain("smart", SMART, fall_back_on={"ABORTED"})
    with pytest.raises(ConfigurationError, match="must be a collection of failure codes"):
        service.register_chain("smart", SMART, fall_back_on="RATE_LIMIT")
    with pytest.raises(ConfigurationError, match=r"targets\[1\]: no adapter registered for provider 'mistral'") as missing:
        service.register_chain("smart", [Target("openai"), Target("mistral", "mistral-large")])
    assert missing.value.failure.code == "NO_ADAPTER"
    with pytest.raises(ConfigurationError, match=r"targets\[0\] must be a Target, got str 'openai'; build one"):
        service.register_chain("smart", ["openai"])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="at least one Target"):
        service.register_chain("smart", [])
    with pytest.raises(ConfigurationError, match="provider 'openai' is already registered") as taken:
        service.register_chain("openai", SMART)
    assert taken.value.failure.code == "DUPLICATE_ADAPTER"
    with pytest.raises(ConfigurationError, match="Target.max_tokens must be a positive int"):
        Target("openai", max_tokens=0)
    with pytest.raises(ConfigurationError, match="Target.provider must be a non-empty str"):
        Target("")
    remove = service.register_chain("smart", SMART)
    assert repr(service) == "LlmService(providers=['openai', 'anthropic', 'gemini'], chains=['smart'])"
    with pytest.raises(ConfigurationError, match="fallback chain 'smart' is already registered"):
        service.register_chain("smart", SMART)
    with pytest.raises(ConfigurationError, match="'smart' is a fallback chain"):
        service.register_chain("outer", [Target("smart")])
    with pytest.raises(ConfigurationError, match="provider 'smart' is a fallback chain's name"):
        service.register_adapter(["smart"], OpenAIChatAdapter(api_key="k", base_url=clouds.server.url))
    with pytest.raises(ConfigurationError, match="'smart' is a fallback chain"):
        service.adapter_for("smart")
    remove()
    result = service.stream(ask()).result()
    assert result.failure is not None and result.failure.code == "NO_ADAPTER"  # gone


# --------------------------------------------------------------------------- the trail: metadata, observer, OpenTelemetry


def test_the_trail_survives_serialization_and_is_redacted_in_the_records(clouds: Clouds) -> None:
    echoing = Route(status=429, content_type="application/json",
                    body=json.dumps({"error": {"message": f"Rate limit for key {clouds.keys['openai']}",
                                               "code": "rate_limit_exceeded"}}).encode())
    clouds.answer("openai", echoing)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
    chunks = list(clouds.service.stream(ask()))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.metadata is not None
    assert chunk_from_dict(json.loads(json.dumps(chunk_to_dict(finish)))) == finish
    everything = repr(finish) + repr(clouds.records)
    assert clouds.keys["openai"] not in everything
    record = clouds.finished()
    assert record.fallback == finish.metadata.fallback and record.served_by == finish.metadata.served_by
    assert record.provider == "smart" and record.attempts == 2


def test_otel_span_events_name_every_target_tried() -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from dshstream.otel import OtelObserver

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    with ReplayServer() as server:
        clouds = Clouds(server, observer=OtelObserver(tracer_provider=tracing))
        clouds.answer("openai", OPENAI_RATE_LIMITED)
        clouds.answer("gemini", GEMINI_TEXT)
        clouds.service.register_chain("smart", [Target("anthropic", "claude-sonnet-4-5"), Target("openai", "gpt-4o-mini"),
                                                Target("gemini", "gemini-2.5-flash")])
        memo = Message.user("Listen", AudioPart.from_bytes(wav()))
        assert clouds.service.stream(ask(memo)).result().ok
    (span,) = exporter.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["dshstream.fallback.served_by"] == "gemini/gemini-2.5-flash"
    assert attributes["dshstream.fallback.targets"] == 3
    assert attributes["gen_ai.provider.name"] == "gcp.gemini" and attributes["dshstream.provider"] == "smart"
    attempts = [dict(e.attributes or {}) for e in span.events if e.name == "dshstream.attempt"]
    assert [(a["dshstream.target"], a["dshstream.attempt.outcome"], a.get("error.type")) for a in attempts] == [
        (1, "skipped", "INVALID_OPTIONS"), (2, "failed", "RATE_LIMIT"), (3, "ok", None)]
    assert attempts[1]["dshstream.failure.message"] == "openai: rate limited (RATE_LIMIT, HTTP 429)"
    targets = [dict(e.attributes or {}) for e in span.events if e.name == "dshstream.fallback.target"]
    assert [(t["dshstream.target"], t["dshstream.target.provider"], t["dshstream.target.outcome"], t.get("error.type"))
            for t in targets] == [(1, "anthropic", "skipped", "INVALID_OPTIONS"), (2, "openai", "failed", "RATE_LIMIT"),
                                  (3, "gemini", "served", None)]
    assert "does not take audio parts" in str(targets[0]["dshstream.failure.message"])


def test_the_info_line_names_the_target_that_served(clouds: Clouds, caplog: pytest.LogCaptureFixture) -> None:
    clouds.answer("openai", OPENAI_RATE_LIMITED)
    clouds.answer("gemini", GEMINI_TEXT)
    clouds.service.register_chain("smart", [Target("openai", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
    with caplog.at_level("INFO", logger="dshstream.observe"):
        clouds.service.stream(ask()).result()
    (line,) = [r for r in caplog.records if r.name == "dshstream.observe"]
    assert "smart default (served by gemini/gemini-2.5-flash, target 2): stop" in line.getMessage()
    facts = line.dshstream  # type: ignore[attr-defined]
    assert facts["served_by"] == "gemini/gemini-2.5-flash"
    assert facts["fallback"] == [{"target": "openai/gpt-4o-mini", "outcome": "failed", "code": "RATE_LIMIT"},
                                 {"target": "gemini/gemini-2.5-flash", "outcome": "served", "code": None}]


def test_metadata_without_a_chain_has_no_trail() -> None:
    metadata = ResponseMetadata(response_id="r")
    assert metadata.fallback == () and metadata.served_by is None and "fallback" not in metadata
    failure = make_failure("RATE_LIMIT", "p: rate limited")
    with pytest.raises(ValueError, match="needs its failure"):
        TargetOutcome(1, "p", "m", "failed")
    assert TargetOutcome(1, "p", "m", "failed", failure).name == "p/m"
    finish = Finish(reason=FinishReason(kind="stop"), metadata=ResponseMetadata(fallback=(TargetOutcome(1, "p", "m", "served"),)))
    assert chunk_from_dict(chunk_to_dict(finish)) == finish


# --------------------------------------------------------------------------- the example


def test_fallback_chain_example() -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "examples/fallback_chain.py"], capture_output=True, text=True, env=env,
                          timeout=60, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "served by gemini/gemini-2.5-flash: The capital of France is Paris.",
        "  1 openai/gpt-4o-mini: failed RATE_LIMIT - openai: rate limited (RATE_LIMIT, HTTP 429)",
        "  2 anthropic/claude-sonnet-4-5: failed OVERLOADED - anthropic: overloaded (OVERLOADED, HTTP 529)",
        "  3 gemini/gemini-2.5-flash: served",
        "a voice memo, served by openai-audio/gpt-4o-audio-preview",
        "  1 anthropic/claude-sonnet-4-5: skipped INVALID_OPTIONS - messages[0].content[1]: Anthropic Messages does "
        "not take audio parts (AudioPart: audio/wav, 1.6 KB, 'memo.wav')",
        "  2 openai-audio/gpt-4o-audio-preview: served",
        "cut after content: STREAM_CLOSED",
        "  cut-short: stream ended before the provider's end-of-stream marker; target 1 (cut-short/gpt-4o-mini) "
        "failed after content; not falling back",
    ]



def test_a_target_that_cannot_cache_as_asked_is_skipped_before_sending(clouds: Clouds) -> None:
    """Prompt caching (issue 33): Gemini has no cache points, so a chain whose request marks
    the system prompt skips it, naming the field, and Anthropic gets the breakpoint."""
    from dshstream import CachePoint

    clouds.answer("anthropic", ANTHROPIC_TEXT)
    clouds.service.register_chain("cached", [Target("gemini", "gemini-2.5-flash"), Target("anthropic", "claude-sonnet-4-5")])
    options = ask(Message.system("The handbook.", cache=CachePoint()), Message.user("Chapter 2?"), provider="cached")
    result = clouds.service.stream(options).result()
    assert result.ok and result.text == "Hello"
    skipped, served = trail(result)
    assert (skipped.outcome, served.outcome) == ("skipped", "served")
    assert skipped.failure is not None and "GenerateOptions.messages[0].cache" in skipped.failure.message
    assert clouds.bodies("gemini") == []
    (body,) = clouds.bodies("anthropic")
    assert body["system"] == [{"type": "text", "text": "The handbook.", "cache_control": {"type": "ephemeral"}}]
