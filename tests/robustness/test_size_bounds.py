"""Deep nesting and event sizes on every fuzzed wire: no ``RecursionError`` at any depth
(every depth near the recursion limit), 100,000 open brackets end the stream malformed, a
20 MB event is ``EVENT_TOO_LARGE`` in bounded memory and linear time, an event just under
the limit decodes, and a streamed Gemini argument path cannot allocate beyond its event.
Every input goes through the fuzzing oracle (:func:`robustness.fuzzing.run_wire`)."""

from __future__ import annotations

import json
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from dshstream._core.decode import decode
from dshstream._core.errors import ProtocolError
from dshstream._core.types import BlockEnd, Finish, TextDelta, ToolCallBlock

from helpers import split_at
from robustness.fuzzing import FUZZ_WIRES, Event, frame, run_wire

ENVELOPES: dict[str, Callable[[str], list[Event]]] = {
    # one event that puts ``value`` (JSON text) where each wire reads a structure
    "openai-chat": lambda v: [("message", '{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":' + v + "}}]}}]}"), ("message", '{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'), ("message", "[DONE]")],
    "anthropic": lambda v: [("message_start", '{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}'), ("content_block_start", '{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":' + v + "}}"), ("content_block_stop", '{"type":"content_block_stop","index":0}'), ("message_stop", '{"type":"message_stop"}')],
    "gemini": lambda v: [("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":' + v + '}}]},"finishReason":"STOP"}]}')],
    "openai-responses": lambda v: [("response.output_item.added", '{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":' + v + "}}"), ("response.completed", '{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"function_call","id":"fc","call_id":"c","name":"f","arguments":' + v + "}]}}")],
    "gemini-interactions": lambda v: [("step.start", '{"event_type":"step.start","index":0,"step":{"type":"function_call","id":"c","name":"f","arguments":' + v + "}}"), ("step.stop", '{"event_type":"step.stop","index":0}'), ("interaction.completed", '{"event_type":"interaction.completed","interaction":{"id":"i","status":"requires_action","usage":' + v + "}}")],
}


ENVELOPES["gemini-streamed"] = lambda v: [
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}'),
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":"$.a","structValue":' + v + '}],"willContinue":true}}]}}]}'),
    ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}]}'),
]
ERROR_ENVELOPES: dict[str, Callable[[str], list[Event]]] = {
    "openai-chat": lambda v: [("message", '{"error":' + v + "}")],
    "anthropic": lambda v: [("error", '{"type":"error","error":' + v + "}")],
    "gemini": lambda v: [("message", '{"error":' + v + "}")],
    "openai-responses": lambda v: [("error", '{"type":"error","code":"x","message":' + v + "}")],
    "gemini-interactions": lambda v: [("error", '{"event_type":"error","error":' + v + "}")],
}


def _wire_of(family: str) -> str:
    return "gemini" if family == "gemini-streamed" else family


def _in_fresh_thread(fn: Callable[[], object]) -> None:
    """Run ``fn`` at the bottom of a new thread's stack, so the depth left to the
    recursion limit is the same whatever pytest's own stack depth is; re-raise."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()
    if errors:
        raise errors[0]


#: nesting depths to try: absolute ones, and every depth near the recursion limit, where
#: the C JSON parser still accepts a payload that a later ``json.dumps`` or recursive
#: walk, a few frames deeper, cannot handle
NEAR_LIMIT = range(sys.getrecursionlimit() - 80, sys.getrecursionlimit() + 2)
DEPTHS = sorted({50, 300, 500, 700, *NEAR_LIMIT, 5000, 100_000})


@pytest.mark.parametrize("family", sorted(ENVELOPES))
def test_deep_nesting_in_a_payload_is_never_a_recursion_error(family: str) -> None:
    wire = _wire_of(family)

    def sweep() -> None:
        for depth in DEPTHS:
            for value in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth):
                run_wire(wire, [frame(ENVELOPES[family](value), crlf=wire == "gemini")])
                if family in ERROR_ENVELOPES:
                    run_wire(wire, [frame(ERROR_ENVELOPES[family](value), crlf=False)])

    _in_fresh_thread(sweep)


@pytest.mark.parametrize("wire", FUZZ_WIRES)
def test_100000_open_brackets_end_the_stream_malformed(wire: str) -> None:
    chunks = list(decode(b"data: " + b"[" * 100_000 + b"\n\n", wire=wire))
    finish = chunks[-1]
    assert isinstance(finish, Finish) and finish.reason.kind == "error"
    assert finish.reason.failure is not None and finish.reason.failure.code == "MALFORMED_RESPONSE"


_MIB = 1024 * 1024
_LIMIT = 16 * _MIB


def _giant_event(kind: str, total: int) -> Iterator[bytes]:
    """A single ~``total``-byte event, as 64 KiB pieces (one shared piece object, so
    the input costs no memory): one unterminated ``data:`` line, many ``data:`` lines
    of one event, or CRLF-framed lines."""
    piece = b"x" * 65536
    if kind == "one line":
        yield b'data: {"choices":[{"index":0,"delta":{"content":"'
        for _ in range(total // len(piece)):
            yield piece
    else:
        sep = b"\r\n" if kind == "crlf lines" else b"\n"
        line = b"data: " + b"y" * (65536 - 6 - len(sep)) + sep
        for _ in range(total // len(line)):
            yield line
    yield b'"}}]}\n\n'


@pytest.mark.parametrize("wire", ["openai-chat", "anthropic", "gemini", "openai-responses"])
@pytest.mark.parametrize("kind", ["one line", "lf lines", "crlf lines"])
def test_20_mb_event_raises_event_too_large_with_bounded_memory(wire: str, kind: str) -> None:
    tracemalloc.start()
    try:
        started = time.monotonic()
        with pytest.raises(ProtocolError) as caught:
            for _ in decode(_giant_event(kind, 20 * _MIB), wire=wire):
                pass
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert caught.value.failure.code == "EVENT_TOO_LARGE"
    assert peak < 3 * _LIMIT, f"peak {peak / _MIB:.1f} MiB for a {_LIMIT / _MIB:.0f} MiB limit"
    assert elapsed < 30  # linear; a quadratic scan of 20 MB takes minutes (margin for a busy machine)


def test_event_just_under_the_limit_decodes() -> None:
    limit = _MIB
    text = "z" * (limit - 200)
    event = b'data: {"choices":[{"index":0,"delta":{"content":"' + text.encode() + b'"}}]}\n\n'
    stream = event + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    chunks = run_wire("openai-chat", split_at(stream, range(0, len(stream), 65536)), max_event_size=limit)
    assert "".join(c.text for c in chunks if isinstance(c, TextDelta)) == text


def _vertex_partial_args(json_path: str) -> bytes:
    return frame(
        [
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","willContinue":true}}]}}]}'),
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"partialArgs":[{"jsonPath":' + json.dumps(json_path) + ',"numberValue":1}],"willContinue":true}}]}}]}'),
            ("message", '{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{}}]},"finishReason":"STOP"}]}'),
        ],
        crlf=True,
    )


@pytest.mark.parametrize(
    "json_path",
    ["$.a[3000000]", "$[" + "9" * 5000 + "]", "$.a[0][2999999]"],
    ids=["list index 3e6", "5000-digit index", "nested index 3e6"],
)
def test_streamed_gemini_arguments_cannot_allocate_beyond_the_event(json_path: str) -> None:
    """A ~400-byte ``partialArgs`` event must not make the decoder build megabytes."""
    tracemalloc.start()
    try:
        started = time.monotonic()
        chunks = run_wire("gemini", [_vertex_partial_args(json_path)])
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * _MIB, f"peak {peak / _MIB:.1f} MiB from a {len(_vertex_partial_args(json_path))}-byte stream"
    assert elapsed < 5.0  # the memory bound above is the real check; this only catches a runaway
    arguments = [c.block.arguments for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]
    assert all(len(a) < 100_000 for a in arguments)
