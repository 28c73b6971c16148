"""Any provider LiteLLM reaches (Bedrock, Vertex AI, watsonx, Cohere, SageMaker, ...), through
the same chunks as every other dshstream adapter.

Needs the extra: ``pip install 'dshstream[litellm]'``.

Without arguments it runs offline: two recorded streams (Anthropic thinking + a tool call,
and an OpenAI tool call) are served on 127.0.0.1 and LiteLLM's own ``anthropic/`` and
``openai/`` providers are pointed at them. With a LiteLLM model string it asks that provider
for real, with the credentials LiteLLM finds in the environment::

    python examples/litellm_any_provider.py bedrock/anthropic.claude-3-5-haiku-20241022-v1:0 "Say hi"
    python examples/litellm_any_provider.py vertex_ai/gemini-2.5-flash "Say hi"
"""

from __future__ import annotations

import os
import sys
from importlib.resources import files

# LiteLLM downloads its model price map at import unless told not to; this example stays offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from dshstream import (  # noqa: E402 - after the environment setting above
    GenerateOptions,
    LlmService,
    Message,
    ReasoningDelta,
    TextDelta,
    ToolSpec,
)
from dshstream.adapters import LiteLLMAdapter  # noqa: E402
from dshstream.testing import ReplayServer, Route  # noqa: E402

VERSION_TOOL = ToolSpec("fixed_version", "Returns the version", {"type": "object", "properties": {}})
CAPITAL_TOOL = ToolSpec("get_capital", "The capital of a country",
                        {"type": "object", "properties": {"country": {"type": "string"}}, "required": ["country"]})


def show(service: LlmService, options: GenerateOptions) -> None:
    """Stream one answer: reasoning and text as they arrive, then the assembled result."""
    stream = service.stream(options)
    for chunk in stream:
        if isinstance(chunk, ReasoningDelta):
            print(f"  [thinking] {chunk.text!r}")
        elif isinstance(chunk, TextDelta):
            print(f"  [text] {chunk.text!r}")
    result = stream.result()
    for call in result.tool_calls:
        print(f"  [tool call] {call.name}({call.arguments})")
    signed = any(getattr(block, "signature", None) for block in result.blocks)
    print(f"  finish={result.finish.kind} usage={result.usage} signed_reasoning={signed}")
    if result.failure is not None:
        print(f"  failure: {result.failure.code}: {result.failure.message}")


def offline() -> None:
    demo = files("dshstream") / "demo_data"
    with ReplayServer() as server:
        server.add("/v1/messages", (demo / "anthropic_thinking_tool_use.sse").read_bytes())
        server.add("/v1/chat/completions", (demo / "openai_tool_call.sse").read_bytes())
        service = LlmService()
        # One route per provider; each adapter is LiteLLM with a model prefix. api_key and
        # base_url are only needed here because the "providers" are the loopback server.
        service.register_adapter(["claude"], LiteLLMAdapter(model_prefix="anthropic/", api_key="demo-key",
                                                            base_url=server.url))
        service.register_adapter(["gpt"], LiteLLMAdapter(model_prefix="openai/", api_key="demo-key",
                                                         base_url=f"{server.url}/v1"))
        print("claude (LiteLLM anthropic/):")
        show(service, GenerateOptions(provider="claude", model="claude-haiku-4-5", tools=(VERSION_TOOL,),
                                      messages=(Message.user("Which version? Then a joke."),)))
        print("gpt (LiteLLM openai/):")
        show(service, GenerateOptions(provider="gpt", model="gpt-4o-mini", tools=(CAPITAL_TOOL,),
                                      messages=(Message.user("What is the capital of the UK? Use the tool."),)))


def online(model: str, question: str) -> None:
    service = LlmService()
    service.register_adapter(["litellm"], LiteLLMAdapter())
    print(f"{model}:")
    show(service, GenerateOptions(provider="litellm", model=model, messages=(Message.user(question),), timeout=120))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        online(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "Say hello in five words.")
    else:
        offline()
