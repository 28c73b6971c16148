"""LiteLLMAdapter trust boundaries (its rules 1, 7 and 9), over loopback only.

- Redirects: a server A answering 302/307/308 towards a server B on another port, for the
  ``openai/`` prefix (LiteLLM drives the OpenAI SDK's client) and ``anthropic/`` (LiteLLM's
  own ``httpx`` handler): the stream ends with a ``REDIRECT`` failure, A heard one request
  (not retried) and B heard nothing — no key, no prompt. The guard sits under every client
  LiteLLM uses (``httpx.Client.send``/``httpx.AsyncClient.send``, aiohttp transport
  included), only on dshstream's LiteLLM workers: the caller's own clients are unchanged.
- Request options never move the key: ``extra_body`` naming another host (``api_base``,
  ``base_url``), another provider or model, a client, or a ``Host`` header is a
  ``ConfigurationError`` naming the field, and nothing is sent.
- No network call but the provider request: in a fresh interpreter whose sockets refuse
  every non-loopback connect and lookup, importing LiteLLM through the adapter and
  streaming (an Anthropic beta header, a model LiteLLM counts with a Hugging Face
  tokenizer) reaches nothing else.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from helpers import fixture_bytes

from adapters import litellm_children

from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

pytestmark = pytest.mark.skipif(importlib.util.find_spec("litellm") is None, reason="the litellm extra is not installed")

KEY = "sk-litellm-boundary-0123456789abcdef"  # CANARY: a fake key for the test
PROMPT = "the secret prompt"
ANTHROPIC_MODEL = "claude-sonnet-4-5"


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail the test if anything connects or resolves beyond 127.0.0.1."""
    attempts: list[str] = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
            attempts.append(repr(address))
            raise OSError(f"test guard: no connection to {address!r}")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in (None, "127.0.0.1", "::1", "localhost"):
            attempts.append(f"resolve {host!r}")
            raise socket.gaierror(f"test guard: no lookup of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield
    assert attempts == [], f"the test reached beyond loopback: {attempts}"


@pytest.fixture
def servers() -> Iterator[tuple[ReplayServer, ReplayServer]]:
    with ReplayServer() as a, ReplayServer() as b:
        yield a, b


def adapter(prefix: str, url: str, **settings: Any) -> Any:
    from dshstream._adapters.litellm import LiteLLMAdapter

    settings.setdefault("api_key", KEY)
    return LiteLLMAdapter(model_prefix=prefix, base_url=url if prefix == "anthropic/" else f"{url}/v1", **settings)


def stream(adapter: Any, prefix: str, **fields: Any) -> Any:
    service = LlmService(check_contract=True)
    service.register_adapter(["lit"], adapter)
    model = ANTHROPIC_MODEL if prefix == "anthropic/" else "gpt-4o"
    return service.stream(GenerateOptions(provider="lit", model=model, messages=(Message.user(PROMPT),), **fields)).result()


def body_for(prefix: str) -> bytes:
    return fixture_bytes("anthropic/text.sse" if prefix == "anthropic/" else "openai/text_include_usage.sse")


def heard(server: ReplayServer) -> str:
    return json.dumps([[r.method, r.path, r.headers, r.body] for r in server.requests], default=str)


# --------------------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [302, 307, 308])
@pytest.mark.parametrize("prefix", ["openai/", "anthropic/"])
def test_a_redirect_is_a_failure_and_the_other_host_hears_nothing(
    servers: tuple[ReplayServer, ReplayServer], prefix: str, status: int
) -> None:
    a, b = servers
    b.add("/", Route(body=body_for(prefix)))
    path = "/v1/messages" if prefix == "anthropic/" else "/v1/chat/completions"
    a.add("/", Route(body=b"", status=status, content_type="text/plain", headers={"Location": f"{b.url}{path}?key={KEY}"}))
    result = stream(adapter(prefix, a.url), prefix)  # default retries: a redirect is never retried
    failure = result.finish.failure
    assert result.finish.kind == "error" and failure is not None and result.text == ""
    assert (failure.code, failure.status, failure.category, failure.retryable) == ("REDIRECT", status, "api_error", False)
    assert "base_url" in failure.message
    assert failure.detail is not None and b.url in failure.detail and KEY not in failure.detail
    assert len(a.requests) == 1
    assert b.requests == [], heard(b)


def test_the_guard_covers_litellm_s_own_sync_and_async_clients(servers: tuple[ReplayServer, ReplayServer]) -> None:
    """Under the adapter's worker (the context the guard looks at): LiteLLM's sync
    ``HTTPHandler`` and its async handler (its aiohttp transport where LiteLLM picks it),
    with redirects on, refuse the 307; B hears nothing."""
    from dshstream._adapters import litellm as bridge

    bridge._load_litellm()  # first: it keeps LiteLLM's import offline
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler, HTTPHandler

    a, b = servers
    b.add("/", Route(body=b"{}", content_type="application/json"))
    a.add("/", Route(body=b"", status=307, content_type="text/plain", headers={"Location": f"{b.url}/x"}))
    headers = {"x-api-key": KEY}

    async def post_async() -> Any:
        handler: Any = AsyncHTTPHandler(follow_redirects=True)  # untyped library
        try:
            return await handler.post(f"{a.url}/v1/messages", json={"p": PROMPT}, headers=headers)
        finally:
            await handler.close()

    def post_sync() -> Any:
        handler: Any = HTTPHandler(follow_redirects=True)
        return handler.post(f"{a.url}/v1/messages", json={"p": PROMPT}, headers=headers)

    calls: list[tuple[str, Callable[[], Any]]] = [("sync", post_sync), ("async", lambda: asyncio.run(post_async()))]
    for label, call in calls:
        redirects = bridge._Redirects()
        token = bridge._REDIRECTS.set(redirects)
        try:
            with pytest.raises(Exception):  # noqa: B017 - whatever LiteLLM wraps the refusal in
                call()
        finally:
            bridge._REDIRECTS.reset(token)
        assert redirects.status == 307, label
    assert len(a.requests) == 2 and b.requests == [], heard(b)


def test_outside_the_adapter_httpx_is_unchanged(servers: tuple[ReplayServer, ReplayServer]) -> None:
    """The guard acts only inside dshstream's LiteLLM calls: the caller's own client,
    asked to follow redirects, still does."""
    import httpx

    from dshstream._adapters import litellm as bridge

    bridge._load_litellm()
    a, b = servers
    b.add("/", Route(body=b"{}", content_type="application/json"))
    a.add("/", Route(body=b"", status=302, content_type="text/plain", headers={"Location": f"{b.url}/x"}))
    with httpx.Client(follow_redirects=True) as client:
        assert client.get(f"{a.url}/start").status_code == 200
    assert len(b.requests) == 1


# --------------------------------------------------------------------------- request options


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"api_base": "http://127.0.0.1:9/v1"}, "api_base"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "base_url"),
        ({"custom_llm_provider": "groq"}, "custom_llm_provider"),
        ({"model": "groq/llama-3.1-8b-instant"}, "model"),
        ({"aws_bedrock_runtime_endpoint": "http://127.0.0.1:9"}, "aws_bedrock_runtime_endpoint"),
        ({"client": object()}, "client"),
        ({"fallbacks": ["groq/llama"]}, "fallbacks"),
        ({"extra_headers": {"Host": "127.0.0.1:9"}}, "extra_headers"),
        ({"headers": {"X-Forwarded-Host": "elsewhere"}}, "headers"),
    ],
)
@pytest.mark.parametrize("prefix", ["openai/", "anthropic/"])
def test_request_options_never_move_the_key_to_another_host(
    servers: tuple[ReplayServer, ReplayServer], prefix: str, extra: dict[str, Any], field: str
) -> None:
    a, _ = servers
    a.add("/", Route(body=body_for(prefix)))
    lit = adapter(prefix, a.url)
    with pytest.raises(ConfigurationError) as caught:
        lit.call_kwargs(GenerateOptions(provider="lit", model="m", messages=(Message.user(PROMPT),), extra_body=extra))
    assert f"extra_body['{field}']" in str(caught.value) and KEY not in str(caught.value)
    result = stream(lit, prefix, extra_body=extra)
    failure = result.finish.failure
    assert failure is not None and failure.code == "INVALID_OPTIONS" and field in failure.message
    assert a.requests == []  # nothing was sent, not even to the configured host


@pytest.mark.parametrize("prefix", ["openai/", "anthropic/"])
def test_options_that_keep_the_host_are_sent(servers: tuple[ReplayServer, ReplayServer], prefix: str) -> None:
    """The adapter's own host given again, and ordinary headers and body fields, are fine."""
    a, _ = servers
    a.add("/", Route(body=body_for(prefix)))
    own = a.url if prefix == "anthropic/" else f"{a.url}/v1"
    extra = {"api_base": own, "extra_headers": {"X-Trace": "t-1"}, "user": "u-1"}
    assert stream(adapter(prefix, a.url), prefix, extra_body=extra).finish.kind == "stop"
    [sent] = a.requests
    assert sent.headers.get("x-trace") == "t-1"


# --------------------------------------------------------------------------- no downloads


@pytest.fixture(scope="module")
def children() -> dict[str, Future[dict[str, Any]]]:
    """The two fresh interpreters of :mod:`adapters.litellm_children` ("clean" and
    "caller-switch"), started together; already running when ``test_litellm.py`` ran
    first on this worker."""
    return litellm_children.started()


def test_importing_and_streaming_makes_no_network_call_but_the_provider_request(
    children: dict[str, Future[dict[str, Any]]]
) -> None:
    out = children["clean"].result()
    assert out["kinds"] == ["stop", "stop"]
    assert out["attempts"] == []  # no price map, no beta-header table, no tokenizer download
    assert out["env"] == {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
                          "LITELLM_OFFLINE_MODE": "True"}


def test_a_switch_the_caller_set_is_left_as_it_is(children: dict[str, Future[dict[str, Any]]]) -> None:
    """The caller's own ``LITELLM_OFFLINE_MODE=false`` stays (the one stream here needs
    only the other two switches, which the adapter set)."""
    out = children["caller-switch"].result()
    assert out["env"] == {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
                          "LITELLM_OFFLINE_MODE": "false"}
    assert out["kinds"] == ["stop"] and out["attempts"] == []
