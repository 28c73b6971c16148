"""Gemini Interactions API: the wire (``POST {base_url}/v1beta/interactions``, ``"stream":
true``) and its adapter.

Contract:

1. **The wire.** :class:`GeminiInteractionsWire` is pure (wire rule 1). The body: ``model``
   (a ``models/`` prefix dropped), ``stream: true``, ``input`` — the history as steps:
   ``user_input`` with its ``content`` (text, and media parts as ``image``/``document``/
   ``audio`` content with base64 ``data`` or a ``uri``, Gemini's media table), tool results
   as ``function_result`` steps (``call_id``, the function ``name`` looked up from the call,
   ``result`` the text as sent, ``is_error``), model turns by rule 3 — system messages
   joined into ``system_instruction``, tools as ``{"type": "function", name, description,
   parameters}``, ``generation_config`` (``max_output_tokens``, ``temperature``,
   ``stop_sequences``, ``thinking_level``: ``off`` and ``minimal`` are ``minimal`` — the
   Gemini 3 models this API serves cannot turn thinking off — ``max`` is ``high``; a model
   that refuses ``minimal`` (Gemini Flash 3.7 and later, vercel/ai#19031) is asked once
   more with ``low`` and gets ``low`` from then on; with any
   effort but ``off`` also ``thinking_summaries: "auto"``, so reasoning streams),
   ``response_format`` (``{"type": "text", "mime_type": "application/json"}``, with the
   ``schema`` of a :class:`~dshstream._core.response_format.JsonSchema`), then
   ``extra_body``. ``api_revision`` (default :data:`API_REVISION`, ``2026-05-20``: the steps
   schema, pinned so a change of the API's default revision cannot silently change the
   events; ``None``: not sent) is the ``Api-Revision`` header. The stream is
   decoded by :class:`~dshstream._core.wires.gemini_interactions.GeminiInteractionsTranslator`.
2. **The adapter.** :class:`GeminiInteractionsAdapter` is that wire + the key in
   ``x-goog-api-key`` (never in the URL) + the attempt loop; the Gemini API's key, hosts
   and model list (``GET /{api_version}/models``). Prompt caching requests (cache points,
   ``PromptCache``) are a ``ConfigurationError`` before sending: this API documents none.
3. **History.** A model turn carrying this wire's replay state goes back as its steps
   exactly as received — thought steps with their ``signature``, server tool steps, calls
   with their wire ids — minus any ``function_call`` step without a matching
   :class:`ToolCallBlock` in the message. Without replay state the turn is rebuilt from its
   blocks (text and files as ``model_output``, calls as ``function_call``, a signed
   reasoning block as a ``thought`` step with its ``signature`` — a signature the service
   kept is this API's own, :mod:`~dshstream._core.portable` rule 2 — and unsigned
   reasoning not at all). With ``previous_interaction=True`` the request continues the server's
   stored interaction instead: when the latest model turn carries an ``interaction_id``,
   only the messages after it are sent, with ``previous_interaction_id`` (system
   instruction, tools and config are sent every time: they are not inherited).
4. **Resumable** (wire rule 6). With ``GenerateOptions.resumable`` the interaction runs in
   the background (``background: true``, ``store: true``): a cut stream is continued with
   ``GET /{api_version}/interactions/{id}?stream=true&last_event_id=...`` (the translator's
   last event id; none: from the start, the events already read dropped), an unfinished
   stream's finish carries the resume cursor (``wire: "gemini-interactions"``), and a
   stream the consumer leaves is cancelled (``POST .../interactions/{id}/cancel``); the I/O
   is :mod:`~dshstream._adapters.resumption`'s.
5. A failed stream is reported with a bounded, prompt-free summary
   (:meth:`GeminiInteractionsWire.diagnostics`: roles and step kinds, never text).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from .._core.errors import LlmError
from .._core.media_support import GEMINI, media_summary
from .._core.parts import MediaPart
from .._core.request import GenerateOptions, Message
from .._core.response_format import JsonSchema
from .._core.strict_json import parse_json_object
from .._core.validate import describe, invalid
from .._core.types import FileBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .._core.wires.gemini_interactions import WIRE, GeminiInteractionsTranslator
from .._core.wires.translator import Translator
from .gemini_common import GeminiApiWire, GeminiKeyAdapter, function_declaration, kept_replay, sampling_config
from .prompt_cache import NO_CACHING, check_prompt_cache
from .settings import HttpSettings
from .structured_output import schema_of

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["API_REVISION", "GeminiInteractionsAdapter", "GeminiInteractionsWire", "THINKING_LEVELS"]

#: the API revision whose schema this wire speaks (steps, ``step.*`` events; rule 1)
API_REVISION = "2026-05-20"
#: ``reasoning_effort`` -> ``generation_config.thinking_level`` (rule 1)
THINKING_LEVELS: dict[str, str] = {
    "off": "minimal",
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
    "max": "high",
}
_MEDIA_KINDS = {"image": "image", "document": "document", "audio": "audio"}


def _model_id(options: GenerateOptions) -> str:
    """The request's model without a ``models/`` prefix."""
    model = options.model
    return model[len("models/") :] if model.startswith("models/") else model


class GeminiInteractionsWire(GeminiApiWire):
    """The Interactions API request and translator (rule 1)."""

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        api_version: str = "v1beta",
        api_revision: str | None = API_REVISION,
        previous_interaction: bool = False,
    ) -> None:
        super().__init__(base_url, title, api_version=api_version)
        #: the ``Api-Revision`` header (``None``: not sent, the API's default revision)
        self.api_revision = api_revision
        #: continue the stored interaction instead of resending the history (rule 3)
        self.previous_interaction = previous_interaction
        #: models that refused ``thinking_level: minimal`` and get ``low`` (rule 1)
        self.no_minimal: set[str] = set()

    # ------------------------------------------------------------------ request

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/{self.api_version}/interactions"

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        """A 400 refusing ``thinking_level: minimal``: the model gets ``low`` from now on,
        and the request is sent again (rule 1; wire rule 3)."""
        failure = error.failure
        detail = (failure.detail or "").lower()
        model = _model_id(options)
        if (
            failure.status == 400
            and THINKING_LEVELS.get(options.reasoning_effort or "") == "minimal"
            and model not in self.no_minimal
            and "minimal" in detail
            and "thinking" in detail
        ):
            with self.lock:
                self.no_minimal.add(model)
            return True
        return super().should_retry_request(error, options)

    def protocol_headers(self) -> dict[str, str]:
        return {"Api-Revision": self.api_revision} if self.api_revision else {}

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        # prompt caching: nothing of it is documented for this API; refused, never dropped
        check_prompt_cache(options, NO_CACHING, self.title)
        model = _model_id(options)
        body: dict[str, Any] = {"model": model, "stream": True}
        messages: Sequence[Message] = options.messages
        previous = self.previous_interaction_id(messages) if self.previous_interaction else None
        if previous is not None:
            body["previous_interaction_id"], messages = previous
        body["input"] = self.build_input(messages, options.messages[: len(options.messages) - len(messages)])
        system = [m.text for m in options.messages if m.role == "system" and m.text]
        if system:
            body["system_instruction"] = "\n\n".join(system)
        if options.tools:
            body["tools"] = [
                {"type": "function", **function_declaration(tool)} for tool in options.tools
            ]
        config = sampling_config(options, snake=True)
        effort = options.reasoning_effort
        if effort is not None:
            level = THINKING_LEVELS.get(effort, "medium")
            config["thinking_level"] = "low" if level == "minimal" and model in self.no_minimal else level
            if effort != "off":
                config["thinking_summaries"] = "auto"
        if config:
            body["generation_config"] = config
        fmt = options.response_format
        if fmt is not None:
            response_format: dict[str, Any] = {"type": "text", "mime_type": "application/json"}
            if isinstance(fmt, JsonSchema):
                response_format["schema"] = schema_of(fmt)
            body["response_format"] = response_format
        if options.resumable:  # rule 4: a stored background interaction can be resumed
            body["background"] = True
            body["store"] = True
        if options.extra_body:
            body.update(options.extra_body)
        return body

    @staticmethod
    def previous_interaction_id(messages: Sequence[Message]) -> tuple[str, Sequence[Message]] | None:
        """The latest model turn's interaction id and the messages after it (rule 3);
        ``None`` when no model turn carries one."""
        for position in range(len(messages) - 1, -1, -1):
            message = messages[position]
            if message.role != "assistant":
                continue
            replay = message.replay_state
            if isinstance(replay, dict) and replay.get("wire") == WIRE:
                interaction_id = replay.get("interaction_id")
                if isinstance(interaction_id, str) and interaction_id:
                    return interaction_id, messages[position + 1 :]
            return None
        return None

    def build_input(self, messages: Sequence[Message], stored: Sequence[Message] = ()) -> list[dict[str, Any]]:
        """The ``input`` steps of a history (rules 1 and 3); ``stored``: the turns the
        server already holds (``previous_interaction_id``), read only for the names of the
        calls a result answers."""
        steps: list[dict[str, Any]] = []
        calls: dict[str, tuple[str, str]] = {}  # dshstream call id -> (name, wire id)
        for message in stored:
            for call in message.tool_calls:
                calls[call.id] = (call.name, call.id)  # a replayed call's id is its wire id
        for message in messages:
            if message.role == "system":
                continue
            if message.role == "assistant":
                steps.extend(self.model_steps(message, calls))
                continue
            content: list[dict[str, Any]] = []
            results: list[dict[str, Any]] = []
            for block in message.parts:
                if isinstance(block, MediaPart):
                    content.append(self.media_content(block))
                elif isinstance(block, ToolResultBlock):
                    results.append(self.function_result(block, calls))
                elif isinstance(block, TextBlock) and block.text:
                    content.append({"type": "text", "text": block.text})
            steps.extend(results)  # a result answers the model turn right before it
            if content:
                steps.append({"type": "user_input", "content": content})
        return steps

    def model_steps(self, message: Message, calls: dict[str, tuple[str, str]]) -> list[dict[str, Any]]:
        """A model turn's steps: its replay state if it has ours, else rebuilt (rule 3)."""
        replayed = kept_replay(message, WIRE, "steps", _is_function_call)
        if replayed is not None:
            steps: list[dict[str, Any]] = []
            for step, call_id in replayed:
                if call_id is not None:
                    calls[call_id] = (str(step.get("name") or ""), str(step.get("id") or call_id))
                steps.append(dict(step))
            return steps
        steps = []
        content: list[dict[str, Any]] = []
        for block in message.blocks:
            if isinstance(block, ReasoningBlock) and block.signature:
                if content:
                    steps.append({"type": "model_output", "content": content})
                    content = []
                thought: dict[str, Any] = {"type": "thought", "signature": block.signature}
                if block.text:
                    thought["summary"] = [{"type": "text", "text": block.text}]
                steps.append(thought)
            elif isinstance(block, TextBlock) and block.text:
                content.append({"type": "text", "text": block.text})
            elif isinstance(block, FileBlock):
                content.append({"type": _content_kind(block.media_type), "data": block.base64,
                                "mime_type": block.media_type})
            elif isinstance(block, ToolCallBlock):
                if content:
                    steps.append({"type": "model_output", "content": content})
                    content = []
                steps.append({"type": "function_call", "id": block.id, "name": block.name,
                              "arguments": parse_json_object(block.arguments)})
                calls[block.id] = (block.name, block.id)
        if content:
            steps.append({"type": "model_output", "content": content})
        return steps

    def media_content(self, part: MediaPart) -> dict[str, Any]:
        """An ``image``/``document``/``audio`` content item: base64 ``data`` or a ``uri``."""
        support = self.media or GEMINI
        mime = support.accept(part)
        kind = _MEDIA_KINDS.get(part.kind, "document")
        if part.url is not None:
            return {"type": kind, "uri": part.url, "mime_type": mime}
        return {"type": kind, "data": part.base64, "mime_type": mime}

    @staticmethod
    def function_result(block: ToolResultBlock, calls: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
        """The ``function_result`` step of one tool result (rule 1)."""
        name, wire_id = calls.get(block.call_id, ("", block.call_id))
        step: dict[str, Any] = {"type": "function_result", "call_id": wire_id, "result": block.content}
        if name:
            step["name"] = name
        if block.is_error:
            step["is_error"] = True
        return step

    # ------------------------------------------------------------------ resuming (rule 4)

    def resumable(self, options: GenerateOptions) -> bool:
        return options.resumable

    def response_url(
        self, options: GenerateOptions, response_id: str, suffix: str = "", query: Mapping[str, str] | None = None
    ) -> str:
        url = f"{self.base_url}/{self.api_version}/interactions/{quote(response_id, safe='')}{suffix}"
        return f"{url}?{urlencode(dict(query))}" if query else url

    def resume_query(self, after: int, event_id: str | None) -> dict[str, str]:
        """The continuation after the last event read: its ``event_id`` (rule 4)."""
        return {"stream": "true", **({"last_event_id": event_id} if event_id else {})}

    # ------------------------------------------------------------------ diagnostics

    def diagnostics(self, options: GenerateOptions) -> dict[str, Any]:
        """Roles and step kinds of the request, tool counts; never text (rule 5)."""
        try:
            steps = self.build_input(options.messages)
        except Exception:  # noqa: BLE001 - diagnostics must never fail the report
            steps = []
        kinds = [str(step.get("type"))[:40] for step in steps[-8:]]
        return {
            "request_model": options.model,
            "last_steps": kinds,
            "step_count": len(steps),
            "has_tool_history": any(step.get("type") in ("function_call", "function_result") for step in steps),
            "tool_count": len(options.tools),
            "previous_interaction": self.previous_interaction,
            **({"attachments": attachments} if (attachments := media_summary(options.messages)) else {}),
        }

    # ------------------------------------------------------------------ response

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return GeminiInteractionsTranslator(provider=options.provider, request_id=request_id, max_tokens=options.max_tokens)


def _is_function_call(step: Mapping[str, Any]) -> bool:
    return step.get("type") == "function_call"


def _content_kind(media_type: str) -> str:
    head = media_type.split("/", 1)[0]
    return head if head in ("image", "audio", "video") else "document"


class GeminiInteractionsAdapter(GeminiKeyAdapter):
    """Stream Gemini models through the Interactions API (rule 2)."""

    default_name = "Google Gemini Interactions"

    def __init__(
        self,
        *,
        api_version: str = "v1beta",
        api_revision: str | None = API_REVISION,
        previous_interaction: bool = False,
        **settings: Unpack[HttpSettings],
    ) -> None:
        if api_revision is not None and (not isinstance(api_revision, str) or not api_revision.strip()):
            raise invalid(f"api_revision must be a non-empty str or None, got {describe(api_revision)}", wrong_type=True)
        if type(previous_interaction) is not bool:
            raise invalid(f"previous_interaction must be a bool, got {describe(previous_interaction)}", wrong_type=True)
        super().__init__(**settings)
        self.wire: GeminiInteractionsWire = GeminiInteractionsWire(
            self.base_url,
            self.title,
            api_version=api_version,
            api_revision=api_revision,
            previous_interaction=previous_interaction,
        )
