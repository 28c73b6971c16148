"""Incremental stripper for reasoning tags (``<think>…</think>``) leaked into visible text.

Contract: sans-IO and stdlib only. :class:`ThinkTagStripper` is fed visible-text deltas in
stream order and returns ``(visible, reasoning)`` for each; :meth:`ThinkTagStripper.flush`
ends the stream and resets the stripper. Tags are ``<name>`` / ``</name>`` for each
configured name (default ``think``), optionally namespaced (``<mm:think>``),
ASCII case-insensitive; ``<thinker>``, ``<mm:thinking>``, ``<svg:rect>`` and ``a < b`` are
text. A tag may be split across chunks at any point.

* Inside a block everything up to the closer is reasoning.
* Outside a block, a closer that comes first is an *orphan* (the chat template pre-filled
  the opener): the text before it, from the start of the chunk in which that text arrived,
  is reasoning. Text emitted for earlier chunks is never taken back, so orphan attribution
  reaches back one chunk at most (``reasoning tail.</thi`` + ``nk>Visible`` gives reasoning
  ``reasoning tail.``, visible ``Visible``).
* Held back, and so the only memory kept between calls: a trailing run that can still grow
  into a tag (at most 64 characters), plus — when that run could be a closer and we are
  outside a block — the rest of the chunk it arrived in.
* :meth:`ThinkTagStripper.flush`: inside a block, held text is reasoning. Outside, held text
  that never became a tag is **visible** (a stream ending ``Hello <`` keeps ``Hello <``),
  except a truncated closer — ``</`` plus the start of a tag name, or a
  namespaced ``</ns:`` run — which is treated like an orphan closer: the held text before
  it becomes reasoning and the fragment is dropped (``tail.</thi`` → reasoning ``tail.``).
  A truncated closer inside a block is dropped too (it is markup, not thought).

Cost is linear in the text fed: each call scans only the new text plus a held run of at
most 64 characters. For input without orphan closers the concatenated output does not
depend on how the text was cut into chunks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from ..errors import error_for, make_failure

__all__ = ["ThinkTagStripper", "find_trailing_tag_prefix", "MAX_PARTIAL_TAG_CHARS"]

#: Longest trailing run treated as a tag still arriving.
MAX_PARTIAL_TAG_CHARS = 64
_MAX_NAME_CHARS = 32
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*\Z")
_TAIL_CHARS_RE = re.compile(r"/?[A-Za-z0-9_.:-]*\Z")

PartialKind = Literal["open", "close"]


class _TagShape:
    """Compiled matchers for one set of tag names."""

    __slots__ = ("names", "any_tag", "close_tag", "ns_forming")

    def __init__(self, tag_names: Iterable[str]) -> None:
        if isinstance(tag_names, str):
            tag_names = (tag_names,)
        names = tuple(dict.fromkeys(n.lower() for n in tag_names))
        if not names:
            raise error_for(make_failure("INVALID_OPTIONS", "tag_names must not be empty"))
        for name in names:
            if not _NAME_RE.match(name) or len(name) > _MAX_NAME_CHARS:
                raise error_for(
                    make_failure("INVALID_OPTIONS", f"invalid reasoning tag name {name!r}")
                )
        self.names = names
        # The namespace is bounded so that every proper prefix of a complete closing tag
        # fits in MAX_PARTIAL_TAG_CHARS: `</` + namespace + `:` + name.
        ns_extra = MAX_PARTIAL_TAG_CHARS - 4 - max(len(n) for n in names)
        namespace = rf"(?:[A-Za-z][A-Za-z0-9_.-]{{0,{ns_extra}}}:)?"
        alternation = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
        flags = re.IGNORECASE | re.ASCII
        self.any_tag = re.compile(rf"<(/?){namespace}(?:{alternation})>", flags)
        self.close_tag = re.compile(rf"</{namespace}(?:{alternation})>", flags)
        self.ns_forming = re.compile(rf"[A-Za-z][A-Za-z0-9_.-]{{0,{ns_extra}}}\Z")

    def is_name_prefix(self, run: str) -> bool:
        low = run.lower()
        return any(n.startswith(low) for n in self.names)

    def trailing_partial(self, text: str, start: int = 0) -> tuple[int, PartialKind] | None:
        """Where a trailing run of ``text[start:]`` that can still grow into a tag begins."""
        lo = max(start, len(text) - MAX_PARTIAL_TAG_CHARS)
        index = text.rfind("<", lo)
        if index == -1 or not _TAIL_CHARS_RE.match(text, index + 1):
            return None
        has_slash = text.startswith("/", index + 1)
        run = text[index + 2 :] if has_slash else text[index + 1 :]
        if run:
            colon = run.find(":")
            if colon == -1:
                plausible = self.is_name_prefix(run) or bool(self.ns_forming.match(run))
            else:
                plausible = bool(self.ns_forming.match(run[:colon])) and self.is_name_prefix(
                    run[colon + 1 :]
                )
            if not plausible:
                return None
        return index, ("close" if has_slash or not run else "open")

    def is_truncated_closer(self, partial: str) -> bool:
        """A held partial that can only be the start of a closing tag (``</thi``, ``</mm:``)."""
        if not partial.startswith("</"):
            return False
        run = partial[2:]
        return ":" in run or (bool(run) and self.is_name_prefix(run))


def find_trailing_tag_prefix(
    text: str, tag_names: Iterable[str] = ("think",)
) -> tuple[int, PartialKind] | None:
    """Detect a tag split mid-way at the end of ``text``.

    Returns ``(index of the '<', kind)`` or ``None``. The run is ``<``, an optional ``/``
    and only ``[A-Za-z0-9_.:-]``; with a colon, the part before it must be a namespace and
    the part after it a prefix of a tag name; without one, the run must be empty, a prefix
    of a tag name or a namespace still forming. Kind is ``close`` when the run has a slash
    or is a bare ``<``, else ``open``. Runs longer than 64 characters are never partials.
    """
    return _TagShape(tag_names).trailing_partial(text)


class ThinkTagStripper:
    """Split visible deltas into ``(visible, reasoning)``; see the module docstring."""

    __slots__ = ("_shape", "_starts_in_reasoning", "_inside", "_partial", "_carry")

    def __init__(
        self, tag_names: Iterable[str] = ("think",), starts_in_reasoning: bool = False
    ) -> None:
        self._shape = _TagShape(tag_names)
        self._starts_in_reasoning = starts_in_reasoning
        self._inside = starts_in_reasoning
        # A trailing run that may still become a tag (<= 64 chars).
        self._partial = ""
        # Outside a block, with a close-kind partial: the text of that chunk before it,
        # which becomes reasoning if the partial completes an (orphan) closer.
        self._carry = ""

    @property
    def inside_block(self) -> bool:
        """Whether the text fed so far ends inside a reasoning block."""
        return self._inside

    def feed(self, text: str) -> tuple[str, str]:
        """Consume one delta; return ``(visible, reasoning)`` that is now certain."""
        if not text:
            return "", ""
        if not self._partial and not self._carry and "<" not in text:
            # Fast path: nothing held and no tag can start in this delta.
            return ("", text) if self._inside else (text, "")
        shape = self._shape
        s = self._partial + text if self._partial else text
        self._partial = ""
        carry = self._carry
        self._carry = ""
        visible: list[str] = []
        reasoning: list[str] = []
        pos = 0
        n = len(s)
        while pos < n:
            if self._inside:
                m = shape.close_tag.search(s, pos)
                if m is not None:
                    reasoning.append(s[pos : m.start()])
                    self._inside = False
                    pos = m.end()
                    continue
                hit = shape.trailing_partial(s, pos)
                if hit is not None and hit[1] == "close":
                    reasoning.append(s[pos : hit[0]])
                    self._partial = s[hit[0] :]
                else:
                    reasoning.append(s[pos:])
                break
            m = shape.any_tag.search(s, pos)
            if m is not None:
                target = reasoning if m.group(1) else visible
                if carry:
                    target.append(carry)
                    carry = ""
                target.append(s[pos : m.start()])
                self._inside = not m.group(1)
                pos = m.end()
                continue
            hit = shape.trailing_partial(s, pos)
            if hit is None:
                visible.append(carry)
                visible.append(s[pos:])
                carry = ""
            elif hit[1] == "open":
                visible.append(carry)
                visible.append(s[pos : hit[0]])
                carry = ""
                self._partial = s[hit[0] :]
            else:
                if not (pos == 0 and hit[0] == 0):
                    # The previous partial did not complete: what it carried was text.
                    visible.append(carry)
                    carry = s[pos : hit[0]]
                self._carry = carry
                self._partial = s[hit[0] :]
            break
        return "".join(visible), "".join(reasoning)

    def flush(self, *, cut: bool = False) -> tuple[str, str]:
        """End the stream: release held text (see the module docstring) and reset.

        ``cut=True`` says the stream broke off rather than ended: a held fragment that
        could still have become a tag (``<th``) is then dropped instead of shown, so a cut
        stream yields a prefix of what the whole stream would have.
        """
        partial, carry, inside = self._partial, self._carry, self._inside
        self._partial = ""
        self._carry = ""
        self._inside = self._starts_in_reasoning
        truncated_closer = self._shape.is_truncated_closer(partial)
        if cut:
            partial = ""
        if inside:
            return "", ("" if truncated_closer else partial)
        if truncated_closer:
            return "", carry
        return carry + partial, ""
