"""``dshstream batch INPUT -o OUTPUT --provider-batch``: the same file sent as provider
batches.

Contract:

1. ``--provider-batch`` submits every row of INPUT not already done in OUTPUT
   (:func:`~dshstream._batch.provider.runner.submit_batch`), says ``submitted ID`` on
   stderr at once (so a crash can be resumed), waits with a progress line on a terminal
   (``--poll-interval`` seconds between polls, default 30), and appends one row per
   request to OUTPUT: the same JSONL lines a live run writes.
2. ``--detach`` prints the handle on stdout and exits 0 once submitted; ``--resume ID``
   (with the same INPUT) waits for those batches and writes their rows, submitting
   nothing.
3. The summary and exit codes are the live run's (0 every row ok, 1 a row failed, 2 a usage
   mistake); Ctrl-C while waiting exits 130 and leaves the batches running at the
   provider, saying how to resume them.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, TextIO

from ..progress import BatchProgress, progress_line
from .runner import ProviderBatch, resume_batch, submit_batch

if TYPE_CHECKING:
    from ..._service import LlmService

__all__ = ["run_provider_batch_command"]


def run_provider_batch_command(args: argparse.Namespace, service: LlmService, out: TextIO, err: TextIO) -> int:
    """Rules 1-3."""
    from ..command import _lines

    started = time.monotonic()
    source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    try:
        common = dict(service=service, provider=args.provider, model=args.model, checkpoint=args.output,
                      fsync=args.fsync)
        handle: ProviderBatch
        if args.resume:
            handle = resume_batch(args.resume, _lines(source), **common)
        else:
            handle = submit_batch(_lines(source), **common)
            err.write(f"submitted {handle.id}\n")
    finally:
        if source is not sys.stdin:
            source.close()
    if args.detach:
        out.write(handle.id + "\n")
        return 0
    seen: list[BatchProgress] = []
    bad = 0
    try:
        for result in handle.results(poll_interval=args.poll_interval, progress=err.isatty(),
                                     on_progress=lambda p: seen.__setitem__(slice(None), [p])):
            if not result.ok:
                bad += 1
                if result.failure is not None:
                    err.write(f"row {result.id or result.index}: {result.failure.message}\n")
    except KeyboardInterrupt:
        err.write(f"interrupted; the batches run on at the provider: --resume {handle.id}\n")
        return 130
    final = handle.progress() if handle.batches else (seen[-1] if seen else BatchProgress())
    out.write(f"{progress_line(final)} | {time.monotonic() - started:.1f}s -> {args.output}\n")
    return 0 if bad == 0 else 1
