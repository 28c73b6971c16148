"""Named presets of the Anthropic Messages wire served by others (``POST /v1/messages``):
default base URL, the environment variable holding the key, and the few behaviours that
differ per server, as each documents them.

Contract: plain data, stdlib only. :class:`~dshstream._adapters.anthropic.AnthropicAdapter`
(``dialect=``) reads these flags; no other module special-cases a server by name.

1. ``anthropic``: the Claude API itself (every feature).
2. ``deepseek`` (api-docs.deepseek.com, *Anthropic API*): ``https://api.deepseek.com/anthropic``
   with ``DEEPSEEK_API_KEY`` in ``x-api-key``; ``anthropic-beta`` and ``container`` are
   ignored (so no server-side fallback, no container reuse), ``output_config`` takes only
   ``effort`` (a response format goes as a forced tool), image and document blocks are not
   supported, thinking's ``budget_tokens`` is ignored; an unknown model name is mapped to a
   DeepSeek model.
3. ``lmstudio`` (lmstudio.ai, *Anthropic Compatible Endpoints*, LM Studio 0.4.1 and later):
   ``http://127.0.0.1:1234``, no key unless *Require Authentication* is on (then its token
   in ``x-api-key``, ``LM_API_TOKEN`` in its examples).
4. ``ollama`` (docs.ollama.com, *Anthropic compatibility*, Ollama 0.14 and later):
   ``http://127.0.0.1:11434`` (no ``/v1``: the client adds ``/v1/messages``); a key is
   "required but ignored", so a placeholder is sent.
5. None of the three documents native structured outputs (``output_config.format``), the
   ``count_tokens`` endpoint or the beta features: a response format is a forced tool, and
   ``fallbacks=`` is refused on them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MessagesDialect:
    """One server family that speaks the Anthropic Messages API."""

    name: str
    base_url: str
    key_env: str | None
    title: str
    #: the server needs no key
    keyless: bool = False
    #: sent when no key is set: a server whose clients must send one it ignores (rule 4)
    placeholder_key: str | None = None
    #: image and document blocks are taken
    media: bool = True
    #: ``output_config.format``, ``count_tokens``, the ``anthropic-beta`` features (rule 5)
    native_extras: bool = False
    #: ``GET /v1/models`` answers
    models: bool = False


MESSAGES_DIALECTS: dict[str, MessagesDialect] = {
    d.name: d
    for d in (
        MessagesDialect(
            "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY", "Anthropic", native_extras=True, models=True
        ),
        MessagesDialect("deepseek", "https://api.deepseek.com/anthropic", "DEEPSEEK_API_KEY", "DeepSeek", media=False),
        MessagesDialect("lmstudio", "http://127.0.0.1:1234", None, "LM Studio", keyless=True),
        MessagesDialect("ollama", "http://127.0.0.1:11434", None, "Ollama", keyless=True, placeholder_key="ollama"),
    )
}


def get_messages_dialect(name: str) -> MessagesDialect:
    """The preset called ``name``; raises ``KeyError`` listing the known names."""
    try:
        return MESSAGES_DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown Messages dialect {name!r}; known: {', '.join(MESSAGES_DIALECTS)}") from None
