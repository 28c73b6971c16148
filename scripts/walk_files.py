"""Which of dshstream's files one stream walks through, from ``LlmService.stream`` to the
first decoded byte (the framer's first ``feed`` or ``feed_with``), on a loopback replay server.

Usage: ``python scripts/walk_files.py [-v] [openai|anthropic|gemini|bedrock]`` (``-v``: every
file entry, with the function entered). Prints the files
in the order they are first entered, the number of file entries, and how many of those
are returns into a file already visited. Setup work (imports, adapter construction, the
server's thread) is not counted: only the calling thread, between ``stream()`` and the
first ``feed``. A development aid for the floor plan (CONTRIBUTING: "the walk"), not a test.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import dshstream  # noqa: E402
from dshstream._replay_server import ReplayServer  # noqa: E402

PACKAGE = str(Path(dshstream.__file__).parent) + os.sep
FIXTURES = ROOT / "tests" / "fixtures"


def _adapter(name: str, url: str) -> tuple[Any, str, bytes]:
    import dshstream as adapters
    from dshstream import adapters as more

    if name == "openai":
        body = b'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\ndata: [DONE]\n\n'
        return adapters.OpenAIChatAdapter(base_url=url + "/v1", api_key="walk"), "/v1/chat/completions", body
    if name == "anthropic":
        body = (
            b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":1}}}\n\n'
            b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        )
        return adapters.AnthropicAdapter(base_url=url, api_key="walk"), "/v1/messages", body
    if name == "gemini":
        body = b'data: {"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}]}\n\n'
        return adapters.GeminiAdapter(base_url=url, api_key="walk"), "/v1beta/models", body
    if name == "bedrock":
        adapter = more.BedrockAdapter(
            region="us-east-1",
            base_url=url,
            credentials=("AKIDWALK", "walk-secret"),
        )
        return adapter, "/model", b"\x00" * 16
    raise SystemExit(f"unknown wire {name!r}: openai, anthropic, gemini or bedrock")


def main(name: str, verbose: bool = False) -> int:
    server = ReplayServer().start()
    try:
        adapter, path, body = _adapter(name, server.url)
        server.add(path, body)
        service = dshstream.LlmService()
        service.register_adapter(["walk"], adapter)
        options = dshstream.GenerateOptions(provider="walk", model="m", messages=[dshstream.Message.user("hi")])
        entries: list[str] = []
        names: list[str] = []
        stop = False

        def profile(frame: FrameType, event: str, arg: object) -> None:
            nonlocal stop
            if stop or event != "call":
                return
            filename = frame.f_code.co_filename
            if not filename.startswith(PACKAGE):
                return
            relative = filename[len(PACKAGE) :]
            if not entries or entries[-1] != relative:
                entries.append(relative)
                names.append(frame.f_code.co_name)
            if frame.f_code.co_name in ("feed", "feed_with") and relative in ("_core/sse.py", "_core/eventstream.py"):
                stop = True

        stream = service.stream(options)
        sys.setprofile(profile)
        try:
            next(iter(stream), None)
        finally:
            sys.setprofile(None)
            stream.close()
    finally:
        server.stop()
    if verbose:
        for entry, code in zip(entries, names):
            print(f"     {entry}: {code}")
    seen: list[str] = []
    returns = 0
    for entry in entries:
        if entry in seen:
            returns += 1
        else:
            seen.append(entry)
    for number, file in enumerate(seen, 1):
        print(f"{number:3d}  {file}")
    print(f"{len(seen)} files, {len(entries)} file entries, {returns} of them returns to a file already visited")
    return 0


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != "-v"]
    raise SystemExit(main(arguments[0] if arguments else "openai", "-v" in sys.argv[1:]))
