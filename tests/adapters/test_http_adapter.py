"""Adding a provider: the README's adapter — a ``Wire``, a ``HeaderAuth`` and
``HttpAdapter`` composed — streamed and listed over loopback; and the same provider
written the older way, as an ``HttpAdapter`` subclass with hook methods (http rule 6)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import fixture_bytes

from dshstream import ConfigurationError, GenerateOptions, LlmService, Message
from dshstream.adapters import AppIdentity, AuthFlow, HeaderAuth, HttpAdapter, ModelInfo, ModelListFormat, Wire
from dshstream.sansio import OpenAIChatTranslator, Translator
from dshstream.testing import ReplayServer, Route


class AcmeWire(Wire):
    models_path = "/models"
    models_format = ModelListFormat(list_key="data", id_key="id")

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/generate"

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {"model": options.model, "stream": True,
                "messages": [{"role": m.role, "content": m.text} for m in options.messages]}

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return OpenAIChatTranslator(provider=options.provider, request_id=request_id)


class AcmeAdapter(HttpAdapter):
    default_name = "Acme"
    default_base_url = "https://api.acme.example/v2"
    key_env = ("ACME_API_KEY",)

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.wire = AcmeWire(self.base_url, self.title)
        self.auth_flow = HeaderAuth(self.credential, "x-acme-key", scheme="")


class HookedAcmeAdapter(HttpAdapter):
    """The same provider as hook methods of a subclass (http rule 6)."""

    default_name = "Acme"
    default_base_url = "https://api.acme.example/v2"
    key_env = ("ACME_API_KEY",)
    models_path = "/models"
    models_format = ModelListFormat(list_key="data", id_key="id")

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/generate"

    def auth_headers(self) -> dict[str, str] | None:
        return {"x-acme-key": self._api_key} if self._api_key else None

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {"model": options.model, "stream": True,
                "messages": [{"role": m.role, "content": m.text} for m in options.messages]}

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return OpenAIChatTranslator(provider=options.provider, request_id=request_id)


@pytest.mark.parametrize("acme", [AcmeAdapter, HookedAcmeAdapter], ids=["composed", "hooks"])
def test_an_adapter_streams_lists_models_and_inherits_every_setting(
    acme: type[HttpAdapter], monkeypatch: pytest.MonkeyPatch
) -> None:
    AcmeAdapter = acme
    monkeypatch.setenv("ACME_API_KEY", "acme-env-key-123")
    with ReplayServer() as srv:
        srv.add("/v2/generate", Route(body=fixture_bytes("openai/text_include_usage.sse")))
        srv.add("/v2/models", Route(body=b'{"data": [{"id": "a1", "name": "A One"}]}', content_type="application/json"))
        adapter = AcmeAdapter(api_key="acme-key-123", base_url=f"{srv.url}/v2", headers={"x-team": "t"}, max_retries=0)
        service = LlmService(check_contract=True)
        service.register_adapter(["acme"], adapter)
        result = service.stream(GenerateOptions(provider="acme", model="m", messages=(Message.user("hi"),))).result()
        assert result.finish.kind == "stop" and result.text
        sent = srv.requests[0]
        assert sent.path == "/v2/generate"
        assert sent.headers["x-acme-key"] == "acme-key-123" and sent.headers["x-team"] == "t"
        assert sent.body["messages"] == [{"role": "user", "content": "hi"}]
        assert service.list_models("acme") == [ModelInfo(id="a1", name="A One")]
        assert adapter.provider_info("acme").name == "Acme"
    # The environment key is read for Acme's own host only.
    assert AcmeAdapter().credential.value == "acme-env-key-123"
    assert AcmeAdapter(base_url="http://127.0.0.1:9/v2").credential.value is None
    assert "acme-key-123" not in repr(adapter) and "acme-key-123" not in repr(adapter.auth_flow)


def test_a_subclass_without_a_wire_or_hooks_is_told_what_is_missing() -> None:
    class Bare(HttpAdapter):
        pass

    options = GenerateOptions(provider="bare", model="m", messages=(Message.user("hi"),))
    with pytest.raises(ConfigurationError, match=r"Bare has no wire: pass wire=.*endpoint\(\)"):
        Bare(base_url="http://127.0.0.1:9").build_request(options)


def test_an_auth_flow_of_your_own_adds_its_headers_to_every_attempt() -> None:
    class Signed(AuthFlow):
        def headers(self, provider: str, limits: object = None) -> tuple[dict[str, str], tuple[str, ...]]:
            return {"Authorization": "Acme token-0042", "x-acme-signed": "1"}, ("token-0042",)

    adapter = HttpAdapter(wire=AcmeWire("http://127.0.0.1:9/v2", "Acme"), auth_flow=Signed(),
                          base_url="http://127.0.0.1:9/v2", headers={"authorization": "from-the-caller"})
    request = adapter.build_request(GenerateOptions(provider="acme", model="m", messages=(Message.user("hi"),)))
    assert request.url == "http://127.0.0.1:9/v2/generate"
    # the flow's header replaces the caller's, whatever its spelling: never sent twice
    assert [k for k in request.headers if k.lower() == "authorization"] == ["Authorization"]
    assert request.headers["x-acme-signed"] == "1" and "token-0042" in request.secrets
    assert "token-0042" not in repr(request)


class VersionedWire(AcmeWire):
    version = "1"

    def protocol_headers(self) -> dict[str, str]:
        return {"acme-version": self.version}


@pytest.mark.parametrize("acme", [AcmeAdapter, HookedAcmeAdapter], ids=["composed", "hooks"])
def test_headers_changed_after_the_adapter_was_built_go_with_the_next_request(acme: type[HttpAdapter]) -> None:
    """The headers are merged once and the merge kept (http rule 3) while what it merged
    is the same: a caller's header changed in place, a new identity, a wire's protocol
    header changed or a wire of its own set after the adapter was built all go with the
    next request."""
    options = GenerateOptions(provider="acme", model="m", messages=(Message.user("hi"),))
    adapter = acme(api_key="acme-key-123", base_url="http://127.0.0.1:9/v2", headers={"x-team": "t"})
    first = adapter.build_request(options).headers
    assert first["x-team"] == "t" and first["user-agent"].startswith("dshstream/")
    assert first["accept"] == "text/event-stream"
    mine = adapter.request_headers()
    mine["x-team"] = "changed by a caller"  # what a call returns is its own
    assert adapter.build_request(options).headers["x-team"] == "t"

    adapter.extra_headers["x-team"] = "u"
    adapter.extra_headers["x-late"] = "1"
    later = adapter.build_request(options).headers
    assert later["x-team"] == "u" and later["x-late"] == "1"

    adapter.identity = AppIdentity("acme-app", "2.0", "https://acme.example")
    assert adapter.build_request(options).headers["user-agent"] == "acme-app/2.0 (+https://acme.example)"

    wire = VersionedWire(adapter.base_url, "Acme")
    adapter.wire = wire
    assert adapter.build_request(options).headers["acme-version"] == "1"
    wire.version = "2"
    assert adapter.build_request(options).headers["acme-version"] == "2"
    assert adapter.request_headers(streaming=False).get("accept") is None
    assert adapter.build_request(options).headers["x-late"] == "1"


def test_settings_are_validated_when_built() -> None:
    with pytest.raises(ConfigurationError, match="max_retries"):
        AcmeAdapter(max_retries=-1)
    with pytest.raises(ConfigurationError, match="base_url"):
        AcmeAdapter(base_url="api.acme.example")
    with pytest.raises(ConfigurationError, match="api_key") as caught:
        AcmeAdapter(api_key="acme\nkey-123456")
    assert "key-123456" not in str(caught.value)


def test_an_unknown_setting_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match="max_retrys") as caught:
        AcmeAdapter(max_retrys=3)
    assert isinstance(caught.value, TypeError)


def test_an_adapter_streams_over_a_transport_of_your_own() -> None:
    # transport= takes any Transport: a user's test runs the adapter, the wire and the
    # assembler on recorded bytes without a socket (dshstream.testing.MemoryTransport).
    from dshstream import OpenAIChatAdapter as Adapter
    from dshstream.testing import MemoryAnswer, MemoryTransport


    from helpers import fixture_bytes

    body = fixture_bytes("openai/single_tool_call.sse")
    transport = MemoryTransport(MemoryAnswer(body=[body[:100], body[100:]]))
    service = LlmService(check_contract=True)
    service.register_adapter(["openai"], Adapter(api_key="k-memory-123", base_url="http://memory.invalid/v1",
                                                 transport=transport))
    options = GenerateOptions(provider="openai", model="gpt-4o-mini", messages=(Message.user("Weather?"),))
    result = service.stream(options).result()
    assert result.finish.kind == "tool-calls" and result.tool_calls
    sent = transport.requests[-1]
    assert sent.url == "http://memory.invalid/v1/chat/completions"
    with pytest.raises(ConfigurationError, match="session= or transport="):
        import requests

        Adapter(api_key="k", transport=transport, session=requests.Session())
    with pytest.raises(ConfigurationError, match="transport must be"):
        Adapter(api_key="k", transport=object())  # type: ignore[arg-type]
