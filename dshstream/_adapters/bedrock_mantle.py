"""Bedrock Mantle: the OpenAI Responses API that Amazon Bedrock serves for its
OpenAI-compatible models (``POST https://bedrock-mantle.{region}.api.aws/v1/responses``;
``openai.gpt-oss-20b``...). :class:`BedrockMantleAdapter` is the Responses wire
(:class:`~dshstream._adapters.openai_responses.OpenAIResponsesWire`, its every rule: body,
replay, translator) + an auth flow (SigV4 or a Bedrock API key) + the attempt loop; it
overrides no hook.

Contract:

1. **Where.** ``region=`` (default ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else the
   AWS profile's region; required unless a base URL is given) names
   ``https://bedrock-mantle.{region}.api.aws/v1``; ``base_url=`` replaces it.
2. **Auth**, in Bedrock's order: ``api_key=`` (a Bedrock API key, or a callable) is sent as
   ``Authorization: Bearer``; else ``credentials=`` (as :class:`BedrockAdapter` takes
   them) sign each attempt with SigV4, service ``bedrock-mantle``, with
   ``x-amz-content-sha256`` signed as AWS's own signers send it; else
   ``AWS_BEARER_TOKEN_BEDROCK``, else ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
   ``AWS_SESSION_TOKEN``, else the AWS profile or container credentials (aws_signing rule
   3) — environment and profile values only for the real host. ``api_key=`` with
   ``credentials=`` is refused; with none at all on the real host the adapter is a
   ``ConfigurationError`` naming what to set (a proxy at another ``base_url`` may sign
   itself: no auth then). ``auth_mode`` says ``sigv4``, ``bearer`` or ``none``.
3. **Body.** The Responses body as the wire builds it, ``store: false``; encrypted
   reasoning is not asked for by default (``include_encrypted_reasoning=True`` asks):
   the open-weight models Mantle serves stream their reasoning as text.
4. **Models.** ``GET {base_url}/models`` (the OpenAI list), with the key or signed with
   SigV4 like the streams (an empty body's hash).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core.validate import check_credential
from .auth import AuthFlow, HeaderAuth, NoAuth
from .aws_signing import AwsCredentialsLike, AwsSigning
from .http import HttpAdapter
from .openai_responses import OpenAIResponsesWire, ResponsesAdapterSettings, split_responses

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BedrockMantleAdapter", "mantle_host"]

#: the SigV4 service name (rule 2)
SERVICE = "bedrock-mantle"
BEARER_ENV = "AWS_BEARER_TOKEN_BEDROCK"


def mantle_host(region: str) -> str:
    """The Bedrock Mantle API root for ``region`` (rule 1)."""
    return f"https://bedrock-mantle.{region}.api.aws/v1"


class BedrockMantleAdapter(AwsSigning, HttpAdapter):
    """Stream Bedrock's OpenAI-compatible models through its Responses API: the Responses
    wire + SigV4 or a Bedrock API key + the attempt loop (module rules)."""

    default_name = "Bedrock Mantle"
    default_base_url = ""
    key_env = ()
    sigv4_service = SERVICE
    key_mode = "bearer"

    def __init__(
        self,
        *,
        region: str | None = None,
        credentials: AwsCredentialsLike | None = None,
        **given: Unpack[ResponsesAdapterSettings],
    ) -> None:
        settings, body = split_responses(given)
        body.setdefault("include_encrypted_reasoning", False)  # rule 3
        name = type(self).__name__
        given_url = settings.pop("base_url", None)
        base_url, home = self._aws_place(region, given_url, mantle_host)  # rule 1
        api_key, sigv4 = self._aws_auth(
            check_credential(settings.pop("api_key", None), f"{name}.api_key"), credentials,
            key_env=BEARER_ENV, key_what="a Bedrock API key", base_url=base_url, home=home, required=True,
        )
        if sigv4 is not None:
            sigv4.content_sha256 = True  # rule 2
        settings.setdefault("title", self.default_name)
        settings["base_url"] = base_url
        settings["api_key"] = api_key
        super().__init__(default_base_url=home or base_url, key_env=(), **settings)
        self.wire: OpenAIResponsesWire = OpenAIResponsesWire(self.base_url, self.title, **body)
        self.wire.provider_name = "aws.bedrock"
        flow: AuthFlow = sigv4 or (HeaderAuth(self.credential) if self.credential.value is not None else NoAuth())
        self.auth_flow = flow
