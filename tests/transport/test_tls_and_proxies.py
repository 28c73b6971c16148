"""TLS trust and proxies (dshstream._transport.tls, failures rules 3-4): a loopback HTTPS
provider with a certificate from a throwaway CA (``trustme``), and a real forwarding proxy
(``proxy.py`` in a subprocess on an ephemeral port), with and without basic auth."""

from __future__ import annotations

import json
import os
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import ConfigurationError, GenerateOptions, LlmError, Message, OpenAIChatAdapter, TextDelta
from dshstream._core.redact import known_secrets, redact
from dshstream._replay_server import ReplayServer, Route
from forwarding_proxy import forwarding_proxies

trustme = pytest.importorskip("trustme")

_PROXY_VARIABLES = (
    "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy", "no_proxy",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE",
)


def chat_event(text: str) -> bytes:
    payload = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


FINISH = (
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def ca() -> Any:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_pem(ca: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def _https_server(ca: Any, *, client_ca: Any = None, pause: float = 0.0) -> ReplayServer:
    """A loopback HTTPS provider; ``pause`` seconds between its two text events (only the
    test that checks streaming through a proxy waits for one)."""
    server = ReplayServer()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(context)
    if client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        client_ca.configure_trust(context)
    # The handshake runs in the handler's thread (first read), never in the accept loop.
    inner = server._server
    inner.socket = context.wrap_socket(inner.socket, server_side=True, do_handshake_on_connect=False)
    server.add("/v1/", Route(body=b"", script=[chat_event("Hel"), *([pause] if pause else []), chat_event("lo"), FINISH]))
    return server


@pytest.fixture()
def tls_server(ca: Any) -> Iterator[ReplayServer]:
    with _https_server(ca) as server:
        yield server


def https_url(server: ReplayServer) -> str:
    return server.url.replace("http://", "https://") + "/v1"


def request() -> GenerateOptions:
    return GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),), timeout=20.0)


def text_of(adapter: OpenAIChatAdapter) -> tuple[str, list[float]]:
    text, at = "", []
    for chunk in adapter.stream(request()):
        if isinstance(chunk, TextDelta):
            text += chunk.text
            at.append(time.monotonic())
    return text, at


# --------------------------------------------------------------------------- TLS


def test_an_untrusted_certificate_is_tls_naming_what_to_set(tls_server: ReplayServer) -> None:
    adapter = OpenAIChatAdapter(api_key="sk-test-tls-123456", base_url=https_url(tls_server), max_retries=0)
    with pytest.raises(LlmError) as info:
        text_of(adapter)
    failure = info.value.failure
    assert failure.code == "TLS" and not failure.retryable
    assert "verify=" in failure.message and "REQUESTS_CA_BUNDLE" in failure.message
    assert "truststore" in failure.message
    assert "sk-test-tls-123456" not in str(failure)


def test_verify_a_ca_bundle_path(tls_server: ReplayServer, ca_pem: str) -> None:
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(tls_server), verify=ca_pem)
    assert text_of(adapter)[0] == "Hello"


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"])
def test_the_environment_names_the_ca_bundle(
    tls_server: ReplayServer, ca_pem: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, ca_pem)
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(tls_server))
    assert text_of(adapter)[0] == "Hello"
    # list_models goes the same way (a 404 answered over the trusted connection, not TLS)
    with pytest.raises(LlmError) as info:
        adapter.list_models("local")
    assert info.value.failure.code != "TLS"


def test_verify_false_trusts_anything(tls_server: ReplayServer) -> None:
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(tls_server), verify=False)
    assert text_of(adapter)[0] == "Hello"


def test_a_client_certificate_the_server_requires(ca: Any, ca_pem: str, tmp_path: Path) -> None:
    client_ca = trustme.CA()
    client = client_ca.issue_cert("client@example.com")
    both = tmp_path / "client.pem"
    client.private_key_and_cert_chain_pem.write_to_path(str(both))
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    client.cert_chain_pems[0].write_to_path(str(cert))
    client.private_key_pem.write_to_path(str(key))
    with _https_server(ca, client_ca=client_ca) as server:
        refused = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(server), verify=ca_pem, max_retries=0)
        with pytest.raises(LlmError) as info:
            text_of(refused)
        assert info.value.failure.code in ("TLS", "TRANSPORT")  # the alert may come as a reset
        for client_cert in (str(both), (str(cert), str(key))):
            adapter = OpenAIChatAdapter(
                api_key="k-123456", base_url=https_url(server), verify=ca_pem, client_cert=client_cert
            )
            assert text_of(adapter)[0] == "Hello"


def test_trust_store_system_is_this_session_only(tls_server: ReplayServer, ca_pem: str) -> None:
    pytest.importorskip("truststore")
    before = ssl.SSLContext
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(tls_server), trust_store="system", max_retries=0)
    assert ssl.SSLContext is before  # nothing injected process-wide
    session = adapter.transport.session  # type: ignore[attr-defined]
    assert type(session.get_adapter("https://x")).__name__ == "_TrustStoreAdapter"
    with pytest.raises(LlmError) as info:  # the throwaway CA is in no system store
        text_of(adapter)
    assert info.value.failure.code == "TLS"


@pytest.mark.parametrize(
    ("setting", "value", "words"),
    [
        ("verify", "/no/such/ca.pem", "verify"),
        ("verify", 3, "verify"),
        ("client_cert", "/no/such/cert.pem", "client_cert"),
        ("client_cert", ("a",), "client_cert"),
        ("trust_store", "windows", "trust_store"),
        ("proxies", {"https": "not a url"}, "proxies"),
        ("proxies", ["http://p:1"], "proxies"),
    ],
)
def test_caller_mistakes_are_refused_naming_the_setting(setting: str, value: object, words: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        OpenAIChatAdapter(api_key="k-123456", base_url="https://example.invalid/v1", **{setting: value})  # type: ignore[arg-type]
    assert words in str(info.value)


def test_transport_settings_not_with_transport() -> None:
    from dshstream.testing import MemoryTransport

    with pytest.raises(ConfigurationError, match="verify"):
        OpenAIChatAdapter(api_key="k-123456", transport=MemoryTransport(b""), verify=False)


# --------------------------------------------------------------------------- proxies


@pytest.fixture(scope="module")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    with forwarding_proxies(tmp_path_factory.mktemp("proxy")) as ports:
        yield ports


def test_https_through_a_connect_proxy_streams_as_it_arrives(
    ca: Any, ca_pem: str, proxies: tuple[int, int]
) -> None:
    open_port, _ = proxies
    with _https_server(ca, pause=0.6) as paused:
        adapter = OpenAIChatAdapter(
            api_key="k-123456", base_url=https_url(paused), verify=ca_pem,
            proxies={"https": f"http://127.0.0.1:{open_port}"},
        )
        text, at = text_of(adapter)
    assert text == "Hello"
    assert at[1] - at[0] >= 0.3, at  # the first event came before the server's pause: no buffering


def test_the_environment_names_the_proxy(
    tls_server: ReplayServer, ca_pem: str, proxies: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The environment's proxy credentials are secrets from the start; the environment's
    proxy is not asked for a loopback server (environment rule 3: the request would be
    refused for the wrong password below), the same proxy given as ``proxies=`` is."""
    _, auth_port = proxies
    monkeypatch.setenv("HTTPS_PROXY", f"http://alice:pr0xy-s3cret-pw@127.0.0.1:{auth_port}")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", ca_pem)
    adapter = OpenAIChatAdapter(api_key="k-123456", base_url=https_url(tls_server))
    assert "pr0xy-s3cret-pw" in known_secrets()
    assert text_of(adapter)[0] == "Hello"
    monkeypatch.setenv("HTTPS_PROXY", f"http://alice:wr0ng-pa55@127.0.0.1:{auth_port}")
    assert text_of(adapter)[0] == "Hello"  # direct: the proxy would have answered 407
    explicit = OpenAIChatAdapter(
        api_key="k-123456", base_url=https_url(tls_server), max_retries=0,
        proxies={"https": f"http://alice:wr0ng-pa55@127.0.0.1:{auth_port}"},
    )
    with pytest.raises(LlmError) as info:
        text_of(explicit)
    assert info.value.failure.code == "PROXY_AUTH"


def test_a_proxy_wanting_credentials_says_so(
    tls_server: ReplayServer, ca_pem: str, proxies: tuple[int, int]
) -> None:
    _, auth_port = proxies
    wrong = f"http://alice:wr0ng-pa55word@127.0.0.1:{auth_port}"
    for proxy in (f"http://127.0.0.1:{auth_port}", wrong):
        adapter = OpenAIChatAdapter(
            api_key="k-123456", base_url=https_url(tls_server), verify=ca_pem, proxies={"https": proxy}, max_retries=0
        )
        with pytest.raises(LlmError) as info:
            text_of(adapter)
        failure = info.value.failure
        assert failure.code == "PROXY_AUTH" and not failure.retryable, failure
        assert "proxy wants credentials" in failure.message
        shown = f"{failure!r} {info.value!r} {adapter!r} {adapter.transport!r}"
        assert "wr0ng-pa55word" not in shown
    assert redact(f"dial {wrong}") == f"dial {wrong}".replace("wr0ng-pa55word", "[REDACTED]") or (
        "wr0ng-pa55word" not in redact(f"dial {wrong}")
    )


def test_plain_http_through_an_auth_proxy_is_proxy_auth(proxies: tuple[int, int]) -> None:
    _, auth_port = proxies
    with ReplayServer({"/v1/": Route(body=chat_event("Hi") + FINISH)}) as server:
        adapter = OpenAIChatAdapter(
            api_key="k-123456", base_url=f"{server.url}/v1", proxies={"http": f"http://127.0.0.1:{auth_port}"},
            max_retries=0,
        )
        with pytest.raises(LlmError) as info:
            text_of(adapter)
        assert info.value.failure.code == "PROXY_AUTH"
        ok = OpenAIChatAdapter(
            api_key="k-123456", base_url=f"{server.url}/v1",
            proxies={"http": f"http://alice:pr0xy-s3cret-pw@127.0.0.1:{auth_port}"},
        )
        assert text_of(ok)[0] == "Hi"
    assert os.environ.get("HTTP_PROXY") is None
