"""TextRenderer and describe_usage (dshstream/_render.py) on piped output and on a fake
terminal: the exact text written, reasoning and tool-call lines, the usage and finish
lines, colour only on a TTY and never with ``NO_COLOR``, and the status line's rules.

A real terminal (pseudo-terminal plus emulator) is tests/cli/test_terminal.py;
``format_error_code_for_display`` is tests/cli/test_display_codes.py.
"""

from __future__ import annotations

import io
import re
import time

import pytest
from helpers import fixture_bytes

from dshstream._core.decode import decode
from dshstream._core.errors import make_failure
from dshstream._render import (
    CLEAR_LINE,
    CYAN,
    DIM,
    RED,
    RESET,
    TextRenderer,
    describe_usage,
    use_color,
)
from dshstream._core.types import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _colour_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)


def render(chunks: list[StreamChunk], out: io.StringIO | None = None, err: io.StringIO | None = None,
           *, status: bool = False) -> tuple[str, str]:
    out = out if out is not None else io.StringIO()
    err = err if err is not None else io.StringIO()
    renderer = TextRenderer(out, err, status=status)
    for chunk in chunks:
        renderer.feed(chunk)
    renderer.summary()
    return out.getvalue(), err.getvalue()


USAGE = TokenUsage(3, 2)
REASONED: list[StreamChunk] = [
    BlockStart(index=0, block_type="reasoning"),
    ReasoningDelta(index=0, text="think"),
    ReasoningDelta(index=0, text=""),
    BlockEnd(index=0, block=ReasoningBlock("think")),
    BlockStart(index=1, block_type="text"),
    TextDelta(index=1, text="Hel"),
    TextDelta(index=1, text="lo"),
    BlockEnd(index=1, block=TextBlock("Hello")),
    UsageChunk(usage=USAGE),
    Finish(reason=FinishReason(kind="stop", raw="end_turn")),
]
REASONED_TEXT = "[reasoning] think\nHello\nusage: in 3 · out 2\nfinish: stop (end_turn)\n"


def tool_call(index: int, call: ToolCallBlock) -> list[StreamChunk]:
    return [
        BlockStart(index=index, block_type="tool-call"),
        ToolCallDelta(index=index, id=call.id, name=call.name, arguments_delta=call.arguments),
        BlockEnd(index=index, block=call),
    ]


# --------------------------------------------------------------------------- describe_usage


@pytest.mark.parametrize(
    ("usage", "line"),
    [
        (TokenUsage(27, 69), "in 27 · out 69"),
        (TokenUsage(0, 0), "in 0 · out 0"),
        (TokenUsage(27, 69, cache_read_tokens=256), "in 27 (+256 cache read, 90% of input cached) · out 69"),
        (TokenUsage(27, 69, cache_write_tokens=12), "in 27 (+12 cache write) · out 69"),
        (TokenUsage(27, 69, cache_read_tokens=256, cache_write_tokens=12, reasoning_tokens=24, cost=0.0012),
         "in 27 (+256 cache read, +12 cache write, 87% of input cached) · out 69 (24 reasoning) · $0.001200"),
        (TokenUsage(27, 69, cache_read_tokens=0, reasoning_tokens=0, cost=0.0), "in 27 · out 69 · $0.000000"),
    ],
)
def test_describe_usage(usage: TokenUsage, line: str) -> None:
    assert describe_usage(usage) == line


# --------------------------------------------------------------------------- piped output


def test_piped_text_reasoning_usage_and_finish() -> None:
    assert render(REASONED) == (REASONED_TEXT, "")


def test_piped_status_and_summary_write_nothing_on_err() -> None:
    out, err = render(REASONED, status=True)
    assert (out, err) == (REASONED_TEXT, "")


def test_each_tool_call_gets_its_own_line() -> None:
    first = ToolCallBlock("c1", "get_weather", '{"city":"Paris"}')
    second = ToolCallBlock("c2", "get_time", '{"tz":"Eur', arguments_truncated=True)
    chunks: list[StreamChunk] = [
        BlockStart(index=0, block_type="text"),
        TextDelta(index=0, text="Let me check."),
        BlockEnd(index=0, block=TextBlock("Let me check.")),
        *tool_call(1, first),
        *tool_call(2, second),
        Finish(reason=FinishReason(kind="tool-calls", raw="tool_calls")),
    ]
    expected = (
        "Let me check.\n"
        '→ tool call get_weather({"city":"Paris"}) id=c1\n'
        '→ tool call get_time({"tz":"Eur) id=c2 [arguments truncated]\n'
        "finish: tool-calls (tool_calls)\n"
    )
    assert render(chunks) == (expected, "")


def test_a_failure_is_on_the_finish_line() -> None:
    failure = make_failure("RATE_LIMIT", "p: rate limited (RATE_LIMIT, HTTP 429)", status=429, provider="p")
    out = io.StringIO()
    renderer = TextRenderer(out, io.StringIO())
    chunks: list[StreamChunk] = [TextDelta(index=0, text="part"),
                                 Finish(reason=FinishReason(kind="error", failure=failure))]
    for chunk in chunks:
        renderer.feed(chunk)
    assert out.getvalue() == "part\nfinish: error — p: rate limited (RATE_LIMIT, HTTP 429)\n"
    assert renderer.failure_shown is False  # piped: the caller still reports it on err


def test_a_finish_without_a_raw_word() -> None:
    assert render([Finish(reason=FinishReason(kind="stop"))]) == ("finish: stop\n", "")


def test_a_partly_written_line_is_left_alone_when_piped() -> None:
    out = io.StringIO()
    renderer = TextRenderer(out, io.StringIO())
    renderer.feed(TextDelta(index=0, text="no newline"))
    renderer.close()
    renderer.close()
    assert out.getvalue() == "no newline"


def test_a_recorded_stream() -> None:
    chunks = list(decode(fixture_bytes("anthropic/thinking_then_tool_use.sse"), wire="anthropic"))
    out, err = render(chunks)
    lines = out.splitlines()
    assert lines[0].startswith("[reasoning] ") and err == ""
    ends = [c.block for c in chunks if isinstance(c, BlockEnd)]
    reasoning, call = ends
    assert isinstance(reasoning, ReasoningBlock) and isinstance(call, ToolCallBlock)
    usage = next(c.usage for c in chunks if isinstance(c, UsageChunk))
    assert out == (
        f"[reasoning] {reasoning.text}\n"
        f"→ tool call fixed_version({call.arguments}) id={call.id}\n"
        f"usage: {describe_usage(usage)}\n"
        "finish: tool-calls (tool_use)\n"
    )
    assert "\x1b" not in out


# --------------------------------------------------------------------------- colour


def test_use_color() -> None:
    assert use_color(FakeTTY()) is True
    assert use_color(io.StringIO()) is False

    class Broken(io.StringIO):
        def isatty(self) -> bool:
            raise ValueError("I/O operation on closed file")

    assert use_color(Broken()) is False


def test_use_color_never_with_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(FakeTTY()) is False


def test_colour_on_a_terminal() -> None:
    failure = make_failure("SERVER", "p: down", provider="p")
    chunks: list[StreamChunk] = [
        ReasoningDelta(index=0, text="hm"),
        TextDelta(index=1, text="ok"),
        *tool_call(2, ToolCallBlock("c1", "f", "{}")),
        UsageChunk(usage=USAGE),
        Finish(reason=FinishReason(kind="error", failure=failure)),
    ]
    out = FakeTTY()
    renderer = TextRenderer(out, FakeTTY())
    for chunk in chunks:
        renderer.feed(chunk)
    assert out.getvalue() == (
        f"{DIM}[reasoning] {RESET}{DIM}hm{RESET}\nok\n"
        f"{CYAN}→ tool call f({{}}) id=c1{RESET}\n"
        f"{DIM}usage: in 3 · out 2{RESET}\n"
        f"{RED}finish: error — p: down{RESET}\n"
    )
    assert renderer.failure_shown is True  # out and err are both terminals


def test_no_color_on_a_terminal_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    out, err = FakeTTY(), FakeTTY()
    text, closing = render(REASONED, out, err, status=True)
    assert text == REASONED_TEXT
    # colour off drops escapes and the live status line, never text: the closing line stays
    assert "\x1b" not in closing
    assert re.fullmatch(r"\d+\.\ds · 2 tokens · [\d.]+ tok/s\n", closing), closing


def test_a_partly_written_line_is_ended_on_a_terminal() -> None:
    out = FakeTTY()
    renderer = TextRenderer(out, io.StringIO())
    renderer.feed(TextDelta(index=0, text="no newline"))
    renderer.close()
    renderer.close()
    assert out.getvalue() == "no newline\n"


def test_status_line_on_a_terminal_err_is_cleared_and_summarized() -> None:
    out, err = io.StringIO(), FakeTTY()
    renderer = TextRenderer(out, err, status=True)
    assert renderer.status
    deadline = time.monotonic() + 5
    while not err.getvalue() and time.monotonic() < deadline:  # the ticker's first draw
        time.sleep(0.005)
    assert "waiting for the answer" in err.getvalue()
    for chunk in REASONED:
        renderer.feed(chunk)
    renderer.summary()
    renderer.summary()  # once only
    assert out.getvalue() == REASONED_TEXT
    written = err.getvalue()
    assert written.count(f"{DIM}") >= 2 and CLEAR_LINE in written
    summary = written.rsplit(CLEAR_LINE, 1)[1]
    assert summary.startswith(DIM) and summary.endswith(f"{RESET}\n")
    assert " · 2 tokens · " in summary and summary.count("\n") == 1  # usage's output tokens


def test_recovery_tips_follow_the_failure_line() -> None:
    failure = make_failure("RATE_LIMIT", "p: rate limited (RATE_LIMIT, HTTP 429)", status=429, provider="p")
    out = io.StringIO()
    renderer = TextRenderer(out, io.StringIO(), tips=lambda f: (f"Wait ({f.code}).", "Then retry."))
    chunks: list[StreamChunk] = [TextDelta(index=0, text="part"),
                                 Finish(reason=FinishReason(kind="error", failure=failure))]
    for chunk in chunks:
        renderer.feed(chunk)
    assert out.getvalue() == (
        "part\nfinish: error — p: rate limited (RATE_LIMIT, HTTP 429)\ntip: Wait (RATE_LIMIT).\ntip: Then retry.\n"
    )
    quiet = io.StringIO()
    calm = TextRenderer(quiet, io.StringIO(), tips=lambda f: ("never shown",))
    calm.feed(Finish(reason=FinishReason(kind="stop")))
    assert quiet.getvalue() == "finish: stop\n"
