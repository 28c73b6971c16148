"""A cassette in use: :func:`use_cassette` and :class:`Cassette`, what the pytest plugin
and any other test code open.

Contract: a :class:`Cassette` records or replays between :meth:`Cassette.start` and
:meth:`Cassette.stop` (or a ``with`` block); the interception acts process-wide meanwhile
(:mod:`~dshstream._transport.intercept` rule 1): every HTTP adapter of the process sends
through it, whenever it was built, unless it was given a ``transport=`` that is not the
HTTP one (a ``MemoryTransport`` stays in memory).

1. **Checked when made.** ``path``, ``match_on`` (a non-empty selection of ``"method"``,
   ``"url"``, ``"path"`` and ``"body"``), ``redact_fields`` (names or dotted paths),
   ``timing`` and ``record`` are checked when the cassette is made: a wrong one raises
   :class:`~dshstream._core.errors.ConfigurationError` naming it. ``record=None`` reads
   ``DSHSTREAM_RECORD`` (``1``, ``true``, ``yes``, ``on``: record; unset, empty, ``0``,
   ``false``, ``no``, ``off``: replay; anything else is refused, naming the variable).
2. **Recording** sends every request for real (:mod:`~dshstream._cassettes.recorder`) and
   writes the cassette when it stops — all its exchanges, in the order sent, replacing
   the file; an empty cassette too (the code made no request: its replay passes).
3. **Replaying** reads the file when it starts (a malformed one raises then, naming the
   field) and answers from it on 127.0.0.1 (:mod:`~dshstream._cassettes.player`); a file
   that does not exist makes every request a miss saying so. Nothing is written.
4. **Misses fail loudly.** Each miss ends the request it answers with a
   ``ConfigurationError`` and is kept in :attr:`Cassette.misses`; leaving a ``with`` block
   with misses raises the first of them (unless the block is already raising), and
   :meth:`Cassette.check` does the same at any time. Each names the command that records
   the cassette again (``how_to_record``, the pytest plugin's names the test).
5. **Once.** ``start`` and ``stop`` each act once; a stopped cassette does not start again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .._core.validate import invalid
from .._transport import intercept
from .format import Interaction, dump, load
from .player import Player
from .recorder import Recorder

__all__ = ["Cassette", "DEFAULT_MATCH_ON", "MATCH_CRITERIA", "record_from_environment", "use_cassette"]

#: what a replayed request is matched on by default (the body by its digest)
DEFAULT_MATCH_ON: tuple[str, ...] = ("method", "url", "body")
#: every criterion ``match_on`` may name
MATCH_CRITERIA = ("method", "url", "path", "body")
#: the environment variable ``record=None`` reads (rule 1)
RECORD_VARIABLE = "DSHSTREAM_RECORD"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def record_from_environment() -> bool:
    """Whether ``DSHSTREAM_RECORD`` asks to record (rule 1)."""
    value = os.environ.get(RECORD_VARIABLE, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise invalid(f"{RECORD_VARIABLE} must be 1 (record) or 0 (replay), got {value[:20]!r}")


def _checked_match_on(match_on: object) -> tuple[str, ...]:
    if isinstance(match_on, str) or not isinstance(match_on, Iterable):
        raise invalid("use_cassette match_on must be a sequence of criteria, e.g. ('method', 'url', 'body')", wrong_type=True)
    criteria = tuple(match_on)
    wrong = [c for c in criteria if c not in MATCH_CRITERIA]
    if not criteria or wrong:
        raise invalid(
            f"use_cassette match_on must name some of {', '.join(MATCH_CRITERIA)}, got {criteria!r}"[:200]
        )
    return criteria


def _checked_fields(fields: object) -> tuple[str, ...]:
    if isinstance(fields, str) or not isinstance(fields, Iterable):
        raise invalid("use_cassette redact_fields must be a sequence of field names", wrong_type=True)
    found = tuple(fields)
    if not all(isinstance(f, str) and f and not f.startswith(".") and not f.endswith(".") for f in found):
        raise invalid("use_cassette redact_fields must be field names or dotted paths ('user', 'metadata.user_id')")
    return found


class Cassette:
    """One cassette file in use: recording real exchanges into it, or replaying them from
    it (rules 1-5). Use it as a context manager, or :meth:`start` and :meth:`stop`."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        record: bool | None = None,
        match_on: Iterable[str] = DEFAULT_MATCH_ON,
        redact_fields: Iterable[str] = (),
        timing: bool = False,
        how_to_record: str | None = None,
    ) -> None:
        if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
            raise invalid("use_cassette path must be a file path", wrong_type=not isinstance(path, (str, os.PathLike)))
        if record is not None and not isinstance(record, bool):
            raise invalid("use_cassette record must be True, False or None (read DSHSTREAM_RECORD)", wrong_type=True)
        if not isinstance(timing, bool):
            raise invalid("use_cassette timing must be True or False", wrong_type=True)
        #: the cassette file
        self.path = Path(os.fspath(path))
        #: recording (real requests, the file written at the end) or replaying
        self.recording: bool = record_from_environment() if record is None else record
        self.match_on = _checked_match_on(match_on)
        self.redact_fields = _checked_fields(redact_fields)
        #: record the time of each read; replay with the recorded pauses
        self.timing = timing
        #: what a miss says to run (rule 4)
        self.how_to_record = how_to_record or (
            f"{RECORD_VARIABLE}=1 (or use_cassette(..., record=True)), then run the same code again"
        )
        #: every request that found no recorded answer, as its message (rule 4)
        self.misses: list[str] = []
        self._lock = threading.Lock()
        self._state: Literal["new", "started", "stopped"] = "new"
        self._recorder: Recorder | None = None
        self._player: Player | None = None
        self._loaded: list[Interaction] = []

    def __repr__(self) -> str:
        mode = "recording" if self.recording else "replaying"
        return f"Cassette({str(self.path)!r}, {mode}, {self._state})"

    # ------------------------------------------------------------------ life

    def start(self) -> Cassette:
        """Start recording or replaying (rules 2, 3, 5); returns the cassette."""
        with self._lock:
            if self._state != "new":
                raise invalid(f"{self!r} was started already; open a new one")
            self._state = "started"
        if self.recording:
            self._recorder = Recorder(fields=self.redact_fields, timing=self.timing)
            intercept.install(self._recorder)
            return self
        absent = not self.path.exists()
        self._loaded = [] if absent else load(self.path)
        self._player = Player(
            self._loaded,
            match_on=self.match_on,
            fields=self.redact_fields,
            timing=self.timing,
            where=str(self.path),
            how_to_record=self.how_to_record,
            on_miss=self._missed,
            absent=absent,
        )
        intercept.install(self._player)
        return self

    def stop(self) -> None:
        """Stop; a recording writes its file now (rules 2, 5). Idempotent."""
        with self._lock:
            if self._state != "started":
                self._state = "stopped"
                return
            self._state = "stopped"
        if self._recorder is not None:
            intercept.remove(self._recorder)
            dump(self._recorder.interactions(), self.path)
        if self._player is not None:
            intercept.remove(self._player)
            self._player.stop()

    def __enter__(self) -> Cassette:
        return self.start()

    def __exit__(self, kind: object, *rest: object) -> None:
        self.stop()
        if kind is None:
            self.check()

    # ------------------------------------------------------------------ what happened

    def _missed(self, message: str) -> None:
        with self._lock:
            self.misses.append(message)

    @property
    def interactions(self) -> list[Interaction]:
        """The exchanges: those recorded so far (recording), or the cassette's (replaying)."""
        if self._recorder is not None:
            return self._recorder.interactions()
        return list(self._loaded)

    @property
    def unused(self) -> list[Interaction]:
        """The recorded exchanges that have not answered a request (replaying)."""
        player = self._player
        if player is None:
            return []
        return [item for item, used in zip(player.interactions, player.used) if not used]

    def check(self) -> None:
        """Raise the first miss, with how many there were (rule 4); nothing when none."""
        with self._lock:
            misses = list(self.misses)
        if misses:
            more = f" (and {len(misses) - 1} more request(s) unanswered)" if len(misses) > 1 else ""
            raise invalid(misses[0] + more)


def use_cassette(
    path: str | os.PathLike[str],
    *,
    record: bool | None = None,
    match_on: Iterable[str] = DEFAULT_MATCH_ON,
    redact_fields: Iterable[str] = (),
    timing: bool = False,
) -> Cassette:
    """A :class:`Cassette` for ``path``, to use as a context manager: inside the block
    every HTTP request of the process is recorded into it (``record=True``, or
    ``DSHSTREAM_RECORD=1`` with ``record=None``) or answered from it on 127.0.0.1."""
    return Cassette(path, record=record, match_on=match_on, redact_fields=redact_fields, timing=timing)
