"""Resumption: a cut stream of a stored response continued instead of re-billed — the
I/O behind a wire that can resume (wire rule 6; OpenAI and Azure Responses in background
mode, Gemini Interactions in the background).

Contract (only reads: resuming never re-runs anything, it reads what the provider has):

1. **The continuation.** :meth:`Resumption.__call__` is the pump's ``resume`` (pump rule
   7): after a cut it GETs ``response_url(id, query=resume_query(N, E))`` — ``N`` the
   last sequence number the translator processed, ``E`` its last resume token
   (``stream=true&starting_after=N`` on Responses, ``stream=true&last_event_id=E`` on
   Gemini Interactions; translator rule 8, told :meth:`begin_continuation` before the
   continuation's first byte) — authorized by the
   adapter's auth flow like any attempt, under the stream's deadline and cancel. A failed
   try that may pass (``TRANSPORT``, ``TIMEOUT`` of the open, a retryable status) is tried
   again after a backoff; at most :data:`MAX_TRIES` tries per stream in all. No response
   id yet (a cut before ``response.created``), a cancel, a refusal or the tries spent:
   ``None`` — the stream ends ``STREAM_CLOSED`` with its partial output (pump rule 5).
2. **Past the streaming window** (Responses). A ``400`` saying the response "can no
   longer be streamed" switches to polling ``GET response_url(id)`` with backoff (0.5 s doubling to
   5 s) within the deadline (or :data:`POLL_LIMIT` without one) until its ``status`` is
   ``completed``, ``failed``, ``cancelled`` or ``incomplete`` (a ``queued`` or
   ``in_progress`` one is waited for); the answer is fed to the same translator as
   synthesized events: ``response.output_item.done`` for each output item not done yet
   (its ``output_index`` not in the translator's ``items_done``), then the terminal
   ``response.completed``/``failed``/``incomplete`` (``cancelled``: ``response.failed``
   with a ``cancelled`` error).
3. **The cursor.** :meth:`Resumption.cursor` — ``{"provider", "response_id",
   "sequence_number", "wire", "base_url"}`` (the translator's wire; the base URL
   redacted), plus ``"event_id"`` on a wire with resume tokens, JSON-safe, no secrets — goes on the failure's ``diagnostics`` (``resume_cursor``) and the finish's
   ``metadata.resume_cursor`` whenever a resumable stream ends without completing
   (:func:`resumable_batches`); :func:`check_cursor` validates one handed back
   (``LlmService.resume``), naming the field; its ``wire`` is one of
   :data:`RESUMABLE_WIRES`.
4. **Cancel.** A stream the consumer leaves unfinished (``close()``, a cancel) has its
   response cancelled — ``POST response_url(id, "/cancel")`` — once, best effort, within
   :data:`CANCEL_TIMEOUT` seconds; it never raises.
"""

from __future__ import annotations

import json
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._core.decode import StreamDecoder
from .._core.errors import LlmError, error_for
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.pump import Body, pump
from .._core.redact import redact
from .._core.request import GenerateOptions
from .._core.types import Finish, ResponseMetadata, StreamChunk
from .._core.validate import describe, invalid
from .._core.wires.translator import Translator
from .._transport import DEFAULT_IDLE_TIMEOUT, DEFAULT_QUIET_TIMEOUT, ResponseStream
from .credentials import FetchLimits

if TYPE_CHECKING:
    from .http import HttpAdapter

log = get_logger("dshstream.adapters")

__all__ = [
    "CANCEL_TIMEOUT", "MAX_TRIES", "POLL_LIMIT", "RESUMABLE_WIRES", "Resumption", "check_cursor", "resumable_batches",
]

#: resume tries per stream, in all (rule 1)
MAX_TRIES = 5
#: how long a poll may go on when the stream has no deadline, seconds (rule 2)
POLL_LIMIT = 900.0
#: the most a cancel may take, seconds (rule 4)
CANCEL_TIMEOUT = 3.0
_TERMINAL = {"completed": "response.completed", "failed": "response.failed", "incomplete": "response.incomplete"}
_WAITING = frozenset({"queued", "in_progress"})
_EXPIRED = "no longer be streamed"
_CURSOR_KEYS = ("provider", "response_id", "sequence_number", "wire", "base_url", "event_id")
#: the wires a cursor may name (rule 3)
RESUMABLE_WIRES = ("openai-responses", "gemini-interactions")
#: the wires whose stored answer the poll turns into events (rule 2)
_POLLED_WIRES = frozenset({"openai-responses"})


def check_cursor(cursor: object) -> dict[str, Any]:
    """``cursor`` as a resume cursor (rule 3), or a ``ConfigurationError`` naming the field."""
    if not isinstance(cursor, Mapping):
        raise invalid(f"resume cursor must be a dict, got {describe(cursor)}", wrong_type=True)
    for key in ("provider", "response_id", "wire"):
        value = cursor.get(key)
        if not isinstance(value, str) or not value:
            raise invalid(f"resume cursor['{key}'] must be a non-empty str, got {describe(value)}", wrong_type=True)
    if cursor["wire"] not in RESUMABLE_WIRES:
        known = " or ".join(repr(wire) for wire in RESUMABLE_WIRES)
        raise invalid(f"resume cursor['wire'] must be {known}, got {cursor['wire']!r}")
    sequence = cursor.get("sequence_number")
    if type(sequence) is not int or sequence < -1:
        raise invalid(f"resume cursor['sequence_number'] must be an int >= -1, got {describe(sequence)}", wrong_type=True)
    event_id = cursor.get("event_id")
    if event_id is not None and (not isinstance(event_id, str) or not event_id):
        raise invalid(f"resume cursor['event_id'] must be a non-empty str or None, got {describe(event_id)}",
                      wrong_type=True)
    checked = {key: cursor.get(key) for key in _CURSOR_KEYS}
    if event_id is None:
        del checked["event_id"]
    return checked


class _Synthesized:
    """Events made from a polled response, as a body (rule 2)."""

    longest_silence = None

    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Iterator[bytes]:
        yield self._data

    def touch(self) -> None:
        pass

    def quiet(self, working: bool) -> None:
        pass

    def release(self) -> None:
        pass

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        pass

    def raise_if_aborted(self) -> None:
        pass

    def close(self) -> None:
        pass


def _sse(kind: str, payload: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **payload})}\n\n".encode()


class Resumption:
    """One resumable stream's continuation, cursor and cancel (rules 1-4)."""

    def __init__(
        self,
        adapter: HttpAdapter,
        options: GenerateOptions,
        deadline: float | None,
        *,
        response_id: str | None = None,
    ) -> None:
        self.adapter = adapter
        self.options = options
        self.deadline = deadline
        #: the stream's translator (set once it is built)
        self.translator: Translator | None = None
        self.tries = 0
        self._response_id = response_id
        self._cancelled = False

    @property
    def response_id(self) -> str | None:
        """The stored response's id: the cursor's, or the one the stream announced."""
        if self._response_id is None and self.translator is not None:
            self._response_id = self.translator.writer.response_id
        return self._response_id

    def cursor(self) -> dict[str, Any] | None:
        """Where the stream can be continued (rule 3); ``None`` without a response id."""
        response_id = self.response_id
        if response_id is None or self.translator is None:
            return None
        adapter, translator = self.adapter, self.translator
        cursor: dict[str, Any] = {
            "provider": self.options.provider,
            "response_id": response_id,
            "sequence_number": translator.last_sequence,
            "wire": translator.wire,
            "base_url": redact(adapter.base_url, adapter.secrets),
        }
        if translator.last_event_id is not None:
            cursor["event_id"] = translator.last_event_id
        return cursor

    def _remaining(self, limit: float | None = None) -> float | None:
        if self.deadline is None:
            return limit
        left = self.deadline - time.monotonic()
        return left if limit is None else min(left, limit)

    def _wait(self, seconds: float) -> bool:
        """Sleep before the next try; ``False`` when cancelled or out of time."""
        left = self._remaining()
        if left is not None and left <= seconds:
            return False
        cancel = self.options.cancel
        if cancel is None:
            time.sleep(seconds)
            return True
        return not cancel.wait(seconds)

    def open(self, after: int, event_id: str | None = None) -> ResponseStream:
        """GET the stream's continuation after sequence number ``after`` (resume token
        ``event_id``), or raise (rule 1)."""
        adapter, options = self.adapter, self.options
        response_id = self.response_id
        assert response_id is not None
        url = adapter.wire.response_url(options, response_id, query=adapter.wire.resume_query(after, event_id))
        started = time.monotonic()
        idle = options.idle_timeout if options.idle_timeout is not None else adapter.wire.idle_timeout or DEFAULT_IDLE_TIMEOUT
        limits = FetchLimits(self.deadline, options.cancel, idle, started)
        request = HttpRequest(url=url, headers=adapter.request_headers(), body={})
        request = adapter.auth_flow.authorize(request, options.provider, limits)
        return adapter.transport.open(
            request,
            provider=options.provider,
            cancel=options.cancel,
            idle_timeout=idle,
            deadline=self.deadline,
            started=started,
            quiet_timeout=options.quiet_timeout if options.quiet_timeout is not None else DEFAULT_QUIET_TIMEOUT,
            method="GET",
        )

    def __call__(self, after: int) -> Body | None:
        """The continuation's body after ``after``, or ``None`` (rules 1, 2)."""
        if self.response_id is None or self._cancelled:
            return None
        translator = self.translator
        event_id = translator.last_event_id if translator is not None else None
        while self.tries < MAX_TRIES:
            if self.options.cancelled:
                return None
            self.tries += 1
            try:
                body = self.open(after, event_id)
            except LlmError as exc:
                failure = exc.failure
                text = f"{failure.detail or ''} {failure.message}".lower()
                polled = translator is None or translator.wire in _POLLED_WIRES
                if failure.status == 400 and _EXPIRED in text and polled:
                    return self._poll()
                if failure.code == "ABORTED" or not (failure.retryable or failure.code in ("TRANSPORT", "TIMEOUT")):
                    log.warning("%s: resuming failed: %s", self.options.provider, failure.code)
                    return None
                log.info("%s: resume try %d failed (%s)", self.options.provider, self.tries, failure.code)
            else:
                if translator is not None:
                    translator.begin_continuation()
                return body
            if self.tries >= MAX_TRIES:  # the last try failed: no wait for a try that never comes
                return None
            if not self._wait(min(0.25 * 2 ** (self.tries - 1), 4.0)):
                return None
        return None

    def _poll(self) -> Body | None:
        """Poll the stored response to its end; its rest as synthesized events (rule 2)."""
        adapter, options = self.adapter, self.options
        response_id = self.response_id
        assert response_id is not None
        url = adapter.wire.response_url(options, response_id)
        stop = time.monotonic() + (self._remaining(POLL_LIMIT) or 0.0)
        delay = 0.5
        while True:
            left = stop - time.monotonic()
            if left <= 0 or options.cancelled:
                return None
            try:
                headers, secrets = adapter.auth_flow.get_headers(
                    url, adapter.request_headers(streaming=False), options.provider, FetchLimits(stop, options.cancel)
                )
                response = adapter.transport.get_json(
                    url,
                    headers,
                    provider=options.provider,
                    secrets=secrets,
                    timeout=max(0.001, left),
                    cancel=options.cancel,
                )
            except LlmError as exc:
                if exc.failure.code == "ABORTED" or not (exc.failure.retryable or exc.failure.code == "TRANSPORT"):
                    return None
                response = None
            status = response.get("status") if isinstance(response, dict) else None
            if isinstance(response, dict) and isinstance(status, str) and status not in _WAITING:
                return _Synthesized(self._rest_of(response, status))
            if not self._wait_until(delay, stop):
                return None
            delay = min(delay * 2, 5.0)

    def _wait_until(self, seconds: float, stop: float) -> bool:
        if time.monotonic() + seconds >= stop:
            seconds = max(0.0, stop - time.monotonic())
        cancel = self.options.cancel
        if cancel is None:
            time.sleep(seconds)
            return True
        return not cancel.wait(seconds)

    def _rest_of(self, response: dict[str, Any], status: str) -> bytes:
        done: set[int] = getattr(self.translator, "items_done", set())
        output = response.get("output")
        pieces = []
        for index, item in enumerate(output if isinstance(output, list) else []):
            if index not in done and isinstance(item, dict):
                pieces.append(_sse("response.output_item.done", {"output_index": index, "item": item}))
        kind = _TERMINAL.get(status)
        if kind is None:  # cancelled, or a status this version does not know
            response = {**response, "error": response.get("error") or {"type": "cancelled", "code": status,
                                                                          "message": f"response {status}"}}
            kind = "response.failed"
        pieces.append(_sse(kind, {"response": response}))
        return b"".join(pieces)

    def cancel(self) -> None:
        """Cancel the stored response, once, best effort, bounded (rule 4)."""
        response_id = self.response_id
        if self._cancelled or response_id is None:
            return
        self._cancelled = True
        adapter, options = self.adapter, self.options
        try:
            url = adapter.wire.response_url(options, response_id, "/cancel")
            stop = time.monotonic() + CANCEL_TIMEOUT
            added, secrets = adapter.auth_flow.headers(options.provider, FetchLimits(stop))
            adapter.transport.post_form(
                url,
                {},
                {**adapter.request_headers(streaming=False), **added},
                provider=options.provider,
                secrets=secrets,
                timeout=max(0.001, stop - time.monotonic()),
            )
        except Exception as exc:  # noqa: BLE001 - best effort: a cancel never breaks the close
            log.info("%s: cancelling the response failed (%s)", options.provider, type(exc).__name__)


def resumable_batches(
    body: ResponseStream, decoder: StreamDecoder, resumption: Resumption
) -> Generator[list[StreamChunk], None, None]:
    """The pump with ``resumption`` as its ``resume`` (rule 1); the cursor stamped on an
    unfinished end (rule 3); the response cancelled when the consumer leaves it (rule 4)."""
    options = resumption.options
    resumption.translator = decoder.translator
    try:
        for batch in pump(body, decoder, cancel=options.cancel, provider=options.provider, resume=resumption):
            last = batch[-1]
            if type(last) is Finish:
                assert isinstance(last, Finish)
                failure = last.reason.failure
                cursor = resumption.cursor() if failure is not None and failure.code == "STREAM_CLOSED" else None
                if cursor is not None and failure is not None:
                    failure = replace(failure, diagnostics={**(failure.diagnostics or {}), "resume_cursor": cursor})
                    metadata = replace(last.metadata or ResponseMetadata(), resume_cursor=cursor)
                    batch[-1] = replace(last, reason=replace(last.reason, failure=failure), metadata=metadata)
            yield batch
    except GeneratorExit:
        if not decoder.done:
            resumption.cancel()
        raise
    except LlmError as exc:
        failure = exc.failure
        if failure.code == "ABORTED":
            resumption.cancel()
            raise
        cursor = resumption.cursor()
        if cursor is None:
            raise
        raise error_for(
            replace(failure, diagnostics={**(failure.diagnostics or {}), "resume_cursor": cursor})
        ) from None

