"""Caller mistakes and odd inputs (issue 12 §4-§6): every bad value fails where it is built,
with a ConfigurationError naming the field; keys are never echoed; the service boundary
raises nothing but LlmError; bodies are strict JSON; lone surrogates become U+FFFD."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from dshstream import (
    Finish,
    FinishReason,
    GenerateOptions,
    LlmError,
    Message,
    StreamChunk,
    TextBlock,
    ToolSpec,
)
from dshstream._adapters.base import LlmAdapter
from dshstream._core.assembler import assemble
from dshstream._core.classify import classify_error_payload, classify_http_error
from dshstream._core.headers import request_id_from
from dshstream._core.decode import decode
from dshstream._core.errors import ConfigurationError, ConfigurationTypeError, error_for
from dshstream._core.http_request import HttpRequest, encode_json_body
from dshstream._core.redact import register_secret, unregister_secret
from dshstream._core.request import check_options
from dshstream._service import LlmService, Next
from dshstream._core.validate import (
    check_api_key,
    check_base_url,
    check_event,
    check_finite_number,
    check_headers,
    check_nonneg_int,
    check_positive_int,
    check_str,
    check_timeout,
    describe,
)
from dshstream._core.strict_json import fix_surrogates

KEY = "kq7Zr2Lx9Wm4Tt8Yp3Nv"  # CANARY: a fake key for the test (matches no key pattern)


def base(**changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"provider": "p", "model": "m", "messages": (Message.user("hi"),)}
    fields.update(changes)
    return fields


# ---------------------------------------------------------------- GenerateOptions

BAD_OPTIONS: list[tuple[dict[str, Any], type[ConfigurationError], str, str]] = [
    # (changes, exact class, field in the message, type named in the message)
    ({"cancel": True}, ConfigurationTypeError, "GenerateOptions.cancel", "bool"),
    ({"cancel": "yes"}, ConfigurationTypeError, "GenerateOptions.cancel", "str"),
    ({"messages": "hello"}, ConfigurationTypeError, "GenerateOptions.messages", "str"),
    ({"messages": [{"role": "user", "content": "hi"}]}, ConfigurationTypeError, "GenerateOptions.messages[0]", "dict"),
    ({"messages": Message.user("hi")}, ConfigurationTypeError, "GenerateOptions.messages", "Message"),
    ({"messages": None}, ConfigurationTypeError, "GenerateOptions.messages", "NoneType"),
    ({"tools": [{"name": "f"}]}, ConfigurationTypeError, "GenerateOptions.tools[0]", "dict"),
    ({"tools": "f"}, ConfigurationTypeError, "GenerateOptions.tools", "str"),
    ({"extra_body": "x"}, ConfigurationTypeError, "GenerateOptions.extra_body", "str"),
    ({"extra_body": [("a", 1)]}, ConfigurationTypeError, "GenerateOptions.extra_body", "list"),
    ({"idle_timeout": 0}, ConfigurationError, "GenerateOptions.idle_timeout", "int"),
    ({"idle_timeout": "30"}, ConfigurationTypeError, "GenerateOptions.idle_timeout", "str"),
    ({"idle_timeout": math.inf}, ConfigurationError, "GenerateOptions.idle_timeout", "float"),
    ({"timeout": -1}, ConfigurationError, "GenerateOptions.timeout", "int"),
    ({"timeout": math.nan}, ConfigurationError, "GenerateOptions.timeout", "float"),
    ({"timeout": True}, ConfigurationTypeError, "GenerateOptions.timeout", "bool"),
    ({"max_tokens": -5}, ConfigurationError, "GenerateOptions.max_tokens", "int"),
    ({"max_tokens": 0}, ConfigurationError, "GenerateOptions.max_tokens", "int"),
    ({"max_tokens": 10.0}, ConfigurationTypeError, "GenerateOptions.max_tokens", "float"),
    ({"max_tokens": True}, ConfigurationTypeError, "GenerateOptions.max_tokens", "bool"),
    ({"model": ""}, ConfigurationError, "GenerateOptions.model", "str"),
    ({"model": "  "}, ConfigurationError, "GenerateOptions.model", "str"),
    ({"model": None}, ConfigurationTypeError, "GenerateOptions.model", "NoneType"),
    ({"provider": ""}, ConfigurationError, "GenerateOptions.provider", "str"),
    ({"provider": 3}, ConfigurationTypeError, "GenerateOptions.provider", "int"),
    ({"reasoning_effort": "ultra"}, ConfigurationError, "GenerateOptions.reasoning_effort", "str"),
    ({"reasoning_effort": 2}, ConfigurationTypeError, "GenerateOptions.reasoning_effort", "int"),
    ({"temperature": math.nan}, ConfigurationError, "GenerateOptions.temperature", "float"),
    ({"temperature": math.inf}, ConfigurationError, "GenerateOptions.temperature", "float"),
    ({"temperature": -0.5}, ConfigurationError, "GenerateOptions.temperature", "float"),
    ({"temperature": "0.7"}, ConfigurationTypeError, "GenerateOptions.temperature", "str"),
    ({"temperature": 10**400}, ConfigurationError, "GenerateOptions.temperature", "int"),
    ({"stop": [1]}, ConfigurationTypeError, "GenerateOptions.stop[0]", "int"),
    ({"stop": {"a": 1}}, ConfigurationTypeError, "GenerateOptions.stop", "dict"),
    ({"max_retries": -1}, ConfigurationError, "GenerateOptions.max_retries", "int"),
    ({"max_retries": True}, ConfigurationTypeError, "GenerateOptions.max_retries", "bool"),
]


@pytest.mark.parametrize(("changes", "cls", "field", "type_name"), BAD_OPTIONS)
def test_bad_generate_options_fail_at_construction(
    changes: dict[str, Any], cls: type[ConfigurationError], field: str, type_name: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        GenerateOptions(**base(**changes))
    error = info.value
    assert type(error) is cls
    assert isinstance(error, LlmError) and isinstance(error, ValueError)
    assert isinstance(error, TypeError) == (cls is ConfigurationTypeError)
    message = str(error)
    assert message.startswith(field + " "), message
    assert f"got {type_name}" in message, message
    assert "must be" in message
    assert error.failure.code == ("INVALID_OPTIONS_TYPE" if cls is ConfigurationTypeError else "INVALID_OPTIONS")
    assert len(message) < 300


def test_replace_checks_too_and_valid_options_are_normalized() -> None:
    options = GenerateOptions(
        **base(
            messages=[Message.user("hi")],
            tools=[ToolSpec("f")],
            stop="END",
            max_tokens=5,
            temperature=0,
            reasoning_effort="low",
            cancel=threading.Event(),
            idle_timeout=1,
            timeout=2.5,
            extra_body={"seed": 1},
            max_retries=0,
        )
    )
    assert options.messages == (Message.user("hi"),) and options.tools == (ToolSpec("f"),)
    assert options.stop == ("END",)
    assert GenerateOptions(**base(stop=["a", "b"])).stop == ("a", "b")
    assert GenerateOptions(**base(messages=iter([Message.user("x")]))).messages == (Message.user("x"),)
    with pytest.raises(ConfigurationError, match="GenerateOptions.max_tokens"):
        replace(options, max_tokens=-1)


def test_long_values_are_not_echoed_whole() -> None:
    huge = "x" * 100_000
    with pytest.raises(ConfigurationError) as info:
        GenerateOptions(**base(reasoning_effort=huge))
    assert len(str(info.value)) < 300
    with pytest.raises(ConfigurationError) as info:
        GenerateOptions(**base(messages=["y" * 100_000] * 1000))
    assert len(str(info.value)) < 300


def test_hostile_repr_does_not_hide_the_error() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    with pytest.raises(ConfigurationTypeError, match="GenerateOptions.extra_body must be a mapping.*got Hostile"):
        GenerateOptions(**base(extra_body=Hostile()))


def test_secrets_in_bad_values_are_redacted_when_echoed() -> None:
    key = "sk-proj-abcdefghijklmnopqrstuvwxyz012345"  # CANARY: a fake key for the test
    with pytest.raises(ConfigurationError) as info:
        GenerateOptions(**base(model=["Bearer " + key]))
    assert key not in str(info.value) and "GenerateOptions.model" in str(info.value)


# ---------------------------------------------------------------- Message / ToolSpec


@pytest.mark.parametrize(
    ("build", "cls", "field", "type_name"),
    [
        (lambda: Message("bot", "x"), ConfigurationError, "Message.role", "str"),  # type: ignore[arg-type]
        (lambda: Message(1, "x"), ConfigurationTypeError, "Message.role", "int"),  # type: ignore[arg-type]
        (lambda: Message("user", {"text": "x"}), ConfigurationTypeError, "Message.content", "dict"),  # type: ignore[arg-type]
        (lambda: Message("user", 5), ConfigurationTypeError, "Message.content", "int"),  # type: ignore[arg-type]
        (lambda: Message("user", b"x"), ConfigurationTypeError, "Message.content", "bytes"),  # type: ignore[arg-type]
        (lambda: Message("user", ["text"]), ConfigurationTypeError, "Message.content[0]", "str"),  # type: ignore[arg-type]
        (lambda: Message("user", "x", provider=3), ConfigurationTypeError, "Message.provider", "int"),  # type: ignore[arg-type]
        (lambda: Message("user", "x", model=b"m"), ConfigurationTypeError, "Message.model", "bytes"),  # type: ignore[arg-type]
        (lambda: Message.user(None), ConfigurationTypeError, "Message.content", "NoneType"),  # type: ignore[arg-type]
        (lambda: ToolSpec("f", parameters="x"), ConfigurationTypeError, "ToolSpec.parameters", "str"),  # type: ignore[arg-type]
        (lambda: ToolSpec(""), ConfigurationError, "ToolSpec.name", "str"),
        (lambda: ToolSpec(None), ConfigurationTypeError, "ToolSpec.name", "NoneType"),  # type: ignore[arg-type]
        (lambda: ToolSpec("f", description=None), ConfigurationTypeError, "ToolSpec.description", "NoneType"),  # type: ignore[arg-type]
    ],
)
def test_bad_messages_and_tool_specs(
    build: Any, cls: type[ConfigurationError], field: str, type_name: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        build()
    assert type(info.value) is cls
    assert str(info.value).startswith(field + " ") and f"got {type_name}" in str(info.value)


def test_unknown_role_is_still_a_value_error() -> None:
    with pytest.raises(ValueError, match="Message.role"):
        Message("bot", "x")  # type: ignore[arg-type]


def test_valid_messages_still_work() -> None:
    listed: Any = [TextBlock("a")]
    assert Message("assistant", listed).content == (TextBlock("a"),)
    assert Message.tool_result("c1", "out").blocks[0].call_id == "c1"  # type: ignore[union-attr]
    assert Message("user", "", provider="p", model="m").text == ""


# ---------------------------------------------------------------- api keys and adapter settings


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (KEY + "\n", "control character"),
        (KEY + "\r\n", "control character"),
        ("\t" + KEY, "control character"),
        (KEY[:10] + "\r" + KEY[10:], "control character"),
        (KEY + "\x00", "control character"),
        (KEY + "\x7f", "control character"),
        (KEY + "\x85", "control character"),
        (KEY + "\u2028", "not Latin-1"),
        (KEY + "\u00e9\u4e2d", "not Latin-1"),
        ("   ", "only whitespace"),
        (" " + KEY, "whitespace"),
        (KEY + " ", "whitespace"),
    ],
)
def test_bad_api_keys_are_refused_without_echoing_them(key: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_api_key(key, "OpenAIChatAdapter.api_key")
    error = info.value
    assert type(error) is ConfigurationError and isinstance(error, ValueError)
    text = f"{error} {error!r} {error.failure!r}"
    assert "OpenAIChatAdapter.api_key" in text and problem in text
    for piece in (KEY, KEY[:6], KEY[-6:], KEY[5:11]):
        assert piece not in text


def test_api_key_types() -> None:
    assert check_api_key(None) is None
    assert check_api_key("") is None
    assert check_api_key(KEY) == KEY
    for value in (b"abc", 123, ["k"], lambda: KEY):
        with pytest.raises(ConfigurationTypeError) as info:
            check_api_key(value)
        assert str(info.value).startswith("api_key must be a str") and type(value).__name__ in str(info.value)
    with pytest.raises(ConfigurationTypeError) as info:
        check_api_key(KEY.encode())
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "localhost:8080/v1",
        "127.0.0.1:8080",
        "ftp://example.com",
        "http://",
        "https:///v1",
        "http://exa mple.com",
        "http://example.com/\n",
        "http://example.com:99999/v1",
        "http://[::1",
        "",
    ],
)
def test_bad_base_urls(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_base_url(url)
    assert type(info.value) is ConfigurationError
    assert str(info.value).startswith("base_url is not a valid URL") and "http://" in str(info.value)
    assert "\n" not in str(info.value)


def test_base_url_type_and_password_redaction() -> None:
    assert check_base_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"
    assert check_base_url("HTTPS://api.example.com") == "HTTPS://api.example.com"
    with pytest.raises(ConfigurationTypeError, match="base_url is not a valid URL.*got NoneType"):
        check_base_url(None)
    with pytest.raises(ConfigurationError) as info:
        check_base_url(f"ftp://user:{KEY}@example.com/?key={KEY}", "GeminiAdapter.base_url")
    assert KEY not in str(info.value) and "GeminiAdapter.base_url" in str(info.value)


def test_headers_values_are_never_echoed() -> None:
    assert check_headers(None) == {}
    assert check_headers({"x-a": "1", "x-empty": ""}) == {"x-a": "1", "x-empty": ""}
    with pytest.raises(ConfigurationError) as info:
        check_headers({"x-api-key": KEY + "\r\nx-injected: 1"})
    assert KEY not in str(info.value) and "x-api-key" in str(info.value)
    with pytest.raises(ConfigurationTypeError):
        check_headers({"x-a": 1})
    with pytest.raises(ConfigurationTypeError):
        check_headers("x-a: 1")
    with pytest.raises(ConfigurationError):
        check_headers({"bad name": "1"})


def test_number_checks() -> None:
    assert check_timeout(None, "t") is None
    assert check_timeout(2, "t") == 2.0
    for bad in (0, -1, math.nan, math.inf, 10**400):
        with pytest.raises(ConfigurationError, match="^t must be a positive finite number"):
            check_timeout(bad, "t")
    for wrong in (True, "5", [1]):
        with pytest.raises(ConfigurationTypeError):
            check_timeout(wrong, "t")
    with pytest.raises(ConfigurationError, match="not_none"):
        check_timeout(None, "not_none", allow_none=False)
    assert check_nonneg_int(0, "n") == 0
    assert check_positive_int(3, "n") == 3
    with pytest.raises(ConfigurationError, match="n must be an int >= 0, got int -1"):
        check_nonneg_int(-1, "n")
    with pytest.raises(ConfigurationTypeError, match="n must be a positive int, got bool True"):
        check_positive_int(True, "n")
    assert check_finite_number(-3, "x", minimum=None) == -3
    assert check_str("a", "s") == "a"
    assert check_event(threading.Event(), "e") is not None
    assert describe("x" * 500).startswith("str 'xxx") and len(describe("x" * 500)) <= 70


# ---------------------------------------------------------------- strict JSON bodies


@pytest.mark.parametrize(
    "body",
    [
        {"temperature": math.nan},
        {"extra": {"x": [math.inf]}},
        {"extra": {1, 2}},
        {"extra": b"bytes"},
        {"extra": object()},
    ],
)
def test_body_that_json_cannot_carry_is_a_configuration_error(body: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError) as info:
        HttpRequest(url="http://127.0.0.1/x", headers={}, body=body)
    assert "request body" in str(info.value) and "extra_body" in str(info.value)
    assert type(info.value) is ConfigurationError


def test_body_cycles_are_a_configuration_error() -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    with pytest.raises(ConfigurationError, match="request body"):
        encode_json_body(cyclic)


def test_body_bytes_are_strict_compact_utf8() -> None:
    request = HttpRequest(url="http://127.0.0.1/x", headers={}, body={"t": "é😀", "n": 1.5})
    data = request.body_bytes()
    assert data == '{"t":"é😀","n":1.5}'.encode()
    assert b"NaN" not in encode_json_body({"a": 1})
    lone = encode_json_body({"t": "a\ud800b", "k\udfff": ["\udc00"]})
    assert json.loads(lone) == {"t": "a\ufffdb", "k\ufffd": ["\ufffd"]}


# ---------------------------------------------------------------- the service boundary


class Fake(LlmAdapter):
    def __init__(self) -> None:
        self.seen: list[GenerateOptions] = []

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        self.seen.append(options)
        from dshstream import BlockEnd, BlockStart, TextDelta

        yield BlockStart(0, "text")
        yield TextDelta(0, "ok")
        yield BlockEnd(0, TextBlock("ok"))
        yield Finish(reason=FinishReason(kind="stop"))


def service_with(*listeners: Any, check_contract: bool = False) -> tuple[LlmService, Fake]:
    service = LlmService(check_contract=check_contract)
    adapter = Fake()
    service.register_adapter(["p"], adapter)
    for listener in listeners:
        service.add_listener(listener)
    return service, adapter


def _tamper(options: GenerateOptions, field: str, value: Any) -> GenerateOptions:
    object.__setattr__(options, field, value)
    return options


@pytest.mark.parametrize(
    ("field", "value", "cls"),
    [
        ("cancel", True, ConfigurationTypeError),
        ("messages", "hello", ConfigurationTypeError),
        ("messages", ({"role": "user"},), ConfigurationTypeError),
        ("tools", ({"name": "f"},), ConfigurationTypeError),
        ("extra_body", "x", ConfigurationTypeError),
        ("idle_timeout", 0, ConfigurationError),
        ("max_tokens", -5, ConfigurationError),
        ("model", "", ConfigurationError),
        ("provider", None, ConfigurationTypeError),
        ("temperature", math.nan, ConfigurationError),
    ],
)
def test_service_stream_raises_only_configuration_errors_for_tampered_options(
    field: str, value: Any, cls: type[ConfigurationError]
) -> None:
    service, adapter = service_with()
    options = _tamper(GenerateOptions(**base()), field, value)
    with pytest.raises(ConfigurationError) as info:
        service.stream(options)
    assert type(info.value) is cls and f"GenerateOptions.{field}" in str(info.value)
    assert adapter.seen == []


def test_service_stream_refuses_what_is_not_options() -> None:
    service, _ = service_with()
    for bad in (None, {"provider": "p"}, "p"):
        with pytest.raises(ConfigurationTypeError, match="options must be a GenerateOptions"):
            service.stream(bad)  # type: ignore[arg-type]


def test_cancel_true_never_crashes_result() -> None:
    with pytest.raises(ConfigurationTypeError, match="GenerateOptions.cancel"):
        GenerateOptions(**base(cancel=True))


def _finish_of(chunks: list[StreamChunk]) -> Finish:
    assert chunks and isinstance(chunks[-1], Finish)
    assert sum(isinstance(c, Finish) for c in chunks) == 1
    return chunks[-1]


def test_broken_listeners_end_in_one_error_finish() -> None:
    def raises_at_call(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        raise KeyError("listener bug")

    def returns_none(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        return None  # type: ignore[return-value]

    def raises_mid_stream(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        for i, chunk in enumerate(next_(opts)):
            if i == 2:
                raise ZeroDivisionError("mid")
            yield chunk

    def yields_garbage(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        yield "not a chunk"  # type: ignore[misc]

    def raises_llm_error(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        from dshstream._core.errors import make_failure

        raise error_for(make_failure("RATE_LIMIT", "p: limited"))
        yield  # type: ignore[unreachable]  # pragma: no cover

    cases = [
        (raises_at_call, "UNKNOWN"),
        (returns_none, "UNKNOWN"),
        (raises_mid_stream, "UNKNOWN"),
        (yields_garbage, "CONTRACT_VIOLATION"),
        (raises_llm_error, "RATE_LIMIT"),
    ]
    for check_contract in (False, True):
        for listener, code in cases:
            service, _ = service_with(listener, check_contract=check_contract)
            stream = service.stream(GenerateOptions(**base()))
            finish = _finish_of(list(stream))
            assert finish.reason.kind == "error", listener.__name__
            assert finish.reason.failure is not None and finish.reason.failure.code == code, listener.__name__
            assert stream.result().finish.kind == "error"


def test_listener_error_after_finish_is_dropped() -> None:
    def late(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        yield from next_(opts)
        raise RuntimeError("after the finish")

    service, _ = service_with(late)
    stream = service.stream(GenerateOptions(**base()))
    assert stream.result().text == "ok" and stream.result().finish.kind == "stop"


def test_listener_passing_on_broken_options_gets_an_invalid_options_finish() -> None:
    def tamper(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        return next_(_tamper(replace(opts), "messages", "hello"))

    def not_options(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        return next_("nonsense")  # type: ignore[arg-type]

    def bad_replace(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        return next_(replace(opts, max_tokens=-1))

    for listener, code in (
        (tamper, "INVALID_OPTIONS_TYPE"),
        (not_options, "INVALID_OPTIONS_TYPE"),
        (bad_replace, "INVALID_OPTIONS"),
    ):
        service, adapter = service_with(listener)
        finish = _finish_of(list(service.stream(GenerateOptions(**base()))))
        assert finish.reason.failure is not None and finish.reason.failure.code == code
        assert adapter.seen == []


def test_broken_failure_reporter_is_harmless() -> None:
    def reporter(failure: Any, record: Any) -> None:
        raise RuntimeError("reporter bug")

    service = LlmService(failure_reporter=reporter)
    chunks = list(service.stream(GenerateOptions(**base(provider="missing"))))
    assert _finish_of(chunks).reason.failure.code == "NO_ADAPTER"  # type: ignore[union-attr]


def test_nan_in_extra_body_is_invalid_options_not_transport() -> None:
    from dshstream import OpenAIChatAdapter

    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url="http://127.0.0.1:9/v1", dialect="llamacpp"))
    options = GenerateOptions(**base(provider="local", extra_body={"x": math.nan}, max_retries=0))
    result = service.stream(options).result()
    assert result.finish.kind == "error" and result.failure is not None
    assert result.failure.code == "INVALID_OPTIONS" and "request body" in result.failure.message
    with pytest.raises(ConfigurationError):
        result.raise_for_failure()


def test_check_options_returns_valid_options() -> None:
    options = GenerateOptions(**base())
    assert check_options(options) is options


# ---------------------------------------------------------------- header-derived failure fields


def test_request_id_reflecting_the_key_is_dropped() -> None:
    headers = {"x-request-id": KEY, "request-id": "req_123"}
    failure = classify_http_error(401, b'{"error":{"message":"bad key"}}', headers, provider="p", secrets=(KEY,))
    assert failure.request_id == "req_123"
    assert KEY not in repr(failure)
    failure = classify_http_error(500, b"", {"request-id": f"id-{KEY}"}, secrets=(KEY,))
    assert failure.request_id is None and KEY not in repr(failure)
    assert request_id_from({"x-request-id": KEY}, secrets=(KEY,)) is None
    assert request_id_from({"x-request-id": "abc-123"}) == "abc-123"


def test_request_id_checks_registered_secrets_without_being_told() -> None:
    register_secret(KEY)
    try:
        assert request_id_from({"request-id": KEY}) is None
        assert request_id_from({"request-id": KEY.upper()}) == KEY.upper()
    finally:
        unregister_secret(KEY)


def test_payload_request_id_and_serving_provider_are_cleaned() -> None:
    payload = {
        "request_id": KEY,
        "error": {"message": "upstream failed", "code": 502, "metadata": {"provider_name": f"Prov {KEY}\r\nX"}},
    }
    failure = classify_error_payload(payload, provider="openrouter", secrets=(KEY,))
    assert failure.request_id is None
    assert KEY not in repr(failure)
    if failure.serving_provider is not None:
        assert "\r" not in failure.serving_provider and "\n" not in failure.serving_provider


def test_request_id_is_bounded() -> None:
    assert request_id_from({"x-request-id": "a" * 201}) is None
    assert request_id_from({"x-request-id": "a" * 200}) == "a" * 200


def test_failure_detail_has_no_lone_surrogates() -> None:
    failure = classify_error_payload('{"error":{"message":"bad \\ud800 thing"}}', provider="p")
    assert failure.detail is not None and "\ufffd" in failure.detail
    failure.detail.encode("utf-8")


# ---------------------------------------------------------------- lone surrogates


def _chat(*contents: str) -> bytes:
    events = [
        'data: {"choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % c for c in contents
    ]
    events.append('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n')
    events.append("data: [DONE]\n\n")
    return "".join(events).encode("ascii")


def test_lone_surrogate_in_streamed_text_becomes_replacement_character() -> None:
    result = assemble(decode(_chat("a\\ud800b", "c\\uDFFF", "\\udc00"), wire="openai-chat"))
    assert result.text == "a\ufffdbc\ufffd\ufffd"
    result.text.encode("utf-8")
    json.dumps([result.text], ensure_ascii=False).encode("utf-8")


def test_surrogate_pairs_stay_one_character() -> None:
    result = assemble(decode(_chat("\\ud83d\\ude00", "\\uD83D\\uDE00!", "x\\ud83d"), wire="openai-chat"))
    assert result.text == "😀😀!x\ufffd"


def test_split_pair_across_events_is_two_replacements() -> None:
    result = assemble(decode(_chat("\\ud83d", "\\ude00"), wire="openai-chat"))
    assert result.text == "\ufffd\ufffd"


def test_lone_surrogates_in_other_wires() -> None:
    anthropic = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":'
        b'{"input_tokens":1,"output_tokens":0}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"x\\ud800y"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        b'"usage":{"output_tokens":2}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    assert assemble(decode(anthropic, wire="anthropic")).text == "x\ufffdy"
    gemini = (
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"g\\udbff"}]},'
        b'"finishReason":"STOP"}]}\n\n'
    )
    assert assemble(decode(gemini, wire="gemini")).text == "g\ufffd"


def test_utf8_encoded_surrogates_in_raw_bytes_are_replaced() -> None:
    # CESU-8 / WTF-8 bytes of U+D800 are invalid UTF-8: the SSE decoder replaces them.
    data = b'data: {"choices":[{"index":0,"delta":{"content":"a\xed\xa0\x80b"}}]}\n\n' + _chat()
    text = assemble(decode(data, wire="openai-chat")).text
    assert text.startswith("a") and text.endswith("b") and "\ufffd" in text
    text.encode("utf-8")


def test_tool_arguments_and_keys_are_fixed() -> None:
    data = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
        b'"function":{"name":"f\\ud800","arguments":"{\\"a\\":1}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
    )
    result = assemble(decode(data, wire="openai-chat"))
    assert result.tool_calls[0].name == "f\ufffd"
    assert fix_surrogates({"k\ud800": ["\udfff", {"x": "\ud83d"}], "ok": 1}) == {
        "k\ufffd": ["\ufffd", {"x": "\ufffd"}],
        "ok": 1,
    }
    deep: Any = "\ud800"
    for _ in range(5000):
        deep = [deep]
    fixed = fix_surrogates(deep)
    for _ in range(5000):
        fixed = fixed[0]
    assert fixed == "\ufffd"


def test_lone_surrogate_in_history_is_sent_as_replacement() -> None:
    body = encode_json_body({"messages": [{"role": "user", "content": "hi \ud800"}]})
    assert json.loads(body)["messages"][0]["content"] == "hi \ufffd"
