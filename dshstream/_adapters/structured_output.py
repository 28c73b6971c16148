"""Structured output on every provider: ``GenerateOptions.response_format``
(:class:`~dshstream._core.response_format.JsonSchema` or
:class:`~dshstream._core.response_format.JsonMode`) as each wire spells it — the shared
part, used by every adapter's ``build_body``; each adapter adds only what its wire does
differently.

Contract (sans-IO; pure functions of the options):

1. **Wire shapes** (checked against the providers' published types):

   * OpenAI chat completions and every compatible server:
     ``response_format: {"type": "json_schema", "json_schema": {name, schema, strict,
     description?}}``; JSON mode ``{"type": "json_object"}`` (openai-python
     ``ResponseFormatJSONSchema``/``ResponseFormatJSONObject``). Ollama's ``/v1`` endpoint
     turns this into its native ``format`` (the schema object, or ``"json"``: ollama
     ``openai/openai.go``, ``fromChatRequest``); vLLM into its guided decoding
     (``structured_outputs.json``, formerly ``guided_json``, which v0.12 removed — the
     ``response_format`` spelling works before and after that rename); Together,
     Groq, Mistral, xAI, OpenRouter and LM Studio take it as is.
   * llama.cpp server: the top-level ``json_schema`` field (compiled to a grammar;
     ``tools/server``: *either "json_schema" or "grammar" can be specified*); JSON mode
     through ``response_format``.
   * DeepSeek has JSON mode only, LM Studio schema mode only: the other one is refused.
   * OpenAI Responses: ``text: {"format": {"type": "json_schema", name, schema, strict,
     description?}}`` (openai-python ``ResponseFormatTextJSONSchemaConfigParam``); JSON
     mode ``{"type": "json_object"}``.
   * Anthropic Messages: ``output_config: {"format": {"type": "json_schema", "schema"}}``
     (anthropic-sdk-python ``OutputConfigParam``/``JSONOutputFormatParam``; GA, no beta
     header) on the models that have it — Claude 4.5 and later
     (Haiku 4.5, Sonnet 4.5, Opus 4.5, ...), on the Claude API and on Bedrock
     (InvokeModel: the same ``output_config.format``). Anthropic has no JSON mode.
   * Bedrock Converse: ``outputConfig: {"textFormat": {"type": "json_schema",
     "structure": {"jsonSchema": {"schema": "<the schema as a JSON string>", "name",
     "description"?}}}}`` (botocore ``bedrock-runtime`` 2023-09-30 ``OutputConfig``).
   * Gemini (and Vertex Gemini): ``generationConfig.responseMimeType:
     "application/json"`` plus ``responseJsonSchema`` (full JSON Schema; the older
     ``responseSchema`` takes only an OpenAPI subset, so it is not used); JSON mode is the
     MIME type alone. Gemini before 3 refuses function calling together with a JSON
     MIME type (*Function calling with a response mime type: 'application/json' is
     unsupported*), so tools plus a response format are refused there.

2. **Forced tool** (:func:`forced_tool`), where a model has no native mechanism (Claude
   before 4.5, Claude on Vertex, Bedrock Converse models other than Claude 4.5+): the
   schema becomes the input schema of one tool the model is forced to call (Anthropic
   ``tool_choice: {"type": "tool", "name"}``, Converse ``toolChoice: {"tool": {"name"}}``),
   and the translator writes that call's arguments as text
   (:meth:`~dshstream._core.wires.translator.Translator.unwrap_tool_call`), so the caller sees
   the same JSON text, a text block and a ``stop`` finish, as on the native path. The
   path refuses, at build time: :class:`JsonMode`; ``strict=True`` (a forced call is
   not constrained decoding: pass ``strict=False`` to accept best effort); other
   ``tools`` (the model may call only the forced one); extended thinking (a forced
   tool choice can't be combined with it); a schema whose root is not ``"type":
   "object"`` (a tool input is an object).

3. Every refusal is a ``ConfigurationError`` (``INVALID_OPTIONS``) raised while the body
   is built, before anything is sent; its message starts with
   ``GenerateOptions.response_format`` and names the provider and the model.
4. ``response_format=None`` adds nothing to any body.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

from .._core.dialects import Dialect
from .._core.errors import ConfigurationError
from .._core.request import GenerateOptions
from .._core.response_format import JsonMode, JsonSchema
from .._core.validate import invalid
from .._core.wires.translator import Translator

__all__ = [
    "ForcedTool",
    "StructuredMode",
    "claude_native",
    "chat_fields",
    "chat_response_format",
    "converse_output_config",
    "forced_tool",
    "gemini_generation_config",
    "json_schema_body",
    "refuse",
    "responses_text_format",
    "schema_of",
    "unwrapped",
]

#: how an adapter that has both asks for structured output: ``"auto"`` (native where the
#: model has it, else a forced tool), ``"native"`` or ``"tool"`` (always that one)
StructuredMode = Literal["auto", "native", "tool"]
STRUCTURED_MODES: tuple[StructuredMode, ...] = ("auto", "native", "tool")

#: the first Claude version with native structured outputs (output_config.format)
CLAUDE_NATIVE_SINCE = (4, 5)
DEFAULT_TOOL_DESCRIPTION = (
    "Give your final answer as this tool's input; it must match the input schema."
)


def refuse(
    options: GenerateOptions, where: str, problem: str, hint: str = ""
) -> ConfigurationError:
    """The ``ConfigurationError`` for a response format ``where`` can't serve (rule 3)."""
    fmt = type(options.response_format).__name__
    tail = f"; {hint}" if hint else ""
    return invalid(
        f"GenerateOptions.response_format ({fmt}): {problem} on {where} "
        f"(provider {options.provider!r}, model {options.model[:80]!r}){tail}"
    )


def schema_of(fmt: JsonSchema) -> dict[str, Any]:
    """A fresh copy of the schema for one body (a body may be altered by its caller)."""
    return copy.deepcopy(dict(fmt.schema))


def json_schema_body(fmt: JsonSchema) -> dict[str, Any]:
    """The OpenAI ``json_schema`` object: name, schema, strict, description when set."""
    out: dict[str, Any] = {"name": fmt.name, "schema": schema_of(fmt), "strict": fmt.strict}
    if fmt.description:
        out["description"] = fmt.description
    return out


def chat_response_format(fmt: JsonSchema | JsonMode) -> dict[str, Any]:
    """Chat completions' ``response_format`` value (rule 1)."""
    if isinstance(fmt, JsonMode):
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": json_schema_body(fmt)}


def responses_text_format(fmt: JsonSchema | JsonMode) -> dict[str, Any]:
    """The Responses API's ``text.format`` value (rule 1)."""
    if isinstance(fmt, JsonMode):
        return {"type": "json_object"}
    return {"type": "json_schema", **json_schema_body(fmt)}


def claude_native(
    version: tuple[int, int] | None, mode: StructuredMode, *, host_has_it: bool = True
) -> bool:
    """Whether a Claude request uses native structured outputs (else a forced tool):
    ``mode`` ``native``/``tool`` decide; ``auto`` picks native for Claude
    :data:`CLAUDE_NATIVE_SINCE` and later (``version``: the model's (major, minor), ``None``
    when the id names none) when the host (``host_has_it``) serves it."""
    if mode != "auto":
        return mode == "native"
    return host_has_it and version is not None and version >= CLAUDE_NATIVE_SINCE


def converse_output_config(fmt: JsonSchema) -> dict[str, Any]:
    """Bedrock Converse's native ``outputConfig`` (the schema travels as a JSON string)."""
    definition: dict[str, Any] = {
        "schema": json.dumps(fmt.schema, ensure_ascii=False, separators=(",", ":")),
        "name": fmt.name,
    }
    if fmt.description:
        definition["description"] = fmt.description
    return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}}


def gemini_generation_config(
    options: GenerateOptions, where: str, generation: int | None
) -> dict[str, Any]:
    """The ``generationConfig`` entries for ``options.response_format`` on Gemini (rule 1);
    ``generation``: the model's Gemini generation (``None`` when its id names none)."""
    fmt = options.response_format
    assert fmt is not None
    if options.tools and generation is not None and generation < 3:
        raise refuse(
            options,
            where,
            "a response format together with tools is refused by Gemini models before Gemini 3",
            "drop the tools, or use a Gemini 3 model",
        )
    config: dict[str, Any] = {"responseMimeType": "application/json"}
    if isinstance(fmt, JsonSchema):
        config["responseJsonSchema"] = schema_of(fmt)
    return config


@dataclass(frozen=True, slots=True)
class ForcedTool:
    """The one tool a forced-tool request offers (rule 2)."""

    name: str
    description: str
    schema: dict[str, Any]


def forced_tool(options: GenerateOptions, where: str, *, thinking: bool = False) -> ForcedTool:
    """The forced tool for ``options.response_format``, after the path's checks (rule 2)."""
    fmt = options.response_format
    if isinstance(fmt, JsonMode) or fmt is None:
        raise refuse(
            options,
            where,
            "JSON mode is not available",
            'ask for a schema instead: JsonSchema("answer", {"type": "object"}, strict=False)',
        )
    if fmt.strict:
        raise refuse(
            options,
            where,
            "strict=True needs native structured outputs, which this model does not have here "
            "(only a forced tool call, which is not constrained decoding)",
            "pass JsonSchema(..., strict=False) to accept the forced tool call, "
            "or use a model with native structured outputs",
        )
    if options.tools:
        raise refuse(
            options,
            where,
            "tools can't be combined with the forced-tool fallback "
            "(the model may call only the forced tool)",
            "drop the tools, or use a model with native structured outputs",
        )
    if thinking:
        raise refuse(
            options,
            where,
            "extended thinking can't be combined with the forced-tool fallback "
            "(a forced tool choice excludes thinking)",
            "set reasoning_effort=None or 'off'",
        )
    if not fmt.root_is_object:
        raise refuse(
            options,
            where,
            'the forced-tool fallback needs a schema whose root is {"type": "object"} '
            "(a tool input is an object)",
            "wrap the value in an object property",
        )
    return ForcedTool(fmt.name, fmt.description or DEFAULT_TOOL_DESCRIPTION, schema_of(fmt))



def unwrapped(translator: Translator, forced: str | None) -> Translator:
    """``translator``, writing the call of the ``forced`` tool as text (rule 2; ``None``:
    no forced tool, nothing changed)."""
    if forced is not None:
        translator.unwrap_tool_call(forced)
    return translator

def chat_fields(options: GenerateOptions, dialect: Dialect, where: str) -> dict[str, Any]:
    """The body fields of ``options.response_format`` on chat completions, in ``dialect``'s
    spelling (rule 1)."""
    fmt = options.response_format
    assert fmt is not None
    if isinstance(fmt, JsonMode):
        if not dialect.json_mode:
            raise refuse(
                options,
                where,
                "JSON mode is not available",
                'ask for a schema: JsonSchema("answer", {"type": "object"})',
            )
        return {"response_format": chat_response_format(fmt)}
    if dialect.schema_via == "response_format":
        return {"response_format": chat_response_format(fmt)}
    if dialect.schema_via == "json_schema":
        return {"json_schema": schema_of(fmt)}
    raise refuse(
        options,
        where,
        "JSON-schema output is not available",
        "use JsonMode() and describe the shape in the prompt",
    )
