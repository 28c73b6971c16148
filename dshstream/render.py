"""Terminal rendering of a chunk stream: the visible answer live, reasoning dimmed on a
TTY, tool calls and usage summarized.

Contract: writes to the given text streams only; colour only on a TTY and never when
``NO_COLOR`` is set. Used by the command line (``replay``, ``chat``, ``demo``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

from .assembler import AssembledResponse
from .types import (
    BlockEnd,
    BlockStart,
    Finish,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

DIM, BOLD, RED, CYAN, RESET = "\x1b[2m", "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


def use_color(stream: TextIO) -> bool:
    """Colour only on a TTY, and never with ``NO_COLOR`` set."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def describe_usage(usage: TokenUsage) -> str:
    """``in 27 (+256 cached) · out 69 (24 reasoning) · $0.0012``."""
    parts = [f"in {usage.input_tokens}"]
    extras = []
    if usage.cache_read_tokens:
        extras.append(f"+{usage.cache_read_tokens} cache read")
    if usage.cache_write_tokens:
        extras.append(f"+{usage.cache_write_tokens} cache write")
    if extras:
        parts[0] += f" ({', '.join(extras)})"
    out = f"out {usage.output_tokens}"
    if usage.reasoning_tokens:
        out += f" ({usage.reasoning_tokens} reasoning)"
    parts.append(out)
    if usage.cost is not None:
        parts.append(f"${usage.cost:.6f}")
    return " · ".join(parts)


class TextRenderer:
    """Prints chunks as they arrive."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None, *, status: bool = False) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.color = use_color(self.out)
        self.status = status and use_color(self.err)
        self._mode: str | None = None
        self._started = time.monotonic()
        self._chars = 0
        self._last_status = 0.0

    def _style(self, text: str, style: str) -> str:
        return f"{style}{text}{RESET}" if self.color else text

    def _switch(self, mode: str) -> None:
        if self._mode == mode:
            return
        if self._mode is not None:
            self.out.write("\n")
        if mode == "reasoning":
            self.out.write(self._style("[reasoning] ", DIM))
        self._mode = mode

    def feed(self, chunk: StreamChunk) -> None:
        """Render one chunk."""
        if type(chunk) is TextDelta:
            self._switch("text")
            self.out.write(chunk.text)
            self._chars += len(chunk.text)
        elif type(chunk) is ReasoningDelta:
            self._switch("reasoning")
            self.out.write(self._style(chunk.text, DIM))
            self._chars += len(chunk.text)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, ToolCallBlock):
            call = chunk.block
            self._switch("tool")
            flag = " [arguments truncated]" if call.arguments_truncated else ""
            self.out.write(self._style(f"→ tool call {call.name}({call.arguments}) id={call.id}{flag}", CYAN))
        elif type(chunk) is UsageChunk:
            self._switch("meta")
            self.out.write(self._style(f"usage: {describe_usage(chunk.usage)}", DIM) + "\n")
            self._mode = None
        elif type(chunk) is Finish:
            if self._mode is not None:
                self._switch("meta")
            reason = chunk.reason
            raw = f" ({reason.raw})" if reason.raw else ""
            line = f"finish: {reason.kind}{raw}"
            if reason.failure is not None:
                line += f" — {reason.failure.message}"
                self.out.write(self._style(line, RED))
            else:
                self.out.write(self._style(line, DIM))
            self.out.write("\n")
            self._mode = None
        elif type(chunk) in (BlockStart, ToolCallDelta, BlockEnd):
            pass
        self.out.flush()
        if self.status:
            self._status_line()

    def _status_line(self) -> None:
        now = time.monotonic()
        if now - self._last_status < 0.1:
            return
        self._last_status = now
        elapsed = now - self._started
        rate = self._chars / 4 / elapsed if elapsed > 0 else 0.0
        self.err.write(f"\r\x1b[2K{DIM}{elapsed:5.1f}s · ~{rate:5.1f} tok/s{RESET}\r")
        self.err.flush()

    def summary(self, result: AssembledResponse) -> None:
        """Clear the status line (if any)."""
        if self.status:
            self.err.write("\r\x1b[2K")
            self.err.flush()
