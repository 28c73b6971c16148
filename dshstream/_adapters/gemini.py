"""Gemini API: the wire
(``POST {base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``) and its adapter.

Contract:

1. **The wire.** :class:`GeminiWire` is pure (wire rule 1). The body: ``contents`` with
   ``user``/``model`` roles (consecutive turns of one role merged), system messages joined
   into ``systemInstruction``, tools as one ``functionDeclarations`` entry, tool results as
   ``functionResponse`` parts in a user turn (the function name looked up from the matching
   call earlier in the history; a result that is a JSON object is sent as is, anything else
   as ``{"result": ...}`` or, for an error, ``{"error": ...}``), media parts as
   ``inlineData`` or ``fileData`` parts of the user turn, in order (the media table is
   Gemini's), and ``generationConfig`` (maxOutputTokens, temperature, stopSequences,
   ``thinkingConfig``: on Gemini 3 and later ``includeThoughts`` with a ``thinkingLevel``
   (``low`` for off/minimal/low, ``high`` above: those models can't turn thinking off and
   reject a level together with a budget); on earlier models ``off`` is
   ``thinkingBudget: 0`` and other efforts ``includeThoughts`` with a budget
   (``thinking_budgets``); ``response_format`` as ``responseMimeType: "application/json"``
   plus ``responseJsonSchema``: :mod:`~dshstream._adapters.structured_output`);
   ``extra_body`` last. The stream is decoded by
   :class:`~dshstream._core.wires.gemini.GeminiTranslator`.
2. **The adapter.** :class:`GeminiAdapter` is that wire + the key in ``x-goog-api-key``
   (:class:`~dshstream._adapters.auth.HeaderAuth`, a bare key, never in the URL: a logged
   URL cannot leak it) + the attempt loop (:mod:`~dshstream._adapters.http`). It overrides
   no hook: its ``__init__`` only resolves the settings and builds the two.
3. **History replay.** A model turn that carries this wire's replay state goes back as the
   parts exactly as received, every ``thoughtSignature`` on the part it came with, minus
   any ``functionCall`` without a matching :class:`ToolCallBlock` in the message. Without
   replay state the turn is rebuilt from its blocks (text, ``functionCall`` with parsed
   arguments, a file the model produced as ``inlineData``; reasoning is not sent back),
   and the first ``functionCall`` gets Google's documented placeholder signature for
   history the model did not sign (``foreign_thought_signature``; ``None`` turns it off),
   which Gemini 3 requires.
4. **Models.** ``GET /{api_version}/models?pageSize=1000``, ``models/`` dropped from ids.
5. A failed stream is reported to ``failure_reporter`` with a bounded, prompt-free summary
   (:meth:`GeminiWire.diagnostics`).
6. **Prompt caching.** ``PromptCache(cached_content=NAME)`` is ``cachedContent`` (a cache
   created beforehand: ``cachedContents/...``, on Vertex its full resource name); the API
   refuses a system instruction or tools beside it (they live in the cache), so those are
   a ``ConfigurationError`` before sending. ``automatic`` is accepted: Gemini 2.5 and
   later cache common prefixes implicitly. Cache points have nothing to map to and are
   refused (:mod:`~dshstream._adapters.prompt_cache`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._core.parts import MediaPart
from .._core.media_support import GEMINI, media_summary
from .._core.request import GenerateOptions, Message
from .._core.types import FileBlock, TextBlock, ToolCallBlock, ToolResultBlock
from .._core.strict_json import parse_json_object
from .._core.wires.translator import Translator
from .._core.wires.gemini import WIRE, GeminiTranslator
from .._core.validate import invalid
from .gemini_common import GeminiApiWire, GeminiKeyAdapter, function_declaration, kept_replay, sampling_config
from .prompt_cache import CacheSupport, check_prompt_cache
from .settings import HttpSettings
from .structured_output import gemini_generation_config

if TYPE_CHECKING:
    from typing_extensions import Unpack

FOREIGN_THOUGHT_SIGNATURE = "skip_thought_signature_validator"
#: what Gemini takes of prompt caching (rule 6)
GEMINI_CACHING = CacheSupport(
    automatic=True,
    cached_content=True,
    points_tip="create a cache (cachedContents) and name it in PromptCache(cached_content=...)",
)
THINKING_BUDGETS: dict[str, int] = {
    "minimal": 512,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "max": 24576,
}
_FLAG_KEYS = frozenset({"thought", "thoughtSignature"})
_MAX_PART_KINDS = 12


_GEMINI_GENERATION = re.compile(r"gemini-(\d+)(?:\.\d+)?-")


def gemini_generation(model: str) -> int | None:
    """A Gemini model id's generation (``gemini-2.5-flash`` -> 2; ``None`` when it names none)."""
    match = _GEMINI_GENERATION.search(model)
    return int(match.group(1)) if match is not None else None


def _thinking_levels(model: str) -> bool:
    """Gemini 3 and later take ``thinkingLevel`` instead of a token budget."""
    generation = gemini_generation(model)
    return generation is not None and generation >= 3


class GeminiWire(GeminiApiWire):
    """The Gemini API request and translator (rule 1)."""

    #: telemetry (wire rule 8): the Gemini API's operation is ``generate_content``
    provider_name: str | None = "gcp.gemini"
    operation_name = "generate_content"

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        api_version: str = "v1beta",
        thinking_budgets: Mapping[str, int] | None = None,
        foreign_thought_signature: str | None = FOREIGN_THOUGHT_SIGNATURE,
    ) -> None:
        super().__init__(base_url, title, api_version=api_version)
        self.thinking_budgets = {**THINKING_BUDGETS, **(thinking_budgets or {})}
        self.foreign_thought_signature = foreign_thought_signature

    # ------------------------------------------------------------------ request

    def model_path(self, model: str) -> str:
        """``models/{model}`` with the model name URL-quoted (a ``models/`` prefix is kept once)."""
        name = model[len("models/") :] if model.startswith("models/") else model
        return f"models/{quote(name, safe='-._~@')}"

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/{self.api_version}/{self.model_path(options.model)}:streamGenerateContent?alt=sse"

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/{self.api_version}/{self.model_path(options.model)}:countTokens"

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        """``generateContentRequest``: the stream's whole body (system instruction, tools,
        config), so the count is the one generation would bill (wire rule 7)."""
        return {"generateContentRequest": {"model": self.model_path(options.model), **self.build_body(options)}}

    def count_tokens_result(self, payload: Any) -> int | None:
        value = payload.get("totalTokens") if isinstance(payload, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body for ``options``."""
        check_prompt_cache(options, GEMINI_CACHING, self.title)
        body: dict[str, Any] = {"contents": self.build_contents(options.messages)}
        system = [m.text for m in options.messages if m.role == "system" and m.text]
        cached = options.prompt_cache.cached_content if options.prompt_cache is not None else None
        if cached is not None:  # rule 6
            if system or options.tools:
                raise invalid(
                    f"{self.title} refuses a system prompt or tools beside cached content "
                    "(GenerateOptions.prompt_cache.cached_content): put them in the cache when creating it"
                )
            body["cachedContent"] = cached
        if system:
            body["systemInstruction"] = {"parts": [{"text": "\n\n".join(system)}]}
        if options.tools:
            declarations = [function_declaration(tool) for tool in options.tools]
            body["tools"] = [{"functionDeclarations": declarations}]
        config = sampling_config(options, snake=False)
        effort = options.reasoning_effort
        if effort is not None and _thinking_levels(options.model):
            level = "low" if effort in ("off", "minimal", "low") else "high"
            config["thinkingConfig"] = {"includeThoughts": True, "thinkingLevel": level}
        elif effort == "off":
            config["thinkingConfig"] = {"thinkingBudget": 0}
        elif effort is not None:
            budget = self.thinking_budgets.get(effort, THINKING_BUDGETS["medium"])
            config["thinkingConfig"] = {"includeThoughts": True, "thinkingBudget": budget}
        if options.response_format is not None:
            generation = gemini_generation(options.model)
            config.update(gemini_generation_config(options, self.title, generation))
        if config:
            body["generationConfig"] = config
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def build_contents(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """The ``contents`` array; consecutive turns of one role are merged."""
        contents: list[dict[str, Any]] = []
        calls: dict[str, tuple[str, str | None]] = {}  # call id -> (name, wire id)
        for message in messages:
            if message.role == "system":
                continue
            if message.role == "assistant":
                role = "model"
                parts = self.model_parts(message, calls)
            else:
                role = "user"
                parts = []
                content = message.content
                if type(content) is str:  # plain text: its one text part, Message.parts not asked
                    if content:
                        parts.append({"text": content})
                    blocks: Sequence[object] = ()
                else:
                    blocks = message.parts
                for block in blocks:
                    if isinstance(block, MediaPart):
                        parts.append(self.media_part(block))
                    elif isinstance(block, ToolResultBlock):
                        parts.append(self.function_response(block, calls))
                    elif isinstance(block, TextBlock) and block.text:
                        parts.append({"text": block.text})
            if not parts:
                continue
            if contents and contents[-1]["role"] == role:
                contents[-1]["parts"].extend(parts)
            else:
                contents.append({"role": role, "parts": parts})
        return contents

    def model_parts(self, message: Message, calls: dict[str, tuple[str, str | None]]) -> list[dict[str, Any]]:
        """A model turn's parts: replay state if it has ours, else rebuilt from its blocks."""
        replayed = kept_replay(message, WIRE, "parts", _is_function_call)
        if replayed is not None:
            parts: list[dict[str, Any]] = []
            for part, call_id in replayed:
                if call_id is not None:
                    function_call = part["functionCall"]
                    wire_id = function_call.get("id")
                    calls[call_id] = (
                        str(function_call.get("name") or ""),
                        wire_id if isinstance(wire_id, str) and wire_id else None,
                    )
                parts.append(dict(part))
            return parts
        parts = []
        signed = False
        for block in message.blocks:
            if isinstance(block, TextBlock):
                if block.text:
                    parts.append({"text": block.text})
            elif isinstance(block, FileBlock):
                parts.append({"inlineData": {"mimeType": block.media_type, "data": block.base64}})
            elif isinstance(block, ToolCallBlock):
                call_part: dict[str, Any] = {
                    "functionCall": {"name": block.name, "args": parse_json_object(block.arguments)}
                }
                if not signed and self.foreign_thought_signature:
                    call_part["thoughtSignature"] = self.foreign_thought_signature
                    signed = True
                parts.append(call_part)
                calls[block.id] = (block.name, None)
        return parts

    def media_part(self, part: MediaPart) -> dict[str, Any]:
        """``inlineData {mimeType, data}`` for bytes, ``fileData {mimeType, fileUri}`` for a
        URL (a ``gs://`` object, a Files API or other https URI)."""
        support = self.media or GEMINI
        mime = support.accept(part)
        if part.url is not None:
            return {"fileData": {"mimeType": mime, "fileUri": part.url}}
        return {"inlineData": {"mimeType": mime, "data": part.base64}}

    @staticmethod
    def function_response(block: ToolResultBlock, calls: Mapping[str, tuple[str, str | None]]) -> dict[str, Any]:
        """The ``functionResponse`` part for one tool result."""
        name, wire_id = calls.get(block.call_id, (block.call_id, None))
        try:
            parsed: Any = json.loads(block.content)
        except (ValueError, RecursionError):
            parsed = block.content
        if isinstance(parsed, dict) and not block.is_error:
            response: dict[str, Any] = parsed
        else:
            response = {"error" if block.is_error else "result": parsed}
        function_response: dict[str, Any] = {"name": name, "response": response}
        if wire_id is not None:
            function_response["id"] = wire_id
        return {"functionResponse": function_response}

    # ------------------------------------------------------------------ diagnostics

    def diagnostics(self, options: GenerateOptions) -> dict[str, Any]:
        """A bounded summary for failure reports: the request model, the last five
        dialogue roles, part counts of the final turn by kind, whether tool history is
        present; never prompt text, arguments or media."""
        try:
            contents = self.build_contents(options.messages)
        except Exception:  # noqa: BLE001 - diagnostics must never fail the report
            contents = []
        final: dict[str, int] = {}
        if contents:
            for part in contents[-1]["parts"]:
                kind = _part_kind(part)
                if kind in final or len(final) < _MAX_PART_KINDS:
                    final[kind] = final.get(kind, 0) + 1
        has_tools = any(
            "functionCall" in part or "functionResponse" in part
            for content in contents
            for part in content["parts"]
        )
        return {
            "request_model": options.model,
            "last_roles": [content["role"] for content in contents[-5:]],
            "turn_count": len(contents),
            "final_turn_parts": final,
            "has_tool_history": has_tools,
            "tool_count": len(options.tools),
            **({"attachments": attachments} if (attachments := media_summary(options.messages)) else {}),
        }

    # ------------------------------------------------------------------ response

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return GeminiTranslator(provider=options.provider, request_id=request_id, max_tokens=options.max_tokens)


class GeminiAdapter(GeminiKeyAdapter):
    """Stream Gemini models through the Gemini API (or a compatible endpoint; rule 2)."""

    default_name = "Google Gemini"

    def __init__(
        self,
        *,
        api_version: str = "v1beta",
        thinking_budgets: Mapping[str, int] | None = None,
        foreign_thought_signature: str | None = FOREIGN_THOUGHT_SIGNATURE,
        **settings: Unpack[HttpSettings],
    ) -> None:
        super().__init__(**settings)
        self.wire: GeminiWire = GeminiWire(
            self.base_url,
            self.title,
            api_version=api_version,
            thinking_budgets=thinking_budgets,
            foreign_thought_signature=foreign_thought_signature,
        )


def _is_function_call(part: Mapping[str, Any]) -> bool:
    return isinstance(part.get("functionCall"), dict)


def _part_kind(part: Mapping[str, Any]) -> str:
    if part.get("thought") is True:
        return "thought"
    for key in part:
        if key not in _FLAG_KEYS:
            return str(key)[:40]
    return "signature"


__all__ = ["GeminiAdapter", "GeminiWire", "THINKING_BUDGETS", "FOREIGN_THOUGHT_SIGNATURE"]
