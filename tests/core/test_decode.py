"""The sans-IO entry point (dshstream/_core/decode.py): ``decode``, ``StreamDecoder``,
``translator_for`` and ``detect_wire``.

Split invariance over the whole recorded corpus lives in tests/robustness/test_corpus.py;
each wire's translation in tests/wires/. Here: what the entry point itself
promises — which wires exist, what the inputs may be, that options reach the translator,
that it stops at the terminal marker, and how a recording's wire is guessed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers import KNOWN_FINISH, all_fixtures, decode_all, fixture_bytes, fixture_wire

from dshstream._core.assembler import assemble
from dshstream._core.decode import WIRES, StreamDecoder, decode, detect_wire, translator_for
from dshstream._core.dialects import DIALECTS
from dshstream._core.errors import LlmError
from dshstream._core.types import BlockEnd, BlockStart, Finish, ReasoningBlock, TextBlock, TextDelta
from dshstream._core.wires.anthropic import AnthropicTranslator
from dshstream._core.wires.cohere import CohereTranslator
from dshstream._core.wires.bedrock import BedrockConverseTranslator
from dshstream._core.wires.bedrock_invoke import BedrockInvokeTranslator
from dshstream._core.wires.translator import Translator
from dshstream._core.wires.gemini import GeminiTranslator
from dshstream._core.wires.gemini_interactions import GeminiInteractionsTranslator
from dshstream._core.wires.openai_chat import OpenAIChatTranslator
from dshstream._core.wires.openai_responses import OpenAIResponsesTranslator

NATIVE = {
    "anthropic": AnthropicTranslator,
    "cohere": CohereTranslator,
    "gemini": GeminiTranslator,
    "gemini-interactions": GeminiInteractionsTranslator,
    "openai-responses": OpenAIResponsesTranslator,
    "bedrock-converse": BedrockConverseTranslator,
    "bedrock-invoke": BedrockInvokeTranslator,
}


def is_done(decoder: StreamDecoder) -> bool:
    """``decoder.done``, read afresh (mypy would keep a narrowed ``decoder.done``)."""
    return decoder.done


def chat_event(content: str, finish: str | None = None) -> bytes:
    reason = f'"{finish}"' if finish else "null"
    return (
        b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":%s}]}\n\n'
        % (content.encode(), reason.encode())
    )


DONE = b"data: [DONE]\n\n"
HELLO = chat_event("Hel") + chat_event("lo", "stop") + DONE


# --------------------------------------------------------------------------- translator_for


def test_the_known_wires() -> None:
    assert set(WIRES) == {"openai-chat", *DIALECTS, *NATIVE}


@pytest.mark.parametrize("wire", sorted(NATIVE))
def test_native_wires_get_their_translator(wire: str) -> None:
    translator = translator_for(wire)
    assert type(translator) is NATIVE[wire]
    assert translator_for(wire) is not translator  # a fresh one each time


@pytest.mark.parametrize("wire", ["openai-chat", *DIALECTS])
def test_chat_wires_get_the_chat_translator_with_their_dialect(wire: str) -> None:
    translator = translator_for(wire)
    assert isinstance(translator, OpenAIChatTranslator)
    assert translator.dialect is DIALECTS["openai" if wire == "openai-chat" else wire]


def test_a_dialect_option_overrides_the_wire_default() -> None:
    translator = translator_for("openai-chat", dialect="groq")
    assert isinstance(translator, OpenAIChatTranslator) and translator.dialect is DIALECTS["groq"]


@pytest.mark.parametrize("wire", ["nope", "", "OpenAI-Chat", "chat"])
def test_unknown_wire_is_a_value_error_naming_the_known_ones(wire: str) -> None:
    with pytest.raises(ValueError) as info:
        translator_for(wire)
    assert str(info.value) == f"unknown wire {wire!r}; known: {', '.join(WIRES)}"
    with pytest.raises(ValueError, match="unknown wire"):
        list(decode(HELLO, wire=wire))


# --------------------------------------------------------------------------- decode


def test_decode_bytes() -> None:
    chunks = list(decode(HELLO, wire="openai-chat"))
    assert chunks[:3] == [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Hel"),
        TextDelta(index=0, text="lo"),
    ]
    assert chunks[3] == BlockEnd(index=0, block=TextBlock("Hello"))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and (finish.reason.kind, finish.reason.raw) == ("stop", "stop")


def test_decode_accepts_bytes_and_iterables_of_pieces() -> None:
    expected = list(decode(HELLO, wire="openai-chat"))
    assert list(decode([HELLO[:7], HELLO[7:50], HELLO[50:]], wire="openai-chat")) == expected
    assert list(decode((bytes([b]) for b in HELLO), wire="openai-chat")) == expected
    assert list(decode(iter([]), wire="openai-chat"))[-1] == list(decode(b"", wire="openai-chat"))[-1]


def test_decode_also_takes_other_bytes_like_values() -> None:
    """Not in the signature, but handled: a bytearray or memoryview is one whole body, and
    so is each such piece of an iterable."""
    expected = list(decode(HELLO, wire="openai-chat"))
    assert list(decode(bytearray(HELLO), wire="openai-chat")) == expected  # type: ignore[arg-type]
    assert list(decode(memoryview(HELLO), wire="openai-chat")) == expected
    pieces: list[bytearray | memoryview] = [bytearray(HELLO[:9]), memoryview(HELLO[9:])]
    assert list(decode(pieces, wire="openai-chat")) == expected  # type: ignore[arg-type]


def test_decode_is_lazy() -> None:
    pulled: list[bytes] = []

    def pieces() -> Iterator[bytes]:
        for piece in (chat_event("a"), chat_event("b", "stop"), DONE):
            pulled.append(piece)
            yield piece

    chunks = decode(pieces(), wire="openai-chat")
    assert pulled == []
    assert next(chunks) == BlockStart(index=0, block_type="text")
    assert len(pulled) == 1


def test_decode_stops_reading_at_the_terminal_marker() -> None:
    pulled: list[bytes] = []

    def pieces() -> Iterator[bytes]:
        for piece in (chat_event("a", "stop"), DONE, b"data: not even json\n\n", b"more"):
            pulled.append(piece)
            yield piece

    result = assemble(decode(pieces(), wire="openai-chat"))
    assert result.text == "a" and result.ok
    assert pulled == [chat_event("a", "stop"), DONE]


def test_a_body_cut_before_the_marker_is_stream_closed() -> None:
    result = assemble(decode(chat_event("par") + chat_event("tial"), wire="openai-chat"))
    assert result.text == "partial"
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.code == "STREAM_CLOSED"


def test_options_reach_the_translator() -> None:
    data = fixture_bytes("openai-responses/error_event_insufficient_quota.sse")
    result = assemble(decode(data, wire="openai-responses", provider="my-route", request_id="req_7"))
    assert result.failure is not None and result.failure.code == "QUOTA"
    assert result.failure.provider == "my-route"
    assert result.metadata is not None and result.metadata.request_id == "req_7"
    thinking = chat_event("<think>hmm</think>ok", "stop") + DONE
    assert assemble(decode(thinking, wire="openai-chat")).blocks == (TextBlock("<think>hmm</think>ok"),)
    assert assemble(decode(thinking, wire="openai-chat", think_tags=True)).blocks == (
        ReasoningBlock("hmm"), TextBlock("ok"))


def test_a_chat_dialect_is_its_own_provider_by_default() -> None:
    cut = chat_event("x")
    failure = assemble(decode(cut, wire="groq")).failure
    assert failure is not None and failure.provider == "groq"
    failure = assemble(decode(cut, wire="groq", provider="mine")).failure
    assert failure is not None and failure.provider == "mine"


def test_an_event_over_max_event_size_raises_event_too_large() -> None:
    big = chat_event("x" * 500, "stop") + DONE
    assert assemble(decode(big, wire="openai-chat", max_event_size=1024)).text == "x" * 500
    with pytest.raises(LlmError) as info:
        list(decode(big, wire="openai-chat", max_event_size=256))
    assert info.value.failure.code == "EVENT_TOO_LARGE"


# --------------------------------------------------------------------------- StreamDecoder


def test_stream_decoder_feed_and_close() -> None:
    decoder = StreamDecoder(translator_for("openai-chat"))
    assert isinstance(decoder.translator, Translator)
    first = chat_event("Hel")
    assert decoder.feed(first[:20]) == []  # half an event completes nothing
    assert decoder.feed(first[20:]) == [BlockStart(index=0, block_type="text"), TextDelta(index=0, text="Hel")]
    assert not decoder.done
    assert decoder.feed(chat_event("lo", "stop")) == [TextDelta(index=0, text="lo")]
    assert not decoder.done
    tail = decoder.feed(DONE)
    assert is_done(decoder)
    assert tail[0] == BlockEnd(index=0, block=TextBlock("Hello")) and isinstance(tail[-1], Finish)
    assert decoder.close() == []  # the finish was already out


def test_stream_decoder_close_flushes_an_unterminated_last_event() -> None:
    decoder = StreamDecoder(translator_for("openai-chat"))
    assert decoder.feed(chat_event("a", "stop") + b"data: [DONE]") == [
        BlockStart(index=0, block_type="text"), TextDelta(index=0, text="a")]
    tail = decoder.close()
    assert isinstance(tail[-1], Finish) and tail[-1].reason.kind == "stop"


def test_stream_decoder_close_without_a_marker_ends_the_stream() -> None:
    decoder = StreamDecoder(translator_for("anthropic"))
    tail = decoder.close()
    (finish,) = tail
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"


def test_stream_decoder_max_event_size() -> None:
    decoder = StreamDecoder(translator_for("openai-chat"), max_event_size=64)
    with pytest.raises(LlmError) as info:
        decoder.feed(chat_event("y" * 100))
    assert info.value.failure.code == "EVENT_TOO_LARGE"


# --------------------------------------------------------------------------- detect_wire

#: recordings with nothing that names their server: detected as the plain chat wire
UNDETECTABLE = {
    "llamacpp/llamacpppython_qwen_tool_calls_forced.sse",  # llama-cpp-python sends no "timings"
    "llamacpp/llamacpppython_smollm2_basic.sse",
    "llamacpp/llamacpppython_smollm2_include_usage_ignored.sse",
    "llamacpp/llamacpppython_smollm2_long_with_ping_comment.sse",
    "llamacpp/llamaserver_qwen_midstream_error.sse",  # ends before llama-server's "timings"
    "vllm/crusoe_llama33_text_usage.sse",
    "groq/compound_web_search_executed_tools.sse",  # only its last chunk carries x_groq
    "snowflake/cortex_claude_reasoning_details_no_finish_reason.sse",  # an OpenAI-compatible server, plain
    "ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse",  # Ollama's /v1 sends nothing of its own
    "together/hfrouter_llama3_8b_text_token_id_content_on_finish.sse",  # Together: only token ids, seeds
    "together/llama33_70b_finish_reason_eos.sse",
    "together/llama33_70b_turbo_text_usage_cached_tokens.sse",
}


#: recordings detected as another chat dialect that reads them the same
DETECTED_AS = {
    "azure/foundry_models_grok41_fast_text.sse": "xai",  # Grok on Azure Foundry: the model is xAI's
    # relays that pass on another server's fields, read the same by that dialect
    "avian/kimi_k25_reasoning_details_and_reasoning_content_tool_call.sse": "openrouter",  # reasoning_details
    "huggingface/router_kimi_k2_groq_x_groq_tool_call.sse": "groq",  # the HF router relays Groq's x_groq
    "novita/deepseek_r1_distill_qwen14b_think_tags_content_filter.sse": "deepseek",  # a deepseek model name
    "hyper/deepseek_v4_pro_reasoning_only_finish_length.sse": "deepseek",
    "hyper/deepseek_v4_pro_reasoning_parallel_tool_calls_cost_object.sse": "deepseek",
    "vercel/claude_sonnet4_reasoning_details_signature_tool_call.sse": "openrouter",  # reasoning_details
    "vercel/gemini3_pro_encrypted_reasoning_after_tool_call.sse": "openrouter",
    "vercel/gpt5_reasoning_summary_details_tool_call.sse": "openrouter",
}


@pytest.mark.parametrize("rel", all_fixtures())
def test_detect_wire_of_every_recording(rel: str) -> None:
    data = fixture_bytes(rel)
    wire = detect_wire(data)
    assert wire == ("openai-chat" if rel in UNDETECTABLE else DETECTED_AS.get(rel, fixture_wire(rel)))
    # decoded with the guessed wire, the recording ends as it really does
    finish = decode_all(data, wire)[-1]
    assert isinstance(finish, Finish)
    code = finish.reason.failure.code if finish.reason.failure is not None else None
    assert (finish.reason.kind, finish.reason.raw, code) == KNOWN_FINISH[rel]


@pytest.mark.parametrize(
    ("head", "wire"),
    [
        (b'event: message_start\ndata: {"type": "message_start"}\n\n', "anthropic"),
        (b'data: {"type":"message_start","message":{}}\n\n', "anthropic"),
        (b'data: {"type": "message_start", "message": {}}\n\n', "anthropic"),
        (b"event: response.created\ndata: {}\n\n", "openai-responses"),
        (b'data: {"type":"response.created","response":{}}\n\n', "openai-responses"),
        (b'data: {"type": "response.output_text.delta"}\n\n', "openai-responses"),
        (b'data: {"candidates": [{"content": {}}]}\r\n\r\n', "gemini"),
        (b'data: {"usageMetadata": {"promptTokenCount": 1}}\r\n\r\n', "gemini"),
        (b"event: interaction.created\ndata: {}\n\n", "gemini-interactions"),
        (b'data: {"index":0,"step":{"type":"thought"},"event_type":"step.start"}\n\n', "gemini-interactions"),
        (b'data: {"event_type": "interaction.created", "interaction": {}}\n\n', "gemini-interactions"),
        (b'data: {"event_type":"note","choices":[]}\n\n', "openai-chat"),
        (b'data: {"choices":[],"x_groq":{"id":"r"}}\n\n', "groq"),
        (b'data: {"provider":"OpenAI","choices":[]}\n\n', "openrouter"),
        (b'data: {"provider": "OpenAI", "choices": []}\n\n', "openrouter"),
        (b'data: {"choices":[{"native_finish_reason":null}]}\n\n', "openrouter"),
        (b'data: {"usage":{"prompt_cache_hit_tokens":0}}\n\n', "deepseek"),
        (b'data: {"model":"deepseek-chat","choices":[]}\n\n', "deepseek"),
        (b'data: {"choices":[],"timings":{}}\n\n', "llamacpp"),
        (b'data: {"model":"grok-3-mini","choices":[]}\n\n', "xai"),
        (b'data: {"usage":{"cost_in_usd_ticks":1}}\n\n', "xai"),
        (b'data: {"model":"magistral-small","choices":[]}\n\n', "mistral"),
        (b'data: {"model":"mistral-small-latest","choices":[]}\n\n', "mistral"),
        (b'data: {"object":"chat.completion.chunk","model":"gpt-4o","choices":[]}\n\n', "openai-chat"),
        (b"", "openai-chat"),
        (b"message_start without its event or type", "openai-chat"),
    ],
)
def test_detect_wire_hints(head: bytes, wire: str) -> None:
    assert detect_wire(head) == wire


def test_detect_wire_reads_only_the_first_64_kib() -> None:
    filler = b": " + b"x" * 65536 + b"\n\n"
    assert detect_wire(b'data: {"choices":[],"timings":{}}\n\n' + filler) == "llamacpp"
    assert detect_wire(filler + b'data: {"choices":[],"timings":{}}\n\n') == "openai-chat"
