"""The AWS side of an adapter that may sign with SigV4 (Bedrock, Claude Platform on AWS):
the region, the credentials a caller or the environment hands over, the SigV4 flow built
from them, and what ``auth_mode`` and ``repr`` say of it. Each adapter keeps its own
order of checks and its own messages; this module holds what they share.

Contract:

1. **Region.** ``region=`` (checked as a string) wins; else the first non-blank of
   ``AWS_REGION``, ``AWS_DEFAULT_REGION``, stripped; else the profile's ``region`` (rule 3);
   else ``""``. A region looks like
   :data:`REGION_PATTERN` (``us-east-1``).
2. **Credentials.** ``credentials=`` is an :class:`~dshstream._core.sigv4.AwsCredentials`,
   an ``(access_key_id, secret_access_key[, session_token])`` tuple, or a zero-argument
   callable returning either, asked anew before every attempt (the value checked by
   :func:`as_aws_credentials` then, a ``ConfigurationError`` naming ``credentials()``);
   a fixed value is checked at construction, naming the adapter's field.
3. **Environment.** ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``
   (stripped) are read by :func:`environment_access_keys`; whether they may be sent is the
   adapter's choice (only to its real host), and a flow built from them says ``environment``.
   Without them, the profile of the shared config and credentials files
   (:mod:`~dshstream._adapters.aws_profile`: static keys or a ``credential_process``),
   else the container endpoint the environment names (ECS task roles, EKS Pod Identity:
   :mod:`~dshstream._adapters.aws_container`), under the same condition; the flow says
   ``profile NAME`` or ``container``, and the profile's ``region`` comes after the
   environment's (rule 1).
4. **The order.** :meth:`AwsSigning._aws_auth` is what every such adapter sends, in
   Bedrock's order: ``api_key=`` or ``credentials=`` (both at once refused, naming the
   adapter); else, only for the adapter's real host, its key variable, then the
   environment's access keys (rule 3), then the profile or container credentials; for
   another host nothing from the environment (said in a log line: a proxy may sign
   itself). An adapter that cannot do without says so (``required``): none at all for its
   real host is a ``ConfigurationError`` naming what to set. :meth:`AwsSigning._aws_place`
   is rule 1 for an adapter whose host is regional: a region, or a base URL instead.
5. **The flow.** :class:`AwsSigning` builds :class:`~dshstream._adapters.auth.SigV4Auth`
   for the adapter's region and :attr:`AwsSigning.sigv4_service`; ``auth_mode`` is
   ``sigv4``, :attr:`AwsSigning.key_mode` for a key in a header, or ``none``; ``repr``
   shows the base URL (redacted), the region and the flow's description, never a secret.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Union

from .._core.errors import ConfigurationError
from .._core.log import get_logger
from .._core.redact import redact
from .._core.sigv4 import AwsCredentials
from .._core.validate import check_api_key, check_str_or_none, invalid
from .auth import AuthFlow, HeaderAuth, SigV4Auth
from .aws_container import container_credentials
from .aws_profile import aws_profile
from .settings import checked_base_url, same_host

__all__ = [
    "ACCESS_ENV", "AwsCredentialsLike", "AwsSigning", "REGION_ENV", "REGION_PATTERN", "as_aws_credentials",
    "aws_region", "environment_access_keys",
]

log = get_logger("dshstream.adapters")

REGION_ENV = ("AWS_REGION", "AWS_DEFAULT_REGION")
ACCESS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
REGION_PATTERN = re.compile(r"[a-z]{2,}(?:-[a-z0-9]+){1,4}")

_Value = Union[AwsCredentials, "tuple[str, str, str | None]", "tuple[str, str]"]
#: what ``credentials=`` accepts: credentials, a tuple, or a callable returning either (rule 2)
AwsCredentialsLike = Union[_Value, Callable[[], _Value]]


def aws_region(region: object, field: str) -> str:
    """``region`` checked, else the environment's, else the profile's, else ``""`` (rule 1)."""
    chosen = check_str_or_none(region, field) or next(
        (os.environ[v].strip() for v in REGION_ENV if os.environ.get(v, "").strip()), ""
    )
    if chosen:
        return chosen
    try:
        profile = aws_profile()
    except ConfigurationError:
        return ""  # said where the credentials are read (rule 3)
    return profile.region if profile is not None else ""


def environment_access_keys() -> tuple[str, str, str]:
    """The environment's access key id, secret key and session token, ``""`` where unset (rule 3)."""
    key_id, secret, token = (os.environ.get(v, "").strip() for v in ACCESS_ENV)
    return key_id, secret, token


def as_aws_credentials(value: object, field: str) -> AwsCredentials:
    """``value`` (credentials or a 2- or 3-tuple) as checked :class:`AwsCredentials`; a
    ``ConfigurationError`` naming ``field`` otherwise (rule 2)."""
    if isinstance(value, tuple) and len(value) in (2, 3):
        value = AwsCredentials(*value)
    if not isinstance(value, AwsCredentials):
        raise invalid(
            f"{field} must be AwsCredentials or (access_key_id, secret_access_key, session_token), "
            f"got {type(value).__name__}",
            wrong_type=True,
        )
    key_id = check_api_key(value.access_key_id, f"{field}.access_key_id")
    secret = check_api_key(value.secret_access_key, f"{field}.secret_access_key")
    if not key_id or not secret:
        raise invalid(f"{field} needs an access key id and a secret access key")
    token = check_api_key(value.session_token, f"{field}.session_token") if value.session_token else None
    return AwsCredentials(key_id, secret, token or None)


class AwsSigning:
    """What an adapter that may sign with SigV4 shares (rule 4): mixed in before
    :class:`~dshstream._adapters.http.HttpAdapter`, which sets ``auth_flow`` and ``base_url``."""

    #: the SigV4 service name requests are signed for
    sigv4_service: str
    #: what ``auth_mode`` says of a key sent in a header
    key_mode: str
    #: the AWS region requests are signed for (rule 1)
    region: str
    auth_flow: AuthFlow
    base_url: str

    def _sigv4(self, source: AwsCredentials | Callable[[], _Value], origin: str = "set") -> SigV4Auth:
        """The SigV4 flow over ``source`` (a callable's value checked each attempt: rule 2)."""
        return SigV4Auth(
            source,
            region=self.region,
            service=self.sigv4_service,
            check=lambda value: as_aws_credentials(value, "credentials()"),
            origin=origin,
        )

    def _given_sigv4(self, credentials: AwsCredentialsLike, field: str) -> SigV4Auth:
        """The flow over a caller's ``credentials=``: a callable asked anew each attempt, a
        value checked now (rule 2)."""
        if callable(credentials) and not isinstance(credentials, (tuple, AwsCredentials)):
            return self._sigv4(credentials)
        return self._sigv4(as_aws_credentials(credentials, field))

    def _environment_sigv4(self, key_id: str, secret: str, token: str) -> SigV4Auth:
        """The flow over the environment's access keys (rule 3)."""
        return self._sigv4(as_aws_credentials((key_id, secret, token or None), "AWS_ACCESS_KEY_ID"), "environment")

    def _aws_auth(
        self,
        api_key: str | Callable[[], str] | None,
        credentials: AwsCredentialsLike | None,
        *,
        key_env: str,
        key_what: str,
        base_url: str,
        home: str,
        required: bool = False,
    ) -> tuple[str | Callable[[], str] | None, SigV4Auth | None]:
        """The key to send, or the SigV4 flow, in the order of rule 4 (``(None, None)``:
        neither was found). ``key_what`` names the key in the refusal of both; the
        environment is read only when ``base_url`` is on ``home``'s host."""
        name = type(self).__name__
        own_host = bool(home) and same_host(base_url, home)
        if api_key is not None and credentials is not None:
            raise invalid(f"{name}: pass api_key= ({key_what}) or credentials= (SigV4), not both")
        if credentials is not None:
            if not self.region:
                raise invalid(f"{name}.region is required to sign with credentials=")
            return None, self._given_sigv4(credentials, f"{name}.credentials")
        if api_key is not None:
            return api_key, None
        found = self._environment_auth(key_env, base_url, home, own_host)
        if required and own_host and found == (None, None):
            raise invalid(
                f"{name} needs credentials: api_key= or {key_env} ({key_what}), or credentials= "
                f"or AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY or an AWS profile (SigV4)"
            )
        return found

    def _environment_auth(
        self, key_env: str, base_url: str, home: str, own_host: bool
    ) -> tuple[str | None, SigV4Auth | None]:
        """Rule 4's environment part: nothing for another host."""
        name = type(self).__name__
        key = os.environ.get(key_env, "").strip()
        key_id, secret, token = environment_access_keys()
        if not own_host:
            if key or key_id:
                log.info(
                    "%s: not sending environment credentials to %s (not %s); pass api_key= or credentials=",
                    name, redact(base_url), home or "the regional host",
                )
            return None, None
        if key:
            return check_api_key(key, key_env), None
        if key_id and secret:
            return None, self._environment_sigv4(key_id, secret, token)
        return None, self._profile_sigv4() if not key_id else None

    def _aws_place(self, region: object, given_url: str | None, host: Callable[[str], str]) -> tuple[str, str]:
        """Rule 1 for a regional host: sets :attr:`region` (``""`` with only a base URL) and
        returns the base URL and the regional host's (``""`` without a region)."""
        name = type(self).__name__
        chosen = aws_region(region, f"{name}.region")
        if chosen and not REGION_PATTERN.fullmatch(chosen):
            raise invalid(f"{name}.region must look like 'us-east-1', got {chosen[:40]!r}")
        if not chosen and given_url is None:
            raise invalid(f"{name} needs region= (or {'/'.join(REGION_ENV)}) or base_url=")
        self.region = chosen
        home = host(chosen) if chosen else ""
        return checked_base_url(given_url or home), home

    def _profile_sigv4(self) -> SigV4Auth | None:
        """The flow over the profile's credentials, else the container endpoint's (rule 3),
        ``None`` without any."""
        profile = aws_profile()
        if profile is None or profile.credentials is None:
            container = container_credentials()
            return self._sigv4(container, "container") if container is not None else None
        source = profile.credentials
        if isinstance(source, AwsCredentials):
            return self._sigv4(as_aws_credentials(source, f"AWS {profile.origin}"), profile.origin)
        return self._sigv4(source, profile.origin)

    @property
    def auth_mode(self) -> str:
        """``sigv4``, :attr:`key_mode` or ``none`` (the auth flow's kind; rule 4)."""
        flow = self.auth_flow
        if isinstance(flow, SigV4Auth):
            return "sigv4"
        return self.key_mode if isinstance(flow, HeaderAuth) else "none"

    def __repr__(self) -> str:
        flow = self.auth_flow
        auth = flow.describe() if isinstance(flow, SigV4Auth) else f"{self.auth_mode} <{flow.describe()}>"
        return f"{type(self).__name__}(base_url={redact(self.base_url)!r}, region={self.region!r}, auth={auth})"
