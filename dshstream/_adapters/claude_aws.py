"""Claude Platform on AWS: the Anthropic Messages API that Anthropic runs inside AWS
(``POST https://aws-external-anthropic.{region}.api.aws/v1/messages``), billed through an
AWS account and scoped to a workspace. :class:`ClaudePlatformAwsAdapter` is the Anthropic
wire (:class:`~dshstream._adapters.anthropic.AnthropicWire`, its every rule: body,
server-side fallback, containers, replay, translator) + an auth flow (SigV4 or a key) +
the attempt loop; it overrides no hook.

Contract (checked against anthropic-sdk-python's ``lib/aws`` client):

1. **Where.** ``region=`` (default ``AWS_REGION``, else ``AWS_DEFAULT_REGION``; required
   unless a base URL is given) names ``https://aws-external-anthropic.{region}.api.aws``;
   ``base_url=`` (or ``ANTHROPIC_AWS_BASE_URL``) replaces it.
2. **Workspace.** ``workspace_id=`` (default ``ANTHROPIC_AWS_WORKSPACE_ID``) is sent as
   ``anthropic-workspace-id`` on every request (the wire's protocol header, so SigV4
   signs it); without one the adapter is a ``ConfigurationError`` naming
   ``ClaudePlatformAwsAdapter.workspace_id``, before anything is sent.
3. **Auth.** In the SDK's order: ``api_key=`` (a workspace API key, or a callable) is
   sent as ``x-api-key``; else ``credentials=`` (as Bedrock takes them: credentials, a
   tuple, or a callable asked before every attempt) sign each attempt with SigV4, service
   ``aws-external-anthropic``; else ``ANTHROPIC_AWS_API_KEY``, else
   ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, else the AWS
   profile of the shared files (aws_signing rule 3) — environment and profile values only
   for the real host. ``api_key=`` with ``credentials=`` is refused; with
   none at all on the real host, the adapter is a ``ConfigurationError`` naming what to
   set (a proxy at another ``base_url`` may sign itself: no auth then).
4. Secrets are registered for redaction as the SigV4 and header flows do; ``auth_mode``
   says ``sigv4``, ``api-key`` or ``none``; ``repr`` shows no secret.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .._core.validate import check_credential, check_str_or_none, invalid
from .anthropic import DEFAULT_VERSION, AnthropicWire, ClaudeSettings, Fallbacks, check_fallbacks, split_betas
from .anthropic import split_claude
from .auth import AuthFlow, HeaderAuth, NoAuth
from .aws_signing import AwsCredentialsLike, AwsSigning
from .http import HttpAdapter

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ClaudePlatformAwsAdapter", "ClaudePlatformAwsWire", "claude_aws_host"]

#: the SigV4 service name (rule 3)
SERVICE = "aws-external-anthropic"
KEY_ENV = "ANTHROPIC_AWS_API_KEY"
WORKSPACE_ENV = "ANTHROPIC_AWS_WORKSPACE_ID"
BASE_URL_ENV = "ANTHROPIC_AWS_BASE_URL"


def claude_aws_host(region: str) -> str:
    """The Claude Platform on AWS API root for ``region`` (rule 1)."""
    return f"https://aws-external-anthropic.{region}.api.aws"


class ClaudePlatformAwsWire(AnthropicWire):
    """The Anthropic wire with the workspace header (rule 2)."""

    def __init__(self, base_url: str, title: str, *, workspace_id: str, **wire: Any) -> None:
        super().__init__(base_url, title, **wire)
        #: the ``anthropic-workspace-id`` every request carries (rule 2)
        self.workspace_id = workspace_id

    def protocol_headers(self) -> dict[str, str]:
        return {**super().protocol_headers(), "anthropic-workspace-id": self.workspace_id}


def _workspace(value: object, field: str) -> str:
    chosen = check_str_or_none(value, field)
    chosen = (chosen if chosen is not None else os.environ.get(WORKSPACE_ENV, "")).strip()
    if not chosen:
        raise invalid(f"{field} is required: pass workspace_id= or set {WORKSPACE_ENV} (the anthropic-workspace-id header)")
    if any(c.isspace() or not c.isprintable() for c in chosen) or len(chosen) > 200:
        raise invalid(f"{field} must be a workspace id such as 'wrkspc_...', got {chosen[:40]!r}")
    return chosen


class ClaudePlatformAwsAdapter(AwsSigning, HttpAdapter):
    """Stream Claude through Claude Platform on AWS: the Anthropic wire + SigV4 or a key +
    the attempt loop (module rules)."""

    default_name = "Claude Platform on AWS"
    default_base_url = ""
    key_env = ()
    sigv4_service = SERVICE
    key_mode = "api-key"

    def __init__(
        self,
        *,
        workspace_id: str | None = None,
        region: str | None = None,
        credentials: AwsCredentialsLike | None = None,
        anthropic_version: str = DEFAULT_VERSION,
        fallbacks: Fallbacks | None = None,
        **given: Unpack[ClaudeSettings],
    ) -> None:
        settings, claude = split_claude(given)
        name = type(self).__name__
        workspace = _workspace(workspace_id, f"{name}.workspace_id")
        chain = check_fallbacks(fallbacks, f"{name}.fallbacks")
        given_url = settings.pop("base_url", None) or os.environ.get(BASE_URL_ENV, "").strip() or None
        base_url, home = self._aws_place(region, given_url, claude_aws_host)  # rule 1
        api_key, sigv4 = self._aws_auth(
            check_credential(settings.pop("api_key", None), f"{name}.api_key"), credentials,
            key_env=KEY_ENV, key_what="a workspace API key", base_url=base_url, home=home, required=True,
        )
        settings.setdefault("title", self.default_name)
        settings["base_url"] = base_url
        settings["api_key"] = api_key
        super().__init__(default_base_url=home or base_url, key_env=(), **settings)
        self.wire: ClaudePlatformAwsWire = ClaudePlatformAwsWire(
            self.base_url,
            self.title,
            workspace_id=workspace,
            anthropic_version=anthropic_version,
            fallbacks=chain,
            betas=split_betas(self.extra_headers),
            **claude,
        )
        flow: AuthFlow = sigv4 or (
            HeaderAuth(self.credential, "x-api-key", "") if self.credential.value is not None else NoAuth()
        )
        self.auth_flow = flow

    @property
    def workspace_id(self) -> str:
        """The workspace every request names (the wire's; rule 2)."""
        return self.wire.workspace_id
