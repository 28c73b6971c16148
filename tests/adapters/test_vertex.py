"""Google Vertex AI over loopback HTTP: the real Vertex and OAuth host names are routed to
127.0.0.1, so the adapters build exactly the URLs they would send — regional, ``global``
and express-mode Gemini ``streamGenerateContent``, Claude ``streamRawPredict`` — and each
URL, query, header and body is checked before the recorded Vertex streams are replayed.
Auth: OAuth token callables (once per attempt, one refresh on 401), the built-in
``authorized_user`` reader from ``GOOGLE_APPLICATION_CREDENTIALS`` (only to Google's own
host), express-mode API keys; ``default_service`` and ``dshstream chat -p vertex``."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qs

import pytest
import requests

import dshstream._transport
from dshstream import ConfigurationError, GenerateOptions, Message, ToolSpec, default_service
from dshstream.adapters import VertexAnthropicAdapter, VertexGeminiAdapter
from dshstream._cli import main
from dshstream._core.attribution import DEFAULT_IDENTITY
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from helpers import KNOWN_FINISH, fixture_bytes, routed_session

REGIONAL = "https://us-central1-aiplatform.googleapis.com"
GLOBAL = "https://aiplatform.googleapis.com"
OAUTH = "https://oauth2.googleapis.com"
TOKEN = "ya29.a0CANARY-vertex-access-token-0123456789"  # fake values in Google's shapes
EXPRESS_KEY = "AQ.Ab8RN6CANARY-express-key-0123456789"
REFRESH_TOKEN = "1//0gCANARY-refresh-0123456789abcdefghij"
CLIENT_SECRET = "d-FL95Q19q7MQmFpd7hHD0Ty-vx"
GEMINI_PATH = "/v1/projects/test-project/locations/{location}/publishers/google/models/{model}:streamGenerateContent?alt=sse"
VERTEX_FIXTURES = sorted(name for name in KNOWN_FINISH if name.startswith("vertex/"))


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "gcloud-empty"
    empty.mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty))  # never the developer's own gcloud login


def google_session(url: str) -> requests.Session:
    """A session sending the Vertex hosts and the OAuth host to ``url``."""
    session = cast(requests.Session, routed_session(GLOBAL, url))
    for host in (REGIONAL, OAUTH, "https://us-east5-aiplatform.googleapis.com"):
        other = cast(requests.Session, routed_session(host, url))
        session.mount(host, other.get_adapter(f"{host}/"))
    return session


@pytest.fixture
def google(server: ReplayServer) -> Iterator[tuple[ReplayServer, requests.Session]]:
    yield server, google_session(server.url)


class Tokens:
    """An OAuth token provider (as the google-auth recipe builds), counted."""

    def __init__(self) -> None:
        self.issued: list[str] = []
        self.invalidated = 0

    def __call__(self) -> str:
        self.issued.append(f"{TOKEN}-{len(self.issued)}")
        return self.issued[-1]

    def invalidate(self) -> None:
        self.invalidated += 1


def options(model: str = "gemini-2.5-flash", text: str = "Hello", **fields: Any) -> GenerateOptions:
    return GenerateOptions(provider="vertex", model=model, messages=(Message.user(text),), **fields)


def stream(adapter: Any, opts: GenerateOptions | None = None, **fields: Any) -> Any:
    service = LlmService(check_contract=True)
    service.register_adapter(["vertex"], adapter)
    return service.stream(opts or options(**fields)).result()


def recorded_text(name: str) -> str:
    text = []
    for line in fixture_bytes(name).decode().splitlines():
        if line.startswith("data: "):
            for candidate in json.loads(line[6:]).get("candidates", [])[:1]:
                for part in (candidate.get("content") or {}).get("parts", []):
                    if not part.get("thought"):
                        text.append(part.get("text", ""))
    return "".join(text)


def user_file(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "adc.json"
    path.write_text(json.dumps({
        "client_id": "32555940559.apps.googleusercontent.com", "client_secret": CLIENT_SECRET,
        "refresh_token": REFRESH_TOKEN, "type": "authorized_user", **extra,
    }), encoding="utf-8")
    return path


def token_route(token: str) -> Route:
    return Route(body=json.dumps({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}).encode(),
                 content_type="application/json")


# --------------------------------------------------------------------------- Gemini URL shapes


def test_regional_url_headers_and_body(google: tuple[ReplayServer, requests.Session]) -> None:
    server, session = google
    server.add("/v1/projects/", Route(body=fixture_bytes("vertex/gemini25_flash_text_a.sse")))
    tokens = Tokens()
    adapter = VertexGeminiAdapter(project="test-project", location="us-central1", api_key=tokens, session=session)
    assert adapter.base_url == REGIONAL
    weather = ToolSpec("get_weather", "Weather", {"type": "object", "properties": {"city": {"type": "string"}}})
    opts = GenerateOptions(
        provider="vertex", model="gemini-2.5-flash", tools=(weather,), max_tokens=2048, temperature=0.3,
        reasoning_effort="low", messages=(Message.system("Be brief."), Message.user("Hello")),
    )
    result = stream(adapter, opts)
    sent = server.requests[0]
    assert sent.method == "POST"
    assert sent.path == GEMINI_PATH.format(location="us-central1", model="gemini-2.5-flash")
    assert sent.headers["authorization"] == f"Bearer {tokens.issued[0]}" and "x-goog-api-key" not in sent.headers
    assert sent.headers["user-agent"] == DEFAULT_IDENTITY.user_agent
    assert sent.headers["content-type"] == "application/json" and sent.headers["accept"] == "text/event-stream"
    assert sent.body == {
        "contents": [{"role": "user", "parts": [{"text": "Hello"}]}],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [{"name": "get_weather", "description": "Weather",
                                             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}],
        "generationConfig": {"maxOutputTokens": 2048, "temperature": 0.3,
                             "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 2048}},
    }
    assert result.finish.kind == "stop" and result.finish.raw == "STOP"
    assert result.text == recorded_text("vertex/gemini25_flash_text_a.sse")
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.reasoning_tokens) == (8, 2464, 2027)
    assert TOKEN not in repr(adapter) and len(tokens.issued) == 1


def test_global_location_from_the_environment(google: tuple[ReplayServer, requests.Session], monkeypatch: pytest.MonkeyPatch) -> None:
    server, session = google
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    server.add("/v1/projects/", Route(body=fixture_bytes("vertex/gemini25_flash_grounding_global.sse")))
    adapter = VertexGeminiAdapter(api_key=Tokens(), session=session)
    assert (adapter.wire.project, adapter.wire.location, adapter.base_url) == ("test-project", "global", GLOBAL)
    assert (adapter.project, adapter.location, adapter.express) == ("test-project", "global", False)  # read-only
    result = stream(adapter)
    assert server.requests[0].path == GEMINI_PATH.format(location="global", model="gemini-2.5-flash")
    assert result.text == recorded_text("vertex/gemini25_flash_grounding_global.sse")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    regional = VertexGeminiAdapter(api_key=Tokens())
    assert regional.base_url == "https://europe-west4-aiplatform.googleapis.com"
    assert VertexGeminiAdapter(api_key=Tokens(), location="eu").base_url == "https://aiplatform.eu.rep.googleapis.com"


def test_express_mode_sends_the_key_as_a_header_and_no_project(
    google: tuple[ReplayServer, requests.Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, session = google
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "ignored-in-express-mode")
    server.add("/v1/publishers/", Route(body=fixture_bytes("vertex/gemini25_flash_text_b.sse")))
    adapter = VertexGeminiAdapter(api_key=EXPRESS_KEY, session=session)
    assert adapter.wire.express and adapter.wire.project is None and adapter.base_url == GLOBAL
    result = stream(adapter)
    sent = server.requests[0]
    assert sent.path == "/v1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert sent.headers["x-goog-api-key"] == EXPRESS_KEY and "authorization" not in sent.headers
    assert EXPRESS_KEY not in sent.path
    assert result.text == recorded_text("vertex/gemini25_flash_text_b.sse")
    with pytest.raises(ConfigurationError, match="takes no project"):
        VertexGeminiAdapter(api_key=EXPRESS_KEY, project="p")
    fixed_token = VertexGeminiAdapter(api_key=TOKEN, auth="bearer", project="p")
    assert fixed_token.build_request(options()).headers["authorization"] == f"Bearer {TOKEN}"


def test_model_resources_and_api_version() -> None:
    adapter = VertexGeminiAdapter(project="p", location="us-central1", api_key=Tokens(), api_version="v1beta1")
    assert adapter.wire.endpoint(options("gemini-1.5-flash-002")) == (
        f"{REGIONAL}/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-1.5-flash-002"
        ":streamGenerateContent?alt=sse"
    )
    tuned = "projects/p/locations/us-central1/endpoints/1234567890"
    assert adapter.wire.endpoint(options(tuned)) == f"{REGIONAL}/v1beta1/{tuned}:streamGenerateContent?alt=sse"
    assert adapter.wire.endpoint(options("publishers/google/models/gemini-2.0-flash")) == (
        f"{REGIONAL}/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.0-flash"
        ":streamGenerateContent?alt=sse"
    )
    assert adapter.list_models("vertex") == []


@pytest.mark.parametrize("name", VERTEX_FIXTURES)
def test_every_recorded_vertex_stream_replays_through_the_adapter(
    google: tuple[ReplayServer, requests.Session], name: str
) -> None:
    server, session = google
    server.add("/v1/projects/", Route(body=fixture_bytes(name)))
    result = stream(VertexGeminiAdapter(project="test-project", api_key=Tokens(), session=session))
    known = KNOWN_FINISH[name]
    assert (result.finish.kind, result.finish.raw) == (known.kind, known.raw)
    assert result.text == recorded_text(name)


def test_gemini_features_behave_as_on_the_gemini_api(google: tuple[ReplayServer, requests.Session]) -> None:
    server, session = google
    server.add("/v1/projects/", [
        Route(body=fixture_bytes("gemini/vertex_function_call_partial_args.sse")),
        Route(body=fixture_bytes("vertex/gemini25_flash_text_b.sse")),
    ])
    adapter = VertexGeminiAdapter(project="test-project", api_key=Tokens(), session=session)
    service = LlmService(check_contract=True)
    service.register_adapter(["vertex"], adapter)
    first = service.stream(options("gemini-3.1-pro-preview", "Weather in Boston and SF?")).result()
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("getWeather", '{"location":"Boston"}'), ("getWeather", '{"location":"San Francisco"}')
    ]
    history = [Message.user("Weather in Boston and SF?"), first.message(),
               Message.tool_result(first.tool_calls[0].id, '{"temp": 20}'),
               Message.tool_result(first.tool_calls[1].id, '{"temp": 18}')]
    service.stream(GenerateOptions(provider="vertex", model="gemini-3.1-pro-preview", messages=tuple(history))).result()
    model_turn = server.requests[1].body["contents"][1]
    assert model_turn["role"] == "model"
    replay = first.replay_state
    assert isinstance(replay, dict)
    assert model_turn["parts"] == replay["parts"]  # every thoughtSignature on its exact part
    assert any("thoughtSignature" in part for part in model_turn["parts"])


# --------------------------------------------------------------------------- OAuth


def test_token_callable_once_per_attempt_and_one_refresh_on_401(google: tuple[ReplayServer, requests.Session]) -> None:
    server, session = google
    unauthenticated = Route(
        body=b'[{"error":{"code":401,"message":"Request had invalid authentication credentials. Expected OAuth 2 '
        b'access token, login cookie or other valid authentication credential.","status":"UNAUTHENTICATED"}}]',
        status=401, content_type="application/json",
    )
    unavailable = Route(body=b'{"error":{"code":503,"message":"busy","status":"UNAVAILABLE"}}', status=503,
                        content_type="application/json", headers={"retry-after-ms": "1"})
    server.add("/v1/projects/", [unavailable, unauthenticated, Route(body=fixture_bytes("vertex/gemini15_flash002_text_a.sse"))])
    tokens = Tokens()
    adapter = VertexGeminiAdapter(project="test-project", api_key=tokens, session=session, max_retries=1)
    result = stream(adapter, model="gemini-1.5-flash-002")
    assert result.finish.kind == "stop", result.failure
    assert len(tokens.issued) == 3 and tokens.invalidated == 1
    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {t}" for t in tokens.issued]


def test_application_default_credentials_from_the_environment(
    google: tuple[ReplayServer, requests.Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, session = google
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(user_file(tmp_path, quota_project_id="quota-proj")))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    unauthenticated = Route(body=b'{"error":{"code":401,"message":"expired","status":"UNAUTHENTICATED"}}',
                            status=401, content_type="application/json")
    server.add("/token", [token_route(f"{TOKEN}-a"), token_route(f"{TOKEN}-b")])
    server.add("/v1/projects/", [Route(body=fixture_bytes("vertex/gemini25_flash_text_b.sse")), unauthenticated,
                                 Route(body=fixture_bytes("vertex/gemini25_flash_text_a.sse"))])
    adapter = VertexGeminiAdapter(session=session)
    assert adapter.credential.describe() == "callable"
    assert stream(adapter).finish.kind == "stop"
    assert stream(adapter).finish.kind == "stop"  # cached token, then a 401: refreshed once
    paths = [r.path for r in server.requests]
    assert paths == ["/token", GEMINI_PATH.format(location="us-central1", model="gemini-2.5-flash"),
                     GEMINI_PATH.format(location="us-central1", model="gemini-2.5-flash"), "/token",
                     GEMINI_PATH.format(location="us-central1", model="gemini-2.5-flash")]
    calls = [r for r in server.requests if r.path.startswith("/v1/")]
    assert [r.headers["authorization"] for r in calls] == [f"Bearer {TOKEN}-a", f"Bearer {TOKEN}-a", f"Bearer {TOKEN}-b"]
    assert all(r.headers["x-goog-user-project"] == "quota-proj" for r in calls)
    token_call = server.requests[0]
    assert parse_qs(token_call.body)["refresh_token"] == [REFRESH_TOKEN]
    assert REFRESH_TOKEN not in repr(adapter) and TOKEN not in repr(adapter)


def test_environment_credentials_never_go_to_another_host(
    server: ReplayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dshstream")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(user_file(tmp_path)))
    server.add("/", Route(body=fixture_bytes("vertex/gemini25_flash_text_b.sse")))
    adapter = VertexGeminiAdapter(project="test-project", base_url=server.url)
    assert adapter.credential.describe() == "none"
    assert stream(adapter).finish.kind == "stop"
    assert [r.path for r in server.requests] == [GEMINI_PATH.format(location="global", model="gemini-2.5-flash")]
    assert "authorization" not in server.requests[0].headers
    assert "not using Application Default Credentials" in caplog.text
    # An explicit credentials_file goes where the caller points it.
    server.add("/token", token_route(TOKEN))
    chosen = VertexGeminiAdapter(project="test-project", base_url=server.url, credentials_file=user_file(tmp_path),
                                 session=google_session(server.url))
    stream(chosen)
    assert server.requests[-1].headers["authorization"] == f"Bearer {TOKEN}"


def test_a_service_account_file_asks_for_the_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "sa.json"
    path.write_text(json.dumps({"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nCANARY"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    with pytest.raises(ConfigurationError) as caught:
        VertexGeminiAdapter(project="p")
    assert "service_account" in str(caught.value) and "google-auth" in str(caught.value)
    assert "CANARY" not in str(caught.value)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "p")
    assert "vertex" not in {p.id for p in default_service().list_providers()}  # left out, no exception


def test_configuration_mistakes_name_what_to_set() -> None:
    with pytest.raises(ConfigurationError, match="GOOGLE_CLOUD_PROJECT"):
        VertexGeminiAdapter(api_key=Tokens())
    with pytest.raises(ConfigurationError, match="location"):
        VertexGeminiAdapter(project="p", location="us-central1/../x", api_key=Tokens())
    with pytest.raises(ConfigurationError, match="project"):
        VertexGeminiAdapter(project="p/x", api_key=Tokens())
    with pytest.raises(ConfigurationError, match="credentials_file"):
        VertexGeminiAdapter(api_key=EXPRESS_KEY, credentials_file="x.json")
    # Claude on Vertex has no express mode: a fixed str is an access token.
    claude = VertexAnthropicAdapter(project="p", api_key=TOKEN)
    assert claude.build_request(options("claude-sonnet-4-5")).headers["authorization"] == f"Bearer {TOKEN}"


# --------------------------------------------------------------------------- Claude on Vertex


def test_claude_on_vertex_url_body_and_headers(google: tuple[ReplayServer, requests.Session]) -> None:
    server, session = google
    # No streamRawPredict body was recorded anywhere; Claude on Vertex streams the Anthropic wire.
    server.add("/v1/projects/", Route(body=fixture_bytes("anthropic/text.sse")))
    tokens = Tokens()
    adapter = VertexAnthropicAdapter(project="test-project", location="us-east5", api_key=tokens, session=session)
    result = stream(adapter, options("claude-haiku-4-5@20251001", max_tokens=256))
    sent = server.requests[0]
    assert sent.path == (
        "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/"
        "claude-haiku-4-5@20251001:streamRawPredict"
    )
    assert sent.headers["authorization"] == f"Bearer {tokens.issued[0]}"
    assert "anthropic-version" not in sent.headers and "x-api-key" not in sent.headers
    assert sent.body == {
        "anthropic_version": "vertex-2023-10-16",
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Hello"}],
        "stream": True,
    }
    assert result.finish.kind == "stop" and result.finish.raw == "end_turn" and result.text
    assert adapter.list_models("vertex") == []


# --------------------------------------------------------------------------- service and CLI


def test_default_service_registers_vertex_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    assert "vertex" not in {p.id for p in default_service().list_providers()}  # no credentials
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    (gcloud / "application_default_credentials.json").write_text(user_file(tmp_path).read_text())
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(gcloud))  # where `gcloud auth application-default login` writes
    service = default_service()
    gemini, claude = service.adapter_for("vertex"), service.adapter_for("vertex-anthropic")
    assert isinstance(gemini, VertexGeminiAdapter) and isinstance(claude, VertexAnthropicAdapter)
    assert gemini.base_url == GLOBAL and gemini.credential.describe() == "callable"


def test_cli_chat_with_vertex_from_the_environment(
    server: ReplayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(dshstream._transport, "new_session", lambda: google_session(server.url))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(user_file(tmp_path)))
    server.add("/token", token_route(TOKEN))
    server.add("/v1/projects/test-project/locations/us-central1/publishers/google/",
               Route(body=fixture_bytes("vertex/gemini25_flash_text_b.sse")))
    server.add("/v1/projects/test-project/locations/us-central1/publishers/anthropic/",
               Route(body=fixture_bytes("anthropic/text.sse")))
    assert main(["chat", "-p", "vertex", "-m", "gemini-2.5-flash", "Hello"]) == 0
    out = capsys.readouterr()
    assert recorded_text("vertex/gemini25_flash_text_b.sse").strip()[:40] in out.out
    assert main(["chat", "-p", "vertex", "-m", "claude-haiku-4-5@20251001", "Hello"]) == 0
    assert server.requests[-1].path.endswith("/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict")
    out = capsys.readouterr()
    assert TOKEN not in out.out + out.err and REFRESH_TOKEN not in out.out + out.err
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    assert main(["chat", "-p", "vertex", "-m", "gemini-2.5-flash", "Hello"]) == 2
    assert "GOOGLE_CLOUD_PROJECT" in capsys.readouterr().err
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-project")
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS")
    assert main(["chat", "-p", "vertex", "-m", "gemini-2.5-flash", "Hello"]) == 2
    assert "gcloud auth application-default login" in capsys.readouterr().err


# --------------------------------------------------------------------------- composition


def test_the_google_and_anthropic_adapters_compose_a_wire_and_an_auth_flow(tmp_path: Path) -> None:
    from dshstream import AnthropicAdapter, GeminiAdapter
    from dshstream._adapters.anthropic import AnthropicWire
    from dshstream._adapters.auth import HeaderAuth
    from dshstream._adapters.gemini import GeminiWire
    from dshstream._adapters.http import HttpAdapter
    from dshstream._adapters.vertex import VertexAnthropicWire, VertexGeminiWire

    hooks = {"auth_headers", "endpoint", "build_body", "make_translator", "protocol_headers", "models_url",
             "models_path", "models_format", "media", "media_support", "diagnostics", "should_retry_request",
             "stream_accept", "forced_tool_name", "build_contents"}
    for cls in (AnthropicAdapter, GeminiAdapter, VertexGeminiAdapter, VertexAnthropicAdapter):
        own = {name for klass in cls.__mro__[: cls.__mro__.index(HttpAdapter)] for name in vars(klass)}
        assert not own & hooks, (cls.__name__, own & hooks)
    quota = user_file(tmp_path, quota_project_id="quota-proj")
    cases = [
        (AnthropicAdapter(api_key=TOKEN), AnthropicWire, "x-api-key", {}),
        (GeminiAdapter(api_key=TOKEN), GeminiWire, "x-goog-api-key", {}),
        (VertexGeminiAdapter(api_key=EXPRESS_KEY), VertexGeminiWire, "x-goog-api-key", {}),
        (VertexGeminiAdapter(project="p", credentials_file=quota), VertexGeminiWire, "authorization",
         {"x-goog-user-project": "quota-proj"}),
        (VertexAnthropicAdapter(project="p", credentials_file=quota), VertexAnthropicWire, "authorization",
         {"x-goog-user-project": "quota-proj"}),
    ]
    for adapter, wire, header, extra in cases:
        assert type(adapter.wire) is wire and isinstance(adapter.auth_flow, HeaderAuth)
        assert (adapter.auth_flow.header, adapter.auth_flow.extra) == (header, extra)
        assert "x-goog-user-project" not in adapter.wire.protocol_headers()  # it travels with the credential
    mine = VertexGeminiAdapter(project="p", credentials_file=quota, headers={"X-Goog-User-Project": "mine"})
    assert isinstance(mine.auth_flow, HeaderAuth) and mine.auth_flow.extra == {}
    assert mine.request_headers()["X-Goog-User-Project"] == "mine"  # the caller's wins
    assert AnthropicAdapter(api_key=TOKEN).wire.protocol_headers() == {"anthropic-version": "2023-06-01"}
    assert VertexAnthropicAdapter(project="p", api_key=TOKEN).wire.protocol_headers() == {}


def test_a_per_minute_quota_429_is_a_rate_limit_retried_and_a_daily_one_is_not(
    google: tuple[ReplayServer, requests.Session]
) -> None:
    """Vertex's per-minute ``RESOURCE_EXHAUSTED`` (its message as users quote it; Google
    documents it as retry-with-backoff) is RATE_LIMIT: retried, then the stream goes on.
    The same quota per day is QUOTA: not retried."""
    server, session = google
    message = ("Quota exceeded for aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model "
               "with base model: gemini-1.5-flash-002. Please submit a quota increase request. "
               "https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai.")

    def exhausted(text: str) -> Route:
        body = json.dumps({"error": {"code": 429, "message": text, "status": "RESOURCE_EXHAUSTED"}}).encode()
        return Route(body=body, status=429, content_type="application/json", headers={"retry-after-ms": "1"})

    server.add("/v1/projects/", [exhausted(message), Route(body=fixture_bytes("vertex/gemini15_flash002_text_a.sse"))])
    adapter = VertexGeminiAdapter(project="test-project", api_key=Tokens(), session=session, max_retries=1)
    result = stream(adapter, model="gemini-1.5-flash-002")
    assert result.finish.kind == "stop" and len(server.requests) == 2, result.failure

    server.add("/v1/projects/", exhausted(message.replace("per_minute", "per_day")))
    daily = stream(adapter, model="gemini-1.5-flash-002")
    assert daily.failure is not None and (daily.failure.code, daily.failure.retryable) == ("QUOTA", False)
    assert len(server.requests) == 3  # not retried
