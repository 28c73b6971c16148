"""Azure OpenAI: :class:`AzureOpenAIAdapter` (chat completions) and
:class:`AzureOpenAIResponsesAdapter` (the Responses API) — OpenAI's wires with Azure's
URLs (:class:`AzureChatWire`, :class:`AzureResponsesWire`), an ``api-key`` or ``Bearer``
auth flow, and the attempt loop.

Contract:

1. **Endpoint.** ``endpoint=`` (or ``base_url=``; the official SDK's ``azure_endpoint``) is
   the resource root, ``https://{resource}.openai.azure.com`` (also
   ``*.cognitiveservices.azure.com``, ``*.services.ai.azure.com``); a pasted
   ``.../openai`` or ``.../openai/v1`` suffix is dropped. Default:
   ``AZURE_OPENAI_ENDPOINT``. Neither is a ``ConfigurationError``.
2. **API version.** ``api_version=`` (default ``OPENAI_API_VERSION``, else ``"v1"``)
   picks the URL shape:

   * ``"v1"`` — the v1 API: ``{endpoint}/openai/v1/chat/completions`` and
     ``{endpoint}/openai/v1/responses``, the model (a deployment name) in the body;
     ``"preview"`` is the same with ``?api-version=preview``;
   * a dated version (``"2024-10-21"``, ``"2025-04-01-preview"``) — the classic API:
     ``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``,
     the deployment being ``deployment=`` or else the request's model (the Responses
     adapter: ``{endpoint}/openai/responses?api-version=...``). Before ``2024-09-01`` the
     chat body says ``max_tokens`` (older versions refuse ``max_completion_tokens``), and
     a ``JsonSchema`` response format is refused before ``2024-08-01-preview``, the first
     version with structured outputs (JSON mode works on all).

   ``foundry_models=True`` (chat only) is the third shape, the Foundry Models inference
   API that serves the other vendors' models of an Azure AI Foundry resource (Grok, Kimi,
   DeepSeek, Llama...): ``{endpoint}/models/chat/completions?api-version=...`` (default
   :data:`FOUNDRY_API_VERSION`, ``2024-05-01-preview``; a pasted ``.../models`` suffix is
   dropped), the model in the body, ``max_tokens``; it has no model list.

3. **Auth.** A key goes in the ``api-key`` header; a callable ``api_key=`` (an Entra ID
   token provider, e.g. ``azure.identity.get_bearer_token_provider``) in
   ``Authorization: Bearer``, asked before every attempt under the stream's deadline,
   idle clock and cancel (credentials rule 6: a token provider that hangs does not hold
   the stream). ``auth="api-key"`` or ``"bearer"`` overrides the choice (a rotating key
   from a vault; a fixed token). The style is the adapter's ``auth``; its auth flow is a
   :class:`~dshstream._adapters.auth.HeaderAuth` (``api-key`` with the bare key, or
   ``authorization: Bearer``).
4. **Environment, as the official SDK reads it**: ``AZURE_OPENAI_API_KEY`` is sent only
   to the host of ``AZURE_OPENAI_ENDPOINT`` — the provider's own host here — so an
   endpoint that is not that host gets no environment key (pass ``api_key=``).
5. **Quirks** are the chat wire's and the adapter base's: the first chunk with empty
   ``choices`` and ``prompt_filter_results`` carries no content; ``content_filter_results``
   ride on every choice; ``finish_reason: "content_filter"`` is a ``CONTENT_FILTER`` error
   finish naming the filtered categories in its detail; a deployment that refuses
   ``stream_options`` is asked once more without it; Azure error bodies (``innererror``,
   ``content_filter_result``, ``DeploymentNotFound``) are classified.
6. ``list_models`` reads ``{endpoint}/openai/v1/models`` (classic:
   ``{endpoint}/openai/models?api-version=...``): the models the resource offers, not
   its deployments.
7. **Composition.** The URL shapes, the ``max_tokens`` field and the structured-output
   cut-off (rule 2) and the model list (rule 6) are the wires' — pure values holding
   ``api_version`` (and, for chat, ``deployment``); the adapters override no hook: their
   ``__init__`` resolves the endpoint, version, credential and auth style (rules 1-4),
   builds the wire and the auth flow, and ``api_version``, ``classic`` and
   ``deployment`` read back from the wire.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import quote

from .._core.dialects import Dialect, get_dialect
from .._core.errors import LlmError
from .._core.request import GenerateOptions
from .._core.response_format import JsonSchema
from .._core.validate import check_base_url, check_bool_or_none, check_choice, check_credential, check_str_or_none, invalid
from .auth import AuthFlow, HeaderAuth
from .credentials import Credential, CredentialSource, holds_keys
from .openai_chat import OpenAIChatAdapter, OpenAIChatWire
from .openai_responses import OpenAIResponsesAdapter, OpenAIResponsesWire, ResponsesAdapterSettings, ResponsesSettings
from .settings import HttpSettings, resolve_api_key
from .structured_output import refuse

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AzureAuth", "AzureChatWire", "AzureOpenAIAdapter", "AzureOpenAIResponsesAdapter", "AzureResponsesWire"]

ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
KEY_ENV = "AZURE_OPENAI_API_KEY"
VERSION_ENV = "OPENAI_API_VERSION"
DEFAULT_API_VERSION = "v1"
#: the Foundry Models inference API's version (rule 2)
FOUNDRY_API_VERSION = "2024-05-01-preview"
#: the first dated version whose chat body takes ``max_completion_tokens``
MAX_COMPLETION_TOKENS_SINCE = "2024-09-01"
#: the first dated version with structured outputs (``2024-08-01-preview``)
JSON_SCHEMA_SINCE = "2024-08-01"
_V1 = ("v1", "preview")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SUFFIXES = ("/openai/v1", "/openai")

#: how the credential is sent: the ``api-key`` header, or ``Authorization: Bearer``
AzureAuth = Literal["api-key", "bearer"]


class _Target(NamedTuple):
    base_url: str
    api_version: str
    credential: Credential | None
    auth: AzureAuth


def _root(url: str, field: str, foundry: bool = False) -> str:
    """The resource root of an Azure endpoint URL (rule 1; rule 2's ``/models`` too)."""
    root = check_base_url(url, field).rstrip("/")
    for suffix in (*_SUFFIXES, "/models") if foundry else _SUFFIXES:
        if root.lower().endswith(suffix):
            return root[: -len(suffix)].rstrip("/")
    return root


def _home(env_endpoint: str) -> str:
    """The host the environment key may go to: ``AZURE_OPENAI_ENDPOINT``'s ("" for none,
    or for a value that is not a URL: then no host is)."""
    try:
        return _root(env_endpoint, ENDPOINT_ENV) if env_endpoint else ""
    except LlmError:
        return ""


def _target(
    name: str,
    endpoint: str | None,
    api_version: str | None,
    auth: str | None,
    settings: HttpSettings,
    foundry: bool = False,
) -> _Target:
    """Endpoint, version, credential and auth style from the arguments and the
    environment (rules 1-4); sets ``base_url`` and ``api_key`` of ``settings`` to them."""
    given = check_str_or_none(endpoint, f"{name}.endpoint")
    base_url = check_str_or_none(settings.pop("base_url", None), f"{name}.base_url")
    if given and base_url and _root(given, "endpoint") != _root(base_url, "base_url"):
        raise invalid(f"{name}: pass endpoint= or base_url=, not two different URLs")
    env_endpoint = os.environ.get(ENDPOINT_ENV, "").strip()
    chosen = given or base_url or env_endpoint
    if not chosen:
        raise invalid(
            f"{name} needs endpoint='https://<resource>.openai.azure.com' or {ENDPOINT_ENV} in the environment"
        )
    root = _root(chosen, f"{name}.endpoint" if (given or base_url) else ENDPOINT_ENV, foundry)
    home = root if env_endpoint and chosen == env_endpoint else _home(env_endpoint)
    version = api_version if api_version is not None else (os.environ.get(VERSION_ENV, "").strip() or DEFAULT_API_VERSION)
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise invalid(
            f"{name}.api_version must be 'v1', 'preview' or a dated version such as '2024-10-21', "
            f"got {type(version).__name__}"
            + (f" {version[:40]!r}" if isinstance(version, str) else "")
        )
    # An environment key goes only to the environment endpoint's host (rule 4).
    credential = resolve_api_key(
        check_credential(settings.pop("api_key", None), f"{name}.api_key"), root, (KEY_ENV,), home, name
    )
    if auth is None:
        style: AzureAuth = "bearer" if credential is not None and not holds_keys(credential) else "api-key"
    else:
        style = "bearer" if check_choice(auth, f"{name}.auth", ("api-key", "bearer")) == "bearer" else "api-key"
    settings["base_url"] = root
    settings["api_key"] = credential
    return _Target(root, version, credential, style)


def _query(api_version: str) -> str:
    return "" if api_version == "v1" else f"?api-version={quote(api_version, safe='')}"


def _auth_flow(style: AzureAuth, credential: CredentialSource) -> AuthFlow:
    """The auth flow of ``style`` (rule 3): the bare key in ``api-key``, or ``Bearer``."""
    return HeaderAuth(credential) if style == "bearer" else HeaderAuth(credential, "api-key", "")


class _AtAzure:
    """What both Azure wires share: the API version, whether it is a classic (dated) one,
    the model list (rules 2 and 6)."""

    provider_name: str | None = "azure.ai.openai"  # telemetry (wire rule 8), custom domains too
    base_url: str
    #: ``v1``, ``preview`` or a dated version (the classic URLs)
    api_version: str

    @property
    def classic(self) -> bool:
        """Whether requests use the classic URLs (a dated ``api_version``): a chat
        deployment's, the preview Responses path."""
        return self.api_version not in _V1

    def models_url(self) -> str | None:
        """The resource's model list (rule 6)."""
        path = "/openai/models" if self.classic else "/openai/v1/models"
        return f"{self.base_url}{path}{_query(self.api_version)}"


class _OnAzure:
    """What both Azure adapters share: the target resolved before the base adapter is set
    up (rules 1-4), the auth flow after, and the wire's version."""

    default_name: str
    wire: AzureChatWire | AzureResponsesWire
    credential: CredentialSource

    def _on_azure(
        self, endpoint: str | None, api_version: str | None, auth: str | None, settings: HttpSettings,
        foundry: bool = False,
    ) -> _Target:
        target = _target(type(self).__name__, endpoint, api_version, auth, settings, foundry)
        #: how the credential is sent (rule 3)
        self.auth: AzureAuth = target.auth
        settings.setdefault("title", self.default_name)
        return target

    def _azure_auth(self) -> AuthFlow:
        return _auth_flow(self.auth, self.credential)

    @property
    def api_version(self) -> str:
        """``v1``, ``preview`` or the dated version requests use (the wire's)."""
        return self.wire.api_version

    @property
    def classic(self) -> bool:
        """Whether requests use the classic URLs (a dated ``api_version``; the wire's)."""
        return self.wire.classic


class AzureChatWire(_AtAzure, OpenAIChatWire):
    """OpenAI's chat wire at Azure's URLs (rule 2): the v1 API, a classic deployment, or
    the Foundry Models inference API."""

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        dialect: Dialect,
        think_tags: bool | None = None,
        include_usage: bool = True,
        api_version: str = DEFAULT_API_VERSION,
        deployment: str | None = None,
        foundry_models: bool = False,
    ) -> None:
        super().__init__(base_url, title, dialect=dialect, think_tags=think_tags, include_usage=include_usage)
        self.api_version = api_version
        #: the classic URL's deployment (``None``: the request's model)
        self.deployment = deployment
        #: requests go to the Foundry Models inference API (rule 2)
        self.foundry_models = foundry_models

    def models_url(self) -> str | None:
        return None if self.foundry_models else super().models_url()

    def endpoint(self, options: GenerateOptions) -> str:
        if self.foundry_models:
            return f"{self.base_url}/models/chat/completions{_query(self.api_version)}"
        if not self.classic:
            return f"{self.base_url}/openai/v1/chat/completions{_query(self.api_version)}"
        deployment = quote(self.deployment or options.model, safe="-._~")
        return f"{self.base_url}/openai/deployments/{deployment}/chat/completions{_query(self.api_version)}"

    def max_tokens_field(self) -> str:
        if self.foundry_models or (self.classic and self.api_version[:10] < MAX_COMPLETION_TOKENS_SINCE):
            return "max_tokens"
        return "max_completion_tokens"

    def response_format_fields(self, options: GenerateOptions) -> dict[str, Any]:
        too_old = self.classic and not self.foundry_models and self.api_version[:10] < JSON_SCHEMA_SINCE
        if isinstance(options.response_format, JsonSchema) and too_old:
            raise refuse(
                options,
                self.title,
                f"JSON-schema output needs api_version {JSON_SCHEMA_SINCE}-preview or later "
                f"(this adapter uses {self.api_version[:40]!r})",
                "use api_version='v1' or a later dated version, or JsonMode()",
            )
        return super().response_format_fields(options)


class AzureResponsesWire(_AtAzure, OpenAIResponsesWire):
    """OpenAI's Responses wire at Azure's URLs (rule 2)."""

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        api_version: str = DEFAULT_API_VERSION,
        **body: Unpack[ResponsesSettings],
    ) -> None:
        super().__init__(base_url, title, **body)
        self.api_version = api_version

    #: Azure answers POST .../responses/input_tokens with 404 "Unknown request URL"
    count_tokens_note = "Azure OpenAI does not serve POST /responses/input_tokens"

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return None  # not offered by Azure: a ConfigurationError saying so (wire rule 7)

    def endpoint(self, options: GenerateOptions) -> str:
        path = "/openai/responses" if self.classic else "/openai/v1/responses"
        return f"{self.base_url}{path}{_query(self.api_version)}"


class AzureOpenAIAdapter(_OnAzure, OpenAIChatAdapter):
    """Stream chat completions from Azure OpenAI (classic deployment URLs or the v1 API):
    :class:`AzureChatWire` + the ``api-key`` or ``Bearer`` auth flow + the attempt loop."""

    default_name = "Azure OpenAI"
    #: the wire this adapter builds (a subclass of :class:`AzureChatWire`)
    wire_class: type[AzureChatWire] = AzureChatWire

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        deployment: str | None = None,
        auth: AzureAuth | None = None,
        think_tags: bool | None = None,
        include_usage: bool = True,
        foundry_models: bool = False,
        **settings: Unpack[HttpSettings],
    ) -> None:
        name = type(self).__name__
        foundry = bool(check_bool_or_none(foundry_models, f"{name}.foundry_models"))
        if foundry and api_version is None:
            api_version = os.environ.get(VERSION_ENV, "").strip() or FOUNDRY_API_VERSION
        if foundry and api_version in _V1:
            raise invalid(f"{name}: the Foundry Models API takes a dated api_version such as {FOUNDRY_API_VERSION!r}")
        target = self._on_azure(endpoint, api_version, auth, settings, foundry)
        chosen_deployment = check_str_or_none(deployment, f"{name}.deployment") or None
        dialect = replace(get_dialect("openai"), base_url=target.base_url, key_env=None, title="Azure OpenAI")
        super().__init__(
            dialect=dialect,
            think_tags=think_tags,
            include_usage=include_usage,
            **settings,
        )
        # the chat adapter built its wire without Azure's URL settings: this one has them
        self.wire: AzureChatWire = self.wire_class(
            self.base_url,
            self.title,
            dialect=dialect,
            think_tags=think_tags,
            include_usage=include_usage,
            api_version=target.api_version,
            deployment=chosen_deployment,
            foundry_models=foundry,
        )
        self.auth_flow = self._azure_auth()

    @property
    def deployment(self) -> str | None:
        """The classic URL's deployment (``None``: the request's model; the wire's)."""
        return self.wire.deployment


class AzureOpenAIResponsesAdapter(_OnAzure, OpenAIResponsesAdapter):
    """Stream from Azure OpenAI's Responses API (``/openai/v1/responses``):
    :class:`AzureResponsesWire` + the ``api-key`` or ``Bearer`` auth flow + the attempt loop."""

    default_name = "Azure OpenAI Responses"
    default_base_url = ""
    #: the wire this adapter builds (a subclass of :class:`AzureResponsesWire`)
    wire_class: type[AzureResponsesWire] = AzureResponsesWire

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        auth: AzureAuth | None = None,
        **given: Unpack[ResponsesAdapterSettings],
    ) -> None:
        target = self._on_azure(endpoint, api_version, auth, given)
        super().__init__(key_env=None, **given)
        # the Responses adapter built its wire without Azure's URL settings: this one has them
        self.wire: AzureResponsesWire = self.wire_class(
            self.base_url,
            self.title,
            api_version=target.api_version,
            **self._body,
        )
        self.auth_flow = self._azure_auth()
