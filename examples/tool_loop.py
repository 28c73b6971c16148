"""A complete tool loop against any OpenAI-compatible server (a local llama.cpp here).

    scripts/model-server.sh start   # prints DSHSTREAM_TEST_SERVER=...
    DSHSTREAM_TEST_SERVER=http://127.0.0.1:PORT python examples/tool_loop.py
"""

from __future__ import annotations

import json
import os

from dshstream import (
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    ToolArgumentsError,
    ToolSpec,
    parse_tool_arguments,
)

WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def get_weather(city: str) -> dict[str, object]:
    return {"city": city, "temp_c": 18, "sky": "clear"}


def main() -> None:
    base = os.environ.get("DSHSTREAM_TEST_SERVER", "http://127.0.0.1:8080")
    service = LlmService()
    service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{base}/v1", dialect="llamacpp"))
    history = [Message.user("What is the weather in Paris? Use the tool.")]
    for _ in range(4):
        options = GenerateOptions(
            provider="local", model="local", messages=tuple(history), tools=(WEATHER,),
            max_tokens=128, temperature=0.0,
        )
        result = service.stream(options).result().raise_for_failure()
        history.append(result.message())
        if not result.tool_calls:
            print(result.text)
            return
        for call in result.tool_calls:
            try:
                args = parse_tool_arguments(call)  # refuses truncated or invalid arguments
            except ToolArgumentsError as exc:
                history.append(Message.tool_result(call.id, exc.failure.message, is_error=True))
                continue
            history.append(Message.tool_result(call.id, json.dumps(get_weather(**args))))


if __name__ == "__main__":
    main()
