"""Fallback chains, as values: a chain's targets, the failures that move a request on to
the next target, and the request each target is sent.

Contract: stdlib, ``types``, ``errors``, ``request`` and ``validate`` only; pure values and
functions, no I/O (:mod:`dshstream._fallback` runs a chain for the service).

1. **A target** (:class:`Target`) is a provider route, a model (``None``: the request's)
   and the request options it overrides. Every value is checked where it is built and a
   mistake names the field (``Target.max_tokens``), as :class:`GenerateOptions` does. An
   override left ``None`` keeps the request's value.
2. **A chain** (:class:`FallbackChain`) is a name, one or more targets, and the failure
   codes that move a request on (:data:`DEFAULT_FALLBACK_CODES`: the target can't serve
   now). Each code must be one dshstream builds, or ``HTTP_<status>``: a typo
   (``SERVER_ERROR``) fails when the chain is built, naming it. ``ABORTED`` is refused: a
   cancel is the caller's and never moves on. ``SERVER`` also covers every ``HTTP_5xx``
   code. :data:`SKIP_CODES` are not failures of the target but refusals before anything was
   sent (a part, schema or tool it can't take; no adapter): such a target is skipped,
   whatever the codes.
3. **A target's request** (:func:`target_options`): its provider and model; its overrides
   over the request's values; what is left of the request's ``timeout``, which bounds the
   whole chain (a target's own ``timeout`` can only shorten it); and ``max_retries``: the
   target's, else the request's, else ``0`` for every target but the last — a chain moves
   on instead of waiting out one provider's backoff, and the last target keeps its
   adapter's retries. The request's ``extra_body`` is provider-specific, so a request to a
   chain must not carry one (:func:`check_chain_request`: ``INVALID_OPTIONS`` naming the
   field); a target's own ``extra_body`` goes to that target only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import Any

from .errors import CODE_DEFAULTS
from .request import GenerateOptions, Message, ReasoningEffort, check_overridable
from .types import LlmFailure
from .validate import check_mapping, check_str, describe, invalid

__all__ = [
    "DEFAULT_FALLBACK_CODES",
    "SKIP_CODES",
    "FallbackChain",
    "Target",
    "check_chain_request",
    "target_options",
]

#: the failures that mean "this target can't serve now" (rule 2)
DEFAULT_FALLBACK_CODES: frozenset[str] = frozenset(
    {
        "OVERLOADED",
        "RATE_LIMIT",
        "SERVER",
        "TIMEOUT",
        "MODEL_NOT_FOUND",
        "EMPTY_RESPONSE",
        "TRANSPORT",
        "STREAM_CLOSED",
    }
)
#: refusals before anything was sent: the target is skipped, with the refusal as the reason
SKIP_CODES: frozenset[str] = frozenset({"INVALID_OPTIONS", "INVALID_OPTIONS_TYPE", "NO_ADAPTER"})
_HTTP_CODE = re.compile(r"HTTP_[1-5][0-9][0-9]")


@dataclass(frozen=True, slots=True)
class Target:
    """One target of a fallback chain: a registered provider route, the model to ask
    (``None``: the request's own) and the request options it overrides (``None`` keeps the
    request's value). ``extra_body`` goes to this target only."""

    provider: str
    model: str | None = None
    _: KW_ONLY
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: ReasoningEffort | None = None
    idle_timeout: float | None = None
    timeout: float | None = None
    max_retries: int | None = None
    extra_body: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        name = "Target"
        check_str(self.provider, f"{name}.provider")
        if self.model is not None:
            check_str(self.model, f"{name}.model")
        check_overridable(self, name)
        if self.extra_body is not None:
            object.__setattr__(self, "extra_body", dict(check_mapping(self.extra_body, f"{name}.extra_body")))

    def label(self, request_model: str) -> str:
        """``provider/model`` with the model this target asks for."""
        return f"{self.provider}/{self.model or request_model}"


@dataclass(frozen=True, slots=True)
class FallbackChain:
    """A registered chain (rule 2): its name, its targets in order, the codes that move on."""

    name: str
    targets: tuple[Target, ...]
    codes: frozenset[str] = DEFAULT_FALLBACK_CODES

    @classmethod
    def build(cls, name: object, targets: object, codes: object = None) -> FallbackChain:
        """A checked chain (rule 2); a mistake raises ``ConfigurationError`` naming it."""
        label = check_str(name, "register_chain name")
        if isinstance(targets, (str, bytes, Mapping)) or not isinstance(targets, Iterable):
            raise invalid(f"register_chain targets must be a sequence of Target, got {describe(targets)}", wrong_type=True)
        items = tuple(targets)
        if not items:
            raise invalid(f"register_chain targets of {label!r} must hold at least one Target")
        for i, target in enumerate(items):
            if not isinstance(target, Target):
                hint = "; build one with Target(provider, model)" if isinstance(target, (str, tuple)) else ""
                raise invalid(f"register_chain targets[{i}] must be a Target, got {describe(target)}{hint}", wrong_type=True)
        return cls(label, items, DEFAULT_FALLBACK_CODES if codes is None else _codes(codes))

    def moves_on(self, failure: LlmFailure) -> bool:
        """Whether ``failure`` (before any content) sends the request to the next target."""
        code = failure.code
        if code == "ABORTED":
            return False
        return code in self.codes or ("SERVER" in self.codes and code.startswith("HTTP_5"))


def _codes(value: object) -> frozenset[str]:
    field_name = "register_chain fall_back_on"
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise invalid(f"{field_name} must be a collection of failure codes, got {describe(value)}", wrong_type=True)
    codes: set[str] = set()
    for item in value:
        if not isinstance(item, str):
            raise invalid(f"{field_name} must hold failure codes (str), got {describe(item)}", wrong_type=True)
        if item == "ABORTED":
            raise invalid(f"{field_name} can't hold ABORTED: a cancel is the caller's and never falls back")
        if item not in CODE_DEFAULTS and not _HTTP_CODE.fullmatch(item):
            known = ", ".join(sorted(DEFAULT_FALLBACK_CODES))
            raise invalid(f"{field_name}: {describe(item)} is not a failure code (those that move on by default: {known})")
        codes.add(item)
    return frozenset(codes)


def check_chain_request(options: GenerateOptions, chain: str) -> None:
    """Refuse what a request to a chain can't carry (rule 3): its own ``extra_body``."""
    if options.extra_body:
        raise invalid(
            f"GenerateOptions.extra_body can't go to the fallback chain {chain!r}: it is provider-specific; "
            "give each Target its own extra_body"
        )


def target_options(
    options: GenerateOptions,
    target: Target,
    *,
    last: bool,
    remaining: float | None,
    messages: Sequence[Message],
) -> GenerateOptions:
    """The request ``target`` is sent (rule 3); ``remaining`` is what is left of the
    request's ``timeout`` (``None``: it has none), ``messages`` the history made portable
    for the target."""
    timeout = remaining
    if target.timeout is not None:
        timeout = target.timeout if timeout is None else min(timeout, target.timeout)
    retries = target.max_retries if target.max_retries is not None else options.max_retries
    if retries is None and not last:
        retries = 0
    return replace(
        options,
        provider=target.provider,
        model=target.model or options.model,
        messages=tuple(messages),
        max_tokens=target.max_tokens if target.max_tokens is not None else options.max_tokens,
        temperature=target.temperature if target.temperature is not None else options.temperature,
        reasoning_effort=target.reasoning_effort if target.reasoning_effort is not None else options.reasoning_effort,
        idle_timeout=target.idle_timeout if target.idle_timeout is not None else options.idle_timeout,
        timeout=timeout,
        max_retries=retries,
        extra_body=target.extra_body,
    )
