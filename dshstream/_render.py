"""Terminal rendering of a chunk stream: the visible answer live, reasoning dimmed on a
TTY, tool calls and usage summarized.

Contract: writes to the given text streams only; colour only on a TTY and never when
``NO_COLOR`` is set — and turning colour off never removes text, only styling and the
live status line. Used by the command line (``replay``, ``chat``, ``demo``).

The answer is never overwritten. With ``status=True`` and a colour TTY on ``err``, a live
status line (elapsed time, rate) is drawn on ``err`` by a ticker thread; when ``out`` is a
TTY too (the same screen, presumably) it is drawn only while the cursor is at the start of
an empty line (before the first text, between blocks, after a newline) and is cleared
before anything else is written, so it never erases a line of the answer. :meth:`close`
(also called by :meth:`summary`) stops the ticker, clears the status line and ends a
partly written line; :meth:`summary` then prints the final time and rate on ``err`` when
``err`` is a TTY (plain, without escape sequences, under ``NO_COLOR``). Piped output gets
no status line, no summary and no escape sequences; ``NO_COLOR`` gets no status line and
no escape sequences, but the same text.
Each tool call gets its own line, and so does each file the model produced
(``[image/png, 123 KB]``: its media type and size, never its bytes). A text block that cites sources is followed by a
``sources:`` list (``[n] title — url``, each source once per stream, numbered in order of
first citation). When ``out`` and ``err`` are both terminals,
:attr:`TextRenderer.failure_shown` says a failure was already shown on the finish line
(callers then need not repeat it on ``err``).

:func:`format_error_code_for_display` decides whether an error code (dshstream's or a
provider's) is safe to show a user: only short status- or word-shaped codes are, so a
key or a mention that an upstream put in a ``code`` field is shown as ``unknown``.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from ._core.assembler import AssembledResponse
from ._core.types import (
    BlockEnd,
    BlockStart,
    Citation,
    FileBlock,
    Finish,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    format_size,
)

DIM, BOLD, RED, CYAN, RESET = "\x1b[2m", "\x1b[1m", "\x1b[31m", "\x1b[36m", "\x1b[0m"
CLEAR_LINE = "\r\x1b[2K"
#: seconds between two redraws of the status line
STATUS_INTERVAL = 0.1


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed stream
        return False


def use_color(stream: TextIO) -> bool:
    """Colour only on a TTY, and never with ``NO_COLOR`` set."""
    if os.environ.get("NO_COLOR"):
        return False
    return _isatty(stream)


_DISPLAY_CODE = re.compile(r"\d{3}(?:_[a-z]+)*|[A-Z]+(?:_(?:[A-Z]+|\d{3}))*|[a-z]+(?:_[a-z]+)*")


def format_error_code_for_display(code: object) -> str:
    """``code`` if it is safe to show a user, else ``"unknown"``.

    Safe: at most 40 characters and one of a 3-digit status optionally followed by
    ``_lowercase`` segments (``429``, ``429_balance``), an UPPER_SNAKE word
    (``ECONNREFUSED``; dshstream's own ``HTTP_404`` too) or a lower_snake word
    (``invalid_request_error``). Integers are shown as their digits.
    """
    if isinstance(code, bool):
        return "unknown"
    if isinstance(code, int):
        code = str(code)
    if not isinstance(code, str) or not code or len(code) > 40:
        return "unknown"
    return code if _DISPLAY_CODE.fullmatch(code) else "unknown"


def describe_usage(usage: TokenUsage) -> str:
    """``in 27 (+256 cache read, 90% of input cached) · out 69 (24 reasoning) · $0.0012``."""
    parts = [f"in {usage.input_tokens}"]
    extras = []
    if usage.cache_read_tokens:
        extras.append(f"+{usage.cache_read_tokens} cache read")
    if usage.cache_write_tokens:
        extras.append(f"+{usage.cache_write_tokens} cache write")
    share = usage.cached_input_share
    if usage.cache_read_tokens and share is not None:  # the saving, as a share of the input
        extras.append(f"{share:.0%} of input cached")
    if extras:
        parts[0] += f" ({', '.join(extras)})"
    out = f"out {usage.output_tokens}"
    if usage.reasoning_tokens:
        out += f" ({usage.reasoning_tokens} reasoning)"
    parts.append(out)
    if usage.cost is not None:
        parts.append(f"${usage.cost:.6f}")
    return " · ".join(parts)


def describe_file(block: FileBlock) -> str:
    """A file the model produced, without its bytes: ``image/png, 123 KB`` (and its name)."""
    name = f", {block.name}" if block.name else ""
    return f"{block.media_type}, {format_size(len(block.data))}{name}"


def describe_source(citation: Citation) -> str:
    """A citation as one line of a sources list: ``title — url`` (or the location where
    there is no URL, or the kind alone when the provider named nothing)."""
    label = citation.title or citation.location or citation.url or citation.kind
    where = citation.url or (citation.location if citation.title else None)
    return f"{label} — {where}" if where and where != label else label


def source_key(citation: Citation) -> tuple[str | None, ...]:
    """What makes two citations the same source in a sources list."""
    return (citation.url, citation.title, citation.location if citation.url is None else None)


class Sources:
    """Numbers sources in order of first citation (each source once)."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str | None, ...], int] = {}

    def new(self, citations: tuple[Citation, ...]) -> list[tuple[int, Citation]]:
        """The sources among ``citations`` not listed yet, numbered."""
        fresh = []
        for citation in citations:
            key = source_key(citation)
            if key not in self._numbers:
                self._numbers[key] = len(self._numbers) + 1
                fresh.append((self._numbers[key], citation))
        return fresh


class TextRenderer:
    """Prints chunks as they arrive."""

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        status: bool = False,
        tips: Callable[[LlmFailure], Sequence[str]] | None = None,
    ) -> None:
        #: the recovery tips printed under a failure's finish line (``tip: ...``), if any
        self.tips = tips
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.color = use_color(self.out)
        #: the live status line (redrawn in place: needs escape sequences, so colour)
        self.status = status and use_color(self.err)
        #: the closing time/tokens line: text, so any terminal gets it, colour or not
        self.summarize = status and _isatty(self.err)
        self._err_color = use_color(self.err)
        #: ``out`` is a terminal: the status line may share its screen
        self._shared = _isatty(self.out)
        #: both streams are on a terminal: a failure shown on ``out`` is seen by the user
        self.terminal = self._shared and _isatty(self.err)
        #: the finish line already showed the failure's headline on a terminal
        self.failure_shown = False
        self._mode: str | None = None
        self._at_line_start = True
        self._status_shown = False
        self._closed = False
        self._started = time.monotonic()
        self._chars = 0
        self._usage: TokenUsage | None = None
        self._sources = Sources()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        if self.status:
            self._ticker = threading.Thread(target=self._tick, name="dshstream-status", daemon=True)
            self._ticker.start()

    # ------------------------------------------------------------------ writing

    def _style(self, text: str, style: str) -> str:
        return f"{style}{text}{RESET}" if self.color else text

    def _write(self, text: str, style: str | None = None) -> None:
        """Write to ``out`` (clearing a status line on the same screen first) and flush."""
        if not text:
            return
        with self._lock:
            if self._status_shown and self._shared:
                self._clear_status()
            self.out.write(self._style(text, style) if style else text)
            self.out.flush()
            self._at_line_start = text.endswith("\n")

    def _end_line(self) -> None:
        if not self._at_line_start:
            self._write("\n")

    def _switch(self, mode: str) -> None:
        if self._mode == mode:
            return
        self._end_line()
        if mode == "reasoning":
            self._write("[reasoning] ", DIM)
        self._mode = mode

    def _line(self, text: str, style: str) -> None:
        """A line of its own."""
        self._end_line()
        self._write(text, style)
        self._write("\n")
        self._mode = None

    def feed(self, chunk: StreamChunk) -> None:
        """Render one chunk."""
        if type(chunk) is TextDelta:
            self._switch("text")
            self._write(chunk.text)
            self._chars += len(chunk.text)
        elif type(chunk) is ReasoningDelta:
            self._switch("reasoning")
            self._write(chunk.text, DIM)
            self._chars += len(chunk.text)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, ToolCallBlock):
            call = chunk.block
            flag = " [arguments truncated]" if call.arguments_truncated else ""
            self._line(f"→ tool call {call.name}({call.arguments}) id={call.id}{flag}", CYAN)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, FileBlock):
            self._line(f"[{describe_file(chunk.block)}]", CYAN)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, TextBlock) and chunk.block.citations:
            fresh = self._sources.new(chunk.block.citations)
            if fresh:
                self._line("sources:", DIM)
                for number, citation in fresh:
                    self._line(f"  [{number}] {describe_source(citation)}", DIM)
        elif type(chunk) is UsageChunk:
            self._usage = chunk.usage
            self._line(f"usage: {describe_usage(chunk.usage)}", DIM)
        elif type(chunk) is Finish:
            reason = chunk.reason
            raw = f" ({reason.raw})" if reason.raw else ""
            line = f"finish: {reason.kind}{raw}"
            if reason.failure is not None:
                self._line(f"{line} — {reason.failure.message}", RED)
                self.failure_shown = self.terminal
                for tip in self.tips(reason.failure) if self.tips is not None else ():
                    self._line(f"tip: {tip}", DIM)
            else:
                self._line(line, DIM)
        elif type(chunk) in (BlockStart, ToolCallDelta, BlockEnd):
            pass

    # ------------------------------------------------------------------ status line

    def _tick(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
                try:
                    self._draw_status()
                except (OSError, ValueError):  # err closed under us: no more status
                    return
            if self._stop.wait(STATUS_INTERVAL):
                return

    def _status_text(self) -> str:
        elapsed = time.monotonic() - self._started
        if not self._chars:
            return f"{elapsed:5.1f}s · waiting for the answer"
        rate = self._chars / 4 / elapsed if elapsed > 0 else 0.0
        return f"{elapsed:5.1f}s · ~{rate:5.1f} tok/s"

    def _draw_status(self) -> None:
        if self._shared and not self._at_line_start:
            return  # the cursor is on a line of the answer: never draw over it
        self.err.write(f"{CLEAR_LINE}{DIM}{self._status_text()}{RESET}")
        self.err.flush()
        self._status_shown = True

    def _clear_status(self) -> None:
        self._status_shown = False
        self.err.write(CLEAR_LINE)
        self.err.flush()

    def close(self) -> None:
        """Stop the status line and clear it, and end a partly written line on a
        terminal, so what is written next starts on a line of its own. Idempotent;
        never raises for a closed stream."""
        self._stop.set()
        ticker, self._ticker = self._ticker, None
        if ticker is not None and ticker is not threading.current_thread():
            ticker.join(1.0)
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self._status_shown:
                    self._clear_status()
                if self._shared:
                    self._end_line()
            except (OSError, ValueError):
                pass

    def summary(self, result: AssembledResponse | None = None) -> None:
        """Clear the status line (if any) and, when a status was asked for and ``err`` is a
        terminal, print the total time, the output tokens and the rate on ``err``."""
        was_closed = self._closed
        self.close()
        if not self.summarize or was_closed:
            return
        elapsed = time.monotonic() - self._started
        usage = result.usage if result is not None and result.usage is not None else self._usage
        if usage is not None and usage.output_tokens:
            tokens, approx = float(usage.output_tokens), ""
        else:
            tokens, approx = self._chars / 4, "~"
        rate = tokens / elapsed if elapsed > 0 else 0.0
        line = f"{elapsed:.1f}s · {approx}{tokens:.0f} tokens · {approx}{rate:.1f} tok/s"
        self.err.write(f"{DIM}{line}{RESET}\n" if self._err_color else f"{line}\n")
        self.err.flush()
