"""The Anthropic Message Batches API.

Contract (the shapes of Anthropic's API reference, "Message Batches"):

1. **Input.** ``POST {base_url}/v1/messages/batches`` with ``{"requests": [{"custom_id",
   "params"}]}``: ``params`` is the wire's Messages body less ``stream``. At most 100,000
   requests and 256 MB per batch. The wire's protocol headers (``anthropic-version``)
   travel with every call.
2. **Status.** ``GET {base_url}/v1/messages/batches/{id}``: ``processing_status``
   ``in_progress`` and ``canceling`` run on, ``ended`` has ended; ``request_counts`` holds
   ``processing``, ``succeeded``, ``errored``, ``canceled``, ``expired``.
3. **Results.** The ended batch's ``results_url`` (fetched only on the provider's own
   host: calls rule 4) is JSONL, ``{"custom_id", "result": {"type", ...}}``: ``succeeded``
   carries the ``message`` (to the translator), ``errored`` its ``error``: classified as
   the HTTP answer a live request gets for it, the status read off the error's ``type``
   (the documented pairs: ``invalid_request_error`` 400, ``authentication_error`` 401,
   ``permission_error`` 403, ``not_found_error`` 404, ``request_too_large`` 413,
   ``rate_limit_error`` 429, ``api_error`` 500, ``overloaded_error`` 529; another type is
   classified as an in-band error); ``canceled`` is ``ABORTED``, ``expired`` ``TIMEOUT``.
4. **Cancel.** ``POST {base_url}/v1/messages/batches/{id}/cancel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

from ..._core.errors import make_failure
from ..._core.request import GenerateOptions
from .api import BatchApi, ProviderBatchStatus, obj, RowAnswer, count, expired, http_row_failure, malformed, payload_failure, streamless

__all__ = ["AnthropicBatchApi"]

#: Anthropic's error types and the HTTP status each comes with (rule 3)
_STATUS: dict[object, int] = {
    "invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
    "request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "overloaded_error": 529,
}


class AnthropicBatchApi(BatchApi):
    """Anthropic's ``/v1/messages/batches`` (rules 1-4)."""

    max_rows = 100_000
    max_bytes = 256 * 1024 * 1024

    def _url(self, suffix: str = "") -> str:
        return f"{self.calls.adapter.base_url}/v1/messages/batches{suffix}"

    def entry(self, custom_id: str, options: GenerateOptions) -> dict[str, Any]:
        return {"custom_id": custom_id, "params": streamless(self.calls.adapter.wire.build_body(options))}

    def submit(self, entries: list[dict[str, Any]], options: GenerateOptions) -> str:
        created = self.calls.post_json(self._url(), {"requests": entries})
        batch_id = created.get("id") if isinstance(created, dict) else None
        if not isinstance(batch_id, str) or not batch_id:
            raise malformed(self.provider, "the batch creation answer has no id")
        return batch_id

    def status(self, batch_id: str) -> ProviderBatchStatus:
        raw = self.calls.get_json(self._url("/" + quote(batch_id, safe="")))
        if not isinstance(raw, dict):
            raise malformed(self.provider, "the batch status is not an object")
        state = str(raw.get("processing_status") or "unknown")
        counts = obj(raw.get("request_counts"))
        numbers = {name: count(counts.get(name)) or 0 for name in
                   ("processing", "succeeded", "errored", "canceled", "expired")}
        return ProviderBatchStatus(
            batch_id, state, state == "ended", total=sum(numbers.values()) if counts else None,
            completed=numbers["succeeded"], failed=numbers["errored"] + numbers["canceled"] + numbers["expired"],
            raw=raw,
        )

    def results(self, status: ProviderBatchStatus) -> Iterator[RowAnswer]:
        url = status.raw.get("results_url")
        if not isinstance(url, str) or not url:
            return
        for line in self.calls.jsonl_rows(self.calls.check_own_host(url), "the batch results"):
            yield self._row(line.value) if line.ok else RowAnswer("", failure=line.failure)

    def _row(self, row: Any) -> RowAnswer:
        custom_id = row.get("custom_id") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(custom_id, str):
            return RowAnswer("", failure=malformed(self.provider, "a result line has no custom_id").failure)
        result = obj(row.get("result"))
        kind = result.get("type")
        if kind == "succeeded" and isinstance(result.get("message"), dict):
            return RowAnswer(custom_id, body=result["message"])
        if kind == "expired":
            return RowAnswer(custom_id, failure=expired(self.provider, "the batch's 24 hours ended before this row ran"))
        if kind == "canceled":
            failure = make_failure("ABORTED", f"{self.provider}: the batch was cancelled before this row ran",
                                   provider=self.provider)
            return RowAnswer(custom_id, failure=failure)
        error = result.get("error")
        if isinstance(error, dict) and error.get("type") != "error":
            error = {"type": "error", "error": error}  # the bare error object: the stream's error event shape
        if error is None:
            return RowAnswer(custom_id, failure=malformed(self.provider, f"a result row of type {kind!r}").failure)
        inner = error.get("error") if isinstance(error, dict) else None
        status = _STATUS.get(inner.get("type")) if isinstance(inner, dict) else None
        if status is not None:  # rule 3: the answer a live request gets
            return RowAnswer(custom_id, failure=http_row_failure(status, error, self.provider))
        return RowAnswer(custom_id, failure=payload_failure(error, self.provider))

    def cancel(self, batch_id: str) -> None:
        self.calls.post_json(self._url("/" + quote(batch_id, safe="") + "/cancel"), {})
