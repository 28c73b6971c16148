"""Checks for what a caller hands dshstream: request options, messages, tool specs and
adapter settings. A caller mistake fails where the value is built, with a clear error.

Contract: stdlib + ``errors`` + ``redaction`` only; pure functions, no I/O.

* Every check returns the (possibly normalized) value or raises
  :class:`~dshstream._core.errors.ConfigurationError` (code ``INVALID_OPTIONS``, also a
  :class:`ValueError`) for a bad value, or
  :class:`~dshstream._core.errors.ConfigurationTypeError` (code ``INVALID_OPTIONS_TYPE``, also a
  :class:`TypeError`) for a value of the wrong type.
* Messages name the field, the type of the value given and what is expected
  (``GenerateOptions.max_tokens must be a positive int, got int -5``). A value is echoed
  as a redacted ``repr`` of at most about 60 characters; ``bool`` never counts as a number.
* Credentials are never echoed, not even in part: :func:`check_api_key`,
  :func:`check_credential` and :func:`check_headers` name only the field and the problem
  (a control character such as ``\\r``/``\\n``/``\\t``, a character that is not
  Latin-1, surrounding whitespace, whitespace only); :func:`check_base_url` echoes the
  URL with its password and key-like query values redacted.
* Numbers must be finite: ``nan`` and ``inf`` are refused (they are not JSON).
"""

from __future__ import annotations

import math
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, cast
from urllib.parse import urlsplit

from .errors import ConfigurationError, error_for, make_failure
from .redact import redact

__all__ = [
    "check_api_key",
    "check_base_url",
    "check_bool_or_none",
    "check_choice",
    "check_credential",
    "check_event",
    "check_finite_number",
    "check_headers",
    "check_int",
    "check_mapping",
    "check_nonneg_int",
    "check_positive_int",
    "check_str",
    "check_str_or_none",
    "check_timeout",
    "describe",
    "invalid",
]

_ECHO_LIMIT = 60
_repr = reprlib.Repr()
_repr.maxstring = _ECHO_LIMIT
_repr.maxother = _ECHO_LIMIT
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 4
_repr.maxlevel = 2

# C0 controls, DEL and C1 controls: never valid in a header value or a key.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_NOT_LATIN1 = re.compile("[^\x00-\xff]")


def invalid(message: str, *, wrong_type: bool = False) -> ConfigurationError:
    """The exception for a caller mistake: ``ConfigurationTypeError`` (``INVALID_OPTIONS_TYPE``)
    when ``wrong_type``, else ``ConfigurationError`` (``INVALID_OPTIONS``)."""
    code = "INVALID_OPTIONS_TYPE" if wrong_type else "INVALID_OPTIONS"
    error = error_for(make_failure(code, message))
    assert isinstance(error, ConfigurationError)
    return error


def _fail(message: str, *, wrong_type: bool = False) -> NoReturn:
    raise invalid(message, wrong_type=wrong_type)


def describe(value: object) -> str:
    """``"<type> <short redacted repr>"`` of ``value`` for an error message (bounded size)."""
    kind = type(value).__name__
    try:
        text = _repr.repr(value)
    except Exception:  # noqa: BLE001 - a hostile __repr__ must not hide the real error
        return kind
    text = redact(text)
    if len(text) > _ECHO_LIMIT:
        text = text[: _ECHO_LIMIT - 3] + "..."
    return f"{kind} {text}"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --------------------------------------------------------------------------- scalars


def check_str(value: object, field: str, *, nonempty: bool = True) -> str:
    """``value`` if it is a ``str`` (non-empty and not only whitespace when ``nonempty``)."""
    if not isinstance(value, str):
        _fail(f"{field} must be a {'non-empty ' if nonempty else ''}str, got {describe(value)}", wrong_type=True)
    if nonempty and not value.strip():
        _fail(f"{field} must be a non-empty str, got {describe(value)}")
    return value


def check_str_or_none(value: object, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    _fail(f"{field} must be a str or None, got {describe(value)}", wrong_type=True)


def check_bool_or_none(value: object, field: str) -> bool | None:
    if value is None or type(value) is bool:
        return value
    _fail(f"{field} must be True, False or None, got {describe(value)}", wrong_type=True)


def check_int(value: object, field: str, *, minimum: int, what: str) -> int:
    """``value`` if it is an ``int`` (not ``bool``) ``>= minimum``; ``what`` names the
    expectation in the message (``"a positive int"``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"{field} must be {what}, got {describe(value)}", wrong_type=True)
    if value < minimum:
        _fail(f"{field} must be {what}, got {describe(value)}")
    return value


def check_positive_int(value: object, field: str) -> int:
    """``value`` if it is an ``int`` ``>= 1`` (``bool`` refused)."""
    return check_int(value, field, minimum=1, what="a positive int")


def check_nonneg_int(value: object, field: str) -> int:
    """``value`` if it is an ``int`` ``>= 0`` (``bool`` refused)."""
    return check_int(value, field, minimum=0, what="an int >= 0")


def check_finite_number(value: object, field: str, *, minimum: float | None = 0.0) -> float:
    """``value`` as given if it is a finite ``int``/``float`` (not ``bool``) ``>= minimum``
    (no lower bound when ``minimum`` is ``None``)."""
    what = "a finite number" + (f" >= {minimum:g}" if minimum is not None else "")
    if not _is_number(value):
        _fail(f"{field} must be {what}, got {describe(value)}", wrong_type=True)
    assert isinstance(value, (int, float))
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int too large for a float
        finite = False
    if not finite or (minimum is not None and value < minimum):
        _fail(f"{field} must be {what}, got {describe(value)}")
    return value


def check_timeout(value: object, field: str, *, allow_none: bool = True) -> float | None:
    """Seconds as a ``float``: a finite ``int``/``float`` (not ``bool``) ``> 0``; ``None``
    passes when ``allow_none``."""
    if value is None and allow_none:
        return None
    what = "a positive finite number of seconds" + (" or None" if allow_none else "")
    if not _is_number(value):
        _fail(f"{field} must be {what}, got {describe(value)}", wrong_type=True)
    assert isinstance(value, (int, float))
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        _fail(f"{field} must be {what}, got {describe(value)}")
    return seconds


def check_choice(value: object, field: str, choices: Iterable[str]) -> str:
    options = tuple(choices)
    if isinstance(value, str) and value in options:
        return value
    expected = ", ".join(repr(c) for c in options)
    _fail(f"{field} must be one of {expected}, got {describe(value)}", wrong_type=not isinstance(value, str))


def check_mapping(value: object, field: str) -> Mapping[Any, Any]:
    if isinstance(value, Mapping):
        return value
    _fail(f"{field} must be a mapping (a dict), got {describe(value)}", wrong_type=True)


def check_event(value: object, field: str) -> Any:
    """``value`` if it behaves like a :class:`threading.Event` (callable ``is_set`` and
    ``set``; ``wait`` is used when present)."""
    if callable(getattr(value, "is_set", None)) and callable(getattr(value, "set", None)):
        return value
    _fail(
        f"{field} must be a threading.Event (or None), got {describe(value)}; "
        "pass threading.Event() and call .set() on it to cancel",
        wrong_type=True,
    )


# --------------------------------------------------------------------------- adapter settings


def _header_problem(value: str) -> str | None:
    """What makes ``value`` unusable in an HTTP header, without quoting any of it."""
    if _CONTROL.search(value):
        return "contains a control character (such as \\r, \\n or \\t)"
    if _NOT_LATIN1.search(value):
        return "contains a character that is not allowed in an HTTP header (not Latin-1)"
    if not value.strip():
        return "is only whitespace"
    if value != value.strip():
        return "has leading or trailing whitespace"
    return None


def check_api_key(value: object, field: str = "api_key") -> str | None:
    """An API key fit for an HTTP header, or ``None`` for ``None``/``""`` (no key); a bad
    one is refused naming ``field`` and the problem, never any part of the key."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        _fail(f"{field} must be a str or None, got {type(value).__name__}", wrong_type=True)
    problem = _header_problem(value)
    if problem is not None:
        _fail(f"{field} {problem}; the key was not used")
    return value


def check_credential(value: object, field: str = "api_key") -> str | Callable[[], str] | None:
    """A credential setting: a zero-argument callable (returned as it is; each value it
    returns is checked with :func:`check_api_key` when it is called), or a key as
    :func:`check_api_key` accepts it. Anything else is refused naming only its type."""
    if callable(value) and not isinstance(value, (str, bytes, type)):
        return cast("Callable[[], str]", value)
    if value is not None and not isinstance(value, str):
        _fail(
            f"{field} must be a str, a zero-argument callable returning one, or None, "
            f"got {type(value).__name__}",
            wrong_type=True,
        )
    return check_api_key(value, field)


def check_headers(value: object, field: str = "headers") -> dict[str, str]:
    """Extra HTTP headers as a ``dict``: a mapping of non-empty ``str`` names (no
    whitespace, ``:`` or control characters) to ``str`` values fit for a header. Values
    are never echoed (they may be credentials); ``None`` gives ``{}``."""
    if value is None:
        return {}
    headers = check_mapping(value, field)
    out: dict[str, str] = {}
    for name, item in headers.items():
        if not isinstance(name, str):
            _fail(f"{field} names must be str, got {type(name).__name__}", wrong_type=True)
        if not name or _CONTROL.search(name) or _NOT_LATIN1.search(name) or re.search(r"[\s:]", name):
            _fail(f"{field} has an invalid header name {describe(name)}")
        if not isinstance(item, str):
            _fail(f"{field}[{name!r}] must be a str, got {type(item).__name__}", wrong_type=True)
        problem = _header_problem(item) if item else None
        if problem is not None:
            _fail(f"{field}[{name!r}] {problem}; the value was not used")
        out[name] = item
    return out


def check_base_url(value: object, field: str = "base_url") -> str:
    """``value`` if it is an ``http://`` or ``https://`` URL with a host and no
    whitespace or control characters. The message echoes the URL redacted (no password,
    no key-like query value)."""
    expected = "expected an http:// or https:// URL with a host, like 'https://api.openai.com/v1'"
    if not isinstance(value, str):
        _fail(f"{field} is not a valid URL: {expected}, got {type(value).__name__}", wrong_type=True)
    problem: str | None = None
    if _CONTROL.search(value) or re.search(r"\s", value):
        problem = "it contains whitespace or a control character"
    else:
        try:
            parts = urlsplit(value)
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError:
            problem = "it cannot be parsed"
        else:
            if parts.scheme.lower() not in ("http", "https"):
                problem = "it does not start with http:// or https://"
            elif not host:
                problem = "it has no host"
    if problem is None:
        return value
    shown = redact(value, limit=_ECHO_LIMIT)
    shown = _CONTROL.sub("?", shown)
    _fail(f"{field} is not a valid URL ({problem}): {expected}, got {shown!r}")
