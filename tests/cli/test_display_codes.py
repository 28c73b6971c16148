"""format_error_code_for_display (dshstream._render): which error codes are safe to show a
user (seed §12.2)."""

from __future__ import annotations

import pytest

from dshstream._render import format_error_code_for_display


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("429", "429"),
        ("429_balance", "429_balance"),
        ("404_model", "404_model"),
        (429, "429"),
        ("ECONNREFUSED", "ECONNREFUSED"),
        ("RESOURCE_EXHAUSTED", "RESOURCE_EXHAUSTED"),
        ("HTTP_404", "HTTP_404"),
        ("invalid_request_error", "invalid_request_error"),
        ("rate_limit_error", "rate_limit_error"),
        # seed §12.2 rejections
        ("sk-live-CANARY0001", "unknown"),
        ("sk_live_Abc123", "unknown"),
        ("AbcDef", "unknown"),
        ("a" * 41, "unknown"),
        ("<@&42>", "unknown"),
        ("", "unknown"),
        (None, "unknown"),
        (True, "unknown"),
        (4290, "unknown"),
        ("42", "unknown"),
        (" 429", "unknown"),
        (["429"], "unknown"),
    ],
)
def test_format_error_code_for_display(code: object, shown: str) -> None:
    assert format_error_code_for_display(code) == shown


def test_display_code_length_boundary() -> None:
    assert format_error_code_for_display("a" * 40) == "a" * 40
