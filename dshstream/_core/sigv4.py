"""AWS Signature Version 4 (sans-IO): hmac and hashlib only.

Contract:

1. :func:`sign_headers` signs one request — method, the URL exactly as it goes on the
   wire (path already percent-encoded: a Bedrock model id ``us.amazon.nova-micro-v1:0``
   travels as ``us.amazon.nova-micro-v1%3A0``), its headers and body bytes — and returns
   the headers to add: ``x-amz-date``, ``x-amz-security-token`` (with a session token),
   ``x-amz-content-sha256`` (when asked) and ``authorization``.
2. Canonical request, as AWS specifies it for every service but S3: the canonical URI
   is the wire path URI-encoded once more (``%`` -> ``%25``; unreserved characters
   ``A-Za-z0-9-._~`` and ``/`` kept); an empty path is ``/``. The canonical query is
   every ``name=value`` pair decoded, re-encoded with the unreserved set only and sorted
   (by name, then value). Header names are lowercased, values trimmed with inner runs of
   spaces collapsed, repeated headers joined with ``,``; every header given is signed
   (plus ``host``, taken from the URL when absent) except the hop-by-hop and
   client-mutable ones in :data:`UNSIGNED_HEADERS`.
3. String to sign: ``AWS4-HMAC-SHA256``, the ``YYYYMMDD'T'HHMMSS'Z'`` time, the scope
   ``date/region/service/aws4_request`` and the SHA-256 of the canonical request;
   the signing key is the HMAC chain over date, region, service and ``aws4_request``.
4. :class:`AwsCredentials` never shows its secret key or session token in ``repr``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import quote, unquote, urlsplit

__all__ = [
    "ALGORITHM",
    "UNSIGNED_HEADERS",
    "AwsCredentials",
    "canonical_query",
    "canonical_request",
    "canonical_uri",
    "sign_headers",
    "signing_key",
    "string_to_sign",
]

ALGORITHM = "AWS4-HMAC-SHA256"
#: headers never signed (a proxy or the HTTP client may change or add them)
UNSIGNED_HEADERS = frozenset(
    {"authorization", "user-agent", "expect", "x-amzn-trace-id", "connection", "transfer-encoding", "accept-encoding"}
)
_UNRESERVED = "-_.~"


@dataclass(frozen=True, slots=True)
class AwsCredentials:
    """An AWS access key pair, and the session token of temporary credentials."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        token = ", session_token=<set>" if self.session_token else ""
        return f"AwsCredentials(access_key_id={self.access_key_id[:4]!r}..., secret_access_key=<set>{token})"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


def canonical_uri(path: str) -> str:
    """The wire ``path`` encoded once more (rule 2; non-S3 services)."""
    return quote(path or "/", safe="/" + _UNRESERVED)


def canonical_query(query: str) -> str:
    """The wire ``query`` decoded, re-encoded and sorted (rule 2)."""
    pairs = []
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append(
            (quote(unquote(name), safe=_UNRESERVED), quote(unquote(value), safe=_UNRESERVED))
        )
    return "&".join(f"{name}={value}" for name, value in sorted(pairs))


def _canonical_headers(url: str, headers: Mapping[str, str]) -> dict[str, str]:
    merged: dict[str, list[str]] = {}
    for name, value in headers.items():
        key = name.lower().strip()
        if key in UNSIGNED_HEADERS:
            continue
        merged.setdefault(key, []).append(" ".join(str(value).split()))
    if "host" not in merged:
        parts = urlsplit(url)
        host = parts.hostname or ""
        default = {"https": 443, "http": 80}.get(parts.scheme.lower())
        merged["host"] = [host if parts.port in (None, default) else f"{host}:{parts.port}"]
    return {key: ",".join(values) for key, values in sorted(merged.items())}


def canonical_request(method: str, url: str, headers: Mapping[str, str], payload_hash: str) -> tuple[str, str]:
    """The canonical request and its signed-header list (rule 2)."""
    parts = urlsplit(url)
    canonical = _canonical_headers(url, headers)
    signed = ";".join(canonical)
    text = "\n".join(
        [
            method.upper(),
            canonical_uri(parts.path),
            canonical_query(parts.query),
            "".join(f"{name}:{value}\n" for name, value in canonical.items()),
            signed,
            payload_hash,
        ]
    )
    return text, signed


def string_to_sign(amz_date: str, scope: str, creq: str) -> str:
    """The string to sign (rule 3)."""
    return f"{ALGORITHM}\n{amz_date}\n{scope}\n{_sha256(creq.encode('utf-8'))}"


def signing_key(secret_access_key: str, date: str, region: str, service: str) -> bytes:
    """The derived signing key for ``date`` (``YYYYMMDD``), ``region`` and ``service``."""
    key = _hmac(f"AWS4{secret_access_key}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def sign_headers(
    method: str,
    url: str,
    headers: Mapping[str, str],
    body: bytes,
    credentials: AwsCredentials,
    *,
    region: str,
    service: str,
    now: datetime | None = None,
    content_sha256: bool = False,
) -> dict[str, str]:
    """The headers that sign this request (rule 1): add them to ``headers`` as they are."""
    moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    amz_date = moment.strftime("%Y%m%dT%H%M%SZ")
    payload_hash = _sha256(body)
    added = {"x-amz-date": amz_date}
    if content_sha256:
        added["x-amz-content-sha256"] = payload_hash
    if credentials.session_token:
        added["x-amz-security-token"] = credentials.session_token
    kept = {k: v for k, v in headers.items() if k.lower() not in added}
    creq, signed = canonical_request(method, url, {**kept, **added}, payload_hash)
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    signature = hmac.new(
        signing_key(credentials.secret_access_key, amz_date[:8], region, service),
        string_to_sign(amz_date, scope, creq).encode("utf-8"),
        hashlib.sha256,
    ).hexdigest()
    added["authorization"] = (
        f"{ALGORITHM} Credential={credentials.access_key_id}/{scope}, SignedHeaders={signed}, Signature={signature}"
    )
    return added
