"""The transport's own session reads the environment as ``requests`` does, on every send
(``_transport/environment.py``): the same merged settings as ``requests.Session`` for any
environment (hypothesis, against requests itself), a proxy variable set after the adapter
was made applies to the next request and one removed stops applying, and ``NO_PROXY``
still bypasses."""

from __future__ import annotations

import os
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
from dshstream._transport.pool import new_session
from helpers import fixture_bytes

NAMES = [
    "HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy",
    "Https_Proxy", "ftp_proxy", "MY_PROXY_HOST", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "REQUEST_METHOD",
    "HOME", "LANG", "PATH",
]
VALUES = ["", "http://proxy.example:3128", "http://u:p@127.0.0.1:9", "127.0.0.1", "*", ".example.com", "/etc/ca.pem"]
URLS = ["http://127.0.0.1:8080/v1/chat/completions", "https://api.example.com/v1/messages", "http://[::1]:9/v1"]


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
    """Rules 1 and 2: whatever the variables (proxies in any case, empty ones, NO_PROXY,
    the CA bundle variables, CGI's REQUEST_METHOD), the settings a send gets are exactly
    the ones requests' own session merges."""
    ours, theirs = _configured(EnvironmentSession(), case), _configured(requests.Session(), case)
    args = (case["url"], case["stream"], case["verify"], case["cert"])
    with mock.patch.dict(os.environ, case["environment"], clear=True):
        expected = theirs.merge_environment_settings(args[0], _copy(case["proxies"]), *args[1:])
        got = ours.merge_environment_settings(args[0], _copy(case["proxies"]), *args[1:])
        assert names_a_proxy() == any("_proxy" in name.lower() for name in case["environment"])
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


def test_a_proxy_set_after_the_adapter_was_made_applies_to_the_next_request(
    no_proxy_variables: pytest.MonkeyPatch,
) -> None:
    body = fixture_bytes("openai/finish_length.sse")
    with ReplayServer({"/v1/": body}) as provider, ReplayServer() as proxy:
        proxy.add("http://", Route(body=body))  # a forwarding proxy gets the absolute URL
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k-123456", base_url=f"{provider.url}/v1"))
        options = GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),))

        def text() -> str:
            result = service.stream(options).result()
            assert result.ok, result.finish
            return result.text

        expected = text()
        assert len(provider.requests) == 1 and not proxy.requests  # direct
        no_proxy_variables.setenv("HTTP_PROXY", proxy.url)
        assert text() == expected
        assert len(provider.requests) == 1 and proxy.requests[-1].path == f"{provider.url}/v1/chat/completions"
        no_proxy_variables.setenv("NO_PROXY", "127.0.0.1")
        assert text() == expected and len(provider.requests) == 2 and len(proxy.requests) == 1  # bypassed
        no_proxy_variables.delenv("NO_PROXY")
        no_proxy_variables.delenv("HTTP_PROXY")
        assert text() == expected and len(provider.requests) == 3 and len(proxy.requests) == 1  # direct again
