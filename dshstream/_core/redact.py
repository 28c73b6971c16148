"""Secret redaction for failure details, logs and diagnostic dumps.

Contract: stdlib only, no I/O, pure functions plus one process-wide registry.

:func:`redact` works in three passes, always in this order:

1. **Exact secrets.** Every occurrence of each given secret (non-empty, at least 4
   characters) is replaced with ``[REDACTED]``, and so are its encoded echoes: any
   percent-encoding of it (``quote``, ``quote_plus``, ``-`` as ``%2D``/``%2d``, mixed),
   a JSON-escaped ``\\/``, its hex form (any case), and its base64 forms (standard and
   URL-safe, with or without padding). Base64 is also caught when the secret sits inside
   a longer encoded value (``base64("Bearer <key>")``, ``base64("user:<key>")``): the
   whole base64 run that contains the key's alignment-independent core is replaced.
   A secret is scanned for only where a few substring tests on the text, normalised the
   ways these encodings undo, say a form of it can be there (:func:`_may_hold`), so the
   cost of a message grows by microseconds, not milliseconds, per registered secret.
2. **Patterns.** ``Bearer``/``Basic`` credentials, well-known key formats (``sk-``,
   ``sk-ant-``, ``sk-proj-``, ``sk-or-v1-``, Google ``AIza``, Groq ``gsk_``, ``xai-``,
   Hugging Face ``hf_``, ``nvapi-``, ``pplx-``, GitHub, AWS access key ids, Slack, JWTs),
   Discord webhook tokens, values of sensitive query parameters (``key``, ``api_key``,
   ``api-key``, ``apikey``, ``access_token``, ``refresh_token``, ``token``,
   ``signature``, ``sig``, ``x-amz-signature`` ...), URL passwords
   (``scheme://user:pass@``), sensitive header lines (``x-api-key: ...``) and string
   values of sensitive keys inside JSON or Python-repr text (``"api_key": "..."``,
   also inside double-encoded JSON ``\\"api_key\\": \\"...\\"``).
3. **Truncation** to ``limit`` characters, appending ``…[truncated N chars]``. Redaction
   always runs on the whole text first, so a secret straddling the cut is still caught.

:func:`redact` is pure: it only removes the secrets it is given. Adapters call
:func:`register_secret` with their key; :mod:`dshstream._core.log` and
:mod:`dshstream._core.classify` add :func:`known_secrets` to whatever they are given.
:func:`redact_obj` applies the same rules to nested dict/list structures.
"""

from __future__ import annotations

import base64
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

__all__ = [
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SENSITIVE_KEYS",
    "TRUNCATED",
    "is_sensitive_key",
    "known_secrets",
    "redact",
    "redact_obj",
    "register_secret",
    "truncate",
    "unregister_secret",
]

REDACTED = "[REDACTED]"
TRUNCATED = "[TRUNCATED]"
MIN_SECRET_LENGTH = 4
_MAX_DEPTH = 8
_MIN_BASE64_CORE = 8

# Sensitive key names, compared after lower-casing and dropping non-alphanumerics
# ("X-Api-Key", "x_api_key" and "xApiKey" all become "xapikey").
SENSITIVE_KEYS: frozenset[str] = frozenset(
    {
        "authorization",
        "proxyauthorization",
        "xapikey",
        "apikey",
        "apikeys",
        "xgoogapikey",
        "ocpapimsubscriptionkey",
        "password",
        "passwd",
        "token",
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "sessiontoken",
        "authtoken",
        "bearertoken",
        "secret",
        "clientsecret",
        "apisecret",
        "secretkey",
        "secretaccesskey",
        "awssecretaccesskey",
        "xamzsecuritytoken",
        "privatekey",
        "cookie",
        "setcookie",
        "databaseurl",
        "postgresurl",
        "webhookurl",
        "signedurl",
    }
)


def _norm_key(key: str) -> str:
    return "".join(ch for ch in key.lower() if ch.isalnum())


def is_sensitive_key(key: str) -> bool:
    """True when ``key`` names a credential (case, ``-`` and ``_`` are ignored)."""
    return _norm_key(key) in SENSITIVE_KEYS


# --------------------------------------------------------------------------- registry

_registry: set[str] = set()
_registry_lock = threading.Lock()


def register_secret(secret: str | None) -> None:
    """Remember ``secret`` process-wide so log and failure redaction removes it; one
    shorter than :data:`MIN_SECRET_LENGTH` is ignored."""
    if not secret or len(secret) < MIN_SECRET_LENGTH:
        return
    with _registry_lock:
        _registry.add(secret)


def unregister_secret(secret: str) -> None:
    """Forget a secret registered with :func:`register_secret` (no error if unknown)."""
    with _registry_lock:
        _registry.discard(secret)


def known_secrets() -> frozenset[str]:
    """A snapshot of every registered secret."""
    with _registry_lock:
        return frozenset(_registry)


# --------------------------------------------------------------------------- exact secrets

_B64_SET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")


def _char_pattern(ch: str) -> str:
    """A regex matching ``ch`` raw or in any percent-encoding of its UTF-8 bytes."""
    encoded = "".join(
        "%" + "".join(f"[{d.upper()}{d.lower()}]" if d.isalpha() else d for d in f"{b:02X}")
        for b in ch.encode("utf-8")
    )
    alternatives = [re.escape(ch), encoded]
    if ch == " ":
        alternatives.append(r"\+")
    if ch == "/":
        alternatives.append(r"\\/")
    return "(?:" + "|".join(alternatives) + ")"


def _base64_cores(data: bytes) -> list[str]:
    """Base64 fragments that appear in any base64 text containing ``data``.

    For each of the three byte alignments the secret can have inside a longer value, the
    groups made only of secret bytes encode identically whatever surrounds them.
    """
    cores: list[str] = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode("ascii")
        groups = (pad + len(data)) // 3
        start = 4 if pad else 0
        core = encoded[start : 4 * groups]
        if len(core) >= _MIN_BASE64_CORE:
            cores.append(core)
    return cores


@functools.lru_cache(maxsize=8192)
def _secret_forms(secret: str) -> tuple[bool, str, tuple[str, ...]]:
    """What :func:`_may_hold` looks for (pass 1's sieve): whether the secret can be
    sieved at all, its hex form, its base64 terms (also the base64 scan's)."""
    # A "%", a backslash, or a space beside a "+" in the secret itself would let the
    # normalised views below hide a form of it: such a secret always gets the full scan.
    sievable = "%" not in secret and "\\" not in secret and not (" " in secret and "+" in secret)
    data = secret.encode("utf-8")
    # Whole base64 encodings (standard, URL-safe) and the cores of every alignment.
    terms: set[str] = set()
    for enc in (base64.b64encode(data).decode("ascii"), base64.urlsafe_b64encode(data).decode("ascii")):
        terms.add(enc.rstrip("="))
    for core in _base64_cores(data):
        terms.add(core)
        terms.add(core.replace("+", "-").replace("/", "_"))
    return sievable, data.hex(), tuple(t for t in terms if len(t) >= _MIN_BASE64_CORE)


@functools.lru_cache(maxsize=256)
def _secret_regexes(secret: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """(raw/percent/hex regex, base64 regex) for one secret; compiled once per secret."""
    data = secret.encode("utf-8")
    # Raw, percent-encoded (quote, quote_plus, "-" as %2D, mixed case), JSON "\/"; hex any case.
    raw = "".join(_char_pattern(ch) for ch in secret)
    plain = re.compile(f"{raw}|(?i:{data.hex()})")
    terms = _secret_forms(secret)[2]
    if not terms:
        return plain, None
    body = "|".join(re.escape(t).replace("/", r"\\?/") for t in sorted(terms, key=len, reverse=True))
    return plain, re.compile(body)


def _redact_base64(text: str, pattern: re.Pattern[str]) -> str:
    """Replace every whole base64 run that contains a match of ``pattern``."""
    spans: list[tuple[int, int]] = []
    for match in pattern.finditer(text):
        start, end = match.span()
        if spans and start < spans[-1][1]:
            continue
        while start > 0 and text[start - 1] in _B64_SET:
            start -= 1
        while end < len(text) and text[end] in _B64_SET:
            end += 1
        while end < len(text) and text[end] == "=":
            end += 1
        if spans and start <= spans[-1][1]:
            start = spans.pop()[0]
        spans.append((start, end))
    if not spans:
        return text
    pieces: list[str] = []
    last = 0
    for start, end in spans:
        pieces.append(text[last:start])
        pieces.append(REDACTED)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


class _Views:
    """One text normalised the ways pass 1's encodings undo: JSON's ``\\/`` as ``/``, every
    percent-escape decoded (and ``+`` as a space), lower case for hex."""

    __slots__ = ("text", "unslashed", "decoded", "plus", "lower")

    def __init__(self, text: str) -> None:
        self.text = text
        self.unslashed = text.replace("\\/", "/")
        self.decoded = unquote(self.unslashed) if "%" in text else self.unslashed
        self.plus: str | None = None
        self.lower = text.lower()


def _may_hold(secret: str, views: _Views) -> bool:
    """Whether ``views`` can hold a form of ``secret`` that pass 1 replaces: a few
    substring tests instead of two regular expressions per secret, so a process with
    thousands of registered keys (an adapter per user's key) redacts in milliseconds.
    Never ``False`` where the full scan would replace something (every form, decoded,
    is the secret, its hex or a base64 term)."""
    sievable, hexed, terms = _secret_forms(secret)
    if not sievable or secret in views.unslashed or secret in views.decoded or hexed in views.lower:
        return True
    # A stray "%" (or "%X") just before an echo whose first character is a raw hex digit
    # decodes with it, hiding the echo from the decoded view: such a secret gets the full scan.
    if secret[0] in _HEX_DIGITS and views.decoded is not views.unslashed:
        return True
    if " " in secret:
        if views.plus is None:
            views.plus = views.decoded.replace("+", " ")
        if secret in views.plus:
            return True
    return any(term in views.unslashed for term in terms)


def _redact_exact(text: str, secrets: Iterable[str]) -> str:
    wanted: set[str] = set()
    for item in secrets:
        secret: object = item  # callers sometimes pass None for an unset key
        if not isinstance(secret, str):
            continue
        for candidate in (secret, secret.strip()):
            if len(candidate) >= MIN_SECRET_LENGTH:
                wanted.add(candidate)
    if not wanted:
        return text
    views = _Views(text)
    # Longest first, ties by value: the same text redacts the same way in every process
    # (a base64 run is replaced whole, so which of two secrets goes first can matter).
    for secret in sorted(wanted, key=lambda s: (-len(s), s)):
        if not _may_hold(secret, views):
            continue
        plain, b64 = _secret_regexes(secret)
        if b64 is not None:
            text = _redact_base64(text, b64)
        text = plain.sub(REDACTED, text)
        if text is not views.text:
            views = _Views(text)
    return text


# --------------------------------------------------------------------------- patterns

_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,20}://[^\s/:@?#\"'<>]*:)([^\s/@?#\"'<>]+)(@)")

_QUOTED_KEY_VALUE = re.compile(
    r"""(?P<q>["'])(?P<key>[A-Za-z0-9_\-]{1,64})(?P=q)(?P<sep>\s*:\s*)"""
    r"""(?P<vq>["'])(?P<value>(?:\\.|(?!(?P=vq))[^\\\n])*)(?P=vq)"""
)
_ESCAPED_KEY_VALUE = re.compile(
    r"""\\"(?P<key>[A-Za-z0-9_\-]{1,64})\\"(?P<sep>\s*:\s*)\\"(?P<value>(?:(?!\\").){0,4096}?)\\\""""
)
_HEADER_LINE = re.compile(
    r"(?i)(?<![A-Za-z0-9_\-])(proxy-authorization|authorization|x-api-key|api-key|x-goog-api-key|"
    r"ocp-apim-subscription-key|set-cookie|cookie)(\s*[:=]\s*)(?!(?:bearer|basic)\s|\[REDACTED\])"
    r"([^\s,'\"]+)"
)
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20|\+)(?!\[REDACTED\])[A-Za-z0-9\-._~+/%]+=*")
_BASIC = re.compile(r"\b(Basic|BASIC|basic)(\s+)(?!\[REDACTED\])[A-Za-z0-9+/]{8,}={0,2}")
_QUERY_PARAM = re.compile(
    r"(?i)(?<![A-Za-z0-9_.\-])("
    r"key|api_key|api-key|apikey|access_token|refresh_token|id_token|token|client_secret|"
    r"password|signature|sig|x-amz-signature|x-amz-security-token|x-amz-credential|"
    r"x-goog-signature|x-goog-credential"
    r")(=)(?!\[REDACTED\])([^&#\s\"'<>]+)"
)
_DISCORD_WEBHOOK = re.compile(
    r"(?i)(discord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d+/)([A-Za-z0-9_\-]+)"
)
_KEY_FORMATS = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{14,}"  # OpenAI, Anthropic sk-ant-, sk-proj-, OpenRouter sk-or-v1-, DeepSeek
    r"|sk_(?:live|test)_[A-Za-z0-9]{8,}"  # Stripe-style
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google API keys
    r"|gsk_[A-Za-z0-9]{16,}"  # Groq
    r"|xai-[A-Za-z0-9_\-]{16,}"  # xAI
    r"|hf_[A-Za-z0-9]{16,}"  # Hugging Face
    r"|nvapi-[A-Za-z0-9_\-]{16,}"  # NVIDIA
    r"|pplx-[A-Za-z0-9]{16,}"  # Perplexity
    r"|r8_[A-Za-z0-9]{16,}"  # Replicate
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key id
    r"|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"  # JWT
    r")"
)


def _sub_quoted(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group("key")) or match.group("value") == REDACTED:
        return match.group(0)
    q, vq = match.group("q"), match.group("vq")
    return f"{q}{match.group('key')}{q}{match.group('sep')}{vq}{REDACTED}{vq}"


def _sub_escaped(match: re.Match[str]) -> str:
    if not is_sensitive_key(match.group("key")):
        return match.group(0)
    return f'\\"{match.group("key")}\\"{match.group("sep")}\\"{REDACTED}\\"'


def _redact_patterns(text: str) -> str:
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(3), text)
    text = _QUOTED_KEY_VALUE.sub(_sub_quoted, text)
    text = _ESCAPED_KEY_VALUE.sub(_sub_escaped, text)
    text = _HEADER_LINE.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _BASIC.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _QUERY_PARAM.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
    text = _DISCORD_WEBHOOK.sub(lambda m: m.group(1) + REDACTED, text)
    return _KEY_FORMATS.sub(REDACTED, text)


# --------------------------------------------------------------------------- public API


def truncate(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters and append ``…[truncated N chars]``.

    ``limit`` counts the characters kept; the marker comes on top. Does not redact: call
    it on text that :func:`redact` already cleaned.
    """
    if limit < 0:
        raise ValueError("limit must be >= 0")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[truncated {len(text) - limit} chars]"


def redact(text: str, secrets: Iterable[str] = (), limit: int | None = None) -> str:
    """Remove ``secrets`` (and their encodings), then credential patterns, then cut to
    ``limit`` characters, marker excluded (the module's passes 1-3).

    With a ``limit``, a text far longer than it is redacted only as far as the kept part
    can reach (a head of ``8 * limit + 16 KiB``; the rest when redaction shrank that head
    below ``limit + 8 KiB``), so a 10 MB exception message costs what a short one does; the
    marker then counts the unread tail as it was.
    """
    if limit is not None and len(text) > _head_length(limit):
        head = text[: _head_length(limit)]
        cleaned = _redact_patterns(_redact_exact(head, secrets))
        if len(cleaned) >= limit + _STRADDLE_MARGIN:
            dropped = len(cleaned) - limit + len(text) - len(head)
            return f"{cleaned[:limit]}…[truncated {dropped} chars]"
    text = _redact_exact(text, secrets)
    text = _redact_patterns(text)
    if limit is not None:
        text = truncate(text, limit)
    return text


#: room after the kept part for a token cut at the head's end (it can't reach the kept part)
_STRADDLE_MARGIN = 8192


def _head_length(limit: int) -> int:
    return 8 * limit + 2 * _STRADDLE_MARGIN


def redact_obj(obj: object, secrets: Iterable[str] = (), *, _depth: int = 0) -> object:
    """A redacted copy of a nested structure (for logging request/response dumps).

    Values under sensitive keys (:data:`SENSITIVE_KEYS`, any depth) become
    ``[REDACTED]``; strings (values and string keys) go through :func:`redact`;
    mappings become dicts, lists/tuples/sets become lists (tuples stay tuples); ``bytes``
    are decoded (UTF-8, replacement) and redacted; ``None``, bools and numbers pass
    through; any other object is replaced by its redacted ``repr``. Anything nested
    deeper than 8 levels becomes ``[TRUNCATED]``.
    """
    secret_list = secrets if isinstance(secrets, (list, tuple, frozenset, set)) else list(secrets)
    if _depth > _MAX_DEPTH:
        return TRUNCATED
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return redact(obj, secret_list)
    if isinstance(obj, (bytes, bytearray)):
        return redact(bytes(obj).decode("utf-8", "replace"), secret_list)
    if isinstance(obj, Mapping):
        out: dict[object, object] = {}
        for key, value in obj.items():
            if isinstance(key, str):
                new_key: object = redact(key, secret_list)
                if is_sensitive_key(key):
                    out[new_key] = REDACTED
                    continue
            else:
                new_key = key
            out[new_key] = redact_obj(value, secret_list, _depth=_depth + 1)
        return out
    if isinstance(obj, tuple):
        return tuple(redact_obj(v, secret_list, _depth=_depth + 1) for v in obj)
    if isinstance(obj, (list, set, frozenset)):
        return [redact_obj(v, secret_list, _depth=_depth + 1) for v in obj]
    return redact(repr(obj), secret_list)
