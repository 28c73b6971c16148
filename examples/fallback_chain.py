"""A fallback chain: one request, three providers, the first that can serve it answers.

Offline: stand-ins for OpenAI, Anthropic and Gemini answer on 127.0.0.1 (a 429 rate
limit, a 529 overload, an answer). Three requests go to chains:

1. ``smart`` (OpenAI, then Anthropic, then Gemini): the first two can't serve now, so
   Gemini answers; the finish's ``metadata.fallback`` says what each target did;
2. ``voice`` (Anthropic, then OpenAI) with an audio part: Anthropic takes no audio, so it
   is skipped before anything is sent to it;
3. a target that fails after its first words reached the caller: the stream ends there,
   never moving on (the caller already has part of that answer).

    python examples/fallback_chain.py
"""

from __future__ import annotations

import struct

from dshstream import (
    AnthropicAdapter,
    AssembledResponse,
    AudioPart,
    GeminiAdapter,
    GenerateOptions,
    LlmService,
    Message,
    OpenAIChatAdapter,
    Target,
)
from dshstream.testing import ReplayServer, Route

RATE_LIMITED = Route(status=429, content_type="application/json",
                     body=b'{"error": {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}}')
OVERLOADED = Route(status=529, content_type="application/json",
                   body=b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}')
GEMINI_ANSWER = (b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "The capital of France is Paris."}]},'
                 b' "finishReason": "STOP"}], "modelVersion": "gemini-2.5-flash"}\n\n')
OPENAI_ANSWER = (b'data: {"id": "c1", "model": "gpt-4o-audio-preview", "choices": [{"index": 0, "delta": {"content": '
                 b'"It says hello."}}]}\n\n'
                 b'data: {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')
FIRST_WORDS = b'data: {"id": "c2", "choices": [{"index": 0, "delta": {"content": "Once upon a time"}}]}\n\n'


def silent_wav() -> bytes:
    """A tenth of a second of silence, 16-bit mono WAV."""
    data = b"\x00\x00" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data


def show(result: AssembledResponse) -> None:
    """The chain's trail: every target tried, with what it did."""
    for target in result.metadata.fallback if result.metadata else ():
        line = f"  {target.position} {target.name}: {target.outcome}"
        if target.failure is not None:
            line += f" {target.failure.code} - {target.failure.message}"
        print(line)


def main() -> None:
    routes: dict[str, Route | bytes] = {"/openai/": RATE_LIMITED, "/anthropic/": OVERLOADED, "/gemini/": GEMINI_ANSWER,
              "/openai-audio/": OPENAI_ANSWER, "/cut-short/": Route(body=b"", script=[FIRST_WORDS])}
    with ReplayServer(routes) as server:
        service = LlmService()
        service.register_adapter(["openai"], OpenAIChatAdapter(api_key="example-key", base_url=f"{server.url}/openai/v1"))
        service.register_adapter(["anthropic"], AnthropicAdapter(api_key="example-key", base_url=f"{server.url}/anthropic"))
        service.register_adapter(["gemini"], GeminiAdapter(api_key="example-key", base_url=f"{server.url}/gemini"))
        service.register_adapter(["openai-audio"], OpenAIChatAdapter(api_key="example-key", base_url=f"{server.url}/openai-audio/v1"))
        service.register_adapter(["cut-short"], OpenAIChatAdapter(api_key="example-key", base_url=f"{server.url}/cut-short/v1"))

        # 1. each target can't serve now, until one can
        service.register_chain("smart", [
            Target("openai", "gpt-4o-mini"),
            Target("anthropic", "claude-sonnet-4-5"),
            Target("gemini", "gemini-2.5-flash"),
        ])
        question = Message.user("The capital of France?")
        result = service.stream(GenerateOptions(provider="smart", model="default", messages=(question,))).result()
        served = result.metadata.served_by if result.metadata else None
        print(f"served by {served.name if served else None}: {result.text}")
        show(result)

        # 2. a target that can't take the request is skipped: nothing is sent to it
        service.register_chain("voice", [Target("anthropic", "claude-sonnet-4-5"), Target("openai-audio", "gpt-4o-audio-preview")])
        memo = Message.user("What is said here?", AudioPart.from_bytes(silent_wav(), name="memo.wav"))
        result = service.stream(GenerateOptions(provider="voice", model="default", messages=(memo,))).result()
        served = result.metadata.served_by if result.metadata else None
        print(f"a voice memo, served by {served.name if served else None}")
        show(result)

        # 3. after content, never: the caller already has part of this target's answer
        service.register_chain("story", [Target("cut-short", "gpt-4o-mini"), Target("gemini", "gemini-2.5-flash")])
        tale = GenerateOptions(provider="story", model="default", messages=(Message.user("A story"),))
        result = service.stream(tale).result()
        assert result.failure is not None
        print(f"cut after content: {result.failure.code}")
        print(f"  {result.failure.message}")


if __name__ == "__main__":
    main()
