"""What shape the caller wants the answer in: :class:`JsonSchema` (JSON that follows a
schema) or :class:`JsonMode` (any valid JSON), the values of
``GenerateOptions.response_format``.

Contract: stdlib and ``validate`` only; plain frozen values, checked where they are built
(``__post_init__``, so ``dataclasses.replace`` checks too). Nothing here knows a
provider's wire: each adapter maps these onto its own mechanism
(:mod:`dshstream._adapters.structured_output` holds the shared part of that mapping).

1. ``JsonSchema.name`` is 1-64 ASCII letters, digits, ``_`` or ``-`` — the strictest rule
   among the providers that take a name (OpenAI's ``response_format``/``text.format``
   name, Anthropic and Bedrock tool names), so one name works everywhere.
2. ``JsonSchema.schema`` is a JSON object (a mapping with string keys) that serializes as
   strict JSON (no NaN or infinity, no objects JSON can't hold); it is stored as a
   private deep copy, so the caller's dict can change afterwards without changing the
   request.
3. ``JsonSchema.strict`` (default ``True``) asks for guaranteed conformance (constrained
   decoding). A provider path that can only ask politely (a forced tool call without
   strict validation) refuses ``strict=True`` with a ``ConfigurationError`` at request
   build time; ``strict=False`` accepts best effort.
4. A wrong type raises ``ConfigurationTypeError`` (also a ``TypeError``), a bad value
   ``ConfigurationError`` (also a ``ValueError``); the message names the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias, Union

from .validate import check_mapping, check_str, describe, invalid

__all__ = ["JsonMode", "JsonSchema", "ResponseFormat", "check_response_format"]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _frozen_copy(schema: Mapping[Any, Any], field_name: str) -> dict[str, Any]:
    """A deep, strict-JSON copy of ``schema`` (rule 2)."""
    for key in schema:
        if not isinstance(key, str):
            raise invalid(f"{field_name} keys must be str, got {describe(key)}", wrong_type=True)
    try:
        text = json.dumps(schema, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise invalid(
            f"{field_name} must be plain JSON (dicts, lists, str, numbers, bools, None): {exc}"
        ) from None
    copy: dict[str, Any] = json.loads(text)
    return copy


@dataclass(frozen=True, slots=True)
class JsonSchema:
    """Ask for JSON that follows ``schema``, a JSON Schema object (rules 1-3).

    ``name`` identifies the format to the provider (OpenAI shows it to the model; on the
    forced-tool path it is the tool's name); ``description`` tells the model what the
    object is for.
    """

    name: str
    schema: Mapping[str, Any] = field(repr=False)
    strict: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        name = check_str(self.name, "JsonSchema.name")
        if not _NAME.fullmatch(name):
            raise invalid(
                "JsonSchema.name must be 1-64 ASCII letters, digits, '_' or '-', "
                f"got {describe(name)}"
            )
        check_mapping(self.schema, "JsonSchema.schema")
        object.__setattr__(self, "schema", _frozen_copy(self.schema, "JsonSchema.schema"))
        if type(self.strict) is not bool:
            raise invalid(
                f"JsonSchema.strict must be a bool, got {describe(self.strict)}", wrong_type=True
            )
        check_str(self.description, "JsonSchema.description", nonempty=False)

    @property
    def root_is_object(self) -> bool:
        """Whether the schema's root is declared ``"type": "object"`` (what a tool's input
        schema must be)."""
        return self.schema.get("type") == "object"


@dataclass(frozen=True, slots=True)
class JsonMode:
    """Ask for any syntactically valid JSON (OpenAI's ``json_object``; no schema). Most
    providers also want the prompt itself to ask for JSON."""


#: what ``GenerateOptions.response_format`` takes
ResponseFormat: TypeAlias = Union[JsonSchema, JsonMode]


def check_response_format(value: object, field_name: str) -> JsonSchema | JsonMode | None:
    if value is None or isinstance(value, (JsonSchema, JsonMode)):
        return value
    hint = (
        "; build one with JsonSchema(name, schema) or JsonMode()"
        if isinstance(value, (Mapping, str))
        else ""
    )
    raise invalid(
        f"{field_name} must be a JsonSchema or JsonMode, got {describe(value)}{hint}",
        wrong_type=True,
    )
