"""RayMapper: the callable class for Ray Data's ``Dataset.map_batches`` that sends each
batch's rows through run_many on threads and returns their result columns.

Contract (the ``ray`` extra; this module never imports ``ray`` itself: Ray imports it
on the worker when it builds the class):

1. **Built on the worker.** Ray constructs the class in each actor from
   ``fn_constructor_kwargs``, which are all plain values or picklable callables: the
   ``service`` factory (a zero-argument callable; ``None``: ``default_service()``, keys
   from the worker's environment) is called there once per actor, so no connection,
   session or key object is ever shipped.
2. **Threads per actor.** A Ray actor runs one ``map_batches`` call at a time, so the
   concurrency is ``concurrency`` threads inside each call
   (:func:`~dshstream._batch.partition.run_partition`); pick a ``batch_size`` several times
   ``concurrency``.
3. **Columns.** Each call returns partition rule 2's columns for its rows, in order; a
   failing row is a row with ``ok`` false, never a failed task.
4. **Limits across workers.** ``limiter=RayLimiter(...)`` shares one limiter among every
   actor (:mod:`~dshstream._batch.ray_limiter`); without it, each actor limits itself.
5. **Retried tasks.** With ``checkpoint_dir`` (a folder every worker can reach), a task
   retried after its worker died sends only the rows its first try had not finished
   (partition rule 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core.validate import invalid
from .executor import Price
from .limiter import Limiter
from .partition import build_service, run_partition

if TYPE_CHECKING:
    import os

__all__ = ["RayMapper"]


class RayMapper:
    """``ds.map_batches(RayMapper, fn_constructor_kwargs={...}, concurrency=WORKERS)``
    (rules 1-5)."""

    def __init__(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        service: Callable[[], Any] | None = None,
        concurrency: int = 8,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        limiter: Callable[[str], Limiter] | None = None,
        max_attempts: int = 6,
        price: Price | None = None,
    ) -> None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise invalid(f"RayMapper(concurrency=...) must be an int >= 1, not {concurrency!r}")
        if service is not None and not callable(service):
            raise invalid("RayMapper(service=...) must be a callable that builds an LlmService on the worker", wrong_type=True)
        self.provider = provider
        self.model = model
        self.concurrency = concurrency
        self.checkpoint_dir = checkpoint_dir
        self.limiter = limiter
        self.max_attempts = max_attempts
        self.price = price
        self.service = build_service(service)  # rule 1: here, on the worker

    def __call__(self, batch: Any) -> dict[str, list[Any]]:
        return run_partition(
            batch, service=self.service, provider=self.provider, model=self.model, concurrency=self.concurrency,
            checkpoint_dir=self.checkpoint_dir, limiter=self.limiter, max_attempts=self.max_attempts, price=self.price,
        )
