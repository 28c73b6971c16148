"""Recovery tips for a failure, scoped to who owns the credential that failed.

Contract: stdlib, ``types``, ``errors``, ``redact`` and ``validate`` only; pure functions, no I/O.

:func:`recovery_tips` answers "what can the person looking at this failure do about it?"
with a few short imperative sentences. The answer depends on the failure's **code** and on
the **credential source** of the request, never on the provider or model name and never on
upstream text:

1. ``"server"`` — an operator's key (a shared pool): administrative actions (rotate the
   key, add keys to the pool — ``api_key=KeyPool([...])``, :mod:`dshstream.adapters` —,
   add a fallback target: ``LlmService.register_chain``) where they apply.
2. ``"personal"`` — the user's own key: no pool or fallback advice (the user cannot manage
   those); check your own key instead, or switch back to the shared key (only when
   ``shared_key`` says there is one).
3. ``"subscription"`` — access through a paid plan: a denial (``AUTH``, ``QUOTA``,
   ``CREDIT_LIMIT``) gets only the billing copy; other failures get only the
   credential-neutral tips (no key or provider advice).

Rules:

* Every code has a stable answer for every credential source: the codes of
  :data:`~dshstream._core.errors.CODE_DEFAULTS` have their own entries; any other code
  (``HTTP_418``, a provider's own) is answered by its category, then its status.
* An HTTP 404 that is not a model the provider does not know (``HTTP_404``, or
  ``INVALID_REQUEST`` with status 404) is a wrong address: its tips point at the base URL
  (and name the ``base_url_option`` where given), not at the request's options.
* A tip never contains the failure's ``message``, ``detail`` or any other upstream text:
  tips are fixed sentences, filled only with what the caller passes (``key_env``, the
  names of variables; ``base_url_option``, the name of an option), both checked to be
  name-shaped and not key-shaped (a registered secret, a known key format such as Groq's
  ``gsk_...`` or an AWS access key id, which are valid variable names too), so a key
  passed by mistake is refused, never echoed.
* :func:`may_view_detail` says who may see ``failure.detail``: only someone who could
  replace the failing key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, TypeAlias, get_args

from .errors import LlmError
from .redact import known_secrets, redact
from .types import LlmFailure
from .validate import check_choice, describe, invalid

__all__ = ["CREDENTIAL_SOURCES", "CredentialSource", "may_view_detail", "recovery_tips"]

CredentialSource: TypeAlias = Literal["server", "personal", "subscription"]
CREDENTIAL_SOURCES: tuple[CredentialSource, ...] = get_args(CredentialSource)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_OPTION_NAME = re.compile(r"-{0,2}[A-Za-z][A-Za-z0-9_-]{0,39}=?")

#: what a subscription denial shows instead of any provider advice
BILLING: tuple[str, ...] = (
    "Check your subscription's billing status; this request needs an active plan that covers it.",
    "Upgrade your plan or contact support if the problem continues.",
)
#: a subscription's answer where a code has no neutral tip (no adapter for the provider)
_NOT_ON_PLAN: tuple[str, ...] = ("Choose another provider or model: this one is not available on your plan.",)
#: codes that are a denial of access or of payment (subscription: billing copy only)
_DENIALS = frozenset({"AUTH", "QUOTA", "CREDIT_LIMIT"})

_SWITCH_BACK = "Or switch back to the shared key."
#: the entry of an HTTP 404 that is no model-not-found (not a failure code: never a key of
#: CODE_DEFAULTS)
_NOT_FOUND = "(http-404)"
#: personal failures the shared key would avoid: the key's own trouble, not the request's
_SWITCHABLE = frozenset({"AUTH", "QUOTA", "CREDIT_LIMIT", "RATE_LIMIT", "MODEL_NOT_FOUND", "NO_ADAPTER"})
_FALLBACK = "Add a fallback target (LlmService.register_chain) so requests move on to another provider meanwhile."

# code -> (neutral, server, personal): neutral tips apply to everyone (and are all a
# subscription user gets for a non-denial); server/personal tips follow them.
_Entry: TypeAlias = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]

_TIPS: dict[str, _Entry] = {
    "AUTH": (
        (),
        (
            "Rotate the API key: the provider rejected it.",
            "Add a working key to the key pool (api_key=KeyPool([...])) so requests fail over to it.",
        ),
        ("Check that your API key is correct, active and allowed to use this model.",),
    ),
    "QUOTA": (
        (),
        (
            "Top up the provider account or raise its spending limit.",
            "Add a key from another funded account to the key pool (api_key=KeyPool([...])), "
            "or add a fallback target on another provider.",
        ),
        ("Top up your provider account or raise its spending limit.",),
    ),
    "CREDIT_LIMIT": (
        ("Retry with a smaller max_tokens.",),
        ("Top up the provider account so it can afford longer answers.",),
        ("Top up your provider account so it can afford longer answers.",),
    ),
    "RATE_LIMIT": (
        ("Wait a moment, then try again.",),
        ("Add keys to the key pool (api_key=KeyPool([...])) to spread the load.", _FALLBACK),
        ("Check your account's rate limits with the provider.",),
    ),
    "MODEL_NOT_FOUND": (
        ("Choose another model: this one is unknown, retired or not available.",),
        ("Update the configured model, or add a fallback target with another model (LlmService.register_chain).",),
        ("Check the model name and that your key has access to it.",),
    ),
    "CONTEXT_WINDOW_EXCEEDED": (
        (
            "Shorten the conversation or start a new one.",
            "Use a model with a larger context window.",
            "Count the tokens before sending with count_tokens(options) (the provider's own count).",
        ),
        (),
        (),
    ),
    "INVALID_REQUEST": (
        ("Check the request options (model, max_tokens, tools, messages) for a value this provider refuses.",),
        (),
        (),
    ),
    # not a code: an HTTP 404 that is no model-not-found (see _code_for): a wrong address
    _NOT_FOUND: (
        (),
        ("Check the configured base URL: the server has no such endpoint (HTTP 404).",),
        ("Check the base URL you configured: the server has no such endpoint (HTTP 404).",),
    ),
    "REDIRECT": (
        (),
        ("Point the configured base URL at the API itself: it answered with a redirect, which is never followed.",),
        ("Point the base URL you configured at the API itself: it answered with a redirect, never followed.",),
    ),
    "CONTENT_FILTER": (
        ("Rephrase the request: the provider's safety filter blocked it.",),
        (),
        (),
    ),
    "SERVER": (
        ("Try again in a moment: the provider failed on its side.",),
        (_FALLBACK,),
        (),
    ),
    "OVERLOADED": (
        ("Try again in a moment: the provider is overloaded.",),
        (_FALLBACK,),
        (),
    ),
    "TIMEOUT": (
        ("Try again, or allow more time for the answer.",),
        ("Raise the configured timeout, or add a fallback target with a faster model.",),
        (),
    ),
    "TRANSPORT": (
        ("Check the network connection, then try again.",),
        ("Check the network path to the provider (base URL, proxy, DNS, TLS).",),
        ("Check the base URL you configured.",),
    ),
    "TLS": (
        (),
        (
            "Trust the gateway's CA: pass verify= a CA bundle path or set REQUESTS_CA_BUNDLE.",
            "Or trust the system store: trust_store=\"system\" with the dshstream[truststore] extra.",
        ),
        (
            "Point verify= (or REQUESTS_CA_BUNDLE) at your network's CA bundle.",
            "Or trust the system store: trust_store=\"system\" with the dshstream[truststore] extra.",
        ),
    ),
    "PROXY_AUTH": (
        (),
        ("Give the proxy its credentials: a user and password in the proxy URL of proxies= or HTTPS_PROXY.",),
        ("Put your proxy user and password in the proxy URL of HTTPS_PROXY or proxies=.",),
    ),
    "STREAM_CLOSED": (
        ("Try again: the connection closed before the answer ended.",),
        (),
        (),
    ),
    "EMPTY_RESPONSE": (
        ("Try again, or rephrase the request: the model returned nothing.",),
        (_FALLBACK,),
        (),
    ),
    "MALFORMED_RESPONSE": (
        ("Try again; if it persists, the endpoint is not speaking the expected API.",),
        ("Check that the base URL points at the right kind of API.",),
        ("Check that the base URL you configured points at the right kind of API.",),
    ),
    "EVENT_TOO_LARGE": (
        ("Ask for a shorter answer.",),
        ("Raise the adapter's event size limit if such answers are expected.",),
        (),
    ),
    "CONTRACT_VIOLATION": (
        ("Report this as a bug in the adapter or listener that produced the stream.",),
        (),
        (),
    ),
    "ABORTED": (
        ("Send the request again if you did not mean to stop it.",),
        (),
        (),
    ),
    "TRUNCATED_TOOL_ARGUMENTS": (
        ("Retry with a larger max_tokens so the whole tool call fits.",),
        (),
        (),
    ),
    "INVALID_TOOL_ARGUMENTS": (
        ("Retry: the model wrote tool arguments that are not a JSON object.",),
        ("Describe the tool's parameters more precisely in its schema.",),
        (),
    ),
    "NO_ADAPTER": (
        (),
        ("Register an adapter for this provider, or configure its API key on the server.",),
        ("Add your API key for this provider.",),
    ),
    "INVALID_ADAPTER": (
        ("Fix the adapter registration the message names.",),
        (),
        (),
    ),
    "DUPLICATE_ADAPTER": (
        ("Register each provider name once, or replace the existing registration.",),
        (),
        (),
    ),
    "REGISTRATION_DISPOSED": (
        ("Register the adapter again: this registration was disposed.",),
        (),
        (),
    ),
    "INVALID_OPTIONS": (
        ("Fix the option the message names.",),
        (),
        (),
    ),
    "INVALID_OPTIONS_TYPE": (
        ("Pass a value of the type the message names.",),
        (),
        (),
    ),
    "UNKNOWN": (
        ("Try again; if it keeps failing, report it with the request id.",),
        ("Check the logs for the failure's detail.",),
        (),
    ),
}

# category -> the code whose tips an unlisted code gets
_BY_CATEGORY: dict[str, str] = {
    "rate_limit": "RATE_LIMIT",
    "timeout": "TIMEOUT",
    "content_blocked": "CONTENT_FILTER",
    "model_error": "MODEL_NOT_FOUND",
    "provider_overloaded": "SERVER",
}


def _code_for(failure: LlmFailure) -> str:
    """The code whose tips ``failure`` gets: its own, or one chosen by category/status."""
    code = failure.code
    if failure.status == 404 and code in ("INVALID_REQUEST", "HTTP_404"):
        return _NOT_FOUND  # nothing there: the address is wrong, not the request
    if code in _TIPS:
        return code
    by_category = _BY_CATEGORY.get(failure.category)
    if by_category is not None:
        return by_category
    status = failure.status
    if status is None and code.startswith("HTTP_") and code[5:].isdigit():
        status = int(code[5:])
    if status is not None:
        if status >= 500:
            return "SERVER"
        if status in (401, 403):
            return "AUTH"
        if status == 402:
            return "QUOTA"
        if status == 404:
            return _NOT_FOUND
        if status >= 400:
            return "INVALID_REQUEST"
    return "UNKNOWN"


def _names(value: object, field: str, pattern: re.Pattern[str], what: str) -> tuple[str, ...]:
    """``value`` (a name or a sequence of names) as a tuple of checked names."""
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise invalid(f"{field} must be a str, a sequence of str or None, got {describe(value)}", wrong_type=True)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise invalid(f"{field} must hold str values, got {describe(item)}", wrong_type=True)
        if not pattern.fullmatch(item) or _looks_like_a_key(item):
            # never echo it: it may be a key passed by mistake
            raise invalid(f"{field} must be {what}, got a str of {len(item)} characters that is not one")
        names.append(item)
    return tuple(names)


def _looks_like_a_key(name: str) -> bool:
    """Whether a name-shaped string is a credential passed by mistake: a registered secret,
    a known key format (Groq ``gsk_``, AWS ``AKIA``, Google ``AIza``, GitHub ``ghp_``...,
    which are also valid variable names), or a long token mixing upper and lower case and
    digits with no ``_`` or ``-`` between words, as no variable name is written."""
    if name in known_secrets() or redact(name) != name:
        return True
    return (
        len(name) >= 24
        and "_" not in name
        and "-" not in name
        and sum(ch.isdigit() for ch in name) >= 3
        and any(ch.islower() for ch in name)
        and any(ch.isupper() for ch in name)
    )


def _failure_of(failure: object) -> LlmFailure:
    if isinstance(failure, LlmError):
        return failure.failure
    if isinstance(failure, LlmFailure):
        return failure
    raise invalid(f"failure must be an LlmFailure or an LlmError, got {describe(failure)}", wrong_type=True)


def recovery_tips(
    failure: LlmFailure | LlmError,
    credential: CredentialSource = "server",
    *,
    key_env: str | Sequence[str] | None = None,
    base_url_option: str | Sequence[str] | None = None,
    shared_key: bool = True,
) -> tuple[str, ...]:
    """Short, actionable tips for ``failure`` as seen by the owner of a ``credential``
    (rules 1-3 say what each source gets; the tips never contain upstream text).

    ``key_env`` names the variable(s) the personal key is read from (``"OPENAI_API_KEY"``),
    ``base_url_option`` how the user points at another server (``"--base-url"``, or several
    ways: ``("--base-url", "LLAMACPP_BASE_URL")``); both only refine the personal tips.
    ``shared_key=False`` says there is no shared key to switch back to (a command line, a
    notebook).
    """
    source = _failure_of(failure)
    check_choice(credential, "credential", CREDENTIAL_SOURCES)
    variables = _names(key_env, "key_env", _ENV_NAME, "an environment variable name")
    options = _names(base_url_option, "base_url_option", _OPTION_NAME, "an option name such as --base-url")
    if not isinstance(shared_key, bool):
        raise invalid(f"shared_key must be a bool, got {describe(shared_key)}", wrong_type=True)

    code = _code_for(source)
    neutral, server, personal = _TIPS[code]
    if credential == "subscription":
        return BILLING if code in _DENIALS else neutral or _NOT_ON_PLAN
    if credential == "server":
        return neutral + server
    return neutral + _personal(code, personal, variables, options, shared_key)


def _personal(
    code: str, tips: tuple[str, ...], variables: tuple[str, ...], options: tuple[str, ...], shared_key: bool
) -> tuple[str, ...]:
    """The personal tips of ``code``, naming the key's variable and the base URL option(s)
    where the caller gave them."""
    named = " or ".join(variables)
    option = options[0] if options else None
    if code == _NOT_FOUND and options:
        tips = (
            f"Check {' or '.join(options)}: the server has no such endpoint there "
            "(an OpenAI-compatible API root usually ends in /v1).",
        )
    elif code == "NO_ADAPTER" and named:
        also = f", or pass {option} to use an OpenAI-compatible server" if option else ""
        tips = (f"Set {named} to your API key{also}.",)
    elif code == "NO_ADAPTER" and option:
        tips = (f"Add your API key for this provider, or pass {option} to use an OpenAI-compatible server.",)
    elif code == "AUTH" and named:
        tips = (f"Check the API key in {named}: it must be correct, active and allowed to use this model.",)
    if shared_key and code in _SWITCHABLE:
        tips = (*tips, _SWITCH_BACK)
    return tips


def may_view_detail(credential: CredentialSource, viewer_owns_key: bool) -> bool:
    """Whether a viewer may see ``failure.detail`` (the redacted upstream text): only one
    who could replace the failing key, the owner of a server key (the operator) or of a
    personal key (the user); a subscription denial never (its detail stays in operator
    logs)."""
    check_choice(credential, "credential", CREDENTIAL_SOURCES)
    if not isinstance(viewer_owns_key, bool):
        raise invalid(f"viewer_owns_key must be a bool, got {describe(viewer_owns_key)}", wrong_type=True)
    return viewer_owns_key and credential != "subscription"

