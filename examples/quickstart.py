"""Stream one answer from whichever provider your environment has a key for.

    OPENAI_API_KEY=... python examples/quickstart.py "Write a haiku about rivers."
"""

from __future__ import annotations

import sys

import dshstream
from dshstream import ReasoningDelta, TextDelta


def main() -> int:
    prompt = " ".join(sys.argv[1:]) or "Write a haiku about rivers."
    stream = dshstream.stream("openai", "gpt-4o-mini", prompt, max_tokens=200)
    for chunk in stream:
        if isinstance(chunk, ReasoningDelta):
            print(f"\x1b[2m{chunk.text}\x1b[0m", end="", flush=True)
        elif isinstance(chunk, TextDelta):
            print(chunk.text, end="", flush=True)
    result = stream.result()
    print(f"\n\nusage: {result.usage}\nfinish: {result.finish.kind} ({result.finish.raw})")
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
