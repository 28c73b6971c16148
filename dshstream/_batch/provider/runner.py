"""Provider batches: the requests of ``run_many`` sent as half-price batch jobs, each row's
answer read by the wire translator a stream uses.

Contract:

1. **Which providers.** A row's provider must route (``service.adapter_for``) to the
   built-in OpenAI chat-completions or Responses adapter, their Azure OpenAI forms, the
   Anthropic adapter or the Gemini adapter (:func:`api_for`); any other is a
   ``ConfigurationError`` naming it, raised by :func:`submit_batch` before anything is
   sent. Bedrock's batch inference needs the input in S3 (and an IAM role for the job)
   and is not offered.
2. **Submitting.** :func:`submit_batch` checks its arguments, prepares every request as
   ``run_many`` does (:func:`~dshstream._batch.inputs.prepare`: the same keys), groups
   the rows by provider and model (one model per batch, as the APIs require), and splits
   each group at the API's row and byte limits (:attr:`~.api.BatchApi.max_rows`,
   :attr:`~.api.BatchApi.max_bytes`) into batches, each submitted at once. A row that is
   invalid, a key seen twice, a row alone larger than the byte limit, or a group whose
   submission failed becomes that row's failure (never a raise for one row). Rows done in
   ``checkpoint`` are not sent (they are yielded from it, ``resumed=True``).
3. **The handle.** :class:`ProviderBatch` names its batches in :attr:`ProviderBatch.id`
   (``dsb1:`` then ``provider=batch_id`` pairs, ``;``-separated): print it, and after a
   restart :func:`resume_batch` (with the same requests: they give each row its key and
   its translator's settings) picks the same batches up. Nothing of the run is kept
   anywhere else.
4. **Matched by id.** Every row is sent under a ``custom_id`` derived from its key (``r``
   and 40 hex digits of its SHA-256: the characters and length every API accepts); result
   rows are matched to requests by it, whatever their order. A request without a result
   row in an ended batch is a failure of its own (``MALFORMED_RESPONSE``; ``TIMEOUT`` when
   the batch expired, ``ABORTED`` when it was cancelled; ``MALFORMED_RESPONSE`` naming
   the first unreadable line when some result lines could not be read: too long, not
   JSON, or a half-written last line); a result row naming no request is ignored.
5. **The same result as a stream.** A result body is cut into the events of the wire's
   stream (:mod:`~dshstream._batch.provider.events`) and fed to a fresh translator from
   the adapter's own wire (``make_translator``: the structured-output unwrap, the output
   limit, the provider name as on a stream), then assembled: the row's
   :class:`~dshstream._batch.records.BatchResult` carries that ``AssembledResponse`` in
   ``response`` and its text, tool calls, finish, failure and usage, exactly as
   ``run_many`` fills them; ``cost`` is the usage's, else ``price(options, usage)``. An
   error row's failure comes from the same classifiers a stream's error goes through.
6. **Waiting.** :meth:`ProviderBatch.wait` polls every batch (``poll_interval`` seconds,
   until ``timeout``), reporting :class:`~dshstream._batch.progress.BatchProgress`
   (``in_flight``: rows still running at the provider) to ``on_progress`` and a terminal
   line when asked. :meth:`ProviderBatch.results` waits, then yields one row per request
   in input order, writing each to the checkpoint. :meth:`ProviderBatch.cancel` asks the
   provider to stop every batch not ended; rows finished before keep their results.
   Interrupting ``wait`` leaves the batches running at the provider (resume them by id).
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..._core.assembler import AssembledResponse, assemble
from ..._core.errors import LlmError, error_for, make_failure
from ..._core.request import GenerateOptions
from ..._core.types import LlmFailure, TokenUsage
from ..._core.validate import invalid
from ..checkpoint import Checkpoint
from ..inputs import Prepared, prepare
from ..progress import BatchProgress, TerminalProgress
from ..records import BatchResult
from .anthropic_api import AnthropicBatchApi
from .api import BatchApi, ProviderBatchStatus, RowAnswer
from .calls import RESULT_LIMIT, BatchCalls
from .events import events_for
from .gemini_api import GeminiBatchApi
from .openai_api import AzureBatchApi, OpenAIBatchApi

if TYPE_CHECKING:
    import os

    from ..._adapters.http import HttpAdapter
    from ..._service import LlmService

__all__ = ["ProviderBatch", "api_for", "custom_id_of", "resume_batch", "submit_batch"]

Price = Callable[[GenerateOptions, TokenUsage], "float | None"]
_HANDLE = "dsb1:"


def custom_id_of(key: str) -> str:
    """The ``custom_id`` a row with ``key`` is sent under (rule 4)."""
    return "r" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]


def api_for(service: LlmService, provider: str, *, timeout: float, result_limit: int) -> BatchApi:
    """The batch API ``provider`` routes to (rule 1)."""
    from ..._adapters.anthropic import AnthropicAdapter
    from ..._adapters.azure import AzureOpenAIAdapter, AzureOpenAIResponsesAdapter
    from ..._adapters.gemini import GeminiAdapter
    from ..._adapters.openai_chat import OpenAIChatAdapter
    from ..._adapters.openai_responses import OpenAIResponsesAdapter

    adapter: Any = service.adapter_for(provider)
    kinds: dict[type[Any], type[BatchApi]] = {
        OpenAIChatAdapter: OpenAIBatchApi,
        OpenAIResponsesAdapter: OpenAIBatchApi,
        AnthropicAdapter: AnthropicBatchApi,
        GeminiAdapter: GeminiBatchApi,
        AzureOpenAIAdapter: AzureBatchApi,
        AzureOpenAIResponsesAdapter: AzureBatchApi,
    }
    kind = kinds.get(type(adapter))  # exact types: another subclass (Vertex...) has other URLs
    if kind is None or (type(adapter) is OpenAIChatAdapter and adapter.wire.dialect.name != "openai"):
        raise invalid(
            f"provider {provider!r}: {type(adapter).__name__} has no provider batch API here "
            "(OpenAI and Azure OpenAI chat completions and Responses, Anthropic and Gemini do)"
        )
    return kind(BatchCalls(adapter, provider, timeout=timeout, result_limit=result_limit))


@dataclass(slots=True)
class _Row:
    index: int
    prepared: Prepared
    custom_id: str
    failure: LlmFailure | None = None
    stored: BatchResult | None = None


def _failed(row: _Row, failure: LlmFailure) -> BatchResult:
    return BatchResult(row.prepared.id, row.prepared.key, row.index, ok=False, finish="error", failure=failure)


class ProviderBatch:
    """Submitted provider batches and the requests they hold (rules 3-6)."""

    def __init__(
        self,
        service: LlmService,
        rows: list[_Row],
        batches: list[tuple[str, str]],
        *,
        store: Checkpoint | None,
        price: Price | None,
        timeout: float,
        result_limit: int,
    ) -> None:
        self.service = service
        self._rows = rows
        #: ``(provider, provider batch id)`` of every batch, in submission order
        self.batches = tuple(batches)
        self._store = store
        self._price = price
        self._timeout = timeout
        self._result_limit = result_limit
        self._apis: dict[str, BatchApi] = {}
        self._last: dict[tuple[str, str], ProviderBatchStatus] = {}
        self.started = time.monotonic()

    @property
    def id(self) -> str:
        """The handle that names these batches, for :func:`resume_batch` (rule 3)."""
        return _HANDLE + ";".join(f"{provider}={batch_id}" for provider, batch_id in self.batches)

    def __repr__(self) -> str:
        return f"ProviderBatch({self.id!r}, rows={len(self._rows)})"

    def _api(self, provider: str) -> BatchApi:
        api = self._apis.get(provider)
        if api is None:
            api = self._apis[provider] = api_for(self.service, provider, timeout=self._timeout,
                                                 result_limit=self._result_limit)
        return api

    def status(self) -> list[ProviderBatchStatus]:
        """Poll every batch not ended yet; the latest status of each."""
        for ref in self.batches:
            last = self._last.get(ref)
            if last is None or not last.ended:
                self._last[ref] = self._api(ref[0]).status(ref[1])
        return [self._last[ref] for ref in self.batches]

    @property
    def ended(self) -> bool:
        """Whether every batch had ended at the last poll."""
        return all(ref in self._last and self._last[ref].ended for ref in self.batches)

    def progress(self) -> BatchProgress:
        """The counts of the last poll (rule 6)."""
        done = failed = running = 0
        for ref in self.batches:
            status = self._last.get(ref)
            if status is None:
                continue
            done += status.completed
            failed += status.failed
            if not status.ended and status.total is not None:
                running += max(0, status.total - status.completed - status.failed)
        local_failed = sum(1 for row in self._rows if row.failure is not None)
        resumed = sum(1 for row in self._rows if row.stored is not None)
        return BatchProgress(done=done, failed=failed + local_failed, resumed=resumed, in_flight=running,
                             elapsed=time.monotonic() - self.started)

    def wait(
        self,
        *,
        poll_interval: float = 30.0,
        timeout: float | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        progress: bool = False,
        stop: threading.Event | None = None,
    ) -> bool:
        """Poll until every batch has ended (``True``), ``timeout`` seconds pass or ``stop``
        is set (``False``) (rule 6)."""
        if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or poll_interval <= 0:
            raise invalid(f"ProviderBatch.wait(poll_interval=...) must be a number > 0, not {poll_interval!r}")
        terminal = TerminalProgress(sys.stderr) if progress else None
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = stop if stop is not None else threading.Event()
        while True:
            self.status()
            snapshot = self.progress()
            if on_progress is not None:
                on_progress(snapshot)
            if terminal is not None:
                terminal.update(snapshot, force=self.ended)
            if self.ended:
                if terminal is not None:
                    terminal.end(snapshot)
                return True
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if pause.wait(poll_interval if left is None else min(poll_interval, left)):
                return False

    def cancel(self) -> None:
        """Ask the provider to stop every batch not ended (rule 6)."""
        for ref in self.batches:
            last = self._last.get(ref)
            if last is None or not last.ended:
                self._api(ref[0]).cancel(ref[1])

    def results(self, *, poll_interval: float = 30.0, timeout: float | None = None,
                on_progress: Callable[[BatchProgress], None] | None = None,
                progress: bool = False) -> Generator[BatchResult, None, None]:
        """Wait (:meth:`wait`), then one row per request in input order (rules 4-6). A
        ``timeout`` that passes first raises ``StreamTimeoutError`` (the batches run on)."""
        if not self.wait(poll_interval=poll_interval, timeout=timeout, on_progress=on_progress, progress=progress):
            raise error_for(make_failure("TIMEOUT", f"the provider batches of {self.id} had not ended in time (TIMEOUT)"))
        answers: dict[str, RowAnswer] = {}
        unreadable: list[LlmFailure] = []
        for ref in self.batches:
            for answer in self._api(ref[0]).results(self._last[ref]):
                if answer.custom_id:
                    answers[answer.custom_id] = answer  # rule 4: by id, whatever the order
                elif answer.failure is not None:
                    unreadable.append(answer.failure)
        statuses = [self._last[ref] for ref in self.batches]
        try:
            for row in self._rows:
                result = self._result(row, answers.get(row.custom_id), statuses, unreadable)
                if self._store is not None and not result.resumed:
                    self._store.write(result)
                yield result
        finally:
            if self._store is not None:
                self._store.close()

    def _result(self, row: _Row, answer: RowAnswer | None, statuses: list[ProviderBatchStatus],
                unreadable: list[LlmFailure]) -> BatchResult:
        if row.stored is not None:
            return replace(row.stored, index=row.index)
        if row.failure is not None:
            return _failed(row, row.failure)
        options = row.prepared.options
        assert options is not None
        duration = time.monotonic() - self.started
        if answer is None:
            return replace(_failed(row, _missing(options.provider, statuses, unreadable)), duration=duration)
        if answer.failure is not None:
            return BatchResult(row.prepared.id, row.prepared.key, row.index, ok=False, finish="error",
                               failure=answer.failure, attempts=1, request_id=answer.request_id or
                               answer.failure.request_id, duration=duration)
        response = self._assembled(options, answer)
        usage = response.usage
        cost = usage.cost if usage is not None else None
        if cost is None and usage is not None and self._price is not None:
            try:
                cost = self._price(options, usage)
            except Exception:
                cost = None
        metadata = response.metadata
        failure = response.failure
        request_id = metadata.request_id if metadata is not None and metadata.request_id else answer.request_id
        return BatchResult(
            row.prepared.id, row.prepared.key, row.index, ok=failure is None, text=response.text,
            tool_calls=response.tool_calls, finish=response.finish.kind, failure=failure, usage=usage, cost=cost,
            attempts=1, request_id=request_id, duration=duration, response=response,
        )

    def _assembled(self, options: GenerateOptions, answer: RowAnswer) -> AssembledResponse:
        """Rule 5: the body through the wire's own translator, then the assembler."""
        adapter: HttpAdapter = self._api(options.provider).calls.adapter
        translator = adapter.wire.make_translator(options, answer.request_id)
        chunks = translator.feed_events(events_for(translator.wire, answer.body))
        chunks += translator.close()
        return assemble(chunks, provider=options.provider, model=options.model)


def _missing(provider: str, statuses: list[ProviderBatchStatus], unreadable: list[LlmFailure]) -> LlmFailure:
    """The failure of a request without a result row (rule 4)."""
    failed = next((s.failure for s in statuses if s.failure is not None), None)
    if failed is not None:
        return failed
    if unreadable:  # its row may be one that could not be read: say which
        first = unreadable[0].message.removeprefix(f"{provider}: ").removesuffix(" (MALFORMED_RESPONSE)")
        more = f", and {len(unreadable) - 1} more unreadable" if len(unreadable) > 1 else ""
        return make_failure("MALFORMED_RESPONSE", f"{provider}: the batch results have no readable row for this "
                            f"request ({first}{more}) (MALFORMED_RESPONSE)", provider=provider)
    states = {s.state.lower() for s in statuses}
    if any("expired" in state for state in states):
        return make_failure("TIMEOUT", f"{provider}: the batch expired before this row ran (TIMEOUT)",
                            provider=provider, retryable=True)
    if any("cancel" in state for state in states):
        return make_failure("ABORTED", f"{provider}: the batch was cancelled before this row ran", provider=provider)
    return make_failure("MALFORMED_RESPONSE",
                        f"{provider}: the batch results have no row for this request (MALFORMED_RESPONSE)",
                        provider=provider)


def _check(poll_timeout: object, result_limit: object) -> None:
    if isinstance(poll_timeout, bool) or not isinstance(poll_timeout, (int, float)) or poll_timeout <= 0:
        raise invalid(f"submit_batch(request_timeout=...) must be a number > 0, not {poll_timeout!r}")
    if isinstance(result_limit, bool) or not isinstance(result_limit, int) or result_limit < 1:
        raise invalid(f"submit_batch(result_limit=...) must be an int >= 1, not {result_limit!r}")


def _rows(
    requests: Iterable[GenerateOptions | dict[str, Any]], provider: str | None, model: str | None,
    store: Checkpoint | None,
) -> list[_Row]:
    candidate: object = requests
    if isinstance(candidate, (str, bytes)) or not isinstance(candidate, Iterable):
        raise invalid("submit_batch(requests) must be an iterable of GenerateOptions or dicts", wrong_type=True)
    rows: list[_Row] = []
    seen: set[str] = set()
    for index, request in enumerate(requests):
        prepared = prepare(request, index, provider, model)
        row = _Row(index, prepared, custom_id_of(prepared.key))
        if prepared.error is not None:
            row.failure = prepared.error.failure
        elif prepared.key in seen:
            row.failure = make_failure("INVALID_OPTIONS", f"requests[{index}]: the key {prepared.key!r} is already "
                                       "in this batch (give each row its own id)")
        elif store is not None and prepared.key in store.done:
            row.stored = store.row(prepared.key)
        seen.add(prepared.key)
        rows.append(row)
    return rows


def _prepare_service(service: LlmService | None) -> LlmService:
    if service is None:
        from ..._defaults import default_service

        service = default_service()
    return service


def submit_batch(
    requests: Iterable[GenerateOptions | dict[str, Any]],
    *,
    service: LlmService | None = None,
    provider: str | None = None,
    model: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    fsync: bool = False,
    price: Price | None = None,
    request_timeout: float = 120.0,
    result_limit: int = RESULT_LIMIT,
) -> ProviderBatch:
    """Send ``requests`` as provider batches at once and return their handle (rules 1-3).
    ``request_timeout`` bounds each HTTP call (seconds); ``result_limit`` each result file
    (bytes)."""
    _check(request_timeout, result_limit)
    if price is not None and not callable(price):
        raise invalid("submit_batch(price=...) must be callable", wrong_type=True)
    service = _prepare_service(service)
    store = Checkpoint(checkpoint, fsync=fsync) if checkpoint is not None else None
    rows = _rows(requests, provider, model, store)
    groups: dict[tuple[str, str], list[_Row]] = {}
    for row in rows:
        if row.failure is None and row.stored is None:
            options = row.prepared.options
            assert options is not None
            groups.setdefault((options.provider, options.model), []).append(row)
    apis: dict[str, BatchApi] = {}
    for name, _ in groups:
        if any(mark in name for mark in ";= ") or not name:
            raise invalid(f"provider {name!r}: a provider batch needs a route name without ';', '=' or spaces")
        apis[name] = api_for(service, name, timeout=request_timeout, result_limit=result_limit)  # rule 1 first
    batches: list[tuple[str, str]] = []
    for (name, _), members in groups.items():
        api = apis[name]
        for chunk in _split(api, members):
            entries = [entry for _, entry in chunk]
            first = chunk[0][0].prepared.options
            assert first is not None
            try:
                batches.append((name, api.submit(entries, first)))
            except LlmError as exc:  # rule 2: this chunk's rows fail, the others go on
                for row, _ in chunk:
                    row.failure = exc.failure
    handle = ProviderBatch(service, rows, batches, store=store, price=price, timeout=request_timeout,
                           result_limit=result_limit)
    handle._apis.update(apis)
    return handle


def _split(api: BatchApi, members: list[_Row]) -> Iterator[list[tuple[_Row, dict[str, Any]]]]:
    """Rule 2: the rows of one group in batches within the API's row and byte limits."""
    chunk: list[tuple[_Row, dict[str, Any]]] = []
    size = 0
    for row in members:
        options = row.prepared.options
        assert options is not None
        try:
            entry = api.entry(row.custom_id, options)
        except LlmError as exc:
            row.failure = exc.failure
            continue
        length = len(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1
        if length > api.max_bytes:
            row.failure = make_failure("INVALID_OPTIONS", f"requests[{row.index}]: {length} bytes, more than one "
                                       f"{api.provider} batch takes ({api.max_bytes})")
            continue
        if chunk and (len(chunk) >= api.max_rows or size + length > api.max_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((row, entry))
        size += length
    if chunk:
        yield chunk


def resume_batch(
    batch_id: str,
    requests: Iterable[GenerateOptions | dict[str, Any]],
    *,
    service: LlmService | None = None,
    provider: str | None = None,
    model: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    fsync: bool = False,
    price: Price | None = None,
    request_timeout: float = 120.0,
    result_limit: int = RESULT_LIMIT,
) -> ProviderBatch:
    """The handle of batches submitted before (``batch_id``: a :attr:`ProviderBatch.id`),
    with the requests they were submitted from (rule 3)."""
    _check(request_timeout, result_limit)
    if not isinstance(batch_id, str) or not batch_id.startswith(_HANDLE):
        raise invalid(f"resume_batch(batch_id=...) must be a ProviderBatch.id ({_HANDLE}...), not {batch_id!r}")
    batches: list[tuple[str, str]] = []
    for pair in batch_id[len(_HANDLE):].split(";"):
        name, mark, ident = pair.partition("=")
        if not mark or not name or not ident:
            raise invalid(f"resume_batch(batch_id=...): {pair!r} is not provider=batch_id")
        batches.append((name, ident))
    service = _prepare_service(service)
    for name, _ in batches:
        api_for(service, name, timeout=request_timeout, result_limit=result_limit)  # rule 1 before anything
    store = Checkpoint(checkpoint, fsync=fsync) if checkpoint is not None else None
    rows = _rows(requests, provider, model, store)
    return ProviderBatch(service, rows, batches, store=store, price=price, timeout=request_timeout,
                         result_limit=result_limit)
