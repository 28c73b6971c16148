"""The adapter base: the seam between the service and one provider API.

Contract: :class:`LlmAdapter` is the interface the service calls (``stream``,
``provider_info``, ``list_models``). :class:`HttpAdapter` implements ``stream`` once for
every HTTP provider: build the request (subclass), open it through the transport, decode
the body with the subclass's translator, and retry — only before a 2xx status arrived
(an accepted request may be billed, so it is never resent), only for retryable failures,
with exponential backoff and jitter, honouring ``Retry-After`` (capped at 60 s; a longer
wait, or one that would end past the total timeout, fails now: no attempt starts after
the deadline). An environment key goes only to the provider's own host. The
``failure_reporter`` hears about every failed attempt exactly once, before the retry
decision. Keys are registered for log redaction and never appear in a repr.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from ..attribution import AppIdentity, merge_headers
from ..decoding import StreamDecoder
from ..errors import LlmError, error_for, make_failure
from ..http_request import HttpRequest
from ..log import get_logger
from ..redaction import redact, register_secret
from ..request import GenerateOptions
from ..transport import DEFAULT_IDLE_TIMEOUT, DEFAULT_JSON_TIMEOUT, Session, Transport
from ..types import Finish, LlmFailure, StreamChunk
from ..validate import (
    check_api_key,
    check_base_url,
    check_headers,
    check_nonneg_int,
    check_positive_int,
    check_timeout,
)
from ..wires.base import Translator

log = get_logger("dshstream.adapters")

FailureReporter = Callable[[LlmFailure, dict[str, Any]], None]
RETRY_AFTER_CAP = 60.0
BACKOFF_BASE = 0.5
BACKOFF_CAP = 10.0
# Failures that point at a defect (ours or the provider's wire), not an expected outcome.
_DEFECT_CODES = frozenset({"MALFORMED_RESPONSE", "CONTRACT_VIOLATION", "EVENT_TOO_LARGE", "UNKNOWN"})


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """A provider route as the service lists it."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a provider offers (advisory)."""

    id: str
    name: str


def same_host(url: str, other: str) -> bool:
    """Whether ``url`` and ``other`` name the same scheme, host and port."""
    try:
        a, b = urlsplit(url), urlsplit(other)
        return (a.scheme.lower(), a.hostname, a.port) == (b.scheme.lower(), b.hostname, b.port)
    except ValueError:
        return False


class LlmAdapter:
    """The interface every adapter implements."""

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        """Stream one response as chunks."""
        raise NotImplementedError

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        """The same chunks in lists, as they are decoded (one list per network read).

        The service consumes this when no listener needs single chunks: a list per read
        instead of a generator hop per chunk. Override it for speed; the default wraps
        :meth:`stream`.
        """
        for chunk in self.stream(options):
            yield [chunk]

    def provider_info(self, provider: str) -> ProviderInfo:
        """Describe the route ``provider`` this adapter serves."""
        return ProviderInfo(id=provider, name=provider)

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        """Models available on ``provider`` (advisory: others are still accepted), fetched
        within ``timeout`` seconds in all (default 30)."""
        return []


class HttpAdapter(LlmAdapter):
    """Shared streaming engine of every HTTP adapter (retries, timeouts, reporting)."""

    default_name = "provider"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str,
        key_env: tuple[str, ...] = (),
        key_host_url: str | None = None,
        session: Session | None = None,
        identity: AppIdentity | None = None,
        headers: Mapping[str, str] | None = None,
        max_retries: int = 2,
        failure_reporter: FailureReporter | None = None,
        connect_timeout: float = 10.0,
        max_event_size: int = 16 * 1024 * 1024,
        title: str | None = None,
    ) -> None:
        # Caller mistakes fail here, naming the setting (never echoing a key).
        api_key = check_api_key(api_key)
        self.base_url = check_base_url(base_url).rstrip("/")
        connect_timeout = check_timeout(connect_timeout, "connect_timeout", allow_none=False) or 0.0
        max_retries = check_nonneg_int(max_retries, "max_retries")
        max_event_size = check_positive_int(max_event_size, "max_event_size")
        headers = check_headers(headers) if headers is not None else None
        if api_key is None and key_env:
            # The first non-empty of the provider's key variables (read once, here), and
            # only for the provider's own host: an environment key never goes to a
            # base_url the caller pointed elsewhere (they pass api_key= for that).
            if key_host_url is None or same_host(self.base_url, key_host_url):
                api_key = check_api_key(
                    next((os.environ[name] for name in key_env if os.environ.get(name)), None),
                    "/".join(key_env),
                )
            elif any(os.environ.get(name) for name in key_env):
                log.info(
                    "%s: not sending %s to %s (not the provider's own host); pass api_key= to send a key",
                    self.default_name,
                    "/".join(key_env),
                    redact(self.base_url),
                )
        self._api_key = api_key or None
        if self._api_key:
            register_secret(self._api_key)
        self.transport = Transport(session, connect_timeout=connect_timeout)
        self.identity = identity
        self.extra_headers = dict(headers or {})
        self.max_retries = max_retries
        self.failure_reporter = failure_reporter
        self.max_event_size = max_event_size
        self.title = title or self.default_name
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"{type(self).__name__}(base_url={redact(self.base_url)!r}, api_key=<{key}>)"

    # ------------------------------------------------------------------ subclass hooks

    def build_request(self, options: GenerateOptions) -> HttpRequest:
        """The HTTP request for ``options``."""
        raise NotImplementedError

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        """A fresh translator for one attempt."""
        raise NotImplementedError

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        """Whether a rejected request should be resent at once in another form
        (e.g. without a field the server refused); subclasses adjust their state."""
        return False

    # ------------------------------------------------------------------ helpers

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this adapter sends."""
        return (self._api_key,) if self._api_key else ()

    def headers(self, auth: Mapping[str, str] | None = None) -> dict[str, str]:
        """Headers for a streaming POST: auth, JSON, SSE, caller headers, attribution."""
        base = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
        }
        return merge_headers(base, self.extra_headers, auth, identity=self.identity)

    def bearer_auth(self) -> dict[str, str] | None:
        """``authorization: Bearer <key>`` when a key is set (OpenAI-style APIs)."""
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else None

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(id=provider, name=self.title)

    def fetch_models(
        self,
        url: str,
        headers: dict[str, str],
        provider: str,
        *,
        list_key: str = "data",
        id_key: str = "id",
        name_key: str = "name",
        id_prefix: str = "",
        timeout: float | None = None,
    ) -> list[ModelInfo]:
        """GET a provider's model list and read ``{list_key: [{id_key, name_key}...]}``,
        within ``timeout`` seconds in all (default :data:`DEFAULT_JSON_TIMEOUT`)."""
        payload = self.transport.get_json(
            url,
            headers,
            provider=provider,
            secrets=self.secrets,
            timeout=DEFAULT_JSON_TIMEOUT if timeout is None else timeout,
        )
        entries = payload.get(list_key) if isinstance(payload, dict) else None
        models = []
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get(id_key), str):
                model_id = entry[id_key].removeprefix(id_prefix)
                models.append(ModelInfo(id=model_id, name=str(entry.get(name_key) or model_id)))
        return models

    # ------------------------------------------------------------------ streaming

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        for batch in self.stream_batches(options):
            yield from batch

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        started = time.monotonic()
        deadline = started + options.timeout if options.timeout else None
        retries = self.max_retries if options.max_retries is None else options.max_retries
        attempt = 0
        while True:
            attempt += 1
            produced = 0
            accepted: list[bool] = []  # gets an entry once a 2xx status has arrived
            try:
                with closing(self._attempt(options, deadline, accepted)) as batches:
                    for batch in batches:
                        last = batch[-1]
                        if type(last) is Finish and last.reason.failure is not None:
                            assert isinstance(last, Finish)
                            failure = self._report(last.reason.failure, options, attempt, produced, started)
                            batch[-1] = replace(last, reason=replace(last.reason, failure=failure))
                        produced += len(batch)
                        yield batch
                    return
            except LlmError as exc:
                failure = self._report(exc.failure, options, attempt, produced, started)
                # Never resend once the provider accepted the request (a 2xx status): it
                # may be billed, even if the body broke before the first chunk.
                if produced or accepted:
                    raise error_for(failure) from None
                if self.should_retry_request(exc, options):
                    continue
                delay = self._retry_delay(failure, attempt, retries, deadline)
                if delay is None:
                    raise error_for(failure) from None
            self._sleep(delay, failure, attempt, options)

    def _attempt(
        self, options: GenerateOptions, deadline: float | None, accepted: list[bool]
    ) -> Generator[list[StreamChunk], None, None]:
        request = self.build_request(options)
        idle = options.idle_timeout if options.idle_timeout is not None else DEFAULT_IDLE_TIMEOUT
        http = self.transport.open(
            request,
            provider=options.provider,
            cancel=options.cancel,
            idle_timeout=idle,
            deadline=deadline,
        )
        accepted.append(True)
        with http:
            decoder = StreamDecoder(
                self.make_translator(options, http.request_id), max_event_size=self.max_event_size
            )
            cancel = options.cancel
            for piece in http:
                chunks = decoder.feed(piece)
                if chunks:
                    http.touch()
                    if decoder.done:
                        http.release()  # before the last yield: the caller may stop here
                        yield chunks
                        return
                    yield chunks
                if cancel is not None and cancel.is_set():
                    http.abort("ABORTED", f"{options.provider}: stream cancelled by the caller")
                    http.raise_if_aborted()
            chunks = decoder.close()
            if chunks:
                yield chunks

    def _retry_delay(
        self, failure: LlmFailure, attempt: int, retries: int, deadline: float | None
    ) -> float | None:
        """Seconds to wait before the next attempt, or None for no retry: not retryable,
        out of attempts, a Retry-After over the cap, or a wait that would end past the
        deadline (no attempt starts after it)."""
        if not failure.retryable or attempt > retries or failure.code == "ABORTED":
            return None
        if failure.retry_after is not None:
            if failure.retry_after > RETRY_AFTER_CAP:
                return None
            delay = failure.retry_after
        else:
            delay = min(BACKOFF_CAP, BACKOFF_BASE * 2 ** (attempt - 1))
            delay *= 0.5 + random.random() / 2  # noqa: S311 - jitter, not crypto
        if deadline is not None and time.monotonic() + delay >= deadline:
            return None
        return delay

    def _sleep(self, delay: float, failure: LlmFailure, attempt: int, options: GenerateOptions) -> None:
        log.warning(
            "%s: retrying after %s in %.2fs (attempt %d)", options.provider, failure.code, delay, attempt + 1
        )
        if options.cancel is None:
            time.sleep(delay)
        elif options.cancel.wait(delay):
            raise error_for(
                make_failure(
                    "ABORTED", f"{options.provider}: stream cancelled by the caller", provider=options.provider
                )
            )

    def _report(
        self,
        failure: LlmFailure,
        options: GenerateOptions,
        attempt: int,
        chunks: int,
        started: float,
    ) -> LlmFailure:
        """Log and report one failed attempt; returns the failure carrying its diagnostics."""
        level = log.error if failure.code in _DEFECT_CODES else log.warning
        level("%s: attempt %d failed: %s", options.provider, attempt, failure.code)
        record = {
            "provider": options.provider,
            "model": options.model,
            "attempt": attempt,
            "chunks_received": chunks,
            "elapsed_s": round(time.monotonic() - started, 3),
            "base_url": redact(self.base_url, self.secrets),
            **self.diagnostics(options),
        }
        failure = replace(failure, diagnostics=record)
        if self.failure_reporter is not None:
            try:
                self.failure_reporter(failure, record)
            except Exception:  # noqa: BLE001 - a reporter must never break the stream
                log.exception("failure_reporter raised")
        return failure

    def diagnostics(self, options: GenerateOptions) -> dict[str, Any]:
        """A bounded, prompt-free summary of the request for failure reports."""
        roles = [m.role for m in options.messages][-5:]
        return {
            "last_roles": roles,
            "message_count": len(options.messages),
            "tool_count": len(options.tools),
            "has_tool_history": any(m.role == "tool" for m in options.messages),
        }
