"""Tests for dshstream._core.filters.think_tags: the seed vectors (TomoriBot reasoningTags /
thinkBlockContentStripper), the port's decisions (flush of held text), and hypothesis
properties: whole-input output equals a small regex reference, and for input without orphan
closers any cut of the input gives the same concatenated output."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.errors import ConfigurationError
from dshstream._core.filters.think_tags import (
    MAX_PARTIAL_TAG_CHARS,
    ThinkTagStripper,
    find_trailing_tag_prefix,
)


def run(
    chunks: Iterable[str],
    *,
    starts_in_reasoning: bool = False,
    tag_names: Sequence[str] = ("think",),
) -> tuple[str, str]:
    """Feed ``chunks`` then flush; return concatenated (visible, reasoning)."""
    stripper = ThinkTagStripper(tag_names, starts_in_reasoning=starts_in_reasoning)
    visible: list[str] = []
    reasoning: list[str] = []
    for chunk in chunks:
        v, r = stripper.feed(chunk)
        visible.append(v)
        reasoning.append(r)
    v, r = stripper.flush()
    visible.append(v)
    reasoning.append(r)
    return "".join(visible), "".join(reasoning)


def cut(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


# --------------------------------------------------------------------------- §9.1 tag shape


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("text<", (4, "close")),
        ("text</", (4, "close")),
        ("text<thi", (4, "open")),
        ("text</thi", (4, "close")),
        ("text<mm:", (4, "open")),
        ("text</mm:thi", (4, "close")),
        ("text<mm", (4, "open")),
        ("draw <svg:rect", None),
        ("a < b", None),
        ("<" + "a" * 80, None),
        ("text<THI", (4, "open")),
        ("x</Mm:ThInK", (1, "close")),
        ("no tag here", None),
        ("a<b<", (3, "close")),
        ("x<1", None),
        ("x<a:b:th", None),
    ],
)
def test_trailing_partial_vectors(text: str, expected: tuple[int, str] | None) -> None:
    assert find_trailing_tag_prefix(text) == expected


def test_trailing_partial_is_bounded() -> None:
    # A namespace may be up to 56 characters, so every proper prefix of a complete closer
    # ("</" + namespace + ":" + name) fits in MAX_PARTIAL_TAG_CHARS.
    assert find_trailing_tag_prefix("x<" + "a" * 56) == (1, "open")
    assert find_trailing_tag_prefix("x</" + "a" * 56 + ":thin") == (1, "close")
    assert len("</" + "a" * 56 + ":thin") <= MAX_PARTIAL_TAG_CHARS
    assert find_trailing_tag_prefix("x<" + "a" * 57) is None
    assert find_trailing_tag_prefix("x<" + "a" * (MAX_PARTIAL_TAG_CHARS + 10)) is None


# --------------------------------------------------------------------------- §9.2 vectors


def test_orphan_closer_split_mid_tag() -> None:
    stripper = ThinkTagStripper()
    assert stripper.feed("originally.</thi") == ("", "")
    assert stripper.feed("nk>Bella: Eep!") == ("Bella: Eep!", "originally.")
    assert stripper.flush() == ("", "")


def test_closer_split_inside_block() -> None:
    stripper = ThinkTagStripper()
    assert stripper.feed("<think>hidden thought</thi") == ("", "hidden thought")
    assert stripper.feed("nk>Visible reply") == ("Visible reply", "")
    assert stripper.flush() == ("", "")


def test_reasoning_tail_then_closer_in_next_chunk() -> None:
    stripper = ThinkTagStripper()
    assert stripper.feed("reasoning tail.</thi") == ("", "")
    assert stripper.feed("nk>Visible") == ("Visible", "reasoning tail.")


def test_block_stays_open_across_chunks() -> None:
    stripper = ThinkTagStripper()
    assert stripper.feed("<think>thinking about the reply") == ("", "thinking about the reply")
    # No persona speaker-label feature: the block is still open.
    assert stripper.feed("\nmore") == ("", "\nmore")
    assert stripper.flush() == ("", "")


def test_minimax_namespaced_orphan_closer() -> None:
    assert ThinkTagStripper().feed("s either.</mm:think>Yes indeed I have!") == (
        "Yes indeed I have!",
        "s either.",
    )


def test_namespaced_block() -> None:
    assert ThinkTagStripper().feed("<mm:think>plotting the reply</mm:think>Hello!") == (
        "Hello!",
        "plotting the reply",
    )


@pytest.mark.parametrize(
    "text",
    [
        "draw <svg:rect> here",
        "<thinker>not a tag</thinker>",
        "<mm:thinking>not a tag</mm:thinking>",
        "if a < b and b > c",
        "x <b>bold</b> y",
        "a<b<c<d",
    ],
)
def test_non_tags_are_text(text: str) -> None:
    assert run([text]) == (text, "")
    assert run(text) == (text, "")


def test_case_insensitive() -> None:
    assert run(["<THINK>a</Think>b"]) == ("b", "a")
    assert run(["<Mm:ThInK>a</mM:tHiNk>b"]) == ("b", "a")


def test_starts_in_reasoning() -> None:
    assert run(["still thinking</think>answer"], starts_in_reasoning=True) == (
        "answer",
        "still thinking",
    )
    assert run(["only thought"], starts_in_reasoning=True) == ("", "only thought")


def test_multiple_blocks_and_opener_inside_block() -> None:
    assert run(["a<think>b</think>c<think>d</think>e"]) == ("ace", "bd")
    assert run(["<think>x<think>y</think>z"]) == ("z", "x<think>y")


def test_single_name_string() -> None:
    assert run(["<reasoning>r</reasoning>v"], tag_names="reasoning") == ("v", "r")


def test_custom_tag_names() -> None:
    assert run(["<thinking>a</thinking>b<think>c</think>"], tag_names=("think", "thinking")) == (
        "b",
        "ac",
    )
    assert run(["<reasoning>r</reasoning>v"], tag_names=("reasoning",)) == ("v", "r")


@pytest.mark.parametrize("names", [(), ("",), ("1abc",), ("a b",), ("x" * 40,)])
def test_invalid_tag_names(names: tuple[str, ...]) -> None:
    with pytest.raises(ConfigurationError):
        ThinkTagStripper(names)


# --------------------------------------------------------------------------- flush decisions


def test_bare_lt_at_end_stays_visible() -> None:
    # The seed turned "Hello " into thought and dropped "<" (§13 item 12); the port keeps it.
    assert run(["Hello <"]) == ("Hello <", "")
    stripper = ThinkTagStripper()
    assert stripper.feed("Hello <") == ("", "")
    assert stripper.flush() == ("Hello <", "")
    assert run(["Hello ", "<"]) == ("Hello <", "")


def test_partial_opener_at_end_stays_visible() -> None:
    assert run(["Hello <thi"]) == ("Hello <thi", "")
    assert run(["x </mm"]) == ("x </mm", "")
    assert run(["x </"]) == ("x </", "")


def test_truncated_closer_at_end_is_an_orphan() -> None:
    assert run(["reasoning tail.</thi"]) == ("", "reasoning tail.")
    assert run(["tail.</mm:"]) == ("", "tail.")
    assert run(["tail.</think"]) == ("", "tail.")


def test_truncated_closer_inside_block_is_dropped() -> None:
    assert run(["<think>abc</thi"]) == ("", "abc")
    assert run(["<think>abc<"]) == ("", "abc<")


def test_flush_resets() -> None:
    stripper = ThinkTagStripper()
    stripper.feed("<think>abc")
    before = stripper.inside_block
    assert stripper.flush() == ("", "")
    after = stripper.inside_block
    assert before and not after
    assert stripper.feed("plain") == ("plain", "")


def test_held_text_is_bounded() -> None:
    # A chunk ending in a possible closer is held, but only until the next chunk: earlier
    # chunks are released as visible even when every chunk ends with "<".
    stripper = ThinkTagStripper()
    total_visible: list[str] = []
    for i in range(1000):
        v, r = stripper.feed(f"word{i} <")
        assert r == ""
        total_visible.append(v)
    held = stripper._carry + stripper._partial
    assert len(held) <= len("word999 <") + MAX_PARTIAL_TAG_CHARS
    v, _ = stripper.flush()
    assert "".join(total_visible) + v == "".join(f"word{i} <" for i in range(1000))


def test_long_lt_run_is_not_held() -> None:
    stripper = ThinkTagStripper()
    text = "<" + "a" * 200
    assert stripper.feed(text) == (text, "")


# --------------------------------------------------------------------------- properties

_NS = r"(?:[A-Za-z][A-Za-z0-9_.-]{0,55}:)?"
_TAG = re.compile(rf"<(/?){_NS}think>", re.IGNORECASE | re.ASCII)
_THINK_PREFIX = "t(?:h(?:i(?:n(?:k)?)?)?)?"
_TRUNCATED_CLOSER = re.compile(
    rf"</(?:[A-Za-z][A-Za-z0-9_.-]{{0,55}}:(?:{_THINK_PREFIX})?|{_THINK_PREFIX})\Z",
    re.IGNORECASE | re.ASCII,
)


def reference(text: str, inside: bool) -> tuple[str, str, bool]:
    """Whole-input semantics: (visible, reasoning, had_orphan)."""
    visible: list[str] = []
    reasoning: list[str] = []
    orphan = False
    pos = 0
    for m in _TAG.finditer(text):
        closer = bool(m.group(1))
        if inside and not closer:
            continue
        if closer:
            reasoning.append(text[pos : m.start()])
            orphan = orphan or not inside
            inside = False
        else:
            visible.append(text[pos : m.start()])
            inside = True
        pos = m.end()
    tail = text[pos:]
    trunc = _TRUNCATED_CLOSER.search(tail)
    if trunc is not None:
        reasoning.append(tail[: trunc.start()])
        orphan = orphan or not inside
    elif inside:
        reasoning.append(tail)
    else:
        visible.append(tail)
    return "".join(visible), "".join(reasoning), orphan


TOKENS = [
    "<think>", "</think>", "<THINK>", "</Think>", "<mm:think>", "</mm:think>", "<", "</", "<t",
    "<thi", "</thi", "nk>", "k>", ">", "think", "thinker", "<thinker>", "<mm:thinking>",
    "<svg:rect>", "mm:", "a", "b", " ", "\n", "Hello", "x < y", "/", ":", "é", "😊",
]  # fmt: skip
texts = st.one_of(
    st.lists(st.sampled_from(TOKENS), max_size=25).map("".join),
    st.text(alphabet="<>/:thinkTHmé a", max_size=60),
)


@settings(max_examples=400, deadline=None)
@given(text=texts, inside=st.booleans())
def test_whole_input_matches_reference(text: str, inside: bool) -> None:
    v, r, _ = reference(text, inside)
    assert run([text], starts_in_reasoning=inside) == (v, r)


@settings(max_examples=400, deadline=None)
@given(text=texts, inside=st.booleans(), cuts=st.lists(st.integers(0, 200), max_size=12))
def test_any_split_matches_whole(text: str, inside: bool, cuts: list[int]) -> None:
    v, r, orphan = reference(text, inside)
    split = run(cut(text, cuts), starts_in_reasoning=inside)
    by_char = run(list(text), starts_in_reasoning=inside)
    if not orphan:
        assert split == (v, r)
        assert by_char == (v, r)
    # Whatever the cut (orphans included), nothing is invented.
    for visible, reasoning in (split, by_char):
        assert len(visible) + len(reasoning) <= len(text)


@settings(max_examples=200, deadline=None)
@given(
    parts=st.lists(st.tuples(st.text(alphabet="ab <>\n", max_size=8), st.booleans()), max_size=10),
    cuts=st.lists(st.integers(0, 200), max_size=12),
)
def test_balanced_blocks_any_split(parts: list[tuple[str, bool]], cuts: list[int]) -> None:
    """Text and blocks built from parts: reasoning is exactly the block contents."""
    text = "".join(f"<think>{p}</think>" if is_block else p for p, is_block in parts)
    expected = (
        "".join(p for p, b in parts if not b),
        "".join(p for p, b in parts if b),
    )
    if _TAG.search("".join(p for p, _ in parts)) is None and not any(
        _TRUNCATED_CLOSER.search(p) for p, b in parts if not b
    ):
        assert run(cut(text, cuts)) == expected
        assert run(list(text)) == expected


def test_a_cut_stream_drops_a_fragment_that_could_still_become_a_tag() -> None:
    stripper = ThinkTagStripper()
    assert stripper.feed("Hello <th") == ("Hello ", "")
    assert stripper.flush(cut=True) == ("", "")
    stripper = ThinkTagStripper()
    stripper.feed("Hello <th")
    assert stripper.flush() == ("<th", "")  # a stream that ended cleanly keeps it visible


@pytest.mark.parametrize(
    "rel",
    [
        "fireworks/deepseek_r1_think_tags_in_content_usage_every_chunk.sse",
        "novita/deepseek_r1_distill_qwen14b_think_tags_content_filter.sse",
    ],
)
def test_recorded_think_tags_in_content_split_exactly(rel: str) -> None:
    """DeepSeek R1 served by Fireworks and Novita writes ``<think>...</think>`` inside
    ``delta.content``: with ``think_tags`` the reasoning is what the tags hold and the
    answer what follows, whatever the deltas' cuts (byte by byte too)."""
    import json

    from dshstream._core.assembler import assemble
    from dshstream._core.decode import decode

    from helpers import fixture_bytes

    data = fixture_bytes(rel)
    content = "".join(
        (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in data.decode("utf-8").splitlines()
        if line.startswith("data: {")
    )
    match = re.fullmatch(r"\s*<think>(.*?)</think>(.*)", content, re.S)
    assert match is not None
    result = assemble(decode(data, wire="openai-chat", think_tags=True))
    assert result.reasoning.strip() == match.group(1).strip() and result.reasoning
    assert result.text.strip() == match.group(2).strip() and result.text
    assert "<think>" not in result.text and "</think>" not in result.text
    pieces = assemble(decode([data[i : i + 1] for i in range(len(data))], wire="openai-chat", think_tags=True))
    assert (pieces.reasoning, pieces.text) == (result.reasoning, result.text)
