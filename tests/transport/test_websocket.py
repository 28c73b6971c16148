"""Responses over WebSocket (dshstream._transport.websocket, ws_stream, ws_transport and
dshstream._adapters.responses_session) against a loopback server that speaks RFC 6455 and
replays recorded Responses streams as text frames: several turns on one socket, a tool
loop, drops, the connection cap, cancel and limits, close, refusals and the HTTP fallback,
TLS, and an independent client's view of the server."""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from dshstream import GenerateOptions, LlmService, Message, OpenAIResponsesAdapter, ToolSpec, run_tools
from dshstream._core.errors import ConfigurationError
from dshstream._transport import MemoryTransport
from dshstream.adapters import ResponsesSession
from forwarding_proxy import PASSWORD, USER, forwarding_proxies
from helpers import fake_key, fixture_bytes
from service.test_observer import Recorder
from wsserver import Connection, Turn, WsServer, error_event, events_of

CALL = events_of(fixture_bytes("openai-responses/function_call.sse"))  # asks for get_capital
TEXT = events_of(fixture_bytes("openai-responses/text.sse"))
QUOTA = events_of(fixture_bytes("openai-responses/error_event_insufficient_quota.sse"))
#: the cap's error event, written from the documented shape (no public recording exists):
#: OpenAI's WebSocket-mode guide names the code; the envelope is the mode's ``error`` event
CAP = error_event(
    "websocket_connection_limit_reached",
    "Responses websocket connection limit reached (60 minutes). Create a new websocket connection to continue.",
)
KEY = fake_key("sk-proj-", 48)


def _options(**extra: Any) -> GenerateOptions:
    return GenerateOptions(provider="openai", model="gpt-4o", messages=(Message.user("Capital of France?"),), **extra)


def _session(server: WsServer, **settings: Any) -> ResponsesSession:
    connect = {k: settings.pop(k) for k in ("fallback", "max_reconnects", "max_age", "max_message_size", "chain") if k in settings}
    settings.setdefault("max_retries", 0)
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=server.base_url, **settings)
    return adapter.connect(**connect)


def _service(session: ResponsesSession) -> LlmService:
    service = LlmService()
    service.register_adapter(["openai"], session)
    return service


def _turn(service: LlmService, **extra: Any) -> Any:
    return service.stream(_options(**extra)).result()


def _failed(service: LlmService, **extra: Any) -> Any:
    """The failure a turn ended with (a service ends a raised one as an error finish)."""
    failure = _turn(service, **extra).failure
    assert failure is not None
    return failure


@pytest.fixture
def two_turns() -> Iterator[WsServer]:
    with WsServer([Turn(CALL), Turn(TEXT)]) as server:
        yield server


# --------------------------------------------------------------------------- turns on one socket


def test_two_turns_share_one_socket_and_the_key_goes_only_in_the_upgrade(two_turns: WsServer) -> None:
    with _session(two_turns) as session:
        service = _service(session)
        first = _turn(service)
        assert first.ok and [c.name for c in first.tool_calls] == ["get_capital"]
        assert session.connected
        second = _turn(service)
        assert second.ok and second.text == "The capital of France is Paris."
        assert session.stats.connects == 1 and session.stats.socket_turns == 2
    assert len(two_turns.connections) == 1
    conn = two_turns.connections[0]
    assert conn.headers["authorization"] == f"Bearer {KEY}"
    assert conn.headers["host"] == f"127.0.0.1:{two_turns.port}"
    for message in conn.messages:  # the create body less the transport fields
        assert message["type"] == "response.create" and message["model"] == "gpt-4o"
        assert "stream" not in message and "background" not in message
        assert KEY not in json.dumps(message)
    assert conn.closed_by_client == 1000  # the session's close handshake
    assert not two_turns.http_posts


def test_a_tool_loop_runs_every_step_on_the_socket(two_turns: WsServer) -> None:
    spec = ToolSpec(name="get_capital", description="capital", parameters={"type": "object", "properties": {}})
    with _session(two_turns) as session:
        result = run_tools(
            _service(session), _options(tools=(spec,)), {"get_capital": lambda **kw: "Paris"}
        ).result()
    assert result.stopped == "done" and len(result.steps) == 2
    assert result.text == "The capital of France is Paris."
    assert len(two_turns.connections) == 1
    second = two_turns.connections[0].messages[1]
    outputs = [item for item in second["input"] if item.get("type") == "function_call_output"]
    assert outputs and outputs[0]["output"] == "Paris"


def test_the_observer_hears_socket_turns_as_http_ones(two_turns: WsServer) -> None:
    recorder = Recorder()
    with _session(two_turns, observer=recorder) as session:
        service = _service(session)
        _turn(service)
        _turn(service)
    finished = recorder.finished
    assert len(finished) == 2 and all(f.attempts == 1 for f in finished)
    attempts = recorder.attempts
    assert [a.outcome for a in attempts] == ["ok", "ok"]
    assert {(a.server_address, a.server_port) for a in attempts} == {("127.0.0.1", two_turns.port)}


def test_a_ping_is_answered() -> None:
    with WsServer([Turn(TEXT, ping=True)]) as server, _session(server) as session:
        assert _turn(_service(session)).ok
        deadline = time.monotonic() + 2
        while not server.connections[0].pongs and time.monotonic() < deadline:
            time.sleep(0.01)
    assert server.connections[0].pongs == [b"are-you-there"]


def test_a_second_stream_while_one_is_in_flight_goes_over_http() -> None:
    with WsServer([Turn(TEXT, pace=0.02)]) as server, _session(server) as session:
        service = _service(session)
        first = service.stream(_options())
        next(iter(first))  # in flight on the socket
        assert _turn(service).ok
        assert first.result().ok
        assert session.stats.http_turns == 1 and session.stats.socket_turns == 1
    assert len(server.http_posts) == 1 and server.http_posts[0]["body"]["stream"] is True


# --------------------------------------------------------------------------- cuts, the cap, errors


def test_a_drop_mid_stream_ends_the_turn_and_the_next_one_reconnects() -> None:
    with WsServer([Turn(CALL, cut_after=4, how="drop"), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        cut = _turn(service)
        assert cut.failure is not None and cut.failure.code == "STREAM_CLOSED"  # never resent
        assert _turn(service).ok
    assert len(server.connections) == 2
    assert [len(c.messages) for c in server.connections] == [1, 1]


def test_a_close_code_mid_stream_is_a_transport_failure_naming_it() -> None:
    with WsServer([Turn(CALL, cut_after=3, how="close", close_code=1011), Turn(TEXT)]) as server:
        with _session(server) as session:
            service = _service(session)
            cut = _turn(service)
            assert cut.failure is not None and cut.failure.code == "TRANSPORT"
            assert "1011" in cut.failure.message
            assert _turn(service).ok


def test_the_connection_cap_reconnects_and_sends_the_turn_again() -> None:
    with WsServer([Turn([CAP], cut_after=1, how="close", close_code=1000), Turn(TEXT)]) as server:
        with _session(server) as session:
            result = _turn(_service(session))
            assert result.ok and result.text == "The capital of France is Paris."
            assert session.stats.replaced == 1 and session.stats.connects == 2
    assert len(server.connections) == 2
    assert server.connections[0].messages == server.connections[1].messages  # the same turn, resent once


def test_the_cap_twice_in_a_row_is_raised() -> None:
    with WsServer([Turn([CAP], cut_after=1, how="close", close_code=1000)]) as server:
        with _session(server) as session:
            failure = _failed(_service(session))
    assert failure.code == "INVALID_REQUEST" and failure.status == 400
    assert "websocket_connection_limit_reached" in (failure.detail or "")
    assert len(server.connections) == 2


def test_an_error_event_first_is_classified_and_the_socket_kept() -> None:
    quota = error_event("insufficient_quota", "You exceeded your current quota.", status=429, kind="insufficient_quota")
    with WsServer([Turn([quota]), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        assert _failed(service).code == "QUOTA"
        assert session.connected
        assert _turn(service).ok
    assert len(server.connections) == 1


def test_a_recorded_in_band_error_ends_the_turn_as_over_http() -> None:
    with WsServer([Turn(QUOTA), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        failed = _turn(service)
        assert failed.failure is not None and failed.failure.code == "QUOTA"
        assert not session.connected  # response.failed may still come: not the next turn's socket
        assert _turn(service).ok


def test_a_socket_the_server_closed_while_idle_is_replaced() -> None:
    with WsServer([Turn(TEXT, cut_after=len(TEXT), how="close", close_code=1001, cut_delay=0.05), Turn(TEXT)]) as server:
        with _session(server) as session:
            service = _service(session)
            assert _turn(service).ok
            assert session.connected
            time.sleep(0.3)  # the close frame arrives while the socket is idle
            assert _turn(service).ok
            assert session.stats.replaced == 1
    assert len(server.connections) == 2


def test_an_oversized_message_is_refused() -> None:
    with WsServer([Turn(TEXT)]) as server, _session(server, max_message_size=200) as session:
        assert _failed(_service(session)).code == "EVENT_TOO_LARGE"


# --------------------------------------------------------------------------- limits and control


def test_cancel_from_another_thread_ends_a_stalled_turn() -> None:
    with WsServer([Turn(CALL, cut_after=3, how="stall"), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        cancel = threading.Event()
        timer = threading.Timer(0.3, cancel.set)
        started = time.monotonic()
        timer.start()
        result = _turn(service, cancel=cancel)
        took = time.monotonic() - started
        assert result.failure is not None and result.failure.code == "ABORTED"
        assert took < 3.0
        assert not session.connected
        assert _turn(service).ok  # a fresh socket
    assert len(server.connections) == 2


def test_the_idle_clock_holds_on_the_socket() -> None:
    # text, not a tool call: while a call's input is buffered the quiet budget applies
    with WsServer([Turn(TEXT, cut_after=5, how="stall")]) as server, _session(server) as session:
        started = time.monotonic()
        result = _turn(_service(session), idle_timeout=0.3)
        assert result.failure is not None and result.failure.code == "TIMEOUT"
        assert time.monotonic() - started < 3.0


def test_the_total_deadline_holds_on_the_socket() -> None:
    with WsServer([Turn(TEXT, pace=0.1)]) as server, _session(server) as session:
        started = time.monotonic()
        result = _turn(_service(session), timeout=0.35)  # events keep coming: only the total limit
        assert result.failure is not None and result.failure.code == "TIMEOUT"
        assert "total timeout" in result.failure.message
        assert time.monotonic() - started < 3.0


def test_closing_a_stream_mid_turn_closes_the_socket() -> None:
    with WsServer([Turn(CALL, pace=0.02), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        stream = service.stream(_options())
        next(iter(stream))
        stream.close()
        assert not session.connected
        assert _turn(service).ok
    assert len(server.connections) == 2


def test_closing_from_another_thread_ends_a_blocked_read() -> None:
    with WsServer([Turn(TEXT, cut_after=5, how="stall"), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        stream = service.stream(_options())
        timer = threading.Timer(0.3, stream.close)
        started = time.monotonic()
        timer.start()
        result = stream.result()
        assert result.finish.kind == "aborted"
        assert time.monotonic() - started < 3.0
        assert _turn(service).ok
    assert len(server.connections) == 2


def test_closing_the_session_cuts_a_turn_in_flight() -> None:
    with WsServer([Turn(TEXT, cut_after=5, how="stall"), Turn(TEXT)]) as server, _session(server) as session:
        service = _service(session)
        timer = threading.Timer(0.3, session.close)
        started = time.monotonic()
        timer.start()
        result = _turn(service)
        assert result.failure is not None and result.failure.code in ("STREAM_CLOSED", "TRANSPORT")
        assert time.monotonic() - started < 3.0
        assert _turn(service).ok  # a session used after close() connects again
    assert len(server.connections) == 2


# --------------------------------------------------------------------------- no socket to be had


def test_an_upgrade_answered_404_falls_back_to_http_for_good() -> None:
    with WsServer([Turn(TEXT)], refuse=404) as server, _session(server) as session:
        service = _service(session)
        assert _turn(service).ok and _turn(service).ok
        assert session.fell_back is not None and "404" in session.fell_back
        assert session.stats.http_turns == 2
    assert server.upgrades == 1 and len(server.http_posts) == 2
    assert server.http_posts[0]["headers"]["authorization"] == f"Bearer {KEY}"


def test_a_redirect_is_never_followed() -> None:
    with WsServer([Turn(TEXT)], refuse=307) as server, _session(server, fallback=False) as session:
        assert _failed(_service(session)).code == "REDIRECT"
    assert server.upgrades == 1 and not server.http_posts


def test_an_upgrade_answered_401_is_the_auth_failure() -> None:
    body = json.dumps({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
    with WsServer([Turn(TEXT)], refuse=401, refuse_body=body.encode()) as server, _session(server) as session:
        failure = _failed(_service(session))
    assert failure.code == "AUTH"
    assert not server.http_posts and KEY not in str(failure)


def test_a_refused_connect_falls_back_or_is_raised() -> None:
    with WsServer([Turn(TEXT)]) as server:
        base_url = server.base_url
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=base_url, max_retries=0)  # nobody listens now
    with adapter.connect(fallback=False) as strict:
        assert _failed(_service(strict)).code == "TRANSPORT" and strict.stats.http_turns == 0
    with adapter.connect() as lenient:
        assert _failed(_service(lenient)).code == "TRANSPORT"
    assert lenient.stats.failed_connects == 1 and lenient.stats.http_turns == 1


def test_failed_connects_back_off_then_give_up(monkeypatch: pytest.MonkeyPatch) -> None:
    from dshstream._transport import ws_transport

    monkeypatch.setattr(ws_transport, "_INITIAL_DELAY", 0.05)
    with WsServer([Turn(TEXT)], drop_upgrades=100) as server, _session(server, max_reconnects=2) as session:
        service = _service(session)
        assert _turn(service).ok  # the connect failed: this turn went over HTTP
        assert session.stats.failed_connects == 1
        assert _turn(service).ok  # backing off: HTTP again, no connect tried
        assert session.stats.failed_connects == 1 and server.upgrades == 1
        for tries in (2, 3):
            time.sleep(0.12)
            assert _turn(service).ok
            assert session.stats.failed_connects == tries
        assert session.fell_back is not None and "3 connects failed" in session.fell_back
        time.sleep(0.12)
        assert _turn(service).ok
        assert server.upgrades == 3 and session.stats.http_turns == 5 and session.stats.socket_turns == 0


def test_a_socket_past_its_age_is_replaced_before_a_turn() -> None:
    with WsServer([Turn(TEXT)]) as server, _session(server, max_age=0.2) as session:
        service = _service(session)
        assert _turn(service).ok
        time.sleep(0.3)
        assert _turn(service).ok
        assert session.stats.replaced == 1 and session.stats.connects == 2
    assert server.connections[0].closed_by_client == 1000  # closed with a close handshake


def test_a_resumable_request_goes_over_http() -> None:
    with WsServer([Turn(TEXT)]) as server, _session(server) as session:
        assert _turn(_service(session), resumable=True).ok
        assert session.stats.http_turns == 1 and server.upgrades == 0
    assert server.http_posts[0]["body"]["background"] is True


def test_a_socks_proxy_sends_turns_over_http() -> None:
    with WsServer([Turn(TEXT)]) as server:
        session = _session(server, proxies={"http": "socks5://127.0.0.1:9"})
        with session:
            _failed(_service(session))  # HTTP through a proxy nobody runs
        assert session.fell_back is not None and "socks5 proxy" in session.fell_back
    assert server.upgrades == 0


def test_through_a_connect_proxy(tmp_path: Any) -> None:
    with forwarding_proxies(tmp_path) as (open_port, auth_port):
        with WsServer([Turn(CALL), Turn(TEXT)]) as server:
            with _session(server, proxies={"http": f"http://127.0.0.1:{open_port}"}) as tunnelled:
                service = _service(tunnelled)
                assert _turn(service).ok and _turn(service).ok
                assert tunnelled.stats.socket_turns == 2 and tunnelled.stats.connects == 1
            with _session(server, proxies={"http": f"http://{USER}:{PASSWORD}@127.0.0.1:{auth_port}"}) as authed:
                assert _turn(_service(authed)).ok and authed.stats.socket_turns == 1
            wrong = f"http://{USER}:wrong-pw@127.0.0.1:{auth_port}"
            with _session(server, proxies={"http": wrong}, fallback=False) as refused:
                failure = _failed(_service(refused))
        assert failure.code == "PROXY_AUTH" and "wrong-pw" not in str(failure)
        assert len(server.connections) == 2 and not server.http_posts


def test_a_memory_transport_is_used_as_it_is() -> None:
    transport = MemoryTransport(fixture_bytes("openai-responses/text.sse"))
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url="http://127.0.0.1:9/v1", transport=transport)
    with adapter.connect() as session:
        assert _turn(_service(session)).ok
        assert session.fell_back == "the adapter's transport is not HTTP"
    assert len(transport.requests) == 1


@pytest.mark.parametrize(
    ("argument", "value"),
    [("fallback", "yes"), ("max_reconnects", -1), ("max_age", 0), ("max_message_size", True)],
)
def test_bad_session_arguments_are_refused_naming_them(argument: str, value: object) -> None:
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigurationError, match=argument):
        adapter.connect(**{argument: cast(Any, value)})


# --------------------------------------------------------------------------- TLS


def test_wss_with_the_adapters_trust(tmp_path: Any) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    with WsServer([Turn(TEXT)], tls=context) as server:
        with _session(server, verify=str(bundle)) as trusted:
            assert _turn(_service(trusted)).ok and trusted.stats.socket_turns == 1
        with _session(server, fallback=False) as untrusted:
            assert _failed(_service(untrusted)).code == "TLS"


# --------------------------------------------------------------------------- the server itself


def test_an_independent_client_reads_the_loopback_server() -> None:
    websocket = pytest.importorskip("websocket")  # websocket-client: its own RFC 6455 code
    with WsServer([Turn(TEXT, ping=True)]) as server:
        client = websocket.create_connection(
            f"ws://127.0.0.1:{server.port}/v1/responses", header=[f"Authorization: Bearer {KEY}"], timeout=5
        )
        client.send(json.dumps({"type": "response.create", "model": "gpt-4o", "input": "hi"}))
        got = [client.recv() for _ in TEXT]
        client.close()
    assert [json.loads(m)["type"] for m in got] == [json.loads(e)["type"] for e in TEXT]
    connection: Connection = server.connections[0]
    assert connection.messages[0]["type"] == "response.create"
    assert connection.headers["authorization"] == f"Bearer {KEY}"


# --------------------------------------------------------------------------- messages as events


def test_a_message_becomes_one_sse_event_whatever_its_line_breaks() -> None:
    from dshstream._core.sse import SSEDecoder
    from dshstream._transport.ws_stream import as_event

    for message in (b'{"a":1}', b'{\n  "a": 1\n}', b'{"a":\r\n1}', b'{"a":\r1}'):
        events = SSEDecoder().feed(as_event(message))
        assert len(events) == 1
        assert json.loads(events[0].data) == json.loads(message)  # type: ignore[union-attr]


def test_only_a_top_level_type_ends_a_turn() -> None:
    from dshstream._transport.ws_stream import is_last

    assert is_last(b'{"type":"response.completed","response":{}}')
    assert is_last(b'{"type": "error", "status": 400}')
    assert is_last(b'{"sequence_number":9,"type":"response.failed"}')
    assert not is_last(b'{"type":"response.output_text.delta","delta":"\\"type\\":\\"error\\""}')
    assert not is_last(b'{"type":"response.output_item.done","item":{"type":"error"}}')
    assert not is_last(b'{"type":"response.created"}')


# --------------------------------------------------------------------------- the same chunks as over HTTP


def _comparable(chunks: list[Any]) -> list[Any]:
    """Chunks with what the transport itself stamps (timing, request id) left out."""
    from dataclasses import replace

    from dshstream import Finish

    out = []
    for chunk in chunks:
        if isinstance(chunk, Finish) and chunk.metadata is not None:
            chunk = replace(
                chunk, metadata=replace(chunk.metadata, longest_silence=None, request_id=None, latency_ms=None)
            )
        if isinstance(chunk, Finish) and chunk.reason.failure is not None:  # the adapter names its provider
            failure = replace(chunk.reason.failure, provider=None, message=chunk.reason.failure.message.split(": ", 1)[-1])
            chunk = replace(chunk, reason=replace(chunk.reason, failure=failure))
        out.append(chunk)
    return out


@pytest.mark.parametrize(
    "name",
    [
        "function_call.sse",
        "text.sse",
        "reasoning_summary_then_function_call_codex.sse",
        "reasoning_item_then_function_call_gpt5.sse",
        "error_event_insufficient_quota.sse",
    ],
)
def test_every_recording_gives_the_chunks_it_gives_over_http(name: str) -> None:
    import random

    from helpers import decode_all

    recording = fixture_bytes(f"openai-responses/{name}")
    events = events_of(recording)
    size = sum(len(e) + 14 for e in events)
    rng = random.Random(name)
    turns = [
        Turn(events),  # one frame per event, one event per read
        Turn(events, fragments=3, cuts=[rng.randrange(1, size) for _ in range(40)]),  # anywhere
        Turn(events, cuts=list(range(1, size, 7))),  # seven bytes at a time
    ]
    expected = _comparable(decode_all(recording, "openai-responses"))
    with WsServer(turns) as server, _session(server) as session:
        for _ in turns:
            got = _comparable(list(session.stream(_options())))
            assert got == expected
        assert session.stats.socket_turns == 3


# --------------------------------------------------------------------------- chaining (connect(chain=True))


def _loop(session: ResponsesSession) -> Any:
    spec = ToolSpec(name="get_capital", description="capital", parameters={"type": "object", "properties": {}})
    return run_tools(_service(session), _options(tools=(spec,)), {"get_capital": lambda **kw: "Paris"}).result()


def test_a_chained_tool_loop_sends_only_the_new_items() -> None:
    with WsServer([Turn(CALL), Turn(TEXT)]) as server, _session(server, chain=True) as session:
        result = _loop(session)
        assert result.text == "The capital of France is Paris."
        assert session.stats.chained_turns == 1
    first, second = server.connections[0].messages
    assert "previous_response_id" not in first
    response_id = json.loads(CALL[-1])["response"]["id"]
    assert second["previous_response_id"] == response_id
    assert [item["type"] for item in second["input"]] == ["function_call_output"]
    assert second["input"][0]["output"] == "Paris"
    assert {k: v for k, v in second.items() if k not in ("input", "previous_response_id")} == {
        k: v for k, v in first.items() if k != "input"
    }


def test_without_chain_every_turn_carries_its_history(two_turns: WsServer) -> None:
    with _session(two_turns) as session:
        _loop(session)
        assert session.stats.chained_turns == 0
    second = two_turns.connections[0].messages[1]
    assert "previous_response_id" not in second
    assert [item.get("type", item.get("role")) for item in second["input"]] == [
        "user", "function_call", "function_call_output"
    ]


def test_a_lost_chain_is_sent_again_whole_on_the_same_socket() -> None:
    lost = error_event("previous_response_not_found", "Previous response with id 'resp_x' not found.")
    with WsServer([Turn(CALL), Turn([lost]), Turn(TEXT)]) as server, _session(server, chain=True) as session:
        result = _loop(session)
        assert result.text == "The capital of France is Paris."
        assert session.stats.chained_turns == 0
    assert len(server.connections) == 1
    _, chained, whole = server.connections[0].messages
    assert "previous_response_id" in chained and "previous_response_id" not in whole
    assert len(whole["input"]) == 3


def test_a_new_socket_starts_without_a_chain() -> None:
    with WsServer([Turn(CALL, cut_after=len(CALL), how="close", close_code=1001, cut_delay=0.05), Turn(TEXT)]) as server:
        with _session(server, chain=True) as session:
            service = _service(session)
            spec = ToolSpec(name="get_capital", description="capital", parameters={"type": "object", "properties": {}})
            options = _options(tools=(spec,))
            # the tool takes long enough for the server to close the idle socket
            def slow(**arguments: Any) -> str:
                time.sleep(0.3)
                return "Paris"

            result = run_tools(service, options, {"get_capital": slow}).result()
            assert result.text == "The capital of France is Paris."
            assert session.stats.chained_turns == 0 and session.stats.connects == 2
    assert "previous_response_id" not in server.connections[1].messages[0]


def test_only_an_exact_continuation_is_chained() -> None:
    from dshstream._transport.ws_chain import Chain, continuation

    call = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi"}]}
    thought = {"type": "reasoning", "id": "rs_1", "summary": []}
    chain = Chain(
        {"model": "m", "tools": [], "input": [{"role": "user", "content": "q"}]},
        "resp_1",
        [{**thought, "status": "completed"}, {**said, "id": "msg_1"}, {**call, "id": "fc_1", "status": "completed"}],
    )
    new = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    base = {"model": "m", "tools": [], "input": [{"role": "user", "content": "q"}, thought, said, call, new]}
    assert continuation(chain, base) == {"model": "m", "tools": [], "previous_response_id": "resp_1", "input": [new]}
    edited = {**base, "input": [{"role": "user", "content": "q"}, thought, {**said, "content": []}, call, new]}
    assert continuation(chain, edited) is None  # an edited assistant turn
    assert continuation(chain, {**base, "model": "other"}) is None  # another model
    assert continuation(chain, {**base, "input": base["input"][:4]}) is None  # nothing new
    assert continuation(chain, {**base, "input": [{"role": "user", "content": "Q"}, *base["input"][1:]]}) is None
    assert continuation(chain, {**base, "previous_response_id": "resp_0"}) is None  # the caller's own
    dropped = {**base, "input": [{"role": "user", "content": "q"}, said, call, new]}
    assert continuation(chain, dropped) is None  # the reasoning item was not replayed
