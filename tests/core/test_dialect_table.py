"""The dialect table (dshstream/_core/dialects.py): every OpenAI-compatible preset's base URL,
key variable, title and behaviour flags, and ``get_dialect``'s error.

To add a dialect: add its row to ``EXPECTED`` below (the test fails until the table in
dialects.py and this one agree)."""

from __future__ import annotations

import pytest

from dshstream._core.decode import WIRES
from dshstream._core.dialects import DIALECTS, Dialect, get_dialect

#: name: (base_url, key_env, title, keyless, think_tags)
EXPECTED: dict[str, tuple[str, str | None, str, bool, bool]] = {
    "openai": ("https://api.openai.com/v1", "OPENAI_API_KEY", "OpenAI", False, False),
    "deepseek": ("https://api.deepseek.com", "DEEPSEEK_API_KEY", "DeepSeek", False, False),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "OpenRouter", False, False),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY", "Groq", False, True),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY", "Mistral", False, False),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY", "xAI", False, False),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY", "Together AI", False, False),
    "perplexity": ("https://api.perplexity.ai", "PERPLEXITY_API_KEY", "Perplexity", False, True),
    "vllm": ("http://127.0.0.1:8000/v1", "VLLM_API_KEY", "vLLM", True, True),
    "ollama": ("http://127.0.0.1:11434/v1", None, "Ollama", True, True),
    "llamacpp": ("http://127.0.0.1:8080/v1", None, "llama.cpp", True, True),
    "lmstudio": ("http://127.0.0.1:1234/v1", None, "LM Studio", True, True),
    "custom": ("http://127.0.0.1:8080/v1", None, "Custom", True, True),
}

#: the dialects that send reasoning back on later turns, and how
REASONING_CONTENT_PASSBACK = {"deepseek", "llamacpp"}
REASONING_DETAILS_PASSBACK = {"openrouter"}


def test_the_table_is_exactly_the_expected_dialects() -> None:
    assert list(DIALECTS) == list(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_dialect_preset(name: str) -> None:
    dialect = get_dialect(name)
    assert isinstance(dialect, Dialect) and dialect is DIALECTS[name]
    assert dialect.name == name
    assert (dialect.base_url, dialect.key_env, dialect.title, dialect.keyless, dialect.think_tags) == EXPECTED[name]
    assert dialect.reasoning_content_passback == (name in REASONING_CONTENT_PASSBACK)
    assert dialect.reasoning_details_passback == (name in REASONING_DETAILS_PASSBACK)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_hosted_dialects_use_https_and_local_ones_loopback(name: str) -> None:
    dialect = DIALECTS[name]
    if dialect.keyless:
        assert dialect.base_url.startswith("http://127.0.0.1:")
    else:
        assert dialect.base_url.startswith("https://") and dialect.key_env is not None
        assert dialect.key_env == f"{name.upper()}_API_KEY"


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_dialect_is_a_wire(name: str) -> None:
    assert name in WIRES


def test_presets_are_immutable() -> None:
    from dataclasses import FrozenInstanceError

    with pytest.raises(FrozenInstanceError):
        get_dialect("openai").base_url = "http://elsewhere"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["nope", "", "OpenAI", "openai-chat", "anthropic"])
def test_unknown_dialect_is_a_key_error_naming_the_known_ones(name: str) -> None:
    with pytest.raises(KeyError) as info:
        get_dialect(name)
    message = str(info.value.args[0])
    assert message.startswith(f"unknown dialect {name!r}; known: ")
    assert message.endswith(", ".join(EXPECTED))
    assert info.value.__cause__ is None and info.value.__suppress_context__
