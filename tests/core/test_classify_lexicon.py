"""The word lexicon (dshstream._core.classify.lexicon): each predicate against the phrasings
providers really use, and against the look-alikes it must not match (word boundaries,
throttling vs quota vs overflow)."""

from __future__ import annotations

import pytest

from dshstream._core.classify import (
    classify_http_error,
    is_context_overflow,
    is_credit_limit,
    is_model_not_found,
    is_quota_exhausted,
    is_rate_limit_text,
)


@pytest.mark.parametrize(
    "text",
    [
        # seed §5.5
        "context_length_exceeded maximum context length",
        "context-window-overflowed",
        "This model maximum context length is 128000 tokens",
        "input is too long for this model",
        "request too large for model context",
        "input exceeds the model context window limit",
        # pi-ai vendor phrasings (seed §6.1)
        "prompt is too long: 213462 tokens > 200000 maximum",
        "ValidationException: Input is too long for requested model.",
        "Your input exceeds the context window of this model.",
        "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).",
        "This model's maximum prompt length is 131072 but the request contains 140000 tokens.",
        "Please reduce the length of the messages or completion.",
        "This endpoint's maximum context length is 200000 tokens. However, you requested about 210000 tokens",
        "prompt token count of 130000 exceeds the limit of 128000",
        "the request exceeds the available context size, try increasing it",
        "The number of tokens to keep from the initial prompt is greater than the context length",
        "invalid params, context window exceeds limit (2013)",
        "Invalid request: Your request exceeded model token limit: 262144",
        "Prompt contains 40005 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        "context length exceeded",
        "too many tokens",
        "token limit exceeded",
        # seed §12.1 context wording
        "the maximum context length",
        "exceeds the context length of 8192",
        "context window is exceeded",
        "too much context",
        "input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000",
        "  context\n\twindow   exceeded  ",
        "CONTEXT_LENGTH_EXCEEDED",
        # local engines whose context filled up (lexicon rule 6)
        "Context size has been exceeded.",
        "failed to decode the batch: KV cache is full - try increasing it via the context size",
        "failed to decode, try again, increasing context size or reducing parallel",
    ],
)
def test_context_overflow_true(text: str) -> None:
    assert is_context_overflow(text)


@pytest.mark.parametrize(
    "text",
    [
        # seed §5.5
        "invalid request: malformed tool arguments",
        "invalid input: temperature exceeds maximum allowed value",
        "input exceeds maximum allowed value",
        "context window size must be positive",
        # throttling is not overflow
        "ThrottlingException: Too many tokens, rate limit reached",
        "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000",
        "Request too large for gpt-4o in organization org-x on tokens per min (TPM)",
        "",
    ],
)
def test_context_overflow_false(text: str) -> None:
    assert not is_context_overflow(text)


@pytest.mark.parametrize(
    "text",
    [
        # seed §5.5
        "insufficient_quota",
        "account balance depleted",
        "usage-limit-exceeded",
        "out of credits",
        "You exceeded your current quota, please check your plan and billing details.",
        # seed §12.1 balance list
        "Insufficient Balance",
        "Your balance is insufficient",
        "no resource package available",
        "please recharge your account",
        "insufficient_user_quota",
        "Billing hard limit has been reached",
        "Your credit balance is too low to access the Anthropic API.",
        "quota exhausted",
        "Quota exceeded for quota metric",
        "insufficient quota",
    ],
)
def test_quota_true(text: str) -> None:
    assert is_quota_exhausted(text)
    assert not is_credit_limit(text)  # mutually exclusive


@pytest.mark.parametrize(
    "text",
    ["HTTP 429: rate limit reached", "quota resets in one minute", "quota: 100 requests", "insufficient credits", ""],
)
def test_quota_false(text: str) -> None:
    assert not is_quota_exhausted(text)


@pytest.mark.parametrize(
    "text",
    [
        "This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, but can only "
        "afford 3522.",
        "can only afford 100",
        "use fewer max_tokens",
        "requires more credits",
        "Insufficient credits. Add more using https://openrouter.ai/credits",
    ],
)
def test_credit_limit_true(text: str) -> None:
    assert is_credit_limit(text)
    assert not is_quota_exhausted(text)


def test_credit_and_balance_are_exclusive_balance_first() -> None:
    both = "Insufficient balance: this request requires more credits"
    assert is_quota_exhausted(both)
    assert not is_credit_limit(both)
    assert classify_http_error(402, both).code == "QUOTA"


@pytest.mark.parametrize(
    "text",
    [
        "unsupported model",
        "Invalid model: gpt-9",
        "unknown model 'foo'",
        "Unrecognized model name",
        "model gpt-9 is not supported",
        "The model `gpt-5-turbo` does not exist or you do not have access to it.",
        "model not found",
        "Model does not exist",
        "model is not available",
        "no such model: llama",
        "model_not_found",
        "The model `llama3-70b-8192` has been decommissioned and is no longer supported.",
        "This model has been deprecated",
        "The model claude-2 was retired",
        "The model gpt-3.5-turbo-0301 has reached its end of life",
        "Function 'x' not found for account 'abc'",
        "models/gemini-1.0-pro is not found for API version v1beta",
    ],
)
def test_model_not_found_true(text: str) -> None:
    assert is_model_not_found(text)


@pytest.mark.parametrize(
    "text",
    [
        "404 Not Found",
        "Not Found",
        "The `functions` parameter is deprecated for this model; use tools",
        "The model is overloaded. Please try again later.",
        "The model is currently unavailable",
        "This model's maximum context length is 8192 tokens",
        "Invalid API key",
        "file does not exist",
        "too large for model with 32768 maximum context length",
    ],
)
def test_model_not_found_false(text: str) -> None:
    assert not is_model_not_found(text)


@pytest.mark.parametrize(
    "text",
    [
        "rate limit reached",
        "Rate limited",
        "rate_limit_exceeded",
        "RateLimitError: slow",
        "Too Many Requests",
        "ThrottlingException: Rate exceeded",
        "request was throttled",
        "RESOURCE_EXHAUSTED",
        "tokens per minute",
    ],
)
def test_rate_limit_text_true(text: str) -> None:
    assert is_rate_limit_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "StreamGenerateContent failed",
        "models/gemini-pro:streamGenerateContent?alt=sse",
        "failed to generate",
        "please moderate your language",
        "accurate limits",
        "first-rate service",
        "",
    ],
)
def test_rate_limit_text_false(text: str) -> None:
    assert not is_rate_limit_text(text)
