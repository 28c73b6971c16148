"""run_tools: scripted multi-step transcripts served on loopback, through the real HTTP path.

Each test scripts the provider's answers step by step (the replay server answers the
n-th request with the n-th route) and checks what the loop streamed, ran, refused and
sent back in the next request.
"""

from __future__ import annotations

import json
import pickle
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from helpers import fake_key, fixture_bytes

from dshstream import (
    AnthropicAdapter,
    ConfigurationError,
    Finish,
    GenerateOptions,
    LlmError,
    LlmService,
    Message,
    OpenAIChatAdapter,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolSpec,
    run_tools,
)
from dshstream.errors import ToolLoopError
from dshstream.tool_loop import ToolLoopStream
from dshstream._replay_server import ReplayServer, Route

KEY = "sk-loop-test-0123456789abcdefABCDEF"
PROJECT_KEY = fake_key("sk-proj-", 26)  # key-shaped, built at run time
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WRITE = ToolSpec(
    "write_file",
    "Write a file",
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
)


# --------------------------------------------------------------------------- scripting


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _event(
        {"id": "c", "object": "chat.completion.chunk", "model": "m",
         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    )


def _usage(prompt: int, completion: int) -> bytes:
    return _event(
        {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [],
         "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}
    )


DONE = b"data: [DONE]\n\n"


def text_step(text: str, usage: tuple[int, int] = (10, 5)) -> bytes:
    """An OpenAI chat stream answering ``text``."""
    words = text.split(" ")
    pieces = [w + " " for w in words[:-1]] + [words[-1]]
    return b"".join(
        [_chunk({"role": "assistant", "content": ""}), *(_chunk({"content": p}) for p in pieces),
         _chunk({}, "stop"), _usage(*usage), DONE]
    )


def calls_step(
    calls: Sequence[tuple[str, str, str]],
    *,
    finish: str = "tool_calls",
    text: str = "",
    usage: tuple[int, int] = (10, 5),
    done: bool = True,
) -> bytes:
    """An OpenAI chat stream asking for ``calls`` ``(id, name, arguments)``, each
    argument string streamed in fragments of 5 characters."""
    events = [_chunk({"role": "assistant", "content": text or None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        events.append(_chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
        for start in range(0, len(arguments), 5):
            events.append(_chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start:start + 5]}}]}))
    if done:
        events += [_chunk({}, finish), _usage(*usage), DONE]
    return b"".join(events)


def local_service(server: ReplayServer, steps: Sequence[bytes | Route], **settings: Any) -> LlmService:
    server.add("/v1/", [step if isinstance(step, Route) else Route(body=step) for step in steps])
    service = LlmService()
    service.register_adapter(
        ["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", api_key=KEY, dialect="custom", **settings)
    )
    return service


def ask(text: str = "What is the weather in Paris?", tools: Sequence[ToolSpec] = (WEATHER,), **extra: Any) -> GenerateOptions:
    return GenerateOptions(provider="local", model="m", messages=(Message.user(text),), tools=tuple(tools),
                           max_retries=0, **extra)


def sent_messages(server: ReplayServer, n: int) -> list[dict[str, Any]]:
    body = server.requests[n].body
    assert isinstance(body, dict)
    messages = body["messages"]
    assert isinstance(messages, list)
    return messages


def finishes(chunks: Sequence[StreamChunk]) -> list[str]:
    return [c.reason.kind for c in chunks if isinstance(c, Finish)]


class Recorder:
    """A get_weather that records its calls."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def __call__(self, city: str) -> dict[str, Any]:
        with self.lock:
            self.calls.append({"city": city})
        return {"city": city, "temp_c": 18}


# --------------------------------------------------------------------------- the loop


def test_two_steps_stream_live_run_the_call_and_return_the_whole_history(server: ReplayServer) -> None:
    service = local_service(
        server,
        [
            calls_step([("call_1", "get_weather", '{"city": "Paris"}')], text="Let me check.", usage=(10, 5)),
            text_step("It is 18 degrees in Paris.", usage=(30, 7)),
        ],
    )
    weather = Recorder()
    loop = run_tools(service, ask(), {"get_weather": weather})
    seen: list[tuple[int, StreamChunk]] = []
    for chunk in loop:
        seen.append((loop.step, chunk))
    chunks = [chunk for _, chunk in seen]
    assert finishes(chunks) == ["tool-calls", "stop"]
    assert [step for step, chunk in seen if isinstance(chunk, Finish)] == [1, 2]
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == "Let me check.It is 18 degrees in Paris."
    assert weather.calls == [{"city": "Paris"}]

    result = loop.result()
    assert result.stopped == "done"
    assert result.text == "It is 18 degrees in Paris."
    assert [s.number for s in result.steps] == [1, 2]
    assert [o.status for o in result.outcomes] == ["ok"]
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 12)
    roles = [m.role for m in result.history]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.new_messages == result.history[1:]
    tool_message = result.history[2]
    assert tool_message.blocks == (result.steps[0].outcomes[0].result,)
    assert json.loads(result.steps[0].outcomes[0].result.content) == {"city": "Paris", "temp_c": 18}

    # The second request carries the assistant turn and the result, in the wire's form.
    second = sent_messages(server, 1)
    assert second[1]["role"] == "assistant"
    assert second[1]["tool_calls"][0]["id"] == "call_1"
    assert json.loads(second[1]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert second[2] == {"role": "tool", "tool_call_id": "call_1", "content": '{"city":"Paris","temp_c":18}'}
    assert len(server.requests) == 2


def test_the_history_is_ready_for_the_next_user_turn(server: ReplayServer) -> None:
    service = local_service(
        server,
        [calls_step([("call_1", "get_weather", '{"city": "Oslo"}')]), text_step("Cold."), text_step("You're welcome.")],
    )
    first = run_tools(service, ask(), {"get_weather": Recorder()}).result()
    follow_up = GenerateOptions(provider="local", model="m", messages=(*first.history, Message.user("Thanks!")))
    assert service.stream(follow_up).result().text == "You're welcome."
    third = sent_messages(server, 2)
    assert [m["role"] for m in third] == ["user", "assistant", "tool", "assistant", "user"]


def test_a_call_cut_at_max_tokens_is_never_run_and_the_model_is_told(server: ReplayServer) -> None:
    """The answer ran out of tokens inside the arguments: the loop keeps the cut call in the
    assistant turn (the assembler drops it) so it can be answered with an error result."""
    cut = calls_step([("call_w", "write_file", '{"path": "notes.txt", "content": "a very long te')], finish="length")
    service = local_service(server, [cut, text_step("I will write it in parts.")])
    written: list[Any] = []
    loop = run_tools(service, ask("Write the notes", tools=(WRITE,)), {"write_file": lambda **kw: written.append(kw)})
    result = loop.result()
    assert written == []
    outcome = result.steps[0].outcomes[0]
    assert outcome.status == "truncated" and outcome.result.is_error
    assert outcome.call.arguments_truncated and outcome.call.id == "call_w"
    assert "cut off" in outcome.result.content and "notes.txt" not in outcome.result.content
    assert result.steps[0].response.finish.kind == "max-tokens"
    assert result.history[1].tool_calls == (outcome.call,)

    second = sent_messages(server, 1)
    assert [m["role"] for m in second] == ["user", "assistant", "tool"]
    assert second[1]["tool_calls"][0]["id"] == "call_w"
    assert second[2]["tool_call_id"] == "call_w" and "cut off" in second[2]["content"]
    assert result.stopped == "done" and result.text == "I will write it in parts."


def test_a_complete_call_before_the_cut_one_still_runs(server: ReplayServer) -> None:
    cut = calls_step(
        [("call_a", "get_weather", '{"city": "Rome"}'), ("call_b", "get_weather", '{"city": "Ber')], finish="length"
    )
    service = local_service(server, [cut, text_step("Rome is warm.")])
    weather = Recorder()
    result = run_tools(service, ask(), {"get_weather": weather}).result()
    assert weather.calls == [{"city": "Rome"}]
    assert [o.status for o in result.outcomes] == ["ok", "truncated"]
    assert [m["tool_call_id"] for m in sent_messages(server, 1)[2:]] == ["call_a", "call_b"]


@pytest.mark.parametrize(
    ("arguments", "status"),
    [("{not json at all", "invalid_arguments"), ('["Paris"]', "invalid_arguments"), ('"Paris"', "invalid_arguments"),
     ('{"city": "Paris"} trailing', "invalid_arguments")],
)
def test_arguments_that_are_not_a_json_object_are_refused(server: ReplayServer, arguments: str, status: str) -> None:
    service = local_service(server, [calls_step([("call_1", "get_weather", arguments)]), text_step("Sorry.")])
    weather = Recorder()
    result = run_tools(service, ask(), {"get_weather": weather}).result()
    assert weather.calls == []
    outcome = result.outcomes[0]
    assert outcome.status == status and outcome.result.is_error
    assert outcome.result.content.startswith("Not run:") and "not a JSON object" in outcome.result.content


def test_an_unknown_tool_gets_an_error_result_naming_the_tools(server: ReplayServer) -> None:
    service = local_service(
        server,
        [calls_step([("call_1", "launch_rockets", '{"count": 3}'), ("call_2", "get_weather", '{"city": "Lima"}')]),
         text_step("Lima is mild.")],
    )
    weather = Recorder()
    result = run_tools(service, ask(), {"get_weather": weather}).result()
    unknown, ok = result.outcomes
    assert unknown.status == "unknown_tool" and unknown.result.is_error
    assert "'launch_rockets'" in unknown.result.content and "get_weather" in unknown.result.content
    assert ok.status == "ok" and weather.calls == [{"city": "Lima"}]


def test_a_tool_that_raises_becomes_a_redacted_error_result(server: ReplayServer) -> None:
    def get_weather(city: str) -> str:
        raise RuntimeError(f"upstream refused key {KEY} and {PROJECT_KEY} for {city}")

    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Kyiv"}')]), text_step("Oops.")])
    result = run_tools(service, ask(), {"get_weather": get_weather}).result()
    outcome = result.outcomes[0]
    assert outcome.status == "raised" and outcome.result.is_error
    assert isinstance(outcome.exception, RuntimeError)
    content = outcome.result.content
    assert "RuntimeError" in content and "for Kyiv" in content
    assert KEY not in content and PROJECT_KEY not in content
    assert "[REDACTED]" in content
    sent = json.dumps(server.requests[1].body)
    assert KEY not in sent and "sk-proj-abcdefghij" not in sent
    assert KEY not in repr(outcome)


def test_wrong_arguments_for_the_function_are_an_error_result_too(server: ReplayServer) -> None:
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"town": "Kyiv"}')]), text_step("Hm.")])
    result = run_tools(service, ask(), {"get_weather": Recorder()}).result()
    assert result.outcomes[0].status == "raised"
    assert "unexpected keyword argument 'town'" in result.outcomes[0].result.content


def test_results_other_than_str_are_sent_as_json(server: ReplayServer) -> None:
    specs = (ToolSpec("as_text"), ToolSpec("as_list"), ToolSpec("as_none"), ToolSpec("as_object"), ToolSpec("as_nan"))
    calls = [(f"call_{n}", spec.name, "{}") for n, spec in enumerate(specs)]
    service = local_service(server, [calls_step(calls), text_step("Done.")])
    tools = {
        "as_text": lambda: "plain «text»",
        "as_list": lambda: [1, "two", {"three": 3.5}],
        "as_none": lambda: None,
        "as_object": lambda: object(),
        "as_nan": lambda: float("nan"),
    }
    result = run_tools(service, ask(tools=specs), tools).result()
    contents = [o.result.content for o in result.outcomes]
    assert contents[:3] == ["plain «text»", '[1,"two",{"three":3.5}]', "null"]
    assert [o.status for o in result.outcomes] == ["ok", "ok", "ok", "raised", "raised"]
    assert all("could not be encoded as JSON" in c for c in contents[3:])


def test_a_runaway_result_is_cut_at_max_result_chars_and_says_so(server: ReplayServer) -> None:
    specs = (ToolSpec("dump"), ToolSpec("small"))
    service = local_service(server, [calls_step([("call_1", "dump", "{}"), ("call_2", "small", "{}")]),
                                     text_step("Done.")])
    loop = run_tools(service, ask(tools=specs), {"dump": lambda: "x" * 250_000, "small": lambda: {"ok": True}},
                     max_result_chars=1000)
    result = loop.result()
    big, small = (o.result.content for o in result.outcomes)
    assert big == "x" * 1000 + "…[truncated 249000 chars]" and small == '{"ok":true}'
    assert [o.status for o in result.outcomes] == ["ok", "ok"]
    sent = [m for m in sent_messages(server, 1) if m["role"] == "tool"]
    assert [m["content"] for m in sent] == [big, small]  # what the model got


def test_approve_can_veto_a_call_and_a_failing_check_is_a_veto(server: ReplayServer) -> None:
    calls = [("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "get_weather", '{"city": "Area 51"}'),
             ("call_3", "get_weather", '{"city": "Nowhere"}')]
    service = local_service(server, [calls_step(calls), text_step("Paris only.")])
    weather = Recorder()
    asked: list[str] = []

    def approve(call: ToolCallBlock) -> bool:
        asked.append(call.id)
        if "Nowhere" in call.arguments:
            raise ValueError("the approval service is down")
        return "Area 51" not in call.arguments

    result = run_tools(service, ask(), {"get_weather": weather}, approve=approve).result()
    assert asked == ["call_1", "call_2", "call_3"]
    assert weather.calls == [{"city": "Paris"}]
    assert [o.status for o in result.outcomes] == ["ok", "vetoed", "vetoed"]
    assert "not approved" in result.outcomes[1].result.content


def test_a_truthy_answer_that_is_not_true_does_not_approve(server: ReplayServer) -> None:
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), text_step("No.")])
    weather = Recorder()
    approve: Any = lambda call: "no"
    result = run_tools(service, ask(), {"get_weather": weather}, approve=approve).result()
    assert weather.calls == [] and result.outcomes[0].status == "vetoed"


# --------------------------------------------------------------------------- parallel


def _parallel_calls(n: int) -> bytes:
    return calls_step([(f"call_{i}", "get_weather", json.dumps({"city": f"city{i}"})) for i in range(n)])


def test_parallel_calls_run_concurrently_and_results_keep_the_call_order(server: ReplayServer) -> None:
    service = local_service(server, [_parallel_calls(3), text_step("All three.")])
    barrier = threading.Barrier(3, timeout=10)
    threads: set[str] = set()
    finished: list[str] = []

    def get_weather(city: str) -> str:
        threads.add(threading.current_thread().name)
        barrier.wait()  # only passes if the three calls run at the same time
        time.sleep(0.05 * (3 - int(city[-1])))  # finish in reverse order
        finished.append(city)
        return f"sunny in {city}"

    result = run_tools(service, ask(), {"get_weather": get_weather}, parallel=3).result()
    assert finished == ["city2", "city1", "city0"]
    assert [o.result.content for o in result.outcomes] == ["sunny in city0", "sunny in city1", "sunny in city2"]
    assert [m.blocks[0].call_id for m in result.history[2:5]] == ["call_0", "call_1", "call_2"]  # type: ignore[union-attr]
    assert [m["tool_call_id"] for m in sent_messages(server, 1)[2:]] == ["call_0", "call_1", "call_2"]
    assert len(threads) == 3 and threading.current_thread().name not in threads


def test_parallel_true_runs_every_call_of_a_step_at_once(server: ReplayServer) -> None:
    service = local_service(server, [_parallel_calls(4), text_step("Done.")])
    barrier = threading.Barrier(4, timeout=10)

    def get_weather(city: str) -> str:
        barrier.wait()
        return city

    result = run_tools(service, ask(), {"get_weather": get_weather}, parallel=True).result()
    assert [o.result.content for o in result.outcomes] == ["city0", "city1", "city2", "city3"]


def test_without_parallel_calls_run_one_by_one_in_the_consuming_thread(server: ReplayServer) -> None:
    service = local_service(server, [_parallel_calls(3), text_step("Done.")])
    threads: list[threading.Thread] = []
    running = threading.Semaphore(1)

    def get_weather(city: str) -> str:
        assert running.acquire(blocking=False), "two calls ran at once"
        threads.append(threading.current_thread())
        time.sleep(0.01)
        running.release()
        return city

    run_tools(service, ask(), {"get_weather": get_weather}).result()
    assert threads == [threading.current_thread()] * 3


# --------------------------------------------------------------------------- failures


def test_a_provider_error_mid_loop_is_a_turn_error_with_the_partial_history(server: ReplayServer) -> None:
    service = local_service(
        server,
        [calls_step([("call_1", "get_weather", '{"city": "Paris"}')], usage=(10, 5)),
         Route(body=b'{"error": {"message": "the server broke"}}', status=500, content_type="application/json")],
    )
    loop = run_tools(service, ask(), {"get_weather": Recorder()})
    chunks: list[StreamChunk] = []
    with pytest.raises(ToolLoopError) as info:
        for chunk in loop:
            chunks.append(chunk)  # noqa: PERF402 - keeps what arrived before the raise
    assert finishes(chunks) == ["tool-calls", "error"]  # the failed step's finish is streamed first
    error = info.value
    assert isinstance(error, LlmError)
    assert error.failure.code == "SERVER" and error.step == 2
    assert [m.role for m in error.history] == ["user", "assistant", "tool"]
    assert len(error.steps) == 1 and error.steps[0].outcomes[0].status == "ok"
    assert error.response is not None and error.response.finish.kind == "error"
    assert error.usage is not None and error.usage.input_tokens == 10
    assert isinstance(error.__cause__, LlmError) and type(error.__cause__).__name__ == "ServerError"
    assert loop.done
    with pytest.raises(ToolLoopError) as again:
        loop.result()
    assert again.value is error
    assert list(loop) == []


def test_a_stream_cut_mid_answer_never_becomes_an_assistant_turn(server: ReplayServer) -> None:
    cut = text_step("The weather in Paris is")[:-len(DONE) - 200]
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), cut])
    with pytest.raises(ToolLoopError) as info:
        run_tools(service, ask(), {"get_weather": Recorder()}).result()
    error = info.value
    assert error.failure.code == "STREAM_CLOSED"
    assert error.response is not None and error.response.text.startswith("The weather")
    assert all("The weather" not in m.text for m in error.history)
    assert [m.role for m in error.history] == ["user", "assistant", "tool"]


def test_an_error_in_the_first_step_carries_the_request_history(server: ReplayServer) -> None:
    service = local_service(server, [Route(body=b'{"error": {"message": "bad key"}}', status=401,
                                           content_type="application/json")])
    with pytest.raises(ToolLoopError) as info:
        run_tools(service, ask(), {"get_weather": Recorder()}).result()
    assert info.value.failure.code == "AUTH" and info.value.step == 1
    assert info.value.history == (Message.user("What is the weather in Paris?"),)
    assert info.value.steps == ()


def test_the_error_pickles(server: ReplayServer) -> None:
    service = local_service(server, [Route(body=b"{}", status=503, content_type="application/json")])
    with pytest.raises(ToolLoopError) as info:
        run_tools(service, ask(), {"get_weather": Recorder()}).result()
    copy = pickle.loads(pickle.dumps(info.value))
    assert type(copy) is ToolLoopError and copy.failure == info.value.failure
    assert copy.step == 1 and copy.history == info.value.history


# --------------------------------------------------------------------------- limits and control


def test_max_steps_stops_with_a_clear_outcome_and_a_valid_history(server: ReplayServer) -> None:
    step = calls_step([("call_x", "get_weather", '{"city": "Paris"}')])
    service = local_service(server, [step])  # the model asks for the tool forever
    weather = Recorder()
    result = run_tools(service, ask(), {"get_weather": weather}, max_steps=2).result()
    assert result.stopped == "max_steps"
    assert len(server.requests) == 2 and len(result.steps) == 2
    assert weather.calls == [{"city": "Paris"}]  # the last step's call is not run
    assert [o.status for o in result.outcomes] == ["ok", "skipped"]
    assert "max_steps" in result.outcomes[1].result.content
    assert [m.role for m in result.history] == ["user", "assistant", "tool", "assistant", "tool"]


def test_close_from_another_thread_during_a_step(server: ReplayServer) -> None:
    slow = Route(body=b"", script=[_chunk({"role": "assistant", "content": "Thinking"}), 30.0, text_step("late")])
    service = local_service(server, [slow])
    loop = run_tools(service, ask(), {"get_weather": Recorder()})
    chunks: list[StreamChunk] = []
    started = time.monotonic()
    with pytest.raises(ToolLoopError) as info:
        for chunk in loop:
            chunks.append(chunk)
            if isinstance(chunk, TextDelta):
                threading.Timer(0.2, loop.close).start()
    assert time.monotonic() - started < 15
    assert info.value.failure.code == "ABORTED"
    assert finishes(chunks) == ["aborted"]
    assert loop.done and len(server.requests) == 1


def test_close_between_steps_makes_no_further_request(server: ReplayServer) -> None:
    calls = [("call_1", "get_weather", '{"city": "Paris"}'), ("call_2", "get_weather", '{"city": "Rome"}')]
    service = local_service(server, [calls_step(calls), text_step("never sent")])
    holder: list[ToolLoopStream] = []

    def get_weather(city: str) -> str:
        closer = threading.Thread(target=holder[0].close)
        closer.start()
        closer.join()
        return city

    loop = run_tools(service, ask(), {"get_weather": get_weather})
    holder.append(loop)
    with pytest.raises(ToolLoopError) as info:
        loop.result()
    error = info.value
    assert error.failure.code == "ABORTED"
    assert len(server.requests) == 1
    assert [o.status for o in error.steps[0].outcomes] == ["ok", "skipped"]
    assert [m.role for m in error.history] == ["user", "assistant", "tool", "tool"]  # every call answered


def test_close_when_idle_and_the_context_manager(server: ReplayServer) -> None:
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), text_step("x")])
    weather = Recorder()
    with run_tools(service, ask(), {"get_weather": weather}) as loop:
        for chunk in loop:
            break
    assert loop.done and weather.calls == [] and len(server.requests) == 1
    with pytest.raises(ToolLoopError) as info:
        loop.result()
    assert info.value.failure.code == "ABORTED"
    assert list(loop) == []
    loop.close()  # idempotent


def test_cancel_event_of_the_options_stops_the_loop(server: ReplayServer) -> None:
    cancel = threading.Event()
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), text_step("x")])

    def get_weather(city: str) -> str:
        cancel.set()
        return city

    loop = run_tools(service, ask(cancel=cancel), {"get_weather": get_weather})
    chunks: list[StreamChunk] = []
    with pytest.raises(ToolLoopError) as info:
        for chunk in loop:
            chunks.append(chunk)  # noqa: PERF402 - keeps what arrived before the raise
    assert info.value.failure.code == "ABORTED" and info.value.step == 2
    assert finishes(chunks) == ["tool-calls", "aborted"]
    assert len(server.requests) == 1


def test_parallel_calls_not_started_when_closed_are_not_run(server: ReplayServer) -> None:
    service = local_service(server, [_parallel_calls(4), text_step("x")])
    holder: list[ToolLoopStream] = []
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        if city == "city0":
            holder[0].cancel()
        time.sleep(0.1)
        return city

    loop = run_tools(service, ask(), {"get_weather": get_weather}, parallel=1 + 1)
    holder.append(loop)
    with pytest.raises(ToolLoopError):
        loop.result()
    statuses = [o.status for o in loop.steps[0].outcomes]
    # the canceller itself is still running when the loop stops waiting (it is not awaited)
    assert statuses[0] in ("ok", "abandoned") and "skipped" in statuses
    assert len(ran) < 4


# --------------------------------------------------------------------------- replay state


def test_replay_state_flows_between_steps(server: ReplayServer) -> None:
    """Anthropic's signed thinking of step 1 is sent back verbatim in step 2's request."""
    server.add("/v1/messages", [Route(body=fixture_bytes("anthropic/thinking_then_tool_use.sse")),
                                Route(body=fixture_bytes("anthropic/text.sse"))])
    service = LlmService()
    service.register_adapter(["anthropic"], AnthropicAdapter(api_key=KEY, base_url=server.url))
    spec = ToolSpec("fixed_version", "The fixed version")
    options = GenerateOptions(provider="anthropic", model="claude-haiku-4-5", messages=(Message.user("Version?"),),
                              tools=(spec,), max_tokens=2048, max_retries=0)
    result = run_tools(service, options, {"fixed_version": lambda: "1.2.3"}).result()
    thinking = [b for b in result.history[1].blocks if isinstance(b, ReasoningBlock)]
    assert thinking and thinking[0].signature
    assert result.history[1].replay_state is not None
    second = sent_messages(server, 1)
    assistant = second[1]
    assert assistant["role"] == "assistant"
    signed = [part for part in assistant["content"] if part["type"] == "thinking"]
    assert signed and signed[0]["signature"] == thinking[0].signature
    tool_use = next(part for part in assistant["content"] if part["type"] == "tool_use")
    assert second[2]["content"][0] == {"type": "tool_result", "tool_use_id": tool_use["id"], "content": "1.2.3"}
    assert isinstance(result.response.blocks[-1], TextBlock)


# --------------------------------------------------------------------------- arguments


def test_text_stream_gives_the_text_of_every_step(server: ReplayServer) -> None:
    service = local_service(
        server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')], text="One moment. "), text_step("Sunny.")]
    )
    loop = run_tools(service, ask(), {"get_weather": Recorder()})
    assert "".join(loop.text_stream()) == "One moment. Sunny."
    assert loop.result().text == "Sunny."


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"tools": {}}, "no function for 'get_weather'"),
        ({"tools": [("get_weather", print)]}, "tools must be a mapping"),
        ({"tools": {"get_weather": "not callable"}}, "must be callable"),
        ({"max_steps": 0}, "max_steps"),
        ({"parallel": 0}, "parallel"),
        ({"parallel": "yes"}, "parallel"),
        ({"approve": True}, "approve"),
        ({"max_result_chars": 0}, "max_result_chars"),
    ],
)
def test_bad_arguments_fail_at_once_naming_the_argument(kwargs: dict[str, Any], says: str) -> None:
    arguments: dict[str, Any] = {"tools": {"get_weather": Recorder()}, **kwargs}
    tools = arguments.pop("tools")
    with pytest.raises(ConfigurationError) as info:
        run_tools(LlmService(), ask(), tools, **arguments)
    assert says in str(info.value)


def test_bad_options_fail_at_once() -> None:
    with pytest.raises(ConfigurationError):
        run_tools(LlmService(), "hello", {})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        run_tools(object(), ask(), {"get_weather": Recorder()})  # type: ignore[arg-type]


def test_keyboard_interrupt_in_a_tool_closes_the_loop_and_propagates(server: ReplayServer) -> None:
    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), text_step("x")])

    def get_weather(city: str) -> str:
        raise KeyboardInterrupt  # the notebook's Stop button while a tool runs

    loop = run_tools(service, ask(), {"get_weather": get_weather})
    with pytest.raises(KeyboardInterrupt):
        loop.result()
    assert loop.done and len(server.requests) == 1
    with pytest.raises(ToolLoopError) as info:
        loop.result()
    assert info.value.failure.code == "ABORTED" and "KeyboardInterrupt" in info.value.failure.message
    assert [m.role for m in info.value.history] == ["user"]  # never a call without its answer


# --------------------------------------------------------------------------- hostile tools and calls


def test_cancel_ends_a_parallel_loop_whose_tool_never_returns(server: ReplayServer) -> None:
    service = local_service(server, [_parallel_calls(2), text_step("never sent")])
    release = threading.Event()
    started = threading.Event()

    def get_weather(city: str) -> str:
        if city == "city0":
            started.set()
            release.wait(60)  # hangs (until the test lets it go)
        return city

    loop = run_tools(service, ask(), {"get_weather": get_weather}, parallel=True)
    def close_once_it_hangs() -> None:
        started.wait(10)
        time.sleep(0.1)
        loop.close()

    closer = threading.Thread(target=close_once_it_hangs)
    closer.start()
    began = time.monotonic()
    try:
        with pytest.raises(ToolLoopError) as info:
            loop.result()
        assert time.monotonic() - began < 15  # before the fix: waited for the tool forever
    finally:
        release.set()
        closer.join()
    assert info.value.failure.code == "ABORTED"
    outcomes = info.value.steps[0].outcomes
    assert [o.status for o in outcomes] == ["abandoned", "ok"]
    assert outcomes[0].result.is_error and "cancelled while 'get_weather' was running" in outcomes[0].result.content
    assert [m.role for m in info.value.history] == ["user", "assistant", "tool", "tool"]  # every call answered
    assert len(server.requests) == 1


def test_argument_keys_cannot_reach_more_than_keyword_arguments(server: ReplayServer) -> None:
    class Weather:
        def __init__(self) -> None:
            self.cities: list[str] = []

        def lookup(self, city: str) -> str:
            self.cities.append(city)
            return city

    seen: list[dict[str, Any]] = []

    def anything(**kwargs: Any) -> str:
        seen.append(kwargs)
        return "ok"

    calls = [
        ("call_1", "lookup", json.dumps({"self": "evil", "city": "Oslo"})),
        ("call_2", "anything", json.dumps({"not an identifier": 1, "class": 2, "__init__": 3})),
        ("call_3", "lookup", json.dumps({"city": "Bergen", "**": "x"})),
    ]
    service = local_service(server, [calls_step(calls), text_step("Done.")])
    weather = Weather()
    specs = (ToolSpec("lookup"), ToolSpec("anything"))
    result = run_tools(service, ask(tools=specs), {"lookup": weather.lookup, "anything": anything}).result()
    assert [o.status for o in result.outcomes] == ["raised", "ok", "raised"]
    assert "multiple values for argument 'self'" in result.outcomes[0].result.content
    assert "unexpected keyword argument '**'" in result.outcomes[2].result.content
    assert weather.cities == []  # the bound object was never replaced nor called
    assert seen == [{"not an identifier": 1, "class": 2, "__init__": 3}]  # only as data, in **kwargs


def test_a_model_repeating_the_same_call_forever_stops_at_max_steps(server: ReplayServer) -> None:
    same = calls_step([("call_x", "get_weather", '{"city": "Paris"}')])
    service = local_service(server, [same, same, same, text_step("never sent")])
    weather = Recorder()
    result = run_tools(service, ask(), {"get_weather": weather}, max_steps=3).result()
    assert result.stopped == "max_steps" and len(server.requests) == 3
    assert len(weather.calls) == 2  # the last step's call is answered as not run
    assert result.outcomes[-1].status == "skipped" and "max_steps" in result.outcomes[-1].result.content


def test_a_tool_whose_exception_cannot_be_printed_still_gets_an_error_result(server: ReplayServer) -> None:
    class Hostile(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    def get_weather(city: str) -> str:
        raise Hostile

    service = local_service(server, [calls_step([("call_1", "get_weather", '{"city": "Paris"}')]), text_step("x")])
    result = run_tools(service, ask(), {"get_weather": get_weather}).result()
    assert result.outcomes[0].status == "raised" and "Hostile" in result.outcomes[0].result.content
