"""post_bytes, get_bytes and get_stream, the calls a provider batch adds to the transport (a
multipart upload, a result file whole or as it arrives), on MemoryTransport and over
loopback HTTP; and the batch calls' credential refresh."""

from __future__ import annotations

import pytest

from dshstream import ConfigurationError, LlmError, LlmService, OpenAIChatAdapter
from dshstream._batch.provider.calls import BatchCalls
from dshstream.batch import submit_batch
from dshstream._transport import HttpTransport, MemoryAnswer, MemoryTransport
from helpers import fake_key
from service.provider_batch_server import BatchApiServer

KEY = fake_key("sk-proj-", 48)
JSON = {"content-type": "application/json"}


def test_get_bytes_returns_the_body_within_its_bound() -> None:
    transport = MemoryTransport(MemoryAnswer([b"line one\n", b"line two\n"], headers={"content-type": "application/octet-stream"}))
    assert transport.get_bytes("http://127.0.0.1:1/f", {}, provider="p", limit=18) == b"line one\nline two\n"
    with pytest.raises(LlmError) as caught:
        transport.get_bytes("http://127.0.0.1:1/f", {}, provider="p", limit=17)
    assert caught.value.code == "MALFORMED_RESPONSE" and "larger than 17 bytes" in caught.value.failure.message


def test_get_bytes_is_tried_once_more_after_a_transport_failure() -> None:
    transport = MemoryTransport(MemoryAnswer(fail=ConnectionResetError()), MemoryAnswer(b"ok", headers={}))
    assert transport.get_bytes("http://127.0.0.1:1/f", {}, provider="p") == b"ok"
    assert [r.method for r in transport.requests] == ["GET", "GET"]


def test_post_bytes_sends_the_body_with_its_type_and_classifies_a_refusal() -> None:
    transport = MemoryTransport(
        MemoryAnswer(b'{"id": "file-1"}', headers=JSON),
        MemoryAnswer(b'{"error": {"message": "bad key ' + KEY.encode() + b'"}}', status=401, headers=JSON),
    )
    answer = transport.post_bytes("http://127.0.0.1:1/files", b"--b\r\n", "multipart/form-data; boundary=b",
                                  {"authorization": f"Bearer {KEY}", "content-type": "application/json"}, provider="p")
    assert answer == {"id": "file-1"}
    sent = transport.requests[0]
    assert sent.method == "POST" and sent.data == b"--b\r\n"
    assert sent.headers["content-type"] == "multipart/form-data; boundary=b"  # the caller's JSON type replaced
    with pytest.raises(LlmError) as caught:
        transport.post_bytes("http://127.0.0.1:1/files", b"", "text/plain", provider="p", secrets=(KEY,))
    assert caught.value.code == "AUTH" and KEY not in str(caught.value.failure)


def test_both_calls_over_loopback_http() -> None:
    with BatchApiServer() as server:
        transport = HttpTransport()
        made = transport.post_bytes(f"{server.url}/v1/files", b'--x\r\nContent-Disposition: form-data; name="purpose"'
                                    b'\r\n\r\nbatch\r\n--x\r\nContent-Disposition: form-data; name="file"; '
                                    b'filename="a.jsonl"\r\n\r\n{}\n\r\n--x--\r\n', "multipart/form-data; boundary=x",
                                    provider="p")
        assert made["purpose"] == "batch"
        assert transport.get_bytes(f"{server.url}/v1/files/{made['id']}/content", {}, provider="p") == b"{}\n"


def test_a_rejected_callable_key_is_fetched_again_once() -> None:
    keys = iter([fake_key("sk-proj-", 48, seed=1), KEY])
    transport = MemoryTransport(
        MemoryAnswer(b'{"error": {"message": "invalid api key"}}', status=401, headers=JSON),
        MemoryAnswer(b'{"id": "batch_1"}', headers=JSON),
    )
    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=lambda: next(keys), transport=transport)
    calls = BatchCalls(adapter, "openai")
    assert calls.get_json("http://127.0.0.1:1/v1/batches/batch_1") == {"id": "batch_1"}
    assert [r.headers["authorization"] for r in transport.requests] == [
        f"Bearer {fake_key('sk-proj-', 48, seed=1)}", f"Bearer {KEY}"]


def test_a_transport_without_the_byte_calls_is_refused() -> None:
    class Streams:  # a transport of before: streams and model lists only
        def open(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("never sent")

        def get_json(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("never sent")

    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY, transport=Streams())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="no post_json"):
        BatchCalls(adapter, "openai")
    service = LlmService()
    service.register_adapter(["openai"], adapter)
    with pytest.raises(ConfigurationError, match="no post_json"):
        submit_batch([{"prompt": "x"}], service=service, provider="openai", model="m")


def test_get_stream_hands_the_open_answer_on_and_is_tried_once_more() -> None:
    transport = MemoryTransport(MemoryAnswer(fail=ConnectionResetError()),
                                MemoryAnswer([b"one\n", b"two\n"], headers={"content-type": "application/jsonl"}))
    stream = transport.get_stream("http://127.0.0.1:1/f", {}, provider="p")
    try:  # a JSON Lines label is not judged as a JSON document: the caller reads the body
        assert list(stream) == [b"one\n", b"two\n"]
    finally:
        stream.close()
    assert [r.method for r in transport.requests] == ["GET", "GET"]
    refused = MemoryTransport(MemoryAnswer(b'{"error": {"message": "no such file"}}', status=404, headers=JSON))
    with pytest.raises(LlmError) as caught:
        refused.get_stream("http://127.0.0.1:1/f", {}, provider="p")
    assert caught.value.failure.status == 404 and caught.value.code == "HTTP_404"


def test_get_stream_over_loopback_http() -> None:
    with BatchApiServer() as server:
        transport = HttpTransport()
        made = transport.post_bytes(f"{server.url}/v1/files", b'--x\r\nContent-Disposition: form-data; name="purpose"'
                                    b'\r\n\r\nbatch\r\n--x\r\nContent-Disposition: form-data; name="file"; '
                                    b'filename="a.jsonl"\r\n\r\n{"a": 1}\n{"b": 2}\n\r\n--x--\r\n',
                                    "multipart/form-data; boundary=x", provider="p")
        with transport.get_stream(f"{server.url}/v1/files/{made['id']}/content", {}, provider="p") as stream:
            assert b"".join(stream) == b'{"a": 1}\n{"b": 2}\n'
