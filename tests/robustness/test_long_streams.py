"""Long streams: silence that is not death. A provider known to work without sending
content — a tool input buffered whole, a server tool running, a reasoning item — gets the
stream's quiet budget instead of its idle timeout (translator rule 6, pump rule 2, watchdog
rule 2); silence anywhere else still ends the stream at the idle timeout; every stream's
longest silence is in its finish metadata and its observer record. Times are scaled down:
an idle timeout of 0.3 s stands for 300 s."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream import AnthropicAdapter, ConfigurationError, GenerateOptions, LlmService, Message, OpenAIResponsesAdapter
from dshstream.observe import ObserverRecord, StreamFinished
from dshstream.testing import ReplayServer, Route

KEY = "test-key-long-streams"
SILENCE = 0.9


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def anthropic_script(block: dict[str, Any], delta: dict[str, Any], stop_reason: str) -> list[bytes | float]:
    """A Messages stream whose one block starts, then the provider says nothing for
    ``SILENCE`` seconds, then the block's content arrives."""
    return [
        sse("message_start", {"type": "message_start", "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 5}}}),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        sse("ping", {"type": "ping"}),  # keep-alives are liveness, not content
        SILENCE,
        sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}),
        sse("message_stop", {"type": "message_stop"}),
    ]


TOOL_INPUT = anthropic_script(
    {"type": "tool_use", "id": "toolu_1", "name": "write_file", "input": {}},
    {"type": "input_json_delta", "partial_json": '{"path": "a.txt", "text": "hello"}'},
    "tool_use",
)
MID_TEXT = anthropic_script(
    {"type": "text", "text": ""}, {"type": "text_delta", "text": "late words"}, "end_turn"
)


def with_silence(script: list[bytes | float], seconds: float) -> list[bytes | float]:
    """``script`` with its silence ``seconds`` long instead of ``SILENCE``."""
    return [seconds if isinstance(step, float) else step for step in script]


def ask(provider: str, **limits: float) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="m", messages=(Message.user("go"),), **limits)  # type: ignore[arg-type]


def anthropic(server: ReplayServer, script: list[bytes | float]) -> tuple[LlmService, list[ObserverRecord]]:
    server.add("/v1/messages", Route(body=b"", script=script))
    heard: list[ObserverRecord] = []
    service = LlmService(check_contract=True, observer=heard.append)
    service.register_adapter(["anthropic"], AnthropicAdapter(api_key=KEY, base_url=server.url, max_retries=0))
    return service, heard


def test_a_buffered_tool_input_may_be_silent_past_the_idle_timeout(server: ReplayServer) -> None:
    service, heard = anthropic(server, TOOL_INPUT)
    result = service.stream(ask("anthropic", idle_timeout=0.3, quiet_timeout=5.0)).result()
    assert result.finish.kind == "tool-calls", result.finish
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("write_file", '{"path": "a.txt", "text": "hello"}')]
    assert result.metadata is not None
    silence = result.metadata.longest_silence
    assert silence is not None and SILENCE - 0.05 <= silence < SILENCE + 2.0
    finished = [r for r in heard if isinstance(r, StreamFinished)]
    assert len(finished) == 1 and finished[0].longest_silence == silence


def test_the_same_silence_mid_text_is_an_idle_timeout(server: ReplayServer) -> None:
    service, _ = anthropic(server, MID_TEXT)
    result = service.stream(ask("anthropic", idle_timeout=0.3, quiet_timeout=5.0)).result()
    failure = result.finish.failure
    assert result.finish.kind == "error" and failure is not None and failure.code == "TIMEOUT"
    assert "idle timeout" in failure.message and "late words" not in result.text


def test_a_quiet_phase_has_a_budget_too(server: ReplayServer) -> None:
    service, _ = anthropic(server, TOOL_INPUT)
    result = service.stream(ask("anthropic", idle_timeout=0.2, quiet_timeout=0.4)).result()
    failure = result.finish.failure
    assert failure is not None and failure.code == "TIMEOUT"
    assert "while the provider worked (quiet timeout" in failure.message


def test_the_quiet_budget_is_never_shorter_than_the_idle_timeout(server: ReplayServer) -> None:
    service, _ = anthropic(server, with_silence(TOOL_INPUT, 0.4))  # 4 times the quiet budget
    result = service.stream(ask("anthropic", idle_timeout=5.0, quiet_timeout=0.1)).result()
    assert result.finish.kind == "tool-calls"


def test_a_reasoning_item_on_responses_is_a_quiet_phase(server: ReplayServer) -> None:
    def event(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    response = {"id": "resp_1", "model": "o-x", "status": "in_progress"}
    script: list[bytes | float] = [
        event({"type": "response.created", "sequence_number": 0, "response": response}),
        event({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        SILENCE,  # thinking, with no summary to stream
        event({"type": "response.output_item.done", "sequence_number": 2, "output_index": 0,
               "item": {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "enc"}}),
        event({"type": "response.output_item.added", "sequence_number": 3, "output_index": 1,
               "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        event({"type": "response.output_text.delta", "sequence_number": 4, "output_index": 1, "content_index": 0,
               "item_id": "msg_1", "delta": "forty-two"}),
        event({"type": "response.output_item.done", "sequence_number": 5, "output_index": 1,
               "item": {"id": "msg_1", "type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "forty-two", "annotations": []}]}}),
        event({"type": "response.completed", "sequence_number": 6,
               "response": {**response, "status": "completed", "usage": {"input_tokens": 3, "output_tokens": 40}}}),
    ]
    server.add("/v1/responses", Route(body=b"", script=script))
    service = LlmService(check_contract=True)
    service.register_adapter(["openai"], OpenAIResponsesAdapter(api_key=KEY, base_url=f"{server.url}/v1", max_retries=0))
    result = service.stream(ask("openai", idle_timeout=0.3, quiet_timeout=5.0)).result()
    assert result.finish.kind == "stop" and result.text == "forty-two"
    assert result.metadata is not None and result.metadata.longest_silence is not None
    assert result.metadata.longest_silence >= SILENCE - 0.05


def test_the_longest_silence_leaves_equality_alone(server: ReplayServer) -> None:
    # one response read twice is equal to itself, however the network paced it (a silence
    # of any length: each read measures its own)
    service, _ = anthropic(server, with_silence(TOOL_INPUT, 0.2))
    first = service.stream(ask("anthropic", quiet_timeout=5.0)).result()
    second = service.stream(ask("anthropic", quiet_timeout=5.0)).result()
    assert first.metadata is not None and second.metadata is not None
    assert first.metadata.longest_silence is not None and second.metadata.longest_silence is not None
    assert first.metadata == second.metadata


@pytest.mark.parametrize("value", [-1.0, 0.0, float("nan")])
def test_a_quiet_timeout_that_is_not_a_positive_number_is_refused_by_name(value: float) -> None:
    with pytest.raises(ConfigurationError, match="quiet_timeout"):
        ask("anthropic", quiet_timeout=value)
