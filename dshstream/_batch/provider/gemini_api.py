"""The Gemini Batch API, inline requests.

Contract (the shapes of the Gemini API reference, "Batch API"):

1. **Input.** ``POST {base_url}/{version}/models/{model}:batchGenerateContent`` with
   ``{"batch": {"displayName", "inputConfig": {"requests": {"requests": [{"request",
   "metadata": {"key"}}]}}}}``: ``request`` is the wire's own ``generateContent`` body,
   ``key`` the row's custom id. One model per batch; inline requests stay under 20 MB (the
   documented inline limit; larger inputs are split).
2. **Status.** The answer is a long-running operation named ``batches/{id}``, polled at
   ``GET {base_url}/{version}/batches/{id}``; its ``metadata.state`` (or the finished
   ``response``'s) is ``BATCH_STATE_PENDING`` / ``RUNNING`` (running on) or
   ``SUCCEEDED`` / ``FAILED`` / ``CANCELLED`` / ``EXPIRED`` (ended); ``batchStats`` holds
   the counts (int64 as strings). An operation ``error`` is the whole batch's failure.
3. **Results.** ``output.inlinedResponses.inlinedResponses`` of the finished batch: each
   ``{"response" | "error", "metadata": {"key"}}``, matched by its key, never by position.
   A ``response`` goes to the translator (it is a stream event already); an ``error`` (a
   ``google.rpc.Status``: a gRPC ``code``) is classified as the HTTP answer a live request
   gets for it: ``{"error": {"code", "message", "status"}}`` with the HTTP status and name
   of its gRPC code (the standard mapping: 3 ``INVALID_ARGUMENT`` 400, 8
   ``RESOURCE_EXHAUSTED`` 429, 13 ``INTERNAL`` 500...). An
   ``EXPIRED`` batch's rows without an answer are expired (``TIMEOUT``).
4. **Cancel.** ``POST {base_url}/{version}/batches/{id}:cancel``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..._core.request import GenerateOptions
from .api import BatchApi, ProviderBatchStatus, obj, RowAnswer, count, http_row_failure, malformed, payload_failure, streamless

__all__ = ["GeminiBatchApi"]

#: gRPC status code -> (HTTP status, name): google.rpc.Code's standard HTTP mapping (rule 3)
_GRPC: dict[int, tuple[int, str]] = {
    1: (499, "CANCELLED"), 2: (500, "UNKNOWN"), 3: (400, "INVALID_ARGUMENT"), 4: (504, "DEADLINE_EXCEEDED"),
    5: (404, "NOT_FOUND"), 6: (409, "ALREADY_EXISTS"), 7: (403, "PERMISSION_DENIED"),
    8: (429, "RESOURCE_EXHAUSTED"), 9: (400, "FAILED_PRECONDITION"), 10: (409, "ABORTED"),
    11: (400, "OUT_OF_RANGE"), 12: (501, "UNIMPLEMENTED"), 13: (500, "INTERNAL"), 14: (503, "UNAVAILABLE"),
    15: (500, "DATA_LOSS"), 16: (401, "UNAUTHENTICATED"),
}

_ENDED = frozenset({"BATCH_STATE_SUCCEEDED", "BATCH_STATE_FAILED", "BATCH_STATE_CANCELLED", "BATCH_STATE_EXPIRED"})


class GeminiBatchApi(BatchApi):
    """Gemini's ``:batchGenerateContent`` with inline requests (rules 1-4)."""

    #: no documented row limit: the inline size limit binds first
    max_rows = 100_000
    max_bytes = 20 * 1000 * 1000

    def _root(self) -> str:
        wire: Any = self.calls.adapter.wire
        return f"{self.calls.adapter.base_url}/{wire.api_version}"

    def entry(self, custom_id: str, options: GenerateOptions) -> dict[str, Any]:
        return {"request": streamless(self.calls.adapter.wire.build_body(options)), "metadata": {"key": custom_id}}

    def submit(self, entries: list[dict[str, Any]], options: GenerateOptions) -> str:
        wire: Any = self.calls.adapter.wire
        url = f"{self._root()}/{wire.model_path(options.model)}:batchGenerateContent"
        body = {"batch": {"displayName": "dshstream", "inputConfig": {"requests": {"requests": entries}}}}
        created = self.calls.post_json(url, body)
        name = created.get("name") if isinstance(created, dict) else None
        if not isinstance(name, str) or not name.startswith("batches/"):
            raise malformed(self.provider, "the batch creation answer has no batches/ name")
        return name

    def _name(self, batch_id: str) -> str:
        name = batch_id if batch_id.startswith("batches/") else f"batches/{batch_id}"
        if not name[len("batches/"):].replace("-", "").replace("_", "").isalnum():
            raise malformed(self.provider, "a batch name is batches/ and letters, digits, - or _")
        return name

    def status(self, batch_id: str) -> ProviderBatchStatus:
        name = self._name(batch_id)
        raw = self.calls.get_json(f"{self._root()}/{name}")
        if not isinstance(raw, dict):
            raise malformed(self.provider, "the batch status is not an object")
        batch = _batch_of(raw)
        state = str(batch.get("state") or "BATCH_STATE_UNSPECIFIED")
        stats = obj(batch.get("batchStats"))
        error = raw.get("error")
        failure = payload_failure({"error": error}, self.provider) if isinstance(error, dict) else None
        ended = state in _ENDED or raw.get("done") is True
        return ProviderBatchStatus(
            name, state, ended, total=count(stats.get("requestCount")),
            completed=count(stats.get("successfulRequestCount")) or 0,
            failed=count(stats.get("failedRequestCount")) or 0, failure=failure, raw=raw,
        )

    def results(self, status: ProviderBatchStatus) -> Iterator[RowAnswer]:
        output = _batch_of(status.raw).get("output")
        inlined = output.get("inlinedResponses") if isinstance(output, dict) else None
        rows = inlined.get("inlinedResponses") if isinstance(inlined, dict) else None
        for row in rows if isinstance(rows, list) else []:
            metadata = row.get("metadata") if isinstance(row, dict) else None
            key = metadata.get("key") if isinstance(metadata, dict) else None
            if not isinstance(row, dict) or not isinstance(key, str):
                yield RowAnswer("", failure=malformed(self.provider, "an inlined response has no metadata.key").failure)
            elif isinstance(row.get("error"), dict):
                yield RowAnswer(key, failure=self._row_failure(row["error"]))
            elif isinstance(row.get("response"), dict):
                yield RowAnswer(key, body=row["response"])
            else:
                yield RowAnswer(key, failure=malformed(self.provider, "an inlined response has neither response nor error").failure)

    def _row_failure(self, error: dict[str, Any]) -> Any:
        """Rule 3: a ``google.rpc.Status`` as the HTTP error answer of a live request."""
        code = error.get("code")
        known = _GRPC.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
        if known is None:
            return payload_failure({"error": error}, self.provider)
        status, word = known
        body = {"error": {"code": status, "message": error.get("message"), "status": word,
                          **({"details": error["details"]} if "details" in error else {})}}
        return http_row_failure(status, body, self.provider)

    def cancel(self, batch_id: str) -> None:
        self.calls.post_json(f"{self._root()}/{self._name(batch_id)}:cancel", {})


def _batch_of(operation: dict[str, Any]) -> dict[str, Any]:
    """The batch an operation describes: its finished ``response`` over its ``metadata``."""
    merged: dict[str, Any] = {}
    for part in ("metadata", "response"):
        value = operation.get(part)
        if isinstance(value, dict):
            merged.update({k: v for k, v in value.items() if v is not None})
    return merged
