"""BatchProgress: the executor's counts so far, and the one-line terminal view of them.

Contract:

1. :class:`BatchProgress` is a frozen snapshot: rows ``done`` (ok), ``failed``,
   ``skipped``, ``resumed`` (read back from the checkpoint), ``in_flight``, ``tokens``,
   ``cost``, ``rate_limited`` (429s seen), ``elapsed`` seconds and ``rate`` (rows finished
   per second in this run).
2. :func:`progress_line` renders it on one line (no secret, no prompt text can be in it:
   it holds numbers only). :class:`TerminalProgress` rewrites that line in place
   (``\\r``) at most every 0.2 s and ends it with a newline; it writes only when its
   stream is a terminal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TextIO

__all__ = ["BatchProgress", "TerminalProgress", "progress_line"]


@dataclass(frozen=True, slots=True)
class BatchProgress:
    """The executor's counts so far (rule 1)."""

    done: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0
    in_flight: int = 0
    tokens: int = 0
    cost: float = 0.0
    rate_limited: int = 0
    elapsed: float = 0.0

    @property
    def rate(self) -> float:
        """Rows finished (ok or failed) per second in this run."""
        return (self.done + self.failed) / self.elapsed if self.elapsed > 0 else 0.0


def progress_line(progress: BatchProgress) -> str:
    """One line for a terminal (rule 2)."""
    parts = [f"{progress.done} done", f"{progress.failed} failed", f"{progress.in_flight} in flight"]
    if progress.resumed:
        parts.append(f"{progress.resumed} resumed")
    if progress.skipped:
        parts.append(f"{progress.skipped} skipped")
    parts.append(f"{progress.tokens:,} tokens")
    if progress.cost:
        parts.append(f"${progress.cost:.4f}")
    if progress.rate_limited:
        parts.append(f"{progress.rate_limited} rate-limited")
    parts.append(f"{progress.rate:.1f}/s")
    return " | ".join(parts)


class TerminalProgress:
    """The progress line, rewritten in place on a terminal (rule 2)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last = 0.0
        self._width = 0
        self._shown = False

    def update(self, progress: BatchProgress, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < 0.2:
            return
        self._last = now
        line = progress_line(progress)
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)
        self._shown = True

    def end(self, progress: BatchProgress) -> None:
        self.update(progress, force=True)
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
