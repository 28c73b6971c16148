"""Google Vertex AI: :class:`VertexGeminiAdapter` (Gemini, ``streamGenerateContent``) and
:class:`VertexAnthropicAdapter` (Claude, ``streamRawPredict``) — the Gemini and Anthropic
wires with Vertex's URLs (:class:`VertexGeminiWire`, :class:`VertexAnthropicWire`), composed
with Vertex's auth.

Contract:

1. **Where.** ``project=`` (default ``GOOGLE_CLOUD_PROJECT``) and ``location=`` (default
   ``GOOGLE_CLOUD_LOCATION``, else ``"global"``) name the host and the path:
   ``https://{location}-aiplatform.googleapis.com``, ``https://aiplatform.googleapis.com``
   for ``global``, ``https://aiplatform.{us|eu}.rep.googleapis.com`` for the multi-regions;
   then ``/{api_version}/projects/{project}/locations/{location}/publishers/google/models/
   {model}:streamGenerateContent?alt=sse`` (Claude: ``/v1/projects/.../publishers/anthropic/
   models/{model}:streamRawPredict``). A model given as a full resource
   (``projects/.../endpoints/123``, ``publishers/...``) is used as it is. ``base_url=``
   replaces the host (a private endpoint, a proxy); the path stays.
2. **Express mode** (Gemini only): a ``str`` ``api_key=`` is a Vertex API key, sent as
   ``x-goog-api-key`` (never in the URL) to the global host with no project in the path
   (``/{api_version}/publishers/google/models/{model}:...``); a project is then refused.
3. **OAuth.** Otherwise the credential is an access token in ``Authorization: Bearer``:
   a callable ``api_key=`` asked before every attempt (google-auth: the README's recipe;
   service account keys need RSA signing, so they go this way), or
   ``credentials_file=`` — an ``authorized_user`` file read by
   :class:`~dshstream._adapters.google_oauth.AuthorizedUserCredentials` — or, only when
   the requests go to Google's own host (no ``base_url``), the file Application Default
   Credentials would use (``GOOGLE_APPLICATION_CREDENTIALS``, else gcloud's
   ``application_default_credentials.json``). A ``quota_project_id`` in that file is sent
   as ``x-goog-user-project``. ``auth="bearer"`` sends a fixed ``str`` as a token instead.
   Every token fetch (a callable's, or the file's refresh POST) holds the stream's
   deadline, idle clock and cancel (credentials rule 6, google_oauth rule 7).
4. **Wire + auth.** The wires are pure (wire rule 1): :class:`VertexGeminiWire` is
   :class:`~dshstream._adapters.gemini.GeminiWire` with the paths of rules 1-2 (the
   project, location and express mode are its own: ``adapter.wire.project``...; the
   adapters show them read-only), :class:`VertexAnthropicWire` is
   :class:`~dshstream._adapters.anthropic.AnthropicWire` with the path of rule 1 and the
   body of rule 5. The credential is an auth flow
   (:class:`~dshstream._adapters.auth.HeaderAuth`): ``x-goog-api-key`` in express mode,
   else ``Authorization: Bearer``, with ``x-goog-user-project`` (rule 3) traveling with
   it (a caller's own ``headers=`` entry of that name wins, as before). The adapters
   override no hook: ``__init__`` resolves the target (rules 1-3) and builds the two.
5. **Claude on Vertex**: the Anthropic body without ``model`` and with
   ``"anthropic_version": "vertex-2023-10-16"``; no ``anthropic-version`` header.
   Everything else (thinking, tools, replay) is the Anthropic wire's, except that a
   response format is a forced tool by default (``structured_output="native"`` sends
   ``output_config.format`` where Vertex serves it).
6. Neither lists models (``list_models`` is empty): Vertex lists publisher models
   elsewhere, per location.
7. **Counting tokens.** Gemini: ``POST .../{model resource}:countTokens`` with the
   stream's ``contents``, ``systemInstruction`` and ``tools`` (Vertex's request takes no
   ``generateContentRequest``), answered ``totalTokens``. Claude: ``POST .../publishers/
   anthropic/models/count-tokens:rawPredict`` (the path the Anthropic SDK's Vertex client
   uses) with the Messages counting fields, ``model`` included, and ``anthropic_version``.
   Express mode counts too (the same path without the project); a request naming cached
   content is refused (Vertex's request has no field for it). Prompt caching: Claude
   takes cache points but not the top-level automatic mode (not documented for Vertex).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import quote

from .._core.log import get_logger
from .._core.request import GenerateOptions
from .._core.validate import check_choice, check_credential, check_str_or_none, invalid
from .anthropic import AnthropicAdapter, AnthropicWire, ClaudeSettings, split_claude
from .auth import HeaderAuth
from .credentials import Credential, CredentialSource, holds_keys
from .gemini import FOREIGN_THOUGHT_SIGNATURE, GeminiAdapter, GeminiWire
from .messages_body import MessagesSettings
from .google_oauth import AuthorizedUserCredentials, default_credentials_file
from .http import HttpAdapter
from .settings import HttpSettings, checked_base_url, same_host
from .._transport.tls import ConnectionSettings, check_connection

if TYPE_CHECKING:
    from typing_extensions import Unpack

log = get_logger("dshstream.adapters")

__all__ = [
    "VERTEX_ANTHROPIC_VERSION",
    "VertexAnthropicAdapter",
    "VertexAnthropicWire",
    "VertexAuth",
    "VertexGeminiAdapter",
    "VertexGeminiWire",
    "vertex_host",
]

PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
LOCATION_ENV = "GOOGLE_CLOUD_LOCATION"
DEFAULT_LOCATION = "global"
GLOBAL_HOST = "https://aiplatform.googleapis.com"
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_LOCATION = re.compile(r"[a-z][a-z0-9-]{0,62}")
_PROJECT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:_-]{0,127}")
_MODEL_SAFE = "-._~@"

#: how the credential is sent: ``x-goog-api-key`` (express mode) or ``Authorization: Bearer``
VertexAuth = Literal["api-key", "bearer"]


def vertex_host(location: str) -> str:
    """The Vertex AI API root for ``location`` (rule 1)."""
    if location == "global":
        return GLOBAL_HOST
    if location in ("us", "eu"):
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


class _Target(NamedTuple):
    project: str | None
    location: str
    express: bool
    credential: Credential | None


def _target(
    name: str,
    project: str | None,
    location: str | None,
    credentials_file: str | os.PathLike[str] | None,
    auth: str | None,
    settings: HttpSettings,
    *,
    express_allowed: bool,
) -> _Target:
    """Project, location, mode and credential from the arguments and the environment
    (rules 1-3); sets ``base_url`` and ``api_key`` of ``settings``."""
    api_key = check_credential(settings.pop("api_key", None), f"{name}.api_key")
    if auth is None:
        style = "api-key" if express_allowed and holds_keys(api_key) else "bearer"
    else:
        style = check_choice(auth, f"{name}.auth", ("api-key", "bearer") if express_allowed else ("bearer",))
    express = style == "api-key"
    if express and api_key is None:
        raise invalid(f"{name}: auth='api-key' (express mode) needs api_key='<a Vertex API key>'")
    if express and credentials_file is not None:
        raise invalid(f"{name}: express mode (a str api_key) takes no credentials_file")

    where = check_str_or_none(location, f"{name}.location") or os.environ.get(LOCATION_ENV, "").strip()
    where = where or DEFAULT_LOCATION
    if not _LOCATION.fullmatch(where):
        raise invalid(f"{name}.location must look like 'us-central1', 'europe-west4' or 'global', got {where[:40]!r}")
    given = check_str_or_none(project, f"{name}.project")
    if express:
        if given:
            raise invalid(f"{name}: express mode (a str api_key) takes no project; pass a callable api_key for OAuth")
        chosen: str | None = None
        home = GLOBAL_HOST
    else:
        chosen = given or os.environ.get(PROJECT_ENV, "").strip() or None
        if chosen is None:
            raise invalid(f"{name} needs project= or {PROJECT_ENV} in the environment")
        if not _PROJECT.fullmatch(chosen):
            raise invalid(f"{name}.project is not a Google Cloud project id, got {chosen[:40]!r}")
        home = vertex_host(where)

    base_url = checked_base_url(settings.pop("base_url", None) or home)
    settings["base_url"] = base_url
    credential: Credential | None = api_key
    if credential is None and credentials_file is not None:
        credential = AuthorizedUserCredentials(
            credentials_file,
            session=settings.get("session"),
            identity=settings.get("identity"),
            connection=_connection(settings),
        )
    elif credential is None:
        found = default_credentials_file()
        if found is not None and same_host(base_url, home):
            credential = AuthorizedUserCredentials(
                found, session=settings.get("session"), identity=settings.get("identity"), connection=_connection(settings)
            )
        elif found is not None:
            # Environment credentials go only to Google's own host (DESIGN §7).
            log.info(
                "%s: not using Application Default Credentials for a base_url that is not %s; "
                "pass api_key= or credentials_file=",
                name,
                home,
            )
    settings["api_key"] = credential
    return _Target(chosen, where, express, credential)


def _connection(settings: Mapping[str, Any]) -> ConnectionSettings:
    """The adapter's TLS and proxy settings, for its token endpoint too (the transport's
    :mod:`~dshstream._transport.tls` rule 5)."""
    return check_connection(
        settings.get("verify"), settings.get("client_cert"), settings.get("trust_store"), settings.get("proxies")
    )


def _quota_headers(credential: object) -> dict[str, str]:
    """``x-goog-user-project`` for an authorized-user file's ``quota_project_id`` (rule 3)."""
    quota = getattr(credential, "quota_project_id", None) if isinstance(credential, AuthorizedUserCredentials) else None
    return {"x-goog-user-project": quota} if isinstance(quota, str) and quota else {}


def _vertex_auth(source: CredentialSource, target: _Target, caller: Mapping[str, str]) -> HeaderAuth:
    """The auth flow (rules 2-4): express mode's key in ``x-goog-api-key``, else a token in
    ``Authorization: Bearer``; the quota project travels with the credential, unless the
    caller's ``headers=`` name one (theirs is sent, as always)."""
    named = {name.lower() for name in caller}
    extra = {k: v for k, v in _quota_headers(target.credential).items() if k.lower() not in named}
    if target.express:
        return HeaderAuth(source, "x-goog-api-key", "", extra=extra)
    return HeaderAuth(source, extra=extra)


class VertexGeminiWire(GeminiWire):
    """The Gemini wire with Vertex's resource paths (rules 1-2); no model list (rule 6)."""

    provider_name: str | None = "gcp.vertex_ai"  # telemetry (wire rule 8), private endpoints too

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        project: str | None,
        location: str,
        express: bool = False,
        api_version: str = "v1",
        thinking_budgets: Mapping[str, int] | None = None,
        foreign_thought_signature: str | None = FOREIGN_THOUGHT_SIGNATURE,
    ) -> None:
        super().__init__(
            base_url,
            title,
            api_version=api_version,
            thinking_budgets=thinking_budgets,
            foreign_thought_signature=foreign_thought_signature,
        )
        #: the Google Cloud project in the path (``None`` in express mode)
        self.project = project
        #: the Vertex location in the path
        self.location = location
        #: express mode: no project in the path (rule 2)
        self.express = express

    def model_resource(self, model: str) -> str:
        """The model's resource path (rule 1): ``projects/{p}/locations/{l}/publishers/
        google/models/{model}``, or without the project in express mode."""
        if model.startswith("projects/"):
            return quote(model, safe="/:" + _MODEL_SAFE)
        if model.startswith("publishers/"):
            path = quote(model, safe="/" + _MODEL_SAFE)
        else:
            name = model[len("models/") :] if model.startswith("models/") else model
            path = f"publishers/google/models/{quote(name, safe=_MODEL_SAFE)}"
        if self.express:
            return path
        return f"projects/{quote(self.project or '', safe=':')}/locations/{self.location}/{path}"

    #: the fields of the stream's body Vertex's ``countTokens`` takes (rule 7)
    COUNT_FIELDS = frozenset({"contents", "systemInstruction", "tools"})

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/{self.api_version}/{self.model_resource(options.model)}:countTokens"

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The stream's contents, system instruction and tools, at the top level (rule 7);
        Vertex's request takes no cached content, so a count without it is refused."""
        if options.prompt_cache is not None and options.prompt_cache.cached_content is not None:
            raise invalid(
                f"{self.title}: countTokens takes no cached content (GenerateOptions.prompt_cache.cached_content); "
                "its count would leave the cache out"
            )
        return {key: value for key, value in self.build_body(options).items() if key in self.COUNT_FIELDS}

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/{self.api_version}/{self.model_resource(options.model)}:streamGenerateContent?alt=sse"

    def models_url(self) -> str | None:
        return None


class VertexAnthropicWire(AnthropicWire):
    """The Anthropic wire for ``streamRawPredict`` (rules 1 and 5); no model list (rule 6)."""

    models_path: str | None = None
    provider_name: str | None = "gcp.vertex_ai"  # telemetry (wire rule 8)
    #: Anthropic documents native structured outputs for the Claude API and Bedrock only:
    #: a response format is a forced tool here unless ``structured_output="native"``
    native_structured_host = False
    #: the top-level ``cache_control`` is documented for the Claude API only (rule 7)
    automatic_cache_host = False
    #: code-execution containers are the Claude API's: none is sent here (anthropic rule 5)
    replays_container = False

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        project: str | None,
        location: str,
        anthropic_version: str = VERTEX_ANTHROPIC_VERSION,
        **claude: Unpack[MessagesSettings],
    ) -> None:
        super().__init__(base_url, title, anthropic_version=anthropic_version, **claude)
        #: the Google Cloud project in the path
        self.project = project
        #: the Vertex location in the path
        self.location = location

    def _models_root(self) -> str:
        """``{base_url}/v1/projects/{p}/locations/{l}/publishers/anthropic/models`` (rule 1)."""
        return (
            f"{self.base_url}/v1/projects/{quote(self.project or '', safe=':')}/locations/{self.location}"
            "/publishers/anthropic/models"
        )

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self._models_root()}/count-tokens:rawPredict"

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The Messages counting fields with ``model`` (the path names none) and
        ``anthropic_version`` (rule 7)."""
        body = AnthropicWire.build_body(self, options)
        counted = {key: value for key, value in body.items() if key in self.COUNT_FIELDS}
        return {"anthropic_version": self.anthropic_version, **counted}

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self._models_root()}/{quote(options.model, safe=_MODEL_SAFE)}:streamRawPredict"

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The Anthropic body without ``model``, with ``anthropic_version`` (rule 5)."""
        body = super().build_body(options)
        body.pop("model", None)
        return {"anthropic_version": self.anthropic_version, **body}

    def protocol_headers(self) -> dict[str, str]:
        """None: the version travels in the body (rule 5)."""
        return {}


class _OnVertex(HttpAdapter):
    """What both Vertex adapters share: the target and auth set up before the wire, and
    where requests go (the wire's project and location)."""

    default_base_url = ""
    key_env: tuple[str, ...] = ()
    wire: VertexGeminiWire | VertexAnthropicWire

    def _on_vertex(
        self,
        project: str | None,
        location: str | None,
        credentials_file: str | os.PathLike[str] | None,
        auth: VertexAuth | None,
        settings: HttpSettings,
        *,
        express_allowed: bool,
    ) -> _Target:
        """The target (rules 1-3), the HTTP settings and the auth flow (rules 2-4); the
        Gemini or Anthropic adapter's own set-up is skipped: the caller builds Vertex's wire."""
        target = _target(
            type(self).__name__, project, location, credentials_file, auth, settings, express_allowed=express_allowed
        )
        settings.setdefault("title", self.default_name)
        HttpAdapter.__init__(self, **settings)
        self.auth_flow = _vertex_auth(self.credential, target, self.extra_headers)
        return target

    @property
    def project(self) -> str | None:
        """The Google Cloud project (``None`` in express mode; the wire's)."""
        return self.wire.project

    @property
    def location(self) -> str:
        """The Vertex location (the wire's)."""
        return self.wire.location


class VertexGeminiAdapter(_OnVertex, GeminiAdapter):
    """Stream Gemini models through Vertex AI (regional, global or express mode)."""

    default_name = "Vertex AI"

    def __init__(
        self,
        *,
        project: str | None = None,
        location: str | None = None,
        credentials_file: str | os.PathLike[str] | None = None,
        auth: VertexAuth | None = None,
        api_version: str = "v1",
        thinking_budgets: Mapping[str, int] | None = None,
        foreign_thought_signature: str | None = FOREIGN_THOUGHT_SIGNATURE,
        **settings: Unpack[HttpSettings],
    ) -> None:
        # Gemini's adapter, with Vertex's wire and auth (rule 4)
        target = self._on_vertex(project, location, credentials_file, auth, settings, express_allowed=True)
        self.wire: VertexGeminiWire = VertexGeminiWire(
            self.base_url,
            self.title,
            project=target.project,
            location=target.location,
            express=target.express,
            api_version=api_version,
            thinking_budgets=thinking_budgets,
            foreign_thought_signature=foreign_thought_signature,
        )

    @property
    def express(self) -> bool:
        """Whether this is express mode: a Vertex API key, no project (rule 2)."""
        return self.wire.express


class VertexAnthropicAdapter(_OnVertex, AnthropicAdapter):
    """Stream Claude models through Vertex AI (``:streamRawPredict``)."""

    default_name = "Claude on Vertex AI"

    def __init__(
        self,
        *,
        project: str | None = None,
        location: str | None = None,
        credentials_file: str | os.PathLike[str] | None = None,
        anthropic_version: str = VERTEX_ANTHROPIC_VERSION,
        **given: Unpack[ClaudeSettings],
    ) -> None:
        # Anthropic's adapter, with Vertex's wire and auth (rule 4)
        settings, claude = split_claude(given)
        target = self._on_vertex(project, location, credentials_file, None, settings, express_allowed=False)
        self.wire: VertexAnthropicWire = VertexAnthropicWire(
            self.base_url,
            self.title,
            project=target.project,
            location=target.location,
            anthropic_version=anthropic_version,
            **claude,
        )
