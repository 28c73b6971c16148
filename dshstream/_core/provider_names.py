"""The OpenTelemetry GenAI conventions' well-known ``gen_ai.provider.name`` values, and
the one of an API root by its host.

Contract (plain data and one pure function, stdlib only):

1. :data:`WELL_KNOWN_HOSTS` maps a provider's own API host (exact, or a suffix starting
   with a dot) to the conventions' well-known value (``registry/attributes/gen-ai.md``:
   ``openai``, ``anthropic``, ``aws.bedrock``, ``azure.ai.openai``, ``gcp.gemini``,
   ``gcp.vertex_ai``, ``deepseek``, ``groq``, ``mistral_ai``, ``x_ai``, ``perplexity``,
   ``cohere``, ``ibm.watsonx.ai``).
2. :func:`provider_name_for_url` is the value for an API root, or ``None`` for any other
   host (a gateway, a local server). An adapter is named by the host of its own API (its
   default base URL): an ``AnthropicAdapter`` is ``anthropic`` whatever route name it was
   registered under and wherever its ``base_url`` points. A wire that knows its API (the chat
   dialect table, Gemini, Vertex, Bedrock, Azure, xAI) names it itself
   (:attr:`~dshstream._adapters.wire.Wire.provider_name`); this is the fallback.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["WELL_KNOWN_HOSTS", "provider_name_for_url"]

#: API host (or ``.suffix``) -> well-known ``gen_ai.provider.name`` (rule 1)
WELL_KNOWN_HOSTS: dict[str, str] = {
    "api.openai.com": "openai",
    "api.anthropic.com": "anthropic",
    "generativelanguage.googleapis.com": "gcp.gemini",
    "aiplatform.googleapis.com": "gcp.vertex_ai",
    "-aiplatform.googleapis.com": "gcp.vertex_ai",  # regional hosts: us-central1-aiplatform...
    ".amazonaws.com": "aws.bedrock",  # bedrock-runtime.<region>.amazonaws.com (checked below)
    ".openai.azure.com": "azure.ai.openai",
    ".services.ai.azure.com": "azure.ai.openai",
    ".cognitiveservices.azure.com": "azure.ai.openai",
    "api.deepseek.com": "deepseek",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral_ai",
    "api.x.ai": "x_ai",
    "api.perplexity.ai": "perplexity",
    "api.cohere.com": "cohere",
    "api.cohere.ai": "cohere",
}


def provider_name_for_url(url: str) -> str | None:
    """The well-known provider name of the API at ``url`` (rule 2), ``None`` when its host
    is not a provider's own."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        return None
    if not host:
        return None
    exact = WELL_KNOWN_HOSTS.get(host)
    if exact is not None:
        return exact
    for suffix, name in WELL_KNOWN_HOSTS.items():
        if suffix[0] in ".-" and host.endswith(suffix):
            if name == "aws.bedrock" and not host.startswith("bedrock"):
                continue  # another AWS service's host
            return name
    return None
