"""LlmService: the registry of adapters and fallback chains, the listener waterfall and
replay-state routing.

Contract:

1. ``register_adapter`` validates the whole route list before writing anything
   (``INVALID_ADAPTER``, ``DUPLICATE_ADAPTER``); a :class:`Registration` can ``replace``
   its routes atomically or ``dispose`` of them, and shows nothing as a notebook cell's value.
2. ``NO_ADAPTER`` says what would register the provider: for one dshstream knows, the
   variables ``default_service()`` reads for it (names, never values) and the adapter to
   register; for any other name, the names that are registered.
3. Listeners wrap ``stream``: ``fn(options, next) -> Iterator[chunk]``; each may yield its
   own chunks, call ``next`` with a rewritten request, or observe. Adapter lookup happens
   at the end of the chain, so rerouting works.
4. ``stream`` checks its options first (:func:`~dshstream._core.request.check_options`, which also
   catches a ``GenerateOptions`` altered behind the dataclass's back; for a fallback chain,
   :func:`~dshstream._core.chain.check_chain_request`) and raises
   :class:`~dshstream._core.errors.ConfigurationError` (``INVALID_OPTIONS``) or
   :class:`~dshstream._core.errors.ConfigurationTypeError` (``INVALID_OPTIONS_TYPE``, also for an
   object that is not a ``GenerateOptions``) synchronously; that is the only exception it
   raises. Everything else surfaces as chunks.
5. Anything raised by a listener, by adapter lookup or by iteration — an ``LlmError`` or any
   other ``Exception`` — becomes one terminal ``Finish``: ``aborted`` if the request was
   cancelled or the code is ``ABORTED``, else ``error`` (a foreign exception is ``UNKNOWN``
   with its redacted text in ``detail``; options a listener passes on that fail the checks
   are ``INVALID_OPTIONS``/``INVALID_OPTIONS_TYPE``). A listener that yields something that
   is not a chunk ends the stream with ``CONTRACT_VIOLATION``. An exception after the
   ``Finish`` is logged and dropped. Only ``KeyboardInterrupt``/``SystemExit`` propagate, and
   ``CONTRACT_VIOLATION`` from ``check_contract=True`` (a debugging aid) is raised while
   iterating.
6. Replay state in history is kept only when the message's provider and the target
   provider are registered to the very same adapter instance; requests are never mutated.
7. ``observer=`` hears every stream the service returns (:mod:`dshstream._observe`): a
   ``StreamStarted`` when ``stream()`` is called, and exactly one ``StreamFinished`` however
   the stream ends; with INFO logging on, each finished stream is one log line.
8. **Fallback chains.** ``register_chain(name, targets)`` makes ``name`` a route like a
   provider's: a request with ``provider=name`` goes to the chain's targets in order
   (:mod:`dshstream._fallback`: before content a failure that means "this target can't serve
   now" moves on, after content never; a target that can't take the request is skipped,
   before anything is sent to it), each with the history made portable for its adapter and
   model (:mod:`dshstream._core.portable`: rule 6, and replay state only for the model that
   wrote it). The whole chain is checked when it
   is registered: the name is free (no adapter route, no other chain), every target's
   provider is an adapter route (``NO_ADAPTER``; a chain is never a target), the codes are
   failure codes. An adapter route can't take a chain's name. The stream's finish lists
   every target tried (``metadata.fallback``), and its assistant turn
   (``result.message()``) names the target that served, so the next turn's replay state
   goes back to that target's adapter.
9. ``resume(cursor, options=None)`` continues a cut resumable stream from its resume cursor
   (``metadata.resume_cursor`` of its finish, or ``resume_cursor`` in its failure's
   diagnostics; a JSON round trip keeps it) on the adapter registered for
   ``cursor["provider"]``: a stream of the events after the cursor's sequence number, with
   the same boundary as ``stream`` (a bad cursor is a ``ConfigurationError`` raised at
   once; an adapter that cannot resume, one too).
10. **One loop per read.** An unwatched stream of an adapter whose attempt loop can tell
    the finish (``_stream_batches_telling``: the HTTP adapters'; the attempt loop's rule 5)
    is handed on with ``yield from``: the attempt loop reports the finish's failure here
    before its list goes on and drops what follows it, so rule 5 holds as with the loop
    this boundary runs for every other adapter. For a stream without listeners the
    attempt loop hands the ``ChunkStream`` the pump's generator itself (its rule 6, pump
    rule 9): what that raises is thrown back in through this generator, so both
    boundaries' handlers run as before, and neither generator resumes per read.
"""

from __future__ import annotations

import os
import threading
from functools import partial
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from dataclasses import replace

from ._adapters.base import FailureReporter, LlmAdapter, ModelInfo, ProviderInfo
from ._core.chain import DEFAULT_FALLBACK_CODES, FallbackChain, Target, check_chain_request
from ._core.closing import close_quietly
from ._core.contract import check_contract as _check_contract
from ._core.errors import LlmError, cancelled_failure, error_for, make_failure
from ._core.log import get_logger
from ._core.redact import redact
from ._core.request import GenerateOptions, Message, check_options, with_cancel
from ._chunk_stream import ChunkStream
from ._core.records import Observer, Telemetry
from ._fallback import stream_chain
from ._observe import StreamWatch, check_observer, linked_start, open_watch
from ._core.types import CHUNK_TYPES, Finish, FinishKind, FinishReason, LlmFailure, StreamChunk

log = get_logger("dshstream.service")

Next = Callable[[GenerateOptions], Iterator[StreamChunk]]
Listener = Callable[[GenerateOptions, Next], Iterator[StreamChunk]]


def _config_error(code: str, message: str) -> LlmError:
    return error_for(make_failure(code, message))


class Registration:
    """A handle on one ``register_adapter`` call."""

    def __init__(self, service: LlmService, adapter: LlmAdapter, providers: tuple[str, ...]) -> None:
        self._service = service
        self.adapter = adapter
        self.providers = providers
        self.disposed = False

    def replace(self, providers: Sequence[str]) -> None:
        """Swap this registration's routes atomically."""
        self._service._replace(self, tuple(providers))

    def dispose(self) -> None:
        """Remove every route of this registration."""
        self._service._dispose(self)

    def __repr__(self) -> str:
        return f"Registration(providers={list(self.providers)!r}, disposed={self.disposed})"

    def _ipython_display_(self) -> None:
        """Show nothing in a notebook: ``service.register_adapter(...)`` as a setup cell's
        last line is a statement, not a result to look at (``print(registration)`` and
        ``repr`` still describe it)."""


class LlmService:
    """The entry point: a registry of adapters by provider name, with listeners around
    every stream; ``stream()`` returns a :class:`ChunkStream` that ends with exactly one
    ``Finish``, whatever fails."""

    def __init__(
        self,
        *,
        check_contract: bool | None = None,
        failure_reporter: FailureReporter | None = None,
        observer: Observer | None = None,
    ) -> None:
        if check_contract is None:
            check_contract = os.environ.get("DSHSTREAM_DEBUG") == "1"
        self.check_contract = check_contract
        self.failure_reporter = failure_reporter
        #: hears every stream's records (``dshstream._observe``); adapters' own observers too
        self.observer = check_observer(observer, "LlmService.observer")
        self._routes: dict[str, Registration] = {}
        self._registrations: list[Registration] = []
        self._chains: dict[str, FallbackChain] = {}
        self._listeners: list[Listener] = []
        self._lock = threading.RLock()
        #: set by ``default_service()``: the ``NO_ADAPTER`` message then says to set the
        #: provider's variable first (else to register an adapter first)
        self._built_from_environment = False

    def __repr__(self) -> str:
        chains = f", chains={list(self._chains)!r}" if self._chains else ""
        return f"LlmService(providers={list(self._routes)!r}{chains})"

    # ------------------------------------------------------------------ registry

    def register_adapter(self, providers: Sequence[str], adapter: LlmAdapter) -> Registration:
        """Route ``providers`` to ``adapter``; all-or-nothing."""
        routes = tuple(providers)
        with self._lock:
            self._validate(routes, adapter, owner=None)
            registration = Registration(self, adapter, routes)
            for provider in routes:
                self._routes[provider] = registration
            self._registrations.append(registration)
        return registration

    def _validate(self, routes: tuple[str, ...], adapter: LlmAdapter, owner: Registration | None) -> None:
        if owner is None and not routes:
            raise _config_error("INVALID_ADAPTER", "register_adapter needs at least one provider")
        seen: set[str] = set()
        for provider in routes:
            if not isinstance(provider, str) or not provider:
                raise _config_error("INVALID_ADAPTER", "provider names must be non-empty strings")
            if provider in seen:
                raise _config_error("DUPLICATE_ADAPTER", f"provider {provider!r} is listed twice")
            seen.add(provider)
            current = self._routes.get(provider)
            if current is not None and current is not owner:
                raise _config_error("DUPLICATE_ADAPTER", f"provider {provider!r} is already registered")
            if provider in self._chains:
                raise _config_error("DUPLICATE_ADAPTER", f"provider {provider!r} is a fallback chain's name")
            info = adapter.provider_info(provider)
            if not isinstance(info, ProviderInfo) or info.id != provider or not info.name:
                raise _config_error(
                    "INVALID_ADAPTER", f"provider_info({provider!r}) must echo the id with a name"
                )

    def _replace(self, registration: Registration, routes: tuple[str, ...]) -> None:
        with self._lock:
            if registration.disposed:
                raise _config_error("REGISTRATION_DISPOSED", "this registration was disposed")
            self._validate(routes, registration.adapter, owner=registration)
            for provider in registration.providers:
                self._routes.pop(provider, None)
            for provider in routes:
                self._routes[provider] = registration
            registration.providers = routes

    def _dispose(self, registration: Registration) -> None:
        with self._lock:
            if registration.disposed:
                raise _config_error("REGISTRATION_DISPOSED", "this registration was disposed")
            for provider in registration.providers:
                if self._routes.get(provider) is registration:
                    del self._routes[provider]
            registration.disposed = True
            registration.providers = ()
            self._registrations.remove(registration)

    #: the failure codes that move a chain's request on to its next target by default
    DEFAULT_FALLBACK_CODES: frozenset[str] = DEFAULT_FALLBACK_CODES

    def register_chain(
        self, name: str, targets: Sequence[Target], *, fall_back_on: Iterable[str] | None = None
    ) -> Callable[[], None]:
        """Make ``name`` a fallback chain over ``targets`` (rule 8): a request with
        ``provider=name`` goes to the first target, and on a failure before any content
        whose code is in ``fall_back_on`` (default :attr:`DEFAULT_FALLBACK_CODES`) to the
        next. Returns a function that removes the chain."""
        chain = FallbackChain.build(name, targets, fall_back_on)
        with self._lock:
            if chain.name in self._routes:
                raise _config_error("DUPLICATE_ADAPTER", f"provider {chain.name!r} is already registered")
            if chain.name in self._chains:
                raise _config_error("DUPLICATE_ADAPTER", f"fallback chain {chain.name!r} is already registered")
            for i, target in enumerate(chain.targets):
                if target.provider == chain.name or target.provider in self._chains:
                    raise _config_error(
                        "INVALID_ADAPTER",
                        f"register_chain targets[{i}]: {target.provider!r} is a fallback chain; a target is an adapter's route",
                    )
                if target.provider not in self._routes:
                    raise _config_error(
                        "NO_ADAPTER", f"register_chain targets[{i}]: {self._no_adapter_message(target.provider)}"
                    )
            self._chains[chain.name] = chain

        def remove() -> None:
            with self._lock:
                if self._chains.get(chain.name) is chain:
                    del self._chains[chain.name]

        return remove

    def list_providers(self) -> list[ProviderInfo]:
        """Every route, as detached copies, in registration order."""
        with self._lock:
            return [
                ProviderInfo(id=info.id, name=info.name)
                for registration in self._registrations
                for provider in registration.providers
                for info in (registration.adapter.provider_info(provider),)
            ]

    def adapter_for(self, provider: str) -> LlmAdapter:
        """The adapter registered for ``provider``; raises ``NO_ADAPTER``."""
        with self._lock:
            registration = self._routes.get(provider)
            chain = self._chains.get(provider)
        if registration is None:
            if chain is not None:
                targets = ", ".join(target.label("…") for target in chain.targets)
                raise _config_error("NO_ADAPTER", f"{provider!r} is a fallback chain ({targets}), not an adapter")
            raise _config_error("NO_ADAPTER", self._no_adapter_message(provider))
        return registration.adapter

    def _no_adapter_message(self, provider: str) -> str:
        """``NO_ADAPTER``'s message: what would register ``provider`` (the variables that
        ``default_service`` reads for it, never their values), or for a name dshstream does
        not know, the providers that are registered (a typo shows)."""
        from ._defaults import setup_hint  # _defaults builds on this module

        message = f"no adapter registered for provider {provider!r}"
        hint = setup_hint(provider, from_environment=self._built_from_environment)
        if hint is not None:
            return f"{message}: {hint}"
        with self._lock:
            known = list(self._routes)
        listed = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "") if known else "none"
        return f"{message}: register one with service.register_adapter([{provider!r}], adapter) (registered: {listed})"

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        """Models of ``provider`` (advisory), fetched within ``timeout`` seconds in all
        (default 30) and at most 16 MiB of answer."""
        adapter = self.adapter_for(provider)
        if timeout is None:  # adapters written before ``timeout`` existed keep working
            return adapter.list_models(provider)
        return adapter.list_models(provider, timeout=timeout)

    def count_tokens(self, options: GenerateOptions, *, timeout: float | None = None) -> int:
        """The input tokens ``options`` would bill, counted by its provider's own endpoint
        within ``timeout`` seconds in all (default 30); a provider without one is a
        ``ConfigurationError`` (never an estimate)."""
        options = check_options(options)
        return self.adapter_for(options.provider).count_tokens(options, timeout=timeout)

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Add a listener to the waterfall; returns a function that removes it."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    # ------------------------------------------------------------------ streaming

    def stream(self, options: GenerateOptions) -> ChunkStream:
        """Start a stream; iterate the result, or call ``.result()``.

        Raises only ``ConfigurationError`` (bad options, see the module docstring); every
        other failure is the stream's terminal ``Finish``.
        """
        options = check_options(options)
        with self._lock:
            chain = self._chains.get(options.provider)
        if chain is not None:
            check_chain_request(options, chain.name)
        cancel = options.cancel
        if cancel is None:
            cancel = threading.Event()
            options = with_cancel(options, cancel)  # checked just above
        with self._lock:
            listeners = tuple(self._listeners)
        # None when nobody watches; the route's adapter describes the request (records rule 7)
        watch = open_watch(self.observer, options, "service", partial(self._telemetry, options, chain is None))
        if not listeners and not self.check_contract:
            # Nobody needs single chunks on the way: hand lists through (one per read).
            # (the ChunkStream takes a handoff from the attempt loop: rule 10)
            batches = self._terminal_batches(options, watch=watch, handoff=True)
            return ChunkStream(batches, options=options, cancel=cancel, watch=watch)
        source = self._guarded(listeners, options, watch)
        if self.check_contract:
            source = _check_contract(source)
        return ChunkStream(_singles(source), options=options, cancel=cancel, watch=watch)

    def resume(self, cursor: Mapping[str, Any], options: GenerateOptions | None = None) -> ChunkStream:
        """Continue a cut resumable stream from its resume cursor (see the module docstring);
        iterate the result, or call ``.result()``."""
        from ._adapters.resumption import check_cursor

        checked = check_cursor(cursor)
        if options is None:
            options = GenerateOptions(provider=checked["provider"], model="resumed", messages=())
        options = check_options(options)
        if options.cancel is None:
            options = with_cancel(options, threading.Event())
        adapter = self.adapter_for(checked["provider"])
        opener = getattr(adapter, "resume", None)
        if opener is None:
            raise _config_error("INVALID_OPTIONS", f"{checked['provider']}: its adapter cannot resume a stream")
        source = opener(checked, options)
        assert options.cancel is not None
        watch = open_watch(self.observer, options, "service")
        batches = self._terminal_batches(options, watch=watch, source=source)
        return ChunkStream(batches, options=options, cancel=options.cancel, watch=watch)

    def _guarded(
        self,
        listeners: tuple[Listener, ...],
        options: GenerateOptions,
        watch: StreamWatch | None = None,
    ) -> Iterator[StreamChunk]:
        """The listener chain, with every exception it raises turned into the ``Finish``."""
        finished = False
        source: Iterator[StreamChunk] | None = None
        try:
            chain: Next = partial(self._terminal, watch=watch)
            for listener in reversed(listeners):
                chain = _bind(listener, chain)
            source = iter(chain(options))
            for chunk in source:
                if type(chunk) not in CHUNK_TYPES:
                    raise error_for(
                        make_failure(
                            "CONTRACT_VIOLATION",
                            f"{options.provider}: a listener yielded {type(chunk).__name__}, not a chunk",
                            provider=options.provider,
                        )
                    )
                if type(chunk) is Finish:
                    finished = True
                yield chunk
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: every failure becomes a Finish
            if finished:
                log.error("%s: listener raised %s after the finish", options.provider, type(exc).__name__)
                return
            finish = self._finish_for(exc, options, who="listener")
            assert finish.reason.failure is not None
            self._report(finish.reason.failure, options)
            yield finish
        finally:
            close_quietly(source, "a listener's stream")

    def _terminal(
        self, options: GenerateOptions, watch: StreamWatch | None = None
    ) -> Iterator[StreamChunk]:
        """The end of the listener chain: the options a listener passes on are checked."""
        for batch in self._terminal_batches(options, check=True, watch=watch):
            yield from batch

    def _terminal_batches(
        self,
        options: GenerateOptions,
        *,
        check: bool = False,
        watch: StreamWatch | None = None,
        source: Iterator[list[StreamChunk]] | None = None,
        handoff: bool = False,
    ) -> Iterator[list[StreamChunk]]:
        """The end of the waterfall: adapter lookup, replay routing, failure → Finish; the
        adapter starts under the stream's ``watch`` (its attempts are the stream's).
        ``handoff``: the consumer is the stream's ``ChunkStream`` (rule 10)."""
        finished = False
        try:
            if check:
                options = check_options(options)
            chain = None
            if source is None:
                with self._lock:
                    chain = self._chains.get(options.provider)
                if chain is not None:  # rule 8: the chain starts each target itself
                    check_chain_request(options, chain.name)
                    if _cancelled(options):
                        raise error_for(cancelled_failure(options.provider))
                    source = stream_chain(chain, options, lookup=self._adapter_or_none, writer=self._writer, watch=watch)
            if source is None:
                adapter = self.adapter_for(options.provider)
                options = self._route_replay(options, adapter)
                if _cancelled(options):
                    raise error_for(cancelled_failure(options.provider))
                telling = getattr(adapter, "_stream_batches_telling", None) if watch is None else None
                if telling is not None:
                    # The attempt loop hands this boundary the finish (its rule 5) and drops
                    # what follows it: its lists go on with ``yield from``, not a loop of this
                    # generator's own (one generator resume less per read; rule 10).
                    def told(finish: Finish) -> None:
                        nonlocal finished
                        finished = True
                        if finish.reason.failure is not None:
                            self._report(finish.reason.failure, options)

                    source = telling(options, told, handoff)
                    if source is not None:
                        try:
                            yield from source
                        finally:
                            _close(source)
                        if not finished:
                            yield [self._unfinished(options)]
                        return
                source = adapter.stream_batches(options)
            try:
                batches = source if watch is None or chain is not None else linked_start(watch, source)
                for batch in batches:
                    if finished or not batch:
                        continue
                    last = batch[-1]
                    if type(last) is Finish:
                        finished = True
                        assert isinstance(last, Finish)
                        if last.reason.failure is not None:
                            self._report(last.reason.failure, options)
                    yield batch
            finally:
                _close(source)
            if not finished:
                yield [self._unfinished(options)]
        except GeneratorExit:
            raise
        except Exception as exc:  # noqa: BLE001 - the boundary: every failure becomes a Finish
            if finished:
                return
            finish = self._finish_for(exc, options)
            assert finish.reason.failure is not None
            self._report(finish.reason.failure, options)
            yield [finish]

    def _unfinished(self, options: GenerateOptions) -> Finish:
        """An adapter that ended without its Finish: a cut, not a stop (reported)."""
        failure = make_failure(
            "STREAM_CLOSED",
            f"{options.provider}: the adapter ended the stream without a finish (STREAM_CLOSED)",
            provider=options.provider,
        )
        self._report(failure, options)
        return Finish(reason=FinishReason(kind="error", failure=failure))

    def _finish_for(self, exc: Exception, options: GenerateOptions, who: str = "adapter") -> Finish:
        provider = _provider_of(options)
        failure = _failure_of(exc, provider, who)
        cancelled = _cancelled(options)
        if cancelled and failure.code != "ABORTED":
            failure = cancelled_failure(provider)
        kind: FinishKind = "aborted" if cancelled or failure.code == "ABORTED" else "error"
        if not isinstance(exc, LlmError):
            log.error("%s: %s raised %s", provider, who, type(exc).__name__)
        return Finish(reason=FinishReason(kind=kind, failure=failure))

    def _report(self, failure: LlmFailure, options: GenerateOptions) -> None:
        """The service-level reporter hears each failed stream once (its final failure);
        adapters' own reporters hear every failed attempt."""
        if self.failure_reporter is None:
            return
        try:
            model = getattr(options, "model", None)
            self.failure_reporter(
                failure, {"provider": _provider_of(options), "model": model if isinstance(model, str) else None}
            )
        except Exception:  # noqa: BLE001 - a reporter must never break the stream
            log.exception("failure_reporter raised")

    def _telemetry(self, options: GenerateOptions, routed: bool) -> Telemetry | None:
        """What the route's adapter says of a request (``None`` for a fallback chain, whose
        targets differ, or a route with no adapter)."""
        adapter = self._adapter_or_none(options.provider) if routed else None
        return adapter.telemetry(options) if adapter is not None else None

    def _adapter_or_none(self, provider: str) -> LlmAdapter | None:
        with self._lock:
            registration = self._routes.get(provider)
        return registration.adapter if registration is not None else None

    def _writer(self, message: Message) -> LlmAdapter | None:
        """The adapter ``message`` was written through, by its provider's route (rule 6)."""
        with self._lock:
            source = self._routes.get(message.provider or "")
        return source.adapter if source is not None else None

    def _route_replay(self, options: GenerateOptions, target: LlmAdapter) -> GenerateOptions:
        changed = False
        messages: list[Message] = []
        for message in options.messages:
            if message.replay_state is not None:
                source = self._routes.get(message.provider or "")
                if source is None or source.adapter is not target:
                    message = replace(message, replay_state=None)
                    changed = True
            messages.append(message)
        return replace(options, messages=tuple(messages)) if changed else options


def _close(source: object) -> None:
    close = getattr(source, "close", None)
    if close is not None:
        close()


def _singles(chunks: Iterator[StreamChunk]) -> Iterator[list[StreamChunk]]:
    try:
        for chunk in chunks:
            yield [chunk]
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:
            close()


def _bind(listener: Listener, next_: Next) -> Next:
    def call(options: GenerateOptions) -> Iterator[StreamChunk]:
        return listener(options, next_)

    return call


def _provider_of(options: object) -> str:
    """The request's provider name, or ``"service"`` for options too broken to have one."""
    provider = getattr(options, "provider", None)
    return provider if isinstance(provider, str) and provider else "service"


def _cancelled(options: object) -> bool:
    """Whether the request's cancel event is set (``False`` when it can't be asked)."""
    cancel = getattr(options, "cancel", None)
    if cancel is None:
        return False
    try:
        return bool(cancel.is_set())
    except Exception:  # noqa: BLE001 - a broken cancel object is not a cancellation
        return False


def _exception_text(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - a hostile __str__ must not break the boundary
        return type(exc).__name__


def _failure_of(exc: BaseException, provider: str, who: str = "adapter") -> LlmFailure:
    if isinstance(exc, LlmError):
        failure = exc.failure
        if failure.provider is None:
            failure = replace(failure, provider=provider)
        return failure
    return make_failure(
        "UNKNOWN",
        f"{provider}: {who} failed with {type(exc).__name__}",
        provider=provider,
        detail=redact(_exception_text(exc), limit=1900) or None,
    )
