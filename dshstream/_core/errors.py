"""The exception tree and the one error registry. Every failure dshstream raises is an
:class:`LlmError` carrying a structured :class:`~dshstream._core.types.LlmFailure`;
nothing foreign escapes.

Contract: stdlib + ``types`` only. Route on the class or on ``error.failure.code`` /
``.category`` / ``.retryable``, never on message text. Messages are classified headlines
built by dshstream and never contain upstream text or secrets; the upstream text, redacted,
lives in ``failure.detail``.

::

    LlmError                              root; .failure: LlmFailure
    ├── ProviderError                     the provider refused or failed the request
    │   ├── AuthenticationError           AUTH (401/403, bad or missing key)
    │   ├── RateLimitError                RATE_LIMIT (429); .failure.retry_after
    │   ├── QuotaExceededError            QUOTA (balance exhausted), CREDIT_LIMIT (ask for fewer tokens)
    │   ├── ContextWindowExceededError    CONTEXT_WINDOW_EXCEEDED
    │   ├── ModelNotFoundError            MODEL_NOT_FOUND (unknown, retired or deprecated model)
    │   ├── ContentBlockedError           CONTENT_FILTER and other content_blocked failures
    │   ├── InvalidRequestError           INVALID_REQUEST and other 4xx (HTTP_404 ...)
    │   ├── ServerError                   SERVER (5xx)
    │   │   └── OverloadedError           OVERLOADED (529, Anthropic overloaded_error, 503 UNAVAILABLE)
    │   └── EmptyResponseError            EMPTY_RESPONSE (a finish with no content at all)
    ├── NetworkError                      the connection, the clock or the stream failed on the way
    │   ├── StreamTimeoutError            TIMEOUT (connect, idle, total; 408/504)
    │   ├── TransportError                TRANSPORT (connection refused/reset before or during the body)
    │   └── StreamClosedError             STREAM_CLOSED (EOF before the provider's terminal marker)
    ├── AbortedError                      ABORTED (cancelled by the caller, closed by the consumer)
    ├── ProtocolError                     MALFORMED_RESPONSE, EVENT_TOO_LARGE, CONTRACT_VIOLATION
    ├── ToolArgumentsError                TRUNCATED_TOOL_ARGUMENTS, INVALID_TOOL_ARGUMENTS
    ├── ConfigurationError                NO_ADAPTER, INVALID_ADAPTER, DUPLICATE_ADAPTER, INVALID_OPTIONS ...
    │   └── ConfigurationTypeError        INVALID_OPTIONS_TYPE (a value of the wrong type)
    └── ToolLoopError                     a failed tool-loop step; its failure is the step's own

    UNKNOWN, REDIRECT, HTTP_<status> and any other code: by category, then status (rule 3)

``ConfigurationError`` is also a :class:`ValueError` and ``ConfigurationTypeError`` also a
:class:`TypeError`, so caller mistakes can be caught the usual Python way too. Their
messages name the field, the type of the value given and what is expected; they never
echo a credential. ``ProviderError`` and ``NetworkError`` are families only (no code is
theirs). ``ToolLoopError`` is defined by the tool loop (:mod:`dshstream._tool_loop`, a
higher layer: it carries the loop's steps and history); it has no code of its own either,
and the step's own exception is its ``__cause__``.

The registry (:data:`ERROR_CODES`):

1. **Once.** Each code is declared once, as one :class:`ErrorCode` row: code, category,
   retryable, class. Everything else is derived from the rows: :data:`CODE_DEFAULTS`
   (what :func:`make_failure` fills in), the code → class map of :func:`error_class_for`
   and each class's ``codes``. A code declared twice fails at import.
2. **Defaults.** :func:`make_failure` fills category and retryability from the code's
   row; a code with no row gets them from its shape: ``HTTP_5xx`` is
   ``provider_overloaded`` and retryable, any other ``HTTP_<status>`` ``api_error``, anything
   else ``unknown``; neither retryable.
3. **Class.** A row's class wins whatever the category or status. A code whose row has no
   class (``UNKNOWN``, ``REDIRECT``) or no row at all is placed by its category
   (``content_blocked``, ``rate_limit``, ``timeout``, ``model_error``,
   ``provider_overloaded``), then by its status (5xx: ``ServerError``, 4xx:
   ``InvalidRequestError``), else it is the root :class:`LlmError` (a 3xx ``REDIRECT``).
4. **Cancel.** The caller's own cancel is built by :func:`cancelled_failure` (and its
   message by :func:`cancelled_message`), every other stop by :func:`aborted_failure`:
   one wording, ``"{provider}: stream cancelled by the caller"``, wherever it is noticed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .types import FailureCategory, LlmFailure


class LlmError(Exception):
    """Root of every dshstream exception; ``failure`` holds the structured facts."""

    #: the codes this class is the class of (derived from :data:`ERROR_CODES`, rule 1)
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


# --------------------------------------------------------------------------- the families


class ProviderError(LlmError):
    """The provider refused or failed the request: credentials, limits, quota, context
    window, model, content, the request itself, its own servers, an empty answer.

    A family only (no code of its own): ``except ProviderError`` catches all of them."""


class NetworkError(LlmError):
    """The connection, a time limit or the stream failed between dshstream and the provider
    (``TIMEOUT``, ``TRANSPORT``, ``STREAM_CLOSED``; all retryable by default).

    A family only (no code of its own): ``except NetworkError`` catches all of them."""


# --------------------------------------------------------------------------- the classes


class AuthenticationError(ProviderError):
    """Raised when the provider rejects the credentials (401/403)."""


class RateLimitError(ProviderError):
    """Raised when the provider throttles the request (429); see ``failure.retry_after``."""


class QuotaExceededError(ProviderError):
    """Raised when the account's balance is exhausted (QUOTA) or cannot afford the
    requested output (CREDIT_LIMIT: retry with a smaller max_tokens)."""


class ContextWindowExceededError(ProviderError):
    """Raised when the prompt does not fit the model's context window."""


class ModelNotFoundError(ProviderError):
    """Raised when the model is unknown, retired or deprecated."""


class ContentBlockedError(ProviderError):
    """Raised when the provider refuses the content (safety, recitation, refusal)."""


class InvalidRequestError(ProviderError):
    """Raised when the provider rejects the request as malformed (400 and other 4xx)."""


class ServerError(ProviderError):
    """Raised when the provider failed on its side (5xx)."""


class OverloadedError(ServerError):
    """Raised when the provider is overloaded (529, ``overloaded_error``), in-band or not."""


class EmptyResponseError(ProviderError):
    """Raised when the provider finished without producing any content."""


class StreamTimeoutError(NetworkError):
    """Raised when a connect, idle or total time limit ran out."""


class TransportError(NetworkError):
    """Raised when the connection failed (refused, reset, DNS, TLS)."""


class StreamClosedError(NetworkError):
    """Raised when the body ended before the provider's terminal marker."""


class AbortedError(LlmError):
    """Raised when the caller cancelled the stream."""


class ProtocolError(LlmError):
    """Raised when the bytes or JSON received break the wire format or the chunk contract."""


class ToolArgumentsError(LlmError):
    """Raised when tool-call arguments are truncated or are not a JSON object."""


class ConfigurationError(LlmError, ValueError):
    """Raised on caller misuse: no adapter, invalid or duplicate registration, bad options."""


class ConfigurationTypeError(ConfigurationError, TypeError):
    """Raised when a caller passes a value of the wrong type (``messages="hello"``,
    ``cancel=True``, ``ToolSpec(parameters="x")``); also a :class:`TypeError`."""


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One row of the registry (rule 1): a code, the category and retryability a failure
    with it gets by default (rule 2), and its class (``None``: placed by category, then
    status, rule 3)."""

    code: str
    category: FailureCategory
    retryable: bool
    error: type[LlmError] | None


#: every failure code dshstream builds, each declared once (rule 1)
ERROR_CODES: tuple[ErrorCode, ...] = (
    ErrorCode("AUTH", "api_error", False, AuthenticationError),
    ErrorCode("QUOTA", "api_error", False, QuotaExceededError),
    ErrorCode("CREDIT_LIMIT", "api_error", False, QuotaExceededError),
    ErrorCode("CONTEXT_WINDOW_EXCEEDED", "api_error", False, ContextWindowExceededError),
    ErrorCode("INVALID_REQUEST", "api_error", False, InvalidRequestError),
    ErrorCode("RATE_LIMIT", "rate_limit", True, RateLimitError),
    ErrorCode("MODEL_NOT_FOUND", "model_error", False, ModelNotFoundError),
    ErrorCode("CONTENT_FILTER", "content_blocked", False, ContentBlockedError),
    ErrorCode("SERVER", "provider_overloaded", True, ServerError),
    ErrorCode("OVERLOADED", "provider_overloaded", True, OverloadedError),
    ErrorCode("TIMEOUT", "timeout", True, StreamTimeoutError),
    ErrorCode("TRANSPORT", "unknown", True, TransportError),
    # the server's certificate not trusted, or the handshake refused: the same server
    # fails the same way (the transport's failures rule 4); the root class, as REDIRECT
    ErrorCode("TLS", "unknown", False, None),
    # a proxy answered 407: it wants credentials (the transport's failures rule 3)
    ErrorCode("PROXY_AUTH", "api_error", False, AuthenticationError),
    ErrorCode("STREAM_CLOSED", "unknown", True, StreamClosedError),
    ErrorCode("EMPTY_RESPONSE", "unknown", True, EmptyResponseError),
    ErrorCode("MALFORMED_RESPONSE", "unknown", False, ProtocolError),
    ErrorCode("EVENT_TOO_LARGE", "unknown", False, ProtocolError),
    ErrorCode("CONTRACT_VIOLATION", "unknown", False, ProtocolError),
    ErrorCode("ABORTED", "unknown", False, AbortedError),
    ErrorCode("TRUNCATED_TOOL_ARGUMENTS", "api_error", False, ToolArgumentsError),
    ErrorCode("INVALID_TOOL_ARGUMENTS", "api_error", False, ToolArgumentsError),
    ErrorCode("NO_ADAPTER", "api_error", False, ConfigurationError),
    ErrorCode("INVALID_ADAPTER", "api_error", False, ConfigurationError),
    ErrorCode("DUPLICATE_ADAPTER", "api_error", False, ConfigurationError),
    ErrorCode("REGISTRATION_DISPOSED", "api_error", False, ConfigurationError),
    ErrorCode("INVALID_OPTIONS", "api_error", False, ConfigurationError),
    ErrorCode("INVALID_OPTIONS_TYPE", "api_error", False, ConfigurationTypeError),
    # a 3xx the transport refused to follow: the base_url is wrong; the root class (rule 3)
    ErrorCode("REDIRECT", "api_error", False, None),
    # nothing better is known: category and status place it (rule 3)
    ErrorCode("UNKNOWN", "unknown", False, None),
)


def _index(rows: tuple[ErrorCode, ...]) -> dict[str, ErrorCode]:
    """``rows`` by code; a code declared twice is refused (rule 1)."""
    index: dict[str, ErrorCode] = {}
    for row in rows:
        if row.code in index:
            raise ValueError(f"error code {row.code} is declared twice")
        index[row.code] = row
    return index


_ROWS: dict[str, ErrorCode] = _index(ERROR_CODES)

#: code -> (category, retryable): the defaults a failure with that code gets (rule 2)
CODE_DEFAULTS: dict[str, tuple[FailureCategory, bool]] = {
    code: (row.category, row.retryable) for code, row in _ROWS.items()
}
_BY_CODE: dict[str, type[LlmError]] = {code: row.error for code, row in _ROWS.items() if row.error is not None}


def _set_codes() -> None:
    owners: dict[type[LlmError], set[str]] = {}
    for code, cls in _BY_CODE.items():
        owners.setdefault(cls, set()).add(code)
    for cls, codes in owners.items():
        cls.codes = frozenset(codes)


_set_codes()


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
    context_limit: int | None = None,
    context_requested: int | None = None,
) -> LlmFailure:
    """Build a failure, filling category and retryability from the code's defaults (rule 2).

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
        context_limit=context_limit,
        context_requested=context_requested,
    )


def _defaults_for_other(code: str) -> tuple[FailureCategory, bool]:
    if code.startswith("HTTP_5"):
        return ("provider_overloaded", True)
    if code.startswith("HTTP_"):
        return ("api_error", False)
    return ("unknown", False)


def error_class_for(failure: LlmFailure) -> type[LlmError]:
    """The most specific exception class for ``failure`` (by code, then category/status:
    rule 3)."""
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
    return error_class_for(failure)(failure)


# --------------------------------------------------------------------------- the cancel

#: what every failure of the caller's own cancel says after the provider's name (rule 4)
CANCELLED_BY_CALLER = "stream cancelled by the caller"


def cancelled_message(provider: str) -> str:
    """The message of the caller's own cancel: ``"{provider}: stream cancelled by the
    caller"`` (rule 4), for a body's ``abort("ABORTED", message)``."""
    return f"{provider}: {CANCELLED_BY_CALLER}"


def aborted_failure(provider: str, why: str) -> LlmFailure:
    """An ``ABORTED`` failure for ``provider``: ``"{provider}: {why}"`` (rule 4)."""
    return make_failure("ABORTED", f"{provider}: {why}", provider=provider)


def cancelled_failure(provider: str) -> LlmFailure:
    """The ``ABORTED`` failure of the caller's own cancel (``options.cancel`` set, rule 4)."""
    return aborted_failure(provider, CANCELLED_BY_CALLER)
