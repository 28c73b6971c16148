"""What a provider batch API is to the runner: limits, submit, status, results, cancel.

Contract:

1. **One class per API** (:mod:`.openai_api`, :mod:`.anthropic_api`, :mod:`.gemini_api`),
   built on an adapter's :class:`~dshstream._batch.provider.calls.BatchCalls`. Its
   :attr:`BatchApi.max_rows` and :attr:`BatchApi.max_bytes` are the provider's documented
   per-batch limits; the runner splits a larger input into several batches.
2. :meth:`BatchApi.entry` is one row's request in the API's format, its body the wire's
   own :meth:`~dshstream._adapters.wire.Wire.build_body` less the streaming fields;
   :meth:`BatchApi.submit` sends a list of entries as one batch and returns its id.
3. :meth:`BatchApi.status` polls one batch (:class:`ProviderBatchStatus`: the provider's state
   word, whether it has ended, its counts). :meth:`BatchApi.results` reads an ended
   batch's rows as :class:`RowAnswer` values, each naming its ``custom_id``: a body to
   translate, or a failure classified by the same classifier a stream's error goes
   through (an HTTP error row by its status and body, an in-band one by its payload).
   Rows come in whatever order the provider wrote them.
4. :meth:`BatchApi.cancel` asks the provider to stop a batch; rows that had finished keep
   their results.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..._core.classify import classify_error_payload, classify_http_error
from ..._core.errors import LlmError, error_for, make_failure
from ..._core.request import GenerateOptions
from ..._core.strict_json import dump_json
from ..._core.types import LlmFailure
from .calls import BatchCalls

__all__ = ["BatchApi", "ProviderBatchStatus", "RowAnswer", "count", "expired", "http_row_failure", "malformed", "obj", "payload_failure", "streamless"]


@dataclass(frozen=True, slots=True)
class ProviderBatchStatus:
    """One poll of one provider batch (rule 3)."""

    id: str
    state: str
    ended: bool
    total: int | None = None
    completed: int = 0
    failed: int = 0
    #: the batch-level failure when the whole batch failed (validation, an expired input file)
    failure: LlmFailure | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class RowAnswer:
    """One result row: a body for the wire's translator, or a failure (rule 3)."""

    custom_id: str
    body: dict[str, Any] | None = None
    failure: LlmFailure | None = None
    request_id: str | None = None


def http_row_failure(status: int, body: object, provider: str, request_id: str | None = None) -> LlmFailure:
    """A row answered with an HTTP error: the classifier a live answer's error goes through."""
    text = body if isinstance(body, str) else (dump_json(body) or "")
    headers = {"content-type": "application/json"}
    if request_id:
        headers["x-request-id"] = request_id
    return classify_http_error(status, text.encode("utf-8"), headers, provider=provider)


def payload_failure(payload: object, provider: str) -> LlmFailure:
    """An in-band error object: the classifier a stream's error event goes through."""
    return classify_error_payload(payload, provider=provider)


def expired(provider: str, what: str = "the batch's completion window ended before this row ran") -> LlmFailure:
    """An expired row: retryable (it never ran), as a timeout."""
    return make_failure("TIMEOUT", f"{provider}: {what} (TIMEOUT)", provider=provider, retryable=True)


class BatchApi:
    """A provider batch API (rules 1-4); subclasses implement it."""

    #: the documented per-batch limits (rule 1)
    max_rows = 50_000
    max_bytes = 200 * 1024 * 1024
    #: the wire name of the translator the bodies go to
    name = "batch"

    def __init__(self, calls: BatchCalls) -> None:
        self.calls = calls
        self.provider = calls.provider

    def entry(self, custom_id: str, options: GenerateOptions) -> dict[str, Any]:
        raise NotImplementedError

    def submit(self, entries: list[dict[str, Any]], options: GenerateOptions) -> str:
        raise NotImplementedError

    def status(self, batch_id: str) -> ProviderBatchStatus:
        raise NotImplementedError

    def results(self, status: ProviderBatchStatus) -> Iterator[RowAnswer]:
        raise NotImplementedError

    def cancel(self, batch_id: str) -> None:
        raise NotImplementedError


def streamless(body: dict[str, Any]) -> dict[str, Any]:
    """A stream's body as a non-streaming one: ``stream`` and ``stream_options`` out."""
    return {key: value for key, value in body.items() if key not in ("stream", "stream_options")}


def malformed(provider: str, why: str) -> LlmError:
    """An answer of the batch API that is not what its reference says."""
    return error_for(make_failure("MALFORMED_RESPONSE", f"{provider}: {why} (MALFORMED_RESPONSE)", provider=provider))


def count(value: object) -> int | None:
    """A count field (a JSON integer; Gemini's int64 counts come as strings), or ``None``."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (untrusted answers)."""
    return value if isinstance(value, dict) else {}
