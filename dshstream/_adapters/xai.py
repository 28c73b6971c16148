"""xAI on its Responses API — ``POST https://api.x.ai/v1/responses`` — the ``xai`` route:
:class:`XAIResponsesWire` and :class:`XAIAdapter`.

Contract (what xAI's documentation asks of a client, docs.x.ai "Best Practices" and
"Comparison with Chat Completions API"; xAI's Chat Completions API is deprecated and stays
reachable as the ``xai-chat`` route, ``OpenAIChatAdapter(dialect="xai")``):

1. **The Responses wire.** The request and the stream are OpenAI's Responses wire
   (:mod:`~dshstream._adapters.openai_responses`): stateless (``store: false``), so the
   history goes back every turn, and ``include: ["reasoning.encrypted_content"]``: every
   reasoning item's ``encrypted_content`` is kept in the replay state and sent back with
   every later turn, as xAI asks ("results can get worse" when it is dropped). The
   server-side tools' sub-searches xAI shows as ``custom_tool_call`` items are server
   tools, not calls (Responses translator rule 3).
2. **Long requests.** A request that sets no ``idle_timeout`` gets 900 s
   (:data:`IDLE_TIMEOUT`: xAI asks clients to allow at least 900 s per request; the
   whole-request ``timeout`` has no default), so a long reasoning silence before the first
   event is not a ``TIMEOUT``.
3. **What xAI does not take** is not sent: no ``reasoning.summary`` with an effort (the
   effort alone; ``reasoning_summary=`` asks for one anyway), no background mode
   (``GenerateOptions.resumable`` has no effect), no token-counting endpoint, no
   ``context_management`` unless ``compact_threshold=`` asks for it (the Responses
   setting, sent as asked: xAI's reference does not document it).
4. **The key.** ``api_key``, or ``XAI_API_KEY`` — read only for xAI's own host (a
   variable named with ``key_env`` goes anywhere). Telemetry names the provider ``x_ai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.request import GenerateOptions
from .openai_responses import OpenAIResponsesAdapter, OpenAIResponsesWire, ResponsesAdapterSettings

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["DEFAULT_BASE_URL", "IDLE_TIMEOUT", "XAIAdapter", "XAIResponsesWire"]

DEFAULT_BASE_URL = "https://api.x.ai/v1"
#: seconds without content a request may wait, unless it sets ``idle_timeout`` (rule 2)
IDLE_TIMEOUT = 900.0


class XAIResponsesWire(OpenAIResponsesWire):
    """The Responses wire as xAI serves it (rules 1-3)."""

    provider_name: str | None = "x_ai"
    idle_timeout: float | None = IDLE_TIMEOUT

    def resumable(self, options: GenerateOptions) -> bool:
        return False  # rule 3: xAI has no background mode

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return None  # rule 3


class XAIAdapter(OpenAIResponsesAdapter):
    """Stream from xAI's Responses API (the ``xai`` route; see the module docstring)."""

    default_name = "xAI"
    default_base_url = DEFAULT_BASE_URL
    own_key_env = "XAI_API_KEY"
    wire_class: type[OpenAIResponsesWire] = XAIResponsesWire

    def __init__(
        self,
        *,
        key_env: str | None = "XAI_API_KEY",
        **given: Unpack[ResponsesAdapterSettings],
    ) -> None:
        given.setdefault("reasoning_summary", None)  # xAI's default: no summary asked for
        super().__init__(key_env=key_env, **given)
