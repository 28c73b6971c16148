"""The transport's own session reads the environment as ``requests`` does, on every send
(``_transport/environment.py``): the same merged settings as ``requests.Session`` for any
environment (hypothesis, against requests itself), a proxy variable set after the adapter
was made applies to the next request and one removed stops applying, ``NO_PROXY`` still
bypasses, and a loopback destination is never sent to the environment's proxy (rule 3)
while an explicit ``proxies=`` still applies to it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream import GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream._replay_server import ReplayServer, Route
from dshstream._transport.environment import EnvironmentSession, names_a_proxy
from dshstream._transport.tls import ConnectionSettings
from dshstream._transport.pool import new_session
from helpers import fixture_bytes

NAMES = [
    "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
    "Https_Proxy", "ftp_proxy", "MY_PROXY_HOST", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUEST_METHOD",
    "HOME", "LANG", "PATH",
]
VALUES = ["", "http://proxy.example:3128", "http://u:p@127.0.0.1:9", "127.0.0.1", "*", ".example.com", "/etc/ca.pem"]
URLS = ["http://127.0.0.1:8080/v1/chat/completions", "https://api.example.com/v1/messages", "http://[::1]:9/v1",
        "http://localhost:11434/v1"]
LOOPBACK = {URLS[0], URLS[2], URLS[3]}


def _settings() -> st.SearchStrategy[dict[str, Any]]:
    proxy_map = st.dictionaries(st.sampled_from(["http", "https", "all", "no_proxy", "https://api.example.com"]),
                                st.sampled_from(VALUES[1:]), max_size=2)
    return st.fixed_dictionaries({
        "environment": st.dictionaries(st.sampled_from(NAMES), st.sampled_from(VALUES), max_size=6),
        "url": st.sampled_from(URLS),
        "proxies": proxy_map,  # never None: Session.request passes ``proxies or {}``
        "stream": st.sampled_from([None, True, False]),
        "verify": st.sampled_from([None, True, False, "/given/ca.pem"]),
        "cert": st.sampled_from([None, "/client.pem", ("/c.pem", "/k.pem")]),
        "session_proxies": proxy_map,
        "session_verify": st.sampled_from([True, False, "/session/ca.pem"]),
        "session_cert": st.sampled_from([None, "/session.pem"]),
        "trust_env": st.booleans(),
    })


def _configured(session: requests.Session, case: dict[str, Any]) -> requests.Session:
    session.proxies = dict(case["session_proxies"])
    session.verify = case["session_verify"]
    session.cert = case["session_cert"]
    session.trust_env = case["trust_env"]
    return session


@settings(max_examples=300, deadline=None)
@given(_settings())
def test_the_merged_settings_are_requests_own_in_any_environment(case: dict[str, Any]) -> None:
    """Rules 1 to 3: whatever the variables (proxies in any case, empty ones, NO_PROXY,
    the CA bundle variables, CGI's REQUEST_METHOD), the settings a send gets are exactly
    the ones requests' own session merges — to a loopback URL, the ones it merges with no
    proxy variable set (rule 3)."""
    ours, theirs = _configured(EnvironmentSession(), case), _configured(requests.Session(), case)
    args = (case["url"], case["stream"], case["verify"], case["cert"])
    environment = case["environment"]
    with mock.patch.dict(os.environ, environment, clear=True):
        got = ours.merge_environment_settings(args[0], _copy(case["proxies"]), *args[1:])
        assert names_a_proxy() == any("_proxy" in name.lower() for name in environment)
    if case["url"] in LOOPBACK and case["trust_env"]:
        environment = {name: value for name, value in environment.items() if "_proxy" not in name.lower()}
    with mock.patch.dict(os.environ, environment, clear=True):
        expected = theirs.merge_environment_settings(args[0], _copy(case["proxies"]), *args[1:])
    assert got == expected


def _copy(proxies: dict[str, str]) -> dict[str, str]:
    return dict(proxies)  # merge_environment_settings fills it in


def test_the_transports_own_session_is_one() -> None:
    assert isinstance(new_session(), EnvironmentSession)


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if "_proxy" in name.lower():
            monkeypatch.delenv(name)
    yield monkeypatch


NAMED = "provider.example.test"  # not loopback by name; resolved to 127.0.0.1 by the test


@pytest.fixture
def named_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """``NAMED`` resolves to 127.0.0.1 for this test (no resolver asked)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if host == NAMED else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _text(service: LlmService) -> str:
    result = service.stream(GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),))).result()
    assert result.ok, result.finish
    return result.text


def test_a_proxy_set_after_the_adapter_was_made_applies_to_the_next_request(
    no_proxy_variables: pytest.MonkeyPatch, named_host: None
) -> None:
    body = fixture_bytes("openai/finish_length.sse")
    with ReplayServer({"/v1/": body}) as provider, ReplayServer() as proxy:
        proxy.add("http://", Route(body=body))  # a forwarding proxy gets the absolute URL
        base = f"http://{NAMED}:{provider.url.rsplit(':', 1)[1]}/v1"
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=base))

        expected = _text(service)
        assert len(provider.requests) == 1 and not proxy.requests  # direct
        no_proxy_variables.setenv("HTTP_PROXY", proxy.url)
        assert _text(service) == expected
        assert len(provider.requests) == 1 and proxy.requests[-1].path == f"{base}/chat/completions"
        no_proxy_variables.setenv("NO_PROXY", NAMED)
        assert _text(service) == expected and len(provider.requests) == 2 and len(proxy.requests) == 1  # bypassed
        no_proxy_variables.delenv("NO_PROXY")
        no_proxy_variables.delenv("HTTP_PROXY")
        assert _text(service) == expected and len(provider.requests) == 3 and len(proxy.requests) == 1  # direct again


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_server_is_never_sent_to_the_environments_proxy(
    no_proxy_variables: pytest.MonkeyPatch, host: str
) -> None:
    """Rule 3: a corporate proxy in the environment (here one nobody runs) does not take a
    local model server's requests; the adapter's own ``proxies=`` still does."""
    body = fixture_bytes("openai/finish_length.sse")
    dead = "http://127.0.0.1:9"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        no_proxy_variables.setenv(name, dead)
    with ReplayServer({"/v1/": body}) as provider, ReplayServer() as proxy:
        proxy.add("http://", Route(body=body))
        base = f"http://{host}:{provider.url.rsplit(':', 1)[1]}/v1"
        direct = LlmService()
        direct.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=base))
        assert _text(direct) and len(provider.requests) == 1
        proxied = LlmService()
        proxied.register_adapter(
            ["local"], OpenAIChatAdapter(api_key="k-123456", base_url=base, proxies={"http": proxy.url})
        )
        assert _text(proxied) and len(provider.requests) == 1
        assert [r.path for r in proxy.requests] == [f"{base}/chat/completions"]


def test_a_websocket_asks_the_same_question() -> None:
    """Rule 3 where the transport decides itself (a WebSocket connect: tls rule 6)."""
    settings_ = ConnectionSettings()
    explicit = ConnectionSettings(proxies={"https": "http://127.0.0.1:3128"})
    with mock.patch.dict(os.environ, {"HTTPS_PROXY": "http://proxy.example:3128"}, clear=True):
        assert settings_.proxy_for("https://api.example.com/v1/responses") == "http://proxy.example:3128"
        assert settings_.proxy_for("https://127.0.0.1:8443/v1/responses") is None
        assert settings_.proxy_for("https://[::1]:8443/v1/responses") is None
        assert explicit.proxy_for("https://localhost:8443/v1/responses") == "http://127.0.0.1:3128"
        assert settings_.proxy_for("https://127.0.0.1:8443/v1/responses", trust_env=False) is None
