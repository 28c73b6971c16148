"""Attribution: every HTTP request carries ``User-Agent: {product}/{version} (+{url})``.

Contract: stdlib only. :func:`attribution_headers` returns exactly one lowercase key,
``user-agent``; nothing suppresses it, and :func:`merge_headers` drops any caller header
that collides with it case-insensitively. The default version comes from the package's
single version source, never a second literal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .._version import __version__

PROJECT_URL = "https://github.com/dshstream/dshstream"


@dataclass(frozen=True, slots=True)
class AppIdentity:
    """Public product facts that identify the calling application."""

    product: str
    version: str
    url: str

    @property
    def user_agent(self) -> str:
        """The ``User-Agent`` value: ``product/version (+url)``."""
        return f"{self.product}/{self.version} (+{self.url})"


DEFAULT_IDENTITY = AppIdentity(product="dshstream", version=__version__, url=PROJECT_URL)


def attribution_headers(identity: AppIdentity | None = None) -> dict[str, str]:
    """``{"user-agent": ...}`` for ``identity`` (dshstream's own when omitted)."""
    return {"user-agent": (identity or DEFAULT_IDENTITY).user_agent}


def merge_headers(
    *layers: Mapping[str, str] | None, identity: AppIdentity | None = None
) -> dict[str, str]:
    """Merge header layers (later wins, case-insensitively), then attribution on top."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        if layer:
            for name, value in layer.items():
                merged[name.lower()] = (name, value)
    for name, value in attribution_headers(identity).items():
        merged[name] = (name, value)
    return dict(merged.values())
