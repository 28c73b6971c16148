"""Guard against tagless reasoning glued onto the first visible text (``the reveal.Wrrrf...``).

Contract: sans-IO and stdlib only. Some OpenAI-compatible backends move the last fragment of
the reasoning field into the first content delta. :class:`ReasoningSpillGuard` is armed by
:meth:`~ReasoningSpillGuard.observe_reasoning` (non-empty reasoning before any visible
text); :meth:`~ReasoningSpillGuard.filter_content` then returns ``(content, spilled)`` for
each content delta, where ``spilled`` belongs to reasoning. While the first visible text is
still ambiguous it is held (``("", "")``); :meth:`~ReasoningSpillGuard.flush` releases
held text unchanged and resets the guard.

Rules, evaluated on the held text plus the new delta:

1. whitespace only → hold;
2. first non-space character not a lowercase letter (backtick, digit, uppercase, CJK…) →
   emit as is;
3. first sentence boundary among ``. ! ? 。 ！ ？`` (a ``.`` between two ASCII digits is not
   one); none → hold while shorter than 180 characters, else emit;
4. an odd number of backticks before it (inline code ``obj.Method``) → emit unchanged;
5. a run of further boundary punctuation (``...``, ``?!``) is part of it; reaching the end
   → hold (while shorter than 180);
6. the text after it: empty → hold; starting with whitespace → emit unchanged (spaced
   boundary = real prose);
7. glued, and the rest starts like an answer (opening quote/bracket/``*``/``_``, uppercase,
   titlecase or caseless letter such as CJK/Kana/Hangul, emoji) or the fragment before the
   boundary has several words → ``content`` = the rest, ``spilled`` = the fragment
   (trimmed); otherwise emit unchanged.

After emitting non-empty content the guard is disarmed for the rest of the stream.

Bounds (port decisions): the 180-character limit is positional — a boundary run that ends
at or beyond 180 characters of text never splits — and leading whitespace of 180
characters or more gives up; rule 6 emits at once instead of holding a whitespace
remainder (the outcome is the same). So held text is under 360 characters, each call costs
O(held + delta), and the output does not depend on how the content was cut into deltas.
"""

from __future__ import annotations

import unicodedata
from bisect import bisect_right

__all__ = ["ReasoningSpillGuard", "MAX_PENDING_CONTENT_CHARS", "looks_like_answer_start"]

#: Longest sentence fragment (and leading whitespace) the guard will hold.
MAX_PENDING_CONTENT_CHARS = 180

_BOUNDARY = frozenset(".!?。！？")
_DIGITS = frozenset("0123456789")
_ANSWER_OPENERS = frozenset("*_([{\"'“”‘’「『（")

# Unicode Extended_Pictographic (emoji-data), as inclusive code point ranges.
_PICTOGRAPHIC: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171), (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A), (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D), (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF), (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)  # fmt: skip
_PICTO_STARTS = [lo for lo, _ in _PICTOGRAPHIC]


def _is_pictographic(char: str) -> bool:
    cp = ord(char)
    i = bisect_right(_PICTO_STARTS, cp) - 1
    return i >= 0 and cp <= _PICTOGRAPHIC[i][1]


def looks_like_answer_start(text: str) -> bool:
    """True when ``text`` begins like a real answer: a markdown/quote/bracket opener, an
    uppercase, titlecase or caseless letter (CJK, Kana, Hangul…), or an emoji."""
    if not text:
        return False
    first = text[0]
    if first in _ANSWER_OPENERS:
        return True
    if unicodedata.category(first) in ("Lu", "Lo", "Lt"):
        return True
    return _is_pictographic(first)


def _is_lowercase_letter(char: str) -> bool:
    return char == char.lower() and char != char.upper()


def _first_boundary(core: str) -> int:
    for index, char in enumerate(core):
        if char not in _BOUNDARY:
            continue
        if (
            char == "."
            and index > 0
            and core[index - 1] in _DIGITS
            and index + 1 < len(core)
            and core[index + 1] in _DIGITS
        ):
            continue
        return index
    return -1


_HOLD = None


def _evaluate(candidate: str) -> tuple[str, str] | None:
    """``None`` to hold, else ``(content, spilled)``."""
    limit = MAX_PENDING_CONTENT_CHARS
    core = candidate.lstrip()
    leading = len(candidate) - len(core)
    if leading >= limit:
        return candidate, ""
    if not core:
        return _HOLD
    if not _is_lowercase_letter(core[0]):
        return candidate, ""
    boundary = _first_boundary(core)
    if boundary == -1:
        return _HOLD if len(core) < limit else (candidate, "")
    if core.count("`", 0, boundary) % 2 == 1:
        return candidate, ""
    end = boundary + 1
    while end < len(core) and core[end] in _BOUNDARY:
        end += 1
    if end >= limit:
        return candidate, ""
    if end >= len(core):
        return _HOLD
    remainder = core[end:]
    if remainder[0].isspace():
        return candidate, ""
    fragment = core[:end]
    multi_word = any(c.isspace() for c in fragment.strip())
    if looks_like_answer_start(remainder) or multi_word:
        return remainder, (candidate[:leading] + fragment).strip()
    return candidate, ""


class ReasoningSpillGuard:
    """Move a reasoning tail glued onto the first content delta back to reasoning."""

    __slots__ = ("_armed", "_started", "_pending")

    def __init__(self) -> None:
        self._armed = False
        self._started = False
        self._pending = ""

    def observe_reasoning(self, text: str) -> None:
        """Record reasoning text; non-empty reasoning before visible content arms the guard."""
        if text and not self._started:
            self._armed = True

    def filter_content(self, text: str) -> tuple[str, str]:
        """Filter one content delta; return ``(content, spilled)`` that is now certain."""
        if not text:
            return "", ""
        if self._started or not self._armed:
            self._started = True
            return text, ""
        candidate = self._pending + text
        decision = _evaluate(candidate)
        if decision is None:
            self._pending = candidate
            return "", ""
        self._pending = ""
        self._started = bool(decision[0])
        return decision

    @property
    def settled(self) -> bool:
        """Visible content has started: everything passes through unchanged from now on."""
        return self._started and not self._pending

    def flush(self) -> tuple[str, str]:
        """End the stream: release held content unchanged and reset the guard."""
        pending = self._pending
        self._pending = ""
        self._armed = False
        self._started = False
        return pending, ""
