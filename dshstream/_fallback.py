"""Running a fallback chain: one request sent to a chain's targets in order, until one serves.

Contract (the chain and a target's request as values: :mod:`dshstream._core.chain`; the
history made portable for each target: :mod:`dshstream._core.portable`):

1. **Target by target.** Each target is sent the request :func:`~dshstream._core.chain.target_options`
   makes for it, with the history made portable for it: a turn is native to the target
   when its provider is registered to the target's very adapter instance (the service's
   replay routing) and it names no other model than the target's — a thought signature or
   encrypted reasoning is valid for the model that wrote it only, so a turn another model
   wrote goes back rebuilt from its blocks (its own provider's signatures in them kept:
   :mod:`~dshstream._core.portable` rule 2). Before anything is sent,
   a target that can't take the request is skipped, with that reason: it has no adapter
   registered (``NO_ADAPTER``), or its adapter refuses a part, a schema or the tools — an
   ``HttpAdapter``'s media check and its request body, built dry (no credential is
   fetched, nothing is sent); any adapter's own refusal before sending (``INVALID_OPTIONS``)
   counts the same.
2. **Before content.** A target's chunks are held until its first content chunk (a block
   opening, text, reasoning, a tool call: what an observer's first chunk is). A failure
   before it whose code moves on (the chain's codes) ends that target — its connection
   closed, its outcome ``failed`` — and the next target is tried. Any other failure ends
   the stream with it.
3. **After content, never.** Once a target's content has reached the caller, the stream is
   that target's: a failure after it ends the stream, and when its code would have moved
   on and targets were left, its message says so (``target 2 (gemini/gemini-2.5-flash)
   failed after content; not falling back``).
4. **The end.** The stream's one ``Finish`` is the serving target's, or, when no target
   served, the last failure of a target that was sent (else the first refusal), its
   message saying the chain ran out. Either way its ``metadata.fallback`` lists every
   target tried, in order (:class:`~dshstream._core.types.TargetOutcome`: ``served``,
   ``failed`` with its failure and the usage it reported, ``skipped`` with its reason).
   A cancel, or the request's ``timeout`` running out, ends the chain at once: nothing
   more is sent.
5. **Observed.** The stream's watch (when someone watches) hears every HTTP attempt of
   every target and one ``skipped`` record per skipped target, and its ``StreamFinished``
   carries the trail (:mod:`~dshstream._core.records` rule 1, :mod:`dshstream._observe`
   rule 8).
6. **Never raises.** Anything a target's adapter raises is that target's failure (an
   ``LlmError``'s own failure; any other exception ``UNKNOWN`` with its redacted text);
   closing the stream closes the target being streamed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from ._adapters.base import LlmAdapter
from ._adapters.http import HttpAdapter
from ._core.closing import close_quietly
from ._core.chain import SKIP_CODES, FallbackChain, Target, target_options
from ._core.errors import ConfigurationError, LlmError, cancelled_failure, make_failure
from ._core.log import get_logger
from ._core.portable import portable_history
from ._core.redact import redact
from ._core.request import GenerateOptions, Message
from ._core.types import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishKind,
    FinishReason,
    LlmFailure,
    ReasoningDelta,
    ResponseMetadata,
    StreamChunk,
    TargetOutcome,
    TextDelta,
    ToolCallDelta,
    UsageChunk,
)
from ._observe import StreamWatch, linked_start

log = get_logger("dshstream.service")

__all__ = ["preflight", "stream_chain"]

#: the chunks that commit a stream to its target (rule 2): an observer's first chunk
_CONTENT = frozenset({BlockStart, TextDelta, ReasoningDelta, ToolCallDelta, BlockEnd})

#: a provider route -> its adapter (``None``: not registered)
Lookup = Callable[[str], LlmAdapter | None]
#: the adapter a history message was written through (``None``: none the service knows)
Writer = Callable[[Message], LlmAdapter | None]


def preflight(adapter: LlmAdapter, options: GenerateOptions) -> None:
    """Refuse, before anything is sent, a request the adapter can't take (rule 1): a
    ``ConfigurationError`` naming what. An ``HttpAdapter`` checks the media parts and
    builds the body dry; another adapter with a ``check_media`` (``LiteLLMAdapter``) runs it."""
    if isinstance(adapter, HttpAdapter):
        adapter.check_media(options)
        adapter.wire.build_body(options)
        return
    check = getattr(adapter, "check_media", None)
    if callable(check):
        check(options)


class _Run:
    """One chain request: its trail and the failures it met."""

    __slots__ = ("chain", "options", "trail", "failure", "refusal")

    def __init__(self, chain: FallbackChain, options: GenerateOptions) -> None:
        self.chain = chain
        self.options = options
        self.trail: list[TargetOutcome] = []
        #: the last failure of a target that was sent; the first refusal of a skipped one
        self.failure: LlmFailure | None = None
        self.refusal: LlmFailure | None = None

    def skipped(self, position: int, target: Target, failure: LlmFailure, watch: StreamWatch | None) -> None:
        model = target.model or self.options.model
        self.trail.append(TargetOutcome(position, target.provider, model, "skipped", failure))
        if self.refusal is None:
            self.refusal = failure
        log.info("%s: target %d (%s) skipped: %s", self.chain.name, position, f"{target.provider}/{model}", failure.code)
        if watch is not None:
            watch.target_skipped(position, target.provider, model, failure)

    def finish(self, finish: Finish) -> Finish:
        """``finish`` with the trail in its metadata (rule 4)."""
        metadata = replace(finish.metadata or ResponseMetadata(), fallback=tuple(self.trail))
        return replace(finish, metadata=metadata)

    def ran_out(self) -> Finish:
        """The finish of a chain no target served (rule 4)."""
        failure = self.failure or self.refusal
        if failure is None:  # pragma: no cover - a chain has at least one target
            failure = make_failure("UNKNOWN", f"{self.chain.name}: no target was tried", provider=self.chain.name)
        tried = len(self.trail)
        what = "no target can take this request" if self.failure is None else "no target served the request"
        failure = replace(failure, message=f"{self.chain.name}: {what} ({tried} tried); the last: {failure.message}")
        kind: FinishKind = "aborted" if failure.code == "ABORTED" else "error"
        return self.finish(Finish(reason=FinishReason(kind=kind, failure=failure)))


def stream_chain(
    chain: FallbackChain,
    options: GenerateOptions,
    *,
    lookup: Lookup,
    writer: Writer,
    watch: StreamWatch | None = None,
) -> Iterator[list[StreamChunk]]:
    """The chunks of ``options`` sent through ``chain`` (rules 1-6), a list per read; the
    last list ends with the one ``Finish``."""
    run = _Run(chain, options)
    deadline = time.monotonic() + options.timeout if options.timeout is not None else None
    count = len(chain.targets)
    for position, target in enumerate(chain.targets, 1):
        label = target.label(options.model)
        if options.cancel is not None and options.cancel.is_set():
            yield [run.finish(Finish(reason=FinishReason(kind="aborted", failure=cancelled_failure(chain.name))))]
            return
        remaining: float | None = None
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if run.failure is None:
                    run.failure = make_failure(
                        "TIMEOUT",
                        f"{chain.name}: the request's timeout ran out before target {position} ({label})",
                        provider=chain.name,
                    )
                break
        adapter = lookup(target.provider)
        if adapter is None:
            missing = make_failure(
                "NO_ADAPTER",
                f"{chain.name}: target {position} ({label}) has no adapter registered for {target.provider!r}",
                provider=target.provider,
            )
            run.skipped(position, target, missing, watch)
            continue
        request = target_options(
            options,
            target,
            last=position == count,
            remaining=remaining,
            messages=_portable(options.messages, adapter, target.model or options.model, writer),
        )
        try:
            preflight(adapter, request)
        except ConfigurationError as exc:
            run.skipped(position, target, _with_provider(exc.failure, target.provider), watch)
            continue
        except Exception:  # noqa: BLE001 - not a refusal: the stream itself will meet it (rule 6)
            log.debug("%s: target %d's dry build raised", chain.name, position, exc_info=True)
        if watch is not None:
            watch.enter_target(position)
        # --- the target's stream (rules 2 and 3)
        source = adapter.stream_batches(request)
        held: list[StreamChunk] = []
        served = False
        ended: Finish | None = None
        try:
            batches = source if watch is None else linked_start(watch, source)
            for batch in batches:
                if not batch:
                    continue
                if not served:
                    if not any(type(chunk) in _CONTENT for chunk in batch):
                        last = batch[-1]
                        if type(last) is Finish:
                            assert isinstance(last, Finish)
                            held.extend(batch[:-1])
                            ended = last
                            break
                        held.extend(batch)
                        continue
                    served = True
                    run.trail.append(TargetOutcome(position, target.provider, request.model, "served"))
                    batch, held = [*held, *batch], []
                last = batch[-1]
                if type(last) is Finish:
                    assert isinstance(last, Finish)
                    batch[-1] = _after_content(run, last, position, label, more=position < count)
                    yield batch
                    return
                yield batch
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001 - a target's failure (rule 6)
            raised = _failure_of(exc, target.provider)
            finish = Finish(reason=FinishReason(kind="aborted" if raised.code == "ABORTED" else "error", failure=raised))
            if served:
                yield [_after_content(run, finish, position, label, more=position < count)]
                return
            ended = finish
        finally:
            close_quietly(source, f"target {position}'s stream")
        if ended is None:  # the adapter ended without its finish: a cut, not a stop
            cut = make_failure(
                "STREAM_CLOSED",
                f"{target.provider}: the adapter ended the stream without a finish (STREAM_CLOSED)",
                provider=target.provider,
            )
            ended = Finish(reason=FinishReason(kind="error", failure=cut))
            if served:
                yield [_after_content(run, ended, position, label, more=position < count)]
                return
        reported = ended.reason.failure
        if reported is None:  # a finish with nothing in it and no failure: the target's answer
            run.trail.append(TargetOutcome(position, target.provider, request.model, "served"))
            yield [*held, run.finish(ended)]
            return
        failure = _with_provider(reported, target.provider)
        if options.cancel is not None and options.cancel.is_set() and failure.code != "ABORTED":
            failure = cancelled_failure(target.provider)  # the caller's cancel, however it was met
        kind: FinishKind = "aborted" if failure.code == "ABORTED" else ended.reason.kind
        ended = replace(ended, reason=replace(ended.reason, kind=kind, failure=failure))
        if failure.code in SKIP_CODES:  # the adapter refused before sending (rule 1)
            run.skipped(position, target, failure, watch)
            continue
        usage = next((chunk.usage for chunk in reversed(held) if isinstance(chunk, UsageChunk)), None)
        run.trail.append(TargetOutcome(position, target.provider, request.model, "failed", failure, usage))
        run.failure = failure
        if not chain.moves_on(failure):
            yield [*held, run.finish(ended)]
            return
        log.info("%s: target %d (%s) failed before content (%s); trying the next", chain.name, position, label, failure.code)
    yield [run.ran_out()]


def _portable(messages: Sequence[Message], adapter: LlmAdapter, model: str, writer: Writer) -> tuple[Message, ...]:
    """The history for a target (rule 1): native turns are its adapter's and its model's,
    foreign ones another adapter's."""
    return portable_history(
        messages,
        native=lambda message: writer(message) is adapter and message.model in (None, model),
        foreign=lambda message: message.provider is not None and writer(message) is not adapter,
    )


def _after_content(run: _Run, finish: Finish, position: int, label: str, *, more: bool) -> Finish:
    """The serving target's finish (rule 3): a failure that would have moved on says it
    did not."""
    failure = finish.reason.failure
    if failure is not None and more and run.chain.moves_on(failure):
        failure = replace(
            failure, message=f"{failure.message}; target {position} ({label}) failed after content; not falling back"
        )
        finish = replace(finish, reason=replace(finish.reason, failure=failure))
    return run.finish(finish)


def _with_provider(failure: LlmFailure, provider: str) -> LlmFailure:
    return failure if failure.provider is not None else replace(failure, provider=provider)


def _failure_of(exc: BaseException, provider: str) -> LlmFailure:
    if isinstance(exc, LlmError):
        return _with_provider(exc.failure, provider)
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - a hostile __str__ must not break the boundary
        text = type(exc).__name__
    log.error("%s: adapter raised %s", provider, type(exc).__name__)
    return make_failure(
        "UNKNOWN",
        f"{provider}: adapter failed with {type(exc).__name__}",
        provider=provider,
        detail=redact(text, limit=1900) or None,
    )
