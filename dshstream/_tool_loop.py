"""The tool loop: stream a step, run the tool calls it asked for, append the assistant turn
and the results to history, and repeat until a step asks for no tool.

Contract (:func:`run_tools` returns a :class:`ToolLoopStream`):

1. **Steps.** Each step is one ``LlmService.stream`` request with the history so far. Its
   chunks are the ordinary chunks (no new chunk types), yielded live; every step ends with
   its own :class:`~dshstream._core.types.Finish`, and ``stream.step`` is the number
   (from 1) of the step being streamed. The assistant turn (``AssembledResponse.message()``,
   so replay state — thinking signatures, Responses ids... — flows to the next step as it
   does between single calls) enters the history together with its tool results: the
   history never holds a call without its answer.
2. **Calls.** Tools get the parsed arguments as keyword arguments, ``fn(**arguments)``. A
   ``str`` result is sent as it is; any other value as compact JSON (a value JSON can't
   carry is an error result). A result longer than ``max_result_chars`` (default 100,000)
   is cut there and says so (``…[truncated N chars]``): one runaway tool must not make the
   next request too large for the provider. Results are appended in call order, one
   ``tool`` message per call, also when they run in a thread pool (``parallel``).
3. **Refusals.** A call is never run when its arguments were truncated
   (``arguments_truncated``, also the calls a ``max-tokens`` step cut short, which the
   loop keeps in the assistant turn so each can be answered) or are not a JSON object; nor
   when its name has no function; nor when ``approve(call)`` does not return ``True``. The
   model gets an error tool result (``is_error=True``) saying why, and the loop goes on.
   A tool that raises becomes an error result with the exception's type and its redacted
   text (known keys and key-shaped strings removed, at most 2,000 characters).
4. **Failure.** A step that ends with an ``error`` or ``aborted`` finish ends the loop: a
   :class:`ToolLoopError` (an :class:`~dshstream._core.errors.LlmError` with the step's
   ``failure``, chained from the failure's own exception) is raised by iteration (after
   the step's ``Finish`` chunk) and by :meth:`ToolLoopStream.result`. It carries the
   completed ``steps``, the ``history`` up to the last completed step (the failed step is
   never logged as an assistant turn; its partial answer is in ``error.response``) and the
   ``usage`` summed so far.
5. **End.** The loop ends when a step asks for no tool (``stopped="done"``) or when step
   ``max_steps`` asks for tools anyway (``stopped="max_steps"``): those last calls are not
   run but answered with error results, so the history stays valid for the next turn.
7. **Per-step caps.** One step runs at most ``max_calls_per_step`` calls (default
   :data:`DEFAULT_MAX_CALLS_PER_STEP`, 64) and sends back at most
   ``max_step_result_chars`` characters of tool output in all (default
   :data:`DEFAULT_MAX_STEP_RESULT_CHARS`, 1,000,000; each result is also cut at
   ``max_result_chars``, rule 2): a model asking for 10,000 calls, or for 1,000 results of
   100,000 characters, must neither run them all nor make a next request of 100 MB. Calls
   past the first ``max_calls_per_step`` are not run (``limited``). Results count in call
   order: the one that crosses the budget is cut to what is left (and says so); after it
   the later calls are not run (``limited``) or, with ``parallel``, not sent if they ran
   already (``withheld``). Each gets an error result naming the setting, so the history
   stays valid; :attr:`ToolLoopStep.limited_by` (and a log warning) says which caps applied.
6. **Control.** ``close()`` (from any thread) and ``cancel()`` work across steps: the step
   streaming is cut (its finish is ``aborted``), calls not yet started are answered as not
   run, and no further request is made; a tool already running is not interrupted. With
   ``parallel`` the loop does not wait for it either: a pooled call still running is
   answered ``abandoned`` (its thread runs on, and the interpreter waits for it at exit)
   and the loop ends at once. Without ``parallel`` the calls run in the consuming thread,
   so a tool that never returns holds the loop until it returns (give such tools their
   own timeout, or use ``parallel``). A consumer busy in ``next()`` meanwhile gets the
   step's ``aborted`` finish and then the ``ABORTED`` :class:`ToolLoopError`; after
   ``close()`` of an idle loop iteration just stops, and :meth:`~ToolLoopStream.result`
   raises that error. ``KeyboardInterrupt`` closes the loop and propagates.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from ._core.assembler import AssembledResponse
from ._core.errors import LlmError, ToolArgumentsError, aborted_failure, error_for
from ._core.filters.json_repair import (
    DEFAULT_MAX_REPAIR_CHARS,
    parse_tool_arguments,
    repair_incomplete_json,
)
from ._core.log import get_logger
from ._core.redact import known_secrets, redact, truncate
from ._core.request import GenerateOptions, Message, check_options
from ._core.strict_json import dump_json
from ._core.wires.usage import add_usage
from ._core.types import (
    BlockEnd,
    Finish,
    LlmFailure,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolResultBlock,
)
from ._core.validate import check_positive_int, check_str, describe, invalid

if TYPE_CHECKING:
    from ._service import LlmService

log = get_logger("dshstream.tool_loop")

ToolFunction: TypeAlias = Callable[..., Any]
Approve: TypeAlias = Callable[[ToolCallBlock], bool]
#: what happened to one call: ``ok`` ran and returned; ``raised`` ran and raised (or
#: returned what JSON can't carry); ``abandoned`` was still running in the pool when the
#: loop was cancelled (rule 6); ``withheld`` ran but its result was not sent (the step's
#: result budget was spent, rule 7); the others were not run (``limited``: a per-step cap)
ToolCallStatus: TypeAlias = Literal[
    "ok",
    "raised",
    "abandoned",
    "truncated",
    "invalid_arguments",
    "unknown_tool",
    "vetoed",
    "skipped",
    "limited",
    "withheld",
]
StopReason: TypeAlias = Literal["done", "max_steps"]
#: the per-step caps (rule 7), by the name of their setting
StepLimit: TypeAlias = Literal["max_calls_per_step", "max_step_result_chars"]

#: at most this many characters of a tool's exception text go to the model
ERROR_TEXT_LIMIT = 2000
#: the longest tool result sent back as it is (rule 2)
DEFAULT_MAX_RESULT_CHARS = 100_000
#: the most calls one step runs (rule 7)
DEFAULT_MAX_CALLS_PER_STEP = 64
#: the most characters of tool output one step sends back, all results together (rule 7)
DEFAULT_MAX_STEP_RESULT_CHARS = 1_000_000
_MAX_WORKERS = 32
#: how often a loop waiting on its tool pool looks at the cancel event (seconds)
CANCEL_POLL = 0.05


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call and what the loop answered: ``result`` is the block sent back."""

    call: ToolCallBlock
    result: ToolResultBlock
    status: ToolCallStatus
    #: the exception a tool raised (``status == "raised"``), for the caller's own logs
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """Whether the tool ran and returned."""
        return self.status == "ok"


@dataclass(frozen=True, slots=True)
class ToolLoopStep:
    """One completed step: its response, the assistant turn appended for it, and each tool
    call's outcome, in call order."""

    number: int
    response: AssembledResponse
    message: Message
    outcomes: tuple[ToolOutcome, ...] = ()
    #: the per-step caps that cut, withheld or refused some of this step's calls (rule 7)
    limited_by: tuple[StepLimit, ...] = ()

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The calls this step asked for (the ones a max-tokens step cut short included)."""
        return tuple(outcome.call for outcome in self.outcomes)


@dataclass(frozen=True, slots=True)
class ToolLoopResult:
    """A finished loop (rule 5); ``history`` is ready for the next user turn."""

    steps: tuple[ToolLoopStep, ...]
    history: tuple[Message, ...]
    usage: TokenUsage | None
    response: AssembledResponse
    stopped: StopReason
    #: how many messages of ``history`` were the request's own (the rest are this loop's)
    start: int = 0

    @property
    def text(self) -> str:
        """The visible text of the last response."""
        return self.response.text

    @property
    def new_messages(self) -> tuple[Message, ...]:
        """The messages this loop appended: assistant turns and tool results."""
        return self.history[self.start :]

    @property
    def outcomes(self) -> tuple[ToolOutcome, ...]:
        """Every tool call's outcome, step after step."""
        return tuple(outcome for step in self.steps for outcome in step.outcomes)


class ToolLoopError(LlmError):
    """A tool loop ended by a failed step (rule 4); ``step`` is its number, ``usage`` counts
    the failed step too."""

    def __init__(
        self,
        failure: LlmFailure,
        step: int = 0,
        steps: tuple[ToolLoopStep, ...] = (),
        history: tuple[Message, ...] = (),
        response: AssembledResponse | None = None,
        usage: TokenUsage | None = None,
    ) -> None:
        super().__init__(failure)
        self.step = step
        self.steps = steps
        self.history = history
        self.response = response
        self.usage = usage

    def __repr__(self) -> str:
        return f"ToolLoopError(step {self.step}, {self.failure.code}: {self.failure.message!r})"

    def __reduce__(self) -> Any:
        return (type(self), (self.failure, self.step, self.steps, self.history, self.response, self.usage))


def run_tools(
    service: LlmService,
    options: GenerateOptions,
    tools: Mapping[str, ToolFunction],
    *,
    max_steps: int = 8,
    approve: Approve | None = None,
    parallel: bool | int = False,
    max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
    max_calls_per_step: int = DEFAULT_MAX_CALLS_PER_STEP,
    max_step_result_chars: int = DEFAULT_MAX_STEP_RESULT_CHARS,
) -> ToolLoopStream:
    """Run the tool loop for ``options`` on ``service``; iterate the result for the chunks
    of every step, or call ``.result()``.

    ``tools`` maps each of ``options.tools``' names to its function; ``max_steps`` bounds
    the requests made; ``approve(call)`` must return ``True`` for a call to run;
    ``parallel`` runs a step's calls in a thread pool (``True``: one thread per call, an
    ``int``: that many). The result caps are rules 2 and 7. Raises ``ConfigurationError``
    at once for bad arguments (a spec without a function...); every other failure is a
    :class:`ToolLoopError` from iteration or ``result()``.
    """
    if not callable(getattr(service, "stream", None)):
        raise invalid(f"run_tools: service must be an LlmService, got {describe(service)}", wrong_type=True)
    options = check_options(options)
    functions = _check_tools(tools)
    missing = [spec.name for spec in options.tools if spec.name not in functions]
    if missing:
        raise invalid(
            f"run_tools: tools has no function for {', '.join(map(repr, missing))} "
            "(every ToolSpec in options.tools needs one)"
        )
    check_positive_int(max_steps, "run_tools: max_steps")
    check_positive_int(max_result_chars, "run_tools: max_result_chars")
    check_positive_int(max_calls_per_step, "run_tools: max_calls_per_step")
    check_positive_int(max_step_result_chars, "run_tools: max_step_result_chars")
    if approve is not None and not callable(approve):
        raise invalid(f"run_tools: approve must be a callable or None, got {describe(approve)}", wrong_type=True)
    return ToolLoopStream(
        service,
        options,
        functions,
        max_steps=max_steps,
        approve=approve,
        workers=_workers(parallel),
        max_result_chars=max_result_chars,
        max_calls_per_step=max_calls_per_step,
        max_step_result_chars=max_step_result_chars,
    )


def _check_tools(tools: object) -> dict[str, ToolFunction]:
    if not isinstance(tools, Mapping):
        raise invalid(f"run_tools: tools must be a mapping of name -> function, got {describe(tools)}", wrong_type=True)
    functions: dict[str, ToolFunction] = {}
    for name, fn in tools.items():
        check_str(name, "run_tools: tools key")
        if not callable(fn):
            raise invalid(f"run_tools: tools[{name!r}] must be callable, got {describe(fn)}", wrong_type=True)
        functions[name] = fn
    return functions


def _workers(parallel: object) -> int:
    """Threads per step: 1 runs the calls in the consuming thread; 0 means one per call."""
    if parallel is False:
        return 1
    if parallel is True:
        return 0
    if isinstance(parallel, bool) or not isinstance(parallel, int):
        raise invalid(f"run_tools: parallel must be a bool or a positive int, got {describe(parallel)}", wrong_type=True)
    if parallel < 1:
        raise invalid(f"run_tools: parallel must be a bool or a positive int, got {describe(parallel)}")
    return parallel


class ToolLoopStream:
    """What :func:`run_tools` returns: an iterator of the chunks of every step, whose
    ``steps``, ``history`` and ``usage`` say how things stand; a context manager that closes."""

    def __init__(
        self,
        service: LlmService,
        options: GenerateOptions,
        tools: dict[str, ToolFunction],
        *,
        max_steps: int,
        approve: Approve | None,
        workers: int,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_calls_per_step: int = DEFAULT_MAX_CALLS_PER_STEP,
        max_step_result_chars: int = DEFAULT_MAX_STEP_RESULT_CHARS,
    ) -> None:
        self._service = service
        self._options = options
        self._tools = tools
        self.max_steps = max_steps
        self._approve = approve
        self._workers = workers
        self._max_result_chars = max_result_chars
        self._max_calls = max_calls_per_step
        self._max_step_chars = max_step_result_chars
        self._cancel: threading.Event = options.cancel if options.cancel is not None else threading.Event()
        self._start = len(options.messages)
        self._history: list[Message] = list(options.messages)
        self._steps: list[ToolLoopStep] = []
        self._usage: TokenUsage | None = None
        #: the number of the step being streamed (0 before the first)
        self.step = 0
        self._partial: AssembledResponse | None = None
        self._gen = self._run()
        self._running = False
        self._done = False
        self._result: ToolLoopResult | None = None
        self._error: ToolLoopError | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        return f"ToolLoopStream(provider={self._options.provider!r}, step={self.step}, {state})"

    # ------------------------------------------------------------------ state

    @property
    def steps(self) -> tuple[ToolLoopStep, ...]:
        """The steps completed so far."""
        return tuple(self._steps)

    @property
    def history(self) -> tuple[Message, ...]:
        """The history so far: the request's messages, then the completed steps' turns."""
        return tuple(self._history)

    @property
    def usage(self) -> TokenUsage | None:
        """The usage summed over the steps streamed so far."""
        return self._usage

    @property
    def done(self) -> bool:
        """Whether the loop has ended (finished, failed or closed)."""
        return self._done

    # ------------------------------------------------------------------ iteration

    def __iter__(self) -> ToolLoopStream:
        return self

    def __next__(self) -> StreamChunk:
        with self._lock:
            if self._done:
                raise StopIteration
            self._running = True
        try:
            return next(self._gen)
        except StopIteration:
            self._done = True
            raise
        except ToolLoopError:
            self._done = True
            raise
        except KeyboardInterrupt:
            self._running = False
            self._shut("interrupted (KeyboardInterrupt)")
            raise
        finally:
            self._running = False

    def text_stream(self) -> Iterator[str]:
        """Only the visible text of every step, as it arrives."""
        for chunk in self:
            if type(chunk) is TextDelta:
                yield chunk.text

    def __enter__(self) -> ToolLoopStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ control

    def cancel(self) -> None:
        """Ask the loop to stop, from any thread (rule 6)."""
        self._cancel.set()

    def close(self) -> None:
        """Stop the loop now and release its connection; safe from any thread, idempotent.
        Then :meth:`result` raises the ``ABORTED`` :class:`ToolLoopError`."""
        # The cancel event reaches a consuming thread blocked inside next(): the transport
        # cuts the read, the step ends ``aborted`` and the loop stops there. An idle loop
        # is shut from here.
        self._cancel.set()
        with self._lock:
            if self._done or self._running:
                return
        self._shut("tool loop closed by the consumer")

    def _shut(self, why: str) -> None:
        """End the loop from outside its generator (which closes the step's stream)."""
        with self._lock:
            if self._done:
                return
            self._done = True
        self._cancel.set()
        try:
            self._gen.close()
        except Exception:
            log.exception("closing the tool loop raised")
        self._set_aborted(why)

    def _set_aborted(self, why: str) -> None:
        if self._result is None and self._error is None:
            provider = self._options.provider
            failure = aborted_failure(provider, why)
            self._error = self._failed(failure, self._partial)

    # ------------------------------------------------------------------ results

    def result(self) -> ToolLoopResult:
        """Run the loop to its end; raises :class:`ToolLoopError` when a step failed or the
        loop was closed."""
        for _ in self:
            pass
        if self._error is not None:
            raise self._error
        if self._result is None:  # the generator ended without one (a tool raised SystemExit...)
            self._set_aborted("tool loop ended without a result")
            assert self._error is not None
            raise self._error
        return self._result

    def _failed(self, failure: LlmFailure, response: AssembledResponse | None) -> ToolLoopError:
        error = ToolLoopError(
            failure,
            step=self.step,
            steps=tuple(self._steps),
            history=tuple(self._history),
            response=response,
            usage=self._usage,
        )
        error.__cause__ = error_for(failure)
        return error

    # ------------------------------------------------------------------ the loop

    def _run(self) -> Generator[StreamChunk, None, None]:
        for number in range(1, self.max_steps + 1):
            self.step = number
            response, ended_calls, finish = yield from self._stream_step()
            self._usage = _add_usage(self._usage, response.usage)
            if response.failure is not None:
                self._error = self._failed(response.failure, response)
                raise self._error
            message, calls = _assistant_turn(response, ended_calls, finish)
            if not calls:
                self._history.append(message)
                self._steps.append(ToolLoopStep(number, response, message))
                self._result = self._finished(response, "done")
                return
            last = number == self.max_steps
            outcomes, limited_by = self._answer(calls, skip="the tool loop reached max_steps" if last else None)
            # the turn and its answers together: the history never holds an unanswered call
            self._history.append(message)
            self._history.extend(Message("tool", (outcome.result,)) for outcome in outcomes)
            self._steps.append(ToolLoopStep(number, response, message, outcomes, limited_by))
            if last:
                self._result = self._finished(response, "max_steps")
                return

    def _stream_step(self) -> Generator[StreamChunk, None, tuple[AssembledResponse, list[ToolCallBlock], Finish | None]]:
        """Stream one step, yielding its chunks; returns its response, the tool calls that
        ended in it (a max-tokens finish drops them from the response) and its finish."""
        options = replace(self._options, messages=tuple(self._history), cancel=self._cancel)
        stream = self._service.stream(options)
        ended: list[ToolCallBlock] = []
        finish: Finish | None = None
        try:
            for chunk in stream:
                if type(chunk) is BlockEnd and type(chunk.block) is ToolCallBlock:
                    ended.append(chunk.block)
                elif type(chunk) is Finish:
                    finish = chunk
                yield chunk
            return stream.result(), ended, finish
        finally:
            stream.close()
            self._partial = stream.partial()

    def _answer(
        self, calls: Sequence[ToolCallBlock], skip: str | None
    ) -> tuple[tuple[ToolOutcome, ...], tuple[StepLimit, ...]]:
        """Every call's outcome, in call order, and the per-step caps that applied (rule 7)."""
        outcomes: list[ToolOutcome | None] = []
        runnable: list[tuple[int, ToolCallBlock, ToolFunction, dict[str, Any]]] = []
        limited_by: list[StepLimit] = []
        over = len(calls) - self._max_calls
        if over > 0:
            limited_by.append("max_calls_per_step")
            log.warning(
                "a step asked for %d tool calls; the %d past run_tools max_calls_per_step=%d are not run",
                len(calls), over, self._max_calls,
            )
        for index, call in enumerate(calls):
            if index >= self._max_calls:  # rule 7: answered, never run (nor even checked)
                outcomes.append(_refused(call, "limited", _over_calls(len(calls), self._max_calls)))
                continue
            checked = self._check(call, skip)
            if isinstance(checked, ToolOutcome):
                outcomes.append(checked)
            else:
                runnable.append((len(outcomes), call, *checked))
                outcomes.append(None)
        if runnable:
            budget = _ResultBudget(self._max_step_chars)
            for position, outcome in self._execute_all(runnable, budget):
                outcomes[position] = outcome
            if budget.applied:
                limited_by.append("max_step_result_chars")
                log.warning(
                    "the results of a step reached run_tools max_step_result_chars=%d; later ones are not sent",
                    self._max_step_chars,
                )
        assert all(outcome is not None for outcome in outcomes)
        return tuple(outcome for outcome in outcomes if outcome is not None), tuple(limited_by)

    def _check(self, call: ToolCallBlock, skip: str | None) -> ToolOutcome | tuple[ToolFunction, dict[str, Any]]:
        """A refusal for ``call`` (or, with ``skip``, the reason it is not run), or the
        function and arguments to run it with."""
        try:
            arguments = parse_tool_arguments(call)
        except ToolArgumentsError as exc:
            if exc.failure.code == "TRUNCATED_TOOL_ARGUMENTS" and _cut_short(call):
                return _refused(
                    call,
                    "truncated",
                    f"Not run: the arguments of this {_name(call)} call were cut off before they were "
                    "complete. Call the tool again with complete arguments (shorter ones if the "
                    "answer ran out of tokens).",
                )
            return _refused(
                call,
                "invalid_arguments",
                f"Not run: the arguments of this {_name(call)} call are not a JSON object. "
                "Call the tool again with a JSON object of arguments.",
            )
        fn = self._tools.get(call.name)
        if fn is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return _refused(
                call, "unknown_tool", f"Not run: there is no tool named {_name(call)}. Available tools: {known}."
            )
        if skip is not None:
            return _refused(call, "skipped", f"Not run: {skip}.")
        if self._approve is not None:
            try:
                approved = self._approve(call) is True
            except Exception as exc:  # noqa: BLE001 - a failing check is a veto (fail closed)
                log.error("approve() raised %s for tool %s; the call is not run", type(exc).__name__, call.name)
                approved = False
            if not approved:
                return _refused(call, "vetoed", f"Not run: the call to {_name(call)} was not approved.")
        return fn, arguments

    def _execute_all(
        self, runnable: list[tuple[int, ToolCallBlock, ToolFunction, dict[str, Any]]], budget: _ResultBudget
    ) -> Iterator[tuple[int, ToolOutcome]]:
        """Run the calls, their results taken from ``budget`` in call order (rule 7)."""
        workers = self._workers or min(len(runnable), _MAX_WORKERS)
        if workers <= 1 or len(runnable) == 1:
            for position, call, fn, arguments in runnable:
                if budget.spent:  # nothing of its result could be sent: don't run it
                    yield position, budget.not_run(call)
                else:
                    yield position, budget.take(self._run_one(call, fn, arguments))
            return
        pool = ThreadPoolExecutor(max_workers=min(workers, len(runnable)), thread_name_prefix="dshstream-tool")
        try:
            futures: list[tuple[int, Future[ToolOutcome]]] = [
                (position, pool.submit(self._run_one, call, fn, arguments))
                for position, call, fn, arguments in runnable
            ]
            for (position, future), (_, call, _, _) in zip(futures, runnable):
                if budget.spent and future.cancel():  # not started yet: it never runs
                    yield position, budget.not_run(call)
                else:
                    yield position, budget.take(self._outcome_of(call, future))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _outcome_of(self, call: ToolCallBlock, future: Future[ToolOutcome]) -> ToolOutcome:
        """The pooled call's outcome; once the loop is cancelled it is not waited for
        (rule 6): a call not started never runs, a running one is left to finish alone."""
        while True:
            try:
                return future.result(timeout=CANCEL_POLL)
            except FutureTimeout:
                if not self._cancel.is_set():
                    continue
            if future.cancel():
                return _refused(call, "skipped", "Not run: the tool loop was cancelled.")
            try:
                return future.result(timeout=0)  # it ended meanwhile
            except FutureTimeout:
                log.warning("tool %s still running when the loop was cancelled; not waited for", call.name)
                return _refused(
                    call, "abandoned", f"No result: the tool loop was cancelled while {_name(call)} was running."
                )

    def _run_one(self, call: ToolCallBlock, fn: ToolFunction, arguments: dict[str, Any]) -> ToolOutcome:
        """Run ``call`` unless the loop was cancelled before its turn came."""
        if self._cancel.is_set():
            return _refused(call, "skipped", "Not run: the tool loop was cancelled.")
        return _execute(call, fn, arguments, self._max_result_chars)

    def _finished(self, response: AssembledResponse, stopped: StopReason) -> ToolLoopResult:
        return ToolLoopResult(
            steps=tuple(self._steps),
            history=tuple(self._history),
            usage=self._usage,
            response=response,
            stopped=stopped,
            start=self._start,
        )


def _name(call: ToolCallBlock) -> str:
    """The call's tool name for a message to the model (bounded: it is model output)."""
    name = call.name if len(call.name) <= 64 else call.name[:64] + "..."
    return repr(name)


def _cut_short(call: ToolCallBlock) -> bool:
    """Whether a call marked ``arguments_truncated`` was cut short, rather than written as
    something that is not a JSON object (translators mark both; the raw text tells)."""
    raw = call.raw_arguments
    if raw is None or len(raw) > DEFAULT_MAX_REPAIR_CHARS:
        return True
    return repair_incomplete_json(raw) is not None


def _refused(call: ToolCallBlock, status: ToolCallStatus, why: str) -> ToolOutcome:
    return ToolOutcome(call, ToolResultBlock(call_id=call.id, content=why, is_error=True), status)


def _over_calls(asked: int, cap: int) -> str:
    return (
        f"Not run: this step asked for {asked} tool calls and the tool loop runs at most {cap} "
        "per step (run_tools max_calls_per_step). Ask for the calls still needed in the next step."
    )


class _ResultBudget:
    """The characters of tool output one step may still send back (rule 7), spent in call
    order; the results of calls that ran count, the short refusals don't."""

    __slots__ = ("applied", "limit", "left")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit
        #: whether the budget cut, withheld or refused something
        self.applied = False

    @property
    def spent(self) -> bool:
        return self.left <= 0

    def _why(self) -> str:
        return (
            f"the results of this step already reached {self.limit:,} characters "
            "(run_tools max_step_result_chars)"
        )

    def not_run(self, call: ToolCallBlock) -> ToolOutcome:
        self.applied = True
        return _refused(call, "limited", f"Not run: {self._why()}. Ask for it in the next step if it is still needed.")

    def take(self, outcome: ToolOutcome) -> ToolOutcome:
        """``outcome`` as it may be sent: whole, cut to what is left, or withheld."""
        if outcome.status not in ("ok", "raised"):
            return outcome  # not run (or abandoned): a short note
        content = outcome.result.content
        if self.spent:
            self.applied = True
            why = f"Result withheld: the call to {_name(outcome.call)} ran, but {self._why()}."
            result = ToolResultBlock(outcome.call.id, why, is_error=True)
            return replace(outcome, result=result, status="withheld")
        if len(content) <= self.left:
            self.left -= len(content)
            return outcome
        self.applied = True
        kept = self.left
        self.left = 0
        log.warning("tool %s returned %d characters; cut to the step's %d left", outcome.call.name, len(content), kept)
        return replace(outcome, result=replace(outcome.result, content=truncate(content, kept)))


def _execute(
    call: ToolCallBlock, fn: ToolFunction, arguments: dict[str, Any], max_chars: int = DEFAULT_MAX_RESULT_CHARS
) -> ToolOutcome:
    """Run one call; its exception or unencodable value becomes an error result."""
    try:
        value = fn(**arguments)
    except Exception as exc:  # noqa: BLE001 - a tool's failure is the model's to see
        log.warning("tool %s raised %s", call.name, type(exc).__name__)
        text = redact(_exception_text(exc), known_secrets(), limit=ERROR_TEXT_LIMIT)
        content = f"Error: the tool {_name(call)} failed: {text}"
        return ToolOutcome(call, ToolResultBlock(call.id, content, is_error=True), "raised", exc)
    content_or_none = value if isinstance(value, str) else dump_json(value)
    if content_or_none is None:
        error = TypeError(f"{call.name} returned a {type(value).__name__}, which JSON can't carry")
        log.warning("tool %s returned a %s, which JSON can't carry", call.name, type(value).__name__)
        content = f"Error: the tool {_name(call)} returned a value that could not be encoded as JSON."
        return ToolOutcome(call, ToolResultBlock(call.id, content, is_error=True), "raised", error)
    if len(content_or_none) > max_chars:
        log.warning("tool %s returned %d characters; cut to %d", call.name, len(content_or_none), max_chars)
        content_or_none = truncate(content_or_none, max_chars)
    return ToolOutcome(call, ToolResultBlock(call.id, content_or_none), "ok")


def _exception_text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not break the loop
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _assistant_turn(
    response: AssembledResponse, ended: list[ToolCallBlock], finish: Finish | None
) -> tuple[Message, tuple[ToolCallBlock, ...]]:
    """The assistant turn to append and the calls to answer.

    A ``max-tokens`` finish drops tool calls from the response (they may be cut short);
    the loop puts the ones that ended back, with the finish's unpruned replay state, so
    each gets an answer: the cut ones a refusal, the complete ones their result.
    """
    message = response.message()
    if response.finish.kind != "max-tokens" or not ended or response.tool_calls:
        return message, response.tool_calls
    calls = tuple(ended)
    state = finish.replay_state if finish is not None else message.replay_state
    return replace(message, content=(*response.blocks, *calls), replay_state=state), calls


def _add_usage(total: TokenUsage | None, usage: TokenUsage | None) -> TokenUsage | None:
    """``total + usage``, field by field; an optional field stays ``None`` only while no
    step reported it."""
    if usage is None:
        return total
    if total is None:
        return usage
    return add_usage(total, usage)
