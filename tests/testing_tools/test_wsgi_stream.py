"""The web streams served for real: the standard library's WSGI server, Flask (Werkzeug's
server) and Django (the README's view) stream each part as it exists, and a client that
hangs up mid-answer closes the model's stream — checked on the loopback provider, which
sees its client go away long before its answer would have ended."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import GeminiAdapter, GenerateOptions, LlmService, Message
from dshstream._core.errors import make_failure
from dshstream._replay_server import shut_down_now
from dshstream._core.types import BlockStart, Finish, FinishReason, StreamChunk, TextDelta, chunk_from_dict
from dshstream.sansio import assemble, decode
from dshstream.testing import ReplayServer
from dshstream.web import WsgiStream, chunk_ndjson_stream, chunk_sse_stream, ui_message_stream
from helpers import fake_key, fixture_bytes

from .support import ROOT, wsgi_server
from .wsgi_checks import GEMINI_EVENTS, QUESTION, hang_up_after, paced, read_all, wait_for_disconnect

EXPECTED = assemble(decode(b"".join(GEMINI_EVENTS), wire="gemini"))
# A whole answer is read at READ_PACE between events (spread enough to tell streamed from
# buffered, short enough to keep the suite fast); a hang-up is checked against PACE, whose
# answer would last long past the moment the client goes away.
READ_PACE = 0.04
PACE = 0.15


def _service(provider: ReplayServer) -> LlmService:
    service = LlmService()
    service.register_adapter(["gemini"], GeminiAdapter(api_key="placeholder", base_url=provider.url))
    return service


def _options() -> GenerateOptions:
    return GenerateOptions(provider="gemini", model="gemini-2.5-pro", messages=(Message.user("How do I cross?"),))


@pytest.fixture
def provider() -> Iterator[ReplayServer]:
    with ReplayServer({"/": paced(PACE)}) as server:
        yield server


def _ui_text(events: list[str]) -> tuple[str, str, list[str]]:
    parts = [json.loads(e) for e in events if e != "[DONE]"]
    text = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    reasoning = "".join(p["delta"] for p in parts if p["type"] == "reasoning-delta")
    return text, reasoning, [p["type"] for p in parts]


# --------------------------------------------------------------------------- the standard library's server


def test_the_ui_message_stream_arrives_part_by_part_from_a_wsgi_server(provider: ReplayServer) -> None:
    service = _service(provider)
    provider.add("/", paced(READ_PACE))

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        return ui_message_stream(service.stream(_options()))(environ, start_response)

    with wsgi_server(app) as url:
        head, events, arrivals = read_all(url)
    assert "\r\nx-vercel-ai-ui-message-stream: v1\r\n" in head + "\r\n" and "\r\nx-accel-buffering: no" in head
    text, reasoning, types = _ui_text(events)
    assert (text, reasoning) == (EXPECTED.text, EXPECTED.reasoning) and events[-1] == "[DONE]"
    assert types[-2:] == ["finish-step", "finish"]
    # each recorded event reached the client when the provider sent it, not all at the end
    assert len(arrivals) >= len(GEMINI_EVENTS) - 2 and arrivals[0] < arrivals[-1] - READ_PACE * (len(GEMINI_EVENTS) - 4)


def test_a_client_that_hangs_up_closes_the_models_stream(provider: ReplayServer) -> None:
    service = _service(provider)
    streams: list[Any] = []

    def app(environ: dict[str, Any], start_response: Any) -> Any:
        stream = service.stream(_options())
        streams.append(stream)
        return ui_message_stream(stream)(environ, start_response)

    with wsgi_server(app) as url:
        hung_up = hang_up_after(url, parts=3)
        waited = wait_for_disconnect(provider)
        assert time.monotonic() - hung_up < 3 * PACE + 1.0, "closed within a few events, not at the answer's end"
    assert waited < PACE * len(GEMINI_EVENTS) / 2
    (stream,) = streams
    assert stream.done and stream.result().finish.kind == "aborted"


# --------------------------------------------------------------------------- Flask


def _flask_app(service: LlmService) -> Any:
    pytest.importorskip("flask")
    import flask

    app = flask.Flask("chat")

    @app.post("/api/chat")
    def chat() -> Any:
        answer = ui_message_stream(service.stream(_options()))
        return flask.Response(answer, headers=answer.headers)

    @app.post("/direct")
    def direct() -> Any:
        return ui_message_stream(service.stream(_options()))  # a WsgiStream is a WSGI app: Flask runs it

    return app


def _serve_flask(app: Any) -> Iterator[str]:
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        shut_down_now(server)
        server.server_close()


@pytest.mark.parametrize("route", ["/api/chat", "/direct"])
def test_flask_streams_the_parts_and_a_hang_up_closes_the_model(provider: ReplayServer, route: str) -> None:
    app = _flask_app(_service(provider))
    provider.add("/", paced(READ_PACE))
    for url in _serve_flask(app):
        head, events, arrivals = read_all(url + route)
        assert head.startswith("HTTP/1.1 200") and "x-vercel-ai-ui-message-stream: v1" in head
        assert _ui_text(events)[:2] == (EXPECTED.text, EXPECTED.reasoning)
        assert arrivals[-1] - arrivals[0] > READ_PACE * (len(GEMINI_EVENTS) - 4), "streamed, not buffered"
        provider.disconnects = 0
        provider.add("/", paced(PACE))
        hang_up_after(url + route, parts=3)
        assert wait_for_disconnect(provider) < PACE * len(GEMINI_EVENTS) / 2


# --------------------------------------------------------------------------- Django


def _readme_block(containing: str) -> str:
    text = (ROOT / "README.rst").read_text(encoding="utf-8")
    blocks = re.findall(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", text)
    (block,) = [b for b in blocks if containing in b]
    return "\n".join(line[4:] for line in block.splitlines()) + "\n"


DJANGO_RUN = r'''
import json, os, sys, threading, types
import django
from django.conf import settings

settings.configure(DEBUG=False, SECRET_KEY="not-a-secret", ALLOWED_HOSTS=["127.0.0.1"], ROOT_URLCONF="urls",
                   MIDDLEWARE=["django.middleware.common.CommonMiddleware"], INSTALLED_APPS=[])
django.setup()
from dshstream import GeminiAdapter, LlmService
from dshstream.testing import ReplayServer
from testing_tools.support import wsgi_server
from testing_tools.wsgi_checks import hang_up_after, paced, read_all, wait_for_disconnect

provider = ReplayServer({"/": paced(%(read_pace)s)}).start()
service = LlmService()
service.register_adapter(["gemini"], GeminiAdapter(api_key="placeholder", base_url=provider.url))
llm = types.ModuleType("myapp.llm")
llm.service, llm.PROVIDER, llm.MODEL = service, "gemini", "gemini-2.5-pro"
sys.modules["myapp"] = types.ModuleType("myapp")
sys.modules["myapp.llm"] = llm
views = types.ModuleType("myapp.views")
views.__package__ = "myapp"
exec(compile(sys.stdin.read(), "README.rst (the Django view)", "exec"), views.__dict__)
urls = types.ModuleType("urls")
from django.urls import path
urls.urlpatterns = [path("api/chat", views.chat)]
sys.modules["urls"] = urls
from django.core.wsgi import get_wsgi_application

with wsgi_server(get_wsgi_application()) as url:
    head, events, arrivals = read_all(url + "/api/chat")
    provider.add("/", paced(%(pace)s))
    hang_up_after(url + "/api/chat", parts=3)
    waited = wait_for_disconnect(provider)
print(json.dumps({"head": head, "events": events, "spread": arrivals[-1] - arrivals[0], "waited": waited}))
provider.stop()
'''


def test_the_readmes_django_view_streams_and_a_hang_up_closes_the_model() -> None:
    pytest.importorskip("django")
    view = _readme_block("StreamingHttpResponse")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}
    run = DJANGO_RUN % {"read_pace": READ_PACE, "pace": PACE}
    proc = subprocess.run([sys.executable, "-c", run], input=view, capture_output=True, text=True, env=env,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert "x-vercel-ai-ui-message-stream: v1" in seen["head"].lower()
    assert _ui_text(seen["events"])[:2] == (EXPECTED.text, EXPECTED.reasoning)
    assert seen["spread"] > READ_PACE * (len(GEMINI_EVENTS) - 4), "streamed, not buffered"
    assert seen["waited"] < PACE * len(GEMINI_EVENTS) / 2


# --------------------------------------------------------------------------- our own chunk dicts


def test_our_chunk_dicts_as_sse_and_ndjson_read_back_without_detail_or_replay_state() -> None:
    chunks = list(decode(fixture_bytes("anthropic/thinking_then_tool_use.sse"), wire="anthropic"))
    assert chunks[-1].replay_state is not None  # type: ignore[union-attr]
    sse, ndjson = chunk_sse_stream(iter(chunks)), chunk_ndjson_stream(iter(chunks))
    assert sse.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert ndjson.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    events = [piece for piece in sse]
    lines = [piece for piece in ndjson]
    assert all(p.startswith(b"data: ") and p.endswith(b"\n\n") and p.count(b"\n") == 2 for p in events)
    assert all(p.endswith(b"\n") and p.count(b"\n") == 1 for p in lines)
    from_sse = [chunk_from_dict(json.loads(p[len(b"data: "):])) for p in events]
    from_ndjson = [chunk_from_dict(json.loads(p)) for p in lines]
    assert from_sse == from_ndjson
    assert from_sse[:-1] == chunks[:-1] and from_sse[-1].reason == chunks[-1].reason  # type: ignore[union-attr]
    assert "replay_state" not in json.loads(lines[-1])


def test_the_container_and_a_credit_token_stay_on_the_server() -> None:
    from dshstream._core.types import ResponseMetadata
    from dshstream._web.chunk_dicts import safe_chunk_dict

    metadata = ResponseMetadata(
        model="claude-fable-5",
        stop_details={"type": "refusal", "category": "cyber", "fallback_credit_token": "tok_x"},
        container={"id": "container_1", "expires_at": "2026-07-30T18:54:08Z"},
    )
    sent = safe_chunk_dict(Finish(FinishReason("stop"), metadata=metadata))
    assert sent["metadata"]["stop_details"] == {"type": "refusal", "category": "cyber"}
    assert "container" not in sent["metadata"] and "tok_x" not in json.dumps(sent)
    assert metadata.stop_details is not None and metadata.stop_details["fallback_credit_token"] == "tok_x"  # untouched


def test_a_failure_reaches_the_browser_as_its_headline_only() -> None:
    key = fake_key("sk-ant-api03-", 60)
    failure = make_failure("AUTH", "anthropic: authentication failed (AUTH, HTTP 401)", status=401,
                           detail=f"invalid x-api-key {key}")
    chunks: list[StreamChunk] = [BlockStart(0, "text"), TextDelta(0, "x"), Finish(FinishReason("error", failure=failure))]
    for stream in (chunk_sse_stream(list(chunks)), chunk_ndjson_stream(list(chunks)), ui_message_stream(list(chunks))):
        body = b"".join(stream).decode()
        assert key not in body and "invalid x-api-key" not in body
        assert "anthropic: authentication failed (AUTH, HTTP 401)" in body

    def raising() -> Iterator[Any]:
        yield BlockStart(0, "text")
        raise RuntimeError(f"the database password is {key}")

    body = b"".join(chunk_ndjson_stream(raising())).decode()
    last = json.loads(body.splitlines()[-1])
    assert last["type"] == "finish" and last["reason"]["failure"]["message"] == "the answer could not be completed"
    assert key not in body


def test_closing_the_wsgi_stream_closes_the_source_even_from_another_thread() -> None:
    closed = threading.Event()
    started = threading.Event()

    class Slow:
        def __iter__(self) -> Iterator[Any]:
            yield BlockStart(0, "text")
            started.set()
            closed.wait(10)  # a read blocked until the source is closed
            yield TextDelta(0, "late")

        def close(self) -> None:
            closed.set()

    stream = ui_message_stream(Slow())
    assert isinstance(stream, WsgiStream)
    reader = threading.Thread(target=lambda: list(stream))
    reader.start()
    assert started.wait(5)
    stream.close()  # the server's close, while its iteration is blocked in another thread
    assert closed.is_set()
    reader.join(5)
    assert not reader.is_alive() and stream.closed
    stream.close()  # idempotent
    assert list(stream) == []
