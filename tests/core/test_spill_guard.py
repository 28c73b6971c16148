"""Tests for dshstream._core.filters.spill_guard: every seed vector (TomoriBot
reasoningContentSpillGuard tests) and a hypothesis property that any cut of the content
gives the same concatenated (content, spilled) as feeding it whole."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dshstream._core.filters.spill_guard import (
    MAX_PENDING_CONTENT_CHARS,
    ReasoningSpillGuard,
    looks_like_answer_start,
)


def armed() -> ReasoningSpillGuard:
    guard = ReasoningSpillGuard()
    guard.observe_reasoning("some reasoning")
    return guard


def run(chunks: Iterable[str], *, reasoning: bool = True) -> tuple[str, str]:
    guard = ReasoningSpillGuard()
    if reasoning:
        guard.observe_reasoning("r")
    content: list[str] = []
    spilled: list[str] = []
    for chunk in chunks:
        c, s = guard.filter_content(chunk)
        content.append(c)
        spilled.append(s)
    c, s = guard.flush()
    content.append(c)
    spilled.append(s)
    return "".join(content), "".join(spilled)


def cut(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


# --------------------------------------------------------------------------- seed vectors


@pytest.mark.parametrize(
    ("text", "content", "spilled"),
    [
        (
            "the reveal.Wrrrf... lemme chew on this bone.",
            "Wrrrf... lemme chew on this bone.",
            "the reveal.",
        ),
        ("s either.Yes indeed I have!", "Yes indeed I have!", "s either."),
        ("lemme think.😊 hi there", "😊 hi there", "lemme think."),
        ("must do.こんにちは", "こんにちは", "must do."),
        ("let me wait...Hello", "Hello", "let me wait..."),
        ("wait.Actually let me reconsider", "Actually let me reconsider", "wait."),
        ("g it out.hey master 👋 what's up?", "hey master 👋 what's up?", "g it out."),
    ],
)
def test_glued_spill_is_moved(text: str, content: str, spilled: str) -> None:
    assert armed().filter_content(text) == (content, spilled)


@pytest.mark.parametrize(
    "text",
    [
        "the ball costs five cents. The bat costs $1.05.",
        "use the `obj.Method` helper",
        "wait. Actually let me reconsider",
        "the playful answer. Hello there.",
        "Hello there.World",  # uppercase start
        "`code`.Next",  # backtick start
        "42 is the answer.Yes",  # digit start
        "example.com is a domain",  # single word glued to lowercase
    ],
)
def test_unchanged(text: str) -> None:
    assert armed().filter_content(text) == (text, "")


def test_held_then_resolved() -> None:
    guard = armed()
    assert guard.filter_content("the reveal.") == ("", "")
    assert guard.filter_content("Wrrrf...") == ("Wrrrf...", "the reveal.")
    # Disarmed for the rest of the stream.
    assert guard.filter_content("the end.Again") == ("the end.Again", "")


def test_decimal_is_not_a_boundary() -> None:
    guard = armed()
    assert guard.filter_content("totaling $1.20.") == ("", "")
    assert guard.filter_content("Bel") == ("Bel", "totaling $1.20.")


def test_decimal_split_at_the_dot() -> None:
    guard = armed()
    assert guard.filter_content("totaling $1.") == ("", "")
    assert guard.filter_content("20.Bel") == ("Bel", "totaling $1.20.")


def test_inactive_without_reasoning() -> None:
    guard = ReasoningSpillGuard()
    assert guard.filter_content("the reveal.Wrrrf") == ("the reveal.Wrrrf", "")


def test_reasoning_after_content_does_not_arm() -> None:
    guard = ReasoningSpillGuard()
    assert guard.filter_content("Hi") == ("Hi", "")
    guard.observe_reasoning("late")
    assert guard.filter_content("the reveal.Wrrrf") == ("the reveal.Wrrrf", "")


def test_empty_reasoning_does_not_arm() -> None:
    guard = ReasoningSpillGuard()
    guard.observe_reasoning("")
    assert guard.filter_content("the reveal.Wrrrf") == ("the reveal.Wrrrf", "")


def test_whitespace_is_held_and_leading_space_trimmed() -> None:
    guard = armed()
    assert guard.filter_content("\n\n") == ("", "")
    assert guard.filter_content("the reveal.Wrrrf") == ("Wrrrf", "the reveal.")


def test_flush_releases_held_text_unchanged() -> None:
    guard = armed()
    assert guard.filter_content("the reveal.") == ("", "")
    assert guard.flush() == ("the reveal.", "")
    assert guard.flush() == ("", "")


def test_flush_resets() -> None:
    guard = armed()
    guard.filter_content("Hello")
    guard.flush()
    assert guard.filter_content("the reveal.Wrrrf") == ("the reveal.Wrrrf", "")


def test_empty_content_is_a_no_op() -> None:
    guard = armed()
    assert guard.filter_content("") == ("", "")
    assert guard.filter_content("the reveal.Wrrrf") == ("Wrrrf", "the reveal.")


def test_long_fragment_without_boundary_is_emitted() -> None:
    guard = armed()
    text = "a" * (MAX_PENDING_CONTENT_CHARS - 1)
    assert guard.filter_content(text) == ("", "")
    assert guard.filter_content("b") == (text + "b", "")


def test_limit_is_positional() -> None:
    # A boundary at or past the limit never splits, whether the text comes whole or cut.
    text = "x " * 100 + "end.Hello"
    assert run([text]) == (text, "")
    assert run(list(text)) == (text, "")


def test_held_text_is_bounded() -> None:
    guard = armed()
    for _ in range(1000):
        c, _s = guard.filter_content(" ")
        if c:
            break
    else:
        pytest.fail("whitespace was held forever")
    assert len(c) == MAX_PENDING_CONTENT_CHARS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello", True), ("\"quoted", True), ("*bold", True), ("_it", True), ("(paren", True),
        ("「jp", True), ("こんにちは", True), ("한국", True), ("😊", True), ("👋", True),
        ("ǅ", True), ("hello", False), ("1", False), (".", False), ("", False),
    ],
)  # fmt: skip
def test_answer_start(text: str, expected: bool) -> None:
    assert looks_like_answer_start(text) is expected


# --------------------------------------------------------------------------- properties

TOKENS = [
    "the reveal.", "Wrrrf...", " ", "\n", "wait", ".", "...", "?!", "。", "A", "a", "1", ".2",
    "`", "obj.Method", "😊", "こんにちは", "x", "hey", "Hello", "$1", "！", "lemme think",
]  # fmt: skip
contents = st.one_of(
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=20).map("".join),
    st.text(alphabet="ab .!?A1`😊 \n", min_size=1, max_size=60),
    st.text(max_size=40),
)


@settings(max_examples=500, deadline=None)
@given(text=contents, cuts=st.lists(st.integers(0, 300), max_size=12), reasoning=st.booleans())
def test_any_split_matches_whole(text: str, cuts: list[int], reasoning: bool) -> None:
    whole = run([text], reasoning=reasoning)
    assert run(cut(text, cuts), reasoning=reasoning) == whole
    assert run(list(text), reasoning=reasoning) == whole
    content, spilled = whole
    if spilled:
        # Only leading whitespace and the spilled fragment go missing.
        assert text.lstrip().startswith(spilled)
        assert content == text.lstrip()[len(spilled) :]
    else:
        assert content == text


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab .A", max_size=400),
    cuts=st.lists(st.integers(0, 400), max_size=30),
)
def test_long_inputs_any_split(text: str, cuts: list[int]) -> None:
    assert run(cut(text, cuts)) == run([text])
