"""What Google's two Gemini APIs share: ``streamGenerateContent``
(:mod:`~dshstream._adapters.gemini`, Vertex too) and the Interactions API
(:mod:`~dshstream._adapters.gemini_interactions`). The body's field names differ in case;
the mapping from :class:`~dshstream._core.request.GenerateOptions` does not.

Contract:

1. **Host, key, version, models.** Both serve at :data:`DEFAULT_BASE_URL`, take a key
   from ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``, sent bare in ``x-goog-api-key``
   (:class:`GeminiKeyAdapter`), put the API version (``v1beta``; slashes stripped) first
   in every path, take the same media, and list models alike (:class:`GeminiApiWire`:
   ``GET /{api_version}/models?pageSize=1000``, ``models``, ids without their ``models/``
   prefix).
2. **Function declarations.** Each tool, in order, as ``{"name", "description",
   "parameters"}``; ``description`` only when the tool has one, ``parameters`` a copy.
3. **Sampling.** ``max_tokens``, ``temperature`` and ``stop`` become the max output
   tokens, the temperature and the stop sequences, each only when set, in that order:
   camelCase for ``streamGenerateContent``, snake_case for Interactions.
4. **Replayed turns.** A model turn whose replay state is the wire's holds its items
   (parts or steps) under a key and ``call_ids``: the call id the assembler gave each
   function call, by position. :func:`kept_replay` gives the items in order, each
   function call with its call id; a call the assembler dropped (max-tokens), or one
   without an id, is left out; a server-run call (its ``call_ids`` entry ``None``: the
   server answered it in the same turn) is kept, with ``None``. ``None``: the turn has no
   replay state of that wire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._core.media_support import GEMINI, MediaSupport
from .._core.request import GenerateOptions, Message, ToolSpec
from .auth import HeaderAuth
from .http import HttpAdapter
from .settings import HttpSettings
from .wire import ModelListFormat, Wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "DEFAULT_BASE_URL", "GeminiApiWire", "GeminiKeyAdapter", "function_declaration", "kept_replay",
    "sampling_config",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiApiWire(Wire):
    """A wire of the Gemini API: its version, media and model list (rule 1)."""

    media: MediaSupport | None = GEMINI
    models_format = ModelListFormat(list_key="models", id_key="name", name_key="displayName", id_prefix="models/")

    def __init__(self, base_url: str, title: str, *, api_version: str = "v1beta") -> None:
        super().__init__(base_url, title)
        #: the API version in every path (``v1beta``)
        self.api_version = api_version.strip("/")

    def models_url(self) -> str | None:
        return f"{self.base_url}/{self.api_version}/models?pageSize=1000"


class GeminiKeyAdapter(HttpAdapter):
    """An adapter of the Gemini API's host: its URL, its key variables, the key in
    ``x-goog-api-key`` (rule 1)."""

    default_base_url = DEFAULT_BASE_URL
    key_env: tuple[str, ...] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    wire: GeminiApiWire

    def __init__(self, **settings: Unpack[HttpSettings]) -> None:
        super().__init__(**settings)
        self.auth_flow = HeaderAuth(self.credential, "x-goog-api-key", "")

    @property
    def api_version(self) -> str:
        """The API version in every path (the wire's)."""
        return self.wire.api_version


def function_declaration(tool: ToolSpec) -> dict[str, Any]:
    """One tool's declaration (rule 2)."""
    return {
        "name": tool.name,
        **({"description": tool.description} if tool.description else {}),
        "parameters": dict(tool.parameters),
    }


def sampling_config(options: GenerateOptions, *, snake: bool) -> dict[str, Any]:
    """The sampling fields of a generation config, in the API's case (rule 3)."""
    config: dict[str, Any] = {}
    if options.max_tokens is not None:
        config["max_output_tokens" if snake else "maxOutputTokens"] = options.max_tokens
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if options.stop:
        config["stop_sequences" if snake else "stopSequences"] = list(options.stop)
    return config


def kept_replay(
    message: Message, wire: str, key: str, is_call: Callable[[Mapping[str, Any]], bool]
) -> list[tuple[dict[str, Any], str | None]] | None:
    """The replayed items under ``key`` with each function call's call id (``None`` for
    other items), calls the assembler did not keep left out (rule 4)."""
    replay = message.replay_state
    if not (isinstance(replay, dict) and replay.get("wire") == wire and isinstance(replay.get(key), list)):
        return None
    kept = {call.id for call in message.tool_calls}
    call_ids = replay.get("call_ids")
    call_ids = call_ids if isinstance(call_ids, list) else []
    items: list[tuple[dict[str, Any], str | None]] = []
    position = 0
    for item in replay[key]:
        if not isinstance(item, dict):
            continue
        call_id = None
        if is_call(item):
            server_run = position < len(call_ids) and call_ids[position] is None
            call_id = call_ids[position] if position < len(call_ids) else None
            position += 1
            if not server_run and (not isinstance(call_id, str) or call_id not in kept):
                continue  # dropped by the assembler (max-tokens)
        items.append((item, call_id))
    return items
