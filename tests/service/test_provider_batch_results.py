"""Provider batch result files read as they arrive: through the incremental JSONL row reader
piece by piece (rows handed on before the file has ended), at random split points, CRLF,
lines over their limit, lines that are not JSON and a half-written last line, each a failure
that the request left without a row reports; and a transport without ``get_stream``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream import LlmError, LlmService, OpenAIChatAdapter, AnthropicAdapter
from dshstream._batch.provider.anthropic_api import AnthropicBatchApi
from dshstream._batch.provider.api import ProviderBatchStatus, RowAnswer
from dshstream._batch.provider.calls import BatchCalls
from dshstream._batch.provider.openai_api import OpenAIBatchApi
from dshstream._batch.provider.runner import custom_id_of
from dshstream.batch import resume_batch
from dshstream.testing import MemoryAnswer, MemoryTransport
from helpers import fake_key, split_at
from service.provider_batch_server import _echo

KEY = fake_key("sk-proj-", 48)  # CANARY: built at run time, never a real key
OCTETS = {"content-type": "application/octet-stream"}
JSON = {"content-type": "application/json"}


def _openai_line(key: str) -> bytes:
    row = {"id": f"batch_req_{key}", "custom_id": custom_id_of(key), "error": None,
           "response": {"status_code": 200, "request_id": f"req-{key}", "body": _echo("chat", key)}}
    return json.dumps(row).encode("utf-8")


def _anthropic_line(key: str) -> bytes:
    row = {"custom_id": custom_id_of(key), "result": {"type": "succeeded", "message": _echo("anthropic", key)}}
    return json.dumps(row).encode("utf-8")


def _openai_api(body: bytes | list[Any], *, line_limit: int | None = None) -> tuple[OpenAIBatchApi, MemoryTransport]:
    transport = MemoryTransport(handler=lambda sent: MemoryAnswer(body, headers=OCTETS))
    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY, transport=transport)
    calls = BatchCalls(adapter, "openai") if line_limit is None else BatchCalls(adapter, "openai", line_limit=line_limit)
    return OpenAIBatchApi(calls), transport


COMPLETED = ProviderBatchStatus("batch_1", "completed", True, raw={"output_file_id": "file-out"})


def test_rows_are_handed_on_before_the_file_has_ended() -> None:
    """The file arrives in pieces and breaks off after its second row: both rows are read
    before the cut is (the old whole-file read would have given none)."""
    pieces: list[Any] = [_openai_line("a")[:20], _openai_line("a")[20:] + b"\n" + _openai_line("b"), b"\n",
                         ConnectionResetError()]
    api, transport = _openai_api(pieces)
    rows = api.results(COMPLETED)
    first, second = next(rows), next(rows)
    assert (first.custom_id, second.custom_id) == (custom_id_of("a"), custom_id_of("b"))
    assert first.body is not None and first.request_id == "req-a"
    with pytest.raises(LlmError) as caught:
        next(rows)
    assert caught.value.code == "TRANSPORT"
    assert [r.url for r in transport.requests] == ["http://127.0.0.1:1/v1/files/file-out/content"]
    assert transport.streams[0].closed


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2000), max_size=8), st.sampled_from([b"\n", b"\r\n"]))
def test_the_rows_do_not_depend_on_the_pieces_or_the_line_ends(cuts: list[int], end: bytes) -> None:
    data = end.join(_openai_line(key) for key in "abc") + end
    api, _ = _openai_api(split_at(data, cuts))
    rows = list(api.results(COMPLETED))
    assert [row.custom_id for row in rows] == [custom_id_of(key) for key in "abc"]
    assert all(row.body is not None and row.failure is None for row in rows)


def test_unreadable_lines_are_failures_and_the_readable_rows_stay() -> None:
    data = _openai_line("a") + b"\n" + b'{"custom_id": "' + b"x" * 5000 + b'"}\n' + b"garbage\n" + _openai_line("b") \
        + b"\n" + _openai_line("c")[:30]
    api, _ = _openai_api(data, line_limit=4096)
    rows = list(api.results(COMPLETED))
    assert [row.custom_id for row in rows] == [custom_id_of("a"), "", "", custom_id_of("b"), ""]
    messages = [row.failure.message for row in rows if row.failure is not None]
    assert messages == [
        "openai: line 2 of the batch's output_file is longer than 4096 bytes (the limit of one line) (MALFORMED_RESPONSE)",
        "openai: line 3 of the batch's output_file is not JSON (MALFORMED_RESPONSE)",
        "openai: the batch's output_file ends inside line 5 (a half-written last line of 30 bytes) (MALFORMED_RESPONSE)",
    ]


def _served(routes: dict[str, MemoryAnswer]) -> MemoryTransport:
    def answer(sent: Any) -> MemoryAnswer:
        for suffix, value in routes.items():
            if sent.url.endswith(suffix):
                return value
        raise AssertionError(sent.url)

    return MemoryTransport(handler=answer)


def test_a_request_whose_row_was_unreadable_says_which_line() -> None:
    """The batch ended; its output file has a's row, a line that is not JSON and a
    half-written last line (c's): b and c get a failure naming them, never a silent gap."""
    data = _openai_line("a") + b"\r\nnot json\r\n" + _openai_line("c")[:40]
    status = {"id": "batch_1", "status": "completed", "output_file_id": "file-out",
              "request_counts": {"total": 3, "completed": 3, "failed": 0}}
    transport = _served({"/batches/batch_1": MemoryAnswer.of_json(status),
                         "/files/file-out/content": MemoryAnswer(data, headers=OCTETS)})
    service = LlmService()
    service.register_adapter(["openai"], OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY,
                                                           transport=transport))
    handle = resume_batch("dsb1:openai=batch_1", [{"id": k, "prompt": k} for k in "abc"], service=service,
                          provider="openai", model="m")
    rows = list(handle.results(poll_interval=0.01))
    assert [row.ok for row in rows] == [True, False, False] and rows[0].text == "echo a"
    for row in rows[1:]:
        assert row.failure is not None and row.failure.code == "MALFORMED_RESPONSE"
        assert row.failure.message == (
            "openai: the batch results have no readable row for this request (line 2 of the batch's output_file "
            "is not JSON, and 1 more unreadable) (MALFORMED_RESPONSE)")


def test_anthropic_results_are_read_through_the_same_reader() -> None:
    data = _anthropic_line("a") + b"\r\n" + _anthropic_line("b")[:25]
    transport = MemoryTransport(handler=lambda sent: MemoryAnswer([data[:7], data[7:]], headers=OCTETS))
    adapter = AnthropicAdapter(base_url="http://127.0.0.1:1", api_key=KEY, transport=transport)
    api = AnthropicBatchApi(BatchCalls(adapter, "anthropic"))
    status = ProviderBatchStatus("msgbatch_1", "ended", True,
                                 raw={"results_url": "http://127.0.0.1:1/v1/messages/batches/msgbatch_1/results"})
    rows = list(api.results(status))
    assert rows[0] == RowAnswer(custom_id_of("a"), body=_echo("anthropic", "a"))
    assert rows[1].custom_id == "" and rows[1].failure is not None
    assert "the batch results ends inside line 2 (a half-written last line" in rows[1].failure.message


def test_the_result_bound_holds_while_streaming() -> None:
    data = b"".join(_openai_line(key) + b"\n" for key in "abcdef")
    transport = MemoryTransport(handler=lambda sent: MemoryAnswer([data[i:i + 100] for i in range(0, len(data), 100)],
                                                                  headers=OCTETS))
    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY, transport=transport)
    api = OpenAIBatchApi(BatchCalls(adapter, "openai", result_limit=len(data) - 1))
    rows = api.results(COMPLETED)
    with pytest.raises(LlmError) as caught:
        list(rows)
    assert caught.value.code == "MALFORMED_RESPONSE"
    assert f"larger than {len(data) - 1} bytes" in caught.value.failure.message
    assert transport.streams[0].closed


class _WholeBodies:
    """A transport written before ``get_stream``: the byte calls only."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner

    def open(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no stream is opened for a batch")

    def get_json(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.get_json(*args, **kwargs)

    def post_json(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.post_json(*args, **kwargs)

    def post_bytes(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.post_bytes(*args, **kwargs)

    def get_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        data: bytes = self.inner.get_bytes(*args, **kwargs)
        return data


def test_a_transport_without_get_stream_gives_the_whole_body_to_the_same_reader() -> None:
    lines = [_openai_line(str(i)) for i in range(200)]  # over one 64 KiB piece: the body is fed in pieces
    data = b"\n".join(lines) + b"\n"
    assert len(data) > 1 << 16
    inner = MemoryTransport(handler=lambda sent: MemoryAnswer(data, headers=OCTETS))
    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY,
                                transport=_WholeBodies(inner))  # type: ignore[arg-type]
    api = OpenAIBatchApi(BatchCalls(adapter, "openai"))
    rows = list(api.results(COMPLETED))
    assert [row.custom_id for row in rows] == [custom_id_of(str(i)) for i in range(200)]
    assert all(row.body is not None for row in rows)
