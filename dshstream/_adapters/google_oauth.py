"""Google OAuth access tokens without google-auth: :class:`AuthorizedUserCredentials`
reads an ``authorized_user`` credentials file (the one ``gcloud auth
application-default login`` writes) and refreshes its access token with one form POST.

Contract:

1. The file (or an already-parsed mapping) is JSON with ``"type": "authorized_user"``,
   ``client_id``, ``client_secret`` and ``refresh_token`` (``quota_project_id`` is kept
   when present). Other types are refused with a
   :class:`~dshstream._core.errors.ConfigurationError` that says what to do instead:
   ``service_account`` keys need RSA signing and ``external_account`` /
   ``impersonated_service_account`` need their own flows, so those go through an
   ``api_key=`` callable built with google-auth (the README's two-line recipe). A
   message names the file and the field, never any of its values.
2. Calling the object returns a current access token: the cached one until
   :data:`REFRESH_MARGIN` seconds before its ``expires_in`` runs out, else a new one from
   ``POST https://oauth2.googleapis.com/token`` (``grant_type=refresh_token``) sent through
   :meth:`~dshstream._transport.client.HttpTransport.post_form` — no redirects, at most
   :data:`TOKEN_BODY_LIMIT` bytes within :data:`TOKEN_TIMEOUT` seconds, the refresh
   token and client secret redacted from any failure. One refresh at a time (a lock);
   the file is read once, when the object is built.
3. :meth:`AuthorizedUserCredentials.invalidate` drops the cached token: the adapter calls
   it after an HTTP 401, so the one retry gets a fresh token.
4. The refresh token, the client secret and every access token are registered for
   redaction; ``repr`` shows only the token endpoint and whether a token is cached.
5. A token endpoint that refuses the grant (HTTP 400/401: revoked, expired, wrong client)
   is an ``AUTH`` failure asking to run ``gcloud auth application-default login`` again;
   timeouts, transport failures and 5xx keep their own (retryable) codes; an answer
   without an ``access_token`` is ``MALFORMED_RESPONSE``.
6. :func:`default_credentials_file` is where Application Default Credentials look:
   ``GOOGLE_APPLICATION_CREDENTIALS``, else gcloud's well-known file
   (``$CLOUDSDK_CONFIG`` or ``~/.config/gcloud`` — ``%APPDATA%\\gcloud`` on Windows —
   ``/application_default_credentials.json``) when it exists.
7. **The stream's limits.** Called for a stream's attempt (on the worker of credentials
   rule 6), both the wait for another thread's refresh and the token POST hold that
   attempt's deadline, idle window and cancel
   (:func:`~dshstream._adapters.credentials.current_limits`): the POST goes through the
   transport's watchdog with the time left, so a token endpoint that never answers ends
   with the stream (``TIMEOUT`` or ``ABORTED``), its socket closed.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._core.attribution import AppIdentity, merge_headers
from .._core.errors import LlmError, error_for, make_failure
from .._core.redact import register_secret
from .._core.validate import check_api_key, invalid
from .._transport import HttpTransport
from .._transport.tls import ConnectionSettings
from .credentials import FetchLimits, current_limits

if TYPE_CHECKING:
    from .._transport import Session

__all__ = [
    "REFRESH_MARGIN",
    "TOKEN_URL",
    "AuthorizedUserCredentials",
    "default_credentials_file",
]

#: Google's OAuth 2.0 token endpoint
TOKEN_URL = "https://oauth2.googleapis.com/token"
#: a cached token is refreshed this many seconds before it expires
REFRESH_MARGIN = 300.0
#: the token request's total time limit, seconds
TOKEN_TIMEOUT = 30.0
#: the most bytes read from a token answer
TOKEN_BODY_LIMIT = 65536
#: the most bytes read from a credentials file
FILE_LIMIT = 1024 * 1024
_PROVIDER = "google-oauth"
#: how often a wait for another thread's refresh looks at the stream's limits
_TICK = 0.05
_DEFAULT_LIFETIME = 3600.0
_MAX_LIFETIME = 86400.0
_RECIPE = (
    "pass api_key=<a callable returning an access token> built with google-auth "
    "(see the README's Vertex AI recipe)"
)


def default_credentials_file() -> str | None:
    """The credentials file Application Default Credentials would use (rule 6), or ``None``."""
    explicit = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    if explicit:
        return explicit
    config = os.environ.get("CLOUDSDK_CONFIG")
    if not config:
        if os.name == "nt":
            appdata = os.environ.get("APPDATA")
            config = os.path.join(appdata, "gcloud") if appdata else None
        else:
            config = os.path.join(os.path.expanduser("~"), ".config", "gcloud")
    if not config:
        return None
    path = os.path.join(config, "application_default_credentials.json")
    return path if os.path.isfile(path) else None


def _read_file(path: str) -> Mapping[str, Any]:
    where = f"the credentials file {path!r}"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(FILE_LIMIT + 1)
    except OSError as exc:
        raise invalid(f"{where} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(raw) > FILE_LIMIT:
        raise invalid(f"{where} is larger than {FILE_LIMIT} bytes; not a credentials file")
    try:
        info = json.loads(raw)
    except (ValueError, RecursionError):
        raise invalid(f"{where} is not JSON") from None
    if not isinstance(info, dict):
        raise invalid(f"{where} is not a JSON object")
    return info


class AuthorizedUserCredentials:
    """Access tokens from an ``authorized_user`` credentials file: pass the object as
    ``api_key=`` of a Vertex adapter (it is a zero-argument callable)."""

    def __init__(
        self,
        source: str | os.PathLike[str] | Mapping[str, Any],
        *,
        session: Session | None = None,
        token_url: str = TOKEN_URL,
        identity: AppIdentity | None = None,
        timeout: float = TOKEN_TIMEOUT,
        connection: ConnectionSettings | None = None,
    ) -> None:
        if isinstance(source, Mapping):
            info, where = source, "the credentials"
        else:
            path = os.fspath(source)
            info, where = _read_file(path), f"the credentials file {path!r}"
        kind = info.get("type")
        if kind != "authorized_user":
            shown = kind if isinstance(kind, str) and kind.replace("_", "").isalnum() else type(kind).__name__
            raise invalid(
                f"{where} has type {shown!r}; only 'authorized_user' (gcloud auth application-default "
                f"login) is read here: for service accounts and other types, {_RECIPE}"
            )
        fields: dict[str, str] = {}
        for name in ("client_id", "client_secret", "refresh_token"):
            value = info.get(name)
            if not isinstance(value, str) or not value:
                raise invalid(f"{where} has no {name!r}; run `gcloud auth application-default login` again")
            checked = check_api_key(value, f"{where}: {name}")
            assert checked is not None
            fields[name] = checked
        self._client_id = fields["client_id"]
        self._client_secret = fields["client_secret"]
        self._refresh_token = fields["refresh_token"]
        register_secret(self._client_secret)
        register_secret(self._refresh_token)
        quota = info.get("quota_project_id")
        #: the project billed for quota (sent as ``x-goog-user-project``), if the file names one
        self.quota_project_id: str | None = quota if isinstance(quota, str) and quota.strip() else None
        self.token_url = token_url
        self.identity = identity
        self.timeout = timeout
        #: the token endpoint's transport: the adapter's TLS and proxy settings (``connection``)
        self.transport = HttpTransport(session, connection=connection)
        self._token: str | None = None
        self._expires = 0.0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        cached = "cached" if self._token is not None else "none"
        return f"AuthorizedUserCredentials(token_url={self.token_url!r}, token=<{cached}>)"

    def __call__(self) -> str:
        """A current access token (rule 2), within the stream's limits (rule 7)."""
        limits = current_limits()
        if limits is None:
            self._lock.acquire()
        else:  # another thread's refresh may outlive this stream's limits
            while not self._lock.acquire(timeout=_TICK):
                stop = limits.stop(_PROVIDER, time.monotonic())
                if stop is not None:
                    raise stop
        try:
            if self._token is None or time.monotonic() >= self._expires - REFRESH_MARGIN:
                self._refresh(limits)
            assert self._token is not None
            return self._token
        finally:
            self._lock.release()

    def invalidate(self) -> None:
        """Drop the cached token; the next call refreshes (rule 3)."""
        with self._lock:
            self._token = None

    def _refresh(self, limits: FetchLimits | None) -> None:
        secrets = (self._refresh_token, self._client_secret)
        timeout, cancel = limits.bounds(_PROVIDER, self.timeout) if limits is not None else (self.timeout, None)
        try:
            answer = self.transport.post_form(
                self.token_url,
                {
                    "grant_type": "refresh_token",
                    "client_id": self._client_id,
                    "client_secret": self._client_secret,
                    "refresh_token": self._refresh_token,
                },
                merge_headers(identity=self.identity),
                provider=_PROVIDER,
                secrets=secrets,
                timeout=timeout,
                cancel=cancel,
                limit=TOKEN_BODY_LIMIT,
            )
        except LlmError as exc:
            failure = exc.failure
            if failure.status in (400, 401):
                raise error_for(
                    replace(
                        make_failure(
                            "AUTH",
                            f"{_PROVIDER}: the refresh token was refused (AUTH, HTTP {failure.status}); "
                            "run `gcloud auth application-default login` again",
                            status=failure.status,
                            provider=_PROVIDER,
                            detail=failure.detail,
                        ),
                        request_id=failure.request_id,
                    )
                ) from None
            raise
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not isinstance(token, str) or not token:
            raise error_for(
                make_failure(
                    "MALFORMED_RESPONSE",
                    f"{_PROVIDER}: the token answer has no access_token (MALFORMED_RESPONSE)",
                    provider=_PROVIDER,
                )
            )
        register_secret(token)
        try:
            checked = check_api_key(token, f"{_PROVIDER}: access_token")
        except LlmError:
            raise error_for(
                make_failure(
                    "MALFORMED_RESPONSE",
                    f"{_PROVIDER}: the access_token is not fit for an HTTP header (MALFORMED_RESPONSE)",
                    provider=_PROVIDER,
                )
            ) from None
        assert checked is not None
        self._token = checked
        self._expires = time.monotonic() + _lifetime(answer.get("expires_in"))


def _lifetime(value: object) -> float:
    """``expires_in`` in seconds: a positive finite number, at most a day; else an hour."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _DEFAULT_LIFETIME
    try:
        seconds = float(value)
    except OverflowError:
        return _MAX_LIFETIME
    if not math.isfinite(seconds) or seconds <= 0:
        return _DEFAULT_LIFETIME
    return min(seconds, _MAX_LIFETIME)
