"""LiteLLMAdapter: the library-backed second implementation of the adapter contract.

LiteLLM's ``openai/`` (and, where its generic one loses data, ``xai/`` and ``mistral/``) and
``anthropic/`` providers are pointed at the loopback replay server and replay the recorded
corpus under ``check_contract``; a differential test runs the native adapter on the same
bytes and every disagreement is either fixed (the adapter drops what LiteLLM made up) or
listed with its reason in :data:`KNOWN`. Failures before and during the stream end with one
classified finish (never a throw), with keys redacted; cancel, ``close()`` and the clocks end
a stalled stream promptly; the attribution ``User-Agent`` is proven on the wire.

The LiteLLM tests skip where the ``litellm`` extra is not installed; the translator and
classification tests run everywhere. Every test here may only reach 127.0.0.1 (a socket
guard fails it otherwise), and LiteLLM never downloads its price map.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.litellm import LiteLLMAdapter, failure_from_exception
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._core.assembler import AssembledResponse
from dshstream._core.attribution import DEFAULT_IDENTITY, AppIdentity
from dshstream._core.dialects import DIALECTS
from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._core.types import (
    BlockEnd,
    Finish,
    LlmFailure,
    ReasoningBlock,
    TextDelta,
    ToolCallBlock,
    UsageChunk,
)
from dshstream._core.wires.litellm import LiteLLMTranslator
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import all_fixtures, fixture_bytes, fixture_wire
from rawserver import CLOSE_HEADERS, RawServer

KEY = "sk-litellm-loopback-test-key-0123456789"  # CANARY: a fake key for the test
ANTHROPIC_MODEL = "claude-sonnet-4-5"
HAS_LITELLM = importlib.util.find_spec("litellm") is not None
TEXT = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
REST = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


# --------------------------------------------------------------------------- guards


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fail the test if anything (LiteLLM included) connects or resolves beyond 127.0.0.1."""
    attempts: list[str] = []
    real_connect, real_connect_ex, real_getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

    def loopback(address: object) -> bool:
        host = address[0] if isinstance(address, tuple) else address
        return isinstance(host, str) and (host in ("127.0.0.1", "localhost", "::1") or host.startswith("/"))

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not loopback(address):
            attempts.append(repr(address))
            raise OSError(f"test guard: no connection to {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not loopback(address):
            attempts.append(repr(address))
            return 111
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not loopback((host,)) and host is not None:
            attempts.append(f"resolve {host!r}")
            raise socket.gaierror(f"test guard: no lookup of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield attempts
    assert attempts == [], f"the test reached beyond loopback: {attempts}"


@pytest.fixture(scope="module")
def lit() -> Any:
    """LiteLLM, offline and quiet (the module is skipped where it is not installed)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before the import: no download
    module = pytest.importorskip("litellm")
    module.telemetry = False
    module.suppress_debug_info = True
    return module


# --------------------------------------------------------------------------- helpers


def adapter_for(server_url: str, prefix: str = "openai/", **options: Any) -> LiteLLMAdapter:
    suffix = "" if prefix == "anthropic/" else "/v1"
    options.setdefault("api_key", KEY)
    return LiteLLMAdapter(model_prefix=prefix, base_url=f"{server_url}{suffix}", **options)


def service_with(adapter: Any, route: str = "lit") -> LlmService:
    service = LlmService(check_contract=True)
    service.register_adapter([route], adapter)
    return service


def ask(model: str = "gpt-4o", route: str = "lit", **fields: Any) -> GenerateOptions:
    fields.setdefault("messages", (Message.user("hi"),))
    return GenerateOptions(provider=route, model=model, **fields)


def run(server: ReplayServer, body: bytes | Route, prefix: str = "openai/", model: str = "gpt-4o",
        **fields: Any) -> AssembledResponse:
    server.add("/", body if isinstance(body, Route) else Route(body=body))
    return service_with(adapter_for(server.url, prefix)).stream(ask(model, **fields)).result()


def litellm_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "dshstream-litellm" and t.is_alive()]


def wait_until(predicate: Callable[[], bool], limit: float = 10.0) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# --------------------------------------------------------------------------- packaging


def test_import_dshstream_never_imports_litellm() -> None:
    """Neither the package, the export nor building an adapter imports LiteLLM (seconds of
    import time); only the first stream does."""
    code = (
        "import sys, dshstream\n"
        "cls = dshstream.LiteLLMAdapter\n"
        "assert 'litellm' not in sys.modules\n"
        "if cls.__module__ == 'dshstream':\n"
        "    try:\n"
        "        cls(model_prefix='openai/', api_key='k')\n"
        "    except dshstream.ConfigurationError:\n"
        "        pass\n"
        "print('litellm' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_missing_extra_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "litellm" else real(name, *a))
    with pytest.raises(ConfigurationError) as caught:
        LiteLLMAdapter(model_prefix="openai/")
    assert "pip install 'dshstream[litellm]'" in str(caught.value)


@pytest.mark.skipif(not HAS_LITELLM, reason="the litellm extra is not installed")
def test_settings_are_validated_and_repr_hides_the_key() -> None:
    with pytest.raises(ConfigurationError, match="LiteLLMAdapter.max_retries"):
        LiteLLMAdapter(max_retries=-1)
    with pytest.raises(ConfigurationError, match="LiteLLMAdapter.headers"):
        LiteLLMAdapter(headers={"x-bad": "a\r\nb"})
    adapter = LiteLLMAdapter(model_prefix="openai/", api_key=KEY, base_url="http://127.0.0.1:9/v1")
    assert KEY not in repr(adapter) and "api_key=<set>" in repr(adapter)


# --------------------------------------------------------------------------- the translator (no LiteLLM)


def chunk(delta: dict[str, Any], finish: str | None = None, **top: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta}
    if finish:
        choice["finish_reason"] = finish
    return {"id": "chatcmpl-1", "model": "m", "choices": [choice], **top}


def test_translator_merges_thinking_blocks_into_a_signed_reasoning_block_and_replay_state() -> None:
    translator = LiteLLMTranslator(provider="lit")
    out = []
    for piece in ("Let me", " think."):
        out += translator.feed_chunk(chunk({"reasoning_content": piece,
                                            "thinking_blocks": [{"type": "thinking", "thinking": piece, "index": 0}]}))
    out += translator.feed_chunk(chunk({"reasoning_content": "",
                                        "thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "sig-1",
                                                             "index": 0}]}))
    out += translator.feed_chunk(chunk({"thinking_blocks": [{"type": "redacted_thinking", "data": "opaque", "index": 1}]}))
    out += translator.feed_chunk(chunk({"content": "Hi"}, finish="stop"))
    out += translator.feed_chunk({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}})
    out += translator.end()
    blocks = [c.block for c in out if isinstance(c, BlockEnd)]
    assert blocks[0] == ReasoningBlock("Let me think.", signature="sig-1")
    finish = out[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "stop"
    assert finish.replay_state == {
        "wire": "litellm",
        "thinking_blocks": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
        ],
    }
    usage = [c for c in out if isinstance(c, UsageChunk)]
    assert usage[0].usage.input_tokens == 9 and usage[0].usage.output_tokens == 4


def test_translator_takes_thinking_text_that_came_without_reasoning_content() -> None:
    translator = LiteLLMTranslator(provider="lit")
    out = translator.feed_chunk(chunk({"thinking_blocks": [{"type": "thinking", "thinking": "quiet"}]}))
    out += translator.feed_chunk(chunk({"thinking_blocks": [{"type": "thinking", "thinking": " thought"}]}))
    out += translator.feed_chunk(chunk({"thinking_blocks": [{"type": "thinking", "thinking": "", "signature": "s"}]}))
    out += translator.feed_chunk(chunk({"content": "ok"}, finish="stop"))
    out += translator.end()
    finish = out[-1]
    assert isinstance(finish, Finish)
    assert finish.replay_state["thinking_blocks"] == [{"type": "thinking", "thinking": "quiet thought", "signature": "s"}]
    assert [c.block for c in out if isinstance(c, BlockEnd)][0] == ReasoningBlock("quiet thought", signature="s")


def test_translator_end_without_a_finish_reason_is_stream_closed_never_stop() -> None:
    translator = LiteLLMTranslator(provider="lit")
    out = translator.feed_chunk(chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": '{"a":'}}]}))
    out += translator.end()
    finish = out[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == "STREAM_CLOSED"
    (call,) = [c.block for c in out if isinstance(c, BlockEnd)]
    assert isinstance(call, ToolCallBlock) and call.arguments_truncated


def test_translator_end_with_aborted_keeps_partial_output_and_usage() -> None:
    translator = LiteLLMTranslator(provider="lit")
    translator.feed_chunk(chunk({"content": "partial"}))
    translator.feed_chunk({"id": "x", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}})
    failure = LlmFailure(code="ABORTED", message="lit: stream cancelled by the caller", category="unknown", retryable=False)
    out = translator.end_with(failure, "aborted")
    assert [type(c).__name__ for c in out] == ["BlockEnd", "UsageChunk", "Finish"]
    finish = out[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted" and finish.reason.failure == failure
    assert translator.end_with(failure, "aborted") == []  # ended once


# --------------------------------------------------------------------------- classification (no LiteLLM)


class _FakeResponse:
    def __init__(self, status: int, text: str, headers: dict[str, str]) -> None:
        self.status_code, self.text, self.headers = status, text, headers


class RateLimitError(Exception):  # named as LiteLLM's: classification reads class names
    def __init__(self) -> None:
        super().__init__("litellm.RateLimitError: slow down")
        self.status_code = 429
        self.message = "litellm.RateLimitError: slow down"
        self.response = _FakeResponse(429, '{"error":{"message":"Rate limit reached","type":"requests"}}',
                                      {"retry-after": "7", "x-request-id": "req_42"})


class ContextWindowExceededError(Exception):
    status_code = 400
    message = "litellm.ContextWindowExceededError: AnthropicException - prompt is too long for this model"


class APIConnectionError(Exception):
    status_code = 500  # LiteLLM's placeholder for "no HTTP status"


class MidStreamFallbackError(Exception):
    status_code = 500

    def __init__(self, original: BaseException) -> None:
        super().__init__("litellm.MidStreamFallbackError")
        self.original_exception = original


def test_classification_uses_status_body_and_headers_like_an_http_failure() -> None:
    failure = failure_from_exception(RateLimitError(), provider="lit", secrets=(KEY,))
    assert (failure.code, failure.status, failure.retry_after, failure.request_id) == ("RATE_LIMIT", 429, 7.0, "req_42")
    assert failure.message == "lit: rate limited (RATE_LIMIT, HTTP 429)"
    assert failure.detail is not None and "Rate limit reached" in failure.detail


def test_classification_keeps_litellm_verdicts_and_placeholder_statuses() -> None:
    assert failure_from_exception(ContextWindowExceededError(), provider="lit").code == "CONTEXT_WINDOW_EXCEEDED"
    dropped = failure_from_exception(APIConnectionError("connection reset"), provider="lit")
    assert (dropped.code, dropped.status) == ("TRANSPORT", None)
    cut = failure_from_exception(
        MidStreamFallbackError(APIConnectionError("OpenAIException - Stream ended before a finish_reason was received")),
        provider="lit",
        mid_stream=True,
    )
    assert cut.code == "STREAM_CLOSED"
    assert failure_from_exception(TimeoutError("read timed out"), provider="lit").code == "TIMEOUT"
    odd = failure_from_exception(ValueError(f"bad argument near {KEY}"), provider="lit", secrets=(KEY,))
    assert odd.code == "UNKNOWN" and odd.detail is not None and KEY not in odd.detail


# --------------------------------------------------------------------------- the corpus, differentially

#: LiteLLM's own provider for a corpus directory where its generic ``openai/`` one loses data:
#: xAI bills reasoning outside ``completion_tokens`` and the ``openai/`` provider rewrites
#: ``total_tokens`` (the native dialect's evidence) to prompt + completion, under-reporting
#: output; Mistral's thinking arrives as content *parts*, which ``openai/`` drops.
LITELLM_PROVIDER = {"xai": "xai/", "mistral": "mistral/"}
MODELS = {"xai": "grok-3-mini", "mistral": "magistral-small-latest"}
#: LiteLLM maps every finish word to OpenAI's (``map_finish_reason``); the kind agrees
OPENAI_WORD = {"end_turn": "stop", "stop_sequence": "stop", "pause_turn": "stop", "tool_use": "tool_calls",
               "max_tokens": "length", "completed": "stop"}
#: every disagreement with the native adapter that is not fixed, and why
KNOWN: dict[str, str] = {
    "openai/refusal.sse": "LiteLLM drops streamed `refusal` deltas (it keeps only the first, empty one), so no "
    "content arrives: we end with EMPTY_RESPONSE (with diagnostics), never a silent empty `stop`",
    "openai/refusal_logprobs.sse": "as openai/refusal.sse",
    "openrouter/midstream_error_chunk.sse": "LiteLLM raises at the in-band error, before the trailing usage chunk "
    "reaches it: the failure agrees, the usage is lost",
    "openrouter/tool_call_kimi_k2_novita.sse": "no finish_reason at all before [DONE]; the OpenAI SDK swallows [DONE], "
    "so LiteLLM cannot tell a complete stream from a cut one and raises 'Stream ended before a finish_reason': "
    "STREAM_CLOSED with the (complete) tool call kept",
    "openrouter/reasoning_details_claude.sse": "LiteLLM's chunks carry no OpenRouter `reasoning_details`, so the "
    "reasoning block has no signature (text and reasoning agree)",
    "mistral/magistral_thinking_content_parts.sse": "LiteLLM's mistral provider marks its thinking blocks with the "
    "placeholder signature 'mistral' (kept: LiteLLM takes its own blocks back on replay)",
}
#: not chat completions: the legacy /completions wire is LiteLLM's text-completion-openai provider
EXCLUDED = {"openai/legacy_completions_text.sse"}
_OTHER_WIRES = ("anthropic", "gemini", "openai-responses", "bedrock-converse", "bedrock-invoke")
CHAT_CORPUS = [n for n in all_fixtures() if fixture_wire(n) not in _OTHER_WIRES and n not in EXCLUDED]
ANTHROPIC_CORPUS = [n for n in all_fixtures() if fixture_wire(n) == "anthropic"]


@dataclass(frozen=True)
class Outcome:
    """What the differential compares: everything a caller acts on."""

    text: str
    reasoning: str
    calls: tuple[tuple[str, str, str, bool], ...]
    usage: tuple[int, int, int | None, int | None, int | None, float | None] | None
    kind: str
    raw: str | None
    code: str | None
    signature: str | None

    @classmethod
    def of(cls, result: AssembledResponse) -> Outcome:
        u = result.usage
        signatures = [b.signature for b in result.blocks if isinstance(b, ReasoningBlock) and b.signature]
        return cls(
            text=result.text,
            reasoning=result.reasoning,
            calls=tuple((c.id, c.name, c.arguments, c.arguments_truncated) for c in result.tool_calls),
            usage=None if u is None else (u.input_tokens, u.output_tokens, u.cache_read_tokens,
                                          u.cache_write_tokens, u.reasoning_tokens, u.cost),
            kind=result.finish.kind,
            raw=result.finish.raw,
            code=result.failure.code if result.failure else None,
            signature=signatures[-1] if signatures else None,
        )


def both(name: str, native: Any, prefix: str, model: str, **settings: Any) -> tuple[Outcome, Outcome]:
    body = fixture_bytes(name)
    outcomes = []
    for make in (native, lambda url: adapter_for(url, prefix, **settings)):
        with ReplayServer({"/": Route(body=body)}) as srv:
            result = service_with(make(srv.url)).stream(ask(model)).result()
            outcomes.append(Outcome.of(result))
    return outcomes[0], outcomes[1]


@pytest.mark.parametrize("name", CHAT_CORPUS)
def test_chat_corpus_agrees_with_the_native_adapter(lit: Any, name: str) -> None:
    directory = name.split("/")[0]
    dialect = directory if directory in DIALECTS else "openai"
    native, mine = both(
        name,
        lambda url: OpenAIChatAdapter(api_key=KEY, base_url=f"{url}/v1", dialect=dialect),
        LITELLM_PROVIDER.get(directory, "openai/"),
        MODELS.get(directory, "gpt-4o"),
        think_tags=DIALECTS[dialect].think_tags,  # local servers leak <think> tags: the same filter, asked for
    )
    if name in ("openai/refusal.sse", "openai/refusal_logprobs.sse"):
        assert native.text and native.kind == "stop"
        assert (mine.text, mine.kind, mine.code) == ("", "error", "EMPTY_RESPONSE"), KNOWN[name]
        assert mine.usage == native.usage
        return
    if name == "openrouter/midstream_error_chunk.sse":
        assert (mine.kind, mine.code, mine.text) == (native.kind, native.code, native.text)
        assert native.usage is not None and mine.usage is None, KNOWN[name]
        return
    if name == "openrouter/tool_call_kimi_k2_novita.sse":
        assert native.kind == "tool-calls" and (mine.kind, mine.code) == ("error", "STREAM_CLOSED"), KNOWN[name]
        assert mine.calls == native.calls and mine.text == native.text
        return
    if name == "openrouter/reasoning_details_claude.sse":
        assert native.signature and mine.signature is None, KNOWN[name]
        mine = _with(mine, signature=native.signature)
    if name == "mistral/magistral_thinking_content_parts.sse":
        assert native.signature is None and mine.signature == "mistral", KNOWN[name]
        mine = _with(mine, signature=None)
    assert mine.raw == OPENAI_WORD.get(native.raw or "", native.raw)
    assert mine == _with(native, raw=mine.raw)


@pytest.mark.parametrize("name", ANTHROPIC_CORPUS)
def test_anthropic_corpus_agrees_with_the_native_adapter(lit: Any, name: str) -> None:
    native, mine = both(
        name, lambda url: AnthropicAdapter(api_key=KEY, base_url=url), "anthropic/", ANTHROPIC_MODEL
    )
    # Finish words: LiteLLM's OpenAI vocabulary (end_turn -> stop, tool_use -> tool_calls).
    assert mine.raw == OPENAI_WORD[native.raw or ""]
    # Reasoning tokens: where Anthropic reports none (no output_tokens_details), LiteLLM's
    # Anthropic transformation fills in its own count of the thinking text (0 without
    # thinking); it stays inside output_tokens. Where Anthropic reports them, they agree.
    assert native.usage is not None and mine.usage is not None
    reasoning_tokens = mine.usage[4]
    if native.usage[4] is None:
        assert reasoning_tokens is not None and reasoning_tokens <= mine.usage[1]
        assert (reasoning_tokens > 0) == bool(mine.reasoning)
    else:
        assert reasoning_tokens == native.usage[4]
    # Everything else agrees: text (several text blocks join into LiteLLM's one, citations are
    # not carried), reasoning and its signature, tool calls, disjoint cache counts, the kind.
    assert mine == _with(native, raw=mine.raw, usage=(*native.usage[:4], reasoning_tokens, native.usage[5]))


def _with(outcome: Outcome, **changes: Any) -> Outcome:
    from dataclasses import replace

    return replace(outcome, **changes)


def test_litellm_estimates_are_dropped_not_reported_as_usage(lit: Any, server: ReplayServer) -> None:
    """A provider that sent no usage: LiteLLM counts tokens with its tokenizer and adds a cost
    from its price map; neither is the provider's accounting, so there is no usage chunk."""
    server.add("/", Route(body=fixture_bytes("llamacpp/llamaserver_qwen_basic.sse")))
    raw = lit.completion(model="openai/gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True,
                         api_key=KEY, api_base=f"{server.url}/v1", stream_options={"include_usage": True}, max_retries=0)
    estimates = [c.usage for c in raw if getattr(c, "usage", None) is not None]
    assert estimates and estimates[-1].prompt_tokens > 0  # what LiteLLM itself reports
    result = run(server, fixture_bytes("llamacpp/llamaserver_qwen_basic.sse"))
    assert result.usage is None and result.finish.kind == "stop" and result.text


def test_a_provider_reported_cost_is_kept_and_a_litellm_price_is_not(lit: Any, server: ReplayServer) -> None:
    priced = run(server, fixture_bytes("openrouter/cache_usage_bedrock_claude.sse"))
    assert priced.usage is not None and priced.usage.cost == 0.000837  # OpenRouter's own figure
    unpriced = run(server, fixture_bytes("openai/text_include_usage.sse"))
    assert unpriced.usage is not None and unpriced.usage.cost is None  # LiteLLM priced it; not the provider


# --------------------------------------------------------------------------- requests and attribution


def test_request_and_user_agent_on_the_wire_openai_provider(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("openai/single_tool_call.sse")))
    adapter = adapter_for(server.url, headers={"User-Agent": "caller/1.0", "x-team": "blue"})
    tool = ToolSpec("GetWeatherArgs", "weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    result = service_with(adapter).stream(
        ask(messages=(Message.system("Be brief."), Message.user("Weather?")), tools=(tool,), max_tokens=64,
            temperature=0.2, stop=("END",), extra_body={"extra_body": {"seed": 7}})
    ).result()
    assert result.finish.kind == "tool-calls"
    (recorded,) = server.requests
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["user-agent"] == DEFAULT_IDENTITY.user_agent  # attribution wins over the caller's
    assert recorded.headers["x-team"] == "blue"
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    body = recorded.body
    assert body["model"] == "gpt-4o" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}]
    assert body["tools"] == [tool.to_openai()]
    assert (body["max_tokens"], body["temperature"], body["stop"], body["seed"]) == (64, 0.2, ["END"], 7)


def test_user_agent_on_the_wire_anthropic_provider_with_an_identity(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("anthropic/text.sse")))
    identity = AppIdentity(product="acme-notebook", version="2.1", url="https://acme.example")
    adapter = adapter_for(server.url, "anthropic/", identity=identity)
    assert service_with(adapter).stream(ask(ANTHROPIC_MODEL)).result().text == "Hello"
    (recorded,) = server.requests
    assert recorded.path == "/v1/messages"
    assert recorded.headers["user-agent"] == "acme-notebook/2.1 (+https://acme.example)"
    assert recorded.headers["x-api-key"] == KEY


def test_thinking_signatures_and_redacted_thinking_go_back_through_litellm(lit: Any, server: ReplayServer) -> None:
    server.add("/", [Route(body=fixture_bytes("anthropic/thinking_then_tool_use.sse")),
                     Route(body=fixture_bytes("anthropic/redacted_thinking.sse")),
                     Route(body=fixture_bytes("anthropic/text.sse"))])
    service = service_with(adapter_for(server.url, "anthropic/"))
    history = [Message.user("Which version?")]
    first = service.stream(ask(ANTHROPIC_MODEL, messages=tuple(history))).result()
    (call,) = first.tool_calls
    history += [first.message(), Message.tool_result(call.id, "1.2.3")]
    second = service.stream(ask(ANTHROPIC_MODEL, messages=tuple(history))).result()
    history += [second.message(), Message.user("Thanks")]
    service.stream(ask(ANTHROPIC_MODEL, messages=tuple(history))).result()
    sent = server.requests[-1].body["messages"]
    first_turn, second_turn = sent[1]["content"], sent[3]["content"]
    signature = first.blocks[0].signature  # type: ignore[union-attr]
    assert signature and {"type": "thinking", "thinking": first.reasoning, "signature": signature} in first_turn
    assert any(b.get("type") == "tool_use" and b.get("id") == call.id for b in first_turn)
    assert second_turn[0]["type"] == "redacted_thinking" and second_turn[0]["data"].startswith("EqkECkYIBxgCKkA8")


# --------------------------------------------------------------------------- failures before the stream


def error_route(status: int, payload: dict[str, Any], **headers: str) -> Route:
    return Route(body=json.dumps(payload).encode(), status=status, content_type="application/json",
                 chunked=False, headers=headers)


@pytest.mark.parametrize("prefix", ["openai/", "anthropic/"])
def test_401_echoing_the_key_is_auth_and_redacted_everywhere(lit: Any, server: ReplayServer, prefix: str) -> None:
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    server.add("/", error_route(401, {"error": {"message": f"Incorrect API key provided: {KEY}",
                                                 "type": "invalid_request_error", "code": "invalid_api_key"}}))
    adapter = adapter_for(server.url, prefix, failure_reporter=lambda f, r: reports.append((f, r)))
    chunks = list(service_with(adapter).stream(ask(ANTHROPIC_MODEL if prefix == "anthropic/" else "gpt-4o")))
    (finish,) = chunks
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    failure = finish.reason.failure
    assert failure is not None and (failure.code, failure.status) == ("AUTH", 401)
    assert failure.detail is not None and "Incorrect API key" in failure.detail
    for text in (failure.detail, failure.message, str(failure), repr(failure), json.dumps(reports[0][1], default=str)):
        assert KEY not in text
    assert len(server.requests) == 1 and len(reports) == 1  # not retried, reported once


def test_429_is_retried_after_retry_after_then_streams(lit: Any, server: ReplayServer) -> None:
    server.add("/", [error_route(429, {"error": {"message": "Rate limit reached", "type": "requests"}},
                                 **{"retry-after-ms": "50", "x-request-id": "req_7"}),
                     Route(body=fixture_bytes("openai/text_include_usage.sse"))])
    reports: list[LlmFailure] = []
    adapter = adapter_for(server.url, failure_reporter=lambda f, r: reports.append(f))
    result = service_with(adapter).stream(ask()).result()
    assert result.finish.kind == "stop" and result.text
    assert len(server.requests) == 2
    assert [(f.code, f.retry_after, f.request_id) for f in reports] == [("RATE_LIMIT", 0.05, "req_7")]


def test_429_without_retries_ends_rate_limited(lit: Any, server: ReplayServer) -> None:
    server.add("/", error_route(429, {"error": {"message": "Rate limit reached", "type": "requests"}},
                                **{"retry-after": "7"}))
    result = service_with(adapter_for(server.url, max_retries=0)).stream(ask()).result()
    assert result.failure is not None and (result.failure.code, result.failure.retry_after) == ("RATE_LIMIT", 7.0)
    assert result.failure.retryable and len(server.requests) == 1


def test_500_is_server_and_retried_within_the_policy(lit: Any, server: ReplayServer) -> None:
    server.add("/", error_route(500, {"error": {"message": "boom", "type": "server_error"}}))
    result = service_with(adapter_for(server.url, max_retries=1)).stream(ask()).result()
    assert result.failure is not None and (result.failure.code, result.failure.status) == ("SERVER", 500)
    assert len(server.requests) == 2


def test_context_window_is_classified(lit: Any, server: ReplayServer) -> None:
    server.add("/", error_route(400, {"error": {"message": "This model's maximum context length is 8192 tokens",
                                                 "type": "invalid_request_error", "code": "context_length_exceeded"}}))
    result = service_with(adapter_for(server.url)).stream(ask()).result()
    assert result.failure is not None and result.failure.code == "CONTEXT_WINDOW_EXCEEDED"


def test_a_callable_key_is_refreshed_once_after_a_401(lit: Any, server: ReplayServer) -> None:
    server.add("/", [error_route(401, {"error": {"message": "expired token", "type": "invalid_request_error"}}),
                     Route(body=fixture_bytes("openai/text_include_usage.sse"))])
    keys = iter(["token-one-0123456789", "token-two-0123456789"])
    result = service_with(adapter_for(server.url, api_key=lambda: next(keys), max_retries=0)).stream(ask()).result()
    assert result.finish.kind == "stop"
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer token-one-0123456789", "Bearer token-two-0123456789"]


def test_a_key_litellm_read_from_the_environment_is_redacted_too(lit: Any, server: ReplayServer,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env_key = "sk-ant-from-the-environment-0123456789"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    server.add("/", error_route(401, {"type": "error", "error": {"type": "authentication_error",
                                                                  "message": f"invalid x-api-key {env_key}"}}))
    adapter = LiteLLMAdapter(model_prefix="anthropic/", base_url=server.url)  # no api_key: LiteLLM's own lookup
    result = service_with(adapter).stream(ask(ANTHROPIC_MODEL)).result()
    assert server.requests[0].headers["x-api-key"] == env_key
    assert result.failure is not None and result.failure.code == "AUTH"
    assert result.failure.detail is not None and "invalid x-api-key" in result.failure.detail
    assert env_key not in result.failure.detail


def test_a_server_refusing_stream_options_is_asked_again_without(lit: Any, server: ReplayServer) -> None:
    server.add("/", [error_route(400, {"error": {"message": "Unrecognized request argument supplied: stream_options",
                                                  "type": "invalid_request_error"}}),
                     Route(body=fixture_bytes("llamacpp/llamaserver_qwen_basic.sse"))])
    adapter = adapter_for(server.url, max_retries=0)
    result = service_with(adapter).stream(ask()).result()
    assert result.finish.kind == "stop" and result.text
    assert "stream_options" in server.requests[0].body and "stream_options" not in server.requests[1].body
    assert adapter.include_usage is False  # remembered


def test_nothing_listening_is_transport(lit: Any) -> None:
    adapter = LiteLLMAdapter(model_prefix="openai/", api_key=KEY, base_url="http://127.0.0.1:9/v1", max_retries=0)
    result = service_with(adapter).stream(ask()).result()
    assert result.failure is not None and result.failure.code == "TRANSPORT" and result.finish.kind == "error"


# --------------------------------------------------------------------------- failures during the stream


def test_a_cut_stream_is_stream_closed_with_the_partial_text(lit: Any, server: ReplayServer) -> None:
    result = run(server, Route(body=b"", script=[TEXT], chunked=False))
    assert (result.finish.kind, result.failure and result.failure.code) == ("error", "STREAM_CLOSED")
    assert result.text == "Hel"


def test_litellms_cut_stream_reported_as_stop_is_stream_closed(lit: Any, server: ReplayServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteLLM releases before its end-of-stream check (and its non-OpenAI paths today)
    report a cut stream as a normal ``stop`` (peers.md §1.4). Turn its check off to get
    that behaviour back: LiteLLM says ``stop``; we say ``STREAM_CLOSED``."""
    wrapper = lit.litellm_core_utils.streaming_handler.CustomStreamWrapper
    monkeypatch.setattr(wrapper, "_should_fail_on_clean_eof", lambda self: False)
    server.add("/", Route(body=b"", script=[TEXT], chunked=False))
    raw = lit.completion(model="openai/gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True,
                         api_key=KEY, api_base=f"{server.url}/v1", max_retries=0)
    reasons = [c.choices[0].finish_reason for c in raw if c.choices]
    assert reasons[-1] == "stop"  # the bug, reproduced
    result = run(server, Route(body=b"", script=[TEXT], chunked=False))
    assert (result.finish.kind, result.failure and result.failure.code, result.text) == ("error", "STREAM_CLOSED", "Hel")


def test_an_in_band_error_is_classified_and_keeps_partial_output(lit: Any, server: ReplayServer) -> None:
    result = run(server, fixture_bytes("llamacpp/llamaserver_qwen_midstream_error.sse"))
    assert (result.finish.kind, result.failure and result.failure.code) == ("error", "SERVER")


def test_a_connection_reset_mid_stream_is_transport(lit: Any) -> None:
    def behave(srv: RawServer, conn: socket.socket) -> None:
        srv.send(conn, CLOSE_HEADERS + TEXT)
        time.sleep(0.2)
        from rawserver import reset

        reset(conn)

    with RawServer(behave) as raw:
        result = service_with(adapter_for(raw.url, max_retries=0)).stream(ask()).result()
    assert result.text == "Hel" and result.finish.kind == "error"
    assert result.failure is not None and result.failure.code in ("TRANSPORT", "STREAM_CLOSED")


# --------------------------------------------------------------------------- never hang

STALL = 30.0  # the server's silence; every limit below must end the stream long before it


def stalled(server: ReplayServer) -> LiteLLMAdapter:
    server.add("/", Route(body=b"", script=[TEXT, STALL, REST]))
    return adapter_for(server.url)


def test_cancel_from_another_thread_ends_a_stalled_stream_aborted(lit: Any, server: ReplayServer) -> None:
    cancel = threading.Event()
    stream = service_with(stalled(server)).stream(ask(cancel=cancel))
    first = next(c for c in stream if isinstance(c, TextDelta))
    assert first.text == "Hel"
    started = time.monotonic()
    threading.Timer(0.3, cancel.set).start()
    result = stream.result()
    assert time.monotonic() - started < STALL / 3
    assert (result.finish.kind, result.failure and result.failure.code, result.text) == ("aborted", "ABORTED", "Hel")
    assert wait_until(lambda: not litellm_threads(), STALL / 3), "the worker stayed blocked on the socket"


def test_close_from_another_thread_ends_a_stalled_stream(lit: Any, server: ReplayServer) -> None:
    stream = service_with(stalled(server)).stream(ask())
    next(c for c in stream if isinstance(c, TextDelta))
    started = time.monotonic()
    threading.Timer(0.3, stream.close).start()
    rest = list(stream)
    assert time.monotonic() - started < STALL / 3
    finish = rest[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "aborted"
    assert wait_until(lambda: not litellm_threads(), STALL / 3)


def test_close_while_idle_releases_the_worker(lit: Any, server: ReplayServer) -> None:
    stream = service_with(stalled(server)).stream(ask())
    next(c for c in stream if isinstance(c, TextDelta))
    stream.close()
    assert stream.partial().finish.kind == "aborted"
    assert wait_until(lambda: not litellm_threads(), STALL / 3)


def test_idle_timeout_ends_a_stalled_stream(lit: Any, server: ReplayServer) -> None:
    started = time.monotonic()
    result = service_with(stalled(server)).stream(ask(idle_timeout=0.5)).result()
    assert time.monotonic() - started < STALL / 3
    assert (result.finish.kind, result.failure and result.failure.code, result.text) == ("error", "TIMEOUT", "Hel")
    assert result.failure is not None and "idle timeout" in result.failure.message


def test_total_timeout_holds_before_the_response_starts(lit: Any) -> None:
    def silent(srv: RawServer, conn: socket.socket) -> None:
        time.sleep(STALL)

    with RawServer(silent) as raw:
        started = time.monotonic()
        adapter = adapter_for(raw.url, max_retries=0)
        result = service_with(adapter).stream(ask(timeout=0.5)).result()
        assert time.monotonic() - started < STALL / 3
    assert (result.finish.kind, result.failure and result.failure.code) == ("error", "TIMEOUT")


# --------------------------------------------------------------------------- service surface


def test_provider_info_and_models_from_litellms_map(lit: Any) -> None:
    adapter = LiteLLMAdapter(model_prefix="anthropic/", title="Claude via LiteLLM")
    service = service_with(adapter, "claude")
    assert [(p.id, p.name) for p in service.list_providers()] == [("claude", "Claude via LiteLLM")]
    models = [m.id for m in service.list_models("claude")]
    assert any(m.startswith("claude-") for m in models)
    assert LiteLLMAdapter().list_models("x") == []


def test_stream_batches_hand_lists_through_without_a_contract_checker(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("openai/parallel_tool_calls.sse")))
    service = LlmService()
    service.register_adapter(["lit"], adapter_for(server.url))
    result = service.stream(ask()).result()
    assert result.finish.kind == "tool-calls" and len(result.tool_calls) == 2
