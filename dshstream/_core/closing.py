"""Closing what a stream was built on, never raising.

Contract: stdlib only.

1. :func:`close_quietly` calls ``source.close()`` when the source has a callable
   ``close`` — a generator, a response, a wrapper — and returns; an exception it raises is
   logged (its type and ``what``, never its text, which may quote a body) and swallowed:
   a close runs in ``finally`` blocks and on the caller's ``close()``, where a second error
   would hide the first or break the caller's cleanup.
2. ``ValueError`` from a generator running in another thread means the source is being
   closed there already: not logged.
"""

from __future__ import annotations

from .log import get_logger

__all__ = ["close_quietly"]

log = get_logger("dshstream._core.closing")


def close_quietly(source: object, what: str = "the chunk source") -> None:
    """``source.close()`` when it has one; never raises (rules 1-2)."""
    close = getattr(source, "close", None)
    if not callable(close):
        return
    try:
        close()
    except ValueError:  # rule 2: "generator already executing" in another thread
        pass
    except Exception as exc:  # noqa: BLE001 - closing never raises (rule 1)
        log.error("closing %s raised %s", what, type(exc).__name__)
