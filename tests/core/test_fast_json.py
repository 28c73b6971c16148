"""dshstream._core.strict_json rule 6: the optional fast parser (the ``fastjson`` extra,
msgspec) gives the same values and the same errors as the standard library, on every
payload of the recorded corpus, on adversarial payloads and on generated JSON; it is
imported on the first payload only, and ``DSHSTREAM_FAST_JSON=0`` keeps the standard
library.

Equality is ``repr`` equality: it tells ``1`` from ``1.0`` and ``True``, shows NaN, and
keeps dict order (a duplicate key keeps its first place and its last value)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dshstream._core import strict_json
from dshstream._core.sse import SSEDecoder
from dshstream._core.strict_json import EventJsonError, fast_decoder, loads_event
from helpers import REPOSITORY, all_fixtures, decode_all, fixture_bytes, fixture_wire

HAVE_MSGSPEC = importlib.util.find_spec("msgspec") is not None
needs_msgspec = pytest.mark.skipif(not HAVE_MSGSPEC, reason="the fastjson extra (msgspec) is not installed")


def _with(decoder: Callable[[str], Any] | None, data: str) -> tuple[str, str]:
    """``loads_event(data)`` with the given fast parser (``None``: the standard library
    alone), as ``("ok", repr)`` or ``("error", the error's text)``."""
    saved = strict_json._fast_decode
    strict_json._fast_decode = decoder
    try:
        return "ok", repr(loads_event(data))
    except EventJsonError as exc:
        return "error", exc.text
    finally:
        strict_json._fast_decode = saved


@pytest.fixture(scope="module")
def fast() -> Callable[[str], Any]:
    if not HAVE_MSGSPEC:
        pytest.skip("the fastjson extra (msgspec) is not installed")
    decoder = fast_decoder()
    assert decoder is not None
    return decoder


def assert_same(fast: Callable[[str], Any], data: str) -> None:
    assert _with(fast, data) == _with(None, data), data[:200]


# --------------------------------------------------------------------------- the corpus


def _sse_payloads() -> Iterator[str]:
    for relative in all_fixtures():
        if relative.endswith(".sse"):
            for event in SSEDecoder().feed(fixture_bytes(relative)):
                data = getattr(event, "data", "")
                if data and data != "[DONE]":
                    yield data


def test_every_payload_of_the_corpus_parses_the_same(fast: Callable[[str], Any]) -> None:
    payloads = list(_sse_payloads())
    assert len(payloads) > 500  # the whole corpus, not a sample
    for data in payloads:
        assert_same(fast, data)


@pytest.mark.parametrize("relative", all_fixtures())
def test_every_stream_of_the_corpus_decodes_the_same(fast: Callable[[str], Any], relative: str) -> None:
    body = fixture_bytes(relative)
    wire = fixture_wire(relative)
    saved = strict_json._fast_decode
    try:
        strict_json._fast_decode = None
        expected = decode_all(body, wire)
        strict_json._fast_decode = fast
        got = decode_all(body, wire)
    finally:
        strict_json._fast_decode = saved
    assert repr(got) == repr(expected)


# --------------------------------------------------------------------------- adversarial

ADVERSARIAL = [
    # integers past 64 bits (orjson would turn these into floats without an error)
    str(2**64), str(2**64 - 1), str(2**63), str(-(2**63)), str(-(2**63) - 1), "1" + "0" * 400,
    '{"n": 123456789012345678901234567890}', "[-99999999999999999999999]",
    "1" + "0" * 5000,  # past int's default digit limit: an error on both paths
    # floats: rounding, range, signed zeros
    "0.1", "0.30000000000000004", "1e23", "9007199254740993.0", "2.5e-324", "1e-400", "-0", "-0.0",
    "1e400", "-1e400", "1.7976931348623157e309", "1.5e99999999999999999999", "0." + "1" * 800, "1E5", "0e5",
    # the constants Python's json accepts
    "NaN", "[Infinity]", '{"x": -Infinity}',
    # duplicate keys: the last value, in the first key's place
    '{"a": 1, "b": 2, "a": 3}', '{"a": {"x": 1}, "a": [2]}',
    # lone surrogate escapes (fixed to U+FFFD), a pair, a raw lone surrogate character
    '"\\ud800"', '"\\udc00x"', '{"\\ud800": "\\uDFFF"}', '"\\ud83d\\ude00"', '"a\udc80"',
    '{"t": "a\\ud800b", "k\\udc00": ["\\uDFFF", {"z": "\\ud83d\\ude00"}]}',
    # whitespace, trailing data, control characters, a BOM, empty
    ' {"a":1} ', '{"a":1}\n', '\t[1]\r\n', '{"a":1} x', "\ufeff{}", '"\x00"', '"\\u0000"', '"\t"', "", "  ",
    # malformed
    "[1,]", "01", "1.", ".5", "{", "[} ", '{"a" 1}', "tru", "nul", '"\\x"', "'a'",
    # nesting: within both parsers' depth, and past it
    "[" * 200 + "]" * 200, "[" * 1025 + "]" * 1025, "[" * 100_000,
]


@pytest.mark.parametrize("data", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_payloads_parse_the_same(fast: Callable[[str], Any], data: str) -> None:
    assert_same(fast, data)


# --------------------------------------------------------------------------- generated

_numbers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True),
)
_text = st.text(st.characters(codec=None), max_size=12)  # surrogates included
_values = st.recursive(
    st.one_of(st.none(), st.booleans(), _numbers, _text),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(_text, inner, max_size=5),
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values, ensure_ascii=st.booleans(), compact=st.booleans())
def test_generated_json_parses_the_same(fast: Callable[[str], Any], value: Any, ensure_ascii: bool, compact: bool) -> None:
    separators = (",", ":") if compact else (", ", ": ")
    assert_same(fast, json.dumps(value, ensure_ascii=ensure_ascii, separators=separators))


_digits = st.text("0123456789", min_size=1, max_size=40)
_number_text = st.builds(
    lambda sign, whole, frac, exp: f"{sign}{whole}{frac}{exp}",
    st.sampled_from(["", "-"]),
    _digits,
    st.one_of(st.just(""), _digits.map(lambda d: "." + d)),
    st.one_of(st.just(""), st.builds(lambda e, s, d: e + s + d, st.sampled_from("eE"), st.sampled_from(["", "+", "-"]), _digits)),
)


@settings(max_examples=500, deadline=None)
@given(number=_number_text)
def test_generated_number_text_parses_the_same(fast: Callable[[str], Any], number: str) -> None:
    # leading zeros, 40-digit integers, long fractions, huge exponents: the text as written
    assert_same(fast, number)
    assert_same(fast, f'{{"n":{number}}}')


@settings(max_examples=200, deadline=None)
@given(keys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=8), values=st.lists(st.integers(), min_size=8, max_size=8))
def test_generated_duplicate_keys_parse_the_same(fast: Callable[[str], Any], keys: list[str], values: list[int]) -> None:
    text = "{" + ",".join(f'"{k}":{v}' for k, v in zip(keys, values)) + "}"
    assert_same(fast, text)


# --------------------------------------------------------------------------- choosing it


@needs_msgspec
def test_the_fast_parser_is_msgspec_unless_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    import msgspec

    decoder = fast_decoder()
    assert decoder is not None and decoder.__self__.__class__ is msgspec.json.Decoder  # type: ignore[attr-defined]
    for off in ("0", "false", "OFF", " no "):
        monkeypatch.setenv("DSHSTREAM_FAST_JSON", off)
        assert fast_decoder() is None
    monkeypatch.setenv("DSHSTREAM_FAST_JSON", "1")
    assert fast_decoder() is not None


def test_the_choice_is_made_on_the_first_payload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSHSTREAM_FAST_JSON", "0")
    monkeypatch.setattr(strict_json, "_fast_decode", strict_json._first_fast_decode)
    assert loads_event('{"a": [1, 2.5, NaN]}') is not None  # the first payload, parsed
    assert strict_json._fast_decode is None
    assert repr(loads_event('{"a": [1, 2.5, NaN]}')) == "{'a': [1, 2.5, nan]}"
    with pytest.raises(EventJsonError):
        loads_event("{")


def test_import_dshstream_does_not_import_the_fast_parser() -> None:
    code = (
        "import sys, dshstream\n"
        "from dshstream._core.decode import decode\n"
        "print('msgspec' in sys.modules)\n"
        "list(decode(b'data: {\"choices\": []}\\n\\ndata: [DONE]\\n\\n', wire='openai-chat'))\n"
        "print('msgspec' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DSHSTREAM_FAST_JSON"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPOSITORY, env=env, timeout=120
    ).stdout.split()
    assert out == ["False", str(HAVE_MSGSPEC)]
