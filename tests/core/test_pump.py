"""The byte pump over a fake body: batching, the idle clock, release, cancel, EOF."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dshstream._core.decode import StreamDecoder, translator_for
from dshstream._core.errors import LlmError, error_for, make_failure
from dshstream._core.pump import pump
from dshstream._core.types import Finish, TextDelta


def event(text: str) -> bytes:
    return b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"%s"}}]}\n\n' % text.encode()


END = b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'


class FakeBody:
    def __init__(self, pieces: list[bytes], cancel_after: int | None = None, cancel: threading.Event | None = None):
        self.pieces = pieces
        self.log: list[str] = []
        self.cancel_after = cancel_after
        self.cancel = cancel
        self.aborted: str | None = None

    def __iter__(self) -> Iterator[bytes]:
        for n, piece in enumerate(self.pieces):
            self.log.append("read")
            if self.cancel is not None and self.cancel_after == n:
                self.cancel.set()
            yield piece

    def touch(self) -> None:
        self.log.append("touch")

    def quiet(self, working: bool) -> None:
        self.log.append(f"quiet={working}")

    def release(self) -> None:
        self.log.append("release")

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        self.aborted = code

    def raise_if_aborted(self) -> None:
        if self.aborted:
            raise error_for(make_failure(self.aborted, "aborted"))


def decoder() -> StreamDecoder:
    return StreamDecoder(translator_for("openai-chat", provider="p"))


def test_one_list_per_productive_read_and_release_before_the_last() -> None:
    body = FakeBody([event("a"), b": keep-alive\n\n", event("b")[:10], event("b")[10:], END])
    batches = []
    for batch in pump(body, decoder(), cancel=None, provider="p"):
        batches.append(batch)
        body.log.append("yield")
    texts = [c.text for batch in batches for c in batch if isinstance(c, TextDelta)]
    assert texts == ["a", "b"]
    assert isinstance(batches[-1][-1], Finish)
    # keep-alives and half events are no content: no touch, no batch
    assert body.log == ["read", "touch", "yield", "read", "read", "read", "touch", "yield",
                        "read", "touch", "release", "yield"]


def test_cancel_between_reads_aborts() -> None:
    cancel = threading.Event()
    body = FakeBody([event("a"), event("b"), END], cancel_after=1, cancel=cancel)
    seen = []
    with pytest.raises(LlmError) as caught:
        for batch in pump(body, decoder(), cancel=cancel, provider="p"):
            seen.extend(batch)
    assert caught.value.failure.code == "ABORTED"
    assert [c.text for c in seen if isinstance(c, TextDelta)] == ["a", "b"]


def test_eof_before_the_terminal_marker_is_stream_closed() -> None:
    body = FakeBody([event("a")])
    chunks = [c for batch in pump(body, decoder(), cancel=None, provider="p") for c in batch]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"
    assert "release" not in body.log


def test_a_quiet_phase_is_handed_to_the_body_and_the_finish_carries_the_longest_silence() -> None:
    # Anthropic: a tool_use block is a quiet phase from its start to its stop (translator rule 6)
    def event(data: str) -> bytes:
        return f"data: {data}\n\n".encode()

    pieces = [
        event('{"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}'),
        event('{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}'),
        event('{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}'),
        event('{"type":"content_block_stop","index":0}'),
        event('{"type":"message_stop"}'),
    ]
    body = FakeBody(pieces)
    body.longest_silence = 1.25  # type: ignore[attr-defined]
    chunks = [c for batch in pump(body, StreamDecoder(translator_for("anthropic")), cancel=None, provider="p") for c in batch]
    assert [entry for entry in body.log if entry.startswith("quiet")] == ["quiet=True", "quiet=False"]
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.metadata is not None and finish.metadata.longest_silence == 1.25
