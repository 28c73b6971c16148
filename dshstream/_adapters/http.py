"""HttpAdapter: the base every HTTP provider subclasses — and the one to subclass to add
a provider of your own.

Contract: a provider is its request body (:meth:`HttpAdapter.build_body`), its endpoint
(:meth:`HttpAdapter.endpoint`), its auth (:meth:`HttpAdapter.auth_headers`) and its
translator (:meth:`HttpAdapter.make_translator`); everything else is implemented here,
once:

1. Settings (:class:`~dshstream._adapters.settings.HttpSettings`) are validated when the
   adapter is built; an environment key goes only to the provider's own host.
2. A request is built as: ``endpoint`` + headers (JSON and SSE, the provider's
   :meth:`~HttpAdapter.protocol_headers`, the caller's headers, auth, attribution) + the
   body; its ``repr`` never shows the key. The credential is fetched once per attempt
   (:mod:`~dshstream._adapters.credentials`: a fixed key, or a callable asked anew, its
   value checked and registered for redaction), and :meth:`~HttpAdapter.auth_headers`
   sees that attempt's value as ``self._api_key`` (per thread: one adapter serves many
   threads at once).
   The fetch runs under the attempt's limits — the stream's deadline, idle clock and
   cancel (:class:`~dshstream._adapters.credentials.FetchLimits`, credentials rule 6;
   :meth:`~HttpAdapter.fetch_limits` for a subclass's own fetches, as Bedrock's AWS
   credentials) — and the attempt's idle clock runs from before it.
   :meth:`~HttpAdapter.sign` then sees the finished request once per attempt (AWS SigV4
   signs the final body bytes there); :attr:`~HttpAdapter.stream_accept` is the
   streaming ``accept`` header. Before any of it, media parts the provider cannot take
   (:attr:`~HttpAdapter.media`: kinds, media types, URLs, sizes and counts) are refused
   with a ``ConfigurationError`` (:meth:`~HttpAdapter.check_media`): nothing is sent.
3. A stream is a sequence of attempts, run by the one attempt loop
   (:func:`~dshstream._adapters.attempts.run_attempts`: reported once, retried only before
   a ``2xx``, a 401 refreshes a callable credential once, observed). An attempt here opens
   the request through the transport and runs the body through the byte pump
   (:mod:`dshstream._core.pump`); :meth:`~HttpAdapter.should_retry_request` may resend a
   rejected request at once in another form (without a field the server refused); the
   ``observer`` setting hears the adapter's own records, and a service's observer hears its
   attempts.
4. ``list_models`` GETs :meth:`~HttpAdapter.models_url` and reads it as
   :attr:`~HttpAdapter.models_format` says, bounded in size and time — the credential
   fetch included (a 401 refreshes a callable credential once, as in rule 3).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .._core.attribution import AppIdentity, merge_headers
from .._core.decode import StreamDecoder
from .._core.errors import LlmError, cancelled_failure, error_for
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.media_support import MediaSupport
from .._core.pump import pump
from .._core.redact import redact
from .._core.request import GenerateOptions
from .._core.retry import RetryPolicy
from .._core.validate import invalid
from .._transport import DEFAULT_IDLE_TIMEOUT, DEFAULT_JSON_TIMEOUT, HttpTransport, ResponseStream
from .._transport.interface import Transport as TransportProtocol
from .._core.types import Finish, LlmFailure, StreamChunk
from .._observe import StreamWatch, check_observer
from .._core.wires.translator import Translator
from .attempts import run_attempts, stream_policy
from .base import LlmAdapter, ModelInfo, ProviderInfo
from .credentials import CredentialSource, FetchLimits
from .reporting import attempt_reporter, request_summary
from .settings import FailureReporter, HttpSettings, checked, checked_base_url, resolve_api_key

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = get_logger("dshstream.adapters")

__all__ = ["HttpAdapter", "ModelListFormat", "check_media_parts"]


def check_media_parts(
    options: GenerateOptions, support: Callable[[], MediaSupport | None], who: str
) -> None:
    """Refuse the media parts of ``options``' user turns that ``support()`` (asked only
    when there are any) does not take — ``None``: none at all — with a
    ``ConfigurationError`` naming the part, or ``who`` (rule 2). Shared by every adapter
    that sends media (the LiteLLM one included)."""
    if not any(message.attachments for message in options.messages if message.role == "user"):
        return
    table = support()
    if table is None:
        raise invalid(f"{who} does not take images, documents or audio")
    table.check(options.messages)


@dataclass(frozen=True, slots=True)
class ModelListFormat:
    """Where a model list keeps its entries: ``{list_key: [{id_key, name_key}...]}``;
    ``id_prefix`` is dropped from ids (Gemini's ``models/``)."""

    list_key: str = "data"
    id_key: str = "id"
    name_key: str = "name"
    id_prefix: str = ""


class HttpAdapter(LlmAdapter):
    """Stream from one HTTP provider: subclass it with a body, an endpoint and a
    translator (and auth headers when the provider's are not ``Bearer``)."""

    #: the provider's display name
    default_name = "provider"
    #: the provider's own API root, used when no ``base_url`` is given
    default_base_url = ""
    #: the environment variables holding the provider's key (read for its own host only)
    key_env: tuple[str, ...] = ()
    #: the model list's path under ``base_url`` (None: the provider lists no models)
    models_path: str | None = None
    #: how to read the model list
    models_format = ModelListFormat()
    #: the ``accept`` header of a streaming request
    stream_accept = "text/event-stream"
    #: what the provider API takes of media parts (images, documents, audio); ``None``:
    #: none, and a request with any is refused before it is sent
    media: MediaSupport | None = None

    def __init__(
        self,
        *,
        default_base_url: str | None = None,
        key_env: tuple[str, ...] | None = None,
        key_any_host: bool = False,
        **settings: Unpack[HttpSettings],
    ) -> None:
        values = checked(settings)
        home = default_base_url if default_base_url is not None else self.default_base_url
        self.base_url = checked_base_url(values.get("base_url") or home)
        self._credential = CredentialSource(
            resolve_api_key(
                values.get("api_key"),
                self.base_url,
                self.key_env if key_env is None else key_env,
                None if key_any_host else home,
                self.default_name,
            ),
            f"{type(self).__name__}.api_key",
        )
        self._attempt_key = threading.local()
        #: sends this adapter's requests (settings ``transport=``; default HTTP over requests)
        self.transport: TransportProtocol = values.get("transport") or HttpTransport(
            values.get("session"), connect_timeout=values.get("connect_timeout", 10.0)
        )
        self.identity: AppIdentity | None = values.get("identity")
        self.extra_headers: dict[str, str] = dict(values.get("headers") or {})
        self.retry_policy = RetryPolicy(max_retries=values.get("max_retries", 2))
        self.failure_reporter: FailureReporter | None = values.get("failure_reporter")
        #: hears this adapter's streams, used directly or through a service (``_observe``)
        self.observer = check_observer(values.get("observer"), "observer")
        self.max_event_size: int = values.get("max_event_size", 0)
        self.title: str = values.get("title") or self.default_name
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = self._credential.describe()
        return f"{type(self).__name__}(base_url={redact(self.base_url)!r}, api_key=<{key}>)"

    @property
    def _api_key(self) -> str | None:
        """The credential of the attempt being built on this thread; else the fixed key
        (or the value a callable returned last)."""
        key: str | None = getattr(self._attempt_key, "value", None)
        return key if key is not None else self._credential.last

    def fetch_limits(self) -> FetchLimits | None:
        """The limits of the attempt being opened on this thread (``None`` outside one): a
        subclass fetching a credential of its own passes them on (rule 2)."""
        limits: FetchLimits | None = getattr(self._attempt_key, "limits", None)
        return limits

    @contextmanager
    def _sending_with(self, key: str | None) -> Iterator[None]:
        """Build headers with ``key`` as ``self._api_key`` on this thread."""
        previous = getattr(self._attempt_key, "value", None)
        self._attempt_key.value = key
        try:
            yield
        finally:
            self._attempt_key.value = previous

    @property
    def max_retries(self) -> int:
        """Retries before a 2xx status (the retry policy's)."""
        return self.retry_policy.max_retries

    @max_retries.setter
    def max_retries(self, value: int) -> None:
        self.retry_policy = replace(self.retry_policy, max_retries=value)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this adapter sends (a callable's: the latest value)."""
        key = self._api_key
        return (key,) if key else ()

    @property
    def credential(self) -> CredentialSource:
        """Where this adapter's credential comes from (a fixed key, a callable, or none)."""
        return self._credential

    # ------------------------------------------------------------------ provider hooks

    def endpoint(self, options: GenerateOptions) -> str:
        """The URL a request for ``options`` is POSTed to."""
        raise NotImplementedError

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body for ``options``."""
        raise NotImplementedError

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        """A fresh translator for one attempt."""
        raise NotImplementedError

    def auth_headers(self) -> dict[str, str] | None:
        """The credential headers (default ``authorization: Bearer <key>``; none without a key)."""
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else None

    def protocol_headers(self) -> dict[str, str]:
        """Headers the provider's API requires on every call (e.g. a version)."""
        return {}

    def sign(self, request: HttpRequest, options: GenerateOptions) -> HttpRequest:
        """``request`` as sent, once per attempt on its final body bytes (AWS SigV4 adds
        its signature headers here); default: unchanged."""
        return request

    def models_url(self) -> str | None:
        """The model list's URL (None: no model list)."""
        return f"{self.base_url}{self.models_path}" if self.models_path is not None else None

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        """Whether a rejected request should be resent at once in another form
        (e.g. without a field the server refused); subclasses adjust their state."""
        return False

    def diagnostics(self, options: GenerateOptions) -> dict[str, Any]:
        """A bounded, prompt-free summary of the request for failure reports."""
        return request_summary(options)

    def media_support(self, options: GenerateOptions) -> MediaSupport | None:
        """What the API ``options`` go to takes of media parts (default :attr:`media`)."""
        return self.media

    def check_media(self, options: GenerateOptions) -> None:
        """Refuse, before anything is sent, media parts the provider cannot take: the
        kind, media type, URL, sizes and counts its documentation allows (a
        ``ConfigurationError`` naming the part and the provider)."""
        check_media_parts(options, lambda: self.media_support(options), f"{self.title}: {type(self).__name__}")

    # ------------------------------------------------------------------ requests (rule 2)

    def request_headers(self, *, streaming: bool = True) -> dict[str, str]:
        """Headers for one call: JSON (and SSE when streaming), the provider's protocol
        headers, the caller's headers, auth, attribution."""
        base = {"content-type": "application/json", **self.protocol_headers()}
        if streaming:
            base["accept"] = self.stream_accept
            base["accept-encoding"] = "identity"
        return merge_headers(base, self.extra_headers, self.auth_headers(), identity=self.identity)

    def build_request(self, options: GenerateOptions) -> HttpRequest:
        """The HTTP request for ``options``, with the credential fetched for this attempt."""
        self.check_media(options)
        key = self._credential.get(options.provider, self.fetch_limits())
        with self._sending_with(key):
            return HttpRequest(
                url=self.endpoint(options),
                headers=self.request_headers(),
                body=self.build_body(options),
                secrets=(key,) if key else (),
            )

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(id=provider, name=self.title)

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        url = self.models_url()
        if url is None:
            return []
        refreshed = False
        limit = DEFAULT_JSON_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            key = self._credential.get(provider, FetchLimits(deadline=deadline))
            with self._sending_with(key):
                headers = self.request_headers(streaming=False)
            try:
                payload = self.transport.get_json(
                    url,
                    headers,
                    provider=provider,
                    secrets=(key,) if key else (),
                    timeout=max(0.001, deadline - time.monotonic()),
                )
                break
            except LlmError as exc:
                if refreshed or not self._credential.refresh_after(exc.failure, provider):
                    raise
                refreshed = True
        fmt = self.models_format
        entries = payload.get(fmt.list_key) if isinstance(payload, dict) else None
        models = []
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get(fmt.id_key), str):
                model_id = entry[fmt.id_key].removeprefix(fmt.id_prefix)
                models.append(ModelInfo(id=model_id, name=str(entry.get(fmt.name_key) or model_id)))
        return models

    # ------------------------------------------------------------------ streaming (rule 3)

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        for batch in self.stream_batches(options):
            yield from batch

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        def open_attempt(
            attempt: int, deadline: float | None, watch: StreamWatch | None
        ) -> tuple[ResponseStream, Generator[list[StreamChunk], None, None]]:
            http = self._open_attempt(options, deadline)
            return http, self._pump(options, http)

        return run_attempts(
            options,
            open_attempt=open_attempt,
            report=attempt_reporter(
                options,
                self.failure_reporter,
                lambda: redact(self.base_url, self.secrets),
                lambda: self.diagnostics(options),
            ),
            policy=stream_policy(self.retry_policy, options),
            credential=self._credential,
            observer=self.observer,
            where=self.base_url,
            reshape=lambda error: self.should_retry_request(error, options),
        )

    def _open_attempt(self, options: GenerateOptions, deadline: float | None) -> ResponseStream:
        """One attempt's request built, signed and sent; its response body, 2xx (the
        transport raises the classified failure for anything else)."""
        started = time.monotonic()
        idle = options.idle_timeout if options.idle_timeout is not None else DEFAULT_IDLE_TIMEOUT
        # Credential fetches (in build_request, and in sign for Bedrock) hold the stream's
        # limits, and the idle clock runs from here (rule 2).
        previous = getattr(self._attempt_key, "limits", None)
        self._attempt_key.limits = FetchLimits(deadline, options.cancel, idle, started)
        try:
            request = self.sign(self.build_request(options), options)
        finally:
            self._attempt_key.limits = previous
        return self.transport.open(
            request,
            provider=options.provider,
            cancel=options.cancel,
            idle_timeout=idle,
            deadline=deadline,
            started=started,
        )

    def _pump(self, options: GenerateOptions, http: ResponseStream) -> Generator[list[StreamChunk], None, None]:
        """The attempt's body decoded into lists of chunks (``pump``)."""
        decoder = StreamDecoder(self.make_translator(options, http.request_id), max_event_size=self.max_event_size)
        return pump(http, decoder, cancel=options.cancel, provider=options.provider)


