"""``dshstream batch INPUT -o OUTPUT``: run_many over a JSONL file, with a summary.

Contract:

1. Each input line is one JSON object (``{"id", "prompt"}`` or ``{"id", "messages"}``,
   optionally ``system``, ``max_tokens``, ``temperature``); blank lines are skipped. A line
   that is not a JSON object is a failed row naming its line number, never the end of the
   run. The input is read lazily.
2. ``OUTPUT`` is the checkpoint: rows are appended as they finish, and a rerun with the same
   file resumes (rows done there are not sent again).
3. The progress line goes to stderr on a terminal; the summary (done, failed, skipped,
   resumed, tokens, cost, time) is printed at the end. The exit code is 0 when every row is
   ok, 1 when a row failed or was skipped, 2 for a usage mistake, 130 on Ctrl-C (the rows
   that finished are in ``OUTPUT``; the ones in flight were cancelled, not written).
4. ``--provider-batch``, ``--detach``, ``--resume ID``: the same file as provider batches
   (:mod:`~dshstream._batch.provider.command`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from .executor import run_many
from .progress import BatchProgress, progress_line

if TYPE_CHECKING:
    from .._service import LlmService

__all__ = ["run_batch_command"]


def _lines(stream: TextIO) -> Iterator[Any]:
    for number, line in enumerate(stream, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        yield row if isinstance(row, dict) else f"line {number} is not a JSON object"


def run_batch_command(args: argparse.Namespace, service: LlmService, out: TextIO, err: TextIO) -> int:
    """Rules 1-4."""
    if getattr(args, "provider_batch", False) or getattr(args, "resume", None):
        from .provider.command import run_provider_batch_command

        return run_provider_batch_command(args, service, out, err)
    seen: list[BatchProgress] = []
    started = time.monotonic()
    bad = 0
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    try:
        for result in run_many(
            _lines(source), service=service, provider=args.provider, model=args.model,
            concurrency=args.concurrency, checkpoint=args.output, fsync=args.fsync,
            max_cost=args.max_cost, max_tokens=args.max_total_tokens,
            progress=err.isatty(), on_progress=lambda p: seen.__setitem__(slice(None), [p]),
        ):
            if not result.ok:
                bad += 1
                if not result.skipped and result.failure is not None:
                    err.write(f"row {result.id or result.index}: {result.failure.message}\n")
    finally:
        if source is not sys.stdin:
            source.close()
    final = seen[-1] if seen else BatchProgress()
    out.write(f"{progress_line(final)} | {time.monotonic() - started:.1f}s -> {args.output}\n")
    return 0 if bad == 0 else 1
