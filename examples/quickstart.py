"""Stream one answer from the first provider your environment has a key for.

    OPENAI_API_KEY=... python examples/quickstart.py "Write a haiku about rivers."
    ANTHROPIC_API_KEY=... python examples/quickstart.py
"""

from __future__ import annotations

import os
import sys

import dshstream
from dshstream import ReasoningDelta, TextDelta
from dshstream.errors import recovery_tips

#: (key variable, provider id, a small current model); the first variable set wins
PROVIDERS = (
    ("OPENAI_API_KEY", "openai", "gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic", "claude-haiku-4-5"),
    ("GEMINI_API_KEY", "gemini", "gemini-2.5-flash"),
    ("GOOGLE_API_KEY", "gemini", "gemini-2.5-flash"),
    ("DEEPSEEK_API_KEY", "deepseek", "deepseek-chat"),
    ("OPENROUTER_API_KEY", "openrouter", "openai/gpt-4o-mini"),
    ("GROQ_API_KEY", "groq", "llama-3.1-8b-instant"),
    ("MISTRAL_API_KEY", "mistral", "mistral-small-latest"),
    ("XAI_API_KEY", "xai", "grok-3-mini"),
)


def main() -> int:
    prompt = " ".join(sys.argv[1:]) or "Write a haiku about rivers."
    chosen = next(((p, m) for var, p, m in PROVIDERS if os.environ.get(var)), None)
    if chosen is None:
        names = ", ".join(dict.fromkeys(var for var, _, _ in PROVIDERS))
        print(f"set one of {names} (or run `dshstream demo`, which needs no key)", file=sys.stderr)
        return 2
    provider, model = chosen
    stream = dshstream.stream(provider, model, prompt, max_tokens=200)
    for chunk in stream:
        if isinstance(chunk, ReasoningDelta):
            print(f"\x1b[2m{chunk.text}\x1b[0m", end="", flush=True)
        elif isinstance(chunk, TextDelta):
            print(chunk.text, end="", flush=True)
    result = stream.result()
    print(f"\n\n{provider} {model}\nusage: {result.usage}\nfinish: {result.finish.kind} ({result.finish.raw})")
    if result.failure is not None:
        print(f"error: {result.failure.message}", file=sys.stderr)
        for tip in recovery_tips(result.failure, credential="personal"):
            print(f"tip: {tip}", file=sys.stderr)
    return 0 if result.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
