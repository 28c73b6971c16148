"""Resumption (dshstream/_adapters/resumption.py, pump rule 7, issue 28 part 2): a
resumable Responses stream cut after content is continued from the stored response —
``GET /responses/{id}?stream=true&starting_after=N`` — instead of being resent; past its
streaming window the response is polled; an unfinished end carries a resume cursor that
``LlmService.resume`` continues; a stream left unfinished is cancelled.

The provider is a loopback imitation of background mode (a ``MemoryTransport`` handler,
and once the real HTTP path over ``ReplayServer``). Recorded streams used for the cut
points are the ones whose events carry ``sequence_number`` as recorded (no field added).
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import pytest
from helpers import SkippedSleeps, fixture_bytes

from dshstream._adapters import resumption

from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._adapters.azure import AzureOpenAIResponsesAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter
from dshstream._core.assembler import assemble
from dshstream._core.decode import StreamDecoder
from dshstream._core.wires.openai_responses import OpenAIResponsesTranslator
from dshstream._core.errors import ConfigurationError
from dshstream._core.request import GenerateOptions, Message
from dshstream._core.types import Finish, StreamChunk
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
from dshstream._transport.memory import MemoryAnswer, MemoryTransport, SentRequest

KEY = "sk-test-resume-0123456789"
PROVIDER = "openai-responses"
#: recorded Responses streams whose events carry sequence_number
SEQUENCED = [
    "openai-responses/text_single_delta_gpt55.sse",
    "openai-responses/function_call_gpt55.sse",
    "openai-responses/text_after_function_results.sse",
    "openai-responses/reasoning_item_then_function_call_gpt5.sse",
]


def events_of(relative: str) -> list[bytes]:
    data = fixture_bytes(relative).replace(b"\r\n", b"\n")
    return [part + b"\n\n" for part in data.split(b"\n\n") if part.strip()]


def sequence(event: bytes) -> int:
    found = re.search(rb'"sequence_number":\s*(\d+)', event)
    assert found is not None
    return int(found.group(1))


def response_id(events: list[bytes]) -> str:
    found = re.search(rb'"id":"(resp_[^"]+)"', b"".join(events))
    assert found is not None
    return found.group(1).decode()


class Background:
    """A loopback Responses background mode: the POST stream cut after ``cut`` events, GET
    continuations (from 0 when ``replay_from_zero``; expired after ``expire_after`` GETs),
    the stored response for polls, cancels recorded."""

    def __init__(
        self,
        events: list[bytes],
        cut: int,
        *,
        replay_from_zero: bool = False,
        cut_again: int | None = None,
        expire: bool = False,
        final: dict[str, Any] | None = None,
        polls_queued: int = 0,
    ) -> None:
        self.events = events
        self.cut = cut
        self.replay_from_zero = replay_from_zero
        self.cut_again = cut_again
        self.expire = expire
        self.final = final
        self.polls_queued = polls_queued
        self.gets: list[int] = []
        self.cancels = 0
        self.polls = 0
        self.transport = MemoryTransport(handler=self.handle)

    def handle(self, sent: SentRequest) -> MemoryAnswer | bytes:
        url = sent.url
        if sent.method == "POST" and url.endswith("/cancel"):
            self.cancels += 1
            return MemoryAnswer.of_json({"status": "cancelled"})
        if sent.method == "POST":
            return MemoryAnswer(self.events[: self.cut])
        if "stream=true" in url:
            after = int(re.search(r"starting_after=(-?\d+)", url).group(1))  # type: ignore[union-attr]
            self.gets.append(after)
            if self.expire:
                return MemoryAnswer.of_json(
                    {"error": {"message": "Response can no longer be streamed (too old).", "type": "invalid_request_error"}},
                    status=400,
                )
            rest = [e for e in self.events if self.replay_from_zero or sequence(e) > after]
            if self.cut_again is not None and len(self.gets) == 1:
                rest = rest[: self.cut_again]
            return MemoryAnswer(rest)
        self.polls += 1
        if self.polls <= self.polls_queued:
            return MemoryAnswer.of_json({"id": "r", "status": "queued", "output": []})
        return MemoryAnswer.of_json(self.final)


def adapter(transport: MemoryTransport, **settings: Any) -> OpenAIResponsesAdapter:
    return OpenAIResponsesAdapter(api_key=KEY, key_env=None, transport=transport, max_retries=0, **settings)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> SkippedSleeps:
    """Resumption's backoffs recorded, not slept (its rules 1 and 2)."""
    skipped = SkippedSleeps()
    monkeypatch.setattr(resumption, "time", skipped)
    return skipped


def options(**extra: Any) -> GenerateOptions:
    return GenerateOptions(provider=PROVIDER, model="gpt-5", messages=(Message.user("hi"),), resumable=True, **extra)


def uncut(relative: str) -> list[StreamChunk]:
    events = events_of(relative)
    server = Background(events, len(events))
    return list(adapter(server.transport).stream(options()))


@pytest.mark.parametrize("relative", SEQUENCED)
def test_every_cut_point_delivers_the_uncut_stream_once(relative: str) -> None:
    events = events_of(relative)
    expected = uncut(relative)
    assert type(expected[-1]) is Finish and expected[-1].reason.failure is None
    for cut in range(1, len(events)):
        for from_zero in (False, True):
            server = Background(events, cut, replay_from_zero=from_zero)
            got = list(adapter(server.transport).stream(options()))
            assert got == expected, (cut, from_zero)
            assert server.gets == [sequence(events[cut - 1])]
            assert assemble(got) == assemble(expected)
            assert server.cancels == 0
            posts = [r for r in server.transport.requests if r.method == "POST"]
            assert len(posts) == 1  # never resent (attempts rule 3)


def test_request_is_background_and_stored_only_when_resumable() -> None:
    events = events_of(SEQUENCED[0])
    server = Background(events, len(events))
    list(adapter(server.transport).stream(options()))
    body = server.transport.requests[0].json()
    assert body["background"] is True and body["store"] is True
    server = Background(events, len(events))
    list(adapter(server.transport).stream(GenerateOptions(provider=PROVIDER, model="m", messages=(Message.user("hi"),))))
    body = server.transport.requests[0].json()
    assert "background" not in body and body["store"] is False


def test_resumable_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="GenerateOptions.resumable"):
        GenerateOptions(provider="p", model="m", messages=(), resumable="yes")  # type: ignore[arg-type]


def test_a_cut_continuation_is_resumed_again() -> None:
    relative = SEQUENCED[3]
    events = events_of(relative)
    server = Background(events, 3, cut_again=4)
    got = list(adapter(server.transport).stream(options()))
    assert got == uncut(relative)
    assert len(server.gets) == 2 and server.gets[1] == sequence(events[3 + 4 - 1])


def test_expired_stream_is_polled_to_its_final_response(sleeps: SkippedSleeps) -> None:
    relative = SEQUENCED[2]
    events = events_of(relative)
    completed = json.loads(events[-1].split(b"data: ", 1)[1])
    server = Background(events, 4, expire=True, final=completed["response"], polls_queued=2)
    got = list(adapter(server.transport).stream(options()))
    assert server.polls == 3
    assert sleeps.slept == [0.5, 1.0]  # a poll backoff after each queued answer
    assert assemble(got).text == assemble(uncut(relative)).text
    assert type(got[-1]) is Finish and got[-1].reason.kind == uncut(relative)[-1].reason.kind  # type: ignore[union-attr]


def test_queued_response_cut_at_its_first_event_is_polled(sleeps: SkippedSleeps) -> None:
    relative = SEQUENCED[0]
    events = events_of(relative)
    completed = json.loads(events[-1].split(b"data: ", 1)[1])
    server = Background(events, 1, expire=True, final=completed["response"], polls_queued=3)
    result = assemble(list(adapter(server.transport).stream(options())))
    assert result.text == assemble(uncut(relative)).text and result.finish.failure is None
    assert server.polls == 4 and sleeps.slept == [0.5, 1.0, 2.0]  # doubling, one per queued answer


def test_unresumable_end_carries_a_cursor_that_service_resume_continues(sleeps: SkippedSleeps) -> None:
    relative = SEQUENCED[1]
    events = events_of(relative)
    cut = 5
    dead = MemoryTransport(handler=lambda sent: MemoryAnswer(events[:cut]) if sent.method == "POST" else MemoryAnswer(b"", status=503))
    got = list(adapter(dead).stream(options()))
    assert [r.method for r in dead.requests] == ["POST"] + ["GET"] * resumption.MAX_TRIES
    assert sleeps.slept == [0.25, 0.5, 1.0, 2.0]  # a doubling backoff between the tries, none after the last
    finish = got[-1]
    assert type(finish) is Finish and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"
    cursor = finish.metadata.resume_cursor  # type: ignore[union-attr]
    assert cursor == finish.reason.failure.diagnostics["resume_cursor"]  # type: ignore[index]
    assert cursor == {
        "provider": PROVIDER,
        "response_id": response_id(events),
        "sequence_number": sequence(events[cut - 1]),
        "wire": "openai-responses",
        "base_url": "https://api.openai.com/v1",
    }
    assert KEY not in json.dumps(cursor)
    cursor = json.loads(json.dumps(cursor))  # another process
    server = Background(events, len(events))
    service = LlmService()
    service.register_adapter([PROVIDER], adapter(server.transport))
    rest = list(service.resume(cursor))
    assert server.gets == [cursor["sequence_number"]]
    assert [r.method for r in server.transport.requests] == ["GET"]
    # the rest is the events after the cursor only, read by a translator that starts there
    translator = OpenAIResponsesTranslator(provider=PROVIDER, after=cursor["sequence_number"])
    translator.writer.identify(cursor["response_id"])
    decoder = StreamDecoder(translator)
    expected = decoder.feed(b"".join(events[cut:])) + decoder.close()
    assert rest == expected
    assert rest[-1].reason == uncut(relative)[-1].reason  # type: ignore[union-attr]


def test_close_of_an_unfinished_stream_cancels_once() -> None:
    events = events_of(SEQUENCED[2])
    server = Background(events, len(events))
    stream = adapter(server.transport).stream(options())
    next(stream)
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    assert server.cancels == 1
    assert server.transport.requests[-1].url.endswith(f"/responses/{response_id(events)}/cancel")


def test_a_finished_stream_is_not_cancelled() -> None:
    events = events_of(SEQUENCED[0])
    server = Background(events, len(events))
    list(adapter(server.transport).stream(options()))
    assert server.cancels == 0


def test_cancel_never_raises() -> None:
    events = events_of(SEQUENCED[2])

    def handle(sent: SentRequest) -> MemoryAnswer:
        if sent.url.endswith("/cancel"):
            return MemoryAnswer(fail=ConnectionRefusedError())
        return MemoryAnswer(events)

    stream = adapter(MemoryTransport(handler=handle)).stream(options())
    next(stream)
    next(stream)
    stream.close()  # type: ignore[attr-defined]


def test_service_cancel_cancels_the_response() -> None:
    events = events_of(SEQUENCED[2])
    server = Background(events, len(events))
    service = LlmService()
    service.register_adapter([PROVIDER], adapter(server.transport))
    stream = service.stream(options())
    iterator = iter(stream)
    next(iterator)
    stream.cancel()
    list(iterator)
    assert server.cancels == 1


def test_non_resumable_wire_is_unchanged() -> None:
    body = b'data: {"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\n'
    transport = MemoryTransport(MemoryAnswer(body))
    chat = OpenAIChatAdapter(api_key=KEY, transport=transport, max_retries=0)
    got = list(chat.stream(GenerateOptions(provider="openai", model="m", messages=(Message.user("hi"),), resumable=True)))
    finish = got[-1]
    assert type(finish) is Finish and finish.reason.failure is not None
    assert finish.reason.failure.code == "STREAM_CLOSED"
    assert finish.metadata is None or finish.metadata.resume_cursor is None
    assert [r.method for r in transport.requests] == ["POST"]
    with pytest.raises(ConfigurationError):
        list(chat.resume({"provider": "openai", "response_id": "r", "sequence_number": 1, "wire": "openai-responses"}))


def test_resumable_false_keeps_the_cut() -> None:
    events = events_of(SEQUENCED[0])
    server = Background(events, 3)
    plain = GenerateOptions(provider=PROVIDER, model="m", messages=(Message.user("hi"),))
    got = list(adapter(server.transport).stream(plain))
    assert got[-1].reason.failure.code == "STREAM_CLOSED"  # type: ignore[union-attr]
    assert server.gets == [] and got[-1].metadata.resume_cursor is None  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", [None, {}, {"provider": "p", "response_id": "r", "wire": "x", "sequence_number": 1},
                                 {"provider": "p", "response_id": "r", "wire": "openai-responses", "sequence_number": "1"}])
def test_bad_cursor_is_rejected_naming_the_field(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="resume cursor"):
        LlmService().resume(bad)


def test_azure_responses_resume_url_keeps_api_version() -> None:
    azure = AzureOpenAIResponsesAdapter(endpoint="https://x.openai.azure.com", api_key=KEY, api_version="preview")
    url = azure.wire.response_url(options(), "resp_1", query={"stream": "true", "starting_after": "3"})
    assert url.startswith("https://x.openai.azure.com/openai/v1/responses/resp_1?")
    assert "api-version=preview" in url and "starting_after=3" in url
    assert azure.wire.build_body(options())["background"] is True


def test_resume_over_http_get() -> None:
    relative = SEQUENCED[0]
    events = events_of(relative)
    rid = response_id(events)
    cut = 4
    after = sequence(events[cut - 1])
    rest = b"".join(e for e in events if sequence(e) > after)
    with ReplayServer({"/v1/responses": Route(body=b"", script=events[:cut]), f"/v1/responses/{rid}": Route(body=rest)}) as server:
        live = OpenAIResponsesAdapter(api_key=KEY, key_env=None, base_url=server.url + "/v1", max_retries=0)
        got = list(live.stream(options()))
        methods = [(r.method, r.path) for r in server.requests]
    assert assemble(got).text == assemble(uncut(relative)).text
    assert methods[1] == ("GET", f"/v1/responses/{rid}?stream=true&starting_after={after}")
