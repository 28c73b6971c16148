"""Streaming from a real model server: llama.cpp's llama-server with Qwen2.5-Coder-0.5B.

``scripts/model-server.sh start`` prints the environment these tests read (see
scripts/README-model-server.md for the three instances and the requests that reliably give
tool calls, ``reasoning_content`` and ``<think>`` tags with this model):

- ``DSHSTREAM_TEST_SERVER``: plain chat and JSON tools (real ``delta.tool_calls``);
- ``DSHSTREAM_TEST_THINK_SERVER``: ``--reasoning-format deepseek`` (real ``reasoning_content``);
- ``DSHSTREAM_TEST_TAGS_SERVER``: no reasoning parser (real ``<think>`` tags in content).

Without ``DSHSTREAM_TEST_SERVER`` the module is skipped; a set variable whose server does not
answer fails the tests (``.ci/run`` must really run them). Before the first request the
module waits, bounded (``DSHSTREAM_TEST_READY_TIMEOUT``, default 60 s), for every
configured instance's ``/health`` to answer 200 (llama-server answers 503 while it loads
the model). Every request is short (``max_tokens`` <= 64), greedy (temperature 0),
seeded and sent with ``cache_prompt: false`` (the same cold evaluation on a fresh server and a
warm one, on the native and the portable build), and goes through ``LlmService(check_contract=True)`` with the ``llamacpp`` dialect,
so each stream is also checked against the adapter contract (a breach raises
``CONTRACT_VIOLATION`` while iterating).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pytest

from dshstream import (
    AssembledResponse,
    BlockEnd,
    Finish,
    GenerateOptions,
    JsonSchema,
    Message,
    OpenAIChatAdapter,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    ToolSpec,
    UsageChunk,
)
from dshstream.sansio import check_contract, partial_json
from dshstream._service import LlmService

if TYPE_CHECKING:
    import openai

_SERVER = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")
if not _SERVER:
    pytest.skip(
        "live llama-server tests: DSHSTREAM_TEST_SERVER is not set; start the servers with "
        '`set -a; eval "$(scripts/model-server.sh start)"; set +a` '
        "(see scripts/README-model-server.md)",
        allow_module_level=True,
    )
SERVER: str = _SERVER
THINK_SERVER = os.environ.get("DSHSTREAM_TEST_THINK_SERVER", "").rstrip("/")
TAGS_SERVER = os.environ.get("DSHSTREAM_TEST_TAGS_SERVER", "").rstrip("/")

pytestmark = pytest.mark.live

PROVIDER = "llamacpp"
MODEL = "m"  # llama-server -a m (any model name is accepted)
SEED = 1
TIMEOUT = 60.0  # bounds every request, so a wedged server fails a test instead of hanging it
READY_TIMEOUT = float(os.environ.get("DSHSTREAM_TEST_READY_TIMEOUT", "60"))

HELLO = "Say hello in five words."
COUNT = "Count from 1 to 100, separated by commas."  # always runs to max_tokens=64
WEATHER = "What is the weather in Paris? Use the tool."
GET_WEATHER = ToolSpec(
    name="get_weather",
    description="Get current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
# The few-shot history that makes the 0.5B model think before answering (the README's
# reasoning_content / think_tags_in_content requests); the earlier turn's reasoning goes
# back as reasoning_content (llamacpp dialect passback).
ONE_SHOT = (
    Message.system("Think step by step inside <think></think>, then answer."),
    Message.user("What is 2+2?"),
    Message.assistant([ReasoningBlock("2 plus 2 equals 4."), TextBlock("4")]),
    # A second example: with one, the portable build (GGML_NATIVE=OFF) stops after the
    # reasoning with empty content every time, while the native build answers "8".
    Message.user("What is 1+1?"),
    Message.assistant([ReasoningBlock("1 plus 1 equals 2."), TextBlock("2")]),
    Message.user("What is 3+5?"),
)


# --------------------------------------------------------------------------- helpers


def make_service(base: str) -> LlmService:
    service = LlmService(check_contract=True)
    service.register_adapter([PROVIDER], OpenAIChatAdapter(base_url=f"{base}/v1", dialect="llamacpp"))
    return service


def options(
    messages: Sequence[Message],
    *,
    max_tokens: int = 32,
    tools: Sequence[ToolSpec] = (),
    extra_body: dict[str, Any] | None = None,
    cancel: threading.Event | None = None,
    max_retries: int | None = None,
) -> GenerateOptions:
    assert max_tokens <= 64
    return GenerateOptions(
        provider=PROVIDER,
        model=MODEL,
        messages=tuple(messages),
        tools=tuple(tools),
        max_tokens=max_tokens,
        temperature=0,
        # cache_prompt off: every request is evaluated from a cold KV cache, so the answer is
        # the same on the first request and on a repeat (a reused prompt cache changes the
        # batch shapes, hence the logits, hence the greedy path: a cold server once gave
        # reasoning only where a warm one answered).
        extra_body={"seed": SEED, "cache_prompt": False, **(extra_body or {})},
        cancel=cancel,
        timeout=TIMEOUT,
        max_retries=max_retries,
    )


@dataclass
class Run:
    chunks: list[StreamChunk]
    result: AssembledResponse
    elapsed: float
    first_chunk_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run(service: LlmService, opts: GenerateOptions) -> Run:
    """Stream to the end; the contract is checked live (service) and again on the list."""
    started = time.perf_counter()
    first: float | None = None
    chunks: list[StreamChunk] = []
    with service.stream(opts) as stream:
        for chunk in stream:
            if first is None:
                first = time.perf_counter() - started
            chunks.append(chunk)
        result = stream.result()
    elapsed = time.perf_counter() - started
    assert list(check_contract(chunks)) == chunks
    assert isinstance(chunks[-1], Finish), chunks[-1:]
    return Run(chunks, result, elapsed, first)


def of_type(chunks: Sequence[StreamChunk], kind: type) -> list[Any]:
    return [c for c in chunks if type(c) is kind]


def describe(result: AssembledResponse) -> str:
    return f"finish={result.finish!r} blocks={result.blocks!r}"


def wait_until_ready(bases: Sequence[str], timeout: float) -> None:
    """Poll each server's ``/health`` until it answers 200; fail once ``timeout`` has passed."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    deadline = time.monotonic() + timeout
    for base in bases:
        last = "no answer"
        while True:
            try:
                with opener.open(f"{base}/health", timeout=2) as response:
                    if response.status == 200:
                        break
                    last = f"HTTP {response.status}"
            except urllib.error.HTTPError as exc:  # 503 {"error": "Loading model"}
                last = f"HTTP {exc.code}"
            except OSError as exc:
                last = repr(exc)
            if time.monotonic() >= deadline:
                pytest.fail(f"{base}/health did not answer 200 within {timeout:.0f}s (last: {last})")
            time.sleep(0.25)


@pytest.fixture(scope="module", autouse=True)
def servers_ready() -> None:
    wait_until_ready([base for base in (SERVER, THINK_SERVER, TAGS_SERVER) if base], READY_TIMEOUT)


@pytest.fixture(scope="module")
def service() -> LlmService:
    return make_service(SERVER)


@pytest.fixture(scope="module")
def think_service() -> LlmService:
    if not THINK_SERVER:
        pytest.skip("DSHSTREAM_TEST_THINK_SERVER is not set (the --reasoning-format deepseek instance)")
    return make_service(THINK_SERVER)


@pytest.fixture(scope="module")
def tags_service() -> LlmService:
    if not TAGS_SERVER:
        pytest.skip("DSHSTREAM_TEST_TAGS_SERVER is not set (the no-reasoning-parser instance)")
    return make_service(TAGS_SERVER)


@pytest.fixture(scope="module")
def full_count(service: LlmService) -> Run:
    """An uninterrupted 64-token generation: the yardstick for 'freed promptly'."""
    done = run(service, options([Message.user(COUNT)], max_tokens=64))
    assert done.result.finish.kind == "max-tokens", describe(done.result)
    assert done.result.usage is not None and done.result.usage.output_tokens == 64
    return done


# Greedy, seeded and cold-cached, a request's answer is the same every time (see
# ``options``): the requests several tests read are made once per module.


@pytest.fixture(scope="module")
def weather_call(service: LlmService) -> Run:
    """The WEATHER request with its tool: one streamed call (tools, differential)."""
    return run(service, options([Message.user(WEATHER)], max_tokens=64, tools=[GET_WEATHER]))


@pytest.fixture(scope="module")
def think_one_shot(think_service: LlmService) -> Run:
    """ONE_SHOT on the ``--reasoning-format deepseek`` instance (reasoning, differential)."""
    return run(think_service, options(ONE_SHOT, max_tokens=64))


@pytest.fixture(scope="module")
def tags_one_shot(tags_service: LlmService) -> Run:
    """ONE_SHOT on the instance without a reasoning parser (think tags, differential)."""
    return run(tags_service, options(ONE_SHOT, max_tokens=64))


def assert_server_free(service: LlmService, full: Run) -> float:
    """A short request right now finishes well before a full generation would have ended:
    the single slot (-np 1) is not still busy with an abandoned request."""
    quick = run(service, options([Message.user(HELLO)], max_tokens=3))
    assert quick.result.finish.kind == "max-tokens", describe(quick.result)
    assert quick.result.text
    assert quick.elapsed < 0.5 * full.elapsed, (
        f"the next request took {quick.elapsed:.3f}s; a whole 64-token generation takes "
        f"{full.elapsed:.3f}s, so the server was still busy with the abandoned stream"
    )
    return quick.elapsed


# --------------------------------------------------------------------------- plain chat


def test_plain_chat_text_usage_stop(service: LlmService) -> None:
    done = run(service, options([Message.user(HELLO)]))
    result = done.result
    assert result.finish.kind == "stop", describe(result)
    assert result.finish.raw == "stop"
    assert result.failure is None
    assert [type(b) for b in result.blocks] == [TextBlock]
    assert result.text.strip()
    assert "".join(c.text for c in of_type(done.chunks, TextDelta)) == result.text
    # include_usage: exactly one UsageChunk, right before Finish; the chunk's non-standard
    # ``timings`` object is ignored.
    usages = of_type(done.chunks, UsageChunk)
    assert len(usages) == 1 and done.chunks[-2] is usages[0]
    usage = result.usage
    assert usage is not None
    assert usage.total_input_tokens > 0 and usage.input_tokens >= 1  # llama.cpp re-evaluates >= 1
    assert 0 < usage.output_tokens <= 32
    assert usage.cost is None
    assert result.metadata is not None
    assert result.metadata.model == MODEL
    assert (result.metadata.response_id or "").startswith("chatcmpl-")


def test_list_models(service: LlmService) -> None:
    models = service.list_models(PROVIDER)
    assert MODEL in [m.id for m in models], models


def test_max_tokens_cut(service: LlmService) -> None:
    done = run(service, options([Message.user(HELLO)], max_tokens=3))
    result = done.result
    assert result.finish.kind == "max-tokens", describe(result)
    assert result.finish.raw == "length"
    assert result.text
    assert result.usage is not None and result.usage.output_tokens == 3


def test_stop_sequence(service: LlmService) -> None:
    done = run(
        service,
        GenerateOptions(
            provider=PROVIDER,
            model=MODEL,
            messages=(Message.user(COUNT),),
            max_tokens=64,
            temperature=0,
            stop=("5,",),
            extra_body={"seed": SEED, "cache_prompt": False},
            timeout=TIMEOUT,
        ),
    )
    result = done.result
    assert result.finish.kind == "stop", describe(result)
    assert result.text.startswith("1, 2") and "5," not in result.text


# --------------------------------------------------------------------------- tools


def test_tool_call_end_to_end(service: LlmService, weather_call: Run) -> None:
    history = [Message.user(WEATHER)]
    done = weather_call
    result = done.result
    assert result.finish.kind == "tool-calls", describe(result)
    assert result.finish.raw == "tool_calls"
    deltas: list[ToolCallDelta] = of_type(done.chunks, ToolCallDelta)
    assert len(deltas) > 1, "the arguments should arrive in several streamed fragments"
    assert deltas[0].name == "get_weather" and deltas[0].id
    assert len(result.tool_calls) == 1 and not result.text
    call = result.tool_calls[0]
    assert call.name == "get_weather"
    assert call.id == deltas[0].id
    assert not call.arguments_truncated and call.raw_arguments is None
    assert call.arguments == "".join(d.arguments_delta for d in deltas)
    arguments = json.loads(call.arguments)
    assert set(arguments) == {"city"}
    assert isinstance(arguments["city"], str) and "paris" in arguments["city"].lower()
    ends = of_type(done.chunks, BlockEnd)
    assert [e.block for e in ends] == [call]
    assert result.usage is not None and result.usage.output_tokens > 0

    # Second turn: the assistant turn as dshstream assembled it, plus the tool's result.
    turn = result.message()
    assert turn.role == "assistant" and turn.tool_calls == (call,)
    history += [turn, Message.tool_result(call.id, '{"temp_c": 18}')]
    answer = run(service, options(history, max_tokens=64, tools=[GET_WEATHER])).result
    # greedy and seeded: one short sentence ("The temperature in Paris is 18 degrees
    # Celsius.", 12 tokens), well inside max_tokens
    assert (answer.finish.kind, answer.finish.raw) == ("stop", "stop"), describe(answer)
    assert answer.tool_calls == ()
    assert answer.text.strip()
    assert "18" in answer.text, answer.text


def test_max_tokens_cut_inside_a_tool_call(service: LlmService) -> None:
    # 14 tokens: the call's name and '{"city": "' have streamed, the value has not.
    done = run(service, options([Message.user(WEATHER)], max_tokens=14, tools=[GET_WEATHER]))
    result = done.result
    assert result.finish.kind == "max-tokens", describe(result)
    assert of_type(done.chunks, ToolCallDelta), "the call should have started streaming"
    ended = [e.block for e in of_type(done.chunks, BlockEnd)]
    assert len(ended) == 1 and isinstance(ended[0], ToolCallBlock), ended
    assert ended[0].name == "get_weather" and ended[0].arguments_truncated
    assert result.tool_calls == ()  # a truncated call is never handed out to run


# --------------------------------------------------------------------------- reasoning


def test_reasoning_content_from_think_instance(think_one_shot: Run) -> None:
    done = think_one_shot
    result = done.result
    assert result.finish.kind == "stop", describe(result)
    assert [type(b) for b in result.blocks] == [ReasoningBlock, TextBlock]
    assert of_type(done.chunks, ReasoningDelta), "reasoning_content should stream as ReasoningDelta"
    assert result.reasoning.strip()
    assert "8" in result.reasoning
    assert result.text.strip() == "8"
    for text in (result.text, result.reasoning):
        assert "<think>" not in text and "</think>" not in text


def test_reasoning_round_trip(think_service: LlmService, think_one_shot: Run) -> None:
    # The assembled turn (with its ReasoningBlock) goes back as reasoning_content.
    first = think_one_shot.result
    assert first.reasoning
    turn = first.message()
    assert [type(b) for b in turn.blocks] == [ReasoningBlock, TextBlock]
    history = [*ONE_SHOT, turn, Message.user("What is 4+4?")]
    second = run(think_service, options(history, max_tokens=64)).result
    assert second.finish.kind == "stop", describe(second)
    assert second.reasoning.strip() and second.text.strip()


def test_think_tags_from_tags_instance(tags_one_shot: Run) -> None:
    # The tags arrive split across chunks ("<th", "ink", ">\n" ... "</", "think", ">\n\n");
    # the llamacpp dialect strips them into reasoning by default.
    done = tags_one_shot
    result = done.result
    assert result.finish.kind == "stop", describe(result)
    assert [type(b) for b in result.blocks] == [ReasoningBlock, TextBlock]
    assert result.reasoning.strip()
    assert "8" in result.reasoning
    assert result.text.strip() == "8"
    for text in (result.text, result.reasoning):
        assert "<think>" not in text and "</think>" not in text
        assert "<th" not in text and "</" not in text


# --------------------------------------------------------------------------- stopping early


def test_client_break_frees_the_server(service: LlmService, full_count: Run) -> None:
    started = time.perf_counter()
    seen: list[StreamChunk] = []
    with service.stream(options([Message.user(COUNT)], max_tokens=64)) as stream:
        for chunk in stream:
            seen.append(chunk)
            if type(chunk) is TextDelta:
                break
    broke_after = time.perf_counter() - started
    assert stream.done
    partial = stream.result()  # after close: what had arrived, finish aborted
    assert partial.finish.kind == "aborted", describe(partial)
    assert partial.failure is not None and partial.failure.code == "ABORTED"
    assert partial.text and partial.text == "".join(c.text for c in of_type(seen, TextDelta))
    assert broke_after < 0.5 * full_count.elapsed
    assert_server_free(service, full_count)


def test_cancel_from_another_thread(service: LlmService, full_count: Run) -> None:
    cancel = threading.Event()
    timers: list[threading.Timer] = []
    started = time.perf_counter()
    chunks: list[StreamChunk] = []
    stream = service.stream(options([Message.user(COUNT)], max_tokens=64, cancel=cancel))
    for chunk in stream:
        if not timers:
            timer = threading.Timer(0.05, cancel.set)
            timer.start()
            timers.append(timer)
        chunks.append(chunk)
    elapsed = time.perf_counter() - started
    for timer in timers:
        timer.join()
    result = stream.result()
    assert list(check_contract(chunks)) == chunks
    assert result.finish.kind == "aborted", describe(result)
    assert result.failure is not None and result.failure.code == "ABORTED"
    assert not result.failure.retryable
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.kind == "aborted"
    # partial output kept: a prefix of what the whole generation says
    assert result.text and full_count.result.text.startswith(result.text)
    assert len(result.text) < len(full_count.result.text)
    assert elapsed < 0.5 * full_count.elapsed, f"cancel took {elapsed:.3f}s"
    assert_server_free(service, full_count)


# --------------------------------------------------------------------------- errors


def test_http_400_is_invalid_request(service: LlmService) -> None:
    # extra_body is applied last, so it replaces the messages array with a string.
    done = run(service, options([Message.user(HELLO)], extra_body={"messages": "bad"}))
    result = done.result
    assert len(done.chunks) == 1, done.chunks  # nothing but the terminal Finish
    assert result.finish.kind == "error", describe(result)
    failure = result.failure
    assert failure is not None
    assert failure.code == "INVALID_REQUEST"
    assert failure.status == 400
    assert not failure.retryable
    assert failure.provider == PROVIDER
    assert "array" in (failure.detail or "")
    assert result.blocks == () and result.usage is None


@pytest.mark.parametrize(
    ("prompt", "partial_call"),
    [
        # The first argument fragment streams as a tool call, then the in-band error.
        pytest.param("What is the weather in Paris and in Rome?", True, id="after-a-partial-call"),
        # The README's request: only the role chunk comes before the error.
        pytest.param(
            "What is the weather in Paris and in Rome? Call the tool once per city.",
            False,
            id="before-any-content",
        ),
    ],
)
def test_in_band_error_is_an_error_finish(
    service: LlmService, prompt: str, partial_call: bool
) -> None:
    # llama-server answers 200 and then sends
    # data: {"error":{"code":500,"message":"...does not match the expected peg-native format"...}}
    # with no [DONE]. max_retries=0: an error before any chunk is retryable (SERVER), and a
    # greedy retry would only repeat it. (Its connection is pooled from the tests before:
    # llama-server's Keep-Alive hint keeps a send off one it is about to close, pool rule 5.)
    done = run(
        service,
        options(
            [Message.user(prompt)],
            max_tokens=64,
            tools=[GET_WEATHER],
            extra_body={"parallel_tool_calls": True, "tool_choice": "auto"},
            max_retries=0,
        ),
    )
    result = done.result
    assert result.finish.kind == "error", describe(result)
    failure = result.failure
    assert failure is not None
    assert failure.code == "SERVER", describe(result)
    assert failure.status == 500
    assert "peg-native" in (failure.detail or "")
    if partial_call:
        # partial output is kept, and the cut-short call is flagged as unsafe to run
        assert of_type(done.chunks, ToolCallDelta)
        assert len(result.tool_calls) == 1, describe(result)
        call = result.tool_calls[0]
        assert call.name == "get_weather"
        assert call.arguments_truncated
        json.loads(call.arguments)  # repaired into valid JSON
        assert call.raw_arguments is not None and call.raw_arguments.startswith("{")
    else:
        assert done.chunks == [done.chunks[-1]] and result.blocks == ()


# --------------------------------------------------------------------------- differential


@dataclass
class SdkRun:
    content: str = ""
    reasoning: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@pytest.fixture(scope="module")
def sdk() -> Iterator[openai.OpenAI]:
    openai_module = pytest.importorskip("openai", reason="the differential check needs the openai SDK")
    client: openai.OpenAI = openai_module.OpenAI(base_url=f"{SERVER}/v1", api_key="x", max_retries=0)
    yield client
    client.close()


def sdk_stream(
    client: openai.OpenAI,
    base: str,
    messages: list[Any],
    *,
    max_tokens: int,
    tools: Sequence[ToolSpec] = (),
) -> SdkRun:
    """The same request through the official SDK, deltas joined by hand."""
    extra: dict[str, Any] = {"seed": SEED, "cache_prompt": False}
    if tools:
        extra["tools"] = [t.to_openai() for t in tools]
    stream = client.with_options(base_url=f"{base}/v1", timeout=TIMEOUT).chat.completions.create(
        model=MODEL,
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
        max_tokens=max_tokens,
        temperature=0,
        extra_body=extra,
    )
    out = SdkRun()
    with stream:
        for chunk in stream:
            if chunk.usage is not None:
                out.prompt_tokens = chunk.usage.prompt_tokens
                out.completion_tokens = chunk.usage.completion_tokens
            for choice in chunk.choices:
                delta = choice.delta
                out.content += delta.content or ""
                extra_fields = delta.model_extra or {}
                out.reasoning += extra_fields.get("reasoning_content") or ""
                for call in delta.tool_calls or ():
                    entry = out.calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                    entry["id"] = call.id or entry["id"]
                    if call.function is not None:
                        entry["name"] += call.function.name or ""
                        entry["arguments"] += call.function.arguments or ""
                if choice.finish_reason:
                    out.finish_reason = choice.finish_reason
    return out


def test_differential_plain_text(service: LlmService, sdk: openai.OpenAI) -> None:
    theirs = sdk_stream(sdk, SERVER, [{"role": "user", "content": HELLO}], max_tokens=32)
    ours = run(service, options([Message.user(HELLO)], max_tokens=32)).result
    assert theirs.content and ours.text == theirs.content
    assert theirs.finish_reason == ours.finish.raw == "stop"
    assert ours.usage is not None
    assert ours.usage.total_input_tokens == theirs.prompt_tokens
    assert ours.usage.output_tokens == theirs.completion_tokens


def test_differential_tool_call(weather_call: Run, sdk: openai.OpenAI) -> None:
    theirs = sdk_stream(
        sdk, SERVER, [{"role": "user", "content": WEATHER}], max_tokens=64, tools=[GET_WEATHER]
    )
    ours = weather_call.result
    assert theirs.finish_reason == ours.finish.raw == "tool_calls"
    assert list(theirs.calls) == [0]
    assert [(c.name, c.arguments) for c in ours.tool_calls] == [
        (theirs.calls[0]["name"], theirs.calls[0]["arguments"])
    ]
    assert json.loads(ours.tool_calls[0].arguments) == json.loads(theirs.calls[0]["arguments"])
    assert ours.text == theirs.content == ""


def test_differential_reasoning_content(think_one_shot: Run, sdk: openai.OpenAI) -> None:
    theirs = sdk_stream(sdk, THINK_SERVER, one_shot_wire(), max_tokens=64)
    ours = think_one_shot.result
    assert theirs.reasoning and ours.reasoning == theirs.reasoning
    assert ours.text == theirs.content


def test_differential_think_tags(tags_one_shot: Run, sdk: openai.OpenAI) -> None:
    theirs = sdk_stream(sdk, TAGS_SERVER, one_shot_wire(), max_tokens=64)
    ours = tags_one_shot.result
    assert "<think>" in theirs.content and not theirs.reasoning
    # nothing lost or added: the raw content is exactly the tags around our two blocks
    assert theirs.content == f"<think>{ours.reasoning}</think>{ours.text}"


def one_shot_wire() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": ONE_SHOT[0].text},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4", "reasoning_content": "2 plus 2 equals 4."},
        {"role": "user", "content": "What is 1+1?"},
        {"role": "assistant", "content": "2", "reasoning_content": "1 plus 1 equals 2."},
        {"role": "user", "content": "What is 3+5?"},
    ]


# --------------------------------------------------------------------------- structured output

CITY = JsonSchema(
    "city",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string"},
            "population": {"type": "integer"},
        },
        "required": ["city", "country", "population"],
        "additionalProperties": False,
    },
)


def extends(before: Any, after: Any) -> bool:
    """Whether ``after`` only adds to ``before``: keys and items kept, strings only grown,
    scalars unchanged (``None``: nothing settled yet)."""
    if before is None:
        return True
    if isinstance(before, dict):
        if not isinstance(after, dict):
            return False
        return all(k in after and extends(v, after[k]) for k, v in before.items())
    if isinstance(before, list):
        if not isinstance(after, list):
            return False
        return len(after) >= len(before) and all(map(extends, before, after))
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    return bool(type(before) is type(after) and before == after)


def test_json_schema_output_streams_monotone_snapshots(service: LlmService) -> None:
    """The llamacpp dialect sends the schema as llama-server's top-level ``json_schema``
    (a grammar): the streamed text is JSON that validates, and every partial-JSON snapshot
    only adds to the one before."""
    prompt = "The capital of France: give the city, its country and its population."
    opts = replace(options([Message.user(prompt)], max_tokens=64), response_format=CITY)
    chunks: list[StreamChunk] = []

    def tee(stream: Iterator[StreamChunk]) -> Iterator[StreamChunk]:
        for chunk in stream:
            chunks.append(chunk)
            yield chunk

    with service.stream(opts) as stream:
        snapshots = list(partial_json(tee(iter(stream))))
        result = stream.result()
    assert list(check_contract(chunks)) == chunks
    assert result.finish.kind == "stop", describe(result)
    answer = json.loads(result.text)
    assert set(answer) == {"city", "country", "population"}
    assert isinstance(answer["city"], str) and answer["city"]
    assert isinstance(answer["country"], str) and answer["country"]
    assert type(answer["population"]) is int
    assert len(snapshots) >= 3
    assert snapshots[-1].done and not snapshots[-1].truncated and snapshots[-1].value == answer
    assert not any(s.done for s in snapshots[:-1])
    for before, after in zip(snapshots, snapshots[1:]):
        assert extends(before.value, after.value), (before, after)


# --------------------------------------------------------------------------- the tool loop


def test_tool_loop_runs_the_call_and_answers(service: LlmService) -> None:
    """run_tools against the real server: the call streams, runs with the model's
    arguments, its result goes back, and the model answers with it."""
    from dshstream import run_tools

    ran: list[str] = []

    def get_weather(city: str) -> dict[str, Any]:
        ran.append(city)
        return {"city": city, "temp_c": 18}

    loop = run_tools(service, options([Message.user(WEATHER)], max_tokens=64, tools=[GET_WEATHER]),
                     {"get_weather": get_weather}, max_steps=3)
    per_step: list[list[StreamChunk]] = [[]]
    for chunk in loop:
        per_step[-1].append(chunk)
        if isinstance(chunk, Finish):
            per_step.append([])
    result = loop.result()
    assert per_step.pop() == []
    for chunks in per_step:  # each step is an ordinary stream that keeps the contract
        assert list(check_contract(chunks)) == chunks
    assert [chunks[-1].reason.kind for chunks in per_step] == ["tool-calls", "stop"]  # type: ignore[union-attr]
    assert result.stopped == "done" and len(result.steps) == 2
    assert len(ran) == 1 and "paris" in ran[0].lower()
    assert [o.status for o in result.outcomes] == ["ok"]
    assert [m.role for m in result.new_messages] == ["assistant", "tool", "assistant"]
    assert "18" in result.text, result.text
    assert result.usage is not None
    assert result.usage.output_tokens == sum(
        s.response.usage.output_tokens for s in result.steps if s.response.usage is not None
    )


def test_tool_loop_refuses_a_call_cut_at_max_tokens(service: LlmService) -> None:
    """14 tokens cut the call inside its arguments: the loop never runs it and tells the
    model so in an error result (the server accepts the history that carries it)."""
    from dshstream import run_tools

    ran: list[str] = []
    loop = run_tools(service, options([Message.user(WEATHER)], max_tokens=14, tools=[GET_WEATHER]),
                     {"get_weather": lambda city: ran.append(city)}, max_steps=2)
    result = loop.result()
    assert ran == []
    first = result.steps[0]
    assert first.response.finish.kind == "max-tokens", describe(first.response)
    assert [o.status for o in first.outcomes] == ["truncated"]
    assert first.outcomes[0].result.is_error and "cut off" in first.outcomes[0].result.content
    assert result.history[1].tool_calls == (first.outcomes[0].call,)
    assert result.stopped in ("done", "max_steps")
