"""The one error registry (dshstream._core.errors): every code declared once with its
category, retryability and class; the family parents (``ProviderError``, ``NetworkError``);
``ToolLoopError`` in the tree; the one builder of the caller's own cancel.

The expected tables below were written down from the behaviour before the registry
(``CODE_DEFAULTS`` plus each class's ``codes``): the registry must give the very same
results.
"""

from __future__ import annotations

import ast
import functools
import pickle
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import dshstream
from dshstream import (
    AuthenticationError,
    ConfigurationError,
    ContextWindowExceededError,
    GenerateOptions,
    LlmError,
    Message,
    NetworkError,
    ProviderError,
    RateLimitError,
    StreamChunk,
)
from dshstream.errors import (
    AbortedError,
    ConfigurationTypeError,
    ContentBlockedError,
    EmptyResponseError,
    InvalidRequestError,
    ModelNotFoundError,
    OverloadedError,
    ProtocolError,
    QuotaExceededError,
    ServerError,
    StreamClosedError,
    StreamTimeoutError,
    ToolArgumentsError,
    ToolLoopError,
    TransportError,
)
from dshstream._core import errors
from dshstream._core.errors import (
    CANCELLED_BY_CALLER,
    CODE_DEFAULTS,
    ERROR_CODES,
    ErrorCode,
    aborted_failure,
    cancelled_failure,
    cancelled_message,
    error_class_for,
    error_for,
    make_failure,
)
from dshstream._core.types import LlmFailure

PACKAGE = Path(dshstream.__file__).parent

# code -> (default category, default retryable, class error_for gives) as it was before the
# registry. REDIRECT was in no table: its builders (the transport, LiteLLM) pass
# category="api_error", retryable=False and a 3xx status, and error_for gives the root
# LlmError; the registry now declares those defaults (the class stays LlmError).
BEFORE: dict[str, tuple[str, bool, type[LlmError]]] = {
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
    "TRANSPORT": ("unknown", True, TransportError),
    "STREAM_CLOSED": ("unknown", True, StreamClosedError),
    "EMPTY_RESPONSE": ("unknown", True, EmptyResponseError),
    "MALFORMED_RESPONSE": ("unknown", False, ProtocolError),
    "EVENT_TOO_LARGE": ("unknown", False, ProtocolError),
    "CONTRACT_VIOLATION": ("unknown", False, ProtocolError),
    "ABORTED": ("unknown", False, AbortedError),
    "TRUNCATED_TOOL_ARGUMENTS": ("api_error", False, ToolArgumentsError),
    "INVALID_TOOL_ARGUMENTS": ("api_error", False, ToolArgumentsError),
    "NO_ADAPTER": ("api_error", False, ConfigurationError),
    "INVALID_ADAPTER": ("api_error", False, ConfigurationError),
    "DUPLICATE_ADAPTER": ("api_error", False, ConfigurationError),
    "REGISTRATION_DISPOSED": ("api_error", False, ConfigurationError),
    "INVALID_OPTIONS": ("api_error", False, ConfigurationError),
    "INVALID_OPTIONS_TYPE": ("api_error", False, ConfigurationTypeError),
    "UNKNOWN": ("unknown", False, LlmError),
}
REDIRECT = ("api_error", False, LlmError)

# codes outside the registry: defaults from the code's shape, class by category then status
OTHER_DEFAULTS: dict[str, tuple[str, bool, type[LlmError]]] = {
    "HTTP_500": ("provider_overloaded", True, ServerError),
    "HTTP_503": ("provider_overloaded", True, ServerError),
    "HTTP_404": ("api_error", False, LlmError),  # no status given: the category says nothing
    "HTTP_418": ("api_error", False, LlmError),
    "HTTP_": ("api_error", False, LlmError),
    "TOOL_LOOP": ("unknown", False, LlmError),
    "WHATEVER": ("unknown", False, LlmError),
}

# (category, status) -> class, for a code with no class of its own
_CATEGORY_CLASS: dict[str, type[LlmError] | None] = {
    "rate_limit": RateLimitError,
    "content_blocked": ContentBlockedError,
    "timeout": StreamTimeoutError,
    "provider_overloaded": ServerError,
    "model_error": ModelNotFoundError,
    "api_error": None,
    "unknown": None,
}
_STATUS_CLASS: dict[int | None, type[LlmError]] = {
    None: LlmError,
    301: LlmError,
    404: InvalidRequestError,
    418: InvalidRequestError,
    500: ServerError,
    503: ServerError,
}

# each class's ``codes`` as it was
CLASS_CODES: dict[type[LlmError], frozenset[str]] = {
    LlmError: frozenset(),
    AuthenticationError: frozenset({"AUTH", "PROXY_AUTH"}),
    RateLimitError: frozenset({"RATE_LIMIT"}),
    QuotaExceededError: frozenset({"QUOTA", "CREDIT_LIMIT"}),
    ContextWindowExceededError: frozenset({"CONTEXT_WINDOW_EXCEEDED"}),
    ModelNotFoundError: frozenset({"MODEL_NOT_FOUND"}),
    ContentBlockedError: frozenset({"CONTENT_FILTER"}),
    InvalidRequestError: frozenset({"INVALID_REQUEST"}),
    ServerError: frozenset({"SERVER"}),
    OverloadedError: frozenset({"OVERLOADED"}),
    StreamTimeoutError: frozenset({"TIMEOUT"}),
    TransportError: frozenset({"TRANSPORT"}),
    StreamClosedError: frozenset({"STREAM_CLOSED"}),
    AbortedError: frozenset({"ABORTED"}),
    EmptyResponseError: frozenset({"EMPTY_RESPONSE"}),
    ProtocolError: frozenset({"MALFORMED_RESPONSE", "EVENT_TOO_LARGE", "CONTRACT_VIOLATION"}),
    ToolArgumentsError: frozenset({"TRUNCATED_TOOL_ARGUMENTS", "INVALID_TOOL_ARGUMENTS"}),
    ConfigurationError: frozenset(
        {"NO_ADAPTER", "INVALID_ADAPTER", "DUPLICATE_ADAPTER", "REGISTRATION_DISPOSED", "INVALID_OPTIONS"}
    ),
    ConfigurationTypeError: frozenset({"INVALID_OPTIONS_TYPE"}),
    ToolLoopError: frozenset(),
    ProviderError: frozenset(),
    NetworkError: frozenset(),
}

# each class's bases as they were (the family parents come in between, never instead)
OLD_ANCESTORS: dict[type[LlmError], tuple[type[BaseException], ...]] = {
    ServerError: (LlmError,),
    OverloadedError: (ServerError, LlmError),
    ConfigurationError: (LlmError, ValueError),
    ConfigurationTypeError: (ConfigurationError, LlmError, ValueError, TypeError),
    ToolLoopError: (LlmError,),
}

PROVIDER_FAMILY = (
    AuthenticationError,
    RateLimitError,
    QuotaExceededError,
    ContextWindowExceededError,
    ModelNotFoundError,
    ContentBlockedError,
    InvalidRequestError,
    ServerError,
    OverloadedError,
    EmptyResponseError,
)
NETWORK_FAMILY = (StreamTimeoutError, TransportError, StreamClosedError)
NEITHER = (AbortedError, ProtocolError, ToolArgumentsError, ConfigurationError, ConfigurationTypeError, ToolLoopError)


# --------------------------------------------------------------------------- the registry


def test_every_code_is_declared_exactly_once() -> None:
    codes = [row.code for row in ERROR_CODES]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    assert all(isinstance(row, ErrorCode) for row in ERROR_CODES)
    assert set(codes) == set(BEFORE) | {"REDIRECT", "TLS", "PROXY_AUTH"}
    assert list(CODE_DEFAULTS) == codes  # derived, in the registry's order


def test_a_duplicate_row_is_refused() -> None:
    row = ErrorCode("AUTH", "api_error", False, AuthenticationError)
    with pytest.raises(ValueError, match="AUTH"):
        errors._index((*ERROR_CODES, row))


def test_the_registry_is_frozen() -> None:
    with pytest.raises(AttributeError):
        ERROR_CODES[0].code = "OTHER"  # type: ignore[misc]
    assert isinstance(ERROR_CODES, tuple)


@pytest.mark.parametrize("code", sorted(BEFORE))
def test_defaults_and_class_are_what_they_were(code: str) -> None:
    category, retryable, cls = BEFORE[code]
    failure = make_failure(code, "p: something")
    assert (failure.category, failure.retryable) == (category, retryable)
    assert CODE_DEFAULTS[code] == (category, retryable)
    assert type(error_for(failure)) is cls and error_class_for(failure) is cls


@pytest.mark.parametrize("code", sorted(BEFORE))
@pytest.mark.parametrize("status", [None, 404, 500])
def test_a_code_with_a_class_keeps_it_whatever_the_status(code: str, status: int | None) -> None:
    cls = BEFORE[code][2]
    if cls is LlmError:  # UNKNOWN has no class of its own: the status decides (below)
        return
    assert error_class_for(make_failure(code, "m", status=status)) is cls


@pytest.mark.parametrize("code", sorted(OTHER_DEFAULTS))
def test_codes_outside_the_registry_keep_their_fallbacks(code: str) -> None:
    category, retryable, cls = OTHER_DEFAULTS[code]
    failure = make_failure(code, "m")
    assert (failure.category, failure.retryable) == (category, retryable)
    assert error_class_for(failure) is cls


@pytest.mark.parametrize("code", ["SOMETHING", "UNKNOWN", "REDIRECT", "HTTP_418"])
@pytest.mark.parametrize("category", sorted(_CATEGORY_CLASS))
@pytest.mark.parametrize("status", [None, 301, 404, 418, 500, 503])
def test_a_code_without_a_class_is_placed_by_category_then_status(code: str, category: Any, status: int | None) -> None:
    expected = _CATEGORY_CLASS[category] or _STATUS_CLASS[status]
    assert error_class_for(make_failure(code, "m", category=category, status=status)) is expected


def test_redirect_is_declared_and_classified_as_before() -> None:
    assert CODE_DEFAULTS["REDIRECT"] == REDIRECT[:2]
    # as the transport and the LiteLLM bridge build it
    for status in (301, 302, 307, 308):
        built = make_failure(
            "REDIRECT",
            f"p: the endpoint answered HTTP {status} (moved); redirects are not followed — check base_url (REDIRECT)",
            category="api_error",
            retryable=False,
            status=status,
            provider="p",
        )
        assert type(error_for(built)) is LlmError
        assert built == replace(make_failure("REDIRECT", built.message, status=status, provider="p"))
    assert not isinstance(error_for(make_failure("REDIRECT", "m", status=301)), (ProviderError, NetworkError))


def test_class_codes_are_derived_from_the_registry_and_unchanged() -> None:
    for cls, codes in CLASS_CODES.items():
        assert cls.codes == codes, cls
    for row in ERROR_CODES:
        if row.error is not None:
            assert row.code in row.error.codes


def test_every_class_with_codes_is_in_the_registry() -> None:
    classes = {row.error for row in ERROR_CODES if row.error is not None}
    assert classes == {cls for cls, codes in CLASS_CODES.items() if codes}


# --------------------------------------------------------------------------- codes in use


_CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*")
_HTTP = re.compile(r"HTTP_[1-5][0-9][0-9]")
#: callables whose first argument (or ``code=``) is a failure code
_TAKES_A_CODE = {"make_failure", "_config_error", "abort", "failure", "_fail", "LlmFailure"}


def _literal_codes(node: ast.AST | None) -> list[str]:
    """Code-shaped string literals in ``node`` (a constant, or a tuple/set/list of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CODE.fullmatch(node.value):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return [code for element in node.elts for code in _literal_codes(element)]
    return []


def _is_code_ref(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "code") or (
        isinstance(node, ast.Name) and node.id in ("code", "_abort_code")
    )


@functools.cache  # one scan of the source for the tests below
def _codes_in_use() -> Mapping[str, list[str]]:
    """Every failure code dshstream's source names: arguments of the failure builders,
    ``code=`` keywords, values given to a ``code`` variable, comparisons with a ``.code``,
    and the decision table's answers."""
    found: dict[str, list[str]] = {}

    def add(codes: list[str], where: str) -> None:
        for code in codes:
            found.setdefault(code, []).append(where)

    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if name in _TAKES_A_CODE and node.args:
                    add(_literal_codes(node.args[0]), where)
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        add(_literal_codes(keyword.value), where)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if _is_code_ref(target):
                        add(_literal_codes(node.value), where)
                    elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for sub, value in zip(target.elts, node.value.elts):
                            if _is_code_ref(sub):
                                add(_literal_codes(value), where)
            elif isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(_is_code_ref(side) for side in sides):
                    for side in sides:
                        add(_literal_codes(side), where)
            elif isinstance(node, ast.FunctionDef) and rel == "_core/classify/decision.py" and node.name == "decide":
                for returned in ast.walk(node):
                    if isinstance(returned, ast.Return):
                        add(_literal_codes(returned.value), f"{rel}:{returned.lineno}")
    return found


def test_every_code_used_anywhere_is_declared_in_the_registry() -> None:
    in_use = _codes_in_use()
    # the scan sees the codes it should (a scan that finds nothing proves nothing)
    assert {"ABORTED", "REDIRECT", "TIMEOUT", "MODEL_NOT_FOUND", "NO_ADAPTER", "CONTENT_FILTER"} <= set(in_use)
    declared = {row.code for row in ERROR_CODES}
    undeclared = {code: where for code, where in in_use.items() if code not in declared and not _HTTP.fullmatch(code)}
    assert undeclared == {}


def test_every_declared_code_is_used_somewhere() -> None:
    in_use = set(_codes_in_use())
    # INVALID_OPTIONS_TYPE is chosen by validate.invalid(wrong_type=True), not named at a call
    assert {row.code for row in ERROR_CODES} - in_use <= {"INVALID_OPTIONS_TYPE", "UNKNOWN"}


def test_the_code_tables_elsewhere_name_declared_codes() -> None:
    from dshstream._core import recovery
    from dshstream._core.classify import builder

    declared = {row.code for row in ERROR_CODES}
    assert set(builder._PHRASES) <= declared
    assert set(recovery._TIPS) - {recovery._NOT_FOUND} <= declared
    assert set(recovery._BY_CATEGORY.values()) <= declared


# --------------------------------------------------------------------------- the families


def _failure_for(cls: type[LlmError]) -> LlmFailure:
    code = sorted(cls.codes)[0]
    return make_failure(code, f"p: {code.lower()}", provider="p")


@pytest.mark.parametrize("cls", PROVIDER_FAMILY, ids=lambda c: c.__name__)
def test_provider_error_catches_the_providers_refusals(cls: type[LlmError]) -> None:
    with pytest.raises(ProviderError) as info:
        raise error_for(_failure_for(cls))
    assert type(info.value) is cls and not isinstance(info.value, NetworkError)


@pytest.mark.parametrize("cls", NETWORK_FAMILY, ids=lambda c: c.__name__)
def test_network_error_catches_the_connection_and_the_clock(cls: type[LlmError]) -> None:
    with pytest.raises(NetworkError) as info:
        raise error_for(_failure_for(cls))
    assert type(info.value) is cls and not isinstance(info.value, ProviderError)
    assert info.value.retryable  # every network code is retryable by default


@pytest.mark.parametrize("cls", NEITHER, ids=lambda c: c.__name__)
def test_the_callers_and_the_libraries_own_failures_are_in_no_family(cls: type[LlmError]) -> None:
    assert not issubclass(cls, (ProviderError, NetworkError))
    assert issubclass(cls, LlmError)


def test_fallback_classes_are_in_their_family() -> None:
    assert isinstance(error_for(make_failure("HTTP_502", "m", status=502)), ProviderError)
    assert isinstance(error_for(make_failure("HTTP_418", "m", status=418)), ProviderError)
    assert isinstance(error_for(make_failure("SAFETY", "m", category="content_blocked")), ProviderError)
    assert isinstance(error_for(make_failure("X", "m", category="timeout")), NetworkError)
    assert type(error_for(make_failure("UNKNOWN", "m"))) is LlmError


@pytest.mark.parametrize("cls", list(OLD_ANCESTORS), ids=lambda c: c.__name__)
def test_every_old_base_still_holds(cls: type[LlmError]) -> None:
    assert all(issubclass(cls, base) for base in OLD_ANCESTORS[cls])
    assert issubclass(ConfigurationError, ValueError) and issubclass(ConfigurationTypeError, TypeError)


def test_the_parents_are_exported_and_documented() -> None:
    assert dshstream.ProviderError is ProviderError and "ProviderError" in dshstream.__all__
    assert dshstream.NetworkError is NetworkError and "NetworkError" in dshstream.__all__
    assert ProviderError.__module__ == "dshstream" and NetworkError.__module__ == "dshstream"
    tree = errors.__doc__ or ""
    for cls in [*PROVIDER_FAMILY, *NETWORK_FAMILY, *NEITHER, ProviderError, NetworkError, LlmError]:
        assert re.search(rf"[─ ]{cls.__name__}\b", tree), cls.__name__
    assert errors.ProviderError.__mro__[1] is LlmError and errors.NetworkError.__mro__[1] is LlmError


# --------------------------------------------------------------------------- ToolLoopError


def test_tool_loop_error_is_in_the_tree() -> None:
    from dshstream import _tool_loop

    assert issubclass(ToolLoopError, LlmError) and _tool_loop.ToolLoopError is ToolLoopError
    assert all(row.error is not ToolLoopError for row in ERROR_CODES)  # it wraps a step's failure
    failure = make_failure("RATE_LIMIT", "p: rate limited (RATE_LIMIT, HTTP 429)", status=429)
    error = ToolLoopError(failure, step=2)
    assert error.code == "RATE_LIMIT" and str(error) == failure.message
    assert repr(error) == f"ToolLoopError(step 2, RATE_LIMIT: {failure.message!r})"
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ToolLoopError and copy.failure == failure and copy.step == 2


# --------------------------------------------------------------------------- messages


@pytest.mark.parametrize("code", sorted(BEFORE))
def test_messages_and_reprs_are_unchanged(code: str) -> None:
    failure = make_failure(code, f"p: headline ({code})", provider="p", detail="d" * 2500)
    error = error_for(failure)
    assert str(error) == failure.message and error.args == (failure.message,)
    assert repr(error) == f"{type(error).__name__}({code}: {failure.message!r})"
    assert failure.detail == "d" * 2000
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is type(error) and copy.failure == failure


# --------------------------------------------------------------------------- the cancel


def test_the_cancel_failure_is_what_every_site_built() -> None:
    assert CANCELLED_BY_CALLER == "stream cancelled by the caller"
    assert cancelled_message("openai") == "openai: stream cancelled by the caller"
    assert cancelled_failure("openai") == make_failure(
        "ABORTED", "openai: stream cancelled by the caller", provider="openai"
    )
    assert aborted_failure("p", "stream closed by the consumer") == make_failure(
        "ABORTED", "p: stream closed by the consumer", provider="p"
    )
    failure = cancelled_failure("p")
    assert (failure.category, failure.retryable, type(error_for(failure))) == ("unknown", False, AbortedError)


def test_a_cancelled_request_finishes_with_the_one_cancel_failure() -> None:
    from dshstream._adapters.base import LlmAdapter, ModelInfo, ProviderInfo
    from dshstream._service import LlmService

    class Never(LlmAdapter):
        def __init__(self) -> None:
            self.sent: list[GenerateOptions] = []

        def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
            self.sent.append(options)
            yield from ()

        def provider_info(self, provider: str) -> ProviderInfo:
            return ProviderInfo(id=provider, name="Never")

        def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
            return []

    service = LlmService()
    never = Never()
    service.register_adapter(["p"], never)
    cancel = threading.Event()
    cancel.set()
    options = GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),), cancel=cancel)
    result = service.stream(options).result()
    assert result.finish.kind == "aborted" and result.failure == cancelled_failure("p")
    assert never.sent == []  # a cancelled request is never sent


def test_the_pump_aborts_with_the_cancel_message() -> None:
    from dshstream._core.decode import StreamDecoder, translator_for
    from dshstream._core.pump import pump

    cancel = threading.Event()
    aborted: list[tuple[str, str | None]] = []

    class Body:
        def __iter__(self) -> Iterator[bytes]:
            cancel.set()
            yield b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'

        def touch(self) -> None: ...

        def quiet(self, working: bool) -> None: ...

        def release(self) -> None: ...

        def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
            aborted.append((code, message))

        def raise_if_aborted(self) -> None:
            code, message = aborted[-1]
            raise error_for(make_failure(code, message or "", provider="p"))

    decoder = StreamDecoder(translator_for("openai-chat", provider="p"))
    with pytest.raises(AbortedError) as info:
        list(pump(Body(), decoder, cancel=cancel, provider="p"))
    assert aborted == [("ABORTED", "p: stream cancelled by the caller")]
    assert info.value.failure == cancelled_failure("p")
