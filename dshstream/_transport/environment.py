"""What ``requests`` reads from the environment for each send, read only when it can matter.

Contract (the transport's own session, :func:`~dshstream._transport.pool.new_session`; a
caller's ``session=`` is left exactly as ``requests`` makes it):

1. **Nothing to find, nothing scanned.** ``Session.request`` merges the environment into
   every send (``merge_environment_settings``): for the proxies it runs urllib's
   ``getproxies_environment`` twice, which decodes every variable of the process (about
   0.1 ms with 35 variables, more on a CI machine with hundreds) to find the ones named
   ``*_proxy``. When no variable's name holds ``_proxy`` in any case — what urllib would
   find then is no proxy, whatever ``NO_PROXY`` says — :class:`EnvironmentSession` merges
   the rest as ``requests`` does: ``REQUESTS_CA_BUNDLE``, then ``CURL_CA_BUNDLE``, for a
   ``verify`` of ``True`` or ``None``, then the session's own ``proxies``, ``stream``,
   ``verify`` and ``cert``. The variables are looked at on every send, never cached: a
   proxy set after the adapter was made applies to the next request.
2. **Otherwise requests' own.** A proxy variable present, a platform whose proxies also
   come from the system's settings (macOS, Windows: urllib asks the system when the
   environment names none), or a session that does not trust the environment: the merge
   is ``requests``' own, unchanged — but for rule 3.
3. **Loopback is never proxied from the environment.** A request to ``localhost``, a
   ``*.localhost`` name, ``127.0.0.0/8`` or ``::1`` (a local llama.cpp, Ollama, vLLM or LM
   Studio server) gets the merge of rule 1 whatever proxy variables or system settings
   say, as Go's ``net/http`` and Chrome decide: a corporate ``HTTPS_PROXY`` (or a desktop
   proxy tool's) cannot reach the caller's own machine, and sending the request there
   fails it (a 502, a refused connect) or hands the prompt to the proxy. An explicit
   ``proxies=`` (the adapter's, or the session's own ``proxies``) still applies: that is
   how a debugging proxy sees loopback traffic.
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import requests
import requests.sessions

#: requests' own merge of a send's setting with the session's (untyped in requests)
merge_setting: Callable[[Any, Any], Any] = requests.sessions.merge_setting

__all__ = ["EnvironmentSession", "is_loopback_url", "names_a_proxy"]

#: rule 2: urllib falls back to the system's proxy settings on these platforms
_SYSTEM_PROXIES = sys.platform == "darwin" or os.name == "nt" or not os.supports_bytes_environ


def names_a_proxy() -> bool:
    """Whether any environment variable's name holds ``_proxy`` (any case): the ones
    urllib reads end with it, so ``False`` means it would find no proxy (rule 1)."""
    # One join of the names as bytes: no variable decoded (a name merely containing
    # "_proxy" only sends the merge down requests' own path).
    return b"_proxy" in b"\0".join(os.environb).lower()


@lru_cache(maxsize=256)
def _loopback_host(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):  # RFC 6761 6.3
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1
    return address.is_loopback


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` names this machine's loopback interface (rule 3)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and _loopback_host(host.rstrip("."))


class EnvironmentSession(requests.Session):
    """A ``requests.Session`` whose per-send merge skips urllib's scan when no proxy
    variable exists (rule 1) and leaves the environment's proxies off loopback requests
    (rule 3); every other behaviour is ``requests.Session``'s."""

    def merge_environment_settings(
        self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
    ) -> Any:  # requests' own type where it has one (a TypedDict since 2.33)
        if not self.trust_env or (
            (_SYSTEM_PROXIES or names_a_proxy()) and not is_loopback_url(url)  # rules 2, 3
        ):
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        if verify is True or verify is None:  # rule 1: requests' CA bundle variables
            verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or verify
        return {
            "proxies": merge_setting(proxies, self.proxies),
            "stream": merge_setting(stream, self.stream),
            "verify": merge_setting(verify, self.verify),
            "cert": merge_setting(cert, self.cert),
        }
