"""Azure OpenAI: :class:`AzureOpenAIAdapter` (chat completions) and
:class:`AzureOpenAIResponsesAdapter` (the Responses API) — the OpenAI adapters with
Azure's URLs and auth; the wire is OpenAI's.

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

3. **Auth.** A key goes in the ``api-key`` header; a callable ``api_key=`` (an Entra ID
   token provider, e.g. ``azure.identity.get_bearer_token_provider``) in
   ``Authorization: Bearer``, asked before every attempt under the stream's deadline,
   idle clock and cancel (credentials rule 6: a token provider that hangs does not hold
   the stream). ``auth="api-key"`` or
   ``"bearer"`` overrides the choice (a rotating key from a vault; a fixed token).
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
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import quote

from .._core.dialects import get_dialect
from .._core.errors import LlmError
from .._core.request import GenerateOptions
from .._core.response_format import JsonSchema
from .._core.validate import check_base_url, check_choice, check_credential, check_str_or_none, invalid
from .credentials import Credential
from .openai_chat import OpenAIChatAdapter
from .openai_responses import OpenAIResponsesAdapter
from .settings import HttpSettings, resolve_api_key
from .structured_output import refuse

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AzureOpenAIAdapter", "AzureOpenAIResponsesAdapter", "AzureAuth"]

ENDPOINT_ENV = "AZURE_OPENAI_ENDPOINT"
KEY_ENV = "AZURE_OPENAI_API_KEY"
VERSION_ENV = "OPENAI_API_VERSION"
DEFAULT_API_VERSION = "v1"
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


def _root(url: str, field: str) -> str:
    """The resource root of an Azure endpoint URL (rule 1)."""
    root = check_base_url(url, field).rstrip("/")
    for suffix in _SUFFIXES:
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
    root = _root(chosen, f"{name}.endpoint" if (given or base_url) else ENDPOINT_ENV)
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
        style: AzureAuth = "bearer" if credential is not None and not isinstance(credential, str) else "api-key"
    else:
        style = "bearer" if check_choice(auth, f"{name}.auth", ("api-key", "bearer")) == "bearer" else "api-key"
    settings["base_url"] = root
    settings["api_key"] = credential
    return _Target(root, version, credential, style)


def _query(api_version: str) -> str:
    return "" if api_version == "v1" else f"?api-version={quote(api_version, safe='')}"


def _auth_headers(style: AzureAuth, key: str | None) -> dict[str, str] | None:
    if not key:
        return None
    return {"authorization": f"Bearer {key}"} if style == "bearer" else {"api-key": key}


class AzureOpenAIAdapter(OpenAIChatAdapter):
    """Stream chat completions from Azure OpenAI (classic deployment URLs or the v1 API)."""

    default_name = "Azure OpenAI"

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        deployment: str | None = None,
        auth: AzureAuth | None = None,
        think_tags: bool | None = None,
        include_usage: bool = True,
        **settings: Unpack[HttpSettings],
    ) -> None:
        name = type(self).__name__
        target = _target(name, endpoint, api_version, auth, settings)
        self.api_version = target.api_version
        self.auth: AzureAuth = target.auth
        self.deployment = check_str_or_none(deployment, f"{name}.deployment") or None
        settings.setdefault("title", "Azure OpenAI")
        dialect = replace(get_dialect("openai"), base_url=target.base_url, key_env=None, title="Azure OpenAI")
        super().__init__(
            dialect=dialect,
            think_tags=think_tags,
            include_usage=include_usage,
            **settings,
        )

    @property
    def classic(self) -> bool:
        """Whether requests use the classic deployment URL (a dated ``api_version``)."""
        return self.api_version not in _V1

    def endpoint(self, options: GenerateOptions) -> str:
        if not self.classic:
            return f"{self.base_url}/openai/v1/chat/completions{_query(self.api_version)}"
        deployment = quote(self.deployment or options.model, safe="-._~")
        return f"{self.base_url}/openai/deployments/{deployment}/chat/completions{_query(self.api_version)}"

    def auth_headers(self) -> dict[str, str] | None:
        return _auth_headers(self.auth, self._api_key)

    def max_tokens_field(self) -> str:
        if self.classic and self.api_version[:10] < MAX_COMPLETION_TOKENS_SINCE:
            return "max_tokens"
        return "max_completion_tokens"

    def response_format_fields(self, options: GenerateOptions) -> dict[str, Any]:
        too_old = self.classic and self.api_version[:10] < JSON_SCHEMA_SINCE
        if isinstance(options.response_format, JsonSchema) and too_old:
            raise refuse(
                options,
                self.title,
                f"JSON-schema output needs api_version {JSON_SCHEMA_SINCE}-preview or later "
                f"(this adapter uses {self.api_version[:40]!r})",
                "use api_version='v1' or a later dated version, or JsonMode()",
            )
        return super().response_format_fields(options)

    def models_url(self) -> str:
        if self.classic:
            return f"{self.base_url}/openai/models{_query(self.api_version)}"
        return f"{self.base_url}/openai/v1/models{_query(self.api_version)}"


class AzureOpenAIResponsesAdapter(OpenAIResponsesAdapter):
    """Stream from Azure OpenAI's Responses API (``/openai/v1/responses``)."""

    default_name = "Azure OpenAI Responses"
    default_base_url = ""

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        api_version: str | None = None,
        auth: AzureAuth | None = None,
        include_encrypted_reasoning: bool = True,
        reasoning_summary: str | None = "auto",
        send_item_ids: bool = True,
        **settings: Unpack[HttpSettings],
    ) -> None:
        target = _target(type(self).__name__, endpoint, api_version, auth, settings)
        self.api_version = target.api_version
        self.auth = target.auth
        settings.setdefault("title", "Azure OpenAI Responses")
        super().__init__(
            key_env=None,
            include_encrypted_reasoning=include_encrypted_reasoning,
            reasoning_summary=reasoning_summary,
            send_item_ids=send_item_ids,
            **settings,
        )

    @property
    def classic(self) -> bool:
        """Whether requests use the classic preview URL (a dated ``api_version``)."""
        return self.api_version not in _V1

    def endpoint(self, options: GenerateOptions) -> str:
        path = "/openai/responses" if self.classic else "/openai/v1/responses"
        return f"{self.base_url}{path}{_query(self.api_version)}"

    def auth_headers(self) -> dict[str, str] | None:
        return _auth_headers(self.auth, self._api_key)

    def models_url(self) -> str:
        if self.classic:
            return f"{self.base_url}/openai/models{_query(self.api_version)}"
        return f"{self.base_url}/openai/v1/models{_query(self.api_version)}"
