"""Send an image with a question, and see what each provider would receive.

One user turn — text and an ``ImagePart`` — goes to four providers' APIs on a loopback
server (OpenAI chat completions, Anthropic Messages, Gemini, Bedrock Converse), each of
which answers with a recorded stream; the example prints the user turn exactly as each
request body carried it, with the image's base64 elided. Then an audio part is offered to
Anthropic, which takes no audio: the stream ends ``INVALID_OPTIONS`` and nothing is sent.

    python examples/attach_image.py               # a small generated PNG
    python examples/attach_image.py photo.jpg     # your own image (PNG, JPEG, GIF, WEBP)
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from importlib.resources import files
from pathlib import Path
from typing import Any

from dshstream import (
    AnthropicAdapter,
    AudioPart,
    GeminiAdapter,
    GenerateOptions,
    ImagePart,
    LlmService,
    Message,
    OpenAIChatAdapter,
)
from dshstream.adapters import BedrockAdapter
from dshstream.testing import ReplayServer, Route

DEMO = files("dshstream") / "demo_data"
REAL = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "real"
BASE64 = re.compile(r"^(data:[\w/.+-]+;base64,)?[A-Za-z0-9+/]{64,}={0,2}$")


def png(width: int = 32, height: int = 32) -> bytes:
    """A small RGB gradient, as PNG (standard library only)."""
    rows = b"".join(b"\x00" + b"".join(bytes((x * 8, y * 8, 128)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def wav(seconds: float = 0.1, rate: int = 8000) -> bytes:
    """A short silent 16-bit mono WAV (standard library only)."""
    data = b"\x00\x00" * int(seconds * rate)
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", len(data)) + data)


def elide(value: Any) -> Any:
    """The request body with every base64 payload replaced by its length."""
    if isinstance(value, dict):
        return {key: elide(item) for key, item in value.items()}
    if isinstance(value, list):
        return [elide(item) for item in value]
    if isinstance(value, str):
        match = BASE64.match(value)
        if match:
            prefix = match.group(1) or ""
            return f"{prefix}<{len(value) - len(prefix)} base64 characters>"
    return value


def user_turn(path: str, body: dict[str, Any]) -> Any:
    """Where each API puts the conversation in its request body."""
    if ":streamGenerateContent" in path:
        return body["contents"][0]
    return body["messages"][0]


def main(image_path: str | None) -> int:
    image = ImagePart.from_path(image_path) if image_path else ImagePart.from_bytes(png(), name="gradient.png")
    question = Message.user("What is in this picture?", image)
    print(f"the turn: text={question.text!r} attachments={question.attachments}")

    with ReplayServer() as server:
        server.add("/v1/chat/completions", (DEMO / "openai_tool_call.sse").read_bytes())
        server.add("/v1/messages", (DEMO / "anthropic_thinking_tool_use.sse").read_bytes())
        server.add("/v1beta/models/", (DEMO / "gemini_thoughts.sse").read_bytes())
        server.add("/model/", Route(body=(REAL / "bedrock" / "nova_micro_text.eventstream").read_bytes(),
                                    content_type="application/vnd.amazon.eventstream", piece_size=4096))
        service = LlmService()
        # api_key and base_url only because every "provider" is the loopback server
        service.register_adapter(["openai"], OpenAIChatAdapter(api_key="demo-key", base_url=f"{server.url}/v1"))
        service.register_adapter(["anthropic"], AnthropicAdapter(api_key="demo-key", base_url=server.url))
        service.register_adapter(["gemini"], GeminiAdapter(api_key="demo-key", base_url=server.url))
        service.register_adapter(["bedrock"], BedrockAdapter(region="us-east-1", api_key="demo-key",
                                                             base_url=server.url))
        models = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-flash",
                  "bedrock": "us.amazon.nova-lite-v1:0"}
        for provider, model in models.items():
            sent = len(server.requests)
            options = GenerateOptions(provider=provider, model=model, messages=(question,), max_tokens=256)
            result = service.stream(options).result()
            request = server.requests[sent]
            turn = elide(user_turn(request.path, request.body))
            parts_key = "parts" if "parts" in turn else "content"
            print(f"\n{provider}: POST {request.path.split('?')[0]} -> finish {result.finish.kind}")
            print(f"  role={turn['role']!r}, {parts_key}:")
            for part in turn[parts_key]:
                print(f"    {json.dumps(part)}")

        before = len(server.requests)
        memo = AudioPart.from_bytes(wav(), name="memo.wav")
        refused = service.stream(GenerateOptions(provider="anthropic", model="claude-sonnet-4-5",
                                                 messages=(Message.user("Transcribe this.", memo),))).result()
        assert refused.failure is not None
        print(f"\nanthropic, {memo!r}:\n  {refused.failure.code}: {refused.failure.message}")
        print(f"  requests sent: {len(server.requests) - before}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else None))
