"""The exception tree. Every failure dshstream raises is an :class:`LlmError` carrying a
structured :class:`~dshstream._core.types.LlmFailure`; nothing foreign escapes.

Contract: stdlib + ``types`` only. Route on the class or on ``error.failure.code`` /
``.category`` / ``.retryable``, never on message text. Messages are classified headlines
built by dshstream and never contain upstream text or secrets; the upstream text, redacted,
lives in ``failure.detail``.

::

    LlmError                          root; .failure: LlmFailure
    ├── AuthenticationError           AUTH (401/403, bad or missing key)
    ├── RateLimitError                RATE_LIMIT (429); .failure.retry_after
    ├── QuotaExceededError            QUOTA (balance exhausted), CREDIT_LIMIT (ask for fewer tokens)
    ├── ContextWindowExceededError    CONTEXT_WINDOW_EXCEEDED
    ├── ModelNotFoundError            MODEL_NOT_FOUND (unknown, retired or deprecated model)
    ├── ContentBlockedError           CONTENT_FILTER and other content_blocked failures
    ├── InvalidRequestError           INVALID_REQUEST and other 4xx (HTTP_404 ...)
    ├── ServerError                   SERVER (5xx)
    │   └── OverloadedError           OVERLOADED (529, Anthropic overloaded_error, 503 UNAVAILABLE)
    ├── StreamTimeoutError            TIMEOUT (connect, idle, total; 408/504)
    ├── TransportError                TRANSPORT (connection refused/reset before or during the body)
    ├── StreamClosedError             STREAM_CLOSED (EOF before the provider's terminal marker)
    ├── AbortedError                  ABORTED (cancelled by the caller)
    ├── EmptyResponseError            EMPTY_RESPONSE
    ├── ProtocolError                 MALFORMED_RESPONSE, EVENT_TOO_LARGE, CONTRACT_VIOLATION
    ├── ToolArgumentsError            TRUNCATED_TOOL_ARGUMENTS, INVALID_TOOL_ARGUMENTS
    └── ConfigurationError            NO_ADAPTER, INVALID_ADAPTER, DUPLICATE_ADAPTER, INVALID_OPTIONS ...
        └── ConfigurationTypeError    INVALID_OPTIONS_TYPE (a value of the wrong type)

``ConfigurationError`` is also a :class:`ValueError` and ``ConfigurationTypeError`` also a
:class:`TypeError`, so caller mistakes can be caught the usual Python way too. Their
messages name the field, the type of the value given and what is expected; they never
echo a credential.
"""

from __future__ import annotations

from typing import ClassVar

from .types import FailureCategory, LlmFailure

# code -> (category, retryable): the defaults a failure with that code gets.
CODE_DEFAULTS: dict[str, tuple[FailureCategory, bool]] = {
    "AUTH": ("api_error", False),
    "QUOTA": ("api_error", False),
    "CREDIT_LIMIT": ("api_error", False),
    "CONTEXT_WINDOW_EXCEEDED": ("api_error", False),
    "INVALID_REQUEST": ("api_error", False),
    "RATE_LIMIT": ("rate_limit", True),
    "MODEL_NOT_FOUND": ("model_error", False),
    "CONTENT_FILTER": ("content_blocked", False),
    "SERVER": ("provider_overloaded", True),
    "OVERLOADED": ("provider_overloaded", True),
    "TIMEOUT": ("timeout", True),
    "TRANSPORT": ("unknown", True),
    "STREAM_CLOSED": ("unknown", True),
    "EMPTY_RESPONSE": ("unknown", True),
    "MALFORMED_RESPONSE": ("unknown", False),
    "EVENT_TOO_LARGE": ("unknown", False),
    "CONTRACT_VIOLATION": ("unknown", False),
    "ABORTED": ("unknown", False),
    "TRUNCATED_TOOL_ARGUMENTS": ("api_error", False),
    "INVALID_TOOL_ARGUMENTS": ("api_error", False),
    "NO_ADAPTER": ("api_error", False),
    "INVALID_ADAPTER": ("api_error", False),
    "DUPLICATE_ADAPTER": ("api_error", False),
    "REGISTRATION_DISPOSED": ("api_error", False),
    "INVALID_OPTIONS": ("api_error", False),
    "INVALID_OPTIONS_TYPE": ("api_error", False),
    "UNKNOWN": ("unknown", False),
}


def make_failure(
    code: str,
    message: str,
    *,
    category: FailureCategory | None = None,
    retryable: bool | None = None,
    status: int | None = None,
    retry_after: float | None = None,
    request_id: str | None = None,
    provider: str | None = None,
    serving_provider: str | None = None,
    detail: str | None = None,
) -> LlmFailure:
    """Build a failure, filling category and retryability from the code's defaults.

    ``detail`` must already be redacted; it is capped at 2,000 characters here.
    """
    default_category, default_retryable = CODE_DEFAULTS.get(code, _defaults_for_other(code))
    return LlmFailure(
        code=code,
        message=message,
        category=category if category is not None else default_category,
        retryable=retryable if retryable is not None else default_retryable,
        status=status,
        retry_after=retry_after,
        request_id=request_id,
        provider=provider,
        serving_provider=serving_provider,
        detail=detail[:2000] if detail is not None else None,
    )


def _defaults_for_other(code: str) -> tuple[FailureCategory, bool]:
    if code.startswith("HTTP_5"):
        return ("provider_overloaded", True)
    if code.startswith("HTTP_"):
        return ("api_error", False)
    return ("unknown", False)


class LlmError(Exception):
    """Root of every dshstream exception; ``failure`` holds the structured facts."""

    codes: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, failure: LlmFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure

    @property
    def code(self) -> str:
        """Shorthand for ``self.failure.code``."""
        return self.failure.code

    @property
    def retryable(self) -> bool:
        """Shorthand for ``self.failure.retryable``."""
        return self.failure.retryable

    def __str__(self) -> str:
        return self.failure.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.failure.code}: {self.failure.message!r})"

    def __reduce__(self) -> tuple[type[LlmError], tuple[LlmFailure]]:
        return (type(self), (self.failure,))


class AuthenticationError(LlmError):
    """Raised when the provider rejects the credentials (401/403)."""

    codes = frozenset({"AUTH"})


class RateLimitError(LlmError):
    """Raised when the provider throttles the request (429); see ``failure.retry_after``."""

    codes = frozenset({"RATE_LIMIT"})


class QuotaExceededError(LlmError):
    """Raised when the account's balance is exhausted (QUOTA) or cannot afford the
    requested output (CREDIT_LIMIT: retry with a smaller max_tokens)."""

    codes = frozenset({"QUOTA", "CREDIT_LIMIT"})


class ContextWindowExceededError(LlmError):
    """Raised when the prompt does not fit the model's context window."""

    codes = frozenset({"CONTEXT_WINDOW_EXCEEDED"})


class ModelNotFoundError(LlmError):
    """Raised when the model is unknown, retired or deprecated."""

    codes = frozenset({"MODEL_NOT_FOUND"})


class ContentBlockedError(LlmError):
    """Raised when the provider refuses the content (safety, recitation, refusal)."""

    codes = frozenset({"CONTENT_FILTER"})


class InvalidRequestError(LlmError):
    """Raised when the provider rejects the request as malformed (400 and other 4xx)."""

    codes = frozenset({"INVALID_REQUEST"})


class ServerError(LlmError):
    """Raised when the provider failed on its side (5xx)."""

    codes = frozenset({"SERVER"})


class OverloadedError(ServerError):
    """Raised when the provider is overloaded (529, ``overloaded_error``), in-band or not."""

    codes = frozenset({"OVERLOADED"})


class StreamTimeoutError(LlmError):
    """Raised when a connect, idle or total time limit ran out."""

    codes = frozenset({"TIMEOUT"})


class TransportError(LlmError):
    """Raised when the connection failed (refused, reset, DNS, TLS)."""

    codes = frozenset({"TRANSPORT"})


class StreamClosedError(LlmError):
    """Raised when the body ended before the provider's terminal marker."""

    codes = frozenset({"STREAM_CLOSED"})


class AbortedError(LlmError):
    """Raised when the caller cancelled the stream."""

    codes = frozenset({"ABORTED"})


class EmptyResponseError(LlmError):
    """Raised when the provider finished without producing any content."""

    codes = frozenset({"EMPTY_RESPONSE"})


class ProtocolError(LlmError):
    """Raised when the bytes or JSON received break the wire format or the chunk contract."""

    codes = frozenset({"MALFORMED_RESPONSE", "EVENT_TOO_LARGE", "CONTRACT_VIOLATION"})


class ToolArgumentsError(LlmError):
    """Raised when tool-call arguments are truncated or are not a JSON object."""

    codes = frozenset({"TRUNCATED_TOOL_ARGUMENTS", "INVALID_TOOL_ARGUMENTS"})


class ConfigurationError(LlmError, ValueError):
    """Raised on caller misuse: no adapter, invalid or duplicate registration, bad options."""

    codes = frozenset(
        {"NO_ADAPTER", "INVALID_ADAPTER", "DUPLICATE_ADAPTER", "REGISTRATION_DISPOSED", "INVALID_OPTIONS"}
    )


class ConfigurationTypeError(ConfigurationError, TypeError):
    """Raised when a caller passes a value of the wrong type (``messages="hello"``,
    ``cancel=True``, ``ToolSpec(parameters="x")``); also a :class:`TypeError`."""

    codes = frozenset({"INVALID_OPTIONS_TYPE"})


_CLASSES: tuple[type[LlmError], ...] = (
    AuthenticationError,
    RateLimitError,
    QuotaExceededError,
    ContextWindowExceededError,
    ModelNotFoundError,
    ContentBlockedError,
    InvalidRequestError,
    ServerError,
    OverloadedError,
    StreamTimeoutError,
    TransportError,
    StreamClosedError,
    AbortedError,
    EmptyResponseError,
    ProtocolError,
    ToolArgumentsError,
    ConfigurationError,
    ConfigurationTypeError,
)
_BY_CODE: dict[str, type[LlmError]] = {code: cls for cls in _CLASSES for code in cls.codes}


def error_class_for(failure: LlmFailure) -> type[LlmError]:
    """The most specific exception class for ``failure`` (by code, then category/status)."""
    cls = _BY_CODE.get(failure.code)
    if cls is not None:
        return cls
    if failure.category == "content_blocked":
        return ContentBlockedError
    if failure.category == "rate_limit":
        return RateLimitError
    if failure.category == "timeout":
        return StreamTimeoutError
    if failure.category == "model_error":
        return ModelNotFoundError
    if failure.category == "provider_overloaded":
        return ServerError
    if failure.status is not None:
        if failure.status >= 500:
            return ServerError
        if failure.status >= 400:
            return InvalidRequestError
    return LlmError


def error_for(failure: LlmFailure) -> LlmError:
    """The exception instance to raise for ``failure``."""
    return error_class_for(failure)(failure)

