"""run_many: many requests on threads, one result per request, rate-limit aware, resumable.

Contract:

1. **Checked first.** ``run_many`` checks its own arguments when called and raises
   :class:`~dshstream._core.errors.ConfigurationError` naming the argument; it returns a
   generator. After that nothing raises for one row: each request gives exactly one
   :class:`~dshstream._batch.records.BatchResult` (a bad request is a failed row).
2. **Lazy and bounded.** The input is read as results are taken: at most
   ``2 * concurrency`` rows are in flight or finished but not yet yielded.
3. **Order.** Results come in completion order, or in input order with ``ordered=True``.
4. **Threads and limits.** ``concurrency`` worker threads; before each attempt a worker
   asks the :class:`~dshstream._batch.limiter.Limiter` of its provider (one per
   ``options.provider`` for the whole run: ``limiter=`` builds them, default
   :class:`~dshstream._batch.limiter.ProviderLimiter`), and tells it the attempt's
   ``metadata.rate_limits`` or its 429 (``failure.retry_after``). The adapter's own
   retries are off (``max_retries=0`` unless the request sets it) so every wait goes
   through the limiter; a retryable failure before the answer (a 429, a 5xx, a connection
   refused, reset or timed out before any response: the attempt loop's ``accepted``
   diagnostic is false) is tried again, up to ``max_attempts``, never one the provider had
   accepted.
5. **Resumable.** ``checkpoint=PATH`` (:mod:`~dshstream._batch.checkpoint`): a finished
   row is appended as it completes, before it is yielded; a key already done is not sent
   again, its stored row is yielded (``resumed=True``).
6. **Stopping.** If the input iterator raises, no new row starts, the rows in flight
   finish, are written and yielded, then the exception propagates. Closing the generator
   (``break``, garbage collection) or ``KeyboardInterrupt`` cancels the rows in flight
   through their ``GenerateOptions.cancel`` (the executor sets its own event on each row)
   and waits for the workers; rows aborted so are not written, rows that had finished are.
7. **Budget.** Once the finished rows' cost reaches ``max_cost`` (USD) or their tokens
   reach ``max_tokens``, no new row is sent; every later row is yielded ``skipped`` with an
   ``ABORTED`` failure saying which budget, and is not written (a rerun with a larger
   budget sends it).
8. **Progress.** A progress line on stderr when it is a terminal (``progress=None``) or
   when ``progress=True``; none with ``progress=False``. ``on_progress`` gets a
   :class:`~dshstream._batch.progress.BatchProgress` at most every 0.2 s and once at the end.
9. **Provider batches.** ``mode="batch"`` sends the same requests as the providers' batch
   APIs instead (:mod:`~dshstream._batch.provider.runner`: polled every ``poll_interval``
   seconds, one row per request in input order, each with the result its stream would
   have given); the checkpoint works the same. As in a live run the arguments are checked
   when ``run_many`` is called (the ``provider`` argument's route too) and nothing is read
   or sent before the first result is asked for: then the whole input is read and
   submitted (a row's route without a batch API raises ``ConfigurationError`` there,
   before anything is sent). ``concurrency``, ``max_attempts``, ``limiter``, ``max_cost``
   and ``max_tokens`` other than their defaults are refused (the provider runs the rows;
   the whole batch is sent before any row's cost is known); ``ordered`` is moot, the rows
   come in input order.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._core.errors import LlmError, make_failure
from .._core.request import GenerateOptions
from .._core.types import FinishKind, LlmFailure, TokenUsage
from .._core.validate import invalid
from .checkpoint import Checkpoint
from .inputs import Prepared, prepare
from .limiter import Limiter, ProviderLimiter
from .progress import BatchProgress, TerminalProgress
from .records import BatchResult

if TYPE_CHECKING:
    import os

    from .._service import LlmService
    from .provider.runner import ProviderBatch

__all__ = ["run_many"]

Price = Callable[[GenerateOptions, TokenUsage], "float | None"]


@dataclass(slots=True)
class _Job:
    index: int
    prepared: Prepared
    options: GenerateOptions
    cancel: threading.Event


def _check_limit(value: object, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise invalid(f"run_many({field}=...) must be a number >= 0, not {value!r}")
    return float(value)


def run_many(
    requests: Iterable[GenerateOptions | dict[str, Any]],
    *,
    service: LlmService | None = None,
    concurrency: int = 8,
    ordered: bool = False,
    checkpoint: str | os.PathLike[str] | None = None,
    fsync: bool = False,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    provider: str | None = None,
    model: str | None = None,
    max_attempts: int = 6,
    limiter: Callable[[str], Limiter] | None = None,
    price: Price | None = None,
    progress: bool | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    mode: str = "live",
    poll_interval: float = 30.0,
) -> Generator[BatchResult, None, None]:
    """Send every request, ``concurrency`` at a time; yield one result per request
    (rules 1-8). ``requests`` are ``GenerateOptions`` or dicts (``{"id", "prompt"}``,
    ``{"id", "messages"}``; ``provider``/``model`` default to the arguments).
    ``mode="batch"``: as provider batches (rule 9)."""
    if mode not in ("live", "batch"):
        raise invalid(f"run_many(mode=...) must be 'live' or 'batch', not {mode!r}")
    if mode == "batch":
        return _provider_batches(requests, service, provider, model, checkpoint, fsync, price, progress, on_progress,
                                 poll_interval, concurrency=concurrency, max_attempts=max_attempts, limiter=limiter,
                                 max_cost=max_cost, max_tokens=max_tokens)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise invalid(f"run_many(concurrency=...) must be an int >= 1, not {concurrency!r}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
        raise invalid(f"run_many(max_attempts=...) must be an int >= 1, not {max_attempts!r}")
    candidate: object = requests
    if isinstance(candidate, (str, bytes)) or not isinstance(candidate, Iterable):
        raise invalid("run_many(requests) must be an iterable of GenerateOptions or dicts", wrong_type=True)
    cost_limit = _check_limit(max_cost, "max_cost")
    token_limit = _check_limit(max_tokens, "max_tokens")
    for name, value in (("on_progress", on_progress), ("limiter", limiter), ("price", price)):
        if value is not None and not callable(value):
            raise invalid(f"run_many({name}=...) must be callable", wrong_type=True)
    for name, text in (("provider", provider), ("model", model)):
        if text is not None and (not isinstance(text, str) or not text):
            raise invalid(f"run_many({name}=...) must be a non-empty string", wrong_type=True)
    if service is None:
        from .._defaults import default_service

        service = default_service()
    store = Checkpoint(checkpoint, fsync=fsync) if checkpoint is not None else None
    show = sys.stderr.isatty() if progress is None else bool(progress)
    run = _Run(
        service, concurrency, ordered, store, cost_limit, token_limit, provider, model, max_attempts,
        limiter or (lambda _key: ProviderLimiter(concurrency)), price,
        TerminalProgress(sys.stderr) if show else None, on_progress,
    )
    return run.results(iter(requests))


#: the live run's settings that a provider batch has no use for, and their defaults (rule 9)
_LIVE_ONLY: dict[str, object] = {"concurrency": 8, "max_attempts": 6, "limiter": None, "max_cost": None,
                                 "max_tokens": None}


def _provider_batches(
    requests: Iterable[GenerateOptions | dict[str, Any]],
    service: LlmService | None,
    provider: str | None,
    model: str | None,
    checkpoint: str | os.PathLike[str] | None,
    fsync: bool,
    price: Price | None,
    progress: bool | None,
    on_progress: Callable[[BatchProgress], None] | None,
    poll_interval: float,
    **live: object,
) -> Generator[BatchResult, None, None]:
    """Rule 9: the arguments checked now, the batches submitted on the first ``next``."""
    for name, value in live.items():
        if value is not _LIVE_ONLY[name] and value != _LIVE_ONLY[name]:
            why = ("the whole batch is sent before any row's cost is known" if name in ("max_cost", "max_tokens")
                   else "the provider runs the rows")
            raise invalid(f"run_many({name}=...) does not apply to mode='batch': {why} (rule 9)")
    candidate: object = requests
    if isinstance(candidate, (str, bytes)) or not isinstance(candidate, Iterable):
        raise invalid("run_many(requests) must be an iterable of GenerateOptions or dicts", wrong_type=True)
    for name, value in (("on_progress", on_progress), ("price", price)):
        if value is not None and not callable(value):
            raise invalid(f"run_many({name}=...) must be callable", wrong_type=True)
    for name, text in (("provider", provider), ("model", model)):
        if text is not None and (not isinstance(text, str) or not text):
            raise invalid(f"run_many({name}=...) must be a non-empty string", wrong_type=True)
    if isinstance(poll_interval, bool) or not isinstance(poll_interval, (int, float)) or poll_interval <= 0:
        raise invalid(f"run_many(poll_interval=...) must be a number > 0, not {poll_interval!r}")
    from .provider.runner import api_for, submit_batch

    if service is None:
        from .._defaults import default_service

        service = default_service()
    if provider is not None:  # the route named here is checked now; rows naming others on submission
        api_for(service, provider, timeout=1.0, result_limit=1)
    show = sys.stderr.isatty() if progress is None else bool(progress)
    return _submitted(lambda: submit_batch(requests, service=service, provider=provider, model=model,
                                           checkpoint=checkpoint, fsync=fsync, price=price),
                      poll_interval, on_progress, show)


def _submitted(submit: Callable[[], ProviderBatch], poll_interval: float,
               on_progress: Callable[[BatchProgress], None] | None, show: bool) -> Generator[BatchResult, None, None]:
    """Nothing is read or sent before the first ``next`` (rule 9), as in a live run."""
    handle = submit()
    yield from handle.results(poll_interval=poll_interval, on_progress=on_progress, progress=show)


class _Run:
    """One ``run_many`` call's state; its generator runs on the caller's thread."""

    def __init__(
        self,
        service: LlmService,
        concurrency: int,
        ordered: bool,
        store: Checkpoint | None,
        cost_limit: float | None,
        token_limit: float | None,
        provider: str | None,
        model: str | None,
        max_attempts: int,
        make_limiter: Callable[[str], Limiter],
        price: Price | None,
        terminal: TerminalProgress | None,
        on_progress: Callable[[BatchProgress], None] | None,
    ) -> None:
        self.service = service
        self.concurrency = concurrency
        self.ordered = ordered
        self.store = store
        self.cost_limit = cost_limit
        self.token_limit = token_limit
        self.provider = provider
        self.model = model
        self.max_attempts = max_attempts
        self.make_limiter = make_limiter
        self.price = price
        self.terminal = terminal
        self.on_progress = on_progress
        self.limiters: dict[str, Limiter] = {}
        self._limiters_lock = threading.Lock()
        self.stop = threading.Event()
        self.finished: queue.Queue[tuple[_Job, BatchResult]] = queue.Queue()
        self.started = time.monotonic()
        self.counts = BatchProgress()
        self.rate_limited = 0
        self._counts_lock = threading.Lock()
        self._last_report = 0.0
        #: why no new row may be sent (rule 7), once a budget is reached
        self.budget: str | None = None
        self.spent_cost = 0.0
        self.spent_tokens = 0

    # ------------------------------------------------------------------ the caller's thread

    def results(self, source: Iterator[Any]) -> Generator[BatchResult, None, None]:
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="dshstream-batch")
        pending: dict[int, _Job] = {}
        buffered: dict[int, BatchResult] = {}
        next_out = 0
        index = 0
        exhausted = False
        input_error: BaseException | None = None
        budget: str | None = None
        clean = False
        try:
            while True:
                ready: list[BatchResult] = []
                while not exhausted and len(pending) + len(buffered) < 2 * self.concurrency:
                    try:
                        request = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    except Exception as exc:  # rule 6: finish what is in flight, then raise
                        exhausted, input_error = True, exc
                        break
                    prepared = prepare(request, index, self.provider, self.model)
                    immediate = self._immediate(prepared, index, budget)
                    if immediate is not None:
                        ready.append(immediate)
                    else:
                        assert prepared.options is not None
                        job = _Job(index, prepared, prepared.options, threading.Event())
                        pending[index] = job
                        pool.submit(self._work, job)
                    index += 1
                if not ready:
                    if not pending:
                        if exhausted:
                            break
                        continue
                    try:
                        job, result = self.finished.get(timeout=0.2)
                    except queue.Empty:
                        self._report()
                        continue
                    del pending[job.index]
                    self._finish(result)
                    budget = self.budget
                    ready.append(result)
                for result in ready:
                    if self.ordered:
                        buffered[result.index] = result
                    else:
                        self._report()
                        yield result
                while self.ordered and next_out in buffered:
                    self._report()
                    yield buffered.pop(next_out)
                    next_out += 1
                if not self.ordered:
                    next_out = index
            clean = True
        finally:
            self._shutdown(pool, pending, clean)
        self._report(final=True)
        if input_error is not None:
            raise input_error

    def _immediate(self, prepared: Prepared, index: int, budget: str | None) -> BatchResult | None:
        """A row answered without sending: invalid, already done, or over budget."""
        if prepared.error is not None:
            failure = prepared.error.failure
            result = BatchResult(prepared.id, prepared.key, index, ok=False, finish="error", failure=failure)
            self._finish(result, write=False)
            return result
        if self.store is not None and prepared.key in self.store.done:
            stored = self.store.row(prepared.key)
            if stored is not None:
                with self._counts_lock:
                    self.counts = replace(self.counts, resumed=self.counts.resumed + 1)
                return replace(stored, index=index)
        if budget is not None:
            assert prepared.options is not None
            result = self._skipped(prepared, index, budget)
            self._finish(result)
            return result
        return None

    def _skipped(self, prepared: Prepared, index: int, budget: str) -> BatchResult:
        provider = prepared.options.provider if prepared.options is not None else None
        failure = make_failure("ABORTED", f"not sent: {budget}", provider=provider)
        return BatchResult(prepared.id, prepared.key, index, ok=False, failure=failure, skipped=True)

    def _finish(self, result: BatchResult, *, write: bool = True) -> None:
        """Count a finished row and write it (rule 5)."""
        if result.skipped:
            with self._counts_lock:
                self.counts = replace(self.counts, skipped=self.counts.skipped + 1)
            return
        aborted = result.finish == "aborted" and self.stop.is_set()
        if write and self.store is not None and not aborted:
            self.store.write(result)
        tokens = result.usage.total_tokens if result.usage is not None else 0
        with self._counts_lock:
            c = self.counts
            self.counts = replace(
                c,
                done=c.done + (1 if result.ok else 0),
                failed=c.failed + (0 if result.ok else 1),
                tokens=c.tokens + tokens,
                cost=c.cost + (result.cost or 0.0),
            )

    def _spend(self, result: BatchResult) -> None:
        """Count what a sent row cost, on its worker, before the worker takes another row
        (rule 7): a row queued behind it then sees the budget."""
        with self._counts_lock:
            self.spent_cost += result.cost or 0.0
            self.spent_tokens += result.usage.total_tokens if result.usage is not None else 0
            if self.budget is not None:
                return
            if self.cost_limit is not None and self.spent_cost >= self.cost_limit - 1e-12:
                self.budget = (
                    f"the batch's max_cost budget (${self.cost_limit:g}) was reached (${self.spent_cost:.4f} spent)"
                )
            elif self.token_limit is not None and self.spent_tokens >= self.token_limit:
                self.budget = (
                    f"the batch's max_tokens budget ({self.token_limit:.0f}) was reached ({self.spent_tokens} used)"
                )

    def snapshot(self) -> BatchProgress:
        with self._counts_lock:
            in_flight = self.counts.in_flight
            return replace(
                self.counts, in_flight=in_flight, rate_limited=self.rate_limited,
                elapsed=time.monotonic() - self.started,
            )

    def _report(self, *, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self._last_report < 0.2:
            return
        self._last_report = now
        snapshot = self.snapshot()
        if self.terminal is not None:
            if final:
                self.terminal.end(snapshot)
            else:
                self.terminal.update(snapshot)
        if self.on_progress is not None:
            self.on_progress(snapshot)

    def _shutdown(self, pool: ThreadPoolExecutor, pending: dict[int, _Job], clean: bool) -> None:
        """Rule 6: cancel what is in flight (unless the run ended cleanly), wait for the
        workers, write the rows that had finished."""
        if not clean:
            self.stop.set()
            for job in pending.values():
                job.cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        while True:
            try:
                job, result = self.finished.get_nowait()
            except queue.Empty:
                break
            if job.index in pending:
                del pending[job.index]
                self._finish(result)
        if self.store is not None:
            self.store.close()

    # ------------------------------------------------------------------ worker threads

    def _limiter(self, key: str) -> Limiter:
        with self._limiters_lock:
            found = self.limiters.get(key)
            if found is None:
                found = self.limiters[key] = self.make_limiter(key)
            return found

    def _work(self, job: _Job) -> None:
        with self._counts_lock:
            self.counts = replace(self.counts, in_flight=self.counts.in_flight + 1)
        try:
            result = self._attempts(job)
        except BaseException as exc:  # a foreign failure is this row's, never the run's
            failure = make_failure("UNKNOWN", f"the batch worker failed: {type(exc).__name__}")
            result = BatchResult(job.prepared.id, job.prepared.key, job.index, ok=False, finish="error", failure=failure)
        finally:
            with self._counts_lock:
                self.counts = replace(self.counts, in_flight=self.counts.in_flight - 1)
        self._spend(result)
        self.finished.put((job, result))

    def _attempts(self, job: _Job) -> BatchResult:
        options = replace(
            job.options,
            cancel=job.cancel,
            max_retries=0 if job.options.max_retries is None else job.options.max_retries,
        )
        limiter = self._limiter(options.provider)
        started = time.monotonic()
        attempts = 0
        while True:
            budget = self.budget
            if budget is not None and attempts == 0:  # queued before the budget was reached
                return self._skipped(job.prepared, job.index, budget)
            if not limiter.acquire(self.stop):
                stopped = make_failure("ABORTED", f"{options.provider}: the batch was stopped before this row was sent")
                return self._result(job, None, stopped, attempts, started)
            attempts += 1
            try:
                try:
                    response = self.service.stream(options).result()
                except LlmError as exc:
                    limiter.observe(None)
                    return self._result(job, None, exc.failure, attempts, started)
                failure = response.failure
                if failure is not None and (failure.status == 429 or failure.category == "rate_limit"):
                    with self._counts_lock:
                        self.rate_limited += 1
                    limiter.rate_limited(failure.retry_after)
                else:
                    usage = response.usage
                    limits = response.metadata.rate_limits if response.metadata is not None else None
                    limiter.observe(limits, usage.total_tokens if usage is not None else None)
            finally:
                limiter.release()
            if failure is None or not self._retry(failure, attempts, job):
                return self._result(job, response, failure, attempts, started)

    def _retry(self, failure: LlmFailure, attempts: int, job: _Job) -> bool:
        """Rule 4: a retryable failure before the answer, attempts left."""
        before_answer = (failure.status is not None and failure.status >= 429) or (
            failure.status is None and (failure.diagnostics or {}).get("accepted") is False
        )
        if not failure.retryable or not before_answer or attempts >= self.max_attempts:
            return False
        if job.cancel.is_set() or self.stop.is_set():
            return False
        if failure.status != 429 and failure.category != "rate_limit":
            job.cancel.wait(min(8.0, 0.5 * 2 ** (attempts - 1)))  # the limiter paces 429s
        return not job.cancel.is_set()

    def _result(
        self, job: _Job, response: Any, failure: LlmFailure | None, attempts: int, started: float
    ) -> BatchResult:
        prepared = job.prepared
        duration = time.monotonic() - started
        if response is None:
            kind: FinishKind = "aborted" if failure is not None and failure.code == "ABORTED" else "error"
            return BatchResult(
                prepared.id, prepared.key, job.index, ok=False, finish=kind, failure=failure,
                attempts=attempts, duration=duration,
                request_id=failure.request_id if failure is not None else None,
            )
        usage = response.usage
        cost = usage.cost if usage is not None else None
        if cost is None and usage is not None and self.price is not None:
            try:
                cost = self.price(job.options, usage)
            except Exception:
                cost = None
        metadata = response.metadata
        request_id = metadata.request_id if metadata is not None else None
        if request_id is None and failure is not None:
            request_id = failure.request_id
        return BatchResult(
            prepared.id, prepared.key, job.index, ok=failure is None, text=response.text,
            tool_calls=response.tool_calls, finish=response.finish.kind, failure=failure, usage=usage,
            cost=cost, attempts=attempts, request_id=request_id, duration=duration,
            response=response,
        )
