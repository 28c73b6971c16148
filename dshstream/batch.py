"""dshstream.batch: many requests at once — on threads, within the provider's rate limits,
resumable after a crash, within a budget.

Contract:

- :func:`run_many` sends an iterable of requests (``GenerateOptions``, or dicts with an
  ``id`` and a ``prompt`` or ``messages``) ``concurrency`` at a time and yields one
  :class:`BatchResult` per request, in completion order (or input order with
  ``ordered=True``); it never raises for one row. The input is read lazily: at most
  ``2 * concurrency`` rows are in flight or waiting to be yielded.
- Rate limits: every thread that sends to one provider shares its :class:`Limiter`
  (:class:`ProviderLimiter` by default): it learns the limit from each response's
  ``metadata.rate_limits`` (:class:`RateLimits`: ``x-ratelimit-*``,
  ``anthropic-ratelimit-*``, Mistral's ``-minute`` headers, ``retry-after``), counts down
  what is left of the window, waits for the reset, and on a 429 halves its concurrency
  (then grows it back) and waits as told.
- ``checkpoint=PATH``: every finished row is appended to a JSONL file as it completes; a
  rerun skips the keys done there (the caller's ``id``, else a SHA-256 of the request) and
  yields their stored rows. A half-written last line is ignored and rewritten.
- ``max_cost=`` / ``max_tokens=``: once reached, no new request is sent; the rest are
  yielded ``skipped``, their failure saying why.
- Progress: a line on a terminal (``progress=``), :class:`BatchProgress` to
  ``on_progress=``.
- On a distributed engine: :func:`run_partition` sends one partition's rows (columns,
  a pandas ``DataFrame`` or row dicts) and returns their result columns
  (:data:`RESULT_COLUMNS`, with their dtypes; :data:`SPARK_SCHEMA`; a Spark
  ``mapInPandas`` or Dask ``map_partitions`` function calls it); :class:`RayMapper` is the
  callable class for Ray Data's ``map_batches``, built on each worker; :class:`RayLimiter`
  is one limiter shared by every worker of a Ray cluster (the ``ray`` extra). With
  ``checkpoint_dir=`` a retried task sends only the rows not yet finished.
- Provider batches, at the providers' batch price: :func:`submit_batch` sends the same
  requests as OpenAI, Anthropic or Gemini batch jobs (split at each API's row and byte
  limits) and returns a :class:`ProviderBatch` — its ``id`` to :func:`resume_batch` after a
  restart, ``wait()``, ``cancel()``, ``status()`` (:class:`ProviderBatchStatus` per job) and
  ``results()``: one :class:`BatchResult` per request, matched by id, read by the same wire
  translator a stream uses. ``run_many(..., mode="batch")`` does all of it in one call.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._batch.executor import run_many as run_many
    from ._batch.limiter import Limiter as Limiter, ProviderLimiter as ProviderLimiter
    from ._batch.partition import (
        RESULT_COLUMNS as RESULT_COLUMNS,
        SPARK_SCHEMA as SPARK_SCHEMA,
        run_partition as run_partition,
    )
    from ._batch.progress import BatchProgress as BatchProgress
    from ._batch.provider.api import ProviderBatchStatus as ProviderBatchStatus
    from ._batch.provider.runner import (
        ProviderBatch as ProviderBatch,
        resume_batch as resume_batch,
        submit_batch as submit_batch,
    )
    from ._batch.ray_data import RayMapper as RayMapper
    from ._batch.ray_limiter import RayLimiter as RayLimiter
    from ._batch.records import BatchResult as BatchResult
    from ._core.types import RateLimits as RateLimits

__all__ = _exports.public_names("batch")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("batch", name)


def __dir__() -> list[str]:
    return _exports.dir_of("batch")
