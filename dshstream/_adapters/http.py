"""HttpAdapter: a provider's wire, an auth flow and the one attempt loop, composed — the
adapter every HTTP provider is, and the one to build a provider of your own from.

Contract (an adapter composes; it overrides nothing):

1. **Settings** (:class:`~dshstream._adapters.settings.HttpSettings`) are validated when the
   adapter is built; an environment key goes only to the provider's own host.
2. **The pieces.** :attr:`HttpAdapter.wire` (:class:`~dshstream._adapters.wire.Wire`: the
   request for options, the translator, the media table), :attr:`HttpAdapter.auth_flow`
   (:mod:`~dshstream._adapters.auth`: ``Bearer`` with the ``api_key`` setting by default)
   and :attr:`HttpAdapter.transport` (the ``transport`` setting; HTTP over ``requests`` by
   default, with the TLS and proxy settings: ``verify``, ``client_cert``, ``trust_store``,
   ``proxies``, which every request it sends — streams, model lists, token endpoints —
   goes through). A provider's adapter class only builds the three from its own settings.
3. **A request** is the wire's endpoint + headers (JSON and SSE, the wire's protocol
   headers, the caller's headers, attribution: merged again only when one of them changed)
   + the wire's body, encoded once; the auth
   flow then adds its credential, fetched for this attempt under the attempt's limits — the
   stream's deadline, idle clock and cancel
   (:class:`~dshstream._adapters.credentials.FetchLimits`) — and the idle clock runs from
   before it. Its ``repr`` never shows the key. Before any of it, media parts the wire
   cannot take are refused with a ``ConfigurationError`` (:meth:`HttpAdapter.check_media`):
   nothing is sent.
4. **A stream** is a sequence of attempts, run by the one attempt loop
   (:func:`~dshstream._adapters.attempts.run_attempts`: reported once, retried only before
   a ``2xx``, a rejected credential refreshed once — a key pool's key cooled or parked
   and the next one taken, once per key — through the stream's own auth flow
   (:meth:`~dshstream._adapters.auth.AuthFlow.for_stream`, which authorizes every attempt
   of that stream), a refused form resent through
   :meth:`~dshstream._adapters.wire.Wire.should_retry_request`, observed).
   An attempt opens the request through the transport and runs the body through the byte
   pump (:mod:`dshstream._core.pump`) into the wire's translator.
   ``HttpAdapter._stream_batches_telling`` is ``stream_batches`` with the attempt loop's
   ``on_finish`` (its rule 5: the service's boundary hears the finish there) and, for the
   service's ``ChunkStream``, its ``handoff`` (its rule 6), or ``None`` where a subclass or
   the instance replaced ``stream_batches``.
5. ``list_models`` GETs the wire's :meth:`~dshstream._adapters.wire.Wire.models_url` and
   reads it as its ``models_format`` says, bounded in size and time — the credential fetch
   included (a 401 refreshes a callable credential once, a key pool moves past a
   rejected or rate-limited key, as in rule 4).
6. **Subclass hooks.** A subclass written before wires — ``endpoint``, ``build_body``,
   ``make_translator`` (and ``auth_headers`` reading ``self._api_key``, ``protocol_headers``,
   ``models_path``...) as its own methods — still works: without ``wire=`` those methods
   are its wire, and an overridden ``auth_headers`` is its auth flow.
7. **Resuming.** When the wire can resume a stream (wire rule 6: OpenAI and Azure
   Responses, Gemini Interactions, with ``GenerateOptions.resumable``), an attempt's body is pumped through
   :mod:`~dshstream._adapters.resumption`: a cut after acceptance is continued from the
   provider's stored response (never resent, attempts rule 3), an unfinished end carries a
   resume cursor, and :meth:`HttpAdapter.resume` continues a cursor from another process
   (the GET stream after its sequence number or resume token, through the same attempt
   loop: a GET that fails before its answer is retried like any attempt; a cursor of
   another wire is a ``ConfigurationError``).
8. **Rate limits.** The ``Finish`` of an attempt carries the rate-limit facts of that
   attempt's response headers (``metadata.rate_limits``,
   :mod:`~dshstream._core.rate_limits`); nothing else of the stream changes.
9. **Counting tokens.** ``count_tokens`` POSTs the wire's counting request (wire rule 7:
   the stream's body less its generation-only fields, media checked first) through the
   auth flow and the transport's ``post_json``, bounded in size and time and refreshed
   like ``list_models`` (rule 5); a wire without an endpoint, or a transport without
   ``post_json``, is a ``ConfigurationError`` saying so, before anything is sent; an answer
   without a count is ``MALFORMED_RESPONSE``. The auth flow authorizes the counting
   request whole (``authorize``, so SigV4 signs its body as it signs a stream's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._core.attribution import AppIdentity, merge_headers
from .._core.decode import StreamDecoder
from .._core.errors import LlmError, error_for, make_failure
from .._core.http_request import HttpRequest
from .._core.log import get_logger
from .._core.media_support import MediaSupport
from .._core.rate_limits import stamp_rate_limits
from .._core.provider_names import provider_name_for_url
from .._core.pump import pump
from .._core.redact import redact
from .._core.request import GenerateOptions, check_options
from .._core.retry import RetryPolicy
from .._core.types import Finish, StreamChunk
from .._core.validate import invalid
from .._observe import StreamWatch, check_observer
from .._transport import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_JSON_TIMEOUT,
    DEFAULT_QUIET_TIMEOUT,
    HttpTransport,
    ResponseStream,
)
from .._transport.interface import Transport as TransportProtocol
from .._transport.tls import ConnectionSettings
from .attempts import AttemptTally, run_attempts, stream_policy
from .auth import AuthFlow, HeaderAuth
from .base import LlmAdapter, ModelInfo, ProviderInfo, Telemetry
from .credentials import CredentialSource, FetchLimits
from .reporting import attempt_reporter
from .resumption import Resumption, check_cursor, resumable_batches
from .settings import FailureReporter, HttpSettings, checked, checked_base_url, resolve_api_key
from .wire import ModelListFormat, Wire, check_media_parts

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = get_logger("dshstream.adapters")

_NO_HEADERS: Mapping[str, str] = {}


def _no_protocol_headers(wire: Wire) -> bool:
    """Whether ``wire`` keeps the base Wire's protocol headers, which are none (rule 3)."""
    return type(wire).protocol_headers is Wire.protocol_headers and "protocol_headers" not in vars(wire)

__all__ = ["HttpAdapter", "ModelListFormat", "check_media_parts"]

#: the subclass hooks a wire is made of (rule 6): required, then optional
_REQUIRED_HOOKS = ("endpoint", "build_body", "make_translator")
_OPTIONAL_HOOKS = ("protocol_headers", "should_retry_request", "diagnostics", "media_support", "models_url")


class HttpAdapter(LlmAdapter):
    """Stream from one HTTP provider: a :class:`~dshstream._adapters.wire.Wire`, an auth
    flow and the attempt loop (rule 2)."""

    #: the provider's display name
    default_name = "provider"
    #: the provider's own API root, used when no ``base_url`` is given
    default_base_url = ""
    #: the environment variables holding the provider's key (read for its own host only)
    key_env: tuple[str, ...] = ()
    #: for subclass hooks (rule 6): the model list's path, its format, the streaming
    #: ``accept`` header and the media table — a wire's own attributes otherwise
    models_path: str | None = None
    models_format = ModelListFormat()
    stream_accept = "text/event-stream"
    media: MediaSupport | None = None

    def __init__(
        self,
        *,
        wire: Wire | None = None,
        auth_flow: AuthFlow | None = None,
        default_base_url: str | None = None,
        key_env: tuple[str, ...] | None = None,
        key_any_host: bool = False,
        **settings: Unpack[HttpSettings],
    ) -> None:
        values = checked(settings)
        home = default_base_url if default_base_url is not None else self.default_base_url
        #: the API root of the provider this adapter is for (its telemetry name's source)
        self.home_url = home
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
        #: sends this adapter's requests (settings ``transport=``; default HTTP over requests)
        self.transport: TransportProtocol = values.get("transport") or HttpTransport(
            values.get("session"),
            connect_timeout=values.get("connect_timeout", 10.0),
            connection=ConnectionSettings(
                verify=values.get("verify", True),
                client_cert=values.get("client_cert"),
                trust_store=values.get("trust_store"),
                proxies=values.get("proxies") or {},
            ),
        )
        self.identity: AppIdentity | None = values.get("identity")
        self.extra_headers: dict[str, str] = dict(values.get("headers") or {})
        #: request_headers' last merge: (accept, protocol headers, extra_headers, identity, headers)
        self._headers_memo: tuple[str | None, dict[str, str], dict[str, str], AppIdentity | None, dict[str, str]] | None = None
        self.retry_policy = RetryPolicy(max_retries=values.get("max_retries", 2))
        self.failure_reporter: FailureReporter | None = values.get("failure_reporter")
        #: hears this adapter's streams, used directly or through a service (``_observe``)
        self.observer = check_observer(values.get("observer"), "observer")
        self.max_event_size: int = values.get("max_event_size", 0)
        self.title: str = values.get("title") or self.default_name
        self._legacy_key = threading.local()
        #: the provider's API: request and translator (rule 2)
        self.wire: Wire = wire if wire is not None else _SubclassWire(self)
        #: adds each attempt's credentials (rule 2; ``Bearer`` with ``api_key`` by default)
        self.auth_flow: AuthFlow = auth_flow if auth_flow is not None else self._default_auth()
        if _no_protocol_headers(self.wire):
            HttpAdapter.request_headers(self)  # rule 3: merged once, now (a wire's own protocol headers: at the first call)

    def _default_auth(self) -> AuthFlow:
        if type(self).auth_headers is not HttpAdapter.auth_headers:
            return _SubclassAuth(self)
        return HeaderAuth(self._credential)

    def __repr__(self) -> str:
        key = self.auth_flow.describe()
        return f"{type(self).__name__}(base_url={redact(self.base_url)!r}, api_key=<{key}>)"

    @property
    def _api_key(self) -> str | None:
        """For subclass ``auth_headers`` (rule 6): the credential of the attempt being
        built on this thread; else the fixed key (or the value a callable returned last)."""
        key: str | None = getattr(self._legacy_key, "value", None)
        return key if key is not None else self._credential.last

    def auth_headers(self) -> dict[str, str] | None:
        """For subclasses (rule 6): the credential headers from ``self._api_key``."""
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else None

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
        return self.auth_flow.secrets

    @property
    def credential(self) -> CredentialSource:
        """Where this adapter's ``api_key`` comes from (a fixed key, a callable, or none)."""
        return self._credential

    # ------------------------------------------------------------------ requests (rule 3)

    def check_media(self, options: GenerateOptions) -> None:
        """Refuse, before anything is sent, media parts the wire cannot take: the kind,
        media type, URL, sizes and counts its documentation allows (a
        ``ConfigurationError`` naming the part and the provider)."""
        # check_media_parts' own first test, inline: a text-only request never enters it
        if all(type(message.content) is str for message in options.messages):
            return
        wire = self.wire
        check_media_parts(options, lambda: wire.media_support(options), f"{self.title}: {type(self).__name__}")

    def request_headers(self, *, streaming: bool = True) -> dict[str, str]:
        """Headers for one call before its credential: JSON (and SSE when streaming), the
        wire's protocol headers, the caller's headers, attribution."""
        wire = self.wire
        # the base Wire's protocol headers are none: not asked (wire rule 1)
        protocol: Mapping[str, str]
        if _no_protocol_headers(wire):
            protocol = _NO_HEADERS
        else:
            protocol = wire.protocol_headers()
        accept = wire.stream_accept if streaming else None
        # The merge of the last call while what it merged is the same (compared per call, by
        # value: extra_headers may be changed in place, identity replaced; rule 3).
        memo = self._headers_memo
        if (
            memo is not None
            and memo[0] == accept
            and memo[1] == protocol
            and memo[2] == self.extra_headers
            and memo[3] is self.identity
        ):
            return dict(memo[4])
        base = {"content-type": "application/json", **protocol}
        if accept is not None:
            base["accept"] = accept
            base["accept-encoding"] = "identity"
        merged = merge_headers(base, self.extra_headers, identity=self.identity)
        self._headers_memo = (accept, dict(protocol), dict(self.extra_headers), self.identity, merged)
        return dict(merged)

    def build_request(
        self, options: GenerateOptions, limits: FetchLimits | None = None, *, auth_flow: AuthFlow | None = None
    ) -> HttpRequest:
        """The request for ``options`` as sent: built by the wire, authorized by the auth
        flow (``auth_flow``: a stream's own, rule 4) with a credential fetched for it
        (under ``limits``)."""
        self.check_media(options)
        wire = self.wire
        request = HttpRequest(url=wire.endpoint(options), headers=self.request_headers(), body=wire.build_body(options))
        flow = auth_flow if auth_flow is not None else self.auth_flow
        return flow.authorize(request, options.provider, limits)

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(id=provider, name=self.title)

    def telemetry(self, options: GenerateOptions) -> Telemetry:
        """The wire's provider and operation names (else the well-known name of the host of
        the adapter's own API, wherever ``base_url`` points: a proxy in front of Anthropic
        is still ``anthropic``) and the host and port the request goes to (wire rule 8)."""
        wire = self.wire
        try:
            url = wire.endpoint(options)
        except Exception:  # noqa: BLE001 - telemetry never breaks a stream: the base URL then
            url = self.base_url
        try:
            parts = urlsplit(url)
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if host is not None and port is None:
            port = 443 if parts.scheme == "https" else 80
        return Telemetry(
            provider_name=wire.provider_name or provider_name_for_url(self.home_url or self.base_url),
            operation_name=wire.operation_name,
            server_address=host,
            server_port=port,
        )

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        wire = self.wire
        url = wire.models_url()
        if url is None:
            return []
        flow = self.auth_flow.for_stream()  # the key each try used (rule 5)
        refreshes = 0
        limit = DEFAULT_JSON_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            headers, secrets = flow.get_headers(
                url, self.request_headers(streaming=False), provider, FetchLimits(deadline=deadline)
            )
            try:
                payload = self.transport.get_json(
                    url, headers, provider=provider, secrets=secrets, timeout=max(0.001, deadline - time.monotonic())
                )
                break
            except LlmError as exc:
                if not flow.refresh_after(exc.failure, provider) or refreshes >= flow.refresh_limit:
                    raise
                refreshes += 1
        fmt = wire.models_format
        entries = payload.get(fmt.list_key) if isinstance(payload, dict) else None
        models = []
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get(fmt.id_key), str):
                model_id = entry[fmt.id_key].removeprefix(fmt.id_prefix)
                models.append(ModelInfo(id=model_id, name=str(entry.get(fmt.name_key) or model_id)))
        return models

    def count_tokens(self, options: GenerateOptions, *, timeout: float | None = None) -> int:
        """The input tokens ``options`` would bill, from the provider's counting endpoint
        (rule 9), within ``timeout`` seconds in all (default 30)."""
        options = check_options(options)
        wire = self.wire
        url = wire.count_tokens_url(options)
        if url is None:
            note = f" ({wire.count_tokens_note})" if wire.count_tokens_note else ""
            raise invalid(
                f"{self.title}: {type(self).__name__} has no token-counting endpoint (count_tokens){note}; "
                "dshstream does not estimate counts locally"
            )
        post_json = getattr(self.transport, "post_json", None)
        if not callable(post_json):
            raise invalid(f"{self.title}: the transport has no post_json, needed by count_tokens", wrong_type=True)
        self.check_media(options)
        body = wire.count_tokens_body(options)
        provider = options.provider
        flow = self.auth_flow.for_stream()
        refreshes = 0
        limit = DEFAULT_JSON_TIMEOUT if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            # the headers post_json sends, so a signature over them and the body holds
            unsigned = HttpRequest(
                url=url,
                headers={
                    "content-type": "application/json",
                    "accept": "application/json",
                    **self.request_headers(streaming=False),
                },
                body=body,
            )
            request = flow.authorize(unsigned, provider, FetchLimits(deadline=deadline, cancel=options.cancel))
            try:
                payload = post_json(
                    url,
                    body,
                    request.headers,
                    provider=provider,
                    secrets=request.secrets,
                    timeout=max(0.001, deadline - time.monotonic()),
                    cancel=options.cancel,
                )
                break
            except LlmError as exc:
                if not flow.refresh_after(exc.failure, provider) or refreshes >= flow.refresh_limit:
                    raise
                refreshes += 1
        count = wire.count_tokens_result(payload)
        if count is None:
            raise error_for(
                make_failure(
                    "MALFORMED_RESPONSE",
                    f"{provider}: the token-counting answer has no count (MALFORMED_RESPONSE)",
                    provider=provider,
                )
            )
        return count

    # ------------------------------------------------------------------ streaming (rule 4)

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        for batch in self.stream_batches(options):
            yield from batch

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        return self._batches(options, None)

    def _stream_batches_telling(
        self, options: GenerateOptions, on_finish: Callable[[Finish], None], handoff: bool = False
    ) -> Iterator[list[StreamChunk]] | None:
        """``stream_batches`` whose attempt loop hands the finish to ``on_finish`` (rule 4;
        the attempt loop's rule 5) and, with ``handoff``, may yield a
        :class:`~dshstream._core.pump.Handoff` (its rule 6); ``None`` when
        ``stream_batches`` is not this class's own (a subclass's or the instance's override
        decides what is streamed)."""
        if type(self).stream_batches is not HttpAdapter.stream_batches or "stream_batches" in vars(self):
            return None
        return self._batches(options, None, on_finish, handoff)

    def resume(self, cursor: Mapping[str, Any], options: GenerateOptions | None = None) -> Iterator[list[StreamChunk]]:
        """The rest of a cut stream from its resume cursor (rule 7): the events after its
        sequence number, as lists of chunks. ``options`` (default: the cursor's provider,
        no messages) give the limits; a wire that cannot resume is a ``ConfigurationError``."""
        checked_cursor = check_cursor(cursor)
        if options is None:
            options = GenerateOptions(provider=checked_cursor["provider"], model="resumed", messages=())
        options = replace(check_options(options), resumable=True)
        if not self.wire.resumable(options):
            raise invalid(f"{self.title}: {type(self).__name__} cannot resume a stream (resume cursor)")
        own = self.wire.make_translator(options, None).wire
        if checked_cursor["wire"] != own:
            raise invalid(f"{self.title}: resume cursor['wire'] is {checked_cursor['wire']!r}, this adapter's is {own!r}")
        return self._batches(options, checked_cursor)

    def _batches(
        self,
        options: GenerateOptions,
        cursor: dict[str, Any] | None,
        on_finish: Callable[[Finish], None] | None = None,
        handoff: bool = False,
    ) -> Iterator[list[StreamChunk]]:
        wire = self.wire
        flow = self.auth_flow.for_stream()  # this stream's: the key each attempt used (rule 4)
        resumable = options.resumable and wire.resumable(options)  # asked only when requested (wire rule 6)

        def open_attempt(
            attempt: int, deadline: float | None, watch: StreamWatch | None, tally: AttemptTally | None = None
        ) -> tuple[ResponseStream, Generator[list[StreamChunk], None, None]]:
            if not resumable:
                http = self._open_attempt(options, deadline, flow)
                decoder = StreamDecoder(wire.make_translator(options, http.request_id), max_event_size=self.max_event_size)
                batches = pump(http, decoder, cancel=options.cancel, provider=options.provider, tally=tally)
                if tally is not None:
                    tally.taken = True  # the attempt loop's rule 6
                return http, stamp_rate_limits(batches, http.headers)  # rule 8
            if cursor is None:
                resumption = Resumption(self, options, deadline)
                http = self._open_attempt(options, deadline, flow)
            else:
                resumption = Resumption(self, options, deadline, response_id=cursor["response_id"])
                http = resumption.open(cursor["sequence_number"], cursor.get("event_id"))
            translator = wire.make_translator(options, http.request_id)
            if cursor is not None:
                translator.last_sequence = cursor["sequence_number"]
                translator.last_event_id = cursor.get("event_id")
                translator.writer.identify(cursor["response_id"])
                translator.begin_continuation()
            decoder = StreamDecoder(translator, max_event_size=self.max_event_size)
            return http, stamp_rate_limits(resumable_batches(http, decoder, resumption), http.headers)

        return run_attempts(
            options,
            open_attempt=open_attempt,
            report=attempt_reporter(
                options,
                self.failure_reporter,
                lambda: redact(self.base_url, self.secrets),
                lambda: wire.diagnostics(options),
            ),
            policy=stream_policy(self.retry_policy, options),
            auth=flow,
            observer=self.observer,
            where=self.base_url,
            reshape=lambda error: wire.should_retry_request(error, options),
            telemetry=lambda: self.telemetry(options),
            on_finish=on_finish,
            open_told=open_attempt,
            handoff=handoff,
        )

    def _open_attempt(
        self, options: GenerateOptions, deadline: float | None, flow: AuthFlow | None = None
    ) -> ResponseStream:
        """One attempt's request built, authorized (by the stream's ``flow``) and sent; its
        response body, 2xx (the transport raises the classified failure for anything else)."""
        started = time.monotonic()
        idle = options.idle_timeout if options.idle_timeout is not None else self.wire.idle_timeout or DEFAULT_IDLE_TIMEOUT
        # The credential fetch holds the stream's limits; the idle clock runs from here (rule 3).
        request = self.build_request(options, FetchLimits(deadline, options.cancel, idle, started), auth_flow=flow)
        return self.transport.open(
            request,
            provider=options.provider,
            cancel=options.cancel,
            idle_timeout=idle,
            deadline=deadline,
            started=started,
            quiet_timeout=options.quiet_timeout if options.quiet_timeout is not None else DEFAULT_QUIET_TIMEOUT,
        )


class _SubclassWire(Wire):
    """A subclass's own hook methods as its wire (rule 6)."""

    def __init__(self, adapter: HttpAdapter) -> None:
        super().__init__(adapter.base_url, adapter.title)
        self.adapter = adapter
        self.stream_accept = adapter.stream_accept
        self.media = adapter.media
        self.models_path = adapter.models_path
        self.models_format = adapter.models_format
        for name in _REQUIRED_HOOKS + _OPTIONAL_HOOKS:
            hook = getattr(adapter, name, None)
            if hook is not None:
                setattr(self, name, hook)
            elif name in _REQUIRED_HOOKS:
                setattr(self, name, _missing(type(adapter).__name__, name))

    def models_url(self) -> str | None:
        return f"{self.adapter.base_url}{self.models_path}" if self.models_path is not None else None


def _missing(owner: str, name: str) -> Callable[..., Any]:
    def hook(*args: object) -> Any:
        raise invalid(f"{owner} has no wire: pass wire= (a dshstream.adapters.Wire) or define {name}()")

    return hook


class _SubclassAuth(AuthFlow):
    """A subclass's ``auth_headers()`` as its auth flow (rule 6): it reads this attempt's
    credential as ``self._api_key``; the credential itself is the flow's ``credential``
    (a stream's view of the adapter's, auth rule 6)."""

    __slots__ = ("adapter", "credential")

    def __init__(self, adapter: HttpAdapter) -> None:
        self.adapter = adapter
        self.credential = adapter.credential

    def headers(self, provider: str, limits: FetchLimits | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
        adapter = self.adapter
        key = self.credential.get(provider, limits)
        slot = adapter._legacy_key
        previous = getattr(slot, "value", None)
        slot.value = key
        try:
            added = adapter.auth_headers() or {}
        finally:
            slot.value = previous
        return dict(added), (key,) if key else ()

