"""dshstream.observe: what an observer hears about each stream.

Contract: an :data:`Observer` is any callable taking one :data:`ObserverRecord`; it is given
to ``LlmService(observer=...)`` or to an adapter. Each stream produces, in order, one
:class:`StreamStarted`, at most one :class:`FirstChunkRecord` (the first content chunk
arrived), one :class:`AttemptRecord` per HTTP attempt and exactly one
:class:`StreamFinished`, however the stream ends (finished, failed, cancelled, closed or
abandoned). Records are frozen values; :class:`RequestSettings` is the part of the request
they carry, :class:`Telemetry` what the adapter says of it at the start (the provider's
well-known name, the operation, the server). A stream sent to a fallback chain also gets one ``skipped`` attempt record per
target that was not sent the request, and its records name the targets: every attempt's
``target`` position, and :class:`StreamFinished`'s ``fallback``, the trail of
:class:`TargetOutcome` s (the same as the finish's ``metadata.fallback``). Messages and
output are in a record only for an observer that asks to capture content. An observer that raises is logged and never breaks the stream.
``dshstream.otel.OtelObserver`` turns the records into OpenTelemetry spans and metrics.

Importing this module imports nothing more; each name loads its own module on first use.
"""

import typing as _typing

from . import _exports

if _typing.TYPE_CHECKING:
    from ._core.records import (
        AttemptRecord as AttemptRecord,
        FirstChunkRecord as FirstChunkRecord,
        Observer as Observer,
        ObserverRecord as ObserverRecord,
        RequestSettings as RequestSettings,
        StreamFinished as StreamFinished,
        StreamStarted as StreamStarted,
        Telemetry as Telemetry,
    )
    from ._core.types import TargetOutcome as TargetOutcome

__all__ = _exports.public_names("observe")


def __getattr__(name: str) -> _typing.Any:
    return _exports.load("observe", name)


def __dir__() -> list[str]:
    return _exports.dir_of("observe")
