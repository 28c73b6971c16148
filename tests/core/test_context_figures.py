"""A context overflow says by how much (issue 33): the window and the tokens a request
needed, read from each provider's own wording into LlmFailure.context_limit and
context_requested, in the headline as figures, and a recovery tip naming count_tokens —
read whole and over loopback HTTP."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dshstream import ContextWindowExceededError, GenerateOptions, Message, OpenAIChatAdapter
from dshstream._core.classify.classifiers import classify_http_error
from dshstream._core.classify.context_figures import context_figures
from dshstream._core.recovery import recovery_tips
from dshstream._core.types import failure_from_dict, failure_to_dict
from dshstream._replay_server import ReplayServer, Route

# The providers' wordings (each one's error message as its API writes it); the figures
WORDINGS = [
    (  # OpenAI chat completions, and OpenRouter's copy
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130012 tokens. "
        "Please reduce the length of the messages.",
        (128000, 130012),
    ),
    (  # OpenAI and vLLM, prompt plus completion
        "This model's maximum context length is 4096 tokens. However, you requested 4596 tokens (4096 in the "
        "messages, 500 in the completion). Please reduce the length of the messages or completion.",
        (4096, 4596),
    ),
    (  # newer vLLM
        "This model's maximum context length is 2048 tokens and your request has 2100 input tokens",
        (2048, 2100),
    ),
    ("prompt is too long: 208,473 tokens > 200,000 maximum", (200000, 208473)),  # Anthropic
    (  # Anthropic, input plus max_tokens
        "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or "
        "`max_tokens` and try again",
        (200000, 203192),
    ),
    (  # Gemini
        "The input token count (1215830) exceeds the maximum number of tokens allowed (1048576).",
        (1048576, 1215830),
    ),
    (  # llama.cpp's llama-server
        "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
        (8192, 9412),
    ),
    ("This model's maximum prompt length is 131072 but the request contains 150001 tokens.", (131072, 150001)),  # xAI
    (  # Mistral
        "Prompt contains 40005 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        (32768, 40005),
    ),
]


@pytest.mark.parametrize(("text", "figures"), WORDINGS)
def test_each_providers_wording(text: str, figures: tuple[int, int]) -> None:
    assert context_figures(text) == figures


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "Your input exceeds the context window of this model. Please adjust your input and try again.",  # Responses
        "Input is too long for requested model.",  # Bedrock
        "prompt is too long: 100 tokens > 200 maximum",  # not above the limit: no overflow to report
        "maximum context length is 0 tokens. However, you requested 5 tokens",  # no window
    ],
)
def test_no_figures_without_a_pair(text: str | None) -> None:
    assert context_figures(text) is None


def test_reads_a_bounded_head_only() -> None:
    late = "x" * 5000 + "prompt is too long: 300 tokens > 200 maximum"
    assert context_figures(late) is None


def test_llama_cpp_overflow_over_loopback(server: ReplayServer) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 9412,
            "n_ctx": 8192,
        }
    }
    server.add("/v1/", Route(body=json.dumps(body).encode(), status=400, chunked=False, content_type="application/json"))
    adapter = OpenAIChatAdapter(dialect="llamacpp", base_url=f"{server.url}/v1")
    options = GenerateOptions(provider="local", model="qwen", messages=(Message.user("long"),))
    with pytest.raises(ContextWindowExceededError) as info:
        list(adapter.stream(options))
    failure = info.value.failure
    assert (failure.context_limit, failure.context_requested, failure.context_overflow) == (8192, 9412, 1220)
    assert failure.message == "local: context window exceeded by 1220 tokens (9412 > 8192) (CONTEXT_WINDOW_EXCEEDED, HTTP 400)"
    assert any("count_tokens(options)" in tip for tip in recovery_tips(failure))
    assert failure_from_dict(failure_to_dict(failure)) == failure  # the figures survive a round trip


def test_overflow_without_figures_keeps_the_plain_headline() -> None:
    body = json.dumps({"error": {"message": "Please reduce the length of the messages or completion.",
                                 "type": "invalid_request_error", "code": "context_length_exceeded"}})
    failure = classify_http_error(400, body, None, provider="groq", now=0.0)
    assert failure.code == "CONTEXT_WINDOW_EXCEEDED" and failure.context_overflow is None
    assert failure.message == "groq: context window exceeded (CONTEXT_WINDOW_EXCEEDED, HTTP 400)"
    assert "context_limit" not in failure_to_dict(failure)


def test_figures_only_for_an_overflow() -> None:
    """The same numbers in another failure's text are not read as an overflow."""
    body = json.dumps({"error": {"type": "rate_limit_error", "message": "prompt is too long: 9 tokens > 5 maximum"}})
    failure = classify_http_error(429, body, None, provider="p", now=0.0)
    assert failure.code == "RATE_LIMIT" and failure.context_limit is None
    assert failure.message == "p: rate limited (RATE_LIMIT, HTTP 429)"


@given(st.text(max_size=300))
def test_any_text_gives_none_or_an_overflow(text: str) -> None:
    figures = context_figures(text)
    assert figures is None or 0 < figures[0] < figures[1]


@given(st.integers(1, 10**9), st.integers(1, 10**6))
def test_every_pair_is_read_back(limit: int, over: int) -> None:
    requested = limit + over
    text = f"prompt is too long: {requested:,} tokens > {limit:,} maximum"
    assert context_figures(text) == (limit, requested)
    assert context_figures(f"request ({requested} tokens) exceeds the available context size ({limit} tokens)") == (
        limit,
        requested,
    )
