"""RetryPolicy: every rule decided without HTTP, a clock or randomness."""

from __future__ import annotations

import pytest

from dshstream.adapters import RetryPolicy
from dshstream._core.errors import make_failure
from dshstream._core.types import LlmFailure


def failure(code: str = "SERVER", *, retryable: bool = True, retry_after: float | None = None) -> LlmFailure:
    return make_failure(code, "x", retryable=retryable, retry_after=retry_after)


def lowest() -> float:
    return 0.0


def highest() -> float:
    return 0.999999


def test_exponential_backoff_with_jitter_between_half_and_full() -> None:
    policy = RetryPolicy(max_retries=10, backoff_base=0.5, backoff_cap=10.0)
    assert [policy.delay(failure(), n, now=0.0, jitter=lowest) for n in (1, 2, 3, 4)] == [0.25, 0.5, 1.0, 2.0]
    assert policy.delay(failure(), 1, now=0.0, jitter=highest) == pytest.approx(0.5, abs=1e-6)
    assert policy.delay(failure(), 9, now=0.0, jitter=highest) == pytest.approx(10.0, abs=1e-5)  # capped


def test_only_retryable_failures_within_the_attempt_budget() -> None:
    policy = RetryPolicy(max_retries=2)
    assert policy.delay(failure(retryable=False), 1, now=0.0) is None
    assert policy.delay(failure("ABORTED"), 1, now=0.0) is None
    assert policy.delay(failure(), 2, now=0.0) is not None
    assert policy.delay(failure(), 3, now=0.0) is None
    assert RetryPolicy(max_retries=0).delay(failure(), 1, now=0.0) is None


def test_retry_after_is_honoured_up_to_its_cap() -> None:
    policy = RetryPolicy(retry_after_cap=60.0)
    assert policy.delay(failure(retry_after=7.5), 1, now=0.0, jitter=highest) == 7.5
    assert policy.delay(failure(retry_after=60.0), 1, now=0.0) == 60.0
    assert policy.delay(failure(retry_after=61.0), 1, now=0.0) is None


def test_no_wait_ends_past_the_deadline() -> None:
    policy = RetryPolicy()
    assert policy.delay(failure(retry_after=2.0), 1, now=100.0, deadline=101.0) is None
    assert policy.delay(failure(retry_after=2.0), 1, now=100.0, deadline=102.0) is None  # ends at it
    assert policy.delay(failure(retry_after=2.0), 1, now=100.0, deadline=102.5) == 2.0
    assert policy.delay(failure(), 1, now=100.0, deadline=100.1, jitter=lowest) is None
