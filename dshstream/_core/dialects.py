"""Named presets of the OpenAI chat-completions wire: default base URL, the environment
variable holding the key, and the few behaviours that differ per server.

Contract: plain data, stdlib only. The translator and the adapter read these flags; no
other module special-cases a dialect by name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Dialect:
    """One OpenAI-compatible server family."""

    name: str
    base_url: str
    key_env: str | None
    #: strip ``<think>`` tags from content into reasoning by default
    think_tags: bool = False
    #: send ``reasoning_content`` back on every assistant turn that had reasoning
    reasoning_content_passback: bool = False
    #: send ``reasoning_details`` back (OpenRouter)
    reasoning_details_passback: bool = False
    #: the server needs no key
    keyless: bool = False
    #: how a JSON schema is asked for: ``"response_format"`` (OpenAI's ``json_schema``
    #: response format), ``"json_schema"`` (a top-level schema field: llama.cpp's
    #: grammar-constrained sampling), ``""`` (the server has no schema mode)
    schema_via: str = "response_format"
    #: the server takes JSON mode (``response_format: {"type": "json_object"}``)
    json_mode: bool = True
    #: where the model list is, under ``base_url``
    models_path: str = "/models"
    #: read ``<tool_call>`` markup the model wrote in its text as calls of the request's
    #: tools (a local server that may leave the model's tool template unparsed)
    tool_markup: bool = False
    #: display name
    title: str = ""


DIALECTS: dict[str, Dialect] = {
    d.name: d
    for d in (
        Dialect("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", title="OpenAI"),
        Dialect(
            "deepseek",
            "https://api.deepseek.com",
            "DEEPSEEK_API_KEY",
            reasoning_content_passback=True,
            schema_via="",
            title="DeepSeek",
        ),
        Dialect(
            "openrouter",
            "https://openrouter.ai/api/v1",
            "OPENROUTER_API_KEY",
            reasoning_details_passback=True,
            title="OpenRouter",
        ),
        # reasoning_format "raw" (the default for Qwen 3 and R1 distills unless asked):
        # the reasoning comes inside <think> tags in the content
        Dialect("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", think_tags=True, title="Groq"),
        Dialect("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY", title="Mistral"),
        Dialect("xai", "https://api.x.ai/v1", "XAI_API_KEY", title="xAI"),
        Dialect("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY", title="Together AI"),
        # Sonar: search results on every chunk (chat wire rule 3); reasoning models answer
        # after a <think> section; JSON schema output, no JSON mode; models at /v1/models
        Dialect(
            "perplexity",
            "https://api.perplexity.ai",
            "PERPLEXITY_API_KEY",
            think_tags=True,
            json_mode=False,
            models_path="/v1/models",
            title="Perplexity",
        ),
        Dialect(
            "vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", think_tags=True, keyless=True, tool_markup=True,
            title="vLLM",
        ),
        Dialect(
            "ollama", "http://127.0.0.1:11434/v1", None, think_tags=True, keyless=True, tool_markup=True,
            title="Ollama",
        ),
        Dialect(
            "llamacpp",
            "http://127.0.0.1:8080/v1",
            None,
            think_tags=True,
            keyless=True,
            reasoning_content_passback=True,
            schema_via="json_schema",
            tool_markup=True,
            title="llama.cpp",
        ),
        Dialect(
            "lmstudio",
            "http://127.0.0.1:1234/v1",
            None,
            think_tags=True,
            keyless=True,
            json_mode=False,
            tool_markup=True,
            title="LM Studio",
        ),
        Dialect(
            "custom", "http://127.0.0.1:8080/v1", None, think_tags=True, keyless=True, tool_markup=True, title="Custom"
        ),
    )
}


def get_dialect(name: str) -> Dialect:
    """The preset called ``name``; raises ``KeyError`` listing the known names."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise KeyError(f"unknown dialect {name!r}; known: {', '.join(DIALECTS)}") from None
