"""Amazon Bedrock: :class:`BedrockAdapter` streams the Converse API
(``POST /model/{modelId}/converse-stream``, AWS event-stream framing) for any model Bedrock
serves; the wire is ``bedrock-converse`` (:mod:`dshstream._core.wires.bedrock`). The
adapter is :class:`BedrockWire` (the request and translator: rules 1, 5, 6) + an auth
flow (SigV4, a Bedrock API key, or none: rules 2-4) + the attempt loop
(:mod:`~dshstream._adapters.http`); it overrides no hook (rule 7).

Contract:

1. **Where.** ``region=`` (default ``AWS_REGION``, else ``AWS_DEFAULT_REGION``; required)
   names ``https://bedrock-runtime.{region}.amazonaws.com``; ``base_url=`` replaces it (a
   VPC endpoint, a proxy). The model id is percent-encoded whole into the path (``:`` and
   ``/`` of versioned ids and inference-profile ARNs included).
2. **Auth, SigV4.** ``credentials=`` is an :class:`~dshstream._core.sigv4.AwsCredentials`,
   an ``(access_key_id, secret_access_key, session_token | None)`` tuple, or a
   zero-argument callable returning either, asked before every attempt (under the
   attempt's deadline, idle clock and cancel: credentials rule 6). Without it (and
   without a bearer key) ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
   ``AWS_SESSION_TOKEN`` are used, else the profile of ``~/.aws/credentials`` and
   ``~/.aws/config`` (``AWS_PROFILE``; static keys or a ``credential_process``:
   :mod:`~dshstream._adapters.aws_profile`) — only when the requests go to the real
   bedrock-runtime host. The flow is a :class:`~dshstream._adapters.auth.SigV4Auth`
   (service ``bedrock``): each attempt is signed on its final body bytes — encoded once,
   the signature added with :meth:`~dshstream._core.http_request.HttpRequest.with_headers`
   — with ``host``, ``x-amz-date`` and ``x-amz-security-token`` signed.
3. **Auth, API keys.** ``api_key=`` (a Bedrock API key, or a callable) or, on the real
   host, ``AWS_BEARER_TOKEN_BEDROCK`` is sent as ``Authorization: Bearer`` (a
   :class:`~dshstream._adapters.auth.HeaderAuth`); it wins over environment access keys.
   ``api_key=`` and ``credentials=`` together are refused. With neither, the flow is
   :class:`~dshstream._adapters.auth.NoAuth` (a proxy that signs). ``auth_mode`` says
   which: ``sigv4``, ``bearer`` or ``none``.
4. Secret keys and session tokens are registered for redaction (the most recent
   :data:`~dshstream._adapters.credentials.HISTORY` of a callable, kept by the SigV4
   flow); a signature travels only in ``authorization`` (masked in every ``repr``) and in
   the request's secrets.
5. **Body.** ``messages`` (text; media parts as ``image``/``document``/``audio`` blocks
   with their ``format`` and base64 ``bytes`` or an ``s3Location``, a document with a
   ``name`` Converse allows, and only beside text; assistant tool calls as ``toolUse``
   with the parsed input; tool results as ``toolResult`` in a user turn; an assistant turn with
   ``bedrock-converse`` replay state sends that content verbatim), ``system``,
   ``inferenceConfig`` (``maxTokens``, ``temperature``, ``stopSequences``),
   ``toolConfig``; Claude's extended thinking from ``reasoning_effort`` as
   ``additionalModelRequestFields.thinking`` (the Anthropic adapter's budgets; no
   temperature with thinking); ``response_format`` as the native ``outputConfig.textFormat``
   for Claude 4.5 and later, else as one forced tool (``toolConfig.toolChoice: {"tool":
   {"name"}}``) whose arguments the translator writes as text (``structured_output=``
   forces either; :mod:`~dshstream._adapters.structured_output`); ``extra_body`` merged
   last. No model list.
6. **InvokeModel.** ``api="invoke"`` posts to ``/model/{modelId}/invoke-with-response-stream``
   with the model family's native body, decoded by the ``bedrock-invoke`` wire. Claude
   only (a model id containing ``claude``): the Anthropic Messages body of
   :class:`~dshstream._adapters.messages_body.MessagesBody` (the Anthropic adapter's own
   builder: its thinking, tools, tool results and ``anthropic`` replay state) without
   ``model``/``stream`` and with ``anthropic_version: "bedrock-2023-05-31"`` (a response
   format: ``output_config.format`` for Claude 4.5 and later, else a forced tool). Any other
   model id is a ``ConfigurationError`` asking for ``api="converse"`` (the default).
7. **Prompt caching and counting.** A cache point is a Converse ``cachePoint: {type:
   "default", ttl}`` block after its system text, its message's content or its tool in
   ``toolConfig.tools``; with ``api="invoke"`` it is Claude's ``cache_control``. At most 4
   per request; Bedrock has no automatic mode, key, retention or cached content, so those
   are refused (:mod:`~dshstream._adapters.prompt_cache`). ``count_tokens`` is
   ``POST /model/{modelId}/count-tokens`` (botocore's ``CountTokens``) with
   ``{"input": {"converse": {messages, system, toolConfig, additionalModelRequestFields}}}``
   or, for ``api="invoke"``, ``{"input": {"invokeModel": {"body": BASE64}}}`` (the
   InvokeModel body), answered ``{"inputTokens": N}``; SigV4 signs it like a stream.
8. **Composition.** :class:`BedrockWire` holds the request settings (``api``,
   ``structured_output``, ``default_max_tokens``, the InvokeModel body builder) and reads
   no credential; :class:`BedrockAdapter`'s ``__init__`` resolves region, host and
   credentials (rules 1-3), builds the wire and the auth flow, and ``api``, ``region``,
   ``structured_output`` and ``default_max_tokens`` read back as attributes.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from .._core.parts import MediaPart
from .._core.media_support import BEDROCK_CLAUDE, BEDROCK_CONVERSE, MediaSupport, converse_document_name
from .._core.http_request import encode_json_body
from .._core.prompt_cache import CachePoint
from .._core.request import GenerateOptions, Message
from .._core.strict_json import parse_json_object
from .._core.types import ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .._core.validate import check_credential, invalid
from .._core.wires.translator import Translator
from .._core.wires.bedrock import WIRE, BedrockConverseTranslator
from .._core.wires.bedrock_invoke import BedrockInvokeTranslator
from .._core.response_format import JsonMode
from .auth import AuthFlow, HeaderAuth, NoAuth
from .aws_signing import REGION_ENV, REGION_PATTERN, AwsCredentialsLike, AwsSigning, aws_region
from .messages_body import DEFAULT_MAX_TOKENS, MessagesBody, claude_version
from .http import HttpAdapter
from .settings import HttpSettings, checked_base_url
from .prompt_cache import CacheSupport, check_prompt_cache
from .wire import Wire, replay_names
from .structured_output import (
    STRUCTURED_MODES,
    StructuredMode,
    claude_native,
    converse_output_config,
    forced_tool,
    refuse,
    unwrapped,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["BedrockAdapter", "BedrockWire", "bedrock_host"]

BEARER_ENV = "AWS_BEARER_TOKEN_BEDROCK"
SERVICE = "bedrock"
#: the ``anthropic_version`` Claude's InvokeModel body carries on Bedrock
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
APIS = ("converse", "invoke")


#: what Converse takes of prompt caching (rule 7)
CONVERSE_CACHING = CacheSupport(points=True, max_points=4)


def cache_point(point: CachePoint) -> dict[str, Any]:
    """A Converse ``cachePoint`` block for ``point`` (rule 7)."""
    block: dict[str, Any] = {"type": "default"}
    if point.ttl is not None:
        block["ttl"] = point.ttl
    return {"cachePoint": block}


def bedrock_host(region: str) -> str:
    """The bedrock-runtime API root for ``region``."""
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockWire(Wire):
    """Bedrock's request and translator (rules 1, 5 and 6): Converse, or InvokeModel with
    Claude's Messages body."""

    stream_accept = "application/vnd.amazon.eventstream"
    media: MediaSupport | None = BEDROCK_CONVERSE
    provider_name: str | None = "aws.bedrock"  # telemetry (wire rule 8), VPC endpoints too

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        api: Literal["converse", "invoke"] = "converse",
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budgets: Mapping[str, int] | None = None,
        structured_output: StructuredMode = "auto",
        eager_input_streaming: bool = True,
    ) -> None:
        super().__init__(base_url, title)
        #: ``converse`` or ``invoke`` (rule 6)
        self.api: Literal["converse", "invoke"] = api
        #: how a response format is sent (rule 5)
        self.structured_output: StructuredMode = structured_output
        #: ``maxTokens`` beside a thinking budget when none is asked for
        self.default_max_tokens = default_max_tokens
        #: the InvokeModel body: the Anthropic adapter's own builder (rule 6)
        self.claude = MessagesBody(
            default_max_tokens=default_max_tokens,
            thinking_budgets=thinking_budgets,
            structured_output=structured_output,
            eager_input_streaming=eager_input_streaming,
            label=f"{title} (InvokeModel)",
        )
        self.claude.media = BEDROCK_CLAUDE
        self.claude.automatic_cache_host = False  # rule 7: explicit cache points only

    def endpoint(self, options: GenerateOptions) -> str:
        action = "invoke-with-response-stream" if self.api == "invoke" else "converse-stream"
        return f"{self.base_url}/model/{quote(options.model, safe='')}/{action}"

    def media_support(self, options: GenerateOptions) -> MediaSupport | None:
        """Converse's media rules, or Claude-on-InvokeModel's (bytes only) with ``api="invoke"``."""
        return BEDROCK_CLAUDE if self.api == "invoke" else BEDROCK_CONVERSE

    def thinking_budget(self, options: GenerateOptions) -> int | None:
        """Claude's ``budget_tokens`` for ``options.reasoning_effort`` (None: no thinking,
        or not a Claude model) — the Anthropic adapter's rule, from its shared body builder."""
        if "claude" not in options.model.lower():
            return None
        return self.claude.thinking_budget(options)

    def invoke_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The InvokeModel body: Claude's Anthropic Messages body (rule 6)."""
        if "claude" not in options.model.lower():
            raise invalid(
                f"BedrockAdapter: api='invoke' supports Claude models only; "
                f"use api='converse' for {options.model[:80]!r}"
            )
        body = self.claude.build_body(options)
        body.pop("model", None)
        body.pop("stream", None)
        return {"anthropic_version": BEDROCK_ANTHROPIC_VERSION, **body}

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        if self.api == "invoke":
            return self.invoke_body(options)
        check_prompt_cache(options, CONVERSE_CACHING, f"{self.title} (Converse)")
        body: dict[str, Any] = {"messages": self.convert_messages(options.messages)}
        replay_names(body["messages"], options)  # wire rule 10
        system: list[dict[str, Any]] = []
        for m in options.messages:
            if m.role == "system" and m.text:
                system.append({"text": m.text})
                if m.cache is not None:
                    system.append(cache_point(m.cache))
        if system:
            body["system"] = system
        budget = self.thinking_budget(options)
        config: dict[str, Any] = {}
        if options.max_tokens is not None:
            config["maxTokens"] = options.max_tokens
        elif budget is not None:
            config["maxTokens"] = budget + self.default_max_tokens
        if options.temperature is not None and budget is None:
            config["temperature"] = options.temperature
        if options.stop:
            config["stopSequences"] = list(options.stop)
        if config:
            body["inferenceConfig"] = config
        if options.tools:
            tools: list[dict[str, Any]] = []
            for tool in options.tools:
                spec = {
                    "name": tool.name,
                    **({"description": tool.description} if tool.description else {}),
                    "inputSchema": {"json": dict(tool.parameters)},
                }
                tools.append({"toolSpec": spec})
                if tool.cache is not None:
                    tools.append(cache_point(tool.cache))
            body["toolConfig"] = {"tools": tools}
        if options.response_format is not None:
            self.add_response_format(body, options, thinking=budget is not None)
        if budget is not None:
            body["additionalModelRequestFields"] = {"thinking": {"type": "enabled", "budget_tokens": budget}}
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def converse_native(self, model: str) -> bool:
        """Whether a Converse response format goes as ``outputConfig.textFormat`` (else as a
        forced tool): ``structured_output=`` decides; ``auto`` picks native for Claude 4.5
        and later (the other models Bedrock serves it for are not known from their ids)."""
        version = claude_version(model) if "claude" in model.lower() else None
        return claude_native(version, self.structured_output)

    def forced_tool_name(self, options: GenerateOptions) -> str | None:
        """The name of the forced tool whose call the translator writes as text (``None``:
        no forced tool)."""
        if self.api == "invoke":
            if "claude" not in options.model.lower():
                return None
            return self.claude.forced_tool_name(options)
        fmt = options.response_format
        if fmt is None or isinstance(fmt, JsonMode) or self.converse_native(options.model):
            return None
        return fmt.name

    def add_response_format(
        self, body: dict[str, Any], options: GenerateOptions, *, thinking: bool
    ) -> None:
        """``options.response_format`` into a Converse ``body``: ``outputConfig``, or one
        forced tool in ``toolConfig``."""
        fmt = options.response_format
        where = f"{self.title} (Converse)"
        if self.converse_native(options.model):
            if isinstance(fmt, JsonMode) or fmt is None:
                raise refuse(
                    options,
                    where,
                    "JSON mode is not available",
                    'ask for a schema: JsonSchema("answer", {"type": "object"})',
                )
            body["outputConfig"] = converse_output_config(fmt)
            return
        tool = forced_tool(options, where, thinking=thinking)
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": tool.name,
                        "description": tool.description,
                        "inputSchema": {"json": tool.schema},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": tool.name}},
        }

    def convert_messages(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """Converse ``messages``: alternating user/assistant turns of content blocks."""
        out: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                continue
            role = "assistant" if message.role == "assistant" else "user"
            content = self.assistant_content(message) if role == "assistant" else self.user_content(message)
            if not content:
                if message.cache is not None:
                    raise invalid(f"{self.title}: a cache point on an empty {message.role} turn caches nothing")
                continue
            if message.cache is not None:
                content.append(cache_point(message.cache))
            if out and out[-1]["role"] == role:
                out[-1]["content"].extend(content)
            else:
                out.append({"role": role, "content": content})
        return out

    def user_content(self, message: Message) -> list[dict[str, Any]]:
        """A user (or tool) turn's blocks: text, media (:meth:`media_block`) and ``toolResult``."""
        content: list[dict[str, Any]] = []
        names: set[str] = set()
        text = message.content
        if type(text) is str:  # plain text: its one text block, Message.parts not asked
            return [{"text": text}] if text else content
        for block in message.parts:
            if isinstance(block, MediaPart):
                content.append(self.media_block(block, names))
            elif isinstance(block, ToolResultBlock):
                content.append(
                    {
                        "toolResult": {
                            "toolUseId": block.call_id,
                            "content": [{"text": block.content}],
                            "status": "error" if block.is_error else "success",
                        }
                    }
                )
            elif isinstance(block, TextBlock) and block.text:
                content.append({"text": block.text})
        if names and not any("text" in entry for entry in content):
            raise invalid(
                f"{BEDROCK_CONVERSE.provider}: a user message with a document needs text too "
                "(Message.user(\"Summarize this.\", DocumentPart...))"
            )
        return content

    @staticmethod
    def media_block(part: MediaPart, names: set[str]) -> dict[str, Any]:
        """``image``, ``document`` or ``audio`` with its ``format`` and a ``source`` of
        base64 ``bytes`` (or ``s3Location`` for an ``s3://`` URI); a document gets a
        ``name`` Converse allows, unique in its message (``names``)."""
        wire = BEDROCK_CONVERSE.accept(part)
        source = {"s3Location": {"uri": part.url}} if part.url is not None else {"bytes": part.base64}
        entry: dict[str, Any] = {"format": wire, "source": source}
        if part.kind == "document":
            name = base = converse_document_name(part, len(names) + 1)
            number = 2
            while name in names:
                name = f"{base[:190]} ({number})"
                number += 1
            names.add(name)
            entry = {"format": wire, "name": name, "source": source}
        return {part.kind: entry}

    def assistant_content(self, message: Message) -> list[dict[str, Any]]:
        """An assistant turn's blocks: our replay state verbatim, else its blocks."""
        replay = message.replay_state
        if isinstance(replay, dict) and replay.get("wire") == WIRE and isinstance(replay.get("content"), list):
            return [dict(entry) for entry in replay["content"] if isinstance(entry, dict)]
        content: list[dict[str, Any]] = []
        for block in message.blocks:
            if isinstance(block, TextBlock):
                if block.text:
                    content.append({"text": block.text})
            elif isinstance(block, ReasoningBlock):
                if block.signature:
                    content.append(
                        {"reasoningContent": {"reasoningText": {"text": block.text, "signature": block.signature}}}
                    )
            elif isinstance(block, ToolCallBlock):
                content.append(
                    {"toolUse": {"toolUseId": block.id, "name": block.name, "input": parse_json_object(block.arguments)}}
                )
        return content

    # ------------------------------------------------------------------ counting (rule 7)

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/model/{quote(options.model, safe='')}/count-tokens"

    #: the fields of a Converse body that ``CountTokens``' ``converse`` input takes
    COUNT_FIELDS = frozenset({"messages", "system", "toolConfig", "additionalModelRequestFields"})

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        body = self.build_body(options)
        if self.api == "invoke":  # a blob member: base64 of the InvokeModel body's bytes
            data = base64.b64encode(encode_json_body(body)).decode("ascii")
            return {"input": {"invokeModel": {"body": data}}}
        return {"input": {"converse": {key: value for key, value in body.items() if key in self.COUNT_FIELDS}}}

    def count_tokens_result(self, payload: Any) -> int | None:
        value = payload.get("inputTokens") if isinstance(payload, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    # ------------------------------------------------------------------ response

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        kind: type[Translator] = BedrockInvokeTranslator if self.api == "invoke" else BedrockConverseTranslator
        translator = kind(provider=options.provider, request_id=request_id, max_tokens=options.max_tokens)
        if options.response_format is None:  # no forced tool without one (forced_tool_name)
            return translator
        return unwrapped(translator, self.forced_tool_name(options))


class BedrockAdapter(AwsSigning, HttpAdapter):
    """Stream any Bedrock model through the Converse API (SigV4 or a Bedrock API key):
    :class:`BedrockWire` + the auth flow + the attempt loop (rule 7)."""

    default_name = "Amazon Bedrock"
    default_base_url = ""
    key_env = ()
    sigv4_service = SERVICE
    key_mode = "bearer"

    def __init__(
        self,
        *,
        region: str | None = None,
        credentials: AwsCredentialsLike | None = None,
        api: Literal["converse", "invoke"] = "converse",
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking_budgets: Mapping[str, int] | None = None,
        structured_output: StructuredMode = "auto",
        eager_input_streaming: bool = True,
        **settings: Unpack[HttpSettings],
    ) -> None:
        name = type(self).__name__
        if structured_output not in STRUCTURED_MODES:
            raise invalid(f"{name}.structured_output must be one of {', '.join(STRUCTURED_MODES)}")
        chosen = aws_region(region, f"{name}.region")
        if not chosen:
            raise invalid(f"{name} needs region= or {'/'.join(REGION_ENV)} in the environment")
        if api not in APIS:
            raise invalid(f"{name}.api must be 'converse' or 'invoke', got {str(api)[:40]!r}")
        if not REGION_PATTERN.fullmatch(chosen):
            raise invalid(f"{name}.region must look like 'us-east-1', got {chosen[:40]!r}")
        #: the AWS region requests are signed for (rule 1)
        self.region = chosen
        home = bedrock_host(chosen)
        base_url = checked_base_url(settings.pop("base_url", None) or home)
        given_key = check_credential(settings.pop("api_key", None), f"{name}.api_key")
        # rules 2-3: with nothing found, no auth (a proxy that signs)
        api_key, sigv4 = self._aws_auth(
            given_key, credentials, key_env=BEARER_ENV, key_what="a Bedrock API key", base_url=base_url, home=home
        )
        settings.setdefault("title", "Amazon Bedrock")
        settings["base_url"] = base_url
        settings["api_key"] = api_key
        super().__init__(default_base_url=home, key_env=(), **settings)
        if default_max_tokens < 1:
            raise invalid(f"{name}.default_max_tokens must be positive")
        self.wire: BedrockWire = BedrockWire(
            self.base_url,
            self.title,
            api=api,
            default_max_tokens=default_max_tokens,
            thinking_budgets=thinking_budgets,
            structured_output=structured_output,
            eager_input_streaming=eager_input_streaming,
        )
        # SigV4 (rule 2), else the Bedrock API key as Bearer (rule 3), else none
        flow: AuthFlow = sigv4 or (HeaderAuth(self.credential) if self.credential.value is not None else NoAuth())
        self.auth_flow = flow

    @property
    def api(self) -> Literal["converse", "invoke"]:
        """``converse`` or ``invoke`` (the wire's; rule 6)."""
        return self.wire.api

    @property
    def structured_output(self) -> StructuredMode:
        """How a response format is sent (the wire's; rule 5)."""
        return self.wire.structured_output

    @property
    def default_max_tokens(self) -> int:
        """``maxTokens`` beside a thinking budget when none is asked for (the wire's)."""
        return self.wire.default_max_tokens
