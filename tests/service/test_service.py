"""LlmService: the seed's service seams (research/seed_systems.md §3). ChunkStream, what
``LlmService.stream`` returns, is tested in tests/service/test_chunk_stream.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    LlmError,
    Message,
    StreamChunk,
    TextBlock,
    TextDelta,
)
from dshstream._adapters.base import LlmAdapter, ModelInfo, ProviderInfo
from dshstream._core.errors import error_for, make_failure
from dshstream._service import LlmService, Next


def text_stream(text: str) -> list[StreamChunk]:
    return [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text=text),
        BlockEnd(index=0, block=TextBlock(text)),
        Finish(reason=FinishReason(kind="stop"), replay_state={"from": text}),
    ]


class FakeAdapter(LlmAdapter):
    def __init__(self, text: str = "ok", name: str = "Fake") -> None:
        self.text = text
        self.name = name
        self.seen: list[GenerateOptions] = []

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        self.seen.append(options)
        yield from text_stream(self.text)

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(id=provider, name=self.name)

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        return [ModelInfo(id="m1", name="Model 1")]


def options(provider: str = "p", messages: tuple[Message, ...] = (Message.user("hi"),)) -> GenerateOptions:
    return GenerateOptions(provider=provider, model="m", messages=messages)


def code_of(exc: pytest.ExceptionInfo[LlmError]) -> str:
    return exc.value.failure.code


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize("routes", [[], [""]])
def test_invalid_routes(routes: list[str]) -> None:
    with pytest.raises(LlmError) as info:
        LlmService().register_adapter(routes, FakeAdapter())
    assert code_of(info) == "INVALID_ADAPTER"


def test_duplicate_routes_are_rejected_atomically() -> None:
    service = LlmService()
    service.register_adapter(["a"], FakeAdapter())
    with pytest.raises(LlmError) as info:
        service.register_adapter(["b", "b"], FakeAdapter())
    assert code_of(info) == "DUPLICATE_ADAPTER"
    with pytest.raises(LlmError) as info:
        service.register_adapter(["c", "a"], FakeAdapter())
    assert code_of(info) == "DUPLICATE_ADAPTER"
    assert [p.id for p in service.list_providers()] == ["a"]


def test_provider_info_must_echo_the_route() -> None:
    class Liar(FakeAdapter):
        def provider_info(self, provider: str) -> ProviderInfo:
            return ProviderInfo(id="other", name="x")

    with pytest.raises(LlmError) as info:
        LlmService().register_adapter(["p"], Liar())
    assert code_of(info) == "INVALID_ADAPTER"
    with pytest.raises(LlmError):
        LlmService().register_adapter(["p"], FakeAdapter(name=""))


def test_replace_and_dispose() -> None:
    service = LlmService()
    registration = service.register_adapter(["a", "b"], FakeAdapter())
    other = service.register_adapter(["c"], FakeAdapter())
    with pytest.raises(LlmError):
        registration.replace(["c"])
    registration.replace(["b", "d"])
    assert [p.id for p in service.list_providers()] == ["b", "d", "c"]
    registration.replace([])
    assert [p.id for p in service.list_providers()] == ["c"]
    other.dispose()
    assert service.list_providers() == []
    with pytest.raises(LlmError) as info:
        other.dispose()
    assert code_of(info) == "REGISTRATION_DISPOSED"
    with pytest.raises(LlmError):
        other.replace(["x"])


def test_list_providers_returns_detached_copies_and_models_delegate() -> None:
    service = LlmService()
    service.register_adapter(["x", "y"], FakeAdapter(name="Fake X"))
    listed = service.list_providers()
    assert listed == [ProviderInfo("x", "Fake X"), ProviderInfo("y", "Fake X")]
    listed.clear()
    assert len(service.list_providers()) == 2
    assert service.list_models("x") == [ModelInfo("m1", "Model 1")]
    with pytest.raises(LlmError) as info:
        service.list_models("nope")
    assert code_of(info) == "NO_ADAPTER"


# ---------------------------------------------------------------- streaming


def test_unknown_provider_is_a_no_adapter_finish() -> None:
    chunks = list(LlmService().stream(options("missing")))
    assert len(chunks) == 1
    finish = chunks[0]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == "NO_ADAPTER"
    assert "missing" in finish.reason.failure.message


def test_listener_can_short_circuit_and_reroute() -> None:
    service = LlmService()
    initial, routed = FakeAdapter("initial"), FakeAdapter("routed")
    service.register_adapter(["initial"], initial)
    service.register_adapter(["routed"], routed)
    from dataclasses import replace

    def reroute(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        return next_(replace(opts, provider="routed"))

    remove = service.add_listener(reroute)
    assert service.stream(options("initial")).result().text == "routed"
    assert not initial.seen and len(routed.seen) == 1
    remove()

    def canned(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        yield from text_stream("cached")

    service.add_listener(canned)
    assert service.stream(options("initial")).result().text == "cached"


def test_listener_errors_become_one_error_finish() -> None:
    service = LlmService()
    service.register_adapter(["p"], FakeAdapter())

    def broken(opts: GenerateOptions, next_: Next) -> Iterator[StreamChunk]:
        raise RuntimeError("listener bug")

    service.add_listener(broken)
    chunks = list(service.stream(options()))
    assert len(chunks) == 1 and isinstance(chunks[0], Finish)
    failure = chunks[0].reason.failure
    assert chunks[0].reason.kind == "error" and failure is not None and failure.code == "UNKNOWN"
    assert "listener" in failure.message and "RuntimeError" in failure.message
    assert failure.detail is not None and "listener bug" in failure.detail


class Raising(FakeAdapter):
    def __init__(self, exc: BaseException, after: int = 0) -> None:
        super().__init__()
        self.exc = exc
        self.after = after

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        yield from text_stream("partial")[: self.after]
        raise self.exc


def test_adapter_errors_become_one_error_finish_keeping_partial_output() -> None:
    service = LlmService(check_contract=True)
    failure = make_failure("RATE_LIMIT", "p: rate limited (RATE_LIMIT, HTTP 429)", status=429, provider="p")
    service.register_adapter(["p"], Raising(error_for(failure), after=2))
    stream = service.stream(options())
    chunks = list(stream)
    assert isinstance(chunks[-1], Finish) and chunks[-1].reason.failure == failure
    result = stream.result()
    assert result.finish.kind == "error" and result.text == "partial"


def test_foreign_exception_is_unknown_with_redacted_detail() -> None:
    service = LlmService()
    service.register_adapter(["p"], Raising(ValueError("plain provider failure key=sk-abcdefghijklmnopqrstuvwx")))  # CANARY: a fake key for the test
    result = service.stream(options()).result()
    failure = result.failure
    assert failure is not None and failure.code == "UNKNOWN"
    assert "ValueError" in failure.message and "plain" not in failure.message
    assert failure.detail is not None and "plain provider failure" in failure.detail
    assert "sk-abcdefghijklmnopqrstuvwx" not in failure.detail  # CANARY: a fake key for the test


def test_cancelled_request_or_aborted_code_is_an_aborted_finish() -> None:
    service = LlmService()
    service.register_adapter(["p"], Raising(RuntimeError("boom")))
    cancel = threading.Event()
    cancel.set()
    from dataclasses import replace

    result = service.stream(replace(options(), cancel=cancel)).result()
    assert result.finish.kind == "aborted" and result.failure is not None
    assert result.failure.code == "ABORTED"
    service2 = LlmService()
    service2.register_adapter(["p"], Raising(error_for(make_failure("ABORTED", "p: aborted"))))
    assert service2.stream(options()).result().finish.kind == "aborted"


def test_replay_state_routed_only_to_the_same_adapter_instance() -> None:
    service = LlmService()
    shared, other = FakeAdapter(), FakeAdapter()
    service.register_adapter(["a", "a2"], shared)
    service.register_adapter(["b"], other)
    first = service.stream(options("a")).result().message()
    assert first.replay_state == {"from": "ok"}
    history = (Message.user("hi"), first, Message.user("again"))
    service.stream(options("a2", history)).result()
    assert shared.seen[-1].messages[1].replay_state == {"from": "ok"}
    service.stream(options("b", history)).result()
    stripped = other.seen[-1].messages[1]
    assert stripped.replay_state is None
    assert (stripped.provider, stripped.model) == ("a", "m")
    assert history[1].replay_state == {"from": "ok"}  # the caller's request is not mutated


# ---------------------------------------------------------------- reporting


def test_service_reporter_hears_each_failed_stream_once() -> None:
    reports: list[str] = []
    service = LlmService(failure_reporter=lambda failure, record: reports.append(failure.code))
    service.register_adapter(["raise"], Raising(error_for(make_failure("SERVER", "p: down"))))
    service.register_adapter(["ok"], FakeAdapter())
    service.stream(options("raise")).result()
    service.stream(options("ok")).result()
    service.stream(options("missing")).result()
    assert reports == ["SERVER", "NO_ADAPTER"]


# ---------------------------------------------------------------- a newcomer's first minutes


def _no_adapter_message(service: LlmService, provider: str) -> str:
    finish = list(service.stream(options(provider)))[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "NO_ADAPTER"
    return finish.reason.failure.message


@pytest.mark.parametrize(
    ("provider", "says"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("gemini", "GEMINI_API_KEY or GOOGLE_API_KEY"),
        ("together", "TOGETHER_API_KEY"),
        ("azure", "AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY"),
        ("bedrock", "AWS_REGION"),
        ("vertex", "GOOGLE_CLOUD_PROJECT"),
    ],
)
def test_no_adapter_for_a_known_provider_names_the_variables_that_register_it(
    provider: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dshstream._defaults import default_service

    secret = "sk-test-NOT-IN-MESSAGES-000000000000"  # CANARY: a fake key set for another provider
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    for variable in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "TOGETHER_API_KEY", "AZURE_OPENAI_ENDPOINT",
                     "AZURE_OPENAI_API_KEY", "AWS_REGION", "AWS_DEFAULT_REGION", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(variable, raising=False)
    by_hand = _no_adapter_message(LlmService(), provider)
    assert by_hand.startswith(f"no adapter registered for provider {provider!r}: register one with ")
    assert f"service.register_adapter([{provider!r}], " in by_hand and says in by_hand
    assert "default_service()" in by_hand
    # from the environment: setting the variable is the fix, said first
    from_env = _no_adapter_message(default_service(), provider)
    assert from_env.startswith(f"no adapter registered for provider {provider!r}: set ")
    assert says in from_env and "register_adapter" in from_env
    assert secret not in by_hand + from_env and "CANARY" not in by_hand + from_env


def test_no_adapter_for_a_local_server_or_an_unknown_name() -> None:
    local = _no_adapter_message(LlmService(), "llamacpp")
    assert "OpenAIChatAdapter(dialect='llamacpp')" in local and "LLAMACPP_BASE_URL" in local
    service = LlmService()
    service.register_adapter(["openai"], FakeAdapter())
    typo = _no_adapter_message(service, "opanai")  # the registered names show the typo
    assert typo == (
        "no adapter registered for provider 'opanai': register one with "
        "service.register_adapter(['opanai'], adapter) (registered: openai)"
    )
    assert _no_adapter_message(LlmService(), "x").endswith("(registered: none)")


def test_the_one_liner_picks_up_a_key_set_after_its_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from dshstream import _defaults

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(_defaults, "_service", None)
    first = _defaults._shared_service("openai")
    assert "openai" not in [p.id for p in first.list_providers()]
    assert _defaults._shared_service("ollama") is first  # a provider it has: no rebuild
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000000000000000")  # CANARY: a fake key for the test
    again = _defaults._shared_service("openai")  # a notebook cell set the key, then retried
    assert again is not first and "openai" in [p.id for p in again.list_providers()]


def test_a_registration_shows_nothing_in_a_notebook() -> None:
    registration = LlmService().register_adapter(["p"], FakeAdapter())
    assert hasattr(registration, "_ipython_display_")
    assert registration._ipython_display_() is None  # type: ignore[func-returns-value]
    assert repr(registration) == "Registration(providers=['p'], disposed=False)"


def test_the_callers_own_cancel_is_logged_below_warning(caplog: pytest.LogCaptureFixture) -> None:
    # cancel() (Ctrl-C in the command line, Stop in a notebook) is not a provider failure
    import logging

    from dshstream import OpenAIChatAdapter
    from dshstream._replay_server import ReplayServer, Route

    event = b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    with ReplayServer({"/v1/": Route(body=b"", script=[event, 10.0, event])}) as server:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="llamacpp"))
        stream = service.stream(options("local"))
        with caplog.at_level(logging.DEBUG, logger="dshstream"):
            for chunk in stream:
                if isinstance(chunk, TextDelta):
                    threading.Timer(0.1, stream.cancel).start()
        assert stream.result().finish.kind == "aborted"
    ours = [r for r in caplog.records if r.name.startswith("dshstream")]
    assert any("cancelled by the caller" in r.getMessage() for r in ours), ours
    assert all(r.levelno < logging.WARNING for r in ours), [(r.levelname, r.getMessage()) for r in ours]
