"""dshstream._core.wires.translator and .writer: the ending protocol every wire shares —
one failure path with one back-fill rule, one replay hook asked once whichever way the
stream ends."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dshstream._core.decode import decode
from dshstream._core.sse import ServerSentEvent
from dshstream._core.strict_json import loads_event
from dshstream._core.types import Finish, LlmFailure, StreamChunk
from dshstream._core.wires.translator import Translator
from dshstream._core.wires.writer import ChunkWriter


def sse(*payloads: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return b"".join(head + b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads)


def finish_of(chunks: list[StreamChunk]) -> Finish:
    last = chunks[-1]
    assert isinstance(last, Finish)
    return last


def failure_of(chunks: list[StreamChunk]) -> LlmFailure:
    failure = finish_of(chunks).reason.failure
    assert failure is not None
    return failure


# A stream that has set its serving provider (where the wire has one), then an in-band
# error whose payload names neither a serving provider nor a request id.
ERROR_STREAMS = {
    "openai-chat": sse(
        {"id": "c1", "provider": "Upstream", "choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"error": {"message": "upstream exploded", "code": 500}},
    ),
    "anthropic": sse(
        {"type": "message_start", "message": {"id": "m1", "model": "claude"}},
        {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}},
    ),
    "gemini": sse(
        {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
        {"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}},
    ),
    "openai-responses": sse(
        {"type": "response.created", "response": {"id": "r1", "provider": "Upstream"}},
        {"type": "error", "code": "server_error", "message": "boom"},
    ),
}


@pytest.mark.parametrize("wire", sorted(ERROR_STREAMS))
def test_every_wire_back_fills_request_id_and_serving_provider_alike(wire: str) -> None:
    chunks = list(decode(ERROR_STREAMS[wire], wire=wire, request_id="req-7"))
    failure = failure_of(chunks)
    assert failure.request_id == "req-7"
    served = "Upstream" if wire in ("openai-chat", "openai-responses") else None
    assert failure.serving_provider == served
    assert failure.provider == {"openai-chat": "openai"}.get(wire, wire)


def test_forced_error_codes_apply_whatever_the_wording() -> None:
    data = sse({"type": "error", "error": {"type": "overloaded_error", "message": "bad request?"}})
    failure = failure_of(list(decode(data, wire="anthropic")))
    assert (failure.code, failure.category) == ("OVERLOADED", "provider_overloaded")
    assert failure.retryable
    assert failure.message == "anthropic: overloaded (OVERLOADED)"


class Echo(Translator):
    """A minimal wire: ``text`` events are text, ``done`` the terminal marker, ``error``
    an in-band error; it counts the hooks the base calls."""

    wire = "echo"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.flushes: list[bool] = []
        self.replays = 0

    def on_event(self, event: ServerSentEvent) -> None:
        if event.data == "done":
            self.complete()
        elif event.event == "error":
            self.fail_with(loads_event(event.data))
        else:
            self.writer.text("t", event.data)

    def flush(self, *, cut: bool) -> None:
        self.flushes.append(cut)

    def replay_state(self) -> Any:
        self.replays += 1
        return {"wire": "echo", "n": self.replays}


def feed(translator: Translator, *events: tuple[str, str]) -> list[StreamChunk]:
    out: list[StreamChunk] = []
    for name, data in events:
        out += translator.feed(ServerSentEvent(event=name, data=data, id=None, retry=None))
    return out + translator.close()


@pytest.mark.parametrize(
    ("events", "flushes", "kind", "code"),
    [
        ([("message", "hi"), ("message", "done")], [False], "stop", None),
        ([("message", "hi"), ("error", '{"error": {"message": "x"}}')], [True], "error", "UNKNOWN"),
        ([("message", "hi")], [True], "error", "STREAM_CLOSED"),
    ],
)
def test_each_ending_flushes_once_and_asks_for_replay_once(
    events: list[tuple[str, str]], flushes: list[bool], kind: str, code: str | None
) -> None:
    echo = Echo(request_id="r")
    finish = finish_of(feed(echo, *events))
    assert echo.flushes == flushes
    assert echo.replays == 1 and finish.replay_state == {"wire": "echo", "n": 1}
    assert finish.reason.kind == kind
    assert (finish.reason.failure.code if finish.reason.failure else None) == code


def test_end_of_input_after_a_finish_reason_completes_without_cut() -> None:
    echo = Echo()
    echo.feed(ServerSentEvent(event="message", data="hi", id=None, retry=None))
    echo.writer.set_finish("stop", "end")
    finish = finish_of(echo.close())
    assert echo.flushes == [False] and finish.reason.kind == "stop"


def test_malformed_payload_is_malformed_response() -> None:
    # In band (translator rule 3): the stream ends with the failure, nothing raises.
    echo = Echo()
    chunks = feed(echo, ("message", "hi"), ("error", "{nope"))
    failure = finish_of(chunks).reason.failure
    assert failure is not None and failure.code == "MALFORMED_RESPONSE"
    assert [type(c).__name__ for c in chunks].count("TextDelta") == 1 and echo.done


def test_writer_identify_first_id_latest_model() -> None:
    writer = ChunkWriter(provider="p")
    writer.identify("id-1", "m-1", "S1")
    writer.identify("id-2", "m-2", "S2")
    writer.identify(7, "", None)
    assert (writer.response_id, writer.model, writer.serving_provider) == ("id-1", "m-2", "S1")


def test_writer_stop_failure_code() -> None:
    failure = ChunkWriter(provider="p").stop_failure("weird-reason!")
    assert failure.code == "WEIRD_REASON_" and failure.message == "p: model stopped: weird_reason_"


def test_writer_state_open_finishing_finished() -> None:
    """The writer's rule 2: a finish reason makes it ``finishing`` (EOF then completes),
    the Finish chunk ``finished``, which is final: later endings and reasons change nothing."""
    writer = ChunkWriter(provider="p")

    def state() -> str:  # read through calls: mypy would narrow the attributes across steps
        return writer.state

    def finished() -> bool:
        return writer.finished

    assert state() == "open" and not finished()
    writer.text("t", "hi")
    writer.set_finish("stop", "end")
    assert state() == "finishing" and not finished()
    writer.set_finish("max-tokens", "length")  # last one wins; still finishing
    assert state() == "finishing"
    writer.cut()
    assert state() == "finished" and finished()
    chunks = writer.take()
    assert finish_of(chunks).reason.kind == "max-tokens"
    writer.complete()
    writer.fail(writer.failure("SERVER", "p: late"))
    writer.cut()
    writer.set_finish("stop")
    assert writer.state == "finished" and writer.take() == []


def test_writer_cut_while_open_is_stream_closed_and_final() -> None:
    writer = ChunkWriter(provider="p")
    writer.cut()
    assert writer.state == "finished"
    assert failure_of(writer.take()).code == "STREAM_CLOSED"


def test_a_translator_feeds_nothing_once_its_writer_is_finished() -> None:
    echo = Echo()
    chunks = feed(echo, ("message", "hi"), ("message", "done"), ("message", "late"))
    assert echo.done and echo.writer.state == "finished"
    assert [type(c).__name__ for c in chunks].count("TextDelta") == 1


def test_a_finish_word_that_echoes_a_key_is_neither_the_raw_word_nor_the_code() -> None:
    # A proxy that echoes the key into finish_reason: the code would be its upper-cased
    # form, which no redaction of the exact key finds.
    from dshstream._core.redact import register_secret, unregister_secret
    from dshstream._core.wires.writer import ChunkWriter

    key = "gw-echo-secret-0123456789abcdef"
    register_secret(key)
    try:
        writer = ChunkWriter(provider="proxy")
        writer.text(0, "hi")
        failure = writer.stop_failure(f"stop_{key}")
        writer.set_finish("error", raw=f"stop_{key}", failure=failure)
        writer.complete()
        finish = writer.take()[-1]
        assert isinstance(finish, Finish)
        assert finish.reason.raw is None
        assert finish.reason.failure is not None and finish.reason.failure.code == "UNKNOWN"
        assert key.upper().replace("-", "_") not in repr(finish) and key not in repr(finish)
    finally:
        unregister_secret(key)
    plain = ChunkWriter(provider="p").stop_failure("recitation")
    assert plain.code == "RECITATION"
