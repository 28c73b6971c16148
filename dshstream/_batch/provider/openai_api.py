"""The OpenAI Batch API (chat completions and Responses).

Contract (the shapes of OpenAI's API reference, "Batch" and "Files"):

1. **Input.** One JSONL line per row, ``{"custom_id", "method": "POST", "url", "body"}``:
   ``url`` is the path of the wire's own endpoint (``/v1/chat/completions`` or
   ``/v1/responses``), ``body`` the wire's body less ``stream``/``stream_options``. At
   most 50,000 lines and 200 MB per file.
2. **Submit.** The file is uploaded to ``POST {base_url}/files`` (multipart/form-data,
   ``purpose=batch``), then ``POST {base_url}/batches`` with ``input_file_id``,
   ``endpoint`` (the same path) and ``completion_window: "24h"``.
3. **Status.** ``GET {base_url}/batches/{id}``: ``validating``, ``in_progress``,
   ``finalizing``, ``cancelling`` run on; ``completed``, ``failed``, ``expired`` and
   ``cancelled`` have ended. A ``failed`` batch's first ``errors.data`` entry is its
   failure (every row gets it).
4. **Results.** ``GET {base_url}/files/{output_file_id}/content`` and the same for
   ``error_file_id``: lines ``{"custom_id", "response": {"status_code", "request_id",
   "body"}, "error"}``. A 2xx row's body goes to the translator; another status is
   classified with its body as an HTTP answer; an ``error`` of ``batch_expired`` is an
   expired row (``TIMEOUT``), ``batch_cancelled`` a cancelled one (``ABORTED``), any other
   classified as an in-band error.
5. **Cancel.** ``POST {base_url}/batches/{id}/cancel``.
6. **Azure OpenAI** (:class:`AzureBatchApi`): the same shape on the resource's URLs —
   ``{endpoint}/openai/v1/files`` and ``/openai/v1/batches`` (API version ``v1``;
   ``preview`` adds ``?api-version=preview``), or ``{endpoint}/openai/files`` and
   ``/openai/batches`` with ``?api-version=`` a dated version (the classic API) — and
   lines whose ``url`` and batch ``endpoint`` are ``/chat/completions`` or
   ``/responses``, the body's ``model`` the global-batch deployment (the classic chat
   adapter's ``deployment``, else the request's model).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

from ..._core.errors import make_failure
from ..._core.request import GenerateOptions
from .api import (
    BatchApi, obj, ProviderBatchStatus, RowAnswer, count, expired, http_row_failure, malformed, payload_failure, streamless,
)

__all__ = ["AzureBatchApi", "OpenAIBatchApi"]

_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})


class OpenAIBatchApi(BatchApi):
    """OpenAI's ``/v1/batches`` (rules 1-5)."""

    max_rows = 50_000
    max_bytes = 200 * 1024 * 1024

    def _url(self, path: str) -> str:
        """The API URL of ``path`` (``/files``, ``/batches/{id}``...)."""
        return f"{self.calls.adapter.base_url}{path}"

    def _path(self, options: GenerateOptions) -> str:
        """A line's ``url`` and the batch's ``endpoint``: the wire endpoint's path."""
        return urlsplit(self.calls.adapter.wire.endpoint(options)).path

    def _body(self, options: GenerateOptions) -> dict[str, Any]:
        return streamless(self.calls.adapter.wire.build_body(options))

    def entry(self, custom_id: str, options: GenerateOptions) -> dict[str, Any]:
        return {"custom_id": custom_id, "method": "POST", "url": self._path(options), "body": self._body(options)}

    def submit(self, entries: list[dict[str, Any]], options: GenerateOptions) -> str:
        lines = "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in entries)
        uploaded = self.calls.post_multipart(
            self._url("/files"), {"purpose": "batch"},
            [("file", "batch.jsonl", "application/jsonl", lines.encode("utf-8"))],
        )
        file_id = uploaded.get("id") if isinstance(uploaded, dict) else None
        if not isinstance(file_id, str) or not file_id:
            raise malformed(self.provider, "the file upload answer has no id")
        created = self.calls.post_json(
            self._url("/batches"),
            {"input_file_id": file_id, "endpoint": entries[0]["url"], "completion_window": "24h"},
        )
        batch_id = created.get("id") if isinstance(created, dict) else None
        if not isinstance(batch_id, str) or not batch_id:
            raise malformed(self.provider, "the batch creation answer has no id")
        return batch_id

    def status(self, batch_id: str) -> ProviderBatchStatus:
        raw = self.calls.get_json(self._url(f"/batches/{quote(batch_id, safe='')}"))
        if not isinstance(raw, dict):
            raise malformed(self.provider, "the batch status is not an object")
        state = str(raw.get("status") or "unknown")
        counts = obj(raw.get("request_counts"))
        failure = None
        if state == "failed":
            errors = obj(raw.get("errors"))
            listed = errors.get("data")
            data = listed if isinstance(listed, list) else []
            first = data[0] if data and isinstance(data[0], dict) else {"message": "the batch failed"}
            failure = payload_failure({"error": first}, self.provider)
        return ProviderBatchStatus(
            batch_id, state, state in _ENDED,
            total=count(counts.get("total")), completed=count(counts.get("completed")) or 0,
            failed=count(counts.get("failed")) or 0, failure=failure, raw=raw,
        )

    def results(self, status: ProviderBatchStatus) -> Iterator[RowAnswer]:
        for field in ("output_file_id", "error_file_id"):
            file_id = status.raw.get(field)
            if isinstance(file_id, str) and file_id:
                url = self._url(f"/files/{quote(file_id, safe='')}/content")
                for line in self.calls.jsonl_rows(url, f"the batch's {field.removesuffix('_id')}"):
                    yield self._row(line.value) if line.ok else RowAnswer("", failure=line.failure)

    def _row(self, row: Any) -> RowAnswer:
        custom_id = row.get("custom_id") if isinstance(row, dict) else None
        if not isinstance(row, dict) or not isinstance(custom_id, str):
            return RowAnswer("", failure=malformed(self.provider, "a result line has no custom_id").failure)
        response = row.get("response") if isinstance(row.get("response"), dict) else None
        error = row.get("error")
        request_id = response.get("request_id") if response is not None else None
        request_id = request_id if isinstance(request_id, str) else None
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            if code == "batch_expired":
                return RowAnswer(custom_id, failure=expired(self.provider), request_id=request_id)
            if code == "batch_cancelled":
                failure = make_failure("ABORTED", f"{self.provider}: the batch was cancelled before this row ran",
                                       provider=self.provider)
                return RowAnswer(custom_id, failure=failure, request_id=request_id)
            return RowAnswer(custom_id, failure=payload_failure({"error": error}, self.provider), request_id=request_id)
        if response is None:
            return RowAnswer(custom_id, failure=malformed(self.provider, "a result line has no response").failure)
        status = response.get("status_code")
        body = response.get("body")
        if isinstance(status, int) and 200 <= status < 300 and isinstance(body, dict):
            return RowAnswer(custom_id, body=body, request_id=request_id)
        code = status if isinstance(status, int) else 500
        return RowAnswer(custom_id, failure=http_row_failure(code, body, self.provider, request_id),
                         request_id=request_id)

    def cancel(self, batch_id: str) -> None:
        self.calls.post_json(self._url(f"/batches/{quote(batch_id, safe='')}/cancel"), {})


class AzureBatchApi(OpenAIBatchApi):
    """Azure OpenAI's batches: OpenAI's shape on the resource's URLs (rule 6)."""

    def _url(self, path: str) -> str:
        wire: Any = self.calls.adapter.wire
        version = wire.api_version
        root = "/openai" if wire.classic else "/openai/v1"
        query = "" if version == "v1" else f"?api-version={quote(version, safe='')}"
        return f"{self.calls.adapter.base_url}{root}{path}{query}"

    def _path(self, options: GenerateOptions) -> str:
        return "/responses" if urlsplit(self.calls.adapter.wire.endpoint(options)).path.endswith("/responses") \
            else "/chat/completions"

    def _body(self, options: GenerateOptions) -> dict[str, Any]:
        body = super()._body(options)
        deployment = getattr(self.calls.adapter.wire, "deployment", None)
        body["model"] = deployment or options.model  # the global-batch deployment
        return body

