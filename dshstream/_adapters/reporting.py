"""Failure reporting: one log line and one prompt-free diagnostic record per failed
attempt, handed to the caller's ``failure_reporter``.

Contract:

1. Every failed attempt is reported exactly once, before the retry decision.
2. The record never holds prompt text, tool arguments, media or keys: the provider,
   model, attempt number, chunks received, elapsed time, the redacted ``base_url`` and the
   adapter's own bounded request summary (:func:`request_summary` by default: media parts
   appear as kind, media type and size only). The
   failure's ``diagnostics`` become the record merged over what the translator put there
   (an empty reply's ``finish_raw``, token counts, ``max_tokens``...).
3. A reporter that raises is logged and ignored: it never breaks the stream.
4. Failures that point at a defect (ours or the provider's wire) log at ERROR; expected
   outcomes (rate limits, timeouts) at WARNING; the caller's own cancel (``ABORTED``) at
   INFO — it is no failure of the provider.
5. The same report ends the attempt for the stream's watch (:mod:`dshstream._observe`):
   observers hear one ``AttemptRecord`` per failed attempt, from here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from .._core.log import get_logger
from .._core.media_support import media_summary
from .._core.request import GenerateOptions
from .._core.types import LlmFailure
from .settings import FailureReporter

if TYPE_CHECKING:
    from .._observe import StreamWatch

log = get_logger("dshstream.adapters")

__all__ = ["attempt_reporter", "report_attempt", "report_failure", "report_stream_attempt", "request_summary"]

_DEFECT_CODES = frozenset({"MALFORMED_RESPONSE", "CONTRACT_VIOLATION", "EVENT_TOO_LARGE", "UNKNOWN"})


def request_summary(options: GenerateOptions) -> dict[str, Any]:
    """A bounded, prompt-free summary of a request: roles, counts, tool history, and the
    media parts' kinds, media types and sizes (never their bytes)."""
    summary: dict[str, Any] = {
        "last_roles": [m.role for m in options.messages][-5:],
        "message_count": len(options.messages),
        "tool_count": len(options.tools),
        "has_tool_history": any(m.role == "tool" for m in options.messages),
    }
    attachments = media_summary(options.messages)
    if attachments:
        summary["attachments"] = attachments
    return summary


def report_failure(
    failure: LlmFailure,
    reporter: FailureReporter | None,
    *,
    provider: str,
    attempt: int,
    record: dict[str, Any],
    watch: StreamWatch | None = None,
) -> LlmFailure:
    """Log one failed attempt, hand its record to ``reporter`` and end the attempt for
    ``watch``; return the failure carrying the record as its ``diagnostics`` (rules 1-5)."""
    if failure.code == "ABORTED":
        # the caller's own stop (cancel(), close(), Ctrl-C): not a failure of the provider
        log.info("%s: attempt %d ended: cancelled by the caller (ABORTED)", provider, attempt)
    else:
        level = log.error if failure.code in _DEFECT_CODES else log.warning
        level("%s: attempt %d failed: %s", provider, attempt, failure.code)
    # the translator's own facts (an empty reply's token counts...) stay beside the record
    failure = replace(failure, diagnostics={**failure.diagnostics, **record} if failure.diagnostics else record)
    if reporter is not None:
        try:
            reporter(failure, record)
        except Exception:  # noqa: BLE001 - a reporter must never break the stream
            log.exception("failure_reporter raised")
    if watch is not None:
        watch.end_attempt("failed", int(record.get("chunks_received") or 0), failure)
    return failure


def report_attempt(
    failure: LlmFailure,
    reporter: FailureReporter | None,
    options: GenerateOptions,
    *,
    attempt: int,
    chunks: int,
    started: float,
    base_url: str | None,
    details: dict[str, Any],
    watch: StreamWatch | None = None,
) -> LlmFailure:
    """:func:`report_failure` for one failed attempt of an adapter's stream, with the record
    every adapter files (rule 2): provider, model, attempt, chunks received, elapsed time
    since ``started`` (``time.monotonic``), the already-redacted ``base_url``, then the
    adapter's ``details`` (its request summary)."""
    record = {
        "provider": options.provider,
        "model": options.model,
        "attempt": attempt,
        "chunks_received": chunks,
        "elapsed_s": round(time.monotonic() - started, 3),
        "base_url": base_url,
        **details,
    }
    return report_failure(failure, reporter, provider=options.provider, attempt=attempt, record=record, watch=watch)


def report_stream_attempt(
    options: GenerateOptions,
    reporter: FailureReporter | None,
    base_url: Callable[[], str | None],
    details: Callable[[], dict[str, Any]],
    failure: LlmFailure,
    attempt: int,
    chunks: int,
    started: float,
    watch: StreamWatch | None,
) -> LlmFailure:
    """:func:`report_attempt` for one failed attempt of the stream of ``options``, with the
    adapter's ``reporter``; ``base_url`` (redacted) and ``details`` are asked only now."""
    return report_attempt(
        failure,
        reporter,
        options,
        attempt=attempt,
        chunks=chunks,
        started=started,
        base_url=base_url(),
        details=details(),
        watch=watch,
    )


#: ``attempt_reporter(options, reporter, base_url, details)``: the attempt loop's ``report``
#: for one stream (rule 2), :func:`report_stream_attempt` with the stream's four arguments
#: bound. A partial of ``partial``: building it per stream runs nothing of this module,
#: which is entered only when an attempt fails.
attempt_reporter: Callable[
    [GenerateOptions, FailureReporter | None, Callable[[], str | None], Callable[[], dict[str, Any]]],
    Callable[[LlmFailure, int, int, float, StreamWatch | None], LlmFailure],
] = partial(partial, report_stream_attempt)
