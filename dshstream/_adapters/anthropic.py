"""Anthropic Messages API: the wire (``POST {base_url}/v1/messages`` with ``stream: true``)
and its adapter.

Contract:

1. **The wire.** :class:`AnthropicWire` is pure (wire rule 1): the body is
   :class:`~dshstream._adapters.messages_body.MessagesBody`'s, which the wire is built on
   (its rules: system, ``max_tokens``, tools with ``eager_input_streaming``, tool results,
   media, thinking, structured output, history replay); its one protocol header is
   ``anthropic-version``; the stream is decoded by
   :class:`~dshstream._core.wires.anthropic.AnthropicTranslator`, a forced
   structured-output tool's arguments written as text. The media table is Anthropic's
   (images and documents, no audio).
2. **The adapter.** :class:`AnthropicAdapter` is that wire + the key in ``x-api-key``
   (:class:`~dshstream._adapters.auth.HeaderAuth`, a bare key, never in a URL; a callable
   is asked before each attempt) + the attempt loop (:mod:`~dshstream._adapters.http`). It
   overrides no hook: its ``__init__`` only resolves the settings and builds the two.
3. **Models.** ``GET /v1/models?limit=1000``, ``display_name`` as the name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from .._core.request import GenerateOptions
from .._core.wires.anthropic import AnthropicTranslator
from .._core.wires.translator import Translator
from .auth import HeaderAuth
from .http import HttpAdapter
from .messages_body import DEFAULT_MAX_TOKENS, MessagesBody, MessagesSettings
from .settings import HttpSettings
from .structured_output import StructuredMode
from .wire import ModelListFormat, Wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"

__all__ = ["AnthropicAdapter", "AnthropicWire", "DEFAULT_BASE_URL", "DEFAULT_VERSION"]


class AnthropicWire(MessagesBody, Wire):
    """The Messages API request (:class:`MessagesBody`'s body) and translator (rule 1)."""

    models_path: str | None = "/v1/models?limit=1000"
    models_format = ModelListFormat(name_key="display_name")

    def __init__(
        self, base_url: str, title: str, *, anthropic_version: str = DEFAULT_VERSION, **claude: Unpack[MessagesSettings]
    ) -> None:
        Wire.__init__(self, base_url, title)
        MessagesBody.__init__(self, label=title, **claude)
        #: the ``anthropic-version`` header sent with every call
        self.anthropic_version = anthropic_version

    def protocol_headers(self) -> dict[str, str]:
        return {"anthropic-version": self.anthropic_version}

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/v1/messages"

    #: the fields ``POST /v1/messages/count_tokens`` takes of a stream's body (wire rule 7)
    COUNT_FIELDS = frozenset(
        {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "cache_control"}
    )

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/v1/messages/count_tokens"

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {key: value for key, value in self.build_body(options).items() if key in self.COUNT_FIELDS}

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        translator = AnthropicTranslator(
            provider=options.provider, request_id=request_id, max_tokens=options.max_tokens
        )
        forced = self.forced_tool_name(options)
        if forced is not None:
            translator.unwrap_tool_call(forced)
        return translator


class AnthropicAdapter(HttpAdapter):
    """Stream Claude models through the Anthropic Messages API (rule 2)."""

    default_name = "Anthropic"
    default_base_url = DEFAULT_BASE_URL
    key_env: tuple[str, ...] = ("ANTHROPIC_API_KEY",)

    def __init__(
        self,
        *,
        anthropic_version: str = DEFAULT_VERSION,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budgets: Mapping[str, int] | None = None,
        thinking_mode: Literal["auto", "adaptive", "enabled"] = "auto",
        structured_output: StructuredMode = "auto",
        eager_input_streaming: bool = True,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(**settings)
        claude = MessagesSettings(
            default_max_tokens=default_max_tokens,
            thinking_budgets=thinking_budgets,
            thinking_mode=thinking_mode,
            structured_output=structured_output,
            eager_input_streaming=eager_input_streaming,
        )
        self.wire: AnthropicWire = AnthropicWire(self.base_url, self.title, anthropic_version=anthropic_version, **claude)
        self.auth_flow = HeaderAuth(self.credential, "x-api-key", "")

    @property
    def anthropic_version(self) -> str:
        """The API version requests are sent with (the wire's)."""
        return self.wire.anthropic_version
