"""AnthropicAdapter: ``POST {base_url}/v1/messages`` with ``stream: true``.

Contract: the body is :class:`~dshstream._adapters.messages_body.MessagesBody`'s (its
rules: system, ``max_tokens``, tools with ``eager_input_streaming``, tool results, media,
thinking, structured output, history replay). Headers: ``x-api-key``,
``anthropic-version`` and attribution; the key never goes into a URL. The stream is
decoded by :class:`~dshstream._core.wires.anthropic.AnthropicTranslator` (a forced
structured-output tool's arguments written as text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from .._core.request import GenerateOptions
from .._core.wires.anthropic import AnthropicTranslator
from .._core.wires.translator import Translator
from .http import HttpAdapter, ModelListFormat
from .messages_body import DEFAULT_MAX_TOKENS, MessagesBody
from .settings import HttpSettings
from .structured_output import StructuredMode

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"


class AnthropicAdapter(MessagesBody, HttpAdapter):
    """Stream Claude models through the Anthropic Messages API."""

    default_name = "Anthropic"
    default_base_url = DEFAULT_BASE_URL
    key_env: tuple[str, ...] = ("ANTHROPIC_API_KEY",)
    models_path: str | None = "/v1/models?limit=1000"
    models_format = ModelListFormat(name_key="display_name")

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
        HttpAdapter.__init__(self, **settings)
        MessagesBody.__init__(
            self,
            default_max_tokens=default_max_tokens,
            thinking_budgets=thinking_budgets,
            thinking_mode=thinking_mode,
            structured_output=structured_output,
            eager_input_streaming=eager_input_streaming,
            label=self.title,
        )
        self.anthropic_version = anthropic_version

    # ------------------------------------------------------------------ request

    def auth_headers(self) -> dict[str, str] | None:
        return {"x-api-key": self._api_key} if self._api_key else None

    def protocol_headers(self) -> dict[str, str]:
        return {"anthropic-version": self.anthropic_version}

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/v1/messages"

    # ------------------------------------------------------------------ response

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        translator = AnthropicTranslator(
            provider=options.provider, request_id=request_id, max_tokens=options.max_tokens
        )
        forced = self.forced_tool_name(options)
        if forced is not None:
            translator.unwrap_tool_call(forced)
        return translator


__all__ = ["AnthropicAdapter"]
