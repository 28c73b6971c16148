"""Normalize a recorded stream without any network: bytes in, chunks and a result out.

    python examples/replay_transcript.py tests/fixtures/real/anthropic/thinking_then_tool_use.sse
"""

from __future__ import annotations

import sys

from dshstream.sansio import assemble, chunk_to_dict, decode, detect_wire


def main(path: str) -> None:
    data = open(path, "rb").read()
    wire = detect_wire(data)
    chunks = list(decode(data, wire=wire))
    for chunk in chunks:
        print(chunk_to_dict(chunk))
    result = assemble(chunks)
    print(f"\n[{wire}] text={result.text!r}\nreasoning={result.reasoning[:80]!r}...")
    print(f"tool calls={result.tool_calls}\nusage={result.usage}\nfinish={result.finish}")


if __name__ == "__main__":
    main(sys.argv[1])
