"""The figures of a context overflow: the window and the tokens a request needed, read
from the provider's own error text, so a ``CONTEXT_WINDOW_EXCEEDED`` failure can say by
how much.

Contract: stdlib only, pure, bounded (only the first 4,000 characters are read).

1. :func:`context_figures` returns ``(limit, requested)`` — both positive ints, the
   requested count above the limit — or ``None`` when the text gives no such pair.
2. The wordings read (each provider's own, numbers with or without thousands commas):
   OpenAI, OpenRouter and vLLM ``maximum context length is N tokens. However, you
   requested M tokens`` / ``your messages resulted in M tokens`` / ``your request has M
   input tokens``; Anthropic ``prompt is too long: M tokens > N maximum`` and
   ``exceed context limit: A + B > N``; Gemini ``The input token count (M) exceeds the
   maximum number of tokens allowed (N)``; llama.cpp ``request (M tokens) exceeds the
   available context size (N tokens)``; xAI ``maximum prompt length is N but the request
   contains M tokens``; Mistral ``Prompt contains M tokens ... too large for model with N
   maximum context length``.
3. Only figures are taken, never text: the headline built from them stays free of
   upstream wording.
"""

from __future__ import annotations

import re

__all__ = ["context_figures"]

_READ_MAX = 4000
_N = r"(\d[\d,]{0,14})"
# (pattern, group of the limit, groups summed for the requested count)
_PATTERNS: tuple[tuple[re.Pattern[str], int, tuple[int, ...]], ...] = (
    (
        re.compile(
            rf"maximum context length is {_N} tokens.{{0,80}}?(?:requested|resulted in|request has) {_N}"
            r"(?: input)? tokens",
            re.I | re.S,
        ),
        1,
        (2,),
    ),
    (re.compile(rf"prompt is too long:\s*{_N} tokens\s*>\s*{_N}", re.I), 2, (1,)),
    (re.compile(rf"exceed context limit:\s*{_N}\s*\+\s*{_N}\s*>\s*{_N}", re.I), 3, (1, 2)),
    (
        re.compile(rf"input token count \(?{_N}\)? exceeds the maximum number of tokens allowed \(?{_N}\)?", re.I),
        2,
        (1,),
    ),
    (
        re.compile(rf"request \({_N} tokens\) exceeds the available context size \({_N} tokens\)", re.I),
        2,
        (1,),
    ),
    (re.compile(rf"maximum prompt length is {_N} but the request contains {_N} tokens", re.I), 1, (2,)),
    (re.compile(rf"prompt contains {_N} tokens.{{0,60}}?too large for model with {_N} maximum", re.I | re.S), 2, (1,)),
)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def context_figures(text: str | None) -> tuple[int, int] | None:
    """``(limit, requested)`` from a provider's overflow message, or ``None`` (rule 1)."""
    if not text:
        return None
    head = text[:_READ_MAX]
    for pattern, limit_group, requested_groups in _PATTERNS:
        match = pattern.search(head)
        if match is None:
            continue
        limit = _number(match.group(limit_group))
        requested = sum(_number(match.group(g)) for g in requested_groups)
        if 0 < limit < requested:
            return limit, requested
    return None
