"""ReplayServer (dshstream/_replay_server.py), the loopback server every HTTP test uses:
routes and the longest prefix, route sequences, chunked and close-delimited bodies, one
event per write or fixed pieces, pauses and scripts, the requests it records, that it
binds 127.0.0.1 only and that it stops in milliseconds.

Requests go out on raw sockets, so the framing on the wire is what is asserted.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Sequence

import pytest
from helpers import fixture_bytes

from dshstream._replay_server import RecordedRequest, ReplayServer, Route

EVENTS = [b'data: {"n":1}\n\n', b'data: {"n":2}\n\n', b"data: [DONE]\n\n"]
BODY = b"".join(EVENTS)


def port_of(server: ReplayServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def exchange(server: ReplayServer, path: str = "/v1/x", body: bytes | None = b"{}", method: str = "POST",
             headers: str = "") -> bytes:
    """One request with ``Connection: close``; everything the server sent, to EOF."""
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as conn:
        length = f"Content-Length: {len(body)}\r\n" if body is not None else ""
        head = f"{method} {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n{length}{headers}\r\n"
        conn.sendall(head.encode() + (body or b""))
        data = b""
        while piece := conn.recv(65536):
            data += piece
    return data


def split_response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, payload = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), fields, payload


def dechunk(payload: bytes) -> list[bytes]:
    """The chunks of a chunked body, the terminating empty one excluded; the body must end
    right after it."""
    chunks: list[bytes] = []
    while True:
        size_line, _, payload = payload.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            assert payload == b"\r\n"
            return chunks
        chunks.append(payload[:size])
        assert payload[size : size + 2] == b"\r\n"
        payload = payload[size + 2 :]


def post(server: ReplayServer, path: str = "/v1/x") -> list[bytes]:
    status, fields, payload = split_response(exchange(server, path))
    assert status == 200 and fields["transfer-encoding"] == "chunked"
    return dechunk(payload)


# --------------------------------------------------------------------------- binding and stopping


def test_binds_the_loopback_interface_only(server: ReplayServer) -> None:
    assert server.url == f"http://127.0.0.1:{port_of(server)}"
    assert server._server.socket.getsockname()[0] == "127.0.0.1"
    assert server._server.socket.family == socket.AF_INET


def test_a_chosen_port() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ReplayServer({"/": BODY}, port=port) as srv:
        assert srv.url == f"http://127.0.0.1:{port}"
        assert b"".join(post(srv)) == BODY


def test_stops_fast_even_with_a_client_mid_stream() -> None:
    srv = ReplayServer({"/": Route(body=b"", script=[EVENTS[0], 30.0, EVENTS[1]])}).start()
    client = socket.create_connection(("127.0.0.1", port_of(srv)), timeout=5)
    try:
        client.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        data = b""
        while b'{"n":1}' not in data:  # then the handler sleeps
            data += client.recv(65536)
        started = time.monotonic()
        srv.stop()
        assert time.monotonic() - started < 1.0
    finally:
        client.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port_of(srv)), timeout=1).close()


def test_start_and_stop_without_a_context_manager() -> None:
    started = time.monotonic()
    srv = ReplayServer({"/": BODY}).start()
    assert b"".join(post(srv)) == BODY
    srv.stop()
    assert time.monotonic() - started < 1.0


# --------------------------------------------------------------------------- routes


def test_no_route_is_404_and_still_recorded(server: ReplayServer) -> None:
    status, _, _ = split_response(exchange(server, "/nothing"))
    assert status == 404
    assert [r.path for r in server.requests] == ["/nothing"]


def test_the_longest_matching_prefix_wins(server: ReplayServer) -> None:
    server.add("/", b"data: root\n\n")
    server.add("/v1/", b"data: v1\n\n")
    server.add("/v1/models", b"data: models\n\n")
    assert post(server, "/v1/chat/completions") == [b"data: v1\n\n"]
    assert post(server, "/v1/models") == [b"data: models\n\n"]
    assert post(server, "/v1/modelsX") == [b"data: models\n\n"]  # a string prefix, not a path segment
    assert post(server, "/v2/x") == [b"data: root\n\n"]
    assert server.route_for("/v1/models?x=1") == Route(body=b"data: models\n\n")


def test_a_route_sequence_is_served_in_order_and_its_last_repeats(server: ReplayServer) -> None:
    server.add("/a", [Route(body=b"data: 1\n\n"), Route(body=b"data: 2\n\n")])
    server.add("/b", b"data: b\n\n")
    assert post(server, "/a") == [b"data: 1\n\n"]
    assert post(server, "/b") == [b"data: b\n\n"]  # each prefix counts on its own
    assert post(server, "/a") == [b"data: 2\n\n"]
    assert post(server, "/a") == [b"data: 2\n\n"]
    server.add("/a", [Route(body=b"data: 3\n\n"), Route(body=b"data: 4\n\n")])  # replaced: starts over
    assert post(server, "/a") == [b"data: 3\n\n"]


def test_routes_given_to_the_constructor() -> None:
    routes: dict[str, Route | bytes | Sequence[Route]] = {"/bytes": BODY, "/route": Route(body=EVENTS[0]), "/seq": [Route(body=EVENTS[1])]}
    with ReplayServer(routes) as srv:
        assert b"".join(post(srv, "/bytes")) == BODY
        assert post(srv, "/route") == [EVENTS[0]]
        assert post(srv, "/seq") == [EVENTS[1]]


def test_status_content_type_and_headers(server: ReplayServer) -> None:
    error = b'{"error":{"message":"slow down"}}'
    server.add("/", Route(body=error, status=429, content_type="application/json",
                          headers={"Retry-After": "2", "x-request-id": "req_1"}))
    status, fields, payload = split_response(exchange(server))
    assert status == 429
    assert fields["content-type"] == "application/json"
    assert (fields["retry-after"], fields["x-request-id"]) == ("2", "req_1")
    assert dechunk(payload) == [error]


# --------------------------------------------------------------------------- framing


def test_chunked_writes_one_event_per_chunk(server: ReplayServer) -> None:
    server.add("/", BODY)
    status, fields, payload = split_response(exchange(server))
    assert status == 200 and fields["content-type"] == "text/event-stream"
    assert "content-length" not in fields
    assert dechunk(payload) == EVENTS


def test_crlf_framed_events_are_split_too(server: ReplayServer) -> None:
    data = fixture_bytes("gemini/text.sse")
    server.add("/", data)
    chunks = post(server)
    assert b"".join(chunks) == data and len(chunks) == data.count(b"\r\n\r\n")
    assert all(chunk.endswith(b"\r\n\r\n") for chunk in chunks)


def test_fixed_size_pieces(server: ReplayServer) -> None:
    server.add("/", Route(body=BODY, piece_size=7))
    chunks = post(server)
    assert chunks == [BODY[i : i + 7] for i in range(0, len(BODY), 7)]


def test_an_unterminated_last_event_is_still_sent(server: ReplayServer) -> None:
    server.add("/", EVENTS[0] + b"data: cut")
    assert post(server) == [EVENTS[0], b"data: cut"]


def test_close_delimited_body(server: ReplayServer) -> None:
    server.add("/", Route(body=BODY, chunked=False))
    status, fields, payload = split_response(exchange(server))
    assert status == 200
    assert fields["connection"] == "close"
    assert "transfer-encoding" not in fields and "content-length" not in fields
    assert payload == BODY


def test_close_delimited_closes_even_a_keep_alive_connection(server: ReplayServer) -> None:
    server.add("/", Route(body=BODY, chunked=False))
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        data = b""
        while piece := conn.recv(65536):  # ends: the server closed the connection
            data += piece
    assert data.endswith(BODY)


def test_chunked_keeps_the_connection_for_the_next_request(server: ReplayServer) -> None:
    server.add("/", BODY)
    request = b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as conn:
        for _ in range(2):
            conn.sendall(request)
            data = b""
            while not data.endswith(b"0\r\n\r\n"):
                data += conn.recv(65536)
            assert dechunk(split_response(data)[2]) == EVENTS
    assert server.connections == 1 and len(server.requests) == 2


# --------------------------------------------------------------------------- pauses and scripts


def _arrivals(server: ReplayServer) -> list[tuple[float, bytes]]:
    """(seconds since the request, bytes) for each receive."""
    out = []
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
        started = time.monotonic()
        while piece := conn.recv(65536):
            out.append((time.monotonic() - started, piece))
    return out


def _time_of(arrivals: list[tuple[float, bytes]], marker: bytes) -> float:
    data = b""
    for at, piece in arrivals:
        data += piece
        if marker in data:
            return at
    raise AssertionError(f"{marker!r} never arrived")


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
def test_pause_after_the_first_event(server: ReplayServer, chunked: bool) -> None:
    server.add("/", Route(body=BODY, chunked=chunked, pause_after_first=0.3))
    arrivals = _arrivals(server)
    first, second = _time_of(arrivals, b'{"n":1}'), _time_of(arrivals, b'{"n":2}')
    assert first < 0.25  # flushed before the pause, not held back with the rest
    assert second - first >= 0.25


def test_a_script_of_bytes_and_pauses(server: ReplayServer) -> None:
    server.add("/", Route(body=b"ignored", script=[EVENTS[0], 0.3, b"", EVENTS[1], EVENTS[2]]))
    arrivals = _arrivals(server)
    first, second = _time_of(arrivals, b'{"n":1}'), _time_of(arrivals, b'{"n":2}')
    assert first < 0.25 and second - first >= 0.25
    payload = split_response(b"".join(piece for _, piece in arrivals))[2]
    assert dechunk(payload) == EVENTS  # the empty step sent no chunk (it would end the body)


def test_a_client_that_hangs_up_is_counted(server: ReplayServer) -> None:
    script: list[bytes | float] = [EVENTS[0], 0.1, *(step for _ in range(100) for step in (EVENTS[1], 0.02))]
    server.add("/", Route(body=b"", script=script))
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=5) as conn:
        conn.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        assert conn.recv(65536)
    deadline = time.monotonic() + 5
    while server.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.disconnects == 1


# --------------------------------------------------------------------------- recorded requests


def test_requests_are_recorded(server: ReplayServer) -> None:
    server.add("/", BODY)
    body = json.dumps({"model": "m", "stream": True}).encode()
    exchange(server, "/v1/chat/completions?x=1", body, headers="Authorization: Bearer k-1\r\nX-Custom: Yes\r\n")
    exchange(server, "/v1/raw", b"not json \xff")
    exchange(server, "/v1/empty", None)
    exchange(server, "/v1/models", None, method="GET")
    first, raw, empty, get = server.requests
    assert isinstance(first, RecordedRequest)
    assert (first.method, first.path, first.body) == ("POST", "/v1/chat/completions?x=1", {"model": "m", "stream": True})
    assert first.headers["authorization"] == "Bearer k-1" and first.headers["x-custom"] == "Yes"
    assert all(name == name.lower() for name in first.headers)
    assert raw.body == "not json \ufffd"  # not JSON: kept as text
    assert (empty.method, empty.body) == ("POST", None)
    assert (get.method, get.path, get.body) == ("GET", "/v1/models", None)
