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
   What shapes the body (``default_max_tokens``, ``thinking_budgets``, ``thinking_mode``,
   ``structured_output``, ``eager_input_streaming``) is one group of keyword settings,
   :class:`ClaudeSettings`, that every Claude route's adapter takes and hands to its wire
   (:func:`split_claude`); absent ones take :class:`MessagesBody`'s defaults.
3. **Models.** ``GET /v1/models?limit=1000``, ``display_name`` as the name.
4. **Server-side fallback.** ``fallbacks=`` (``"default"``, or a sequence of mappings with
   ``model`` and, each optional, ``max_tokens``, ``thinking``, ``output_config``,
   ``speed``: the API's ``BetaFallbackParam``, every other key refused) is sent as the
   body's ``fallbacks`` with ``anthropic-beta: server-side-fallback-2026-07-01``; a
   caller's own ``anthropic-beta`` header is joined with it, never replaced. A malformed
   chain is a ``ConfigurationError`` naming the field, when the adapter is built; what the
   stream says of the hops is the translator's (``metadata.server_fallbacks``).
5. **Containers.** The latest assistant turn whose replay state names a code-execution
   container (translator rule 6) sends it as the request's ``container``, so the
   conversation keeps its files and state; a ``container`` in ``extra_body`` wins. A
   wire whose host has no containers (Vertex) sets :attr:`AnthropicWire.replays_container`
   false.
6. **Compatible servers.** ``dialect=`` names a preset of
   :mod:`~dshstream._core.messages_dialects` (``deepseek``, ``lmstudio``, ``ollama``): its
   base URL, key variable (read for its own host only), title and quirks — no media parts
   where the server takes none, a response format as a forced tool, no ``count_tokens``
   and no ``fallbacks=`` where the server does not document them (refused when the
   adapter is built), no prompt caching (a ``ConfigurationError`` before sending: none
   documents ``cache_control``), and a placeholder ``x-api-key`` where the server wants
   one it ignores.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Union, cast

from .._core.messages_dialects import MESSAGES_DIALECTS, MessagesDialect
from .._core.request import GenerateOptions
from .._core.validate import check_choice, check_mapping, check_positive_int, check_str, describe, invalid
from .._core.wires.anthropic import WIRE, AnthropicTranslator
from .._core.wires.translator import Translator
from .auth import HeaderAuth
from .http import HttpAdapter
from .messages_body import MessagesBody, MessagesSettings
from .settings import HttpSettings, split_settings
from .structured_output import unwrapped
from .wire import ModelListFormat, Wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
#: the beta a request with ``fallbacks`` needs (rule 4)
FALLBACK_BETA = "server-side-fallback-2026-07-01"
#: the keys of one ``fallbacks`` entry (the API refuses any other at parse time)
FALLBACK_FIELDS = ("model", "max_tokens", "thinking", "output_config", "speed")

#: ``fallbacks=``: the API's default chain, or entries of ``FALLBACK_FIELDS``
Fallbacks = Union[Literal["default"], Sequence[Mapping[str, Any]]]


class ClaudeSettings(HttpSettings, MessagesSettings, total=False):
    """The keyword settings of every Claude route's adapter (rule 2): every HTTP
    adapter's and the Messages body's."""


def split_claude(given: ClaudeSettings) -> tuple[HttpSettings, MessagesSettings]:
    """``given`` as the HTTP adapter's settings and the Messages body's (rule 2)."""
    settings, claude = split_settings(given, MessagesSettings.__optional_keys__)
    return settings, cast(MessagesSettings, claude)

__all__ = [
    "AnthropicAdapter", "AnthropicWire", "DEFAULT_BASE_URL", "DEFAULT_VERSION", "FALLBACK_BETA", "Fallbacks",
    "check_fallbacks",
]


def check_fallbacks(value: object, field: str) -> str | list[dict[str, Any]] | None:
    """``fallbacks=`` validated (rule 4): ``None``, ``"default"``, or a non-empty sequence of
    entries with a ``model`` and only the API's override keys, copied."""
    if value is None or value == "default":
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or not value:
        raise invalid(
            f"{field} must be 'default' or a non-empty list of {{'model': ...}} entries, got {describe(value)}",
            wrong_type=not isinstance(value, Sequence),
        )
    chain: list[dict[str, Any]] = []
    for i, raw in enumerate(value):
        entry = dict(check_mapping(raw, f"{field}[{i}]"))
        unknown = sorted(str(key) for key in entry if key not in FALLBACK_FIELDS)
        if unknown:
            raise invalid(f"{field}[{i}] has unknown key {unknown[0]!r}; known: {', '.join(FALLBACK_FIELDS)}")
        check_str(entry.get("model"), f"{field}[{i}].model")
        if entry.get("max_tokens") is not None:
            check_positive_int(entry["max_tokens"], f"{field}[{i}].max_tokens")
        for name in ("thinking", "output_config"):
            if entry.get(name) is not None:
                check_mapping(entry[name], f"{field}[{i}].{name}")
        if entry.get("speed") is not None:
            check_choice(entry["speed"], f"{field}[{i}].speed", ("standard", "fast"))
        chain.append(copy.deepcopy(entry))
    return chain


class AnthropicWire(MessagesBody, Wire):
    """The Messages API request (:class:`MessagesBody`'s body) and translator (rule 1)."""

    models_path: str | None = "/v1/models?limit=1000"
    models_format = ModelListFormat(name_key="display_name")
    #: whether a replayed turn's container goes as the request's ``container`` (rule 5)
    replays_container = True
    #: whether the host has ``count_tokens`` (a compatible server may not: rule 6)
    counts_tokens = True

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        anthropic_version: str = DEFAULT_VERSION,
        fallbacks: str | list[dict[str, Any]] | None = None,
        betas: Sequence[str] = (),
        **claude: Unpack[MessagesSettings],
    ) -> None:
        Wire.__init__(self, base_url, title)
        MessagesBody.__init__(self, label=title, **claude)
        #: the ``anthropic-version`` header sent with every call
        self.anthropic_version = anthropic_version
        #: the server-side fallback chain sent with every request (``None``: none; rule 4)
        self.fallbacks = fallbacks
        needed = [FALLBACK_BETA] if fallbacks is not None else []
        #: the ``anthropic-beta`` values sent with every call (rule 4)
        self.betas: tuple[str, ...] = tuple(dict.fromkeys([*betas, *needed]))

    def protocol_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.anthropic_version}
        if self.betas:
            headers["anthropic-beta"] = ",".join(self.betas)
        return headers

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/v1/messages"

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        body = MessagesBody.build_body(self, options)
        if self.fallbacks is not None and "fallbacks" not in body:
            body["fallbacks"] = copy.deepcopy(self.fallbacks)  # a body may be altered by its caller
        if self.replays_container and "container" not in body:
            container = replayed_container(options)
            if container is not None:
                body["container"] = container  # rule 5: the conversation keeps its container
        return body

    #: the fields ``POST /v1/messages/count_tokens`` takes of a stream's body (wire rule 7)
    COUNT_FIELDS = frozenset(
        {"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers", "cache_control"}
    )

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/v1/messages/count_tokens" if self.counts_tokens else None

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {key: value for key, value in self.build_body(options).items() if key in self.COUNT_FIELDS}

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        translator = AnthropicTranslator(
            provider=options.provider, request_id=request_id, max_tokens=options.max_tokens
        )
        if options.response_format is None:  # no forced tool without one (forced_tool_name)
            return translator
        return unwrapped(translator, self.forced_tool_name(options))


def replayed_container(options: GenerateOptions) -> str | None:
    """The container id the latest assistant turn's replay state names (rule 5)."""
    for message in reversed(options.messages):
        replay = message.replay_state if message.role == "assistant" else None
        if isinstance(replay, dict) and replay.get("wire") == WIRE:
            container = replay.get("container")
            if isinstance(container, str) and container:
                return container
    return None


def split_betas(headers: dict[str, str]) -> list[str]:
    """A caller's ``anthropic-beta`` values, removed from ``headers`` to be joined with the
    wire's own (rule 4)."""
    found: list[str] = []
    for name in [name for name in headers if name.lower() == "anthropic-beta"]:
        found += [part.strip() for part in headers.pop(name).split(",") if part.strip()]
    return found


class AnthropicAdapter(HttpAdapter):
    """Stream Claude models through the Anthropic Messages API (rule 2), or a server that
    speaks it (``dialect=``, rule 6)."""

    default_name = "Anthropic"
    default_base_url = DEFAULT_BASE_URL
    key_env: tuple[str, ...] = ("ANTHROPIC_API_KEY",)

    def __init__(
        self,
        *,
        anthropic_version: str = DEFAULT_VERSION,
        fallbacks: Fallbacks | None = None,
        dialect: str = "anthropic",
        **given: Unpack[ClaudeSettings],
    ) -> None:
        settings, claude = split_claude(given)
        name = type(self).__name__
        preset: MessagesDialect = MESSAGES_DIALECTS[check_choice(dialect, f"{name}.dialect", MESSAGES_DIALECTS)]
        chain = check_fallbacks(fallbacks, f"{name}.fallbacks")
        if chain is not None and not preset.native_extras:
            raise invalid(f"{name}.fallbacks: {preset.title} ignores anthropic-beta (no server-side fallback)")
        settings.setdefault("title", preset.title if preset.name != "anthropic" else None)
        super().__init__(
            default_base_url=preset.base_url, key_env=(preset.key_env,) if preset.key_env else (), **settings
        )
        #: the compatible server's preset (rule 6)
        self.dialect = preset
        betas = split_betas(self.extra_headers)
        self.wire: AnthropicWire = AnthropicWire(
            self.base_url, self.title, anthropic_version=anthropic_version, fallbacks=chain, betas=betas, **claude
        )
        if not preset.native_extras:  # rule 6: what the server does not document
            self.wire.native_structured_host = False
            self.wire.counts_tokens = False
            self.wire.caches_prompts = False
            self.wire.models_path = "/v1/models" if preset.models else None
        if not preset.media:
            self.wire.media = None
        if preset.placeholder_key and self.credential.value is None:
            self.extra_headers.setdefault("x-api-key", preset.placeholder_key)  # not a secret: ignored
        self.auth_flow = HeaderAuth(self.credential, "x-api-key", "")

    @property
    def anthropic_version(self) -> str:
        """The API version requests are sent with (the wire's)."""
        return self.wire.anthropic_version
