"""The AWS container credentials endpoint (ECS task roles, EKS Pod Identity), read without
an AWS SDK, for an adapter that signs with SigV4 when neither the environment's keys nor
the AWS profile hold credentials (:mod:`~dshstream._adapters.aws_signing` rule 3).

Contract (the endpoint as the AWS SDKs' container provider uses it):

1. **Named by the environment only.** ``AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`` (ECS:
   under ``http://169.254.170.2``), else ``AWS_CONTAINER_CREDENTIALS_FULL_URI`` — an
   ``https://`` URL, or ``http://`` to a loopback address or to the ECS and EKS agents
   (``169.254.170.2``, ``169.254.170.23``, ``fd00:ec2::23``), as the SDKs allow; any other
   full URI is a ``ConfigurationError`` naming the variable. Nothing is probed: without
   either variable there is no container provider.
2. **Authorization.** The contents of ``AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`` (read
   again for every fetch: the agent rotates it), else
   ``AWS_CONTAINER_AUTHORIZATION_TOKEN``, sent as ``Authorization``; a value holding a
   CR or LF is a ``ConfigurationError``.
3. **Fetched when an attempt needs it**, within the attempt's deadline, idle clock and
   cancel (credentials rule 6) and at most :data:`FETCH_TIMEOUT` seconds, with the
   environment's TLS and proxy settings (``NO_PROXY`` is where the agent's address goes
   when a proxy is set, as AWS documents for ECS); the answer — ``AccessKeyId``, ``SecretAccessKey``,
   ``Token``, ``Expiration`` (ISO 8601) — is reused until :data:`REFRESH_BEFORE` seconds
   before it expires. A failed fetch is the transport's classified failure; an answer
   without the two keys, or with an ``Expiration`` that does not parse, is
   ``MALFORMED_RESPONSE``.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from .._core.errors import error_for, make_failure
from .._core.redact import register_secret
from .._core.sigv4 import AwsCredentials
from .._core.validate import invalid
from .._transport import HttpTransport
from .._transport.tls import ConnectionSettings
from .aws_profile import refresh_at
from .credentials import current_limits

__all__ = ["FETCH_TIMEOUT", "REFRESH_BEFORE", "ContainerCredentials", "container_credentials"]

#: seconds one fetch may take (rule 3)
FETCH_TIMEOUT = 5.0
#: seconds before ``Expiration`` the credentials are fetched again (rule 3)
REFRESH_BEFORE = 300.0
_ECS_HOST = "http://169.254.170.2"
#: the agents' addresses a plain-HTTP full URI may name (rule 1)
_AGENTS = {"169.254.170.2", "169.254.170.23", "fd00:ec2::23"}
_PROVIDER = "aws-container-credentials"
_BODY_LIMIT = 65536


def _allowed(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    if parts.scheme != "http" or not parts.hostname:
        return False
    host = parts.hostname
    if host == "localhost" or host in _AGENTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def container_credentials(connection: ConnectionSettings | None = None) -> ContainerCredentials | None:
    """The container provider the environment names (rule 1), or ``None``."""
    relative = os.environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "").strip()
    if relative:
        return ContainerCredentials(_ECS_HOST + relative, connection=connection)
    full = os.environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI", "").strip()
    if not full:
        return None
    if not _allowed(full):
        raise invalid(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https://, or http:// to a loopback address or the "
            f"ECS/EKS agent ({', '.join(sorted(_AGENTS))}); got a URL to {urlsplit(full).hostname or 'no host'}"
        )
    return ContainerCredentials(full, connection=connection)


class ContainerCredentials:
    """The endpoint's credentials as a zero-argument callable (rules 2, 3)."""

    def __init__(
        self, url: str, *, connection: ConnectionSettings | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.url = url
        self.transport = HttpTransport(connection=connection)
        self._clock = clock
        self._lock = threading.Lock()
        self._held: AwsCredentials | None = None
        self._until = 0.0

    def __repr__(self) -> str:
        return "ContainerCredentials(<container>)"

    def __call__(self) -> AwsCredentials:
        with self._lock:
            if self._held is None or self._clock() >= self._until:
                self._held, self._until = self._fetch()
            return self._held

    def _token(self) -> str:
        path = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "").strip()
        if path:
            try:
                with open(path, encoding="utf-8") as file:
                    token = file.read().strip()
            except OSError as exc:
                raise invalid(f"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE could not be read: {type(exc).__name__}") from None
            where = "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"
        else:
            token, where = os.environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN", "").strip(), "AWS_CONTAINER_AUTHORIZATION_TOKEN"
        if "\r" in token or "\n" in token:
            raise invalid(f"{where} holds a line break; it goes in an Authorization header")
        return token

    def _fetch(self) -> tuple[AwsCredentials, float]:
        token = self._token()
        headers = {"accept": "application/json"}
        secrets: tuple[str, ...] = ()
        if token:
            register_secret(token)
            headers["authorization"] = token
            secrets = (token,)
        limits = current_limits()
        timeout, cancel = limits.bounds(_PROVIDER, FETCH_TIMEOUT) if limits is not None else (FETCH_TIMEOUT, None)
        answer: Any = self.transport.get_json(
            self.url, headers, provider=_PROVIDER, secrets=secrets, timeout=timeout, cancel=cancel, limit=_BODY_LIMIT
        )
        key_id = answer.get("AccessKeyId") if isinstance(answer, dict) else None
        secret = answer.get("SecretAccessKey") if isinstance(answer, dict) else None
        if not (isinstance(key_id, str) and key_id and isinstance(secret, str) and secret):
            raise self._malformed("no AccessKeyId and SecretAccessKey")
        session_token = answer.get("Token")
        register_secret(secret)
        if isinstance(session_token, str) and session_token:
            register_secret(session_token)
        else:
            session_token = None
        until = refresh_at(answer.get("Expiration"), REFRESH_BEFORE)
        if isinstance(until, str):
            raise self._malformed(until)
        return AwsCredentials(key_id, secret, session_token), until

    def _malformed(self, why: str) -> Exception:
        return error_for(
            make_failure("MALFORMED_RESPONSE", f"{_PROVIDER}: the container credentials endpoint answered {why}", provider=_PROVIDER)
        )
