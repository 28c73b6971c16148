"""Auth flows: how one attempt's request gets its credentials — composed into an adapter,
never overridden in it.

Contract (the shape of httpx's ``Auth``: a flow sees the finished request and returns it
authorized; the attempt loop asks it whether a rejection is worth one more try):

1. **One flow per adapter.** :meth:`AuthFlow.authorize` takes the attempt's request —
   URL, headers and body bytes final — and returns it with its credential headers; the
   JSON body is never encoded again (:meth:`~dshstream._core.http_request.HttpRequest.
   with_headers`). :meth:`AuthFlow.get_headers` gives the headers of a GET
   (``list_models``): a header flow's own headers; SigV4 signs the GET over an empty body.
2. **Fetched per attempt, under the attempt's limits.** A flow asks its source anew for
   every attempt (a callable's rotating token) with the attempt's
   :class:`~dshstream._adapters.credentials.FetchLimits` (credentials rule 6), and every
   value it sends is registered for redaction and listed in the request's ``secrets``.
3. **Refresh on rejection.** :meth:`AuthFlow.refresh_after` is the attempt loop's one
   question after every failed attempt before acceptance (attempts rule 3): ``True`` when
   the flow changed what it will send (a callable's token dropped after a 401; a key
   pool's key cooled or parked, the next one to be picked) and the attempt should be made
   again at once — at most :attr:`AuthFlow.refresh_limit` times per stream.
4. **The flows.** :class:`HeaderAuth` — a key or a callable's token in one header
   (``authorization: Bearer``, ``x-api-key``, ``api-key``, ``x-goog-api-key``), plus fixed
   headers that travel with it (a Google quota project); :class:`SigV4Auth` — AWS
   Signature V4 over the final body bytes, from fixed credentials or a callable;
   :class:`NoAuth`. A header a caller set with another spelling (``Authorization``) is
   replaced, never sent twice.
5. Nothing here shows a secret: :meth:`AuthFlow.describe` says how the credential is
   held (``set``, ``callable``, ``pool of N keys``, ``none``, ``sigv4 <environment>``...).
6. **One stream's flow.** Each stream is authorized by, and the attempt loop asks,
   :meth:`AuthFlow.for_stream` (http rule 4; the LiteLLM adapter's credential likewise),
   so the refresh question concerns the key that stream's failed attempt used
   (credentials rule 8). A flow whose credential is a
   :class:`~dshstream._adapters.credentials.CredentialSource` in its ``credential``
   attribute (:class:`HeaderAuth`, and any subclass or flow of your own that keeps it
   there) gets this for every credential — a key pool included — with no code of its own:
   the stream's flow is a copy holding the source's stream view. Any other flow is its
   own stream's flow. A fixed key (or none) is its own view and its own value on every
   attempt: read from the source (credentials rule 9), never asked for.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Union
from urllib.parse import urlsplit

from .._core.http_request import HttpRequest
from .._core.sigv4 import AwsCredentials, sign_headers
from .._core.types import LlmFailure
from .credentials import HISTORY, CredentialSource, FetchLimits, SecretHistory, call_credential

__all__ = ["AuthFlow", "HeaderAuth", "NoAuth", "SigV4Auth", "with_added_headers"]


def with_added_headers(request: HttpRequest, added: Mapping[str, str], secrets: tuple[str, ...] = ()) -> HttpRequest:
    """``request`` with ``added`` on top of its headers, names compared case-insensitively
    (rule 4), and ``secrets`` added to what it carries."""
    names = {name.lower() for name in added}
    headers = {name: value for name, value in request.headers.items() if name.lower() not in names}
    headers.update(added)
    return request.with_headers(headers, secrets)


class AuthFlow:
    """A request's credentials (rule 1); this base sends none."""

    __slots__ = ()

    def headers(self, provider: str, limits: FetchLimits | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
        """This attempt's credential headers and the secrets they carry (rule 2)."""
        return {}, ()

    def authorize(self, request: HttpRequest, provider: str, limits: FetchLimits | None = None) -> HttpRequest:
        """``request`` as sent: its credential headers added (rule 1)."""
        added, secrets = self.headers(provider, limits)
        return with_added_headers(request, added, secrets) if added else request

    def get_headers(
        self, url: str, headers: Mapping[str, str], provider: str, limits: FetchLimits | None = None
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        """The headers of a GET of ``url`` — ``headers`` with the credential's on top —
        and the secrets they carry (rule 1)."""
        added, secrets = self.headers(provider, limits)
        names = {name.lower() for name in added}
        return {**{k: v for k, v in headers.items() if k.lower() not in names}, **added}, secrets

    def refresh_after(self, failure: LlmFailure, provider: str) -> bool:
        """Whether ``failure`` made this flow change what it sends: try once more (rule 3)."""
        credential = self._credential()
        return credential.refresh_after(failure, provider) if credential is not None else False

    @property
    def refresh_limit(self) -> int:
        """How many times per stream a ``True`` from :meth:`refresh_after` sends the attempt
        again at once (rule 3): once; once per key for a key pool."""
        credential = self._credential()
        return credential.refresh_limit if credential is not None else 1

    def for_stream(self) -> AuthFlow:
        """This flow as one stream's attempts use it (rule 6)."""
        credential = self._credential()
        if credential is None or credential.fixed:  # its own view (credentials rule 9)
            return self
        view = credential.for_stream()
        if view is credential:
            return self
        flow = copy.copy(self)
        setattr(flow, "credential", view)  # noqa: B010 - the conventional attribute (rule 6)
        return flow

    def _credential(self) -> CredentialSource | None:
        """The flow's credential source, when it keeps one in ``credential`` (rule 6)."""
        credential = getattr(self, "credential", None)
        return credential if isinstance(credential, CredentialSource) else None

    @property
    def secrets(self) -> tuple[str, ...]:
        """The credentials this flow sent last (its credential source's latest value)."""
        credential = self._credential()
        key = credential.last if credential is not None else None
        return (key,) if key else ()

    def describe(self) -> str:
        """How the credential is held, never its value (rule 5)."""
        credential = self._credential()
        return credential.describe() if credential is not None else "none"


class NoAuth(AuthFlow):
    """No credentials: a local server."""

    __slots__ = ()


class HeaderAuth(AuthFlow):
    """A key in one header: ``{header}: {scheme} {key}`` (``scheme=""``: the bare key),
    with ``extra`` headers alongside when a key is sent (rule 4)."""

    __slots__ = ("credential", "extra", "header", "scheme")

    def __init__(
        self,
        credential: CredentialSource,
        header: str = "authorization",
        scheme: str = "Bearer",
        extra: Mapping[str, str] | None = None,
    ) -> None:
        self.credential = credential
        self.header = header
        self.scheme = scheme
        self.extra = dict(extra or {})

    def headers(self, provider: str, limits: FetchLimits | None = None) -> tuple[dict[str, str], tuple[str, ...]]:
        credential = self.credential
        key = credential.key if credential.fixed else credential.get(provider, limits)  # credentials rule 9
        if not key:
            return {}, ()
        return {**self.extra, self.header: f"{self.scheme} {key}" if self.scheme else key}, (key,)

    def __repr__(self) -> str:
        return f"HeaderAuth(header={self.header!r}, key=<{self.describe()}>)"


#: what SigV4 signs with: fixed credentials, or a zero-argument callable returning them
AwsSource = Union[AwsCredentials, Callable[[], object]]


class SigV4Auth(AuthFlow):
    """AWS Signature V4 over the final body bytes (rule 4): fixed credentials, or a
    callable asked anew each attempt under its limits (rule 2) whose value ``check`` turns
    into :class:`~dshstream._core.sigv4.AwsCredentials` (a caller mistake raised there)."""

    __slots__ = ("_fixed", "_history", "_last", "_source", "check", "content_sha256", "origin", "region", "service")

    def __init__(
        self,
        source: AwsSource,
        *,
        region: str,
        service: str,
        check: Callable[[object], AwsCredentials],
        origin: str = "set",
        content_sha256: bool = False,
    ) -> None:
        self._fixed = source if isinstance(source, AwsCredentials) else None
        self._source = None if isinstance(source, AwsCredentials) else source
        self.region = region
        self.service = service
        self.check = check
        #: whether ``x-amz-content-sha256`` is sent and signed (a service that asks for it)
        self.content_sha256 = content_sha256
        #: where fixed credentials came from (``set``, ``environment``), for :meth:`describe`
        self.origin = "callable" if self._source is not None and origin == "set" else origin
        self._history = SecretHistory(2 * HISTORY)  # a secret key and a session token each
        self._last: AwsCredentials | None = self._fixed
        if self._fixed is not None:
            self._remember(self._fixed)

    def _remember(self, creds: AwsCredentials) -> None:
        self._history.remember(creds.secret_access_key, creds.session_token)

    def credentials(self, provider: str, limits: FetchLimits | None = None) -> AwsCredentials:
        """This attempt's credentials (a callable is asked anew, under ``limits``: rule 2)."""
        if self._source is None:
            assert self._fixed is not None
            return self._fixed
        creds = self.check(call_credential(self._source, provider, "credentials", limits))
        self._remember(creds)
        self._last = creds
        return creds

    def authorize(self, request: HttpRequest, provider: str, limits: FetchLimits | None = None) -> HttpRequest:
        headers, secrets = self._signed("POST", request.url, request.headers, request.body_bytes(), provider, limits)
        return request.with_headers(headers, secrets)

    def get_headers(
        self, url: str, headers: Mapping[str, str], provider: str, limits: FetchLimits | None = None
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        return self._signed("GET", url, headers, b"", provider, limits)

    def _signed(
        self, method: str, url: str, given: Mapping[str, str], body: bytes, provider: str, limits: FetchLimits | None
    ) -> tuple[dict[str, str], tuple[str, ...]]:
        """``given`` with ``host`` and the signature headers of this request, and the secrets
        they carry (the signature itself among them)."""
        creds = self.credentials(provider, limits)
        parts = urlsplit(url)
        default = {"https": 443, "http": 80}.get(parts.scheme)
        host = parts.hostname or ""
        headers = {k: v for k, v in given.items() if k.lower() != "host"}
        headers["host"] = host if parts.port in (None, default) else f"{host}:{parts.port}"
        added = sign_headers(
            method, url, headers, body, creds, region=self.region, service=self.service,
            content_sha256=self.content_sha256,
        )
        signature = added["authorization"].rsplit("Signature=", 1)[-1]
        return {**headers, **added}, tuple(s for s in (creds.secret_access_key, creds.session_token, signature) if s)

    @property
    def secrets(self) -> tuple[str, ...]:
        aws = self._last
        return tuple(s for s in (aws.secret_access_key, aws.session_token) if s) if aws else ()

    def describe(self) -> str:
        return f"sigv4 <{self.origin}>"

    def __repr__(self) -> str:
        return f"SigV4Auth(region={self.region!r}, service={self.service!r}, credentials=<{self.origin}>)"
