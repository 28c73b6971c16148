"""dshstream.errors: the whole exception tree below the root's, and showing a failure safely.

Contract: every failure dshstream raises is an ``LlmError`` carrying a structured
``LlmFailure`` (``error.failure``); nothing foreign escapes. Route on the class or on
``failure.code`` / ``.category`` / ``.retryable``, never on message text: a message is a
headline safe to show a user, and the provider's own words, redacted, are in
``failure.detail``. The root and the classes most often caught are in the package root
(marked ``*``); the rest are here::

    LlmError *                            root; .failure: LlmFailure
    ├── ProviderError *                   the provider refused or failed the request
    │   ├── AuthenticationError *         AUTH, PROXY_AUTH (a proxy answered 407)
    │   ├── RateLimitError *              RATE_LIMIT; .failure.retry_after
    │   ├── QuotaExceededError            QUOTA, CREDIT_LIMIT
    │   ├── ContextWindowExceededError *  CONTEXT_WINDOW_EXCEEDED
    │   ├── ModelNotFoundError            MODEL_NOT_FOUND
    │   ├── ContentBlockedError           CONTENT_FILTER and other content_blocked failures
    │   ├── InvalidRequestError           INVALID_REQUEST and other 4xx
    │   ├── ServerError                   SERVER (5xx)
    │   │   └── OverloadedError           OVERLOADED
    │   └── EmptyResponseError            EMPTY_RESPONSE
    ├── NetworkError *                    the connection, the clock or the stream failed
    │   ├── StreamTimeoutError            TIMEOUT
    │   ├── TransportError                TRANSPORT
    │   └── StreamClosedError             STREAM_CLOSED
    ├── AbortedError                      ABORTED
    ├── (LlmError itself)                 REDIRECT, TLS (not retryable: set verify= / trust_store=)
    ├── ProtocolError                     MALFORMED_RESPONSE, EVENT_TOO_LARGE, CONTRACT_VIOLATION
    ├── ToolArgumentsError                TRUNCATED_TOOL_ARGUMENTS, INVALID_TOOL_ARGUMENTS
    ├── ConfigurationError *              a mistake in what the caller passed (also a ValueError)
    │   └── ConfigurationTypeError        a value of the wrong type (also a TypeError)
    └── ToolLoopError                     a failed ``run_tools`` step; its failure is the step's

Showing a failure: :func:`recovery_tips` gives the next steps for a failure, scoped to who
owns the key (:data:`CredentialOwner`: ``"server"``, ``"personal"`` or ``"subscription"``),
and :func:`may_view_detail` says whether a viewer may see ``failure.detail``;
:func:`redact` takes secrets out of any text (every registered key, then the credential
patterns); :func:`format_error_code_for_display` shows an upstream error code only when it
is safe to.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._core.errors import (
        AbortedError as AbortedError,
        ConfigurationTypeError as ConfigurationTypeError,
        ContentBlockedError as ContentBlockedError,
        EmptyResponseError as EmptyResponseError,
        InvalidRequestError as InvalidRequestError,
        ModelNotFoundError as ModelNotFoundError,
        OverloadedError as OverloadedError,
        ProtocolError as ProtocolError,
        QuotaExceededError as QuotaExceededError,
        ServerError as ServerError,
        StreamClosedError as StreamClosedError,
        StreamTimeoutError as StreamTimeoutError,
        ToolArgumentsError as ToolArgumentsError,
        TransportError as TransportError,
    )
    from ._core.recovery import may_view_detail as may_view_detail, recovery_tips as recovery_tips
    from ._core.recovery import CredentialSource as _CredentialSource
    from ._core.redact import redact as redact
    from ._render import format_error_code_for_display as format_error_code_for_display
    from ._tool_loop import ToolLoopError as ToolLoopError

    #: who owns the key a request sent: ``"server"``, ``"personal"`` or ``"subscription"``
    CredentialOwner: _typing.TypeAlias = _CredentialSource

__all__ = _exports.public_names("errors")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("errors", name)


def __dir__() -> list[str]:
    return _exports.dir_of("errors")
