"""recovery_tips and may_view_detail: tips scoped to who owns the failing key."""

from __future__ import annotations

import string
from typing import Any

import pytest

from dshstream import ConfigurationError, LlmFailure
from dshstream.errors import (
    ConfigurationTypeError,
    QuotaExceededError,
    may_view_detail,
    recovery_tips,
)
from dshstream._core.errors import CODE_DEFAULTS, make_failure
from dshstream._core.recovery import BILLING, CREDENTIAL_SOURCES
from helpers import fake_key

CANARY = "sk-live-CANARY0001-upstream-text"
POOL_WORDS = ("pool", "fallback", "rotate")


def failure(code: str, **fields: Any) -> LlmFailure:
    return make_failure(
        code,
        f"openai: {code.lower()} because {CANARY}",
        provider="openai",
        detail=f"upstream said: {CANARY} <@&42> @everyone",
        **fields,
    )


@pytest.mark.parametrize("code", sorted(CODE_DEFAULTS))
@pytest.mark.parametrize("credential", CREDENTIAL_SOURCES)
def test_every_code_has_stable_tips_for_every_credential(code: str, credential: Any) -> None:
    tips = recovery_tips(failure(code), credential)
    assert tips and all(isinstance(tip, str) and tip for tip in tips)
    assert recovery_tips(failure(code), credential) == tips  # stable
    for tip in tips:
        assert tip[0].isupper() and tip.endswith("."), tip  # short imperative sentences
        assert len(tip) <= 140, tip
        assert CANARY not in tip and "CANARY" not in tip and "@" not in tip and "openai" not in tip


def test_tips_depend_on_the_code_not_on_the_text() -> None:
    a = make_failure("RATE_LIMIT", "groq: slow down", provider="groq", detail="anything")
    b = make_failure("RATE_LIMIT", "anthropic: rate limited", provider="anthropic", status=429, retry_after=3.0)
    for credential in CREDENTIAL_SOURCES:
        assert recovery_tips(a, credential) == recovery_tips(b, credential)


def test_server_tips_are_administrative() -> None:
    auth = " ".join(recovery_tips(failure("AUTH"), "server")).lower()
    assert "rotate" in auth and "pool" in auth
    rate = " ".join(recovery_tips(failure("RATE_LIMIT"), "server")).lower()
    assert "pool" in rate and "fallback" in rate
    assert "fallback" in " ".join(recovery_tips(failure("OVERLOADED"), "server")).lower()


@pytest.mark.parametrize("code", sorted(CODE_DEFAULTS))
def test_personal_tips_never_give_pool_or_fallback_advice(code: str) -> None:
    text = " ".join(recovery_tips(failure(code), "personal")).lower()
    assert not any(word in text for word in POOL_WORDS), text


def test_personal_tips_check_your_own_key_or_switch_back() -> None:
    tips = recovery_tips(failure("AUTH"), "personal")
    assert any("your api key" in tip.lower() for tip in tips)
    assert tips[-1] == "Or switch back to the shared key."
    # no shared key to go back to (a command line, a notebook): not suggested
    alone = recovery_tips(failure("AUTH"), "personal", shared_key=False)
    assert alone == tips[:-1]
    # a failure of the request itself is not helped by another key
    assert "Or switch back to the shared key." not in recovery_tips(failure("CONTEXT_WINDOW_EXCEEDED"), "personal")


@pytest.mark.parametrize("code", ["AUTH", "QUOTA", "CREDIT_LIMIT"])
def test_a_subscription_denial_gets_only_the_billing_copy(code: str) -> None:
    assert recovery_tips(failure(code), "subscription") == BILLING


@pytest.mark.parametrize("code", sorted(set(CODE_DEFAULTS) - {"AUTH", "QUOTA", "CREDIT_LIMIT"}))
def test_a_subscription_gets_no_key_or_provider_advice(code: str) -> None:
    text = " ".join(recovery_tips(failure(code), "subscription")).lower()
    assert "key" not in text and not any(word in text for word in POOL_WORDS), text


def test_credit_limit_says_to_ask_for_fewer_tokens() -> None:
    for credential in ("server", "personal"):
        assert recovery_tips(failure("CREDIT_LIMIT"), credential)[0] == "Retry with a smaller max_tokens."
    # the opposite advice of an exhausted balance, where fewer tokens can't help
    assert not any("max_tokens" in tip for tip in recovery_tips(failure("QUOTA"), "personal"))


@pytest.mark.parametrize(
    ("code", "status", "category", "like"),
    [
        ("HTTP_418", 418, None, "INVALID_REQUEST"),
        ("HTTP_502", 502, None, "SERVER"),
        ("HTTP_401", None, None, "AUTH"),
        ("429_balance", 429, "rate_limit", "RATE_LIMIT"),
        ("SAFETY", None, "content_blocked", "CONTENT_FILTER"),
        ("model_error", 404, "model_error", "MODEL_NOT_FOUND"),
        ("WHATEVER", None, None, "UNKNOWN"),
    ],
)
def test_other_codes_are_answered_by_category_then_status(code: str, status: int | None, category: Any, like: str) -> None:
    other = make_failure(code, "x", status=status, category=category)
    for credential in CREDENTIAL_SOURCES:
        assert recovery_tips(other, credential) == recovery_tips(failure(like), credential)


def test_key_env_and_base_url_option_refine_the_personal_tips() -> None:
    no_adapter = failure("NO_ADAPTER")
    tips = recovery_tips(no_adapter, "personal", key_env="OPENAI_API_KEY", base_url_option="--base-url", shared_key=False)
    assert tips == ("Set OPENAI_API_KEY to your API key, or pass --base-url to use an OpenAI-compatible server.",)
    both = recovery_tips(no_adapter, "personal", key_env=("GEMINI_API_KEY", "GOOGLE_API_KEY"), shared_key=False)
    assert both == ("Set GEMINI_API_KEY or GOOGLE_API_KEY to your API key.",)
    auth = recovery_tips(failure("AUTH"), "personal", key_env="GROQ_API_KEY")
    assert "GROQ_API_KEY" in auth[0]
    # they never change what an operator or a subscriber sees
    assert recovery_tips(failure("AUTH"), "server", key_env="GROQ_API_KEY") == recovery_tips(failure("AUTH"), "server")


def test_an_llm_error_is_accepted_too() -> None:
    error = QuotaExceededError(failure("QUOTA"))
    assert recovery_tips(error, "server") == recovery_tips(error.failure, "server")


@pytest.mark.parametrize(
    ("call", "error", "says"),
    [
        (lambda: recovery_tips(failure("AUTH"), "owner"), ConfigurationError, "credential must be one of"),  # type: ignore[arg-type]
        (lambda: recovery_tips(failure("AUTH"), 3), ConfigurationTypeError, "credential"),  # type: ignore[arg-type]
        (lambda: recovery_tips("AUTH"), ConfigurationTypeError, "failure must be"),  # type: ignore[arg-type]
        (lambda: recovery_tips(failure("AUTH"), "personal", key_env=CANARY), ConfigurationError, "key_env"),
        (lambda: recovery_tips(failure("AUTH"), "personal", key_env=[1]), ConfigurationTypeError, "key_env"),  # type: ignore[list-item]
        (lambda: recovery_tips(failure("AUTH"), "personal", base_url_option="http://x"), ConfigurationError, "base_url_option"),
        (lambda: recovery_tips(failure("AUTH"), "personal", shared_key=1), ConfigurationTypeError, "shared_key"),  # type: ignore[arg-type]
        (lambda: may_view_detail("nobody", True), ConfigurationError, "credential"),  # type: ignore[arg-type]
        (lambda: may_view_detail("server", "yes"), ConfigurationTypeError, "viewer_owns_key"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_name_the_argument(call: Any, error: type[Exception], says: str) -> None:
    with pytest.raises(error) as info:
        call()
    assert says in str(info.value)
    assert CANARY not in str(info.value)  # a key passed by mistake is never echoed


@pytest.mark.parametrize(
    ("credential", "owns", "may"),
    [
        ("server", True, True),  # the operator can rotate the server key
        ("server", False, False),  # a user of the operator's key can't
        ("personal", True, True),  # the user owns their key
        ("personal", False, False),  # an operator looking at someone else's key
        ("subscription", True, False),  # a subscription denial: billing copy only
        ("subscription", False, False),
    ],
)
def test_only_who_could_replace_the_key_may_view_the_detail(credential: Any, owns: bool, may: bool) -> None:
    assert may_view_detail(credential, viewer_owns_key=owns) is may


@pytest.mark.parametrize(
    "key",
    [
        fake_key("gsk_", 52),  # Groq: also a valid variable name
        fake_key("AKIA", 16, string.ascii_uppercase + string.digits),  # an AWS access key id
        fake_key("AIzaSy", 33),  # a Google API key
        fake_key("ghp_", 36),  # a GitHub token
        fake_key("", 32, seed=1),  # a bare 32-character key (Mistral's shape; this seed: 4 digits)
    ],
)
def test_a_name_shaped_key_passed_as_key_env_is_refused_never_echoed(key: str) -> None:
    for credential in ("personal", "server"):
        with pytest.raises(ConfigurationError) as info:
            recovery_tips(failure("AUTH"), credential, key_env=("OPENAI_API_KEY", key))
        assert "key_env" in str(info.value) and key not in str(info.value)


def test_a_registered_secret_passed_as_key_env_is_refused() -> None:
    from dshstream._core.redact import register_secret, unregister_secret

    secret = "plain_lowercase_secret_value"  # nothing in its shape says key
    assert recovery_tips(failure("AUTH"), "personal", key_env=secret)  # a name, as far as anyone can tell
    register_secret(secret)
    try:
        with pytest.raises(ConfigurationError) as info:
            recovery_tips(failure("AUTH"), "personal", key_env=secret)
        assert secret not in str(info.value)
    finally:
        unregister_secret(secret)


@pytest.mark.parametrize("name", ["OPENAI_API_KEY", "my_key2", "AzureOpenAIKey2024Prod", "HOME", "_X"])
def test_ordinary_variable_names_still_pass(name: str) -> None:
    assert name in recovery_tips(failure("AUTH"), "personal", key_env=name)[0]
