"""Rate-limit facts of one response, read from its headers, and stamped on its finish.

Contract: stdlib + :mod:`~dshstream._core.headers` only, sans-IO (apart from the clock for
an RFC 3339 reset given no ``now``). Header names are compared case-insensitively; a value
that can't be read counts as absent, never as an error.

The value, :class:`~dshstream._core.types.RateLimits`, is part of the vocabulary.

1. **What is read.** OpenAI, Groq and compatible servers:
   ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}`` (resets are Go-style
   durations: ``1s``, ``6m0s``, ``20ms``). Anthropic: ``anthropic-ratelimit-{requests,
   tokens}-{limit,remaining,reset}`` (RFC 3339 resets; ``input-tokens`` stands in for
   ``tokens`` when only it is sent). Mistral: ``x-ratelimit-{limit,remaining}-{req,
   requests,tokens}-minute`` (a one-minute window: the reset is unknown, ``window`` says
   ``60``). ``retry-after-ms`` / ``retry-after`` as
   :func:`~dshstream._core.headers.parse_retry_after` reads them.
2. **Resets are seconds** from when the headers were read (``now``), positive, or ``None``.
   Counts are non-negative integers, or ``None``.
3. :func:`parse_rate_limits` gives ``None`` when no header of rule 1 is readable, so a
   response from a server that sends none carries no ``rate_limits``.
4. :func:`stamp_rate_limits` passes an attempt's chunk batches through unchanged but for
   the last ``Finish``, whose metadata gets ``rate_limits`` (``ResponseMetadata`` keeps it
   out of equality: a fact of this run, not of the response). The headers are read once,
   when the stream starts, so the reset is counted from the response's arrival.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator, Mapping
from dataclasses import replace

from .headers import _duration, _until_time, lower_headers, parse_retry_after
from .types import Finish, RateLimits, ResponseMetadata, StreamChunk

__all__ = ["parse_rate_limits", "stamp_rate_limits"]

_COUNT = re.compile(r"\s*\d{1,15}\s*")


def _count(value: str | None) -> int | None:
    return int(value) if value is not None and _COUNT.fullmatch(value) else None


def parse_rate_limits(headers: Mapping[str, str] | None, now: float | None = None) -> RateLimits | None:
    """The rate-limit facts of ``headers`` (rules 1-3); ``now`` is a Unix time."""
    h = lower_headers(headers)
    if not h:
        return None
    when = time.time() if now is None else now
    values: dict[str, float | int | None] = {}
    for kind in ("requests", "tokens"):
        values[f"limit_{kind}"] = _count(h.get(f"x-ratelimit-limit-{kind}"))
        values[f"remaining_{kind}"] = _count(h.get(f"x-ratelimit-remaining-{kind}"))
        reset = h.get(f"x-ratelimit-reset-{kind}")
        values[f"reset_{kind}"] = _duration(reset) if reset is not None else None
        for name in (kind, "input-tokens") if kind == "tokens" else (kind,):
            prefix = f"anthropic-ratelimit-{name}-"
            if values[f"limit_{kind}"] is None and values[f"remaining_{kind}"] is None:
                values[f"limit_{kind}"] = _count(h.get(prefix + "limit"))
                values[f"remaining_{kind}"] = _count(h.get(prefix + "remaining"))
            if values[f"reset_{kind}"] is None and h.get(prefix + "reset") is not None:
                values[f"reset_{kind}"] = _until_time(h[prefix + "reset"], when)
        for name in ("req", "requests") if kind == "requests" else ("tokens",):
            limit = _count(h.get(f"x-ratelimit-limit-{name}-minute"))
            remaining = _count(h.get(f"x-ratelimit-remaining-{name}-minute"))
            if (limit is not None or remaining is not None) and values[f"limit_{kind}"] is None:
                values[f"limit_{kind}"], values[f"remaining_{kind}"] = limit, remaining
                values["window"] = 60.0
    values["retry_after"] = parse_retry_after(h, now=when)
    if all(value is None for value in values.values()):
        return None
    return RateLimits(**values)  # type: ignore[arg-type]


def stamp_rate_limits(
    batches: Generator[list[StreamChunk], None, None], headers: Mapping[str, str] | None
) -> Generator[list[StreamChunk], None, None]:
    """``batches`` with ``rate_limits`` on the last ``Finish``'s metadata (rule 4): the
    same generator when the headers carry none (no layer to resume on every read)."""
    limits = parse_rate_limits(headers)
    if limits is None:
        return batches
    return _stamped(batches, limits)


def _stamped(
    batches: Generator[list[StreamChunk], None, None], limits: RateLimits
) -> Generator[list[StreamChunk], None, None]:
    try:
        for batch in batches:
            if batch and type(batch[-1]) is Finish:
                finish = batch[-1]
                assert isinstance(finish, Finish)
                metadata = finish.metadata or ResponseMetadata()
                batch = [*batch[:-1], replace(finish, metadata=replace(metadata, rate_limits=limits))]
            yield batch
    finally:
        batches.close()
