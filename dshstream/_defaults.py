"""The ready-made service: an adapter for every provider whose key is in the environment,
plus the keyless local servers, and :func:`stream` as the one-line entry point.

Contract: reads the environment only when called; builds a fresh service each time
:func:`default_service` is called (``stream`` caches one per process, rebuilt on demand).
``xai`` is xAI's Responses API (``XAIAdapter``: xAI marks its Chat Completions API
deprecated); ``xai-chat`` is that chat API (``OpenAIChatAdapter(dialect="xai")``), both
from ``XAI_API_KEY``. The clouds are registered as their official SDKs configure them: ``azure`` (Azure OpenAI
chat) when ``AZURE_OPENAI_ENDPOINT`` and ``AZURE_OPENAI_API_KEY`` are set (with
``OPENAI_API_VERSION``, else the v1 API); ``vertex`` (Gemini) and ``vertex-anthropic``
(Claude) when ``GOOGLE_CLOUD_PROJECT`` is set and Application Default Credentials are an
``authorized_user`` file (``GOOGLE_APPLICATION_CREDENTIALS`` or gcloud's; location
``GOOGLE_CLOUD_LOCATION``, else ``global``); ``bedrock`` (Amazon Bedrock, Converse) when
a region (``AWS_REGION``/``AWS_DEFAULT_REGION``, or the AWS profile's) and either
``AWS_BEARER_TOKEN_BEDROCK``, ``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` or an AWS
profile with credentials (``~/.aws/credentials``/``~/.aws/config``, ``AWS_PROFILE``) are set; ``claude-aws`` (Claude Platform
on AWS) when ``ANTHROPIC_AWS_WORKSPACE_ID``, a region (or ``ANTHROPIC_AWS_BASE_URL``) and
``ANTHROPIC_AWS_API_KEY`` or those access keys are set. The Anthropic-compatible route of a
keyed provider (:data:`MESSAGES_ROUTES`: ``deepseek-anthropic``) is registered with its key;
the local servers' Anthropic-compatible endpoints are not (their default route is already
registered: ``AnthropicAdapter(dialect="ollama")`` names one). A cloud whose environment is
unusable (a service-account file, which needs the google-auth recipe) is left out with a
warning in the log, never an exception.

Local servers (keyless) are always registered, each at the URL of its own variable when
it is set, else at its default address (:data:`LOCAL_PROVIDERS`): ``OLLAMA_BASE_URL``, or
``OLLAMA_HOST`` (Ollama's own variable: ``host:port``, scheme optional, ``/v1`` added);
``LLAMACPP_BASE_URL``; ``VLLM_BASE_URL``; ``LMSTUDIO_BASE_URL``. A ``*_BASE_URL`` is the
API root exactly as ``--base-url`` takes it (``http://gpu-box:8080/v1``). No key read from
the environment goes to such a URL unless it is the provider's own default host (a
``VLLM_API_KEY`` stays on ``127.0.0.1:8000``). A variable that is not a URL leaves that
server out with a warning in the log.

:func:`setup_hint` names, for a provider with no adapter, what would register one (the
variables, never their values); the service's ``NO_ADAPTER`` message uses it.
:func:`stream` rebuilds its cached service when the provider is missing from it, so a key
set after the first call (in a notebook) is picked up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._core.errors import LlmError
from ._core.log import get_logger
from ._core.request import GenerateOptions, Message
from ._service import LlmService
from ._chunk_stream import ChunkStream

if TYPE_CHECKING:
    from ._adapters.http import HttpAdapter

log = get_logger("dshstream")

#: (provider id, environment variables holding its key)
KEYED_PROVIDERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", ("OPENAI_API_KEY",)),
    ("anthropic", ("ANTHROPIC_API_KEY",)),
    ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
    ("gemini-interactions", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),  # the same key, the Interactions API
    ("deepseek", ("DEEPSEEK_API_KEY",)),
    ("openrouter", ("OPENROUTER_API_KEY",)),
    ("groq", ("GROQ_API_KEY",)),
    ("mistral", ("MISTRAL_API_KEY",)),
    ("xai", ("XAI_API_KEY",)),
    ("xai-chat", ("XAI_API_KEY",)),
    ("together", ("TOGETHER_API_KEY",)),
    ("perplexity", ("PERPLEXITY_API_KEY",)),
    ("cohere", ("COHERE_API_KEY", "CO_API_KEY")),
)
#: keyed routes on a chat dialect of another name (the provider's older API)
CHAT_ROUTES = {"xai-chat": "xai"}
#: (local provider id, the variables its server's URL is read from, first set wins). The
#: one scheme: ``<PROVIDER>_BASE_URL``, plus Ollama's own ``OLLAMA_HOST``.
LOCAL_URL_ENV: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ollama", ("OLLAMA_BASE_URL", "OLLAMA_HOST")),
    ("llamacpp", ("LLAMACPP_BASE_URL",)),
    ("vllm", ("VLLM_BASE_URL",)),
    ("lmstudio", ("LMSTUDIO_BASE_URL",)),
)
LOCAL_PROVIDERS = tuple(provider for provider, _ in LOCAL_URL_ENV)
#: cloud provider ids configured from their SDKs' environment (see the module docstring)
CLOUD_PROVIDERS = ("azure", "vertex", "vertex-anthropic", "bedrock")
#: (route, Anthropic-compatible preset of ``AnthropicAdapter(dialect=)``): the Messages API
#: served by another provider, registered when the preset's key variable is set
MESSAGES_ROUTES: tuple[tuple[str, str], ...] = (("deepseek-anthropic", "deepseek"),)
#: what registers ``claude-aws`` (Claude Platform on AWS), besides a region or base URL
CLAUDE_AWS_ENV = ("ANTHROPIC_AWS_WORKSPACE_ID", "ANTHROPIC_AWS_API_KEY", "ANTHROPIC_AWS_BASE_URL")


def _key(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def default_service(**service_options: Any) -> LlmService:
    """A service with an adapter per provider whose key is set, the clouds the
    environment configures, and the local servers."""
    from ._adapters.openai_chat import OpenAIChatAdapter

    service = LlmService(**service_options)
    for provider, names in KEYED_PROVIDERS:
        key = _key(names)
        if key is None:
            continue
        service.register_adapter([provider], keyed_adapter(provider, key))
    for route, dialect in MESSAGES_ROUTES:
        from ._adapters.anthropic import AnthropicAdapter
        from ._core.messages_dialects import MESSAGES_DIALECTS

        preset = MESSAGES_DIALECTS[dialect]
        key = _key((preset.key_env,)) if preset.key_env else None
        if key is not None:
            title = f"{preset.title} (Anthropic API)"
            service.register_adapter([route], AnthropicAdapter(dialect=dialect, api_key=key, title=title))
    if claude_aws_configured():
        try:
            from ._adapters.claude_aws import ClaudePlatformAwsAdapter

            service.register_adapter(["claude-aws"], ClaudePlatformAwsAdapter())
        except LlmError as exc:
            log.warning("%s: not registered (%s)", "claude-aws", exc.failure.message)
    for provider in CLOUD_PROVIDERS:
        if not cloud_configured(provider):
            continue
        try:
            adapter = cloud_adapter(provider)
        except LlmError as exc:
            log.warning("%s: not registered (%s)", provider, exc.failure.message)
            continue
        service.register_adapter([provider], adapter)
    for provider in LOCAL_PROVIDERS:
        try:
            found = local_base_url(provider)
        except LlmError as exc:
            log.warning("%s: not registered (%s)", provider, exc.failure.message)
            continue
        # a URL from the environment is keyless: the adapter sends its dialect's key
        # variable only to the dialect's own default host
        url = found[0] if found is not None else None
        service.register_adapter([provider], OpenAIChatAdapter(dialect=provider, base_url=url))
    service._built_from_environment = True
    return service


def keyed_adapter(provider: str, key: str | None, base_url: str | None = None) -> HttpAdapter:
    """The adapter of the keyed route ``provider`` (a :data:`KEYED_PROVIDERS` id, or a chat
    dialect) with ``key`` (``None``: its own variable, for its own host), at ``base_url``
    (a chat dialect's only; ``None``: the provider's own)."""
    if provider == "anthropic":
        from ._adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter(api_key=key)
    if provider == "gemini":
        from ._adapters.gemini import GeminiAdapter

        return GeminiAdapter(api_key=key)
    if provider == "xai":
        from ._adapters.xai import XAIAdapter

        return XAIAdapter(api_key=key)
    if provider == "gemini-interactions":
        from ._adapters.gemini_interactions import GeminiInteractionsAdapter

        return GeminiInteractionsAdapter(api_key=key)
    if provider == "cohere":
        from ._adapters.cohere import CohereAdapter

        return CohereAdapter(api_key=key)
    from ._adapters.openai_chat import OpenAIChatAdapter

    return OpenAIChatAdapter(api_key=key, base_url=base_url, dialect=CHAT_ROUTES.get(provider, provider))


def local_url_variables(provider: str) -> tuple[str, ...]:
    """The variables the local ``provider``'s server URL is read from (``()`` for any
    other provider)."""
    return dict(LOCAL_URL_ENV).get(provider, ())


def local_base_url(provider: str) -> tuple[str, str] | None:
    """``(url, variable)``: the local ``provider``'s server URL from the first of its
    variables that is set, or ``None`` (its default address). Raises
    :class:`~dshstream._core.errors.ConfigurationError` naming the variable when its value
    is not an http(s) URL (the message shows it redacted)."""
    from ._core.validate import check_base_url

    for variable in local_url_variables(provider):
        value = os.environ.get(variable, "").strip()
        if not value:
            continue
        if variable == "OLLAMA_HOST":
            return check_base_url(ollama_url(value), variable), variable
        return check_base_url(value, variable).rstrip("/"), variable
    return None


def ollama_url(host: str) -> str:
    """The OpenAI-compatible API root for an ``OLLAMA_HOST`` value, read as Ollama's own
    clients read it: ``host``, ``host:port``, ``:port`` or a URL; the scheme defaults to
    ``http``, the host to ``127.0.0.1``, the port to 11434 when no scheme is given; ``/v1``
    is added. A value that cannot be read is returned as it is (the URL check names it)."""
    from urllib.parse import urlsplit

    value = host.strip()
    schemed = "://" in value
    try:
        parts = urlsplit(value if schemed else f"http://{value}")
        port = parts.port
    except ValueError:
        return value
    hostname = parts.hostname or "127.0.0.1"
    if ":" in hostname:  # an IPv6 literal
        hostname = f"[{hostname}]"
    if port is None and not schemed:
        port = 11434
    path = parts.path.rstrip("/")
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{parts.scheme}://{hostname}{f':{port}' if port is not None else ''}{path}"


#: the constructor a ``register_adapter`` hint shows for each provider that is not an
#: OpenAI-compatible dialect
_ADAPTER_CLASS = {
    "anthropic": "AnthropicAdapter(api_key=...)",
    "gemini": "GeminiAdapter(api_key=...)",
    "gemini-interactions": "GeminiInteractionsAdapter(api_key=...)",
    "xai": "XAIAdapter(api_key=...)",
    "xai-chat": "OpenAIChatAdapter(dialect='xai', api_key=...)",
    "cohere": "dshstream.adapters.CohereAdapter(api_key=...)",
    "azure": "AzureOpenAIAdapter(endpoint=..., api_key=...)",
    "vertex": "VertexGeminiAdapter(project=...)",
    "vertex-anthropic": "VertexAnthropicAdapter(project=...)",
    "bedrock": "BedrockAdapter(region=...)",
    "claude-aws": "dshstream.adapters.ClaudePlatformAwsAdapter(workspace_id=..., region=...)",
    "deepseek-anthropic": 'AnthropicAdapter(dialect="deepseek", api_key=...)',
    "ollama-anthropic": 'AnthropicAdapter(dialect="ollama")',
    "lmstudio-anthropic": 'AnthropicAdapter(dialect="lmstudio")',
}
#: what :func:`default_service` needs set to register each cloud
_CLOUD_SETUP = {
    "azure": "AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY",
    "vertex": "GOOGLE_CLOUD_PROJECT (with `gcloud auth application-default login`)",
    "vertex-anthropic": "GOOGLE_CLOUD_PROJECT (with `gcloud auth application-default login`)",
    "bedrock": "AWS_REGION and AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK, or an AWS profile)",
    "claude-aws": (
        "ANTHROPIC_AWS_WORKSPACE_ID, AWS_REGION and ANTHROPIC_AWS_API_KEY "
        "(or AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY)"
    ),
    "deepseek-anthropic": "DEEPSEEK_API_KEY",
}


def setup_hint(provider: str, *, from_environment: bool = False) -> str | None:
    """How to get an adapter for ``provider``, or ``None`` for a provider dshstream does
    not know. Names variables, never reads their values.

    ``from_environment``: the service came from :func:`default_service`, where setting the
    variable (and building the service again) is the fix; else registering an adapter
    comes first, and :func:`default_service` second.
    """
    from ._core.dialects import DIALECTS

    keyed = dict(KEYED_PROVIDERS)
    constructor = _ADAPTER_CLASS.get(provider)
    if constructor is None and provider in DIALECTS:
        key = ", api_key=..." if provider in keyed else ""
        constructor = f"OpenAIChatAdapter(dialect={provider!r}{key})"
    if constructor is None:
        return None
    register = f"register one with service.register_adapter([{provider!r}], {constructor})"
    if provider in keyed:
        needed = " or ".join(keyed[provider])
    elif provider in _CLOUD_SETUP:
        needed = _CLOUD_SETUP[provider]
    elif provider in LOCAL_PROVIDERS:
        # default_service registers every local server: only a hand-built service lacks it
        where = " or ".join(local_url_variables(provider))
        return f"{register}, or use dshstream.default_service() (the server's URL from {where})"
    else:  # a dialect default_service does not register (custom)
        return register
    if from_environment:
        return f"set {needed} and build the service again (dshstream.stream() does that itself), or {register}"
    return f"{register}, or set {needed} and use dshstream.default_service()"


def _usable_profile() -> Any:
    """The AWS profile of the shared files when it holds credentials (``None`` otherwise,
    and for a profile that only an AWS SDK could use: the adapter says why when built)."""
    from ._adapters.aws_profile import aws_profile
    from ._core.errors import ConfigurationError

    try:
        profile = aws_profile()
    except ConfigurationError:
        return None
    return profile if profile is not None and profile.credentials is not None else None


def _profile_region() -> str:
    from ._adapters.aws_profile import aws_profile
    from ._core.errors import ConfigurationError

    try:
        profile = aws_profile()
    except ConfigurationError:
        return ""
    return profile.region if profile is not None else ""


def claude_aws_configured() -> bool:
    """Whether the environment configures ``claude-aws`` (the module docstring)."""
    if not os.environ.get("ANTHROPIC_AWS_WORKSPACE_ID", "").strip():
        return False
    where = _key(("AWS_REGION", "AWS_DEFAULT_REGION", "ANTHROPIC_AWS_BASE_URL"))
    keys = bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"))
    return bool(where) and (keys or bool(os.environ.get("ANTHROPIC_AWS_API_KEY")))


def cloud_configured(provider: str) -> bool:
    """Whether the environment configures the cloud ``provider`` (the module docstring)."""
    if provider == "azure":
        return bool(os.environ.get("AZURE_OPENAI_ENDPOINT") and os.environ.get("AZURE_OPENAI_API_KEY"))
    if provider in ("vertex", "vertex-anthropic"):
        from ._adapters.google_oauth import default_credentials_file

        return bool(os.environ.get("GOOGLE_CLOUD_PROJECT")) and default_credentials_file() is not None
    if provider == "bedrock":
        region = _key(("AWS_REGION", "AWS_DEFAULT_REGION"))
        keys = bool(os.environ.get("AWS_ACCESS_KEY_ID") and os.environ.get("AWS_SECRET_ACCESS_KEY"))
        if keys or os.environ.get("AWS_BEARER_TOKEN_BEDROCK"):
            return bool(region) or bool(_profile_region())
        profile = _usable_profile()
        return profile is not None and bool(region or profile.region)
    return False


def cloud_adapter(provider: str, **settings: Any) -> HttpAdapter:
    """The adapter for the cloud ``provider`` from the environment (``settings`` go to it);
    raises :class:`~dshstream._core.errors.ConfigurationError` when it is unusable."""
    if provider == "azure":
        from ._adapters.azure import AzureOpenAIAdapter

        return AzureOpenAIAdapter(**settings)
    if provider == "vertex":
        from ._adapters.vertex import VertexGeminiAdapter

        return VertexGeminiAdapter(**settings)
    if provider == "vertex-anthropic":
        from ._adapters.vertex import VertexAnthropicAdapter

        return VertexAnthropicAdapter(**settings)
    if provider == "bedrock":
        from ._adapters.bedrock import BedrockAdapter

        return BedrockAdapter(**settings)
    raise KeyError(f"unknown cloud provider {provider!r}; known: {', '.join(CLOUD_PROVIDERS)}")


_service: LlmService | None = None
_lock = threading.Lock()


def _shared_service(provider: str | None = None) -> LlmService:
    """The process's cached default service, rebuilt when it has no route for
    ``provider``: the environment may have gained the key since (a notebook cell that sets
    it after a first failed call)."""
    global _service
    with _lock:
        if _service is None or (
            provider is not None and all(info.id != provider for info in _service.list_providers())
        ):
            _service = default_service()
        return _service


def stream(
    provider: str,
    model: str,
    prompt_or_messages: str | Sequence[Message],
    *,
    system: str | None = None,
    service: LlmService | None = None,
    **options: Any,
) -> ChunkStream:
    """Stream one response: ``dshstream.stream("openai", "gpt-4o-mini", "Hi").result()``.

    ``options`` are :class:`GenerateOptions` fields (``max_tokens=``, ``tools=`` ...).
    """
    if isinstance(prompt_or_messages, str):
        messages: list[Message] = [Message.user(prompt_or_messages)]
    else:
        messages = list(prompt_or_messages)
    if system is not None:
        messages.insert(0, Message.system(system))
    request = GenerateOptions(provider=provider, model=model, messages=tuple(messages), **options)
    return (service or _shared_service(provider)).stream(request)
