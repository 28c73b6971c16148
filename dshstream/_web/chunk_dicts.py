"""Our own chunks, as the dicts a browser is sent (server-sent events or NDJSON of
``chunk_to_dict``), with nothing in them a browser must not see.

Contract: stdlib and the core only, no I/O; a generator of dicts.

1. **The chunk dicts.** Each chunk is :func:`~dshstream._core.types.chunk_to_dict`'s dict
   (``{"type": "text-delta", "index": 0, "text": "..."}``...), in order, so a page reads
   them with the same names the Python API has; ``chunk_from_dict`` reads them back.
2. **Safe for a browser.** A finish's failure keeps its code, its headline (``message``,
   redacted once more), category, retryability, status, ``retry_after``, request id and
   provider — never its ``detail`` (the provider's own words) or its diagnostics; the
   finish's ``replay_state`` (thinking signatures, encrypted reasoning: the server's to
   send back) is left out, and so are its metadata's ``container`` and a refusal's
   ``fallback_credit_token`` (the server's to reuse and to redeem).
3. **Always a finish.** A source that raises ends the dicts with a finish of kind
   ``error`` (or ``aborted``) carrying the failure's headline — an
   :class:`~dshstream._core.errors.LlmError`'s own, anything else ``the answer could not be
   completed`` — unless a finish came already; nothing raises out of the generator, and
   closing it (or its end) closes the source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .._core.errors import LlmError, make_failure
from .._core.log import get_logger
from .._core.types import Finish, FinishKind, FinishReason, LlmFailure, StreamChunk, chunk_to_dict
from .._core.validate import invalid
from .._core.closing import close_quietly
from .ui_stream import FAILED, headline

__all__ = ["browser_dicts", "safe_chunk_dict"]

log = get_logger("dshstream.web")

#: the failure fields a browser is sent (rule 2)
_FAILURE_FIELDS = ("code", "message", "category", "retryable", "status", "retry_after", "request_id", "provider")


def safe_chunk_dict(chunk: StreamChunk) -> dict[str, Any]:
    """``chunk_to_dict(chunk)`` made safe for a browser (rule 2)."""
    out = chunk_to_dict(chunk)
    if type(chunk) is Finish:
        out.pop("replay_state", None)
        metadata = out.get("metadata")
        if metadata is not None:
            metadata.pop("container", None)
            details = metadata.get("stop_details")
            if details is not None:
                details.pop("fallback_credit_token", None)
        failure = chunk.reason.failure
        if failure is not None:
            kept = {name: getattr(failure, name) for name in _FAILURE_FIELDS if getattr(failure, name) is not None}
            kept["message"] = headline(failure)
            out["reason"]["failure"] = kept
    return out


def _failed(failure: LlmFailure | None) -> dict[str, Any]:
    if failure is None:
        failure = make_failure("UNKNOWN", FAILED)
    kind: FinishKind = "aborted" if failure.code == "ABORTED" else "error"
    return safe_chunk_dict(Finish(FinishReason(kind, failure=failure)))


def browser_dicts(chunks: Iterable[StreamChunk]) -> Iterator[dict[str, Any]]:
    """The browser-safe dicts of ``chunks``, ending in a finish (rules 1-3)."""
    if not isinstance(chunks, Iterable):
        raise invalid(f"the web streams take an iterable of chunks, got {type(chunks).__name__}", wrong_type=True)
    return _dicts(chunks)


def _dicts(chunks: Iterable[StreamChunk]) -> Iterator[dict[str, Any]]:
    finished = False
    try:
        try:
            for chunk in chunks:
                finished = finished or type(chunk) is Finish
                yield safe_chunk_dict(chunk)
        except LlmError as exc:
            if not finished:
                yield _failed(exc.failure)
        except Exception as exc:  # noqa: BLE001 - rule 3: nothing raises out of the stream
            log.error("the chunk source raised %s; the stream ends with an error finish", type(exc).__name__)
            if not finished:
                yield _failed(None)
    finally:
        close_quietly(chunks)
