"""Connection settings: TLS trust, client certificates and proxies of the HTTP transport.

Contract: one frozen :class:`ConnectionSettings` per transport, validated when the adapter
is built (a caller mistake is a ``ConfigurationError`` naming the setting); the
environment is read as ``requests`` reads it, at every send, never cached.

1. **verify.** ``True`` (the default) trusts the CA bundle ``requests`` uses, unless the
   environment names another: ``REQUESTS_CA_BUNDLE``, then ``CURL_CA_BUNDLE`` (requests'
   own merge, which every send goes through: the transport sends with
   ``Session.request``), then ``SSL_CERT_FILE`` (the OpenSSL convention, which requests'
   certifi bundle would ignore: read here) — only while the session trusts the
   environment (``trust_env``). A path (a CA bundle file or a directory, which must exist)
   is used as given, whatever the environment says. ``False`` verifies nothing (logged
   at WARNING when the transport is made).
2. **client_cert.** A PEM path holding the certificate and its key, or a
   ``(certificate, key)`` pair of paths; each must exist. Sent on every request.
3. **trust_store="system".** The operating system's trust store through ``truststore``
   (the ``truststore`` extra, imported only then; missing, a ``ConfigurationError``
   naming the extra): a ``truststore.SSLContext`` given to this session's own HTTPS
   adapter — nothing process-wide (``truststore.inject_into_ssl`` is never called), the
   pool hooks (:mod:`~dshstream._transport.pool`) kept. Not with ``verify=`` a path or
   ``False``.
4. **proxies.** ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY`` and ``NO_PROXY`` (either
   case) are honoured as requests honours them (the transport's own session skips
   urllib's scan of every variable when none is named for a proxy:
   :mod:`~dshstream._transport.environment`); an explicit ``proxies=`` mapping
   (``"https"``, ``"http"``, ``"all"`` or ``"scheme://host"`` → a proxy URL with a scheme
   and a host) wins over them, key by key. The environment's proxies never apply to a
   loopback destination (``localhost``, ``127.0.0.0/8``, ``::1``:
   :mod:`~dshstream._transport.environment` rule 3); an explicit ``proxies=`` does. A proxy's credentials (``user:password@`` in
   its URL, explicit or from the environment) are registered as secrets
   (:func:`~dshstream._core.redact.register_secret`) when the transport is made, so no
   message, log, detail or repr shows them.
5. **Every send.** The settings are requests' per-request arguments (``verify``, ``cert``,
   ``proxies``: :meth:`ConnectionSettings.send_kwargs`), so they hold for every call the
   transport makes — streams, model lists, token endpoints — and on a caller's
   ``session=`` too. Streams are read as they arrive through a proxy too (``CONNECT``
   tunnels for HTTPS; ``stream=True`` always).
6. **Outside requests.** A connection ``requests`` does not make (a WebSocket,
   :mod:`~dshstream._transport.websocket`) gets the same trust from
   :meth:`ConnectionSettings.ssl_context` — the CA bundle of rule 1 (requests' own,
   ``certifi``, when nothing names another), a path as given, ``False`` verifying nothing,
   the client certificate of rule 2, the system trust store of rule 3 — and asks
   :meth:`ConnectionSettings.proxy_for` whether a proxy applies to its URL, as requests
   would decide (rule 4, ``NO_PROXY`` and the loopback rule included).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

import requests

from .._core.log import get_logger
from .._core.redact import register_secret
from .._core.validate import describe, invalid
from .environment import is_loopback_url
from .pool import _WatchedAdapter

__all__ = ["PROXY_VARIABLES", "ConnectionSettings", "check_connection", "proxy_secrets"]

log = get_logger("dshstream.transport")

#: the environment variables a proxy URL may come from (rule 4)
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")
_PROXY_SCHEMES = ("http", "https", "socks4", "socks4a", "socks5", "socks5h")

TrustStore = Literal["system"]


@dataclass(frozen=True)
class ConnectionSettings:
    """TLS and proxy settings of one transport (rules 1-4); the defaults are requests'."""

    verify: bool | str = True
    client_cert: str | tuple[str, str] | None = None
    trust_store: TrustStore | None = None
    proxies: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # proxies may carry credentials: never shown
        return (
            f"ConnectionSettings(verify={self.verify!r}, client_cert={self.client_cert!r}, "
            f"trust_store={self.trust_store!r}, proxies=<{len(self.proxies)}>)"
        )

    def send_kwargs(self, session: requests.Session) -> dict[str, Any]:
        """requests' per-request arguments for one send (rules 1, 2, 4, 5)."""
        kwargs: dict[str, Any] = {}
        verify = self.verify
        if verify is True and self.trust_store is None and session.trust_env:
            if not (os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")):
                bundle = os.environ.get("SSL_CERT_FILE")
                if bundle and os.path.exists(bundle):
                    verify = bundle  # rule 1: the OpenSSL convention
        if verify is not True:
            kwargs["verify"] = verify
        if self.client_cert is not None:
            kwargs["cert"] = self.client_cert
        if self.proxies:
            kwargs["proxies"] = dict(self.proxies)
        return kwargs

    def ssl_context(self, trust_env: bool = True) -> ssl.SSLContext:
        """The TLS context of a connection made outside requests, with the trust every send
        of this transport has (rule 6; ``trust_env``: the session's)."""
        if self.trust_store == "system":
            context = _system_context()
        else:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            verify = self.verify
            if verify is True:
                bundle: str | None = None
                if trust_env:
                    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
                        value = os.environ.get(name)
                        if value and os.path.exists(value):
                            bundle = value
                            break
                verify = bundle or requests.utils.DEFAULT_CA_BUNDLE_PATH  # certifi's, as requests sends
            if verify is False:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            elif os.path.isdir(verify):
                context.load_verify_locations(capath=verify)
            else:
                context.load_verify_locations(cafile=verify)
        if self.client_cert is not None:
            if isinstance(self.client_cert, tuple):
                context.load_cert_chain(self.client_cert[0], self.client_cert[1])
            else:
                context.load_cert_chain(self.client_cert)
        return context

    def proxy_for(self, url: str, trust_env: bool = True) -> str | None:
        """The proxy URL a request to ``url`` goes through, as requests decides (rules 4, 6)."""
        proxies: dict[str, str] = {}
        if trust_env and not is_loopback_url(url):  # environment rule 3: loopback goes direct
            proxies.update(requests.utils.get_environ_proxies(url))
        proxies.update(self.proxies)
        chosen: str | None = requests.utils.select_proxy(url, proxies)
        return chosen

    def prepare(self, session: requests.Session) -> None:
        """Register proxy credentials (rule 4), mount the system trust store (rule 3)."""
        for secret in proxy_secrets(self.proxies.values()):
            register_secret(secret)
        if session.trust_env:
            for secret in proxy_secrets(os.environ.get(name, "") for name in PROXY_VARIABLES):
                register_secret(secret)
        if self.verify is False:
            log.warning("TLS verification is off (verify=False): any server can answer as the provider")
        if self.trust_store == "system":
            session.mount("https://", _TrustStoreAdapter(_system_context()))


class _TrustStoreAdapter(_WatchedAdapter):
    """The watched adapter with the system trust store's context (rule 3), for direct
    connections and proxied ones alike."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        super().init_poolmanager(*args, **kwargs)

    def proxy_manager_for(self, proxy: Any, **proxy_kwargs: Any) -> Any:
        proxy_kwargs.setdefault("ssl_context", self._context)
        return super().proxy_manager_for(proxy, **proxy_kwargs)


def _system_context() -> ssl.SSLContext:
    try:
        import truststore
    except ImportError:
        raise invalid(
            'trust_store="system" needs the truststore package: pip install "dshstream[truststore]"'
        ) from None
    context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return context


def proxy_secrets(urls: Any) -> list[str]:
    """The credentials in proxy URLs: each password, its decoded form, and ``user:password``."""
    secrets: list[str] = []
    for url in urls:
        if not isinstance(url, str) or "@" not in url:
            continue
        try:
            parts = urlsplit(url if "://" in url else f"http://{url}")
        except ValueError:
            continue
        user, password = parts.username, parts.password
        for value in (password, unquote(password or ""), f"{user}:{password}" if user and password else None):
            if value:
                secrets.append(value)
    return secrets


def _check_path(value: object, name: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise invalid(f"{name} must be a path (str), got {describe(value)}", wrong_type=True)
    path = os.fspath(value)
    if not isinstance(path, str) or not os.path.exists(path):
        raise invalid(f"{name}: no such file or directory: {path!r}")
    return path


def _check_proxies(proxies: object) -> dict[str, str]:
    if proxies is None:
        return {}
    if not isinstance(proxies, Mapping):
        raise invalid(f"proxies must be a mapping of scheme to proxy URL, got {type(proxies).__name__}", wrong_type=True)
    checked: dict[str, str] = {}
    for key, url in proxies.items():
        if not isinstance(key, str) or not isinstance(url, str):
            raise invalid("proxies keys and values must be strings (scheme → proxy URL)", wrong_type=True)
        try:
            parts = urlsplit(url)
            scheme, host = parts.scheme.lower(), parts.hostname
        except ValueError:
            scheme, host = "", None
        if scheme not in _PROXY_SCHEMES or not host:
            shown = register_and_hide(url)
            raise invalid(f"proxies[{key!r}] must be a proxy URL such as http://proxy:3128, got {shown!r}")
        checked[key] = url
    return checked


def register_and_hide(url: str) -> str:
    """``url`` for a message: its credentials registered and left out."""
    for secret in proxy_secrets([url]):
        register_secret(secret)
    return url.rsplit("@", 1)[-1] if "@" in url else url


def check_connection(
    verify: object = True,
    client_cert: object = None,
    trust_store: object = None,
    proxies: object = None,
) -> ConnectionSettings:
    """The settings validated (rules 1-4): a mistake is a ``ConfigurationError`` naming
    the setting."""
    if verify is None:
        verify = True
    if not isinstance(verify, bool):
        verify = _check_path(verify, "verify")
    cert: str | tuple[str, str] | None = None
    if isinstance(client_cert, tuple):
        if len(client_cert) != 2:
            raise invalid("client_cert must be a path or a (certificate, key) pair of paths", wrong_type=True)
        cert = (_check_path(client_cert[0], "client_cert[0]"), _check_path(client_cert[1], "client_cert[1]"))
    elif client_cert is not None:
        cert = _check_path(client_cert, "client_cert")
    if trust_store is not None and trust_store != "system":
        raise invalid(f'trust_store must be "system" or None, got {describe(trust_store)}')
    if trust_store == "system" and verify is not True:
        raise invalid('trust_store="system" decides what is trusted: not with verify= a path or False')
    return ConnectionSettings(
        verify=verify,
        client_cert=cert,
        trust_store="system" if trust_store == "system" else None,
        proxies=_check_proxies(proxies),
    )
