"""LiteLLMAdapter: every provider LiteLLM reaches (Bedrock, Vertex AI, watsonx, Cohere,
SageMaker, Ollama, ...) through the same chunks, by driving ``litellm.completion(stream=True)``.

It is the deliberately independent second implementation of the adapter contract: LiteLLM
owns the HTTP, the provider's wire and its own exceptions; dshstream translates LiteLLM's
OpenAI-shaped chunks (:mod:`~dshstream._core.wires.litellm`) and keeps every other promise
of an adapter. Contract:

1. **Optional, and offline.** LiteLLM is the ``litellm`` extra (``pip install
   'dshstream[litellm]'``), imported on the first stream (its import takes seconds), never
   by ``import dshstream`` nor by building the adapter; building one without LiteLLM
   installed is a ``ConfigurationError`` naming the extra. The only network call the
   adapter makes is the provider request: before LiteLLM is first loaded it sets
   :data:`OFFLINE_SWITCHES` to ``True`` in the environment, each only where the caller
   has not set it — ``LITELLM_LOCAL_MODEL_COST_MAP`` (else its import downloads the price
   map from GitHub), ``LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS`` (else the first request with
   an ``anthropic-beta`` header downloads the beta-header table) and
   ``LITELLM_OFFLINE_MODE`` (else a stream without usage from a model LiteLLM counts with
   a Hugging Face tokenizer, ``llama-3...``, downloads it from huggingface.co); LiteLLM
   then uses its bundled copies. Set one to ``False`` first to let LiteLLM fetch. Beyond
   these, the redirect guard (rule 9) and ``suppress_debug_info`` (LiteLLM's banner on
   stdout), dshstream changes none of LiteLLM's settings (callbacks, telemetry...).
2. **Request.** :meth:`LiteLLMAdapter.call_kwargs`: ``model`` is ``model_prefix`` +
   ``options.model`` (a LiteLLM model string such as ``bedrock/anthropic.claude-3-haiku-...``);
   messages in chat-completions form (an assistant turn sends back its thinking blocks with
   their signatures from replay state, and its reasoning as ``reasoning_content``; a user
   turn with images, documents or audio becomes OpenAI content parts —
   :func:`~dshstream._adapters.openai_parts.chat_content_parts` — which LiteLLM converts
   for its provider, after the parts were checked against the adapter's ``media`` table,
   OpenAI chat's by default: a part it refuses is a ``ConfigurationError``, nothing is
   sent); tools, ``max_tokens``, ``temperature``, ``stop``, ``reasoning_effort`` (``max``
   is ``high``, ``off`` sends none), ``response_format`` in OpenAI's spelling
   (:func:`~dshstream._adapters.structured_output.chat_response_format`; LiteLLM
   translates it per provider, e.g. Anthropic's ``output_format`` or its forced
   ``json_tool_call``, whose arguments it streams back as text),
   ``stream_options.include_usage``; ``extra_headers`` carry the
   caller's headers and the attribution ``User-Agent``, which wins; ``api_key`` and
   ``api_base`` when set (rule 7); LiteLLM's own retries are off (``max_retries=0``,
   ``num_retries=0``: rule 5 retries); then the adapter's ``completion_kwargs`` (provider
   settings: ``aws_region_name``, ``vertex_project``...) and last ``options.extra_body``,
   whose entries become keyword arguments (LiteLLM forwards provider-specific ones into the
   body; ``extra_body={...}`` inside it reaches OpenAI-compatible bodies verbatim).
3. **Never hangs.** LiteLLM runs on a worker thread feeding a bounded queue. The consumer
   waits on that queue under ``options.timeout`` (total), ``options.idle_timeout`` (between
   LiteLLM chunks; default 300 s) and ``options.cancel``; ``ChunkStream.close()`` from any
   thread sets the cancel event. Ending early stops the worker and shuts down the socket of
   LiteLLM's HTTP response when it can be found (its ``httpx`` response), so a blocked read
   ends at once; otherwise the worker ends by itself within LiteLLM's read ``timeout``,
   which is the idle timeout (capped by the time left).
4. **Never raises.** Whatever LiteLLM raises, before or during the stream, ends the stream
   with one ``Finish``: ``aborted`` (code ``ABORTED``) after a cancel, else ``error``, with
   the failure classified as an HTTP failure would be (the status LiteLLM reports, the
   provider's body and headers — ``Retry-After``, request id — through
   :func:`~dshstream._core.classify.classify_http_error`); a timeout is ``TIMEOUT``, a
   connection that failed is ``TRANSPORT``, a stream LiteLLM saw end without a finish
   reason ``STREAM_CLOSED``, and LiteLLM's own context-window and content-policy verdicts
   are kept; an error the provider sent inside its stream is classified as the chat wire
   classifies it — with no HTTP status: once the provider's 2xx response has delivered
   chunks, the status LiteLLM puts on its exception (an in-band ``overloaded_error`` is
   its ``InternalServerError``, 500) is its own mapping of the error, not what the server
   answered. Partial output and usage stay in the stream. What LiteLLM made up rather
   than received is dropped: a finish reason for a stream that ended without one (older
   releases report a cut stream as ``stop``; such a stream ends ``STREAM_CLOSED``), usage
   it counted with its tokenizer when the provider sent none, a ``cost`` from its price
   map when the provider reported none (``TokenUsage.cost`` is the provider's figure), and
   ``reasoning_tokens`` when the provider's usage had no completion details.
5. **Attempts** are the one attempt loop's (:func:`~dshstream._adapters.attempts.run_attempts`,
   shared with the HTTP adapters): retried only before LiteLLM returned its stream (no 2xx
   yet) — a timeout or a cancel while waiting for it included —, for retryable failures,
   as the :class:`~dshstream._core.retry.RetryPolicy` allows and never past the deadline; a
   callable ``api_key`` gets one refresh after a 401, and a
   :class:`~dshstream._adapters.key_pool.KeyPool` moves past a rate-limited or rejected key
   at once, as on the HTTP adapters (through the stream's view of the credential,
   credentials rule 8); a 400 that names ``stream_options``
   is resent at once without it (remembered). Every failed attempt is reported once
   (:mod:`~dshstream._adapters.reporting`); a refused media part or response format, and a
   credential callable that fails, end the stream before any attempt is sent; the
   credential is fetched under the stream's limits, as for the HTTP adapters. A failure
   after the stream opened ends it in band, partial output and usage kept; the loop's
   last failure becomes a lone ``Finish`` (this adapter never raises).
6. **Secrets.** The key (a value or a callable's latest), the strings under keys whose
   names say key/token/secret/credentials/password anywhere in ``completion_kwargs``,
   ``headers`` and ``options.extra_body`` (nested ``extra_headers`` too), and the values of
   environment variables so named (LiteLLM reads its keys from there) are redacted from
   every failure's detail; messages never carry upstream text.
7. **A key from the environment goes only to its provider's own host** (as every HTTP
   adapter's, :func:`~dshstream._adapters.settings.resolve_api_key`). Without ``base_url``
   (or an ``api_base``/``base_url`` argument in ``completion_kwargs``)
   LiteLLM sends the request to the provider it names and reads that provider's key from
   its own environment variables. **Request options never choose the destination** (as
   with the HTTP adapters, whose ``extra_body`` is only ever JSON body): an
   ``options.extra_body`` entry that would send the request, and the adapter's
   credentials, elsewhere is a ``ConfigurationError`` naming it, and nothing is sent —
   ``api_base``/``base_url`` other than the adapter's own (same scheme, host and port),
   another provider or model (``custom_llm_provider``, ``model``, ``model_list``,
   ``fallbacks``...), a client or session of the caller's, any ``*_endpoint``, ``*_host``,
   ``*_url`` or ``*_base`` setting, and a ``Host``-like header (``Host``,
   ``X-Forwarded-Host``, ``Forwarded``...) in ``extra_headers``/``headers``. Such settings
   belong on the adapter (``base_url=``, ``completion_kwargs=``), where the caller points
   them. With one and no ``api_key``, the adapter sends the
   placeholder :data:`NO_KEY` instead, so LiteLLM never sends ``OPENAI_API_KEY`` and its
   like to that host, unless the caller opted in: ``key_env="VAR"`` reads that variable
   and sends it to any host, ``key_any_host=True`` lets LiteLLM's own lookup (keys, and
   the cloud credentials of ``bedrock/``, ``vertex_ai/``..., where a placeholder key would
   replace them) apply to the custom host too.
8. **Observed** as an HTTP adapter is (:mod:`dshstream._observe`, through
   :func:`~dshstream._observe.watching`): the ``observer`` setting hears the adapter's own
   records, a service's observer hears its attempts — one ``AttemptRecord`` per LiteLLM
   call (``ok``, ``failed`` or ``aborted``, towards ``api_base`` or the root LiteLLM
   reports), one ``StreamFinished`` per stream with its usage and time to first chunk,
   however the stream ends.
9. **No redirects.** Whatever client LiteLLM sends with — the OpenAI SDK's, the Anthropic
   SDK's, its own ``HTTPHandler``, an ``httpx.AsyncClient`` over its aiohttp transport —
   it is an ``httpx`` client, and every request goes through ``httpx.Client.send`` (or
   ``httpx.AsyncClient.send``). When LiteLLM is first loaded the adapter wraps those two
   methods once with a guard that acts only inside the adapter's own LiteLLM calls (a
   context variable its worker thread sets; everywhere else it passes the call through
   untouched): there it sends with ``follow_redirects=False`` and refuses any 3xx
   answer before a second request is built. So the key and the prompt go to no other
   host, and the stream ends with the same ``REDIRECT`` failure as an HTTP adapter's
   (``api_error``, not retryable, the ``Location``, redacted, in ``detail``) — never
   with another host's answer. LiteLLM's ``client_session``, its per-call ``client=`` and
   its cached clients are all ``httpx`` clients and covered alike; nothing else of the
   caller's ``httpx`` changes.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import importlib.util
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import replace
from typing import Any

from .._core.attribution import AppIdentity, merge_headers
from .._core.closing import close_quietly
from .._core.classify import classify_error_payload, classify_http_error
from .._core.errors import LlmError, cancelled_failure, error_for, make_failure
from .._core.log import get_logger
from .._core.media_support import OPENAI_CHAT, MediaSupport
from .._core.records import Observer
from .._core.redact import MIN_SECRET_LENGTH, is_sensitive_key, redact
from .._core.request import GenerateOptions, Message
from .._core.retry import RetryPolicy
from .._core.strict_json import parse_json_object
from .._core.types import (
    Finish,
    FinishKind,
    FinishReason,
    LlmFailure,
    StreamChunk,
)
from .._core.validate import (
    check_credential,
    check_headers,
    check_mapping,
    check_nonneg_int,
    check_str,
    describe,
    invalid,
)
from .._core.wires.litellm import LiteLLMTranslator
from .._core.headers import lower_headers, request_id_from
from .._observe import StreamWatch, check_observer
from .._transport import DEFAULT_IDLE_TIMEOUT
from .attempts import run_attempts, stream_policy
from .base import LlmAdapter, ModelInfo, ProviderInfo
from .credentials import CredentialSource, FetchLimits
from .prompt_cache import NO_CACHING, check_prompt_cache
from .wire import check_media_parts, replay_names
from .openai_chat import AssistantTurn, OpenAIChatWire, chat_tool_call, chat_turns
from .reporting import attempt_reporter, request_summary
from .settings import FailureReporter, checked_base_url, resolve_api_key, same_host
from .structured_output import chat_response_format

log = get_logger("dshstream.adapters")

__all__ = ["LiteLLMAdapter", "failure_from_exception"]

#: chunks LiteLLM may run ahead of a slow consumer
QUEUE_SIZE = 256
#: how often a waiting consumer looks at the cancel event (seconds)
CANCEL_POLL = 0.05
_EXTRA_HINT = "pip install 'dshstream[litellm]'"
_EOF_WORDING = "Stream ended before a finish_reason"
#: exception classes (anywhere behind LiteLLM's) that mean no HTTP answer: LiteLLM reports
#: them with a placeholder status (500, 408), so they are read before any status
_TIMEOUTS = frozenset({"Timeout", "APITimeoutError", "TimeoutException", "TimeoutError"})
_CONNECTION_FAILURES = frozenset(
    {"APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError", "NetworkError", "ConnectionError"}
)
_SECRET_NAME_ENDINGS = ("key", "token", "secret", "credentials", "password")
_MIN_ENV_SECRET = 8
#: the key sent to a custom ``api_base`` when the caller gave none (rule 7): not a secret,
#: and it keeps LiteLLM from reading the provider's key from the environment
NO_KEY = "no-key"
#: the ``litellm.completion`` arguments that send a request somewhere else than the
#: provider's own host
_BASE_ARGS = ("api_base", "base_url")
#: the environment switches that keep LiteLLM from downloading on its own (rule 1)
OFFLINE_SWITCHES = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "LITELLM_OFFLINE_MODE")
#: ``extra_body`` entries that choose where LiteLLM sends the request, or with what client
#: (rule 7): never from a request
_ROUTING_OPTIONS = frozenset(
    {
        "custom_llm_provider",
        "model",
        "model_list",
        "fallbacks",
        "context_window_fallback_dict",
        "model_alias_map",
        "use_litellm_proxy",
        "litellm_credential_name",
        "client",
        "shared_session",
        "azure_ad_token_provider",
    }
)
#: name endings of ``extra_body`` entries that name a host (``aws_bedrock_runtime_endpoint``,
#: ``s3_endpoint_url``, ``langfuse_host``...)
_ROUTING_ENDINGS = ("_endpoint", "_url", "_host", "_base")
#: headers that make a proxy or gateway forward the request to another host (rule 7)
_HOST_HEADERS = frozenset(
    {
        "host",
        "x-forwarded-host",
        "forwarded",
        "x-forwarded-server",
        "x-original-host",
        "x-original-url",
        "x-rewrite-url",
        ":authority",
    }
)

# what the worker hands the consumer: (kind, value)
_OPENED, _CHUNK, _END, _ERROR = range(4)


def _assistant_fields(turn: AssistantTurn, out: dict[str, Any]) -> None:
    """What an assistant turn sends back through LiteLLM: its own thinking blocks (their
    signatures), the reasoning, the tool calls."""
    _, reasoning, calls, replay = turn
    thinking = replay.get("thinking_blocks") if replay.get("wire") == "litellm" else None
    if thinking:
        out["thinking_blocks"] = thinking
    if reasoning:
        out["reasoning_content"] = reasoning
    if calls:
        out["tool_calls"] = [chat_tool_call(call) for call in calls]


def _load_litellm() -> Any:
    """The ``litellm`` module, imported on first use, offline (rule 1) and with the
    redirect guard in place (rule 9)."""
    for name in OFFLINE_SWITCHES:  # before the import: it fetches the price map
        os.environ.setdefault(name, "True")
    try:
        module: Any = importlib.import_module("litellm")
    except ImportError as exc:  # pragma: no cover - the constructor checked it is installed
        raise invalid(f"LiteLLMAdapter needs LiteLLM: {_EXTRA_HINT}") from exc
    # LiteLLM prints a "Give Feedback / Get Help" banner to stdout on every failed call,
    # into the caller's own output; failures reach the caller as finishes instead.
    module.suppress_debug_info = True
    _install_redirect_guard()
    return module


# --------------------------------------------------------------------------- redirects (rule 9)


class _Redirects:
    """What the redirect guard refused during one LiteLLM call (the first refusal)."""

    __slots__ = ("location", "status")

    def __init__(self) -> None:
        self.status: int | None = None
        self.location: str | None = None


class RedirectRefused(Exception):
    """Raised inside LiteLLM's HTTP client for a 3xx answer (rule 9); the adapter reads
    the call's :class:`_Redirects`, not this exception (LiteLLM wraps it its own way)."""


#: the current LiteLLM call's redirect record: set only on the adapter's worker threads
_REDIRECTS: contextvars.ContextVar[_Redirects | None] = contextvars.ContextVar(
    "dshstream_litellm_redirects", default=None
)
#: one mark per copy of this module (a vendored dshstream installs its own guard on top)
_GUARD_MARK = "__dshstream_redirect_guard_" + __name__.replace(".", "_")
_guard_lock = threading.Lock()


def _redirect_refusal(response: Any, redirects: _Redirects) -> RedirectRefused | None:
    """The refusal for ``response`` if it is a redirect (recorded in ``redirects``)."""
    status = getattr(response, "status_code", None)
    if not isinstance(status, int) or not 300 <= status <= 399:
        return None
    if redirects.status is None:
        redirects.status = status
        headers = getattr(response, "headers", None)
        location = headers.get("location") if headers is not None else None
        redirects.location = str(location) if location else None
    try:
        response.next_request = None  # nobody may follow it by hand either
    except Exception:  # noqa: BLE001 - an unknown response class
        pass
    return RedirectRefused(f"HTTP {status}: redirects are not followed")


def _install_redirect_guard() -> None:
    """Wrap ``httpx.Client.send`` and ``httpx.AsyncClient.send`` once (rule 9)."""
    try:
        httpx: Any = importlib.import_module("httpx")
    except ImportError:  # pragma: no cover - LiteLLM depends on httpx
        return
    with _guard_lock:
        sync_send = httpx.Client.send
        if not getattr(sync_send, _GUARD_MARK, False):

            @functools.wraps(sync_send)
            def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
                redirects = _REDIRECTS.get()
                if redirects is None:  # not a dshstream LiteLLM call: untouched
                    return sync_send(self, request, *args, **kwargs)
                kwargs["follow_redirects"] = False
                response = sync_send(self, request, *args, **kwargs)
                refusal = _redirect_refusal(response, redirects)
                if refusal is not None:
                    response.close()
                    raise refusal
                return response

            setattr(send, _GUARD_MARK, True)
            httpx.Client.send = send
        async_send = httpx.AsyncClient.send
        if not getattr(async_send, _GUARD_MARK, False):

            @functools.wraps(async_send)
            async def asend(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
                redirects = _REDIRECTS.get()
                if redirects is None:
                    return await async_send(self, request, *args, **kwargs)
                kwargs["follow_redirects"] = False
                response = await async_send(self, request, *args, **kwargs)
                refusal = _redirect_refusal(response, redirects)
                if refusal is not None:
                    await response.aclose()
                    raise refusal
                return response

            setattr(asend, _GUARD_MARK, True)
            httpx.AsyncClient.send = asend


def _redirect_failure(redirects: _Redirects, provider: str, secrets: tuple[str, ...]) -> LlmFailure:
    """The ``REDIRECT`` failure of a refused redirect, as the HTTP transport words it."""
    location = redirects.location
    detail = redact(f"Location: {location}", secrets, limit=1900) if location else None
    log.warning(
        "%s: the endpoint answered HTTP %s; the redirect was not followed (REDIRECT)", provider, redirects.status
    )
    return make_failure(
        "REDIRECT",
        f"{provider}: the endpoint answered HTTP {redirects.status} (moved); redirects are not followed — "
        "check base_url (REDIRECT)",
        category="api_error",
        retryable=False,
        status=redirects.status,
        provider=provider,
        detail=detail,
    )


# --------------------------------------------------------------------------- request options (rule 7)


def _routing_option(name: str) -> bool:
    plain = name.lower()
    return plain in _ROUTING_OPTIONS or plain.endswith(_ROUTING_ENDINGS)


def _check_request_options(extra: Mapping[str, Any], destination: str | None) -> None:
    """Refuse an ``options.extra_body`` that would move the request, and the adapter's
    credentials, to another host (rule 7): a ``ConfigurationError`` naming the entry."""
    field = "GenerateOptions.extra_body"
    fix = "request options can't choose where the request goes; set it on the adapter (base_url=, completion_kwargs=)"
    for key, value in extra.items():
        name = str(key)
        if name in _BASE_ARGS:
            if isinstance(value, str) and destination and same_host(value, destination):
                continue
            where = "another host than the adapter's base_url" if destination else "a host the adapter was not given"
            raise invalid(f"{field}[{name!r}] would send the request and its credentials to {where}; {fix}")
        if _routing_option(name):
            raise invalid(f"{field}[{name!r}] would choose another destination or client for the request; {fix}")
        if name in ("extra_headers", "headers") and isinstance(value, Mapping):
            for header in value:
                if str(header).lower() in _HOST_HEADERS:
                    raise invalid(
                        f"{field}[{name!r}] sets {str(header)!r}, which routes the request to another host "
                        f"through a proxy; {fix}"
                    )


def _secret_name(name: str) -> bool:
    plain = "".join(ch for ch in name.lower() if ch.isalnum())
    return is_sensitive_key(name) or plain.endswith(_SECRET_NAME_ENDINGS)


def _environment_secrets() -> tuple[str, ...]:
    """Values of environment variables named like credentials (LiteLLM reads keys there)."""
    return tuple(
        value for name, value in os.environ.items() if len(value) >= _MIN_ENV_SECRET and _secret_name(name)
    )


def _secret_values(value: object, shortest: int = 0, depth: int = 0) -> Iterator[str]:
    """The strings under credential-named keys anywhere in ``value`` (headers such as
    ``X-Portkey-Api-Key``, nested settings such as ``extra_headers``, every string inside a
    ``vertex_credentials`` dict): what LiteLLM sends besides the key, and may echo in an
    exception (rule 6). ``shortest`` is 0 outside a credential-named key."""
    if depth > 8:
        return
    if isinstance(value, str):
        if shortest and len(value) >= shortest:
            yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if _secret_name(str(key)):  # the value itself; or, inside it, the longer strings
                yield from _secret_values(item, shortest or MIN_SECRET_LENGTH, depth + 1)
            else:
                yield from _secret_values(item, shortest and _MIN_ENV_SECRET, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _secret_values(item, shortest and _MIN_ENV_SECRET, depth + 1)


def _custom_base(kwargs: Mapping[str, Any]) -> str | None:
    """The ``api_base`` (or ``base_url``) among ``litellm.completion`` arguments, if any."""
    for name in _BASE_ARGS:
        value = kwargs.get(name)
        if isinstance(value, str) and value:
            return value
    return None


# --------------------------------------------------------------------------- exceptions


def _names(exc: BaseException) -> frozenset[str]:
    return frozenset(cls.__name__ for cls in type(exc).__mro__)


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__ must not break classification
        return type(exc).__name__


def _response_headers(exc: BaseException) -> dict[str, str]:
    for source in (getattr(exc, "litellm_response_headers", None), getattr(getattr(exc, "response", None), "headers", None)):
        headers = lower_headers(source) if isinstance(source, Mapping) else {}
        if headers:
            return headers
    return {}


def _response_body(exc: BaseException, status: int) -> str:
    """The provider's error body: the HTTP response's text when LiteLLM kept it, else the
    JSON object inside LiteLLM's message (``AnthropicException - b'{...}'``), else the
    message itself."""
    response = getattr(exc, "response", None)
    if getattr(response, "status_code", None) == status:
        try:
            body = getattr(response, "text", None)
        except Exception:  # noqa: BLE001 - a streamed body that was never read
            body = None
        if isinstance(body, str) and body.strip():
            return body
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) and message else _text(exc)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end and parse_json_object(text[start : end + 1]) is not None:
        return text[start : end + 1]
    return text


def _chain(exc: BaseException, limit: int = 8) -> list[BaseException]:
    """``exc`` and the exceptions behind it (LiteLLM's ``original_exception``, causes,
    contexts), breadth first, at most ``limit``."""
    found: list[BaseException] = []
    todo = [exc]
    while todo and len(found) < limit:
        current = todo.pop(0)
        if any(current is seen for seen in found):
            continue
        found.append(current)
        for behind in (getattr(current, "original_exception", None), current.__cause__, current.__context__):
            if isinstance(behind, BaseException):
                todo.append(behind)
    return found


def _in_band_payload(exc: BaseException) -> dict[str, Any] | None:
    """The error object a provider sent inside its stream, as the OpenAI SDK keeps it on the
    exception it raised for it (``body``, with no HTTP status)."""
    for current in _chain(exc):
        body = getattr(current, "body", None)
        if isinstance(body, dict) and body and getattr(current, "status_code", None) is None:
            return body if "error" in body else {"error": body}
    return None


def failure_from_exception(
    exc: BaseException,
    *,
    provider: str,
    secrets: tuple[str, ...] = (),
    mid_stream: bool = False,
    answered: bool = False,
) -> LlmFailure:
    """The failure an exception LiteLLM raised describes (rule 4); ``mid_stream``: it came
    after LiteLLM returned its stream; ``answered``: after chunks of the provider's 2xx
    response, so a status on the exception is not an HTTP status (rule 4)."""
    failure = _failure_from_exception(exc, provider=provider, secrets=secrets, mid_stream=mid_stream)
    if answered and failure.status is not None:
        status = failure.status
        failure = replace(failure, status=None, message=failure.message.replace(f", HTTP {status})", ")"))
    return failure


def _failure_from_exception(
    exc: BaseException, *, provider: str, secrets: tuple[str, ...], mid_stream: bool
) -> LlmFailure:
    original = getattr(exc, "original_exception", None)
    if "MidStreamFallbackError" in _names(exc) and isinstance(original, BaseException):
        exc = original  # LiteLLM's wrapper for "failed after the first chunk"
    chain = _chain(exc)
    names = frozenset(name for current in chain for name in _names(current))
    text = _text(exc)
    detail = redact(f"{type(exc).__name__}: {text}", secrets, limit=1900) or None
    if any(name in _TIMEOUTS or name.endswith("Timeout") for name in names):
        what = "read timed out" if mid_stream else "no response before the timeout"
        return make_failure("TIMEOUT", f"{provider}: {what} (TIMEOUT)", provider=provider, detail=detail)
    if any(_EOF_WORDING in _text(current) for current in chain):
        return make_failure(
            "STREAM_CLOSED",
            f"{provider}: stream ended before the provider's end-of-stream marker",
            provider=provider,
            detail=detail,
        )
    payload = _in_band_payload(exc) if mid_stream else None
    if payload is not None:
        failure = classify_error_payload(payload, provider=provider, secrets=secrets)
        if failure.code != "UNKNOWN":
            return failure
    if names & _CONNECTION_FAILURES:
        what = "the response body failed mid-stream" if mid_stream else "request failed"
        return make_failure("TRANSPORT", f"{provider}: {what} (TRANSPORT)", provider=provider, detail=detail)
    status = getattr(exc, "status_code", None)
    if isinstance(status, bool) or not isinstance(status, int) or not 100 <= status <= 599:
        return make_failure("UNKNOWN", f"{provider}: LiteLLM failed with {type(exc).__name__}", provider=provider, detail=detail)
    failure = classify_http_error(
        status, _response_body(exc, status), _response_headers(exc), provider=provider, secrets=secrets
    )
    verdict = _LITELLM_VERDICTS.get(next((n for n in _LITELLM_VERDICTS if n in names), ""))
    if verdict is not None and failure.code != verdict[0]:
        code, phrase = verdict
        failure = replace(
            make_failure(code, f"{provider}: {phrase} ({code}, HTTP {status})", provider=provider),
            status=status,
            request_id=failure.request_id,
            retry_after=failure.retry_after,
            serving_provider=failure.serving_provider,
            detail=failure.detail,
        )
    return failure


#: LiteLLM exception classes whose verdict beats the wording (provider-specific knowledge)
_LITELLM_VERDICTS: dict[str, tuple[str, str]] = {
    "ContextWindowExceededError": ("CONTEXT_WINDOW_EXCEEDED", "context window exceeded"),
    "ContentPolicyViolationError": ("CONTENT_FILTER", "content blocked"),
}


# --------------------------------------------------------------------------- the worker


def _made_up_finish(wrapper: object) -> bool:
    """Whether LiteLLM's stream wrapper emitted a finish reason no provider sent (it
    defaults to ``stop`` when its source ended without one); unknown internals: no."""
    received = getattr(wrapper, "received_finish_reason", _MISSING)
    if received is _MISSING:
        return False
    return (
        received is None
        and getattr(wrapper, "intermittent_finish_reason", None) is None
        and not getattr(wrapper, "received_any_finish_reason", False)
    )


_MISSING = object()


def _finish_reason(data: dict[str, Any]) -> Any:
    choices = data.get("choices")
    return choices[0].get("finish_reason") if choices and type(choices[0]) is dict else None


def _received_usage(wrapper: object) -> list[Any] | None:
    """The usage records the provider's own chunks carried (LiteLLM's wrapper keeps every
    chunk it built); ``None`` when its internals are unknown."""
    chunks = getattr(wrapper, "chunks", None)
    if not isinstance(chunks, list):
        return None
    return [usage for chunk in chunks if (usage := getattr(chunk, "usage", None)) is not None]


def _scrub(data: dict[str, Any], wrapper: object) -> None:
    """Remove from a chunk dict what LiteLLM made up rather than received (rule 4): a finish
    reason for a stream that ended without one, usage it counted with its tokenizer when
    the provider sent none, a cost from its price map when the provider reported none, a
    reasoning count when the provider's usage had no completion details."""
    if _finish_reason(data) and _made_up_finish(wrapper):
        data["choices"][0].pop("finish_reason")
    usage = data.get("usage")
    if type(usage) is not dict:
        return
    received = _received_usage(wrapper)
    if received is None:
        return
    if not received:
        del data["usage"]
        return
    if "cost" in usage and all(getattr(record, "cost", None) is None for record in received):
        del usage["cost"]
    details = usage.get("completion_tokens_details")
    if type(details) is dict and all(getattr(record, "completion_tokens_details", None) is None for record in received):
        details.pop("reasoning_tokens", None)  # LiteLLM's default or estimate, not the provider's


def _http_responses(wrapper: object) -> Iterator[Any]:
    """The HTTP responses (``httpx``) behind LiteLLM's stream wrapper, where it keeps them:
    the OpenAI SDK's ``Stream.response``, LiteLLM's own iterators' ``_response``."""
    stream = getattr(wrapper, "completion_stream", None)
    for holder in (stream, wrapper):
        for name in ("response", "_response"):
            response = getattr(holder, name, None)
            if response is not None:
                yield response


def _response_socket(wrapper: object) -> socket.socket | None:
    """The socket under LiteLLM's HTTP response (``httpx``'s ``network_stream``), if any."""
    for response in _http_responses(wrapper):
        extensions = getattr(response, "extensions", None)
        network = extensions.get("network_stream") if isinstance(extensions, dict) else None
        if network is None:
            continue
        try:
            sock = network.get_extra_info("socket")
        except Exception:  # noqa: BLE001 - unknown stream classes
            continue
        if isinstance(sock, socket.socket):
            return sock
    return None


def _served_from(wrapper: object) -> str | None:
    """The URL LiteLLM's HTTP response came from (rule 8), if it can be found (LiteLLM's
    own ``_hidden_params["api_base"]`` is not used: it names the provider's default host
    even where an environment setting sent the request elsewhere)."""
    for response in _http_responses(wrapper):
        url = getattr(response, "url", None)
        if url is not None:
            return str(url)
    return None


class _Call:
    """One ``litellm.completion`` call, iterated on its own daemon thread (rule 3)."""

    def __init__(self, completion: Callable[..., Any], kwargs: dict[str, Any]) -> None:
        self._completion = completion
        self._kwargs = kwargs
        self.queue: queue.Queue[tuple[int, Any]] = queue.Queue(maxsize=QUEUE_SIZE)
        self._stop = threading.Event()
        self._wrapper: Any = None
        self._lock = threading.Lock()
        #: what the redirect guard refused during this call (rule 9)
        self.redirects = _Redirects()
        self._thread = threading.Thread(target=self._run, name="dshstream-litellm", daemon=True)

    def start(self) -> _Call:
        self._thread.start()
        return self

    def __enter__(self) -> _Call:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _put(self, item: tuple[int, Any]) -> bool:
        while not self._stop.is_set():
            try:
                self.queue.put(item, timeout=CANCEL_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        wrapper: Any = None
        _REDIRECTS.set(self.redirects)  # this thread's own context: the guard acts here only
        try:
            wrapper = self._completion(**self._kwargs)
            with self._lock:
                self._wrapper = wrapper
            if self._stop.is_set() or not self._put((_OPENED, wrapper)):
                return
            for chunk in wrapper:
                data = chunk.model_dump(exclude_none=True)
                if "usage" in data or _finish_reason(data):
                    _scrub(data, wrapper)
                if not self._put((_CHUNK, data)):
                    return
            self._put((_END, None))
        except Exception as exc:  # noqa: BLE001 - everything LiteLLM raises becomes a finish
            if not self._stop.is_set():
                self._put((_ERROR, exc))
        finally:
            close_quietly(wrapper, "LiteLLM's stream")

    def stop(self) -> None:
        """Stop the worker from the consumer's thread: a read it is blocked in ends now
        when the response's socket can be found (rule 3)."""
        if self._stop.is_set():
            return
        self._stop.set()
        with self._lock:
            wrapper = self._wrapper
        sock = _response_socket(wrapper) if wrapper is not None else None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


# --------------------------------------------------------------------------- the adapter


class LiteLLMAdapter(LlmAdapter):
    """Stream from any provider LiteLLM supports, as dshstream chunks (see the module
    docstring)."""

    def __init__(
        self,
        *,
        model_prefix: str = "",
        api_key: str | Callable[[], str] | None = None,
        base_url: str | None = None,
        identity: AppIdentity | None = None,
        headers: Mapping[str, str] | None = None,
        max_retries: int = 2,
        failure_reporter: FailureReporter | None = None,
        title: str | None = None,
        completion_kwargs: Mapping[str, Any] | None = None,
        think_tags: bool | None = None,
        include_usage: bool = True,
        observer: Observer | None = None,
        media: MediaSupport | None = OPENAI_CHAT,
        key_env: str | None = None,
        key_any_host: bool = False,
    ) -> None:
        if importlib.util.find_spec("litellm") is None:
            raise invalid(f"LiteLLMAdapter needs LiteLLM: {_EXTRA_HINT}")
        self.model_prefix = check_str(model_prefix, "LiteLLMAdapter.model_prefix", nonempty=False)
        self.base_url = checked_base_url(base_url) if base_url is not None else None
        if key_env is not None:
            check_str(key_env, "LiteLLMAdapter.key_env")
        if not isinstance(key_any_host, bool):
            raise invalid(f"LiteLLMAdapter.key_any_host must be a bool, got {describe(key_any_host)}", wrong_type=True)
        #: LiteLLM's own environment lookup applies to a custom ``api_base`` too (rule 7)
        self.key_any_host = key_any_host
        self._credential = CredentialSource(
            resolve_api_key(
                check_credential(api_key, "LiteLLMAdapter.api_key"),
                self.base_url or "",
                (key_env,) if key_env else (),
                None,  # a variable the caller named goes to any host
                "LiteLLMAdapter",
            ),
            "LiteLLMAdapter.api_key",
        )
        if media is not None and not isinstance(media, MediaSupport):
            raise invalid(f"LiteLLMAdapter.media must be a MediaSupport or None, got {describe(media)}", wrong_type=True)
        #: what user turns may carry of images, documents and audio (rule 2); ``None``: none
        self.media = media
        #: hears this adapter's streams, used directly or through a service (``_observe``)
        self.observer = check_observer(observer, "LiteLLMAdapter.observer")
        self.identity = identity
        self.extra_headers = check_headers(headers, "LiteLLMAdapter.headers") if headers is not None else {}
        self.retry_policy = RetryPolicy(max_retries=check_nonneg_int(max_retries, "LiteLLMAdapter.max_retries"))
        self.failure_reporter = failure_reporter
        self.title = title or "LiteLLM"
        kwargs = check_mapping(completion_kwargs, "LiteLLMAdapter.completion_kwargs") if completion_kwargs else {}
        self.completion_kwargs: dict[str, Any] = dict(kwargs)
        self.think_tags = think_tags
        self.include_usage = include_usage
        self._lock = threading.Lock()
        custom = _custom_base(self.completion_kwargs) or self.base_url
        if custom and self._credential.value is None and not key_any_host and _environment_secrets():
            log.info(
                "LiteLLMAdapter: LiteLLM's environment keys are not sent to %s (not the provider's own host); "
                "pass api_key=, key_env= or key_any_host=True to send one",
                redact(str(custom)),
            )

    def __repr__(self) -> str:
        base = redact(self.base_url) if self.base_url else None
        return f"LiteLLMAdapter(model_prefix={self.model_prefix!r}, base_url={base!r}, api_key=<{self._credential.describe()}>)"

    @property
    def secrets(self) -> tuple[str, ...]:
        """What redaction removes from failures (rule 6)."""
        found = [self._credential.last] if self._credential.last else []
        found += _secret_values(self.completion_kwargs)
        found += _secret_values(self.extra_headers)
        return (*found, *_environment_secrets())

    @property
    def credential(self) -> CredentialSource:
        """Where this adapter's credential comes from (a fixed key, a callable, a variable
        named by ``key_env``, or none: LiteLLM's own lookup, rule 7)."""
        return self._credential

    # ------------------------------------------------------------------ request (rule 2)

    def call_kwargs(self, options: GenerateOptions, api_key: str | None = None) -> dict[str, Any]:
        """The keyword arguments of ``litellm.completion`` for ``options`` (rule 2); media
        parts and a response format that can't be sent are a ``ConfigurationError``."""
        self.check_media(options)
        kwargs: dict[str, Any] = {
            "model": f"{self.model_prefix}{options.model}",
            "messages": [m for message in options.messages for m in self.convert_message(message)],
            "stream": True,
            "extra_headers": merge_headers(self.extra_headers, identity=self.identity),
            "max_retries": 0,
            "num_retries": 0,
        }
        replay_names(kwargs["messages"], options)  # wire rule 10: LiteLLM relays to the strict APIs
        if self.include_usage:
            kwargs["stream_options"] = {"include_usage": True}
        if api_key:
            kwargs["api_key"] = api_key
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if options.response_format is not None:
            kwargs["response_format"] = chat_response_format(options.response_format)
        if options.tools:
            kwargs["tools"] = [tool.to_openai() for tool in options.tools]
        if options.max_tokens is not None:
            kwargs["max_tokens"] = options.max_tokens
        if options.temperature is not None:
            kwargs["temperature"] = options.temperature
        if options.stop:
            kwargs["stop"] = list(options.stop)
        if options.reasoning_effort is not None and options.reasoning_effort != "off":
            kwargs["reasoning_effort"] = "high" if options.reasoning_effort == "max" else options.reasoning_effort
        kwargs.update(self.completion_kwargs)
        if options.extra_body:
            _check_request_options(options.extra_body, _custom_base(kwargs))  # rule 7
            kwargs.update(options.extra_body)
        if not kwargs.get("api_key") and not self.key_any_host and _custom_base(kwargs):
            kwargs["api_key"] = NO_KEY  # rule 7: LiteLLM would read the provider's key from the environment
        return kwargs

    def api_base(self, options: GenerateOptions) -> str | None:
        """Where a request for ``options`` goes when the caller said (``base_url``, or an
        ``api_base`` in ``completion_kwargs``/``extra_body``); ``None``: LiteLLM's choice."""
        return _custom_base({**self.completion_kwargs, **(options.extra_body or {})}) or self.base_url

    def check_media(self, options: GenerateOptions) -> None:
        """Refuse, before anything is sent, media parts :attr:`media` does not take (a
        ``ConfigurationError`` naming the part; rule 2)."""
        check_media_parts(options, lambda: self.media, f"{self.title}: LiteLLMAdapter(media=None)")
        # prompt caching is not mapped through LiteLLM's many providers: refused, never dropped
        check_prompt_cache(options, NO_CACHING, f"{self.title} (LiteLLMAdapter)")

    def convert_message(self, message: Message) -> list[dict[str, Any]]:
        """One history message in the chat-completions form LiteLLM takes (a user turn with
        media: OpenAI content parts, which LiteLLM converts for its provider)."""
        return chat_turns(message, self.media or OPENAI_CHAT, _assistant_fields)

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> LiteLLMTranslator:
        """A fresh translator for one attempt."""
        return LiteLLMTranslator(
            provider=options.provider,
            request_id=request_id,
            think_tags=self.think_tags,
            max_tokens=options.max_tokens,
            client_tools=OpenAIChatWire.client_tools(options),
        )

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(id=provider, name=self.title)

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        """The models LiteLLM's bundled model map lists for ``model_prefix``'s provider
        (advisory; no network); none without a prefix."""
        prefix = self.model_prefix.rstrip("/")
        if not prefix:
            return []
        known = getattr(_load_litellm(), "models_by_provider", {})
        models = known.get(prefix, ()) if isinstance(known, Mapping) else ()
        return [ModelInfo(id=str(m).removeprefix(f"{prefix}/"), name=str(m)) for m in sorted(models, key=str)]

    # ------------------------------------------------------------------ streaming

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        for batch in self.stream_batches(options):
            yield from batch

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        run = _Run(self, options)

        attempts = run_attempts(  # the one attempt loop (rule 5), observed (rule 8)
            options,
            open_attempt=run.open_attempt,
            report=attempt_reporter(
                options,
                self.failure_reporter,
                lambda: redact(self.base_url, self.secrets) if self.base_url else None,
                lambda: {"litellm_model": f"{self.model_prefix}{options.model}", **request_summary(options)},
            ),
            policy=stream_policy(self.retry_policy, options),
            auth=run.credential,  # this stream's view: a key pool settles the key each attempt used
            observer=self.observer,
            where=self.api_base(options),
            reshape=lambda error: self._resend_without_stream_options(error.failure),
        )
        try:
            with closing(attempts):
                yield from attempts
        except LlmError as exc:  # reported by the loop; a finish, as every failure here is
            yield _finish(exc.failure)
        finally:
            run.stop()

    # ------------------------------------------------------------------ failures (rule 5)

    def _resend_without_stream_options(self, failure: LlmFailure) -> bool:
        if self.include_usage and failure.status == 400 and "stream_options" in (failure.detail or ""):
            with self._lock:
                self.include_usage = False
            return True
        return False


class _Run:
    """One stream's attempts as the attempt loop opens them: the clocks, the worker call
    and the consumer's side of its queue."""

    def __init__(self, adapter: LiteLLMAdapter, options: GenerateOptions) -> None:
        self.adapter = adapter
        self.options = options
        self.provider = options.provider
        self.started = time.monotonic()
        self.deadline = self.started + options.timeout if options.timeout else None
        self.idle = options.idle_timeout if options.idle_timeout is not None else DEFAULT_IDLE_TIMEOUT
        self.last_content = self.started
        self.call: _Call | None = None
        #: the adapter's credential as this stream's attempts use it (credentials rule 8)
        self.credential = adapter._credential.for_stream()

    def stop(self) -> None:
        if self.call is not None:
            self.call.stop()

    def _abort_failure(self) -> LlmFailure | None:
        """Cancel, or an expired clock (checked before every wait)."""
        options = self.options
        if options.cancel is not None and options.cancel.is_set():
            return cancelled_failure(self.provider)
        now = time.monotonic()
        if self.deadline is not None and now >= self.deadline:
            return make_failure("TIMEOUT", f"{self.provider}: total timeout expired (TIMEOUT)", provider=self.provider)
        if self.idle and now - self.last_content >= self.idle:
            return make_failure(
                "TIMEOUT", f"{self.provider}: no content for {self.idle:g}s (idle timeout, TIMEOUT)", provider=self.provider
            )
        return None

    def _wait(self, call: _Call) -> tuple[int, Any] | LlmFailure:
        """The worker's next item, or the failure that ended the wait."""
        while True:
            failure = self._abort_failure()
            if failure is not None:
                return failure
            now = time.monotonic()
            waits = [self.last_content + self.idle - now] if self.idle else []
            if self.deadline is not None:
                waits.append(self.deadline - now)
            if self.options.cancel is not None:
                waits.append(CANCEL_POLL)
            try:
                return call.queue.get(timeout=max(0.0, min(waits)) if waits else None)
            except queue.Empty:
                continue

    def _read_timeout(self) -> float | None:
        """LiteLLM's own (per-read) timeout: the idle timeout, capped by the time left."""
        limits = [self.idle] if self.idle else []
        if self.deadline is not None:
            limits.append(max(0.001, self.deadline - time.monotonic()))
        return min(limits) if limits else None

    def open_attempt(
        self, attempt: int, deadline: float | None, watch: StreamWatch | None
    ) -> tuple[_Call, Generator[list[StreamChunk], None, None]]:
        """Start one ``litellm.completion`` call and wait until its stream opens; a failure
        before that is raised, for the attempt loop to retry or end (rule 5)."""
        adapter, options = self.adapter, self.options
        self.last_content = time.monotonic()
        limits = FetchLimits(self.deadline, options.cancel, self.idle, self.last_content)
        key = self.credential.get(options.provider, limits)
        kwargs = adapter.call_kwargs(options, key)  # a refused part or format: INVALID_OPTIONS
        timeout = self._read_timeout()
        if timeout is not None:
            kwargs.setdefault("timeout", timeout)
        secrets = (*((key,) if key else ()), *adapter.secrets, *_secret_values(options.extra_body))
        call = self.call = _Call(_load_litellm().completion, kwargs).start()
        item = self._wait(call)
        if isinstance(item, LlmFailure):  # cancelled or timed out before the stream opened
            call.stop()
            raise error_for(item)
        tag, value = item
        if tag != _OPENED:
            call.stop()
            if call.redirects.status is not None:  # rule 9: refused, whatever LiteLLM made of it
                raise error_for(_redirect_failure(call.redirects, self.provider, secrets))
            raise error_for(failure_from_exception(value, provider=self.provider, secrets=secrets, mid_stream=False))
        translator = adapter.make_translator(options, _request_id(value, secrets))
        if watch is not None:
            watch.attempt_server(_served_from(value))
        return call, self._batches(call, translator, secrets)

    def _batches(
        self, call: _Call, translator: LiteLLMTranslator, secrets: tuple[str, ...]
    ) -> Generator[list[StreamChunk], None, None]:
        """The opened stream's chunks, a list per wake-up; a failure from here on ends it
        in band, partial output and usage kept (rule 5)."""
        answered = False  # a chunk came: the provider's response was a 2xx (rule 4)
        while True:
            item = self._wait(call)
            if isinstance(item, LlmFailure):  # cancelled or timed out
                yield _end(translator, item, "aborted" if item.code == "ABORTED" else "error")
                return
            batch: list[StreamChunk] = []
            ended = False
            while True:
                tag, value = item
                if tag == _CHUNK:
                    answered = True
                    batch += translator.feed_chunk(value)
                    self.last_content = time.monotonic()
                    ended = translator.done
                elif tag == _END:
                    batch += translator.end()
                    ended = True
                else:
                    break  # an error: handled below, after the batch so far
                if ended:
                    break
                try:
                    item = call.queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                yield batch
            if ended:
                return
            if item[0] != _ERROR:
                continue
            if call.redirects.status is not None:  # rule 9
                failure = _redirect_failure(call.redirects, self.provider, secrets)
            else:
                failure = failure_from_exception(
                    item[1], provider=self.provider, secrets=secrets, mid_stream=True, answered=answered
                )
            yield _end(translator, failure, "aborted" if failure.code == "ABORTED" else "error")
            return


def _request_id(wrapper: object, secrets: tuple[str, ...]) -> str | None:
    """The provider's request id from the response headers LiteLLM kept (its
    ``_hidden_params["additional_headers"]``, names prefixed ``llm_provider-``)."""
    hidden = getattr(wrapper, "_hidden_params", None)
    headers = hidden.get("additional_headers") if isinstance(hidden, dict) else None
    if not isinstance(headers, Mapping):
        return None
    provider_headers = {
        str(k).removeprefix("llm_provider-"): str(v) for k, v in headers.items() if str(k).startswith("llm_provider-")
    }
    return request_id_from(provider_headers, secrets)


def _finish(failure: LlmFailure) -> list[StreamChunk]:
    kind: FinishKind = "aborted" if failure.code == "ABORTED" else "error"
    return [Finish(reason=FinishReason(kind=kind, failure=failure))]


def _end(translator: LiteLLMTranslator | None, failure: LlmFailure, kind: str) -> list[StreamChunk]:
    """The stream's last chunks for ``failure``: the translator's (partial output and usage
    kept) or, before LiteLLM returned its stream, a lone finish."""
    if translator is None:
        return _finish(failure)
    return translator.end_with(failure, "aborted" if kind == "aborted" else "error")

