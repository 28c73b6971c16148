"""dshstream._core.classify end to end: real provider error bodies over HTTP and in-band, the
precedence of the decision table, the built failure (headline, detail, request id,
serving provider, wait) and a secret-leak matrix.

The word predicates are in tests/core/test_classify_lexicon.py, header parsing in
tests/core/test_headers.py, display codes in tests/cli/test_display_codes.py."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pytest

from dshstream._core.classify import classify_error_payload, classify_http_error
from dshstream._core.errors import (
    AuthenticationError,
    ContentBlockedError,
    ContextWindowExceededError,
    InvalidRequestError,
    ModelNotFoundError,
    OverloadedError,
    QuotaExceededError,
    RateLimitError,
    ServerError,
    StreamTimeoutError,
    error_class_for,
    error_for,
)
from dshstream._core.redact import register_secret, unregister_secret
from dshstream._core.types import LlmFailure

# a phrase, an overflow's figures when the provider gave them, the code and status
HEADLINE = re.compile(
    r"^(?:[a-z][a-z0-9._\-]*: )?[a-zA-Z ]+(?: by \d+ tokens \(\d+ > \d+\))? \([A-Z_0-9]+(?:, HTTP \d{3})?\)$"
)

# --------------------------------------------------------------------------- real bodies
# Bodies as the providers publish/return them (keys and ids shortened or faked).

OPENAI_INVALID_KEY = {
    "error": {
        "message": "Incorrect API key provided: sk-proj-********************abcd. You can find your API key "
        "at https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
}
OPENAI_INSUFFICIENT_QUOTA = {
    "error": {
        "message": "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
}
OPENAI_RATE_LIMIT = {
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, "
        "Used 29000, Requested 2000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits "
        "to learn more.",
        "type": "tokens",
        "param": None,
        "code": "rate_limit_exceeded",
    }
}
OPENAI_CONTEXT = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "130012 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OPENAI_MODEL_NOT_FOUND = {
    "error": {
        "message": "The model `gpt-5-turbo` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }
}
ANTHROPIC_AUTH = {
    "type": "error",
    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
}
ANTHROPIC_OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
ANTHROPIC_RATE_LIMIT = {
    "type": "error",
    "error": {
        "type": "rate_limit_error",
        "message": "This request would exceed the rate limit for your organization (abc) of 50,000 input tokens "
        "per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response "
        "headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again "
        "later.",
    },
}
ANTHROPIC_TOO_LONG = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "prompt is too long: 213462 tokens > 200000 maximum"},
}
ANTHROPIC_MODEL = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-3-opus-latest"}}
ANTHROPIC_CREDIT_BALANCE = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to "
        "upgrade or purchase credits.",
    },
}
GEMINI_KEY_INVALID = {
    "error": {
        "code": 400,
        "message": "API key not valid. Please pass a valid API key.",
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            }
        ],
    }
}
GEMINI_QUOTA = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details. For more "
        "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
        "status": "RESOURCE_EXHAUSTED",
    }
}
GEMINI_PER_MINUTE = {
    "error": {
        "code": 429,
        "message": GEMINI_QUOTA["error"]["message"],
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                        "quotaDimensions": {"location": "global", "model": "gemini-2.0-flash"},
                        "quotaValue": "15",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "27s"},
        ],
    }
}
# Vertex AI's 429 as its users quote it (GoogleCloudPlatform/Open_Data_QnA#61,
# felixbinder/introspection_self_prediction#66), in Google's error envelope: per minute,
# retry with backoff (Vertex's error-code-429 page) -> RATE_LIMIT, not QUOTA.
VERTEX_PER_MINUTE_MESSAGE = (
    "Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model "
    "with base model: gemini-pro. Please submit a quota increase request. "
    "https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai."
)
VERTEX_PER_MINUTE = {"error": {"code": 429, "message": VERTEX_PER_MINUTE_MESSAGE, "status": "RESOURCE_EXHAUSTED"}}
VERTEX_PER_DAY = {
    "error": {"code": 429, "message": VERTEX_PER_MINUTE_MESSAGE.replace("per_minute", "per_day"), "status": "RESOURCE_EXHAUSTED"}
}
# The Gemini API's per-minute 429 (google/generative-ai-docs#236): the period is in the
# message and in the ErrorInfo's quota_limit.
GEMINI_PER_MINUTE_ERROR_INFO = {
    "error": {
        "code": 429,
        "message": "Quota exceeded for quota metric 'Generate Content API requests per minute' and limit "
        "'GenerateContent request limit per minute for a region' of service 'generativelanguage.googleapis.com' "
        "for consumer 'project_number:696498078762'.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "RATE_LIMIT_EXCEEDED",
                "domain": "googleapis.com",
                "metadata": {
                    "service": "generativelanguage.googleapis.com",
                    "quota_metric": "generativelanguage.googleapis.com/generate_content_requests",
                    "quota_limit": "GenerateContentRequestsPerMinutePerProjectPerRegion",
                },
            }
        ],
    }
}
# The free tier's daily cap: a RetryInfo is there, but the quota is per day -> QUOTA.
GEMINI_PER_DAY = {
    "error": {
        **GEMINI_PER_MINUTE["error"],
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
                        "quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
                        "quotaValue": "20",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "38s"},
        ],
    }
}
GEMINI_RESOURCE_EXHAUSTED = {
    "error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).", "status": "RESOURCE_EXHAUSTED"}
}
GEMINI_OVERLOADED = {
    "error": {"code": 503, "message": "The model is overloaded. Please try again later.", "status": "UNAVAILABLE"}
}
GEMINI_DOUBLE_ENCODED = {
    "error": {
        "code": 400,
        "message": json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "* GenerateContentRequest.contents: contents is not specified\n",
                    "status": "INVALID_ARGUMENT",
                }
            },
            indent=2,
        ),
        "status": "Bad Request",
    }
}
GEMINI_DOUBLE_ENCODED_KEY = {
    "error": {
        "code": 400,
        "message": json.dumps(GEMINI_KEY_INVALID, indent=2),
        "status": "Bad Request",
    }
}
GEMINI_MODEL_404 = {
    "error": {
        "code": 404,
        "message": "models/gemini-1.0-pro is not found for API version v1beta, or is not supported for "
        "generateContent. Call ListModels to see the list of available models and their supported methods.",
        "status": "NOT_FOUND",
    }
}
GEMINI_INTERNAL = {
    "error": {
        "code": 500,
        "message": "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
        "status": "INTERNAL",
    }
}
DEEPSEEK_BALANCE = {
    "error": {"message": "Insufficient Balance", "type": "unknown_error", "param": None, "code": "invalid_request_error"}
}
OPENROUTER_CREDITS = {
    "error": {
        "message": "This request requires more credits, or fewer max_tokens. You requested up to 16384 tokens, "
        "but can only afford 3522. To increase, visit https://openrouter.ai/settings/credits and upgrade to a "
        "paid account",
        "code": 402,
    }
}
OPENROUTER_INSUFFICIENT = {
    "error": {"message": "Insufficient credits. Add more using https://openrouter.ai/credits", "code": 402}
}
OPENROUTER_UPSTREAM = {
    "error": {
        "code": 502,
        "message": "Provider returned error",
        "metadata": {"provider_name": "Fireworks", "raw": '{"error":"upstream failure"}'},
    },
    "user_id": "user_2abc",
}
OPENROUTER_UPSTREAM_RATE = {
    "error": {
        "code": 429,
        "message": "Provider returned error",
        "metadata": {
            "provider_name": "Google AI Studio",
            "raw": "google/gemini-2.0-flash-exp:free is temporarily rate-limited upstream. Please retry shortly.",
        },
    }
}
GROQ_TOOL_USE_FAILED = {
    "error": {
        "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.",
        "type": "invalid_request_error",
        "code": "tool_use_failed",
        "failed_generation": '<function=get_weather{"city": "Paris"}</function>',
    }
}
GROQ_CONTEXT = {
    "error": {
        "message": "Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
GROQ_DECOMMISSIONED = {
    "error": {
        "message": "The model `llama3-70b-8192` has been decommissioned and is no longer supported. Please refer "
        "to https://console.groq.com/docs/deprecations for a recommendation on which model to use instead.",
        "type": "invalid_request_error",
        "code": "model_decommissioned",
    }
}
MISTRAL_CONTEXT = {
    "object": "error",
    "message": "Prompt contains 40005 tokens and 0 draft tokens, too large for model with 32768 maximum context "
    "length",
    "type": "invalid_request_error",
    "param": None,
    "code": None,
}
MISTRAL_UNAUTHORIZED = {"message": "Unauthorized", "request_id": "7f0e0a0b1c2d"}
MISTRAL_RATE = {"message": "Requests rate limit exceeded"}
MISTRAL_422 = {
    "object": "error",
    "message": {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required", "input": None}]},
    "type": "invalid_request_message_error",
    "param": None,
    "code": None,
}
AZURE_CONTENT_FILTER = {
    "error": {
        "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management "
        "policy. Please modify your prompt and retry.",
        "type": None,
        "param": "prompt",
        "code": "content_filter",
        "status": 400,
    }
}


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    body: Any
    code: str
    headers: dict[str, str] | None = None
    retry_after: float | None = None
    request_id: str | None = None
    serving_provider: str | None = None
    detail_has: str | None = None
    #: (limit, requested) of a context overflow whose message gives them
    figures: tuple[int, int] | None = None


HTTP_CASES = [
    Case("openai invalid_api_key", 401, OPENAI_INVALID_KEY, "AUTH", {"x-request-id": "req_abc"}, request_id="req_abc"),
    Case("openai insufficient_quota", 429, OPENAI_INSUFFICIENT_QUOTA, "QUOTA", detail_has="exceeded your current quota"),
    Case(
        "openai rate_limit_exceeded",
        429,
        OPENAI_RATE_LIMIT,
        "RATE_LIMIT",
        {"Retry-After": "20", "x-request-id": "req_1"},
        retry_after=20.0,
        request_id="req_1",
    ),
    Case("openai rate limit from text", 429, OPENAI_RATE_LIMIT, "RATE_LIMIT", retry_after=2.0),
    Case("openai rate limit ms header", 429, OPENAI_RATE_LIMIT, "RATE_LIMIT", {"retry-after-ms": "1500"}, retry_after=1.5),
    Case(
        "openai context_length_exceeded", 400, OPENAI_CONTEXT, "CONTEXT_WINDOW_EXCEEDED", detail_has="128000",
        figures=(128000, 130012),
    ),
    Case("openai model_not_found", 404, OPENAI_MODEL_NOT_FOUND, "MODEL_NOT_FOUND", detail_has="gpt-5-turbo"),
    Case(
        "anthropic authentication_error",
        401,
        ANTHROPIC_AUTH,
        "AUTH",
        {"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
        request_id="req_011CSHoEeqs5C35K2UUqR7Fy",
    ),
    Case("anthropic request_id from body", 401, ANTHROPIC_AUTH, "AUTH", request_id="req_011CSHoEeqs5C35K2UUqR7Fy"),
    Case("anthropic overloaded_error 529", 529, ANTHROPIC_OVERLOADED, "OVERLOADED"),
    Case("anthropic rate_limit_error", 429, ANTHROPIC_RATE_LIMIT, "RATE_LIMIT", {"retry-after": "17"}, retry_after=17.0),
    Case(
        "anthropic prompt too long", 400, ANTHROPIC_TOO_LONG, "CONTEXT_WINDOW_EXCEEDED", detail_has="213462",
        figures=(200000, 213462),
    ),
    Case("anthropic not_found_error model", 404, ANTHROPIC_MODEL, "MODEL_NOT_FOUND", detail_has="claude-3-opus-latest"),
    Case("anthropic credit balance too low", 400, ANTHROPIC_CREDIT_BALANCE, "QUOTA"),
    Case("gemini API_KEY_INVALID 400", 400, GEMINI_KEY_INVALID, "AUTH", detail_has="API_KEY_INVALID"),
    Case("gemini RESOURCE_EXHAUSTED quota wording", 429, GEMINI_QUOTA, "QUOTA"),
    Case("gemini per-minute quota is a rate limit", 429, GEMINI_PER_MINUTE, "RATE_LIMIT", retry_after=27.0),
    Case("gemini RESOURCE_EXHAUSTED plain", 429, GEMINI_RESOURCE_EXHAUSTED, "RATE_LIMIT"),
    Case("vertex per-minute quota wording is a rate limit", 429, VERTEX_PER_MINUTE, "RATE_LIMIT"),
    Case("vertex per-day quota wording is a quota", 429, VERTEX_PER_DAY, "QUOTA"),
    Case("gemini per-minute ErrorInfo quota_limit is a rate limit", 429, GEMINI_PER_MINUTE_ERROR_INFO, "RATE_LIMIT"),
    Case("gemini per-day QuotaFailure is a quota despite RetryInfo", 429, GEMINI_PER_DAY, "QUOTA", retry_after=38.0),
    Case("gemini UNAVAILABLE overloaded", 503, GEMINI_OVERLOADED, "OVERLOADED"),
    Case("gemini double-encoded", 400, GEMINI_DOUBLE_ENCODED, "INVALID_REQUEST", detail_has="contents is not specified"),
    Case("gemini double-encoded key invalid", 400, GEMINI_DOUBLE_ENCODED_KEY, "AUTH"),
    Case("gemini model 404", 404, GEMINI_MODEL_404, "MODEL_NOT_FOUND"),
    Case("gemini INTERNAL 500", 500, GEMINI_INTERNAL, "SERVER"),
    Case("deepseek insufficient balance 402", 402, DEEPSEEK_BALANCE, "QUOTA", {"x-deepseek-request-id": "ds-1"}, request_id="ds-1"),
    Case("openrouter affordability 402", 402, OPENROUTER_CREDITS, "CREDIT_LIMIT", detail_has="can only afford 3522"),
    Case("openrouter insufficient credits 402", 402, OPENROUTER_INSUFFICIENT, "CREDIT_LIMIT"),
    Case(
        "openrouter upstream 502",
        502,
        OPENROUTER_UPSTREAM,
        "SERVER",
        serving_provider="Fireworks",
        detail_has="upstream failure",
    ),
    Case("openrouter upstream 429", 429, OPENROUTER_UPSTREAM_RATE, "RATE_LIMIT", serving_provider="Google AI Studio"),
    Case("groq tool_use_failed", 400, GROQ_TOOL_USE_FAILED, "INVALID_REQUEST", detail_has="tool_use_failed"),
    Case("groq reduce the length", 400, GROQ_CONTEXT, "CONTEXT_WINDOW_EXCEEDED"),
    Case("groq decommissioned", 400, GROQ_DECOMMISSIONED, "MODEL_NOT_FOUND"),
    Case("mistral context", 400, MISTRAL_CONTEXT, "CONTEXT_WINDOW_EXCEEDED", figures=(32768, 40005)),
    Case("mistral unauthorized", 401, MISTRAL_UNAUTHORIZED, "AUTH", request_id="7f0e0a0b1c2d"),
    Case("mistral rate limit", 429, MISTRAL_RATE, "RATE_LIMIT"),
    Case("mistral 422 validation", 422, MISTRAL_422, "INVALID_REQUEST", detail_has="Field required"),
    Case("azure content filter", 400, AZURE_CONTENT_FILTER, "CONTENT_FILTER"),
]

CATEGORY = {
    "AUTH": ("api_error", False, AuthenticationError),
    "QUOTA": ("api_error", False, QuotaExceededError),
    "CREDIT_LIMIT": ("api_error", False, QuotaExceededError),
    "CONTEXT_WINDOW_EXCEEDED": ("api_error", False, ContextWindowExceededError),
    "INVALID_REQUEST": ("api_error", False, InvalidRequestError),
    "RATE_LIMIT": ("rate_limit", True, RateLimitError),
    "MODEL_NOT_FOUND": ("model_error", False, ModelNotFoundError),
    "CONTENT_FILTER": ("content_blocked", False, ContentBlockedError),
    "SERVER": ("provider_overloaded", True, ServerError),
    "OVERLOADED": ("provider_overloaded", True, OverloadedError),
    "TIMEOUT": ("timeout", True, StreamTimeoutError),
}


PHRASES = {
    "AUTH": "authentication failed",
    "QUOTA": "quota or balance exhausted",
    "CREDIT_LIMIT": "not enough credits for the requested output",
    "CONTEXT_WINDOW_EXCEEDED": "context window exceeded",
    "INVALID_REQUEST": "invalid request",
    "RATE_LIMIT": "rate limited",
    "MODEL_NOT_FOUND": "model not found",
    "CONTENT_FILTER": "content blocked",
    "SERVER": "server error",
    "OVERLOADED": "overloaded",
    "TIMEOUT": "timed out",
    "UNKNOWN": "unclassified error",
}


def _check_common(failure: LlmFailure, code: str) -> None:
    assert failure.code == code
    if code in CATEGORY:
        category, retryable, cls = CATEGORY[code]
        assert failure.category == category
        assert failure.retryable is retryable
        assert error_class_for(failure) is cls
    assert HEADLINE.match(failure.message), failure.message
    if failure.detail is not None:
        assert len(failure.detail) <= 2000


@pytest.mark.parametrize("case", HTTP_CASES, ids=lambda c: c.name)
def test_http_real_bodies(case: Case) -> None:
    body = json.dumps(case.body)
    failure = classify_http_error(case.status, body, case.headers, provider="prov", now=1_700_000_000.0)
    _check_common(failure, case.code)
    assert failure.status == case.status
    assert failure.provider == "prov"
    assert failure.message == f"prov: {failure.message.split(': ', 1)[1]}"
    assert f"({case.code}, HTTP {case.status})" in failure.message
    assert failure.retry_after == case.retry_after
    assert failure.request_id == case.request_id
    assert failure.serving_provider == case.serving_provider
    if case.detail_has is not None:
        assert failure.detail is not None and case.detail_has in failure.detail
    # The headline is built from facts only: never upstream text (an overflow's figures are facts).
    by = ""
    if case.figures is not None:
        limit, requested = case.figures
        by = f" by {requested - limit} tokens ({requested} > {limit})"
    assert (failure.context_limit, failure.context_requested) == (case.figures or (None, None))
    assert failure.message == f"prov: {PHRASES[case.code]}{by} ({case.code}, HTTP {case.status})"


@pytest.mark.parametrize("case", HTTP_CASES, ids=lambda c: c.name)
def test_same_bodies_in_band(case: Case) -> None:
    """In-band errors map to the same code as the HTTP error with that body."""
    failure = classify_error_payload(case.body, provider="prov", status=case.status)
    _check_common(failure, case.code)
    if case.serving_provider:
        assert failure.serving_provider == case.serving_provider


def test_bytes_body_and_expected_headline() -> None:
    failure = classify_http_error(429, json.dumps(OPENAI_RATE_LIMIT).encode(), {"retry-after": "3"}, provider="openai")
    assert failure.message == "openai: rate limited (RATE_LIMIT, HTTP 429)"
    assert failure.retry_after == 3.0


def test_html_502_body() -> None:
    html_body = (
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
        "</center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n"
    )
    failure = classify_http_error(502, html_body, {"cf-ray": "8a1b2c3d4e5f6a7b-SJC"}, provider="openrouter")
    _check_common(failure, "SERVER")
    assert failure.request_id == "8a1b2c3d4e5f6a7b-SJC"
    assert failure.detail is not None and "<" not in failure.detail and "Bad Gateway" in failure.detail


def test_html_body_wording_is_ignored() -> None:
    page = "<!DOCTYPE html><html><body>rate limit exceeded; model not found; insufficient balance</body></html>"
    assert classify_http_error(400, page).code == "INVALID_REQUEST"
    assert classify_http_error(503, page).code == "SERVER"


@pytest.mark.parametrize("body", [None, "", b"", "   \n"])
def test_empty_body(body: bytes | str | None) -> None:
    failure = classify_http_error(500, body, provider="deepseek")
    _check_common(failure, "SERVER")
    assert failure.detail is None
    assert failure.message == "deepseek: server error (SERVER, HTTP 500)"


def test_sse_shaped_error_body() -> None:
    body = "event: error\ndata: " + json.dumps(ANTHROPIC_OVERLOADED) + "\n\n"
    assert classify_http_error(500, body).code == "OVERLOADED"


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (401, "insufficient balance", "AUTH"),  # auth first
        (403, "", "AUTH"),
        (500, "Insufficient Balance", "QUOTA"),  # quota wording at any status (seed §13.15)
        (429, "can only afford 100 tokens", "CREDIT_LIMIT"),
        (400, "The model `foo` does not exist", "MODEL_NOT_FOUND"),  # model wording at any status
        (404, "", "HTTP_404"),
        (404, '{"error": {"message": "Not Found"}}', "HTTP_404"),
        (404, "404 page not found", "HTTP_404"),
        (402, "", "QUOTA"),
        (413, "prompt is too long", "INVALID_REQUEST"),
        (413, "", "INVALID_REQUEST"),
        (400, "", "INVALID_REQUEST"),
        (422, "unprocessable", "INVALID_REQUEST"),
        (409, "context window exceeded", "CONTEXT_WINDOW_EXCEEDED"),  # other 4xx with overflow wording
        (408, "", "TIMEOUT"),
        (504, "Gateway Timeout", "TIMEOUT"),
        (529, "", "OVERLOADED"),
        (500, "server is overloaded", "OVERLOADED"),
        (503, "Service Unavailable", "SERVER"),
        (502, "", "SERVER"),
        (500, "prompt is too long", "SERVER"),  # overflow wording only on 4xx
        (418, "I'm a teapot", "HTTP_418"),
        (501, "", "HTTP_501"),
        (429, "Too Many Requests", "RATE_LIMIT"),
        (400, "quota resets in one minute", "INVALID_REQUEST"),
        # a capability refusal never succeeds on retry, whatever the status (llama.cpp: 500)
        (500, '{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, '
         'you may need to provide the mmproj","type":"server_error"}}', "INVALID_REQUEST"),
        (500, "Failed to load image or audio file", "INVALID_REQUEST"),
        (400, "This model does not support image input", "INVALID_REQUEST"),
        (404, "No endpoints found that support image input", "INVALID_REQUEST"),
        (400, "Audio input is not supported for this model", "INVALID_REQUEST"),
        (503, "upstream image service unavailable", "SERVER"),  # not a refusal
        # a local engine's full context comes with a 500, and a retry overflows again
        (500, '{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}',
         "CONTEXT_WINDOW_EXCEEDED"),  # llama.cpp's server, LM Studio
        (500, "failed to decode the batch: KV cache is full - try increasing it via the context size",
         "CONTEXT_WINDOW_EXCEEDED"),
    ],
)
def test_http_precedence(status: int, body: str, code: str) -> None:
    failure = classify_http_error(status, body)
    assert failure.code == code
    assert failure.status == status


def test_http_fallback_codes_defaults() -> None:
    teapot = classify_http_error(418, "")
    assert (teapot.category, teapot.retryable) == ("api_error", False)
    assert isinstance(error_for(teapot), InvalidRequestError)
    not_impl = classify_http_error(501, "")
    assert isinstance(error_for(not_impl), ServerError)


def test_unsafe_provider_name_left_out_of_headline() -> None:
    failure = classify_http_error(500, "", provider="evil <@&42> sk-abcdefghijklmnopqrstu")  # CANARY: a fake key for the test
    assert failure.message == "server error (SERVER, HTTP 500)"
    assert classify_http_error(500, "").message == "server error (SERVER, HTTP 500)"


def test_detail_capped_and_redacted_before_cut() -> None:
    key = "sk-test-CANARY-0123456789abcdef"
    body = "x" * 1955 + " " + key + " " + "y" * 5000
    failure = classify_http_error(500, body, secrets=[key])
    assert failure.detail is not None
    assert len(failure.detail) <= 2000
    assert "…[truncated" in failure.detail
    assert "CANARY" not in failure.detail and "sk-test" not in failure.detail


# --------------------------------------------------------------------------- in-band payloads


@pytest.mark.parametrize(
    ("payload", "code", "status"),
    [
        (ANTHROPIC_OVERLOADED, "OVERLOADED", None),
        ({"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}, "RATE_LIMIT", None),
        ({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}, "SERVER", None),
        ({"type": "error", "error": {"type": "authentication_error", "message": "bad"}}, "AUTH", None),
        ({"type": "error", "error": {"type": "permission_error", "message": "no"}}, "AUTH", None),
        (ANTHROPIC_MODEL, "MODEL_NOT_FOUND", None),
        ({"type": "error", "error": {"type": "not_found_error", "message": "File not found: f_1"}}, "HTTP_404", None),
        (ANTHROPIC_TOO_LONG, "CONTEXT_WINDOW_EXCEEDED", None),
        ({"type": "error", "error": {"type": "invalid_request_error", "message": "bad tool"}}, "INVALID_REQUEST", None),
        ({"error": {"message": "The server had an error.", "type": "server_error", "param": None, "code": None}}, "SERVER", None),
        ({"error": {"code": 500, "message": "Internal error"}}, "SERVER", 500),
        ({"error": {"code": "429", "message": "slow down"}}, "RATE_LIMIT", 429),
        ({"error": "something broke"}, "UNKNOWN", None),
        ({"error": "Request timed out"}, "TIMEOUT", None),
        ({"error": {"message": "rate limit exceeded"}}, "RATE_LIMIT", None),
        ({"error": {"code": "context_length_exceeded", "message": "too long"}}, "CONTEXT_WINDOW_EXCEEDED", None),
        (
            {"type": "error", "code": "insufficient_quota", "message": "You exceeded your current quota", "param": None,
             "sequence_number": 2},
            "QUOTA",
            None,
        ),
        (
            {"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                                                     "error": {"code": "server_error", "message": "An error occurred"}}},
            "SERVER",
            None,
        ),
        ({"error": {"code": "server_error", "message": "An error occurred"}}, "SERVER", None),
        ({"error": {"code": "rate_limit_exceeded", "message": "Rate limit reached"}}, "RATE_LIMIT", None),
        (GEMINI_OVERLOADED, "OVERLOADED", 503),
        ([GEMINI_OVERLOADED], "OVERLOADED", 503),
        (GEMINI_QUOTA, "QUOTA", 429),
        (GEMINI_RESOURCE_EXHAUSTED, "RATE_LIMIT", 429),
        ({"error": {"code": 504, "message": "Deadline expired", "status": "DEADLINE_EXCEEDED"}}, "TIMEOUT", 504),
        ({"error": {"message": "Deadline expired", "status": "DEADLINE_EXCEEDED"}}, "TIMEOUT", None),
        ({"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}, "AUTH", 403),
        ({"error": {"message": "denied", "status": "UNAUTHENTICATED"}}, "AUTH", None),
        ({"error": {"code": 400, "message": "bad field", "status": "INVALID_ARGUMENT"}}, "INVALID_REQUEST", 400),
        ({"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}}, "HTTP_404", 404),
        (GEMINI_DOUBLE_ENCODED, "INVALID_REQUEST", 400),
        (OPENROUTER_UPSTREAM, "SERVER", 502),
        (GROQ_TOOL_USE_FAILED, "INVALID_REQUEST", None),
        (AZURE_CONTENT_FILTER, "CONTENT_FILTER", 400),
        (json.dumps(ANTHROPIC_OVERLOADED), "OVERLOADED", None),
        (json.dumps(ANTHROPIC_OVERLOADED).encode(), "OVERLOADED", None),
        ("plain text: upstream connect error", "UNKNOWN", None),
        ({"unexpected": True}, "UNKNOWN", None),
        (None, "UNKNOWN", None),
    ],
)
def test_error_payloads(payload: object, code: str, status: int | None) -> None:
    failure = classify_error_payload(payload, provider="prov")
    _check_common(failure, code)
    assert failure.status == status


def test_payload_overloaded_same_class_as_http_529() -> None:
    in_band = classify_error_payload(ANTHROPIC_OVERLOADED, provider="anthropic")
    http = classify_http_error(529, json.dumps(ANTHROPIC_OVERLOADED), provider="anthropic")
    assert (in_band.code, in_band.category, in_band.retryable) == (http.code, http.category, http.retryable)
    assert type(error_for(in_band)) is type(error_for(http)) is OverloadedError
    assert in_band.message == "anthropic: overloaded (OVERLOADED)"


def test_payload_status_argument_and_serving_provider() -> None:
    failure = classify_error_payload(OPENROUTER_UPSTREAM_RATE, provider="openrouter", status=200)
    assert failure.code == "RATE_LIMIT"
    assert failure.status == 429
    assert failure.serving_provider == "Google AI Studio"
    assert failure.detail is not None and "temporarily rate-limited upstream" in failure.detail


def test_payload_gemini_retry_delay() -> None:
    failure = classify_error_payload(GEMINI_PER_MINUTE, provider="gemini")
    assert failure.code == "RATE_LIMIT"
    assert failure.retry_after == 27.0


# --------------------------------------------------------------------------- wording alone


@pytest.mark.parametrize(
    ("text", "code"),
    [
        # seed §6.2 vectors: plain-text errors with no status and no error document
        ("provider timed out", "TIMEOUT"),
        ("vector length limit exceeded", "UNKNOWN"),
        ("prompt is too long: 213462 tokens > 200000 maximum", "CONTEXT_WINDOW_EXCEEDED"),
        ("ThrottlingException: Too many tokens, rate limit reached", "RATE_LIMIT"),
        # more of the pi-ai text classifier
        ("rate limit hit", "RATE_LIMIT"),
        ("failed to buffer the request body: length limit exceeded", "INVALID_REQUEST"),
        ("request body too large", "INVALID_REQUEST"),
        ("invalid request: malformed tool arguments", "INVALID_REQUEST"),
        ("The operation timed out.", "TIMEOUT"),
        ("HTTPSConnectionPool(host='api.openai.com', port=443): Read timed out. (read timeout=600)", "TIMEOUT"),
        ("requests.exceptions.ReadTimeout: boom", "TIMEOUT"),
        ("Incorrect API key provided", "AUTH"),
        ("The model `gpt-9` does not exist", "MODEL_NOT_FOUND"),
        ("Your input exceeds the context window of this model.", "CONTEXT_WINDOW_EXCEEDED"),
        ("something odd happened", "UNKNOWN"),
        ("process terminated by signal, please restart", "UNKNOWN"),
        ("exit code 137", "UNKNOWN"),
        # StreamGenerateContent is not a rate limit
        ("google.genai StreamGenerateContent failed: unexpected payload", "UNKNOWN"),
    ],
)
def test_plain_text_payload_by_wording(text: str, code: str) -> None:
    failure = classify_error_payload(text, provider="pi-ai")
    _check_common(failure, code)
    assert failure.status is None
    assert failure.detail == text


def test_plain_text_payload_retry_after_from_wording() -> None:
    failure = classify_error_payload("rate limited, please try again in 750ms", status=429)
    assert failure.retry_after == 0.75


# --------------------------------------------------------------------------- leak matrix

CANARY = "sk-test-CANARY-0123456789abcdef"


def _echoes(key: str) -> dict[str, str]:
    return {
        "raw": key,
        "base64": base64.b64encode(f"Bearer {key}".encode()).decode(),
        "url": urllib.parse.quote(f"Bearer {key}", safe="").replace("-", "%2D"),
        "hex": key.encode().hex(),
    }


def _windows(text: str, size: int = 12) -> set[str]:
    return {text[i : i + size] for i in range(0, max(1, len(text) - size + 1))}


LEAK_TEMPLATES: list[tuple[str, int, str]] = [
    ("openai-401", 401, json.dumps({"error": {"message": "Incorrect API key provided: ECHO.", "type": "invalid_request_error", "code": "invalid_api_key"}})),
    ("openai-429", 429, json.dumps({"error": {"message": "Rate limit for key ECHO", "code": "rate_limit_exceeded"}})),
    ("openai-400", 400, json.dumps({"error": {"message": "context_length_exceeded for ECHO", "code": "context_length_exceeded"}})),
    ("anthropic-529", 529, json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded ECHO"}})),
    ("anthropic-404", 404, json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "model: ECHO"}})),
    ("gemini-400", 400, json.dumps({"error": {"code": 400, "message": "API key not valid: ECHO", "status": "INVALID_ARGUMENT"}})),
    ("gemini-double", 400, json.dumps({"error": {"code": 400, "message": json.dumps({"error": {"message": "bad ECHO", "status": "INVALID_ARGUMENT"}})}})),
    ("openrouter-502", 502, json.dumps({"error": {"code": 502, "message": "Provider returned error", "metadata": {"provider_name": "X", "raw": "upstream said ECHO"}}})),
    ("deepseek-402", 402, json.dumps({"error": {"message": "Insufficient Balance ECHO"}})),
    ("plain-500", 500, "backend exploded with header Authorization: ECHO"),
    ("html-502", 502, "<html><body><h1>502</h1><p>ECHO</p></body></html>"),
    ("json-key", 400, '{"api_key": "ECHO", "error": {"message": "bad"}}'),
]


def _assert_no_leak(failure: LlmFailure, echo: str) -> None:
    error = error_for(failure)
    surfaces = {
        "message": failure.message,
        "detail": failure.detail or "",
        "str": str(error),
        "repr": repr(error),
        "failure repr": repr(failure),
    }
    forbidden = {"CANARY", CANARY, echo} | _windows(echo)
    for where, text in surfaces.items():
        for bad in forbidden:
            assert bad not in text, f"{bad!r} leaked into {where}: {text!r}"
    for word in ("@everyone", "<@"):
        assert word not in failure.message


@pytest.mark.parametrize("encoding", ["raw", "base64", "url", "hex"])
@pytest.mark.parametrize(("name", "status", "template"), LEAK_TEMPLATES, ids=[t[0] for t in LEAK_TEMPLATES])
def test_leak_matrix(encoding: str, name: str, status: int, template: str) -> None:
    echo = _echoes(CANARY)[encoding]
    body = template.replace("ECHO", f"{echo} @everyone <@&42>")
    http = classify_http_error(status, body, {"x-request-id": "req_1"}, provider="prov", secrets=[CANARY])
    _assert_no_leak(http, echo)
    try:
        payload: object = json.loads(body)
    except ValueError:
        payload = body
    in_band = classify_error_payload(payload, provider="prov", secrets=[CANARY])
    _assert_no_leak(in_band, echo)


@pytest.mark.parametrize("encoding", ["raw", "base64", "url", "hex"])
def test_leak_matrix_registered_secret(encoding: str) -> None:
    key = "zz-registered-Q9w8e7r6t5y4u3i2"
    echo = _echoes(key)[encoding]
    register_secret(key)
    try:
        http = classify_http_error(500, f"failed for {echo}")
        in_band = classify_error_payload(f"boom {echo}")
    finally:
        unregister_secret(key)
    for item in (http, in_band):
        assert item.detail is not None
        for window in _windows(echo):
            assert window not in item.detail


def test_secret_in_headers_never_reaches_failure() -> None:
    failure = classify_http_error(401, "", {"authorization": f"Bearer {CANARY}", "x-request-id": CANARY})
    assert failure.request_id is None
    assert "CANARY" not in repr(failure)


class _Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")

    __str__ = __repr__


def _circular() -> dict[str, object]:
    data: dict[str, object] = {}
    data["self"] = data
    return data


def _deep() -> dict[str, object]:
    data: dict[str, object] = {"error": {"message": "x"}}
    for _ in range(3000):
        data = {"error": data}
    return data


@pytest.mark.parametrize(
    "payload",
    [
        _Hostile(),
        {"error": {"message": _Hostile()}},
        _circular(),
        {"error": {"message": _circular()}},
        _deep(),
        {"error": {"code": True, "type": 123, "message": "x", "status": 99999, "details": "no", "metadata": [1]}},
        {"error": {"details": [None, 1, {"retryDelay": "forever"}, {"violations": "x"}]}},
        "[" * 100_000 + "]" * 100_000,
        "{'a': " * 5_000 + "1" + "}" * 5_000,
    ],
)
def test_classifiers_never_raise(payload: object) -> None:
    assert classify_error_payload(payload).code
    if isinstance(payload, str):
        assert classify_http_error(400, payload).code == "INVALID_REQUEST"


def test_float_code_is_a_status() -> None:
    assert classify_error_payload({"error": {"code": 429.0, "message": "x"}}).code == "RATE_LIMIT"


def test_a_capability_refusal_is_not_retryable() -> None:
    failure = classify_http_error(500, '{"error":{"message":"image input is not supported"}}', provider="local")
    assert (failure.code, failure.retryable) == ("INVALID_REQUEST", False)
