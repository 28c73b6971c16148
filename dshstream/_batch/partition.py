"""run_partition: one partition of a data frame (a Ray Data batch, a Spark or Dask
partition) sent through run_many, its results returned as columns.

Contract:

1. **Rows in.** ``rows`` is a mapping of columns (equal-length sequences: Ray's ``numpy``
   and ``default`` batch formats), a pandas ``DataFrame`` (anything with
   ``to_dict("records")``), or an iterable of row mappings. Of each row only the request
   fields of :mod:`~dshstream._batch.inputs` are read (``id``, ``prompt`` or
   ``messages``, ``system``, ``provider``, ``model``, ``max_tokens``, ``temperature``);
   other columns are left alone. A missing value (``None``, NaN) is an absent field;
   numpy scalars are plain values; ``messages`` is a list of ``{role, content}`` or its
   JSON text.
2. **Columns out.** A dict of lists, one entry per row, in input order
   (:data:`RESULT_COLUMNS` with their pandas dtypes; :data:`SPARK_SCHEMA` as Spark's);
   ``tool_calls`` is JSON text (a list of ``{id, name, arguments}``), ``failure_message``
   is redacted, the token counts are 0 without usage. A failing row is a row with ``ok``
   false; nothing raises for one row.
3. **Checkpoint.** With ``checkpoint_dir``, the partition's rows go to
   ``checkpoint_dir/part-HASH.jsonl``, HASH the SHA-256 of the rows' keys in order: a
   retried task (the same rows, after a worker died) reopens the same file and sends only
   the rows not finished there. A row finished in another partition's file (a rerun of
   the job, partitioned otherwise) is not sent either: it is read back from there
   (``resumed``). Each process keeps an index of the folder (a key and an offset per
   finished row) and reads only what was appended since its last call. The directory
   must be one every worker can reach.
4. **Service.** ``service`` is an ``LlmService``, or a zero-argument callable that builds
   one (called here, on the worker: keys come from the worker's environment or whatever
   secret store the callable reads), or ``None`` for ``default_service()``.
5. Threads, limits, retries and budgets are :func:`~dshstream._batch.executor.run_many`'s;
   ``limiter`` (a factory of :class:`~dshstream._batch.limiter.Limiter`) may be shared
   between processes (:class:`~dshstream._batch.ray_limiter.RayLimiter`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._core.types import block_to_dict
from .._core.validate import invalid
from .executor import Price, run_many
from .inputs import _DICT_KEYS, prepare
from .limiter import Limiter
from .records import BatchResult, result_from_dict

if TYPE_CHECKING:
    from .._service import LlmService

__all__ = ["RESULT_COLUMNS", "SPARK_SCHEMA", "run_partition"]

#: rule 2's columns and their pandas dtypes (a Dask ``meta``, a frame's ``astype``)
RESULT_COLUMNS: dict[str, str] = {
    "id": "object", "key": "object", "ok": "bool", "text": "object", "tool_calls": "object",
    "finish": "object", "failure_code": "object", "failure_message": "object",
    "input_tokens": "int64", "output_tokens": "int64", "cost": "float64", "attempts": "int64",
    "request_id": "object", "resumed": "bool",
}
_SPARK_TYPES = {"object": "string", "bool": "boolean", "int64": "long", "float64": "double"}
#: the same columns as a Spark DDL schema (``mapInPandas(..., schema=SPARK_SCHEMA)``)
SPARK_SCHEMA = ", ".join(f"{name} {_SPARK_TYPES[dtype]}" for name, dtype in RESULT_COLUMNS.items())


def build_service(service: Any) -> LlmService:
    """Rule 4: the service itself, the one its factory builds, or the default one."""
    from .._service import LlmService

    if service is None:
        from .._defaults import default_service

        return default_service()
    if isinstance(service, LlmService):
        return service
    if callable(service):
        built = service()
        if not isinstance(built, LlmService):
            raise invalid(f"service=...: the factory returned {type(built).__name__}, not an LlmService", wrong_type=True)
        return built
    raise invalid("service=... must be an LlmService or a callable that builds one", wrong_type=True)


def _plain(value: Any) -> Any:
    """A numpy or pandas scalar as a plain value; NaN as absent (rule 1)."""
    if value is None or isinstance(value, (str, bool, int)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "ndim", 0) == 0:
        return _plain(item())
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # a numpy array in an object column (Ray's messages)
        return tolist()
    return value


def _request(row: Mapping[str, Any]) -> dict[str, Any]:
    request: dict[str, Any] = {}
    for name in _DICT_KEYS:
        if name not in row:
            continue
        value = _plain(row[name])
        if value is None:
            continue
        if name == "messages":
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass  # left as text: inputs names the field when it refuses it
            elif isinstance(value, (list, tuple)):
                value = [{str(k): _plain(v) for k, v in dict(turn).items()} if isinstance(turn, Mapping) else turn for turn in value]
        request[name] = value
    return request


def _rows(rows: Any) -> list[dict[str, Any]]:
    """Rule 1: the request of each row, in order."""
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        records = rows.to_dict("records")
        return [_request(record) for record in records]
    if isinstance(rows, Mapping):
        columns = {str(name): list(values) for name, values in rows.items()}
        lengths = {len(values) for values in columns.values()}
        if len(lengths) > 1:
            raise invalid("run_partition(rows): the columns have different lengths")
        count = lengths.pop() if lengths else 0
        return [_request({name: values[i] for name, values in columns.items()}) for i in range(count)]
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Iterable):
        raise invalid("run_partition(rows) must be columns, a DataFrame or an iterable of row dicts", wrong_type=True)
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise invalid(f"run_partition(rows)[{i}] must be a mapping, not {type(row).__name__}", wrong_type=True)
        out.append(_request(row))
    return out


def partition_path(folder: str | os.PathLike[str], keys: list[str]) -> Path:
    """Rule 3: the checkpoint file of a partition with these row keys."""
    digest = hashlib.sha256("\n".join(keys).encode("utf-8")).hexdigest()
    return Path(folder) / f"part-{digest[:32]}.jsonl"


class _Index:
    """Rule 3: key -> (file, offset) of its finished row, over a folder's partition files,
    read incrementally (each call reads only the whole lines appended since the last)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.read: dict[Path, int] = {}  # file -> the offset read up to (a line's end)
        self.rows: dict[str, tuple[Path, int]] = {}
        self.lock = threading.Lock()

    def refresh(self) -> dict[str, tuple[Path, int]]:
        with self.lock:
            try:
                entries = [e for e in os.scandir(self.folder) if e.name.startswith("part-") and e.name.endswith(".jsonl")]
            except OSError:
                return self.rows  # no folder yet: nothing finished
            for entry in entries:
                path = Path(entry.path)
                start = self.read.get(path, 0)
                try:
                    if entry.stat().st_size <= start:
                        continue
                    with open(path, "rb") as reader:
                        reader.seek(start)
                        data = reader.read()
                except OSError:
                    continue
                end = data.rfind(b"\n") + 1  # a line cut short (a crash, a write under way) waits
                offset = start
                for raw in data[:end].splitlines(keepends=True):
                    try:
                        line = json.loads(raw)
                        if line["ok"] is True:  # finished is final: a failure elsewhere can't undo it
                            self.rows[str(line["key"])] = (path, offset)
                    except (ValueError, KeyError, TypeError):
                        pass  # not a row: the file's own Checkpoint logs it when it is opened
                    offset += len(raw)
                self.read[path] = start + end
            return self.rows


_INDEXES: dict[Path, _Index] = {}
_INDEXES_LOCK = threading.Lock()


def earlier_rows(folder: Path) -> dict[str, tuple[Path, int]]:
    """Rule 3's index of ``folder``, brought up to date."""
    resolved = folder.resolve()
    with _INDEXES_LOCK:
        index = _INDEXES.get(resolved)
        if index is None:
            index = _INDEXES[resolved] = _Index(resolved)
    return index.refresh()


def _stored(path: Path, offset: int, index: int) -> BatchResult | None:
    try:
        with open(path, "rb") as reader:
            reader.seek(offset)
            return replace(result_from_dict(json.loads(reader.readline()), resumed=True), index=index)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # gone or changed since: the row is sent again


def to_columns(results: list[BatchResult]) -> dict[str, list[Any]]:
    """Rule 2: results (in row order) as columns."""
    columns: dict[str, list[Any]] = {name: [] for name in RESULT_COLUMNS}
    for result in results:
        usage = result.usage
        failure = result.failure
        calls = [{k: v for k, v in block_to_dict(call).items() if k in ("id", "name", "arguments")} for call in result.tool_calls]
        values = {
            "id": result.id, "key": result.key, "ok": result.ok, "text": result.text,
            "tool_calls": json.dumps(calls, ensure_ascii=False), "finish": result.finish,
            "failure_code": failure.code if failure is not None else None,
            "failure_message": failure.message if failure is not None else None,
            "input_tokens": usage.input_tokens if usage is not None else 0,
            "output_tokens": usage.output_tokens if usage is not None else 0,
            "cost": result.cost, "attempts": result.attempts, "request_id": result.request_id,
            "resumed": result.resumed,
        }
        for name, value in values.items():
            columns[name].append(value)
    return columns


def run_partition(
    rows: Any,
    *,
    service: Any = None,
    provider: str | None = None,
    model: str | None = None,
    concurrency: int = 8,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    limiter: Callable[[str], Limiter] | None = None,
    max_attempts: int = 6,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    price: Price | None = None,
) -> dict[str, list[Any]]:
    """Send one partition's rows, ``concurrency`` at a time; its results as columns
    (rules 1-5)."""
    requests = _rows(rows)
    built = build_service(service)
    checkpoint = None
    done: dict[int, BatchResult] = {}
    if checkpoint_dir is not None:
        keys = [prepare(request, i, provider, model).key for i, request in enumerate(requests)]
        checkpoint = partition_path(checkpoint_dir, keys).resolve()
        earlier = earlier_rows(Path(checkpoint_dir))
        for i, key in enumerate(keys):
            where = earlier.get(key)
            if where is not None and where[0] != checkpoint:  # its own file: run_many reads it
                stored = _stored(where[0], where[1], i)
                if stored is not None:
                    done[i] = stored
    todo = [i for i in range(len(requests)) if i not in done]
    sent = run_many(
        (requests[i] for i in todo), service=built, provider=provider, model=model, concurrency=concurrency,
        ordered=True, checkpoint=checkpoint, limiter=limiter, max_attempts=max_attempts, max_cost=max_cost,
        max_tokens=max_tokens, price=price, progress=False,
    )
    for result in sent:
        done[todo[result.index]] = replace(result, index=todo[result.index])
    return to_columns([done[i] for i in range(len(requests))])
