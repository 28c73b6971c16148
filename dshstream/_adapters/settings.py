"""HttpSettings: the settings every HTTP adapter takes, declared once.

Contract: stdlib plus the validators; no I/O except reading the provider's key variables
from the environment, once, when an adapter is built.

1. Every adapter accepts these settings as keyword arguments (``**settings``) and hands
   them to :class:`~dshstream._adapters.http.HttpAdapter` unchanged; an adapter declares
   only the options of its own API. A group of options several adapters share (what
   shapes a Messages or a Responses body) is one more TypedDict beside these, taken out of
   the keywords by :func:`split_settings`.
2. Settings are validated when the adapter is built: a wrong type or value raises
   :class:`~dshstream._core.errors.ConfigurationError` naming the setting, never echoing a key.
3. A key read from the environment goes only to its provider's own host: the variables
   are read only when ``base_url`` has the scheme, host and port of the provider's default
   URL. A key passed as ``api_key=`` goes wherever the caller points it.
4. ``api_key`` is a key or a zero-argument callable returning the current one (rotating
   tokens; :mod:`~dshstream._adapters.credentials`); a callable is never replaced by an
   environment variable.
5. ``verify``, ``client_cert``, ``trust_store`` and ``proxies`` are the HTTP transport's
   TLS and proxy settings (:mod:`~dshstream._transport.tls`: the environment honoured as
   requests honours it); they are refused together with ``transport=``, which sends on its
   own terms.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast
from urllib.parse import urlsplit

from .._core.log import get_logger
from .._core.redact import redact
from .._core.validate import (
    check_api_key,
    check_base_url,
    check_credential,
    check_headers,
    check_nonneg_int,
    check_positive_int,
    check_timeout,
    invalid,
)

if TYPE_CHECKING:
    from .._core.attribution import AppIdentity
    from .._transport import Session
    from .._transport.interface import Transport
    from .._core.records import Observer
    from .._core.types import LlmFailure

log = get_logger("dshstream.adapters")

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE", "FailureReporter", "HttpSettings", "resolve_api_key", "same_host", "split_settings",
]

#: hears every failed attempt: the failure and its prompt-free diagnostic record
FailureReporter = Callable[["LlmFailure", dict[str, Any]], None]
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024


class HttpSettings(TypedDict, total=False):
    """The keyword settings of every HTTP adapter (all optional)."""

    #: the key, or a zero-argument callable returning the current one (called before every
    #: attempt; rule 4); default: the provider's environment variable (own host only, rule 3)
    api_key: str | Callable[[], str] | None
    #: the API root; default: the provider's own
    base_url: str | None
    #: a ``requests.Session`` to send with (default: one per adapter)
    session: Session | None
    #: what sends the requests instead of the HTTP transport — any
    #: :class:`~dshstream._transport.interface.Transport`, e.g.
    #: ``dshstream.testing.MemoryTransport`` in a test (not with ``session``)
    transport: Transport | None
    #: the ``User-Agent`` attribution (default: dshstream's)
    identity: AppIdentity | None
    #: extra headers on every request (a caller's ``User-Agent`` loses to attribution)
    headers: Mapping[str, str] | None
    #: retries before a 2xx status, for retryable failures (default 2)
    max_retries: int
    #: hears every failed attempt
    failure_reporter: FailureReporter | None
    #: hears this adapter's streams: started, first chunk, attempts, finished (``_observe``)
    observer: Observer | None
    #: seconds to establish a connection (capped by a request's time left; default 10)
    connect_timeout: float
    #: the largest single event accepted, in bytes (default 16 MiB)
    max_event_size: int
    #: the provider's display name
    title: str | None
    #: TLS verification: ``True`` (default; ``REQUESTS_CA_BUNDLE`` / ``SSL_CERT_FILE``
    #: honoured), ``False``, or a CA bundle path (rule 5)
    verify: bool | str
    #: a client certificate: a PEM path with the key, or ``(certificate, key)`` paths
    client_cert: str | tuple[str, str] | None
    #: ``"system"``: the OS trust store (the ``truststore`` extra), this adapter's session only
    trust_store: Literal["system"] | None
    #: proxy URLs by scheme (``{"https": "http://proxy:3128"}``), over HTTPS_PROXY/HTTP_PROXY
    proxies: Mapping[str, str] | None


def split_settings(given: Mapping[str, Any], names: Iterable[str]) -> tuple[HttpSettings, dict[str, Any]]:
    """``given`` as every HTTP adapter's settings and the group ``names`` picks (rule 1);
    what is in neither is left for :func:`checked` to refuse."""
    rest = dict(given)
    group = {name: rest.pop(name) for name in names if name in rest}
    return cast(HttpSettings, rest), group


def checked(settings: HttpSettings) -> HttpSettings:
    """``settings`` validated (rule 2), defaults filled in; an unknown setting (a typo such
    as ``max_retrys``) is refused, naming it and the known ones."""
    unknown = sorted(set(settings) - set(HttpSettings.__annotations__))
    if unknown:
        raise invalid(
            f"unknown adapter setting {unknown[0]!r}; known: {', '.join(sorted(HttpSettings.__annotations__))}",
            wrong_type=True,
        )
    headers = settings.get("headers")
    return {
        "api_key": check_credential(settings.get("api_key")),
        "base_url": settings.get("base_url"),
        "session": settings.get("session"),
        "transport": _checked_transport(settings.get("transport"), settings.get("session")),
        "identity": settings.get("identity"),
        "headers": check_headers(headers) if headers is not None else {},
        "max_retries": check_nonneg_int(settings.get("max_retries", 2), "max_retries"),
        "failure_reporter": settings.get("failure_reporter"),
        "observer": settings.get("observer"),
        "connect_timeout": check_timeout(settings.get("connect_timeout", 10.0), "connect_timeout", allow_none=False)
        or 10.0,
        "max_event_size": check_positive_int(settings.get("max_event_size", DEFAULT_MAX_EVENT_SIZE), "max_event_size"),
        "title": settings.get("title"),
        **_checked_connection(settings),
    }


_CONNECTION_KEYS = ("verify", "client_cert", "trust_store", "proxies")


def _checked_connection(settings: HttpSettings) -> HttpSettings:
    """The TLS and proxy settings (rule 5), checked by the transport's own rules."""
    given = [key for key in _CONNECTION_KEYS if settings.get(key) is not None]
    if not given:
        return {}
    if settings.get("transport") is not None:
        raise invalid(f"{given[0]}= is a setting of the HTTP transport: not with transport=")
    from .._transport.tls import check_connection

    connection = check_connection(
        settings.get("verify"), settings.get("client_cert"), settings.get("trust_store"), settings.get("proxies")
    )
    return {
        "verify": connection.verify,
        "client_cert": connection.client_cert,
        "trust_store": connection.trust_store,
        "proxies": dict(connection.proxies),
    }


def _checked_transport(transport: object, session: object) -> Transport | None:
    """``transport=`` (rule 2): something with the protocol's ``open`` and ``get_json``,
    and not together with ``session=`` (which only the HTTP transport reads)."""
    if transport is None:
        return None
    if session is not None:
        raise invalid("pass session= or transport=, not both (a session is the HTTP transport's)")
    if not all(callable(getattr(transport, name, None)) for name in ("open", "get_json")):
        raise invalid(
            f"transport must be a dshstream Transport (open, get_json), got {type(transport).__name__}",
            wrong_type=True,
        )
    return transport  # type: ignore[return-value]


def same_host(url: str, other: str) -> bool:
    """Whether ``url`` and ``other`` name the same scheme, host and port."""
    try:
        a, b = urlsplit(url), urlsplit(other)
        return (a.scheme.lower(), a.hostname, a.port) == (b.scheme.lower(), b.hostname, b.port)
    except ValueError:
        return False


def resolve_api_key(
    api_key: str | Callable[[], str] | None,
    base_url: str,
    key_env: tuple[str, ...],
    key_host_url: str | None,
    name: str,
) -> str | Callable[[], str] | None:
    """The credential to send: ``api_key`` if given (a key or a callable), else the first
    non-empty of the ``key_env`` variables — only when ``base_url`` is on
    ``key_host_url``'s host (rule 3; ``None``: any host, for a variable the caller named;
    ``""``: no host, the variables are never read)."""
    if api_key is not None or not key_env:
        return api_key
    if key_host_url is not None and not same_host(base_url, key_host_url):
        if any(os.environ.get(variable) for variable in key_env):
            log.info(
                "%s: not sending %s to %s (not the provider's own host); pass api_key= to send a key",
                name,
                "/".join(key_env),
                redact(base_url),
            )
        return None
    value = next((os.environ[variable] for variable in key_env if os.environ.get(variable)), None)
    return check_api_key(value, "/".join(key_env))


def checked_base_url(base_url: str) -> str:
    """``base_url`` validated, without a trailing slash."""
    return check_base_url(base_url).rstrip("/")
