"""Cassettes record real provider streams through the real adapters and replay them
offline through the real HTTP path: the same chunks, from the same bytes.

The "provider" is a :class:`ReplayServer` on 127.0.0.1 playing a recorded transcript of
tests/fixtures/real; the adapters are built for the provider's real address and reach the
loopback server only through a rerouting session (``routed_session``) while recording.
Replaying, that server is gone and the adapters have no such session: every connection
beyond 127.0.0.1 is refused, and none is tried.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import AnthropicAdapter, GeminiAdapter, GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream._cassettes.format import load
from dshstream._core.errors import ConfigurationError
from dshstream._core.types import StreamChunk
from dshstream._transport import intercept
from dshstream.adapters import AwsCredentials, BedrockAdapter
from dshstream.testing import Cassette, Interaction, MemoryTransport, ReplayServer, Route, use_cassette
from helpers import fixture_bytes, fake_key, routed_session

OPENAI = "https://api.openai.com/v1"
ANTHROPIC = "https://api.anthropic.com"
GEMINI = "https://generativelanguage.googleapis.com"
BEDROCK = "https://bedrock-runtime.us-east-1.amazonaws.com"
EVENTSTREAM = "application/vnd.amazon.eventstream"


class _Network:
    """Refuses (and remembers) every connection beyond 127.0.0.1 while installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.attempts: list[str] = []
        connect = socket.socket.connect

        def guarded(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and not str(address[0]).startswith("127."):
                self.attempts.append(repr(address))
                raise ConnectionRefusedError("the cassette tests stay on 127.0.0.1")
            connect(sock, address)

        def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host not in (None, "localhost") and not str(host).startswith("127."):
                self.attempts.append(f"lookup {host}")
                raise socket.gaierror("the cassette tests stay on 127.0.0.1")
            return getaddrinfo(host, *args, **kwargs)

        getaddrinfo = socket.getaddrinfo
        monkeypatch.setattr(socket.socket, "connect", guarded)
        monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> _Network:
    return _Network(monkeypatch)


@pytest.fixture(autouse=True)
def _no_interceptor_left() -> Iterator[None]:
    yield
    assert intercept.current() is None, "a cassette was left installed"


# --------------------------------------------------------------------------- providers


OPENAI_KEY = fake_key("sk-proj-", 48)
ANTHROPIC_KEY = fake_key("sk-ant-api03-", 60)
GEMINI_KEY = fake_key("AIza", 35)
AWS_SECRET = fake_key("", 40, seed=7)


def _service(session: object | None) -> LlmService:
    """Adapters for the real hosts; ``session`` reroutes them to the loopback provider."""
    extra: dict[str, Any] = {"session": session} if session is not None else {}
    service = LlmService()
    service.register_adapter(["openai"], OpenAIChatAdapter(api_key=OPENAI_KEY, base_url=OPENAI, **extra))
    service.register_adapter(["anthropic"], AnthropicAdapter(api_key=ANTHROPIC_KEY, base_url=ANTHROPIC, **extra))
    service.register_adapter(["gemini"], GeminiAdapter(api_key=GEMINI_KEY, base_url=GEMINI, **extra))
    service.register_adapter(
        ["bedrock"],
        BedrockAdapter(region="us-east-1", credentials=AwsCredentials(fake_key("AKIA", 16), AWS_SECRET), **extra),
    )
    return service


CASES = {
    # provider: (fixture, model, content type, the real host)
    "openai": ("openai/single_tool_call.sse", "gpt-4o", "text/event-stream", OPENAI),
    "anthropic": ("anthropic/thinking_then_tool_use.sse", "claude-sonnet-4-5", "text/event-stream", ANTHROPIC),
    "gemini": ("gemini/text.sse", "gemini-2.5-flash", "text/event-stream", GEMINI),  # CRLF framing
    "bedrock": ("bedrock/nova_micro_text.eventstream", "us.amazon.nova-micro-v1:0", EVENTSTREAM, BEDROCK),
}


def _options(provider: str, text: str = "What is 2+2?") -> GenerateOptions:
    return GenerateOptions(provider=provider, model=CASES[provider][1], messages=(Message.user(text),), max_tokens=64)


def _record(path: Path, provider: str, **settings: Any) -> tuple[list[StreamChunk], ReplayServer]:
    fixture, _, content_type, host = CASES[provider]
    with ReplayServer({"/": Route(body=fixture_bytes(fixture), content_type=content_type)}) as upstream:
        service = _service(routed_session(host, upstream.url))
        with use_cassette(path, record=True, **settings):
            chunks = list(service.stream(_options(provider)))
    return chunks, upstream


# --------------------------------------------------------------------------- the round trip


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_recorded_stream_replays_offline_with_the_same_chunks(
    tmp_path: Path, provider: str, network: _Network
) -> None:
    path = tmp_path / "cassette.json"
    recorded, upstream = _record(path, provider)
    assert len(upstream.requests) == 1 and recorded[-1].reason.kind in ("stop", "tool-calls")  # type: ignore[union-attr]

    (interaction,) = load(path)
    fixture, _, content_type, host = CASES[provider]
    assert interaction.body == fixture_bytes(fixture), "the body is kept exactly as read"
    assert interaction.url.startswith(host) and interaction.status == 200 and interaction.end == "complete"

    service = _service(None)  # no rerouting: nothing could reach the provider
    with use_cassette(path, record=False) as cassette:
        replayed = list(service.stream(_options(provider)))
    assert replayed == recorded
    assert cassette.misses == [] and cassette.unused == []
    assert network.attempts == []


def test_the_cassette_is_text_that_diffs_well_and_keeps_no_secret(tmp_path: Path) -> None:
    text_path, binary_path = tmp_path / "openai.json", tmp_path / "bedrock.json"
    _record(text_path, "openai")
    _record(binary_path, "bedrock")
    text = text_path.read_text(encoding="utf-8")
    document = json.loads(text)
    request = document["interactions"][0]["request"]
    response = document["interactions"][0]["response"]
    assert request["method"] == "POST" and request["url"] == f"{OPENAI}/chat/completions"
    assert request["headers"]["authorization"] == "[REDACTED]"
    assert request["body"]["messages"] == [{"role": "user", "content": "What is 2+2?"}]  # the JSON itself
    assert response["body_text"][0].startswith('data: {"id":"chatcmpl-') and response["body_text"][1] == "\n"
    assert "".join(response["body_text"]).encode() == fixture_bytes(CASES["openai"][0])
    assert '\n          "data: {' in text, "one SSE line per line of the file"
    binary = json.loads(binary_path.read_text(encoding="utf-8"))["interactions"][0]
    assert "body_base64" in binary["response"] and all(len(line) <= 76 for line in binary["response"]["body_base64"])
    signed = {k.lower(): v for k, v in binary["request"]["headers"].items()}
    for header in ("authorization", "x-amz-date"):
        assert signed[header] == "[REDACTED]", header
    everything = text + binary_path.read_text(encoding="utf-8")
    for secret in (OPENAI_KEY, AWS_SECRET, "Signature="):
        assert secret not in everything


# --------------------------------------------------------------------------- matching


def test_requests_are_matched_on_method_url_and_body_and_answered_in_order(tmp_path: Path) -> None:
    """A retried request gets its answers in the recorded order: the 429, then the 200."""
    path = tmp_path / "retry.json"
    busy = Route(body=b'{"error": {"message": "Rate limit reached", "type": "requests"}}', status=429,
                 content_type="application/json", headers={"retry-after": "0"})
    ok = Route(body=fixture_bytes("openai/single_tool_call.sse"))
    with ReplayServer({"/": [busy, ok]}) as upstream:
        service = _service(routed_session(OPENAI, upstream.url))
        with use_cassette(path, record=True) as recording:
            first = service.stream(_options("openai")).result()
        assert [i.status for i in recording.interactions] == [429, 200]
    assert first.ok and len(upstream.requests) == 2

    with use_cassette(path) as cassette:
        again = _service(None).stream(_options("openai")).result()
    assert again == first and cassette.unused == []


def test_a_changed_request_fails_loudly_naming_why_and_how_to_record(tmp_path: Path) -> None:
    path = tmp_path / "changed.json"
    _record(path, "openai")
    service = _service(None)
    with pytest.raises(ConfigurationError) as raised:
        with use_cassette(path):
            result = service.stream(_options("openai", "What is 3+3?")).result()
            assert result.failure is not None and result.failure.code == "INVALID_OPTIONS"
    message = str(raised.value)
    assert f"no recorded answer for POST {OPENAI}/chat/completions" in message
    assert "have this method and URL but another body" in message and "DSHSTREAM_RECORD=1" in message

    cassette = Cassette(path).start()
    try:
        assert service.stream(_options("openai")).result().ok
        assert "answered already" in service.stream(_options("openai")).result().failure.message  # type: ignore[union-attr]
        assert len(cassette.misses) == 1
    finally:
        cassette.stop()


def test_a_missing_cassette_fails_every_request_without_sending_it(tmp_path: Path, network: _Network) -> None:
    with pytest.raises(ConfigurationError, match="the cassette does not exist"):
        with use_cassette(tmp_path / "absent.json") as cassette:
            result = _service(None).stream(_options("anthropic")).result()
    assert result.failure is not None and result.failure.code == "INVALID_OPTIONS" and not result.failure.retryable
    assert cassette.misses and network.attempts == [] and not (tmp_path / "absent.json").exists()


def test_match_on_path_and_redacted_fields_let_volatile_parts_differ(tmp_path: Path) -> None:
    path = tmp_path / "volatile.json"
    with ReplayServer({"/": fixture_bytes("openai/single_tool_call.sse")}) as upstream:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{upstream.url}/v1"))
        options = GenerateOptions(provider="local", model="m", messages=(Message.user("Hi"),),
                                  extra_body={"user": "alice-1"})
        with use_cassette(path, record=True, match_on=("method", "path", "body"), redact_fields=("user",)):
            assert service.stream(options).result().ok
    assert json.loads(path.read_text())["interactions"][0]["request"]["body"]["user"] == "[REDACTED]"
    other = LlmService()  # another port, another user: still the same recorded request
    other.register_adapter(["local"], OpenAIChatAdapter(base_url="http://127.0.0.1:9/v1"))
    with use_cassette(path, match_on=("method", "path", "body"), redact_fields=("user",)):
        assert other.stream(GenerateOptions(provider="local", model="m", messages=(Message.user("Hi"),),
                                            extra_body={"user": "bob-2"})).result().ok


# --------------------------------------------------------------------------- what reaches the cassette


def test_adapters_built_before_the_cassette_and_in_other_threads_use_it(tmp_path: Path) -> None:
    path = tmp_path / "threads.json"
    with ReplayServer({"/": fixture_bytes("anthropic/thinking_then_tool_use.sse")}) as upstream:
        service = _service(routed_session(ANTHROPIC, upstream.url))  # built first, as an app does
        with use_cassette(path, record=True):
            threads = [threading.Thread(target=lambda: service.stream(_options("anthropic")).result()) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert len(upstream.requests) == 4
    with use_cassette(path) as cassette:
        results = []
        workers = [threading.Thread(target=lambda: results.append(_service(None).stream(_options("anthropic")).result()))
                   for _ in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert len(results) == 4 and all(r.ok for r in results) and cassette.unused == []


def test_a_memory_transport_is_never_intercepted(tmp_path: Path) -> None:
    transport = MemoryTransport(fixture_bytes("openai/single_tool_call.sse"))
    service = LlmService()
    service.register_adapter(["memory"], OpenAIChatAdapter(base_url=OPENAI, api_key="placeholder", transport=transport))
    with use_cassette(tmp_path / "none.json", record=True) as cassette:
        assert service.stream(GenerateOptions(provider="memory", model="m", messages=(Message.user("x"),))).result().ok
    assert cassette.interactions == [] and len(transport.requests) == 1
    assert json.loads((tmp_path / "none.json").read_text())["interactions"] == []


def test_model_lists_are_recorded_and_replayed_too(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    listing = json.dumps({"data": [{"id": "gpt-4o"}, {"id": "gpt-4o-mini"}]}).encode()
    with ReplayServer({"/": Route(body=listing, content_type="application/json")}) as upstream:
        rerouted: Any = routed_session(OPENAI, upstream.url)
        adapter = OpenAIChatAdapter(api_key=OPENAI_KEY, base_url=OPENAI, session=rerouted)
        with use_cassette(path, record=True):
            recorded = adapter.list_models("openai")
    with use_cassette(path):
        assert OpenAIChatAdapter(api_key=OPENAI_KEY, base_url=OPENAI).list_models("openai") == recorded
    assert [m.id for m in recorded] == ["gpt-4o", "gpt-4o-mini"]
    assert json.loads(path.read_text())["interactions"][0]["request"]["method"] == "GET"


# --------------------------------------------------------------------------- how bodies end, and when


def test_a_cut_stream_and_an_abandoned_one_replay_as_they_ended(tmp_path: Path) -> None:
    body = fixture_bytes("anthropic/thinking_then_tool_use.sse")
    half = body[: len(body) // 2]
    head = body[: body.index(b"thinking_delta") + body[body.index(b"thinking_delta"):].index(b"\n\n") + 2]
    path = tmp_path / "ends.json"
    with ReplayServer({"/cut/": Route(body=half, ending="cut"), "/": Route(body=body, script=[head, 30.0])}) as up:
        service = LlmService()
        service.register_adapter(["cut"], AnthropicAdapter(api_key="placeholder", base_url=f"{up.url}/cut"))
        service.register_adapter(["slow"], AnthropicAdapter(api_key="placeholder", base_url=up.url))
        with use_cassette(path, record=True) as recording:
            cut = service.stream(GenerateOptions(provider="cut", model="m", messages=(Message.user("x"),))).result()
            stream = service.stream(GenerateOptions(provider="slow", model="m", messages=(Message.user("x"),)))
            first = next(iter(stream))
            stream.close()
        assert [i.end for i in recording.interactions] == ["cut", "open"]
    assert cut.failure is not None
    with use_cassette(path):
        again = service.stream(GenerateOptions(provider="cut", model="m", messages=(Message.user("x"),))).result()
        replayed = service.stream(GenerateOptions(provider="slow", model="m", messages=(Message.user("x"),)))
        assert next(iter(replayed)) == first
        started = time.monotonic()
        replayed.close()  # the held connection is let go at once
        assert replayed.result().finish.kind == "aborted" and time.monotonic() - started < 2
    assert again.failure is not None and again.failure.code == cut.failure.code
    assert again.text == cut.text and again.reasoning == cut.reasoning


def test_timing_is_recorded_on_request_and_replayed_on_request(tmp_path: Path) -> None:
    events = [b'data: {"choices":[{"index":0,"delta":{"content":"%d "}}]}\n\n' % n for n in range(4)]
    done = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    script: list[bytes | float] = [events[0], 0.25, events[1], 0.25, events[2], 0.25, events[3], done]
    path = tmp_path / "paced.json"
    with ReplayServer({"/": Route(body=b"", script=script)}) as upstream:
        service = LlmService()
        service.register_adapter(["paced"], OpenAIChatAdapter(base_url=f"{upstream.url}/v1"))
        options = GenerateOptions(provider="paced", model="m", messages=(Message.user("count"),))
        with use_cassette(path, record=True, timing=True):
            assert service.stream(options).result().text == "0 1 2 3 "
    (interaction,) = load(path)
    assert isinstance(interaction, Interaction) and len(interaction.timing) >= 4
    assert interaction.timing[-1][0] >= 0.6 and sum(size for _, size in interaction.timing) == len(interaction.body)

    def arrivals(timing: bool) -> list[float]:
        with use_cassette(path, timing=timing):
            started = time.monotonic()
            return [time.monotonic() - started for chunk in service.stream(options) if type(chunk).__name__ == "TextDelta"]

    instant, paced = arrivals(False), arrivals(True)
    assert instant[-1] < 0.5, "instant by default"
    assert paced[-1] - paced[0] >= 0.6, "the recorded pauses, on request"


# --------------------------------------------------------------------------- checked early


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"match_on": ("method", "headers")}, "match_on"),
        ({"match_on": "url"}, "match_on"),
        ({"match_on": ()}, "match_on"),
        ({"redact_fields": "user"}, "redact_fields"),
        ({"redact_fields": (".user",)}, "redact_fields"),
        ({"timing": "yes"}, "timing"),
        ({"record": "yes"}, "record"),
    ],
)
def test_a_wrong_setting_is_refused_naming_it(tmp_path: Path, settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        use_cassette(tmp_path / "x.json", **settings)


def test_the_environment_variable_picks_the_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSHSTREAM_RECORD", "1")
    assert use_cassette(tmp_path / "x.json").recording
    monkeypatch.setenv("DSHSTREAM_RECORD", "0")
    assert not use_cassette(tmp_path / "x.json").recording
    monkeypatch.setenv("DSHSTREAM_RECORD", "sometimes")
    with pytest.raises(ConfigurationError, match="DSHSTREAM_RECORD"):
        use_cassette(tmp_path / "x.json")


def test_a_malformed_cassette_is_refused_when_it_starts_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"dshstream_cassette": 1, "interactions": [{"request": {"method": "POST", "url": "u"},
                                                                          "response": {"status": 99}}]}))
    with pytest.raises(ConfigurationError, match=r"interactions\[0\]\.response\.status"):
        use_cassette(path).start()
    assert intercept.current() is None
    cassette = use_cassette(path, record=True).start()
    with pytest.raises(ConfigurationError, match="started already"):
        cassette.start()
    cassette.stop()
