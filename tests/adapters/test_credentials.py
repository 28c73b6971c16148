"""Refreshable credentials over loopback HTTP, for every adapter: ``api_key=`` as a
zero-argument callable is asked once per attempt (retries included), each value is
checked like a key and registered for redaction, a 401 triggers exactly one
refresh-and-retry before the stream started, no token reaches a message, a repr, a
failure report or a log, and a fetch that never ends (a silent token endpoint, a blocked
callable: Vertex OAuth, OpenAI, Azure Entra, Bedrock AWS) still ends the stream at its
timeout, idle clock, cancel or ``close()``. Also the building blocks: ``check_credential``,
``HttpTransport.post_form`` and the ``authorized_user`` reader (its token endpoint routed to
127.0.0.1)."""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from dshstream import (
    AnthropicAdapter,
    ConfigurationError,
    GeminiAdapter,
    GenerateOptions,
    LlmError,
    LlmFailure,
    Message,
    OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)
from dshstream.adapters import (
    AuthorizedUserCredentials,
    AzureOpenAIAdapter,
    BedrockAdapter,
    CustomAdapter,
    VertexGeminiAdapter,
)
from dshstream.errors import ConfigurationTypeError
from dshstream._adapters import credentials as credentials_module
from dshstream._adapters.credentials import CredentialSource
from dshstream._adapters.google_oauth import TOKEN_URL, default_credentials_file
from dshstream._adapters.http import HttpAdapter
from dshstream._core.redact import known_secrets, redact
from dshstream._core.validate import check_credential
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._transport import HttpTransport
from helpers import client_sockets, fixture_bytes, routed_session
from rawserver import RawServer

OK_CHAT = fixture_bytes("openai/text_include_usage.sse")
UNAUTHORIZED = Route(
    body=b'{"error":{"message":"Access token is missing, invalid or expired","code":"401"}}',
    status=401,
    content_type="application/json",
)
BUSY = Route(
    body=b'{"error":{"message":"backend busy"}}', status=503, content_type="application/json",
    headers={"retry-after-ms": "1"},  # retried at once ("retry-after: 0" is no hint: the backoff)
)


class Tokens:
    """A token provider: a new token on every call, counted; ``invalidate`` counted too."""

    def __init__(self, prefix: str = "tok-CANARY") -> None:
        self.prefix = prefix
        self.calls = 0
        self.invalidated = 0
        self.issued: list[str] = []

    def __call__(self) -> str:
        self.calls += 1
        token = f"{self.prefix}-{self.calls}-0123456789abcdef"
        self.issued.append(token)
        return token

    def invalidate(self) -> None:
        self.invalidated += 1


def options(**fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),), **fields)


def run(adapter: HttpAdapter, **fields: Any) -> Any:
    service = LlmService(check_contract=True)
    service.register_adapter(["p"], adapter)
    return service.stream(options(**fields)).result()


# --------------------------------------------------------------------------- every adapter

ADAPTERS: dict[str, tuple[Callable[[str, Any], HttpAdapter], str, str, bytes]] = {
    # name: (factory(url, api_key), path prefix, auth header, body)
    "openai-chat": (
        lambda url, key: OpenAIChatAdapter(api_key=key, base_url=f"{url}/v1"),
        "/v1/chat/completions", "authorization", OK_CHAT,
    ),
    "custom": (
        lambda url, key: CustomAdapter(api_key=key, base_url=f"{url}/v1"),
        "/v1/chat/completions", "authorization", OK_CHAT,
    ),
    "openai-responses": (
        lambda url, key: OpenAIResponsesAdapter(api_key=key, base_url=f"{url}/v1"),
        "/v1/responses", "authorization", fixture_bytes("openai-responses/text.sse"),
    ),
    "anthropic": (
        lambda url, key: AnthropicAdapter(api_key=key, base_url=url),
        "/v1/messages", "x-api-key", fixture_bytes("anthropic/text.sse"),
    ),
    "gemini": (
        lambda url, key: GeminiAdapter(api_key=key, base_url=url),
        "/v1beta/models/", "x-goog-api-key", fixture_bytes("gemini/text.sse"),
    ),
}


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_adapter_asks_the_callable_once_per_attempt(server: ReplayServer, name: str) -> None:
    factory, path, header, body = ADAPTERS[name]
    server.add(path, [BUSY, BUSY, Route(body=body)])
    tokens = Tokens()
    adapter = factory(server.url, tokens)
    result = run(adapter, max_retries=2)
    assert result.finish.kind == "stop", result.failure
    assert tokens.calls == 3 and len(server.requests) == 3
    sent = [r.headers[header] for r in server.requests]
    expected = [f"Bearer {t}" if header == "authorization" else t for t in tokens.issued]
    assert sent == expected  # each attempt carries the value fetched for it
    assert "callable" in repr(adapter) and not any(t in repr(adapter) for t in tokens.issued)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_every_adapter_refreshes_once_on_401(server: ReplayServer, name: str) -> None:
    factory, path, header, body = ADAPTERS[name]
    server.add(path, [UNAUTHORIZED, Route(body=body)])
    tokens = Tokens()
    result = run(factory(server.url, tokens), max_retries=0)
    assert result.finish.kind == "stop", result.failure
    assert tokens.calls == 2 and tokens.invalidated == 1 and len(server.requests) == 2
    assert tokens.issued[1] in server.requests[1].headers[header]


def test_a_second_401_is_final(server: ReplayServer) -> None:
    server.add("/v1/chat/completions", UNAUTHORIZED)
    tokens = Tokens()
    result = run(OpenAIChatAdapter(api_key=tokens, base_url=f"{server.url}/v1", max_retries=5))
    failure = result.failure
    assert failure is not None and failure.code == "AUTH" and failure.status == 401
    assert tokens.calls == 2 and tokens.invalidated == 1 and len(server.requests) == 2


def test_a_fixed_key_is_not_retried_on_401(server: ReplayServer) -> None:
    server.add("/v1/chat/completions", UNAUTHORIZED)
    result = run(OpenAIChatAdapter(api_key="sk-fixed-key-0123456789", base_url=f"{server.url}/v1", max_retries=5))
    assert result.failure is not None and result.failure.code == "AUTH"
    assert len(server.requests) == 1


def test_a_callable_without_invalidate_is_simply_called_again(server: ReplayServer) -> None:
    server.add("/v1/chat/completions", [UNAUTHORIZED, Route(body=OK_CHAT)])
    values = iter(["tok-plain-first-0123456789", "tok-plain-second-0123456789"])
    result = run(OpenAIChatAdapter(api_key=lambda: next(values), base_url=f"{server.url}/v1", max_retries=0))
    assert result.finish.kind == "stop"
    assert [r.headers["authorization"] for r in server.requests] == [
        "Bearer tok-plain-first-0123456789",
        "Bearer tok-plain-second-0123456789",
    ]


def test_list_models_asks_the_callable_and_refreshes_once_on_401(server: ReplayServer) -> None:
    server.add("/v1/models", [UNAUTHORIZED, Route(body=b'{"data":[{"id":"m1"}]}', content_type="application/json")])
    tokens = Tokens()
    adapter = OpenAIChatAdapter(api_key=tokens, base_url=f"{server.url}/v1")
    assert [m.id for m in adapter.list_models("p")] == ["m1"]
    assert tokens.calls == 2 and tokens.invalidated == 1
    assert server.requests[1].headers["authorization"] == f"Bearer {tokens.issued[1]}"


# --------------------------------------------------------------------------- checked values


@pytest.mark.parametrize(
    ("value", "code"),
    [("tok\r\nx-evil: 1", "INVALID_OPTIONS"), (" padded-token ", "INVALID_OPTIONS"), ("", "INVALID_OPTIONS"),
     (None, "INVALID_OPTIONS"), ("tök€n", "INVALID_OPTIONS"), (b"bytes-token", "INVALID_OPTIONS_TYPE")],
)
def test_a_bad_value_from_the_callable_is_refused_before_sending(server: ReplayServer, value: Any, code: str) -> None:
    server.add("/", Route(body=OK_CHAT))
    result = run(OpenAIChatAdapter(api_key=lambda: value, base_url=f"{server.url}/v1", max_retries=3))
    failure = result.failure
    assert failure is not None and failure.code == code
    assert "api_key()" in failure.message
    if isinstance(value, str) and len(value) > 3:
        assert value.strip() not in failure.message and value.strip() not in repr(failure)
    assert server.requests == []


def test_a_raising_callable_is_an_auth_failure_without_the_secret(server: ReplayServer) -> None:
    server.add("/", Route(body=OK_CHAT))
    leaked = "tok-CANARY-inside-exception-0123456789"
    CredentialSource(leaked)  # registered earlier in the process, as a used token would be

    def provider() -> str:
        raise RuntimeError(f"token service down; last token was {leaked}")

    result = run(OpenAIChatAdapter(api_key=provider, base_url=f"{server.url}/v1", max_retries=3))
    failure = result.failure
    assert failure is not None and failure.code == "AUTH" and "RuntimeError" in failure.message
    assert failure.detail is not None and "token service down" in failure.detail and leaked not in failure.detail
    assert leaked not in failure.message
    assert server.requests == []


def test_an_llm_error_from_the_callable_keeps_its_code(server: ReplayServer) -> None:
    from dshstream._core.errors import error_for, make_failure

    server.add("/", Route(body=OK_CHAT))
    calls: list[int] = []

    def provider() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise error_for(make_failure("TIMEOUT", "google-oauth: timed out (TIMEOUT)"))
        return "tok-after-timeout-0123456789"

    result = run(OpenAIChatAdapter(api_key=provider, base_url=f"{server.url}/v1", max_retries=1))
    assert result.finish.kind == "stop"  # the timeout was retryable: retried with a new call
    assert len(calls) == 2 and len(server.requests) == 1


def test_check_credential_types() -> None:
    tokens = Tokens()
    assert check_credential(tokens) is tokens
    assert check_credential(None) is None and check_credential("") is None
    assert check_credential("key-123") == "key-123"
    for bad in (123, b"key", ["k"], str):
        with pytest.raises(ConfigurationTypeError) as info:
            check_credential(bad, "X.api_key")
        assert str(info.value).startswith("X.api_key must be a str, a zero-argument callable")
    with pytest.raises(ConfigurationTypeError):
        OpenAIChatAdapter(api_key=42)  # type: ignore[arg-type]


def test_every_value_is_registered_and_old_ones_are_forgotten() -> None:
    tokens = Tokens("tok-history")
    source = CredentialSource(tokens)
    before = source.last
    assert source.describe() == "callable" and before is None
    for _ in range(credentials_module.HISTORY + 4):
        value = source.get("p")
        assert value in known_secrets() and redact(f"x {value} y", known_secrets()) == "x [REDACTED] y"
    assert source.last == tokens.issued[-1]
    registered = known_secrets()
    assert all(t not in registered for t in tokens.issued[:4])  # long expired: forgotten
    assert all(t in registered for t in tokens.issued[4:])
    same = CredentialSource(lambda: "tok-same-value-0123456789")
    for _ in range(40):
        same.get("p")
    assert "tok-same-value-0123456789" in known_secrets()


def test_attempts_on_many_threads_each_send_their_own_token() -> None:
    def per_thread() -> str:
        time.sleep(0.001)
        return f"tok-thread-{threading.get_ident()}"

    adapter = OpenAIChatAdapter(api_key=per_thread, base_url="http://127.0.0.1:9/v1")
    mismatches: list[str] = []

    def build() -> None:
        for _ in range(20):
            request = adapter.build_request(options())
            expected = f"Bearer tok-thread-{threading.get_ident()}"
            if request.headers["authorization"] != expected or request.secrets != (expected[7:],):
                mismatches.append(request.headers["authorization"])

    threads = [threading.Thread(target=build) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert mismatches == []


def test_no_token_in_any_message_repr_report_or_log(server: ReplayServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="dshstream")
    tokens = Tokens("tok-LEAKCHECK")
    # The server echoes the token each attempt sent, in the error body and a header.
    echoes = [
        Route(
            body=f'{{"error":{{"message":"token {token} is not valid","code":"401"}}}}'.encode(),
            status=401,
            content_type="application/json",
            headers={"x-request-id": token},
        )
        for token in ("tok-LEAKCHECK-1-0123456789abcdef", "tok-LEAKCHECK-2-0123456789abcdef")
    ]
    server.add("/v1/chat/completions", echoes)
    reports: list[tuple[LlmFailure, dict[str, Any]]] = []
    adapter = OpenAIChatAdapter(
        api_key=tokens, base_url=f"{server.url}/v1", failure_reporter=lambda f, r: reports.append((f, r))
    )
    result = run(adapter)
    failure = result.failure
    assert failure is not None and failure.code == "AUTH" and len(reports) == 2
    request = adapter.build_request(options())
    error = LlmError(failure)
    texts = [
        failure.message, failure.detail or "", repr(failure), str(error), repr(error),
        "".join(traceback.format_exception(error)), repr(result), repr(adapter), repr(request),
        json.dumps([[repr(f), r] for f, r in reports], default=repr), caplog.text,
        *(r.getMessage() for r in caplog.records),
    ]
    for text in texts:
        assert "tok-LEAKCHECK" not in text, text[:300]
    assert failure.request_id is None  # a header echoing the token is dropped


# --------------------------------------------------------------------------- transport.post_form


def test_post_form_sends_a_form_and_reads_bounded_json(server: ReplayServer) -> None:
    server.add("/token", Route(body=b'{"access_token": "at-1", "expires_in": 3599}', content_type="application/json"))
    transport = HttpTransport()
    answer = transport.post_form(
        f"{server.url}/token", {"grant_type": "refresh_token", "refresh_token": "1//rt value&x=y"},
        {"user-agent": "t/1"}, provider="oauth",
    )
    assert answer == {"access_token": "at-1", "expires_in": 3599}
    sent = server.requests[0]
    assert sent.method == "POST" and sent.path == "/token"
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert sent.headers["user-agent"] == "t/1"
    assert parse_qs(sent.body) == {"grant_type": ["refresh_token"], "refresh_token": ["1//rt value&x=y"]}
    with pytest.raises(LlmError) as info:
        transport.post_form(f"{server.url}/token", {"a": "b"}, provider="oauth", limit=10)
    assert info.value.failure.code == "MALFORMED_RESPONSE"


def test_post_form_never_follows_a_redirect_and_redacts_its_secrets(server: ReplayServer) -> None:
    secret = "1//refresh-CANARY-0123456789"
    server.add("/moved", Route(body=b"", status=307, content_type="text/plain", headers={"Location": f"{server.url}/token"}))
    server.add("/bad", Route(body=f'{{"error":"invalid_grant","error_description":"bad {secret}"}}'.encode(),
                             status=400, content_type="application/json"))
    transport = HttpTransport()
    with pytest.raises(LlmError) as info:
        transport.post_form(f"{server.url}/moved", {"refresh_token": secret}, provider="oauth", secrets=(secret,))
    assert info.value.failure.code == "REDIRECT" and len(server.requests) == 1
    with pytest.raises(LlmError) as info:
        transport.post_form(f"{server.url}/bad", {"refresh_token": secret}, provider="oauth", secrets=(secret,))
    assert info.value.failure.status == 400 and secret not in repr(info.value.failure)


# --------------------------------------------------------------------------- authorized_user files


CLIENT_SECRET = "d-FL95Q19q7MQmFpd7hHD0Ty-CANARY"  # fake values in gcloud's shapes
REFRESH_TOKEN = "1//0CANARY-refresh-token-0123456789abcdefghijklmnop"


def user_file(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "application_default_credentials.json"
    info = {
        "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com",
        "client_secret": CLIENT_SECRET,
        "refresh_token": REFRESH_TOKEN,
        "type": "authorized_user",
        **extra,
    }
    path.write_text(json.dumps(info), encoding="utf-8")
    return path


@pytest.fixture
def oauth(server: ReplayServer) -> Iterator[tuple[ReplayServer, Any]]:
    """The loopback server standing in for oauth2.googleapis.com, and a session routed to it."""
    yield server, routed_session("https://oauth2.googleapis.com", server.url)


def token_route(token: str, expires_in: int = 3599) -> Route:
    body = {"access_token": token, "expires_in": expires_in, "scope": "https://www.googleapis.com/auth/cloud-platform",
            "token_type": "Bearer"}
    return Route(body=json.dumps(body).encode(), content_type="application/json; charset=utf-8")


def test_authorized_user_refreshes_once_then_caches(tmp_path: Path, oauth: tuple[ReplayServer, Any]) -> None:
    server, session = oauth
    server.add("/token", [token_route("ya29.a0-CANARY-first"), token_route("ya29.a0-CANARY-second")])
    creds = AuthorizedUserCredentials(user_file(tmp_path, quota_project_id="billing-proj"), session=session)
    assert creds.quota_project_id == "billing-proj"
    assert creds() == "ya29.a0-CANARY-first" and creds() == "ya29.a0-CANARY-first"
    assert len(server.requests) == 1
    sent = server.requests[0]
    assert TOKEN_URL.endswith(sent.path) and sent.method == "POST"
    assert sent.headers["content-type"] == "application/x-www-form-urlencoded"
    assert sent.headers["user-agent"].startswith("dshstream/")
    assert parse_qs(sent.body) == {
        "grant_type": ["refresh_token"],
        "client_id": ["764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com"],
        "client_secret": [CLIENT_SECRET],
        "refresh_token": [REFRESH_TOKEN],
    }
    creds.invalidate()
    assert creds() == "ya29.a0-CANARY-second" and len(server.requests) == 2
    registered = known_secrets()
    assert {CLIENT_SECRET, REFRESH_TOKEN, "ya29.a0-CANARY-first", "ya29.a0-CANARY-second"} <= registered
    assert "CANARY" not in repr(creds)


def test_a_token_about_to_expire_is_refreshed(tmp_path: Path, oauth: tuple[ReplayServer, Any]) -> None:
    server, session = oauth
    server.add("/token", token_route("ya29.short-lived", expires_in=60))
    creds = AuthorizedUserCredentials(user_file(tmp_path), session=session)
    creds()
    creds()
    assert len(server.requests) == 2  # 60 s left is inside the refresh margin


def test_a_refused_grant_is_auth_and_other_failures_keep_their_code(
    tmp_path: Path, oauth: tuple[ReplayServer, Any]
) -> None:
    server, session = oauth
    refused = Route(
        body=f'{{"error":"invalid_grant","error_description":"Token has been expired or revoked. {REFRESH_TOKEN}"}}'.encode(),
        status=400, content_type="application/json",
    )
    server.add("/token", [refused, BUSY, Route(body=b'{"token_type":"Bearer"}', content_type="application/json")])
    creds = AuthorizedUserCredentials(user_file(tmp_path), session=session)
    with pytest.raises(LlmError) as info:
        creds()
    failure = info.value.failure
    assert failure.code == "AUTH" and failure.status == 400 and "gcloud auth application-default login" in failure.message
    assert failure.detail is not None and "expired or revoked" in failure.detail and REFRESH_TOKEN not in failure.detail
    with pytest.raises(LlmError) as info:
        creds()
    assert info.value.failure.code == "SERVER" and info.value.failure.retryable
    with pytest.raises(LlmError) as info:
        creds()
    assert info.value.failure.code == "MALFORMED_RESPONSE"


@pytest.mark.parametrize(
    ("info", "says"),
    [
        ({"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----CANARY"}, "'service_account'"),
        ({"type": "external_account", "audience": "CANARY"}, "'external_account'"),
        ({"type": "authorized_user", "client_id": "c", "client_secret": "CANARY-secret"}, "'refresh_token'"),
        ({"type": "authorized_user", "client_id": "c", "client_secret": "s", "refresh_token": "CANARY\nx"},
         "control character"),
    ],
)
def test_files_it_cannot_use_are_refused_without_their_contents(tmp_path: Path, info: dict[str, str], says: str) -> None:
    path = tmp_path / "creds.json"
    path.write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(ConfigurationError) as caught:
        AuthorizedUserCredentials(path)
    assert says in str(caught.value) and "CANARY" not in str(caught.value)
    if info["type"] != "authorized_user":
        assert "api_key=" in str(caught.value) and "google-auth" in str(caught.value)


def test_unreadable_files_are_configuration_errors(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1]", encoding="utf-8")
    (tmp_path / "text.json").write_text("not json", encoding="utf-8")
    for name, says in (("missing.json", "cannot be read"), ("list.json", "not a JSON object"), ("text.json", "not JSON")):
        with pytest.raises(ConfigurationError, match=says):
            AuthorizedUserCredentials(tmp_path / name)


def test_default_credentials_file_follows_adc_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "explicit.json"))
    assert default_credentials_file() == str(tmp_path / "explicit.json")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    assert default_credentials_file() is None
    user_file(tmp_path)
    assert default_credentials_file() == str(tmp_path / "application_default_credentials.json")


# --------------------------------------------------------------------------- fetches under the stream's limits (issue 26)


def _never_answers(srv: RawServer, conn: Any) -> None:
    """Read the request, never answer, until the client goes away."""
    conn.settimeout(30)
    while conn.recv(65536):
        pass


FETCHES = ("token-endpoint", "openai-chat-callable", "azure-entra-callable", "bedrock-aws-callable")


def _stuck_adapter(source: str, url: str, tmp_path: Path, release: threading.Event) -> HttpAdapter:
    """An adapter whose credential fetch never ends: a token endpoint that never answers,
    or a caller's callable that blocks (until ``release``)."""
    def stuck() -> str:
        release.wait(60)
        return "tok-stuck-0123456789abcdef"

    if source == "token-endpoint":
        creds = AuthorizedUserCredentials(user_file(tmp_path), token_url=f"{url}/token")
        return VertexGeminiAdapter(project="proj", location="us-central1", base_url=url, api_key=creds, max_retries=0)
    if source == "openai-chat-callable":
        return OpenAIChatAdapter(api_key=stuck, base_url=f"{url}/v1", max_retries=0)
    if source == "azure-entra-callable":
        return AzureOpenAIAdapter(endpoint=url, api_key=stuck, max_retries=0)

    def stuck_aws() -> tuple[str, str, None]:
        release.wait(60)
        return ("AKIDSTUCK", "s" * 40, None)

    return BedrockAdapter(region="us-east-1", base_url=url, credentials=stuck_aws, max_retries=0)


@pytest.mark.parametrize("how", ["timeout", "idle", "cancel", "close"])
@pytest.mark.parametrize("source", FETCHES)
def test_a_credential_fetch_holds_the_streams_limits(tmp_path: Path, source: str, how: str) -> None:
    """A credential fetch that never ends (the token endpoint never answers; a caller's
    callable blocks): the stream still ends at its total timeout or idle clock with
    ``TIMEOUT``, and within a tick of ``cancel``/``close()`` as ``aborted`` — it does not
    wait for the fetch. dshstream's own token POST is cut off too (no socket left)."""
    release = threading.Event()
    limit = 0.6 if source == "token-endpoint" else 0.3
    try:
        with RawServer(_never_answers) as raw:
            adapter = _stuck_adapter(source, raw.url, tmp_path, release)
            service = LlmService(check_contract=True)
            service.register_adapter(["p"], adapter)
            cancel = threading.Event()
            fields: dict[str, Any] = {"cancel": cancel}
            if how == "timeout":
                fields["timeout"] = limit
            elif how == "idle":
                fields["idle_timeout"] = limit
            started = time.monotonic()
            stream = service.stream(options(**fields))
            if how in ("cancel", "close"):
                timer = threading.Timer(0.2, cancel.set if how == "cancel" else stream.close)
                timer.start()
            result = stream.result()
            elapsed = time.monotonic() - started
            failure = result.finish.failure
            if how in ("timeout", "idle"):
                assert failure is not None and failure.code == "TIMEOUT", result.finish
                assert limit * 0.9 <= elapsed < limit + 0.5
            else:
                assert result.finish.kind == "aborted", result.finish
                assert elapsed < 0.2 + 0.5
            if source == "token-endpoint":  # the token POST itself was cut off
                assert raw.accepted == 1
                ended = time.monotonic() + 1.0
                while client_sockets(raw.port) and time.monotonic() < ended:
                    time.sleep(0.02)
                assert client_sockets(raw.port) == 0
            else:
                assert raw.accepted == 0  # nothing was sent without a credential
    finally:
        release.set()


def test_a_fast_callable_still_sees_the_callers_context(server: ReplayServer) -> None:
    """The callable runs on a worker thread under the stream's limits, with the caller's
    ``contextvars`` (a tracing context, a request-scoped setting) copied in."""
    import contextvars

    tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="none")
    seen: list[str] = []

    def token() -> str:
        seen.append(tenant.get())
        return "tok-context-0123456789abcdef"

    server.add("/v1/", Route(body=OK_CHAT))
    tenant.set("acme")
    result = run(OpenAIChatAdapter(api_key=token, base_url=f"{server.url}/v1"), timeout=5.0)
    assert result.ok and seen == ["acme"]
    assert server.requests[-1].headers["authorization"] == "Bearer tok-context-0123456789abcdef"
