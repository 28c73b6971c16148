"""A complete tool loop against any OpenAI-compatible server (a local llama.cpp here).

``run_tools`` streams each step live, runs the calls the model asks for (never one whose
arguments were cut off or are not JSON), sends the results back and repeats until the
model answers; a failed step raises ``ToolLoopError`` with the history so far.

    scripts/model-server.sh start   # prints DSHSTREAM_TEST_SERVER=...
    DSHSTREAM_TEST_SERVER=http://127.0.0.1:PORT python examples/tool_loop.py
"""

from __future__ import annotations

import os
import sys

from dshstream import (
    BlockEnd,
    Finish,
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    TextDelta,
    ToolCallBlock,
    ToolSpec,
    run_tools,
)
from dshstream.errors import ToolLoopError, recovery_tips

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def get_weather(city: str) -> dict[str, object]:
    """The tool: called with the model's arguments as keyword arguments."""
    return {"city": city, "temp_c": 18, "sky": "clear"}


def main() -> int:
    base = os.environ.get("DSHSTREAM_TEST_SERVER", "http://127.0.0.1:8080")
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{base}/v1", dialect="llamacpp"))
    options = GenerateOptions(
        provider="local", model="local", messages=(Message.user("What is the weather in Paris? Use the tool."),),
        tools=(WEATHER,), max_tokens=128, temperature=0.0, timeout=60,
    )
    loop = run_tools(service, options, {"get_weather": get_weather}, max_steps=4)
    try:
        for chunk in loop:  # the ordinary chunks of every step, live
            if isinstance(chunk, TextDelta):
                print(chunk.text, end="", flush=True)
            elif isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
                print(f"[step {loop.step}] {chunk.block.name}({chunk.block.arguments})")
            elif isinstance(chunk, Finish) and chunk.reason.kind == "stop":
                print()
        result = loop.result()
    except ToolLoopError as exc:
        print(f"\nfailed at step {exc.step}: {exc.failure.message}", file=sys.stderr)
        for tip in recovery_tips(exc.failure, "personal", shared_key=False):
            print(f"tip: {tip}", file=sys.stderr)
        return 1
    for outcome in result.outcomes:
        print(f"ran {outcome.call.name}: {outcome.status} -> {outcome.result.content}")
    usage = result.usage
    spent = f"{usage.input_tokens} in / {usage.output_tokens} out" if usage else "unknown"
    print(f"{len(result.steps)} steps ({result.stopped}), {len(result.history)} messages, tokens {spent}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
