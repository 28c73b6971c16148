"""The checkpoint: a JSONL file of finished rows, read on start and appended as rows finish.

Contract:

1. **Reading.** Each line is one row's :func:`~dshstream._batch.records.result_to_dict`;
   a key's last line wins. A last line that is not whole (no newline, or not JSON: a
   crash mid-write) is ignored and cut off the file before anything is appended, so it is
   rewritten when its row runs again. A bad line elsewhere is skipped (logged, by number).
2. **Done.** A key whose last line is ``ok`` is done: a restart does not send it again (its
   row is yielded from the file, ``resumed=True``). A failed row runs again.
3. **Writing.** One row is one ``write`` of one line, flushed at once (``os.fsync`` too when
   ``fsync=True``), from one thread only: the executor's.
4. The file holds rows, never a key or header: a failure is already redacted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from .._core.log import get_logger
from .records import BatchResult, result_from_dict, result_to_dict

__all__ = ["Checkpoint"]

log = get_logger("dshstream.batch")


class Checkpoint:
    """An open checkpoint file (rules 1-3)."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        #: key -> the offset of its last ok line
        self.done: dict[str, int] = {}
        self._file: IO[bytes] | None = None
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")
            return
        good_end = 0
        with open(self.path, "rb") as reader:
            offset = 0
            number = 0
            for raw in reader:
                number += 1
                whole = raw.endswith(b"\n")
                try:
                    data = json.loads(raw)
                    key = str(data["key"])
                    ok = bool(data["ok"])
                except (ValueError, KeyError, TypeError):
                    if whole:
                        log.warning("checkpoint %s: line %d is not a row; skipped", self.path.name, number)
                        good_end = offset + len(raw)
                    offset += len(raw)
                    continue
                if not whole:
                    offset += len(raw)
                    continue  # a last line cut short: ignored, cut off below (rule 1)
                if ok:
                    self.done[key] = offset
                else:
                    self.done.pop(key, None)
                offset += len(raw)
                good_end = offset
        if good_end < self.path.stat().st_size:
            with open(self.path, "r+b") as cut:
                cut.truncate(good_end)
        self._file = open(self.path, "ab")

    def row(self, key: str) -> BatchResult | None:
        """The stored row of a done key (rule 2), or ``None``."""
        offset = self.done.get(key)
        if offset is None:
            return None
        with open(self.path, "rb") as reader:
            reader.seek(offset)
            line = reader.readline()
        try:
            data: dict[str, Any] = json.loads(line)
            return result_from_dict(data, resumed=True)
        except (ValueError, KeyError, TypeError):
            return None

    def write(self, result: BatchResult) -> None:
        """Append one row (rule 3)."""
        assert self._file is not None
        line = json.dumps(result_to_dict(result), ensure_ascii=False, separators=(",", ":")) + "\n"
        offset = self._file.tell()
        self._file.write(line.encode("utf-8"))
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        if result.ok:
            self.done[result.key] = offset
        else:
            self.done.pop(result.key, None)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
