"""Wire: a provider's HTTP API as a value — what to send for a request and how to read
the answer — with no I/O and no credentials.

Contract:

1. **Pure.** A wire turns :class:`~dshstream._core.request.GenerateOptions` into a
   request — :meth:`Wire.endpoint`, :meth:`Wire.build_body`, :meth:`Wire.protocol_headers`
   (headers the API requires on every call, a version; this base's are none, and an
   adapter does not ask a wire that keeps them), :attr:`Wire.stream_accept` — and
   builds a fresh translator per attempt (:meth:`Wire.make_translator`). It never reads
   a credential, the network or the clock: the adapter composes it with an auth flow
   (:mod:`~dshstream._adapters.auth`) and the one attempt loop
   (:mod:`~dshstream._adapters.attempts`).
2. **Media table.** :meth:`Wire.media_support` (default :attr:`Wire.media`) says what the
   API takes of images, documents and audio; ``None``: none. The adapter refuses the rest
   before anything is sent.
3. **A second form.** :meth:`Wire.should_retry_request` may answer a rejected request
   (before any byte of a stream) with ``True`` after changing the wire's own state — the
   next attempt goes without a field the server refused; it guards that state with
   :attr:`Wire.lock` (one wire serves many threads).
4. **Models.** :meth:`Wire.models_url` (``None``: no list) is read as
   :attr:`Wire.models_format` says.
5. :meth:`Wire.diagnostics` is the bounded, prompt-free request summary a failure report
   carries (:func:`~dshstream._adapters.reporting.request_summary` by default).
6. **Resumption.** :meth:`Wire.resumable` says whether a stream for ``options`` can be
   continued after a cut (default: never; ``GenerateOptions.resumable`` then has no
   effect); it is asked only for a request that sets ``GenerateOptions.resumable``, the
   caller's opt-in (a request without it is never resumed). A wire that can resume names its stored response's URLs,
   :meth:`Wire.response_url` (the stream's continuation, the response itself, its
   cancel) and the continuation's query, :meth:`Wire.resume_query` (the Responses API's
   ``starting_after`` by default), and its translator numbers its events or keeps their
   resume token (translator rule 8); the adapter does the I/O
   (:mod:`~dshstream._adapters.resumption`).
7. **Counting tokens.** :meth:`Wire.count_tokens_url` (``None``, the default: the API has
   no counting endpoint, and nothing is estimated locally) is POSTed
   :meth:`Wire.count_tokens_body` — the stream's own :meth:`Wire.build_body`, less the
   fields only a generation takes (``stream``...) — and the answer read by
   :meth:`Wire.count_tokens_result` (``None``: no count in it). A wire without one may
   say why in :attr:`Wire.count_tokens_note`, which the refusal quotes.
8. **Telemetry facts.** :attr:`Wire.provider_name` is the OpenTelemetry GenAI
   conventions' well-known ``gen_ai.provider.name`` of the API (``None``: not a well-known
   one; the adapter then names it by the host of its own API, wherever its ``base_url``
   points: :func:`~dshstream._core.provider_names.provider_name_for_url`),
   :attr:`Wire.operation_name` its ``gen_ai.operation.name`` (``chat``; Gemini's
   ``generate_content``), and :attr:`Wire.idle_timeout` the idle timeout a request gets
   when it sets none (``None``: the transport's default), for an API whose documentation
   asks for longer silences (xAI: at least 900 s).
9. **Stream obfuscation.** :func:`obfuscation_field` is what an OpenAI wire sends as
   ``stream_options.include_obfuscation``: the caller's choice, or by default ``false`` on
   OpenAI's own API host (``api.openai.com``, its regional ``*.api.openai.com``), which
   documents the field and the padding it turns off, and nothing anywhere else — a
   compatible server may refuse a field it does not know.
10. **Tool names in history.** OpenAI, Anthropic and Bedrock refuse a request whose
    history holds a tool call named outside ``[A-Za-z0-9_-]{1,64}`` ("string does not
    match pattern"; Bedrock's ValidationException) — and models do call tools that do
    not exist under such names (gpt-oss's ``repo_browser.open_file``, a name with a
    ``<|channel|>`` token; vercel/ai#10202). The tool loop answers such a call with
    ``unknown_tool`` and goes on, so one hallucinated name would fail every later turn.
    :func:`replay_name` is the name those wires send back: unchanged when it fits or the
    request declares a tool of that name, else every other character as ``_``, at most
    64 (``unknown_tool`` when nothing is left). Calls and results pair by id, so the
    rename is safe.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .._core.errors import LlmError
from .._core.media_support import MediaSupport
from .._core.request import GenerateOptions
from .._core.validate import invalid
from .._core.wires.translator import Translator
from .reporting import request_summary

__all__ = ["ModelListFormat", "Wire", "check_media_parts", "obfuscation_field", "replay_name", "replay_names"]

_STRICT_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")


def replay_name(name: Any, declared: Collection[str]) -> Any:
    """The name an earlier tool call named ``name`` goes back under (rule 10)."""
    if not isinstance(name, str) or name in declared or _STRICT_NAME.fullmatch(name):
        return name
    cleaned = _NOT_NAME.sub("_", name)[:64]
    return cleaned if cleaned.strip("_-") else "unknown_tool"


def replay_names(history: list[dict[str, Any]], options: GenerateOptions) -> None:
    """Rule 10 over a request's converted ``history``, in place, in each form the strict
    APIs take: chat ``tool_calls``, Responses ``function_call`` items, Messages
    ``tool_use`` blocks and Converse ``toolUse`` blocks. A renamed block is a copy: a
    replayed one may be the caller's replay state."""
    declared = {tool.name for tool in options.tools}
    for entry in history:
        if entry.get("type") == "function_call":
            entry["name"] = replay_name(entry.get("name"), declared)  # built for this request
        for call in entry.get("tool_calls") or ():
            function = call.get("function")
            if type(function) is dict:
                call["function"] = {**function, "name": replay_name(function.get("name"), declared)}
        content = entry.get("content")
        if type(content) is not list:
            continue
        for position, block in enumerate(content):
            if type(block) is not dict:
                continue
            if block.get("type") == "tool_use":
                name = replay_name(block.get("name"), declared)
                if name != block.get("name"):
                    content[position] = {**block, "name": name}
            elif type(block.get("toolUse")) is dict:
                use = block["toolUse"]
                name = replay_name(use.get("name"), declared)
                if name != use.get("name"):
                    content[position] = {**block, "toolUse": {**use, "name": name}}


def obfuscation_field(base_url: str, include_obfuscation: bool | None) -> bool | None:
    """The ``stream_options.include_obfuscation`` to send to ``base_url`` (rule 9):
    ``include_obfuscation`` when the caller chose, else ``False`` on OpenAI's API host;
    ``None``: send nothing."""
    if include_obfuscation is not None:
        return include_obfuscation
    host = (urlsplit(base_url).hostname or "").lower()
    return False if host == "api.openai.com" or host.endswith(".api.openai.com") else None


def check_media_parts(
    options: GenerateOptions, support: Callable[[], MediaSupport | None], who: str
) -> None:
    """Refuse the media parts of ``options``' user turns that ``support()`` (asked only
    when there are any) does not take — ``None``: none at all — with a
    ``ConfigurationError`` naming the part, or ``who`` (rule 2). Shared by every adapter
    that sends media (the LiteLLM one included)."""
    messages = options.messages
    if all(type(message.content) is str for message in messages):  # the common case, at once
        return
    if not any(message.attachments for message in messages if message.role == "user"):
        return
    table = support()
    if table is None:
        raise invalid(f"{who} does not take images, documents or audio")
    table.check(options.messages)


@dataclass(frozen=True, slots=True)
class ModelListFormat:
    """Where a model list keeps its entries: ``{list_key: [{id_key, name_key}...]}``;
    ``id_prefix`` is dropped from ids (Gemini's ``models/``)."""

    list_key: str = "data"
    id_key: str = "id"
    name_key: str = "name"
    id_prefix: str = ""


class Wire:
    """One provider API's request and response shapes (rule 1); subclass it per API."""

    #: the ``accept`` header of a streaming request
    stream_accept = "text/event-stream"
    #: what the API takes of media parts; ``None``: none (rule 2)
    media: MediaSupport | None = None
    #: the model list's path under ``base_url`` (``None``: no list; rule 4)
    models_path: str | None = None
    #: how to read the model list (rule 4)
    models_format = ModelListFormat()
    #: the conventions' ``gen_ai.provider.name`` (rule 8; ``None``: named by the host)
    provider_name: str | None = None
    #: the conventions' ``gen_ai.operation.name`` (rule 8)
    operation_name = "chat"
    #: the idle timeout of a request that sets none (rule 8; ``None``: the default)
    idle_timeout: float | None = None
    #: why the API has no counting endpoint, said in the refusal (rule 7; ``""``: nothing to add)
    count_tokens_note = ""

    def __init__(self, base_url: str, title: str) -> None:
        #: the API root requests go to
        self.base_url = base_url
        #: the provider's display name, in messages
        self.title = title
        #: guards state :meth:`should_retry_request` changes (rule 3)
        self.lock = threading.Lock()

    def endpoint(self, options: GenerateOptions) -> str:
        """The URL a request for ``options`` is POSTed to."""
        raise NotImplementedError

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body for ``options``."""
        raise NotImplementedError

    def protocol_headers(self) -> dict[str, str]:
        """Headers the API requires on every call (e.g. a version)."""
        return {}

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        """A fresh translator for one attempt."""
        raise NotImplementedError

    def media_support(self, options: GenerateOptions) -> MediaSupport | None:
        """What the API ``options`` go to takes of media parts (rule 2)."""
        return self.media

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        """Whether a rejected request should be resent at once in another form (rule 3)."""
        return False

    def models_url(self) -> str | None:
        """The model list's URL (rule 4)."""
        return f"{self.base_url}{self.models_path}" if self.models_path is not None else None

    def resumable(self, options: GenerateOptions) -> bool:
        """Whether a stream for ``options`` can be resumed after a cut (rule 6)."""
        return False

    def response_url(
        self, options: GenerateOptions, response_id: str, suffix: str = "", query: Mapping[str, str] | None = None
    ) -> str:
        """The URL of stored response ``response_id`` (``suffix``: a path under it, such as
        ``/cancel``; ``query``: parameters), for a wire that can resume (rule 6)."""
        raise NotImplementedError

    def resume_query(self, after: int, event_id: str | None) -> dict[str, str]:
        """The query of a cut stream's continuation after the last event read — its
        sequence number ``after``, its resume token ``event_id`` (rule 6)."""
        return {"stream": "true", "starting_after": str(after)}

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        """The token-counting endpoint for ``options``; ``None``: the API has none (rule 7)."""
        return None

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The counting request's JSON body: the stream's, less what only generation takes
        (rule 7)."""
        body = self.build_body(options)
        body.pop("stream", None)
        return body

    def count_tokens_result(self, payload: Any) -> int | None:
        """The input-token count in the counting endpoint's answer (rule 7)."""
        value = payload.get("input_tokens") if isinstance(payload, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def diagnostics(self, options: GenerateOptions) -> dict[str, Any]:
        """A bounded, prompt-free summary of the request for failure reports (rule 5)."""
        return request_summary(options)
