"""Ask for JSON that follows a schema and read it while it streams, on real recordings.

Offline: a real Bedrock ConverseStream answer of Claude Sonnet 4.5 to a JSON-schema
request (recorded, ``tests/fixtures/real/bedrock/claude_sonnet45_native_output.eventstream``)
is served frame by frame on 127.0.0.1, and ``BedrockAdapter`` is pointed at it:

1. ``response_format=JsonSchema(...)`` becomes Bedrock's own ``outputConfig.textFormat``
   (printed from what the server received);
2. ``stream.partial_json()`` yields a snapshot per settled piece: values only ever appear
   and grow, never change type, and the last snapshot is ``done``;
3. the same answer cut off mid-value ends ``STREAM_CLOSED``: the last snapshot keeps what
   had settled and says ``truncated``;
4. ``partial_json(chunks, tool=..., deltas=True)`` reads a recorded OpenAI tool call's
   arguments as they stream, as patch operations.

    python examples/structured_output.py
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from dshstream import GenerateOptions, JsonSchema, LlmService, Message
from dshstream.adapters import BedrockAdapter
from dshstream.sansio import decode, partial_json
from dshstream.testing import ReplayServer, Route

REAL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

CITY = JsonSchema(
    "CityInfo",
    {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string"},
            "population": {"type": "integer"},
        },
        "required": ["city", "country", "population"],
        "additionalProperties": False,
    },
    description="A city, its country and its population",
)


def frames(body: bytes) -> list[bytes]:
    """An AWS event-stream body split into its frames (each starts with its total length)."""
    out = []
    while body:
        (length,) = struct.unpack(">I", body[:4])
        out.append(body[:length])
        body = body[length:]
    return out


def served(events: list[bytes], pause: float = 0.02) -> Route:
    """Bedrock's answer as Bedrock sends it: one frame at a time, a pause between frames."""
    script: list[bytes | float] = []
    for frame in events:
        script += [frame, pause]
    return Route(body=b"", content_type="application/vnd.amazon.eventstream", script=script)


def ask(service: LlmService) -> None:
    options = GenerateOptions(
        provider="bedrock", model=MODEL, response_format=CITY,
        messages=(Message.user("What is the largest city in France?"),),
    )
    with service.stream(options) as stream:
        for snapshot in stream.partial_json():
            state = "done" if snapshot.done else "truncated" if snapshot.truncated else "partial"
            print(f"  {state:9} {snapshot.value}")
        result = stream.result()
    print(f"  finish={result.finish.kind}", end="")
    if result.failure is not None:
        print(f" ({result.failure.code})", end="")
    print(f" usage: in={result.usage.input_tokens} out={result.usage.output_tokens}" if result.usage else "")


def main() -> None:
    events = frames((REAL / "bedrock" / "claude_sonnet45_native_output.eventstream").read_bytes())
    with ReplayServer() as server:
        # the whole answer, then the same answer cut after its fourth text delta
        server.add("/model/", [served(events), served(events[:5])])
        service = LlmService()
        # api_key and base_url only because the "provider" is the loopback server
        service.register_adapter(["bedrock"], BedrockAdapter(region="us-east-1", api_key="demo-key",
                                                             base_url=server.url))
        print("Bedrock Converse, response_format=JsonSchema('CityInfo', ...):")
        ask(service)
        text_format = server.requests[0].body["outputConfig"]["textFormat"]
        print(f"  the request carried outputConfig.textFormat: type={text_format['type']!r} "
              f"name={text_format['structure']['jsonSchema']['name']!r}")
        print("The same answer, cut off mid-stream:")
        ask(service)

    print("A recorded OpenAI tool call's arguments, as patches:")
    chunks = decode((REAL / "openai" / "parallel_tool_calls.sse").read_bytes(), wire="openai-chat")
    for snapshot in partial_json(chunks, tool="get_stock_price", deltas=True):
        for op, path, value in snapshot.deltas:
            print(f"  {op:6} {path} {value!r}")
        if snapshot.done:
            print(f"  arguments: {json.dumps(snapshot.value)}")


if __name__ == "__main__":
    main()
