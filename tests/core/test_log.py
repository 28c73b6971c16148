"""Tests for dshstream._core.log: every dshstream logger redacts its own records."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from dshstream._core.log import ROOT_LOGGER_NAME, RedactingFilter, get_logger
from dshstream._core.redact import REDACTED, register_secret, unregister_secret

SECRET = "registered-secret-XYZ-0987654321"


@pytest.fixture()
def captured() -> Iterator[io.StringIO]:
    """A handler on the top dshstream logger that formats every record."""
    register_secret(SECRET)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger(ROOT_LOGGER_NAME)
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        unregister_secret(SECRET)


def test_top_logger_has_null_handler_and_filter() -> None:
    root = logging.getLogger(ROOT_LOGGER_NAME)
    get_logger(ROOT_LOGGER_NAME)
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    assert sum(isinstance(f, RedactingFilter) for f in root.filters) == 1


def test_get_logger_names_and_single_filter() -> None:
    first = get_logger("dshstream.adapters.test_log_child")
    again = get_logger("dshstream.adapters.test_log_child")
    assert first is again
    assert first.name == "dshstream.adapters.test_log_child"
    assert sum(isinstance(f, RedactingFilter) for f in first.filters) == 1
    assert get_logger("outside").name == "dshstream.outside"
    assert get_logger("dshstream").name == "dshstream"


def test_child_logger_record_is_redacted(captured: io.StringIO) -> None:
    log = get_logger("dshstream.adapters.test_log_child")
    log.info("sending key %s to %s", SECRET, "https://h/v1?key=AIzaSomething&alt=sse")
    log.warning("header %r", {"Authorization": "Bearer tok-abc-123"})
    out = captured.getvalue()
    assert SECRET not in out
    assert "AIzaSomething" not in out
    assert "tok-abc-123" not in out
    assert out.count(REDACTED) >= 3
    assert "dshstream.adapters.test_log_child INFO sending key" in out


def test_filter_sets_msg_and_clears_args() -> None:
    register_secret(SECRET)
    try:
        record = logging.LogRecord("dshstream.x", logging.INFO, __file__, 1, "k=%s n=%d", (SECRET, 3), None)
        assert RedactingFilter().filter(record) is True
        assert record.msg == f"k={REDACTED} n=3"
        assert record.args == ()
        assert record.getMessage() == f"k={REDACTED} n=3"
    finally:
        unregister_secret(SECRET)


def test_bad_format_args_do_not_raise() -> None:
    record = logging.LogRecord("dshstream.x", logging.INFO, __file__, 1, "%d", ("not a number",), None)
    assert RedactingFilter().filter(record) is True
    assert isinstance(record.msg, str)


def test_exception_text_is_redacted(captured: io.StringIO) -> None:
    log = get_logger("dshstream.transport.test_log_exc")
    try:
        raise RuntimeError(f"connect failed with key {SECRET} and Bearer abc.def.ghi")
    except RuntimeError:
        log.exception("request failed")
    out = captured.getvalue()
    assert "Traceback" in out
    assert "RuntimeError" in out
    assert SECRET not in out
    assert "abc.def.ghi" not in out


def test_stack_info_is_redacted() -> None:
    register_secret(SECRET)
    try:
        record = logging.LogRecord("dshstream.x", logging.INFO, __file__, 1, "m", (), None, sinfo=f"Stack {SECRET}")
        RedactingFilter().filter(record)
        assert record.stack_info == f"Stack {REDACTED}"
    finally:
        unregister_secret(SECRET)


def test_parent_filter_alone_would_not_see_child_records() -> None:
    """Documents why every dshstream logger needs its own filter."""
    parent = logging.getLogger("test_log_plain_parent")
    child = logging.getLogger("test_log_plain_parent.child")
    seen: list[str] = []

    class Spy(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            seen.append(record.getMessage())
            return True

    spy = Spy()
    parent.addFilter(spy)
    parent.setLevel(logging.INFO)
    try:
        child.info("hello")
    finally:
        parent.removeFilter(spy)
    assert seen == []


def test_structured_facts_on_a_record_are_redacted(captured: io.StringIO) -> None:
    """``record.dshstream`` (what a JSON handler writes as it is) goes through the same
    redaction as the message."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    root = logging.getLogger(ROOT_LOGGER_NAME)
    root.addHandler(handler)
    try:
        get_logger("dshstream.observe").info("done", extra={"dshstream": {"response_id": f"id-{SECRET}", "chunks": 3}})
    finally:
        root.removeHandler(handler)
    [record] = seen
    facts = record.__dict__["dshstream"]
    assert facts == {"response_id": f"id-{REDACTED}", "chunks": 3}
