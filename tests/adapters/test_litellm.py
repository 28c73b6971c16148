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
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from helpers import all_fixtures, fixture_bytes, fixture_wire
from rawserver import CLOSE_HEADERS, RawServer
from core.test_parts import OGG, PDF, PNG, WAV
from service.test_observer import Recorder

from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.litellm import LiteLLMAdapter, failure_from_exception
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._core.assembler import AssembledResponse
from dshstream._core.attribution import DEFAULT_IDENTITY, AppIdentity
from dshstream._core.dialects import DIALECTS
from dshstream._core.errors import ConfigurationError
from dshstream._core.parts import AudioPart, DocumentPart, ImagePart
from dshstream._core.media_support import MediaSupport
from dshstream._core.request import GenerateOptions, Message, ToolSpec
from dshstream._core.response_format import JsonMode, JsonSchema
from dshstream._core.retry import RetryPolicy
from dshstream._core.types import (
    BlockEnd,
    Finish,
    LlmFailure,
    ReasoningBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    UsageChunk,
)
from dshstream._core.wires.litellm import LiteLLMTranslator
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

KEY = "sk-litellm-loopback-test-key-0123456789"  # CANARY: a fake key for the test
ANTHROPIC_MODEL = "claude-sonnet-4-5"
HAS_LITELLM = importlib.util.find_spec("litellm") is not None
TEXT = b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
REST = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


# --------------------------------------------------------------------------- guards


@pytest.fixture(autouse=True, scope="module")
def _boundary_children_start_early(request: pytest.FixtureRequest) -> None:
    """Start ``test_litellm_boundaries.py``'s two fresh interpreters now (seconds each,
    importing LiteLLM), so they run alongside this file's tests: only where that file's
    tests that wait for them will run in this process (they are selected, LiteLLM is
    installed, and no xdist or ``--dist loadfile``, which hands both files to one worker)."""
    if not HAS_LITELLM or getattr(request.config.option, "dist", "no") not in ("no", "loadfile"):
        return
    boundaries = "tests/adapters/test_litellm_boundaries.py::"
    if any(item.nodeid.startswith(boundaries) and "children" in getattr(item, "fixturenames", ())
           for item in request.session.items):
        from adapters import litellm_children

        litellm_children.started()


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
    os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")  # nor of its beta-header table
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
        "from dshstream.adapters import LiteLLMAdapter as cls\n"
        "assert 'litellm' not in sys.modules\n"
        "if cls.__module__ == 'dshstream.adapters':\n"
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
    "openai/named_tool_choice_finish_stop_gpt4_0125.sse": "a forced tool's calls end with `stop`; LiteLLM rewrites "
    "the word as `tool_calls` (the kind, tool-calls, agrees)",
    "openrouter/gemini25_flash_reasoning_text_google_vertex.sse": "LiteLLM keeps `finish_reason`, not OpenRouter's "
    "`native_finish_reason` (Google's `STOP`); the kind agrees",
    "together/llama33_70b_finish_reason_eos.sse": "LiteLLM maps Together's `eos` to `stop`; the kind agrees",
    "hyper/": "Charm's Hyper gateway reports its cost as `{\"usd\": ...}`; LiteLLM prices the tokens from its own "
    "price map instead (another number); the counts agree",
    "vercel/": "Vercel's gateway sends no cache-write count; LiteLLM says 0 where it is unknown (the rest agrees)",
    "openrouter/minimax_m1_novita_empty_response_usage_no_finish.sse": "an empty answer with no finish_reason: "
    "LiteLLM keeps no usage and finds no end (STREAM_CLOSED); we say EMPTY_RESPONSE with the usage",
    "openrouter/gemini25_flash_lite_15_same_index_tool_calls_then_malformed_function_call_error_trailing_usage.sse":
    "LiteLLM stops at OpenRouter's error chunk: the usage chunk after it and the native finish word are lost "
    "(the 15 calls, the reasoning and the failure agree)",
    "together/llama33_70b_turbo_text_usage_cached_tokens.sse": "LiteLLM reads no top-level `usage.cached_tokens` "
    "(Together's): the cache read (0 here) is unknown there, the counts agree",
    "anthropic/legacy_text_completion_claude21.sse": "the legacy Text Completions stream (/v1/complete): LiteLLM's "
    "`anthropic/` provider reads only Messages streams, so it finds no end (STREAM_CLOSED)",
    "azure/foundry_models_grok41_fast_text.sse": "read as an OpenAI stream, LiteLLM keeps no `cost_in_usd_ticks` "
    "(xAI's field, relayed by Azure Foundry): the cost (0 ticks) is lost, the counts agree",
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
    "snowflake/cortex_claude_reasoning_details_no_finish_reason.sse": "no finish_reason before [DONE] (as "
    "openrouter/tool_call_kimi_k2_novita.sse: STREAM_CLOSED, the trailing usage lost) and LiteLLM keeps only the "
    "first `reasoning_details` text of the stream",
    "anthropic/advisor_tool_result_iterations.sse": "LiteLLM sums every `usage.iterations` entry, the advisor "
    "model's (claude-opus-4-7) too, into the response's usage; natively that is `usage_by_model`",
    "anthropic/programmatic_code_execution_then_tool_use_with_caller.sse": "a tool_use whose whole input is in its "
    "content_block_start (no input_json_delta): LiteLLM streams its arguments as '{}'",
    "anthropic/programmatic_tool_call_in_message_start.sse": "the message is whole in message_start (no block "
    "events): LiteLLM yields nothing of it and ends 'before a finish_reason' (STREAM_CLOSED)",
}
#: not chat completions: the legacy /completions wire is LiteLLM's text-completion-openai provider
EXCLUDED = {"openai/legacy_completions_text.sse"}
_OTHER_WIRES = ("anthropic", "cohere", "gemini", "openai-responses", "bedrock-converse", "bedrock-invoke", "gemini-interactions")
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
    if name == "openrouter/gemini25_flash_lite_15_same_index_tool_calls_then_malformed_function_call_error_trailing_usage.sse":
        assert native.usage is not None and native.raw == "MALFORMED_FUNCTION_CALL"
        assert (mine.usage, mine.raw) == (None, None), KNOWN[name]
        assert (mine.calls, mine.reasoning, mine.kind, mine.code) == (native.calls, native.reasoning, native.kind, native.code)
        return
    if name == "openrouter/tool_call_kimi_k2_novita.sse":
        assert native.kind == "tool-calls" and (mine.kind, mine.code) == ("error", "STREAM_CLOSED"), KNOWN[name]
        assert mine.calls == native.calls and mine.text == native.text
        return
    if name == "snowflake/cortex_claude_reasoning_details_no_finish_reason.sse":
        assert (native.kind, native.reasoning) == ("stop", "15 * 27 = 405") and native.usage is not None
        assert (mine.kind, mine.code, mine.usage) == ("error", "STREAM_CLOSED", None), KNOWN[name]
        assert mine.text == native.text and native.reasoning.startswith(mine.reasoning)
        return
    if name == "openrouter/reasoning_details_claude.sse":
        assert native.signature and mine.signature is None, KNOWN[name]
        mine = _with(mine, signature=native.signature)
    if name == "azure/foundry_models_grok41_fast_text.sse":
        assert native.usage is not None and native.usage[-1] == 0.0, KNOWN[name]
        assert mine.usage == (*native.usage[:-1], None)
        mine = _with(mine, usage=native.usage)
    if name == "mistral/magistral_thinking_content_parts.sse":
        assert native.signature is None and mine.signature == "mistral", KNOWN[name]
        mine = _with(mine, signature=None)
    if name in ("openai/named_tool_choice_finish_stop_gpt4_0125.sse",
                "openrouter/gemini25_flash_reasoning_text_google_vertex.sse",
                "together/llama33_70b_finish_reason_eos.sse"):
        words = {"openai/named_tool_choice_finish_stop_gpt4_0125.sse": ("stop", "tool_calls"),
                 "openrouter/gemini25_flash_reasoning_text_google_vertex.sse": ("STOP", "stop"),
                 "together/llama33_70b_finish_reason_eos.sse": ("eos", "stop")}
        assert (native.raw, mine.raw) == words[name], KNOWN[name]
        mine = _with(mine, raw=native.raw)
    gateway = name.split("/")[0] + "/"
    if gateway == "hyper/":
        assert native.usage is not None and mine.usage is not None and mine.usage[:5] == native.usage[:5]
        assert mine.usage[5] != native.usage[5], KNOWN[gateway]
        mine = _with(mine, usage=native.usage)
    if gateway == "vercel/":
        assert native.usage is not None and native.usage[3] is None
        assert mine.usage == (*native.usage[:3], 0, *native.usage[4:]), KNOWN[gateway]
        mine = _with(mine, usage=native.usage)
    if name == "openrouter/minimax_m1_novita_empty_response_usage_no_finish.sse":
        assert native.usage is not None and native.code == "EMPTY_RESPONSE"
        assert (mine.usage, mine.code) == (None, "STREAM_CLOSED"), KNOWN[name]
        return
    if name == "together/llama33_70b_turbo_text_usage_cached_tokens.sse":
        assert native.usage is not None and native.usage[2] == 0 and mine.usage == (*native.usage[:2], None,
                                                                                   *native.usage[3:]), KNOWN[name]
        mine = _with(mine, usage=native.usage)
    assert mine.raw == OPENAI_WORD.get(native.raw or "", native.raw)
    assert mine == _with(native, raw=mine.raw)


@pytest.mark.parametrize("name", ANTHROPIC_CORPUS)
def test_anthropic_corpus_agrees_with_the_native_adapter(lit: Any, name: str) -> None:
    native, mine = both(
        name, lambda url: AnthropicAdapter(api_key=KEY, base_url=url), "anthropic/", ANTHROPIC_MODEL
    )
    if name == "anthropic/legacy_text_completion_claude21.sse":
        assert (native.text, native.kind) == (" Light scatters blue.", "stop")
        assert (mine.kind, mine.code, mine.text) == ("error", "STREAM_CLOSED", ""), KNOWN[name]
        return
    if name == "anthropic/programmatic_tool_call_in_message_start.sse":
        assert native.kind == "tool-calls" and len(native.calls) == 1
        assert (mine.kind, mine.code, mine.calls) == ("error", "STREAM_CLOSED", ()), KNOWN[name]
        return
    if name == "anthropic/programmatic_code_execution_then_tool_use_with_caller.sse":
        ((call_id, tool, arguments, _),) = native.calls
        assert mine.calls == ((call_id, tool, "{}", False),) and arguments == '{"player":"player1"}', KNOWN[name]
        mine = _with(mine, calls=native.calls)
    if name == "anthropic/advisor_tool_result_iterations.sse":
        assert native.usage is not None and mine.usage is not None
        # 2728 + 3880: the advisor's iteration, which LiteLLM adds in
        assert mine.usage[:2] == (native.usage[0] + 2728, native.usage[1] + 3880), KNOWN[name]
        mine = _with(mine, usage=(*native.usage[:2], *mine.usage[2:]))
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


def test_a_capability_refusal_is_not_retried_and_litellm_prints_nothing(
    lit: Any, server: ReplayServer, capfd: pytest.CaptureFixture[str]
) -> None:
    # llama.cpp answers an image sent to a text-only model with a 500; retrying can't help.
    # LiteLLM's own "Give Feedback / Get Help" banner would land in the caller's stdout.
    server.add("/", error_route(500, {"error": {"code": 500, "type": "server_error",
                                                 "message": "image input is not supported - hint: provide the mmproj"}}))
    result = service_with(adapter_for(server.url, max_retries=2)).stream(ask()).result()
    assert result.failure is not None and (result.failure.code, result.failure.retryable) == ("INVALID_REQUEST", False)
    assert len(server.requests) == 1
    out, _ = capfd.readouterr()
    assert out == ""


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
    env_key = "loopback-key-from-the-environment-0123456789"  # CANARY: fake
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    server.add("/", error_route(401, {"type": "error", "error": {"type": "authentication_error",
                                                                  "message": f"invalid x-api-key {env_key}"}}))
    # no api_key, and the opt-in to LiteLLM's own lookup for a custom host (rule 7)
    adapter = LiteLLMAdapter(model_prefix="anthropic/", base_url=server.url, key_any_host=True)
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


#: Anthropic's in-band overload after a 200 (the error event's shape as Anthropic's streaming
#: docs give it; no public recording of one was found: tests/fixtures/real/PROVENANCE.md)
ANTHROPIC_OVERLOADED_MID_STREAM = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
    b'"model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n'
    b'event: error\ndata: {"type":"error","error":{"details":null,"type":"overloaded_error","message":"Overloaded"}}\n\n'
)


def test_an_in_band_overload_after_a_200_has_no_http_status_as_the_native_adapter_says(lit: Any) -> None:
    failures = []
    for make in (lambda url: AnthropicAdapter(api_key=KEY, base_url=url, max_retries=0),
                 lambda url: adapter_for(url, "anthropic/", max_retries=0)):
        with ReplayServer({"/": Route(body=ANTHROPIC_OVERLOADED_MID_STREAM)}) as srv:
            result = service_with(make(srv.url)).stream(ask(ANTHROPIC_MODEL)).result()
        assert result.text == "Hel" and result.failure is not None
        failures.append(result.failure)
    native, mine = failures
    assert (mine.code, mine.status, mine.retryable) == (native.code, native.status, native.retryable) == ("OVERLOADED", None, True)
    assert mine.message == native.message == "lit: overloaded (OVERLOADED)"  # no invented "HTTP 500"


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


# --------------------------------------------------------------------------- observers (rule 8)


def fast(adapter: LiteLLMAdapter, retries: int) -> LiteLLMAdapter:
    adapter.retry_policy = RetryPolicy(max_retries=retries, backoff_base=0.01, backoff_cap=0.01)
    return adapter


def observed_service(adapter: LiteLLMAdapter, observer: Recorder) -> LlmService:
    service = LlmService(observer=observer, check_contract=True)
    service.register_adapter(["lit"], adapter)
    return service


def usage_of(result: AssembledResponse) -> TokenUsage:
    assert result.usage is not None
    return result.usage


def test_a_retried_500_through_the_service_is_two_attempts_and_one_finish(lit: Any, server: ReplayServer) -> None:
    server.add("/", [error_route(500, {"error": {"message": "upstream busy", "type": "server_error"}}),
                     Route(body=fixture_bytes("openai/text_include_usage.sse"))])
    recorder = Recorder()
    adapter = fast(adapter_for(server.url), 1)
    result = observed_service(adapter, recorder).stream(ask()).result()
    assert result.finish.kind == "stop" and len(server.requests) == 2
    finished = recorder.one_stream()
    assert (finished.level, finished.kind, finished.attempts) == ("service", "stop", 2)
    first, second = recorder.attempts
    assert (first.outcome, first.failure and first.failure.code, first.failure and first.failure.status,
            first.chunks) == ("failed", "SERVER", 500, 0)
    assert (second.outcome, second.failure) == ("ok", None) and second.chunks > 0
    host, port = server.url.removeprefix("http://").split(":")
    assert {(a.server_address, a.server_port) for a in recorder.attempts} == {(host, int(port))}
    assert (finished.server_address, finished.server_port) == (host, int(port))
    usage = usage_of(result)
    assert finished.usage == usage and usage.output_tokens > 0
    assert finished.time_to_first_chunk is not None and 0 < finished.time_to_first_chunk <= finished.duration
    assert [type(r).__name__ for r in recorder.records] == [
        "StreamStarted", "AttemptRecord", "FirstChunkRecord", "AttemptRecord", "StreamFinished"]


def test_an_adapter_used_directly_reports_its_own_stream(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("anthropic/text.sse")))
    recorder = Recorder()
    adapter = adapter_for(server.url, "anthropic/", observer=recorder)
    chunks = list(adapter.stream(ask(ANTHROPIC_MODEL)))
    finished = recorder.one_stream()
    assert (finished.level, finished.kind, finished.attempts, finished.chunk_count) == ("adapter", "stop", 1, len(chunks))
    (usage,) = [c.usage for c in chunks if isinstance(c, UsageChunk)]
    assert finished.usage == usage and (usage.input_tokens, usage.output_tokens) == (10, 4)
    assert finished.time_to_first_chunk is not None and finished.response_model == "claude-sonnet-4-5"
    (attempt,) = recorder.attempts
    assert (attempt.outcome, attempt.level, attempt.chunks, attempt.server_address) == ("ok", "adapter", len(chunks),
                                                                                          "127.0.0.1")


def test_without_base_url_the_server_is_the_one_litellm_reports(lit: Any, server: ReplayServer,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteLLM picks the URL (here from its own ``OPENAI_BASE_URL`` setting): the attempt's
    server is the one LiteLLM says it used."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    server.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    recorder = Recorder()
    adapter = LiteLLMAdapter(model_prefix="openai/", api_key=KEY, observer=recorder)
    assert list(adapter.stream(ask()))[-1].reason.kind == "stop"  # type: ignore[union-attr]
    (attempt,) = recorder.attempts
    assert (attempt.server_address, attempt.server_port) == ("127.0.0.1", int(server.url.rsplit(":", 1)[1]))


def test_one_observer_on_the_service_and_the_adapter_hears_one_stream(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    recorder = Recorder()
    service = observed_service(adapter_for(server.url, observer=recorder), recorder)
    service.stream(ask()).result()
    finished = recorder.one_stream()
    assert (finished.level, finished.attempts) == ("service", 1)


def test_an_adapter_observer_beside_the_services_hears_its_own_stream(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    outer, inner = Recorder(), Recorder()
    observed_service(adapter_for(server.url, observer=inner), outer).stream(ask()).result()
    service_finish, adapter_finish = outer.one_stream(), inner.one_stream()
    assert (service_finish.level, adapter_finish.level) == ("service", "adapter")
    assert service_finish.stream_id == adapter_finish.stream_id and service_finish.usage == adapter_finish.usage


def test_a_cancelled_stream_is_one_aborted_attempt_and_finish(lit: Any, server: ReplayServer) -> None:
    recorder = Recorder()
    cancel = threading.Event()
    stream = observed_service(stalled(server), recorder).stream(ask(cancel=cancel))
    next(c for c in stream if isinstance(c, TextDelta))
    threading.Timer(0.2, cancel.set).start()
    assert stream.result().finish.kind == "aborted"
    finished = recorder.one_stream()
    assert (finished.kind, finished.code, finished.attempts) == ("aborted", "ABORTED", 1)
    (attempt,) = recorder.attempts
    assert attempt.outcome == "aborted" and attempt.chunks > 0
    assert finished.time_to_first_chunk is not None
    assert wait_until(lambda: not litellm_threads(), STALL / 3)


def test_cancel_during_a_retry_backoff_is_one_report_and_one_aborted_finish(lit: Any, server: ReplayServer) -> None:
    server.add("/", error_route(500, {"error": {"message": "upstream busy", "type": "server_error"}}))
    recorder, reports = Recorder(), []
    adapter = adapter_for(server.url, failure_reporter=lambda f, r: reports.append(f.code))
    adapter.retry_policy = RetryPolicy(max_retries=3, backoff_base=STALL, backoff_cap=STALL)
    started = time.monotonic()
    cancel = threading.Event()

    def cancel_in_the_backoff() -> None:
        assert wait_until(lambda: bool(reports), STALL / 3)  # the 500 was reported: waiting to retry
        time.sleep(0.1)
        cancel.set()

    threading.Thread(target=cancel_in_the_backoff, daemon=True).start()
    result = observed_service(adapter, recorder).stream(ask(cancel=cancel)).result()
    assert cancel.is_set() and time.monotonic() - started < STALL / 2
    assert (result.finish.kind, result.failure and result.failure.code) == ("aborted", "ABORTED")
    assert result.failure is not None and (result.failure.diagnostics or {}).get("attempt") == 1
    assert reports == ["SERVER"] and len(server.requests) == 1  # the attempt is reported once
    finished = recorder.one_stream()
    assert (finished.kind, finished.attempts, recorder.attempts[0].outcome) == ("aborted", 1, "failed")


def test_a_consumer_that_stops_early_is_one_aborted_finish(lit: Any, server: ReplayServer) -> None:
    recorder = Recorder()
    adapter = stalled(server)
    adapter.observer = recorder
    batches = adapter.stream_batches(ask())
    assert isinstance(batches, Generator)
    assert any(isinstance(c, TextDelta) for c in next(batches))
    batches.close()
    finished = recorder.one_stream()
    assert (finished.level, finished.kind, finished.code) == ("adapter", "aborted", "ABORTED")
    assert [a.outcome for a in recorder.attempts] == ["aborted"]
    assert wait_until(lambda: not litellm_threads(), STALL / 3)


def test_a_failure_mid_stream_ends_the_attempt_failed_with_the_partial_usage(lit: Any, server: ReplayServer) -> None:
    recorder = Recorder()
    server.add("/", Route(body=b"", script=[TEXT], chunked=False))
    adapter = adapter_for(server.url, observer=recorder)
    chunks = list(adapter.stream(ask()))
    finished = recorder.one_stream()
    assert (finished.kind, finished.code, finished.chunk_count) == ("error", "STREAM_CLOSED", len(chunks))
    (attempt,) = recorder.attempts
    assert attempt.outcome == "failed" and attempt.failure is not None and attempt.failure.code == "STREAM_CLOSED"


def test_an_otel_observer_makes_one_span_with_an_event_per_litellm_attempt(lit: Any, server: ReplayServer) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from service.test_otel import Telemetry

    server.add("/", [error_route(500, {"error": {"message": "upstream busy", "type": "server_error"}}),
                     Route(body=fixture_bytes("openai/text_include_usage.sse"))])
    telemetry = Telemetry()
    try:
        service = LlmService(observer=telemetry.observer())
        service.register_adapter(["lit"], fast(adapter_for(server.url), 1))
        result = service.stream(ask()).result()
        span = telemetry.one_span()
    finally:
        telemetry.shutdown()
    attributes = dict(span.attributes or {})
    assert (attributes["dshstream.attempts"], attributes["dshstream.finish"]) == (2, "stop")
    assert attributes["gen_ai.usage.output_tokens"] == usage_of(result).output_tokens
    assert attributes["server.address"] == "127.0.0.1" and "gen_ai.response.time_to_first_chunk" in attributes
    outcomes = [dict(e.attributes or {}).get("dshstream.attempt.outcome") for e in span.events
                if e.name == "dshstream.attempt"]
    assert outcomes == ["failed", "ok"]


def test_a_bad_observer_is_refused(lit: Any) -> None:
    with pytest.raises(ConfigurationError, match="LiteLLMAdapter.observer"):
        LiteLLMAdapter(observer="print")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- media parts (rule 2)


def media_message() -> Message:
    return Message.user("What is in these?", ImagePart.from_bytes(PNG), DocumentPart.from_bytes(PDF, name="report.pdf"),
                        "Answer briefly.")


def test_media_parts_reach_an_openai_provider_as_sdk_typed_content_parts(lit: Any, server: ReplayServer) -> None:
    from openai.types.chat import ChatCompletionUserMessageParam
    from adapters.test_media_requests import assert_matches_sdk_type, b64  # needs pydantic, as LiteLLM does

    server.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    message = Message.user("What is in these?", ImagePart.from_bytes(PNG), ImagePart.from_url("https://example.com/cat.webp"),
                           AudioPart.from_bytes(WAV), DocumentPart.from_bytes(PDF, name="report.pdf"), "Answer briefly.")
    result = service_with(adapter_for(server.url)).stream(ask(messages=(Message.system("Be terse."), message))).result()
    assert result.ok, result.failure
    user = server.requests[0].body["messages"][1]
    assert_matches_sdk_type(user, ChatCompletionUserMessageParam)
    assert user["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.webp"}},
        {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
        {"type": "text", "text": "Answer briefly."},
    ]


def test_media_parts_reach_anthropic_converted_by_litellm(lit: Any, server: ReplayServer) -> None:
    from anthropic.types import MessageParam
    from adapters.test_media_requests import assert_matches_sdk_type, b64

    server.add("/", Route(body=fixture_bytes("anthropic/text.sse")))
    result = service_with(adapter_for(server.url, "anthropic/")).stream(
        ask(ANTHROPIC_MODEL, messages=(media_message(),))).result()
    assert result.text == "Hello"
    (user,) = server.requests[0].body["messages"]
    assert_matches_sdk_type(user, MessageParam)
    assert user["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)}},
        {"type": "text", "text": "Answer briefly."},
    ]


def test_a_part_the_media_table_refuses_is_invalid_options_and_nothing_is_sent(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("openai/text_include_usage.sse")))
    ogg = ask(messages=(Message.user("Listen:", AudioPart.from_bytes(OGG, media_type="audio/ogg")),))
    adapter = adapter_for(server.url)
    with pytest.raises(ConfigurationError, match="audio/ogg"):
        adapter.call_kwargs(ogg)
    chunks = list(adapter.stream(ogg))  # never raises (rule 4): one finish
    (finish,) = chunks
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "INVALID_OPTIONS" and "Listen:" not in finish.reason.failure.message
    result = service_with(adapter).stream(ogg).result()
    assert result.failure is not None and result.failure.code == "INVALID_OPTIONS"
    no_media = adapter_for(server.url, media=None)
    with pytest.raises(ConfigurationError, match=r"LiteLLMAdapter\(media=None\) does not take images"):
        no_media.call_kwargs(ask(messages=(media_message(),)))
    assert server.requests == []
    with pytest.raises(ConfigurationError, match="LiteLLMAdapter.media"):
        LiteLLMAdapter(media="images")  # type: ignore[arg-type]


def test_a_narrower_media_table_is_honoured(lit: Any, server: ReplayServer) -> None:
    images_only = MediaSupport(provider="my gateway", types={"image": {"image/png": "image/png"}})
    adapter = adapter_for(server.url, media=images_only)
    with pytest.raises(ConfigurationError, match="my gateway does not take document parts"):
        adapter.call_kwargs(ask(messages=(media_message(),)))
    kwargs = adapter.call_kwargs(ask(messages=(Message.user("Look:", ImagePart.from_bytes(PNG)),)))
    assert [p["type"] for p in kwargs["messages"][0]["content"]] == ["text", "image_url"]


# --------------------------------------------------------------------------- structured output


ANSWER = JsonSchema("answer", {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                               "additionalProperties": False})


def test_a_json_schema_goes_to_an_openai_provider_as_its_response_format(lit: Any, server: ReplayServer) -> None:
    server.add("/", [Route(body=fixture_bytes("openai/text_include_usage.sse"))] * 2)
    service = service_with(adapter_for(server.url))
    service.stream(ask(response_format=ANSWER)).result()
    service.stream(ask(response_format=JsonMode())).result()
    schema_body, mode_body = (r.body for r in server.requests)
    assert schema_body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "strict": True, "schema": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
            "additionalProperties": False}},
    }
    assert mode_body["response_format"] == {"type": "json_object"}


def test_a_json_schema_reaches_claude_45_as_its_native_output_format(lit: Any, server: ReplayServer) -> None:
    server.add("/", Route(body=fixture_bytes("anthropic/text.sse")))
    service_with(adapter_for(server.url, "anthropic/")).stream(ask(ANTHROPIC_MODEL, response_format=ANSWER)).result()
    body = server.requests[0].body
    assert body["output_format"] == {"type": "json_schema", "schema": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"], "additionalProperties": False}}
    assert "tools" not in body


def test_older_claude_gets_litellms_forced_tool_and_the_stream_is_json_text(lit: Any, server: ReplayServer) -> None:
    """LiteLLM asks a Claude without native structured output for a forced
    ``json_tool_call`` and streams that call's arguments back as text: the caller sees JSON
    text and a ``stop`` (a real recording whose JSON tool is renamed to LiteLLM's)."""
    recording = fixture_bytes("anthropic/tool_use_with_args.sse")
    assert recording.count(b'"name":"json"') == 1
    server.add("/", Route(body=recording.replace(b'"name":"json"', b'"name":"json_tool_call"')))
    fmt = JsonSchema("answer", {"type": "object"}, strict=False)
    result = service_with(adapter_for(server.url, "anthropic/")).stream(
        ask("claude-3-5-haiku-20241022", response_format=fmt)).result()
    body = server.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "json_tool_call"}
    assert [t["name"] for t in body["tools"]] == ["json_tool_call"]
    assert body["tools"][0]["input_schema"] == {"type": "object"}
    assert result.finish.kind == "stop" and not result.tool_calls
    assert json.loads(result.text) == {"elements": [{"location": "San Francisco", "temperature": 58,
                                                     "condition": "sunny"}]}


_LIVE = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")


@pytest.mark.skipif(not _LIVE, reason="DSHSTREAM_TEST_SERVER is not set")
def test_live_llama_server_answers_json_text_that_matches_the_schema(lit: Any) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
              "required": ["city", "country"], "additionalProperties": False}
    recorder = Recorder()
    adapter = LiteLLMAdapter(model_prefix="openai/", base_url=f"{_LIVE}/v1", observer=recorder)
    result = service_with(adapter).stream(ask(
        "m", messages=(Message.user("Name the capital of France and its country."),),
        response_format=JsonSchema("capital", schema), max_tokens=64, temperature=0.0, timeout=120)).result()
    assert result.finish.kind == "stop", result.failure
    answer = json.loads(result.text)
    assert set(answer) == {"city", "country"} and all(isinstance(v, str) and v for v in answer.values())
    finished = recorder.one_stream()
    assert finished.attempts == 1 and finished.usage is not None and finished.usage.output_tokens > 0
    assert finished.time_to_first_chunk is not None


# --------------------------------------------------------------------------- environment keys (rule 7)


ENV_KEY = "sk-from-the-environment-never-to-loopback-0123456789"


@pytest.mark.parametrize("prefix", ["openai/", "anthropic/"])
def test_an_environment_key_never_reaches_a_custom_base_url_without_opt_in(
    lit: Any, server: ReplayServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, prefix: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ENV_KEY)
    anthropic = prefix == "anthropic/"
    fixture = "anthropic/text.sse" if anthropic else "openai/text_include_usage.sse"
    server.add("/", [Route(body=fixture_bytes(fixture))] * 3)
    model = ANTHROPIC_MODEL if anthropic else "gpt-4o"
    root = server.url if anthropic else f"{server.url}/v1"
    caplog.set_level(logging.INFO, logger="dshstream")
    adapters = [
        LiteLLMAdapter(model_prefix=prefix, base_url=root),
        LiteLLMAdapter(model_prefix=prefix, completion_kwargs={"api_base": root}),
    ]
    assert "not sent to" in caplog.text and ENV_KEY not in caplog.text
    for adapter in adapters:
        assert service_with(adapter).stream(ask(model)).result().finish.kind == "stop"
    # a request can't bring its own host (rule 7): refused before anything is sent
    refused = service_with(LiteLLMAdapter(model_prefix=prefix)).stream(ask(model, extra_body={"api_base": root})).result()
    assert refused.failure is not None and refused.failure.code == "INVALID_OPTIONS"
    assert "extra_body['api_base']" in refused.failure.message
    sent = [r.headers.get("x-api-key") if anthropic else r.headers.get("authorization") for r in server.requests]
    assert sent == (["no-key"] * 2 if anthropic else ["Bearer no-key"] * 2)
    assert all(ENV_KEY not in json.dumps(r.headers) + json.dumps(r.body) for r in server.requests)


def test_key_env_and_key_any_host_opt_in_and_an_explicit_key_wins(lit: Any, server: ReplayServer,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("MY_GATEWAY_KEY", "gw-key-0123456789")
    server.add("/", [Route(body=fixture_bytes("openai/text_include_usage.sse"))] * 3)
    root = f"{server.url}/v1"
    for adapter in (LiteLLMAdapter(model_prefix="openai/", base_url=root, key_env="MY_GATEWAY_KEY"),
                    LiteLLMAdapter(model_prefix="openai/", base_url=root, key_any_host=True),
                    LiteLLMAdapter(model_prefix="openai/", base_url=root, api_key=KEY, key_env="MY_GATEWAY_KEY")):
        assert service_with(adapter).stream(ask()).result().finish.kind == "stop"
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer gw-key-0123456789", f"Bearer {ENV_KEY}", f"Bearer {KEY}"]


def test_without_a_custom_host_litellm_reads_its_own_key(lit: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``base_url``: the request goes to the provider's own host, where LiteLLM's own
    environment lookup is the right one (no placeholder); ``key_env`` still reads the variable."""
    monkeypatch.setenv("MY_OPENAI_KEY", "sk-named-0123456789")
    assert "api_key" not in LiteLLMAdapter(model_prefix="openai/").call_kwargs(ask())
    named = LiteLLMAdapter(model_prefix="openai/", key_env="MY_OPENAI_KEY")
    assert named.call_kwargs(ask(), named.credential.get("lit"))["api_key"] == "sk-named-0123456789"
    with pytest.raises(ConfigurationError, match="LiteLLMAdapter.key_any_host"):
        LiteLLMAdapter(key_any_host="yes")  # type: ignore[arg-type]


def test_credentials_in_headers_nested_kwargs_and_extra_body_are_redacted_from_every_report(
    lit: Any, server: ReplayServer
) -> None:
    header_key = "pkl1ve.Zx81mQ0rT5vBn2K9"  # no known key shape: only the adapter knows it is one
    nested_token = "gw-Tok3n.a8Bc7De6Fg5"
    body_key = "xtra.Qz19Lm02Np38Rs"
    echoed = f"gateway refused {header_key}, {nested_token} and {body_key}"
    server.add("/", error_route(401, {"error": {"message": echoed, "type": "invalid_request_error"}}))
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    records: list[Any] = []
    adapter = adapter_for(
        server.url,
        headers={"X-Portkey-Api-Key": header_key},
        completion_kwargs={"metadata": {"gateway": {"session_token": nested_token}}},
        failure_reporter=lambda f, r: reports.append((f, r)),
        observer=records.append,
        max_retries=0,
    )
    result = service_with(adapter).stream(ask(extra_body={"gateway_api_key": body_key})).result()
    sent = server.requests[0]
    assert sent.headers["x-portkey-api-key"] == header_key  # it was sent, as asked
    failure = result.failure
    assert failure is not None and failure.code == "AUTH"
    assert failure.detail is not None and "gateway refused" in failure.detail
    texts = [failure.detail, repr(failure), repr(records), json.dumps(reports[0][1], default=str)]
    for secret in (header_key, nested_token, body_key):
        for text in texts:
            assert secret not in text
