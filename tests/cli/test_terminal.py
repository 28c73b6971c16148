"""The command line on a real terminal: ``dshstream chat`` runs in a pseudo-terminal
against a loopback server replaying a recorded transcript (paced, so the live status line
is drawn while the answer streams), and everything it writes is fed to a terminal emulator
(``pyte``). The final screen must show the whole answer, then usage, finish and the
summary — never a status line left over or drawn over the answer."""

from __future__ import annotations

import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from dshstream._core.assembler import assemble
from dshstream._core.decode import decode
from dshstream._replay_server import ReplayServer, Route

from helpers import FIXTURES, default_sigint

pyte = pytest.importorskip("pyte")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")

COLUMNS, LINES = 120, 60
#: the live status line (the final summary reads ``1.2s · 30 tokens · 25.0 tok/s``)
LIVE_STATUS = re.compile(r"\d\.\ds · (~ *[\d.]+ tok/s|waiting for the answer)")


@dataclass
class Run:
    screen_lines: list[str]
    raw: bytes
    returncode: int

    @property
    def text(self) -> str:
        return "\n".join(self.screen_lines).rstrip()

    def shows(self, expected: str) -> bool:
        """Whether ``expected`` is on the screen, in order, whole (line wrapping and
        trailing blanks don't matter)."""
        return _squash(expected) in _squash("".join(self.screen_lines))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def events(body: bytes) -> list[bytes]:
    """The transcript split into its SSE events."""
    return [event + b"\n\n" for event in body.replace(b"\r\n", b"\n").split(b"\n\n") if event.strip()]


def paced(body: bytes, pause: float, *, stall_after: int | None = None, stall: float = 0.0) -> Route:
    """``body`` one event at a time with ``pause`` seconds between events (and one long
    ``stall`` after event number ``stall_after``)."""
    script: list[bytes | float] = []
    for number, event in enumerate(events(body), 1):
        script.append(event)
        script.append(pause)
        if number == stall_after:
            script.append(stall)
    return Route(body=b"", script=script)


def run_in_pty(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    until: Callable[[Any], bool] | None = None,  # called with the pyte.Screen
    then: Callable[[subprocess.Popen[bytes]], None] | None = None,
    timeout: float = 20.0,
) -> Run:
    """Run ``python -m dshstream ARGS`` with stdin, stdout and stderr on one pty; when
    ``until(screen)`` first holds, call ``then(process)``."""
    import fcntl
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "OPENAI_API_KEY")}
    environment.update({"TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)})
    environment.update(env or {})
    process = subprocess.Popen(
        [sys.executable, "-m", "dshstream", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=environment,
        close_fds=True,
        preexec_fn=default_sigint,
    )
    os.close(slave)
    screen = pyte.Screen(COLUMNS, LINES)
    stream = pyte.ByteStream(screen)
    raw = bytearray()
    deadline = time.monotonic() + timeout
    fired = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the slave
                    data = b""
                if not data:
                    break
                raw += data
                stream.feed(data)
            if until is not None and not fired and until(screen):
                fired = True
                if then is not None:
                    then(process)
        returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    if until is not None:
        assert fired, "the condition never held:\n" + "\n".join(screen.display).rstrip()
    return Run(list(screen.display), bytes(raw), returncode)


def chat(server: ReplayServer, *extra: str, provider: str = "local") -> list[str]:
    return ["chat", "-p", provider, "-m", "m", "--base-url", f"{server.url}/v1", *extra, "hello"]


def expected(relative: str, wire: str) -> tuple[str, str]:
    result = assemble(decode((FIXTURES / relative).read_bytes(), wire=wire))
    return result.text, result.reasoning


def assert_no_status(run: Run) -> None:
    left = [line for line in run.screen_lines if LIVE_STATUS.search(line)]
    assert not left, run.text


# --------------------------------------------------------------------------- answers


def test_a_short_answer_stays_whole_with_usage_finish_and_summary() -> None:
    fixture = "openai/text_include_usage.sse"
    text, _ = expected(fixture, "openai-chat")
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.015)}) as server:
        run = run_in_pty(chat(server))
    assert run.returncode == 0, run.text
    assert run.shows(text), run.text
    lines = [line.rstrip() for line in run.screen_lines if line.strip()]
    usage_at = lines.index("usage: in 14 · out 30")
    assert _squash("".join(lines[:usage_at])) == _squash(text)  # nothing but the answer above
    assert lines[usage_at + 1] == "finish: stop (stop)"
    assert re.fullmatch(r"\d+\.\ds · 30 tokens · \d+\.\d tok/s", lines[usage_at + 2]), run.text
    assert len(lines) == usage_at + 3, run.text
    assert b"\x1b[2K" in run.raw  # a live status line was drawn (and cleared) on the way
    assert_no_status(run)


def test_a_multi_line_answer_stays_whole() -> None:
    fixture = "llamacpp/llamaserver_smollm2_long_256tok.sse"
    text, _ = expected(fixture, "llamacpp")
    assert text.count("\n") >= 2
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.002)}) as server:
        run = run_in_pty(chat(server, provider="llamacpp"))
    assert run.returncode == 0, run.text
    assert run.shows(text), run.text
    # every paragraph starts a line of its own, as written
    for paragraph in (p for p in text.split("\n") if p.strip()):
        first_words = paragraph.strip()[:40]
        assert any(line.startswith(first_words) for line in run.screen_lines), (first_words, run.text)
    assert "finish: max-tokens (length)" in run.text
    assert re.search(r"\d+\.\ds · 256 tokens · [\d.]+ tok/s", run.text), run.text
    assert_no_status(run)


def test_reasoning_then_answer_both_stay() -> None:
    fixture = "deepseek/reasoner_reasoning_content_then_content.sse"
    text, reasoning = expected(fixture, "deepseek")
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.0025)}) as server:
        run = run_in_pty(chat(server, provider="deepseek"))
    assert run.returncode == 0, run.text
    assert run.shows("[reasoning] " + reasoning + text), run.text
    answer_line = next(line for line in run.screen_lines if line.startswith("Hello there!"))
    assert _squash(answer_line) == _squash(text)
    assert "usage: in 6 · out 212 (198 reasoning)" in run.text
    assert "finish: stop" in run.text
    assert_no_status(run)
    assert b"\x1b[2m" in run.raw  # reasoning dimmed on a colour terminal


@pytest.mark.parametrize("cut", [40, 56], ids=["mid-line", "after-a-paragraph"])
def test_interrupted_answer_keeps_the_partial_text_and_no_status_line(cut: int) -> None:
    fixture = "llamacpp/llamaserver_smollm2_long_256tok.sse"
    body = (FIXTURES / fixture).read_bytes()
    partial = assemble(decode(b"".join(events(body)[:cut]), wire="llamacpp")).text
    assert partial.strip() and partial.endswith("\n") == (cut == 56)
    # paced so the status line is live while the answer streams, then a stall (the
    # status line is up, on the empty line after a paragraph) until the interrupt
    route = paced(body, 0.01, stall_after=cut, stall=10.0)

    def interrupt_after_a_while(process: subprocess.Popen[bytes]) -> None:
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)

    with ReplayServer({"/v1/": route}) as server:
        run = run_in_pty(
            chat(server, provider="llamacpp"),
            until=lambda screen: _squash(partial) in _squash("".join(screen.display)),
            then=interrupt_after_a_while,
        )
    assert run.returncode == 130, run.text
    assert run.shows(partial), run.text
    lines = [line.rstrip() for line in run.screen_lines if line.strip()]
    assert lines[-1] == "interrupted", run.text
    assert not any(line.startswith("finish:") for line in lines)
    assert "Traceback" not in run.text
    assert_no_status(run)


# --------------------------------------------------------------------------- tool calls, failures


def test_parallel_tool_calls_get_a_line_each() -> None:
    fixture = "openai/parallel_tool_calls.sse"
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.002)}) as server:
        run = run_in_pty(chat(server, provider="openai"))
    assert run.returncode == 0, run.text
    calls = [line for line in run.screen_lines if line.startswith("→ tool call ")]
    assert len(calls) >= 2, run.text
    assert all(line.count("→ tool call") == 1 for line in calls)
    assert "finish: tool-calls" in run.text
    assert_no_status(run)


def test_a_failure_is_shown_once_on_a_terminal() -> None:
    fixture = "openrouter/midstream_error_chunk.sse"
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.002)}) as server:
        run = run_in_pty(chat(server, provider="openrouter"))
    assert run.returncode == 1, run.text
    finish = [line for line in run.screen_lines if line.startswith("finish: error")]
    assert len(finish) == 1, run.text
    headline = finish[0].split(" — ", 1)[1].strip()
    assert headline
    assert run.text.count(headline) == 1, run.text
    assert "error: " not in run.text
    assert_no_status(run)


# --------------------------------------------------------------------------- plain output


def test_no_color_on_a_terminal_is_plain() -> None:
    fixture = "deepseek/reasoner_reasoning_content_then_content.sse"
    text, reasoning = expected(fixture, "deepseek")
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.002)}) as server:
        run = run_in_pty(chat(server, provider="deepseek"), env={"NO_COLOR": "1"})
    assert run.returncode == 0, run.text
    assert b"\x1b" not in run.raw
    assert run.shows("[reasoning] " + reasoning + text), run.text
    # colour off drops styling and the live status line, never text: the closing line stays
    lines = [line.rstrip() for line in run.screen_lines if line.strip()]
    assert lines[-2:-1] == ["finish: stop (stop)"], run.text
    assert re.fullmatch(r"\d+\.\ds · 212 tokens · \d+\.\d tok/s", lines[-1]), run.text


def test_piped_output_is_plain() -> None:
    fixture = "deepseek/reasoner_reasoning_content_then_content.sse"
    text, reasoning = expected(fixture, "deepseek")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    with ReplayServer({"/v1/": paced((FIXTURES / fixture).read_bytes(), 0.0)}) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "dshstream", *chat(server, provider="deepseek")],
            capture_output=True,
            env=env,
            timeout=60,
        )
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and b"\x1b" not in proc.stderr
    out = proc.stdout.decode()
    assert out == f"[reasoning] {reasoning}\n{text}\nusage: in 6 · out 212 (198 reasoning)\nfinish: stop (stop)\n"
    assert proc.stderr == b""


# --------------------------------------------------------------------------- a conversation

Step = tuple[Callable[[Any], bool], Callable[[int, "subprocess.Popen[bytes]"], object]]


def converse(args: Sequence[str], steps: Sequence[Step], *, timeout: float = 30.0) -> Run:
    """Run ``python -m dshstream ARGS`` on a pty (stdin a terminal: no prompt means a
    conversation) and play ``steps``: when each ``until(screen)`` first holds, in order,
    call ``act(master, process)`` (type a line, send a signal)."""
    import fcntl
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", LINES, COLUMNS, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "OPENAI_API_KEY")}
    environment.update({"TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(LINES)})
    process = subprocess.Popen(
        [sys.executable, "-m", "dshstream", *args], stdin=slave, stdout=slave, stderr=slave, env=environment,
        close_fds=True, preexec_fn=default_sigint,
    )
    os.close(slave)
    screen = pyte.Screen(COLUMNS, LINES)
    feed = pyte.ByteStream(screen)
    raw = bytearray()
    pending = list(steps)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every writer closed the slave
                    data = b""
                if not data:
                    break
                raw += data
                feed.feed(data)
            if pending and pending[0][0](screen):
                pending.pop(0)[1](master, process)
        returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)
    shown = "\n".join(screen.display).rstrip()
    assert not pending, f"{len(pending)} step(s) never reached:\n{shown}"
    return Run(list(screen.display), bytes(raw), returncode)


def prompts(count: int) -> Callable[[Any], bool]:
    """The screen shows ``count`` prompt markers (``> `` at the start of a line)."""
    return lambda screen: sum(line.startswith("> ") or line.rstrip() == ">" for line in screen.display) >= count


def showing(text: str) -> Callable[[Any], bool]:
    return lambda screen: _squash(text) in _squash("".join(screen.display))


def type_line(text: str) -> Callable[[int, "subprocess.Popen[bytes]"], object]:
    return lambda master, process: os.write(master, text.encode() + b"\r")  # Enter, as a terminal sends it


def conversation(server: ReplayServer) -> list[str]:
    return ["chat", "-p", "local", "-m", "m", "--base-url", f"{server.url}/v1"]


def test_chat_on_a_terminal_without_a_prompt_is_a_conversation_with_history() -> None:
    first_fixture, second_fixture = "openai/text_include_usage.sse", "deepseek/reasoner_reasoning_content_then_content.sse"
    first, _ = expected(first_fixture, "openai-chat")
    second, _ = expected(second_fixture, "deepseek")
    answers = [paced((FIXTURES / fixture).read_bytes(), 0.002) for fixture in (first_fixture, second_fixture)]
    with ReplayServer({"/v1/": answers}) as server:
        run = converse(
            conversation(server),
            [
                (prompts(1), type_line("What is up?")),
                (prompts(2), type_line("And then?")),
                (prompts(3), type_line("/exit")),
            ],
        )
        sent = [request.body["messages"] for request in server.requests]
    assert run.returncode == 0, run.text
    assert "/exit or Ctrl-D" in run.text  # how to leave, said once at the start
    assert run.shows(first) and run.shows(second), run.text
    assert re.search(r"\d+\.\ds · 30 tokens · [\d.]+ tok/s", run.text), run.text  # each turn's summary
    assert len(sent) == 2
    assert sent[0] == [{"role": "user", "content": "What is up?"}]
    # the second request carries the first turn: the question, the reply as returned
    assert [m["role"] for m in sent[1]] == ["user", "assistant", "user"]
    assert sent[1][0] == sent[0][0] and sent[1][2] == {"role": "user", "content": "And then?"}
    assert sent[1][1]["content"] == first
    assert "Traceback" not in run.text
    assert_no_status(run)


def test_ctrl_c_stops_the_answer_not_the_conversation_and_ctrl_d_leaves() -> None:
    fixture = "llamacpp/llamaserver_smollm2_long_256tok.sse"
    body = (FIXTURES / fixture).read_bytes()
    partial = assemble(decode(b"".join(events(body)[:40]), wire="llamacpp")).text
    stalled = paced(body, 0.002, stall_after=40, stall=10.0)
    short = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    answer, _ = expected("openai/text_include_usage.sse", "openai-chat")

    def interrupt(master: int, process: "subprocess.Popen[bytes]") -> None:
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)

    started = time.monotonic()
    with ReplayServer({"/v1/": [stalled, Route(body=short)]}) as server:
        run = converse(
            conversation(server),
            [
                (prompts(1), type_line("Tell me a story")),
                (showing(partial), interrupt),
                (lambda screen: prompts(2)(screen) and showing("interrupted")(screen), type_line("Go on")),
                (prompts(3), lambda master, process: os.write(master, b"\x04")),  # Ctrl-D
            ],
        )
        sent = [request.body["messages"] for request in server.requests]
    assert time.monotonic() - started < 9  # the stalled answer was cancelled, not waited out
    assert run.returncode == 0, run.text
    assert run.shows(partial) and run.shows(answer), run.text
    lines = [line.rstrip() for line in run.screen_lines]
    assert "interrupted" in lines, run.text
    assert not any(line.startswith("finish: aborted") for line in lines), run.text  # the user's stop: no failure
    assert "Traceback" not in run.text
    assert len(sent) == 2
    assert [m["role"] for m in sent[1]] == ["user", "assistant", "user"]
    assert _squash(sent[1][1]["content"]) == _squash(partial)  # what was shown stays in the history
    assert sent[1][2] == {"role": "user", "content": "Go on"}
    assert_no_status(run)


def test_a_failed_turn_is_dropped_and_the_conversation_goes_on() -> None:
    failing = Route(body=b'{"error":{"message":"overloaded"}}', status=400, content_type="application/json")
    short = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    answer, _ = expected("openai/text_include_usage.sse", "openai-chat")
    with ReplayServer({"/v1/": [failing, Route(body=short)]}) as server:
        run = converse(
            conversation(server),
            [(prompts(1), type_line("first")), (prompts(2), type_line("second")), (prompts(3), type_line("/exit"))],
        )
        sent = [request.body["messages"] for request in server.requests]
    assert run.returncode == 0, run.text
    assert any(line.startswith("finish: error") for line in run.screen_lines), run.text
    assert run.shows(answer), run.text
    assert sent[1] == [{"role": "user", "content": "second"}]  # the failed turn is not history
