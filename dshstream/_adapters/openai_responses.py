"""OpenAI's Responses API — ``POST {base_url}/responses`` with ``stream: true`` — and the
endpoints that copy it (DeepSeek, OpenRouter): :class:`OpenAIResponsesWire` and
:class:`OpenAIResponsesAdapter`.

Contract:

1. **The wire.** :class:`OpenAIResponsesWire` (a :class:`~dshstream._adapters.wire.Wire`:
   pure, no credentials, no I/O) builds a stateless request (``store: false``) from
   :class:`GenerateOptions` (rule 2) and decodes the stream with
   :class:`~dshstream._core.wires.openai_responses.OpenAIResponsesTranslator`; the model
   list is ``{base_url}/models``.
2. **The body:**

   * leading system messages become ``instructions``; later ones stay in ``input``;
   * user turns are input messages (with media parts: ``input_text``, ``input_image`` and
     ``input_file`` content, :meth:`OpenAIResponsesWire.content_parts`; Responses has no
     audio input part, so an audio part is refused); an assistant turn becomes, in output
     order, its reasoning items (replayed from replay state with ``id``,
     ``encrypted_content``, ``summary`` and ``content``), its text as ``output_text``
     messages (with the item's ``phase``, ``commentary`` or ``final_answer``, from replay
     state) and its tool calls as ``function_call`` items (``call_id``, name, raw
     arguments, and the item ``id``, ``caller`` and ``namespace`` from replay state);
     every other replayed item goes back verbatim, in output order: client-executed
     built-in calls while still in the turn (or listed in ``server_calls``: the server ran
     them), server-executed items and outputs, ``compaction``, ``program`` and
     ``program_output`` items, and any item type this module does not know (kept, never
     dropped); the calls of a parallel wrapper (wire rule 8) go back as the wrapper
     ``function_call`` the model sent, with its own arguments;
   * tool results become ``function_call_output`` items (the results of a parallel
     wrapper's calls: one output for the wrapper's call id, their contents joined by a line
     break in the wrapper's order), or, for a client-executed built-in
     call (known from an earlier turn's replay state), its own output item:
     ``local_shell_call_output`` (``id``: the call id, ``output``: the text),
     ``shell_call_output`` (``output``: the content when it is a JSON list of
     ``{stdout, stderr, outcome}``, else one entry with the text as stdout, or as stderr
     with exit code 1 for an error result), ``apply_patch_call_output`` (``status``
     ``failed`` for an error result, else ``completed``; the text as ``output``),
     ``computer_call_output`` (``output``: the content when it is a JSON screenshot object,
     else a ``computer_screenshot`` with the text as ``file_id`` when it starts with
     ``file-``, as ``image_url`` otherwise), ``custom_tool_call_output`` and
     ``mcp_approval_response`` (``approve``: the content as a JSON boolean, a JSON object's
     ``approve`` (and ``reason``), or a yes-word — ``true``, ``yes``, ``approve``,
     ``approved``, ``allow``, ``ok``; anything else, and any error result, is a refusal),
     ``tool_search_output`` for a client-executed ``tool_search_call`` (``execution:
     client``; ``tools``: the content when it is a JSON list of tool definitions, or a
     JSON object's ``tools``; else none);
   * ``context_management: [{"type": "compaction", "compact_threshold": N}]`` when the
     wire's ``compact_threshold`` is set (server-side compaction: past N input tokens the
     server folds the earlier context into a ``compaction`` item, whose
     ``encrypted_content`` the replay state keeps and sends back verbatim);
   * tools in the flat Responses function format (``strict: false``: dshstream passes the
     caller's schema through untouched), ``reasoning: {effort, summary}`` when an effort is
     asked for, ``include: ["reasoning.encrypted_content"]``, ``max_output_tokens``,
     ``temperature``, ``response_format`` as ``text.format``,
     ``stream_options.include_obfuscation`` as wire rule 9 says (``false`` on OpenAI's
     host by default), ``extra_body`` last.

   Responses has no ``stop`` parameter; ``options.stop`` is not sent.

   Prompt caching (:mod:`~dshstream._adapters.prompt_cache` rule 4): a cache point on a
   user or system turn is ``prompt_cache_breakpoint`` on its last content part (a cached
   leading system prompt is then sent as ``system`` input messages, not ``instructions``,
   whose plain string has no parts); on an assistant or tool turn it is refused;
   ``prompt_cache_key`` and ``prompt_cache_retention`` from ``PromptCache``.
3. **A second form.** A server that rejects ``include`` (``Encrypted content is not
   supported with this model``) with a 400 before streaming is asked once more without
   it, and the wire remembers that (its ``include_encrypted_reasoning``, changed under
   :attr:`~dshstream._adapters.wire.Wire.lock`). So is one that rejects
   ``stream_options``: asked once more without it, and remembered.
4. **The adapter.** :class:`OpenAIResponsesAdapter` is that wire + ``Bearer`` auth with
   ``api_key`` (or ``key_env``, by default ``OPENAI_API_KEY``, sent only to OpenAI's host;
   a variable the caller names goes anywhere) + the attempt loop
   (:mod:`~dshstream._adapters.http`). It overrides no hook: its ``__init__`` resolves the
   settings and builds :attr:`OpenAIResponsesAdapter.wire_class`; the wire's settings read
   back through read-only properties (``include_encrypted_reasoning``...). What shapes
   the body (``include_encrypted_reasoning``, ``reasoning_summary``, ``send_item_ids``,
   ``compact_threshold``) is one group of keyword settings, :class:`ResponsesSettings`,
   that every Responses route's adapter and wire take (defaults: the wire's).
   ``compact_threshold`` (a positive int, else ``ConfigurationError`` naming it) turns on
   server-side compaction (rule 2).
5. **Resumable.** With ``GenerateOptions.resumable`` the request is a stored background
   response (``background: true``, ``store: true``): a cut stream is continued with
   ``GET {endpoint}/{id}?stream=true&starting_after=N``, polled at ``GET {endpoint}/{id}``
   past its streaming window and cancelled with ``POST {endpoint}/{id}/cancel``
   (:meth:`OpenAIResponsesWire.response_url`; wire rule 6). Replay items keep their ids
   either way.
6. **Over a WebSocket.** :meth:`OpenAIResponsesAdapter.connect` gives a
   :class:`~dshstream._adapters.responses_session.ResponsesSession`: the same wire, auth
   and attempt loop, its turns sent as ``response.create`` messages on one kept
   ``wss://{host}/v1/responses`` socket (:mod:`~dshstream._transport.ws_transport`), HTTP
   when the socket cannot be had.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast
from urllib.parse import quote, urlencode

from .._core.errors import LlmError
from .._core.ws_frames import DEFAULT_MAX_MESSAGE_SIZE
from .._transport.ws_transport import DEFAULT_MAX_AGE
from .._core.parts import MediaPart
from .._core.media_support import OPENAI_RESPONSES, MediaSupport
from .._core.request import GenerateOptions, Message
from .._core.strict_json import loads_or_none
from .._core.validate import check_bool_or_none, check_positive_int
from .._core.types import TextBlock, ToolCallBlock, ToolResultBlock
from .._core.wires.json_values import first_str
from .._core.wires.translator import Translator
from .._core.wires.openai_responses import (
    CLIENT_CALLS,
    WIRE,
    OpenAIResponsesTranslator,
    item_kind,
)
from .._core.validate import invalid
from .._core.wires.parallel_wrapper import wrapper_of
from .http import HttpAdapter
from .prompt_cache import OPENAI_CACHING, check_prompt_cache, openai_cache_fields, openai_mark
from .responses_session import ResponsesSession
from .settings import HttpSettings, split_settings
from .structured_output import responses_text_format
from .wire import Wire, obfuscation_field, replay_names

if TYPE_CHECKING:
    from typing_extensions import Unpack

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_EFFORTS = {"off": "none", "minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "max": "high"}
_INCLUDE_REJECTED = ("encrypted content", "encrypted_content", "'include'", "include[")
_YES = frozenset({"true", "yes", "y", "approve", "approved", "allow", "allowed", "ok"})


#: the kind :meth:`OpenAIResponsesWire.builtin_calls` gives a call a parallel wrapper
#: dispatched (wire rule 8): its result goes back inside the wrapper's one output
PARALLEL_CHILD = "parallel-child"


def _join_parallel_outputs(items: list[dict[str, Any]], kinds: Mapping[str, str]) -> list[dict[str, Any]]:
    """``items`` with the outputs of a parallel wrapper's calls (wire rule 8) as the
    wrapper's one output, where the first of them stood: their contents in the wrapper's
    order (the call id's ``_N``), joined by a line break."""
    out: list[dict[str, Any]] = []
    joined: dict[str, tuple[dict[str, Any], list[tuple[int, str]]]] = {}
    for item in items:
        call_id = item.get("call_id")
        if item.get("type") != "function_call_output" or not isinstance(call_id, str) or kinds.get(call_id) != PARALLEL_CHILD:
            out.append(item)
            continue
        wrapper, position = wrapper_of(call_id)
        found = joined.get(wrapper)
        if found is None:
            found = joined[wrapper] = ({"type": "function_call_output", "call_id": wrapper, "output": ""}, [])
            out.append(found[0])
        found[1].append((position, str(item.get("output") or "")))
    for output, results in joined.values():
        output["output"] = "\n".join(text for _, text in sorted(results))
    return out


def _builtin_call_id(entry: dict[str, Any]) -> str | None:
    """The dshstream call id of a client-executed built-in item (an approval's item id)."""
    if item_kind(entry) == "mcp_approval_request":
        return first_str(entry.get("id"))
    return first_str(entry.get("call_id"), entry.get("id"))


def _shell_output(block: ToolResultBlock) -> list[Any]:
    value = loads_or_none(block.content)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return value
    if isinstance(value, dict) and "outcome" in value:
        return [value]
    stream = "stderr" if block.is_error else "stdout"
    return [
        {
            "stdout": "",
            "stderr": "",
            stream: block.content,
            "outcome": {"type": "exit", "exit_code": 1 if block.is_error else 0},
        }
    ]


def _approval(block: ToolResultBlock) -> dict[str, Any]:
    approve, reason = False, None
    if block.is_error:
        reason = block.content or None
    else:
        value = loads_or_none(block.content.strip())
        if isinstance(value, bool):
            approve = value
        elif isinstance(value, dict) and isinstance(value.get("approve"), bool):
            approve, reason = value["approve"], first_str(value.get("reason"))
        else:
            approve = block.content.strip().lower() in _YES
    item: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": block.call_id, "approve": approve}
    if reason:
        item["reason"] = reason
    return item


def tool_output_item(block: ToolResultBlock, kind: str | None) -> dict[str, Any]:
    """The input item that answers the call ``block`` answers, whose item type is ``kind``
    (``None``: a function call)."""
    call_id, content = block.call_id, block.content
    if kind == "local_shell_call":
        return {"type": "local_shell_call_output", "id": call_id, "output": content}
    if kind == "shell_call":
        return {"type": "shell_call_output", "call_id": call_id, "output": _shell_output(block)}
    if kind == "apply_patch_call":
        status = "failed" if block.is_error else "completed"
        item = {"type": "apply_patch_call_output", "call_id": call_id, "status": status}
        if content:
            item["output"] = content
        return item
    if kind == "computer_call":
        value = loads_or_none(content)
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            screenshot: dict[str, Any] = value
        else:
            field = "file_id" if content.startswith("file-") else "image_url"
            screenshot = {"type": "computer_screenshot", field: content}
        return {"type": "computer_call_output", "call_id": call_id, "output": screenshot}
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}
    if kind == "mcp_approval_request":
        return _approval(block)
    if kind == "tool_search_call":
        value = loads_or_none(content)
        tools = value.get("tools") if isinstance(value, dict) else value
        return {
            "type": "tool_search_output",
            "call_id": call_id,
            "execution": "client",
            "status": "completed",
            "tools": tools if isinstance(tools, list) else [],
        }
    return {"type": "function_call_output", "call_id": call_id, "output": content}


class ResponsesSettings(TypedDict, total=False):
    """What shapes a Responses body (rule 4), as every Responses route's wire and adapter
    takes it; an absent one takes :class:`OpenAIResponsesWire`'s default."""

    #: whether ``include: ["reasoning.encrypted_content"]`` is sent (default on; rule 3)
    include_encrypted_reasoning: bool
    #: the ``reasoning.summary`` asked for with an effort (default ``"auto"``; ``None``: none)
    reasoning_summary: str | None
    #: whether replayed items carry their ``id`` (default on)
    send_item_ids: bool
    #: input tokens past which the server compacts the context (default ``None``: never; rule 2)
    compact_threshold: int | None


class ResponsesAdapterSettings(HttpSettings, ResponsesSettings, total=False):
    """The keyword settings of every Responses route's adapter (rule 4): every HTTP
    adapter's and the Responses body's."""


def split_responses(given: ResponsesAdapterSettings) -> tuple[HttpSettings, ResponsesSettings]:
    """``given`` as the HTTP adapter's settings and the Responses body's (rule 4), a
    ``compact_threshold`` checked."""
    settings, group = split_settings(given, ResponsesSettings.__optional_keys__)
    if group.get("compact_threshold") is not None:
        group["compact_threshold"] = check_positive_int(group["compact_threshold"], "compact_threshold")
    return settings, cast(ResponsesSettings, group)


class OpenAIResponsesWire(Wire):
    """The Responses request and translator (rules 1-3)."""

    models_path: str | None = "/models"
    media: MediaSupport | None = OPENAI_RESPONSES

    def __init__(
        self,
        base_url: str,
        title: str,
        *,
        include_obfuscation: bool | None = None,
        **body: Unpack[ResponsesSettings],
    ) -> None:
        super().__init__(base_url, title)
        #: the ``stream_options.include_obfuscation`` sent (``None``: none; wire rule 9)
        self.include_obfuscation = obfuscation_field(base_url, include_obfuscation)
        #: input tokens past which the server compacts the context (``None``: never; rule 2)
        self.compact_threshold = body.get("compact_threshold")
        #: whether ``include: ["reasoning.encrypted_content"]`` is sent (rule 3 turns it off)
        self.include_encrypted_reasoning = body.get("include_encrypted_reasoning", True)
        #: the ``reasoning.summary`` asked for with an effort (``None``: none)
        self.reasoning_summary = body.get("reasoning_summary", "auto")
        #: whether replayed items carry their ``id``
        self.send_item_ids = body.get("send_item_ids", True)

    # ------------------------------------------------------------------ request

    def endpoint(self, options: GenerateOptions) -> str:
        return f"{self.base_url}/responses"

    #: the fields ``POST /responses/input_tokens`` takes of a stream's body (wire rule 7)
    COUNT_FIELDS = frozenset(
        {"model", "input", "instructions", "tools", "tool_choice", "text", "reasoning",
         "parallel_tool_calls", "previous_response_id", "conversation", "truncation"}
    )

    def count_tokens_url(self, options: GenerateOptions) -> str | None:
        return f"{self.base_url}/responses/input_tokens"

    def count_tokens_body(self, options: GenerateOptions) -> dict[str, Any]:
        return {key: value for key, value in self.build_body(options).items() if key in self.COUNT_FIELDS}

    def build_body(self, options: GenerateOptions) -> dict[str, Any]:
        """The JSON body for ``options``."""
        check_prompt_cache(options, OPENAI_CACHING, self.title)
        instructions: list[str] = []
        items: list[dict[str, Any]] = []
        leading = True
        builtin = self.builtin_calls(options.messages)
        # a cached leading system prompt needs content parts to carry its breakpoint
        as_items = any(m.cache is not None for m in options.messages if m.role == "system")
        for index, message in enumerate(options.messages):
            if message.role == "system" and leading and not as_items:
                if message.text:
                    instructions.append(message.text)
                continue
            leading = False
            converted = self.convert_message(message, builtin)
            if message.cache is not None:
                if message.role not in ("user", "system") or not converted:
                    raise invalid(
                        f"{self.title}: a cache point goes on a user or system turn "
                        f"(GenerateOptions.messages[{index}].cache is on a {message.role} turn)"
                    )
                converted[-1] = dict(converted[-1])
                openai_mark(converted[-1], "input_text", self.title)
            items.extend(converted)
        replay_names(items, options)  # wire rule 10
        if PARALLEL_CHILD in builtin.values():
            items = _join_parallel_outputs(items, builtin)
        body: dict[str, Any] = {
            "model": options.model,
            "input": items,
            "stream": True,
            "store": False,
        }
        if instructions:
            body["instructions"] = "\n\n".join(instructions)
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                    "strict": False,
                }
                for tool in options.tools
            ]
        if options.reasoning_effort is not None:
            reasoning: dict[str, Any] = {"effort": _EFFORTS[options.reasoning_effort]}
            if self.reasoning_summary and options.reasoning_effort != "off":
                reasoning["summary"] = self.reasoning_summary
            body["reasoning"] = reasoning
        if self.include_encrypted_reasoning:
            body["include"] = ["reasoning.encrypted_content"]
        if self.compact_threshold is not None:
            body["context_management"] = [{"type": "compaction", "compact_threshold": self.compact_threshold}]
        if options.max_tokens is not None:
            body["max_output_tokens"] = options.max_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.response_format is not None:
            body["text"] = {"format": responses_text_format(options.response_format)}
        if self.include_obfuscation is not None:
            body["stream_options"] = {"include_obfuscation": self.include_obfuscation}
        if self.resumable(options):  # rule 5: a stored background response can be resumed
            body["background"] = True
            body["store"] = True
        body.update(openai_cache_fields(options))
        if options.extra_body:
            body.update(options.extra_body)
        return body

    def resumable(self, options: GenerateOptions) -> bool:
        return options.resumable

    def response_url(
        self, options: GenerateOptions, response_id: str, suffix: str = "", query: Mapping[str, str] | None = None
    ) -> str:
        """The stored response's URL under :meth:`endpoint` (its own query kept: Azure's
        ``api-version``), ``suffix`` and ``query`` added (rule 5)."""
        path, _, own = self.endpoint(options).partition("?")
        params = "&".join(part for part in (own, urlencode(dict(query or {}))) if part)
        url = f"{path}/{quote(response_id, safe='')}{suffix}"
        return f"{url}?{params}" if params else url

    @staticmethod
    def builtin_calls(messages: Sequence[Message]) -> dict[str, str]:
        """Call id -> item type of every client-executed built-in call in the replay
        states of ``messages`` (how a tool result for it must be sent)."""
        kinds: dict[str, str] = {}
        for message in messages:
            state = message.replay_state
            if message.role != "assistant" or not isinstance(state, dict) or state.get("wire") != WIRE:
                continue
            entries = state.get("items")
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and item_kind(entry) in CLIENT_CALLS:
                    call_id = _builtin_call_id(entry)
                    if call_id is not None:
                        kinds[call_id] = item_kind(entry)
                elif isinstance(entry, dict) and isinstance(entry.get("parallel"), list):
                    for child in entry["parallel"]:  # a parallel wrapper's calls (wire rule 8)
                        if isinstance(child, str):
                            kinds[child] = PARALLEL_CHILD
        return kinds

    def convert_message(self, message: Message, builtin: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
        """One history message as Responses input items; ``builtin`` (from
        :meth:`builtin_calls`) says which tool results answer a built-in call."""
        if message.role == "user" and message.attachments:
            return [{"role": "user", "content": self.content_parts(message)}]
        if message.role in ("system", "user"):
            return [{"role": message.role, "content": message.text}]
        if message.role == "tool":
            kinds = builtin or {}
            return [
                tool_output_item(block, kinds.get(block.call_id))
                for block in message.blocks
                if isinstance(block, ToolResultBlock)
            ]
        return self._assistant_items(message)

    def content_parts(self, message: Message) -> list[dict[str, Any]]:
        """A user turn with media as input content, in order: ``input_text``,
        ``input_image`` (``image_url``: a data URL or the image's URL; ``detail: auto``) and
        ``input_file`` (``file_data`` as a data URL with its ``filename``, or ``file_url``)."""
        support = self.media or OPENAI_RESPONSES
        out: list[dict[str, Any]] = []
        for item in message.parts:
            if isinstance(item, TextBlock):
                if item.text:
                    out.append({"type": "input_text", "text": item.text})
            elif isinstance(item, MediaPart):
                support.accept(item)
                if item.kind == "image":
                    out.append({"type": "input_image", "image_url": item.url or item.data_url, "detail": "auto"})
                elif item.url is not None:
                    out.append({"type": "input_file", "file_url": item.url})
                else:
                    out.append({"type": "input_file", "filename": item.filename, "file_data": item.data_url})
        return out

    def _assistant_items(self, message: Message) -> list[dict[str, Any]]:
        texts: deque[str] = deque(b.text for b in message.blocks if isinstance(b, TextBlock) and b.text)
        calls = [b for b in message.blocks if isinstance(b, ToolCallBlock)]
        pending_calls = {call.id: call for call in calls}
        out: list[dict[str, Any]] = []
        state = message.replay_state
        replay = state.get("items") if isinstance(state, dict) and state.get("wire") == WIRE else None
        ran = state.get("server_calls") if isinstance(state, dict) and replay is not None else None
        server_calls = {c for c in ran if isinstance(c, str)} if isinstance(ran, list) else set()
        reasoning_run: int | None = None  # where the reasoning items awaiting their follower start
        for entry in replay if isinstance(replay, list) else []:
            if not isinstance(entry, dict):
                continue
            kind = entry.get("type")
            follower: dict[str, Any] | None = None
            if kind == "reasoning":
                item = self._reasoning_item(entry)
                if item is not None:
                    if reasoning_run is None:
                        reasoning_run = len(out)
                    out.append(item)
                continue
            if kind == "message":
                count = entry.get("text_parts")
                take = count if isinstance(count, int) and count >= 0 else 1
                parts = [texts.popleft() for _ in range(min(take, len(texts)))]
                if parts:
                    follower = self._text_item(parts, entry.get("phase"))
            elif kind == "function_call" and isinstance(entry.get("parallel"), list):
                # a parallel wrapper: its calls go back as the one call the model sent (wire rule 8)
                found = [pending_calls.pop(child, None) for child in entry["parallel"] if isinstance(child, str)]
                if any(found):
                    follower = {
                        "type": "function_call",
                        "call_id": str(entry.get("call_id") or ""),
                        "name": str(entry.get("name") or ""),
                        "arguments": str(entry.get("arguments") or "{}"),
                    }
                    item_id = entry.get("id")
                    if isinstance(item_id, str) and item_id and self.send_item_ids:
                        follower["id"] = item_id
            elif kind == "function_call":
                call = pending_calls.pop(str(entry.get("call_id") or ""), None)
                if call is not None:
                    item_id = entry.get("id")
                    follower = self._call_item(call, item_id if isinstance(item_id, str) else None)
                    for field in ("caller", "namespace"):
                        if entry.get(field) is not None:
                            follower[field] = entry[field]
            elif isinstance(kind, str) and kind in CLIENT_CALLS:
                # verbatim, while its call is still in the turn (not dropped on max-tokens),
                # or when the server ran it (no tool result answers it)
                call_id = _builtin_call_id(entry) or ""
                if pending_calls.pop(call_id, None) is not None or call_id in server_calls:
                    follower = dict(entry)
            elif isinstance(kind, str) and kind:
                follower = dict(entry)  # server items, outputs, compaction, unknown: verbatim
            else:
                continue
            if follower is None and reasoning_run is not None:
                # The item the reasoning preceded is gone (a tool call dropped on
                # max-tokens): reasoning without its following item is rejected.
                del out[reasoning_run:]
            elif follower is not None:
                out.append(follower)
            reasoning_run = None
        if reasoning_run is not None and not texts and not pending_calls:
            del out[reasoning_run:]  # trailing reasoning with no item after it
        if texts:
            out.append(self._text_item(list(texts)))
        for call in calls:
            if call.id in pending_calls:
                out.append(self._call_item(call, None))
        return out

    def _reasoning_item(self, entry: dict[str, Any]) -> dict[str, Any] | None:
        encrypted = entry.get("encrypted_content")
        content = entry.get("content")
        if not encrypted and not content:
            return None  # an id alone is a lookup, which store=false cannot serve
        item: dict[str, Any] = {"type": "reasoning"}
        if self.send_item_ids and isinstance(entry.get("id"), str):
            item["id"] = entry["id"]
        summary = entry.get("summary")
        item["summary"] = summary if isinstance(summary, list) else []
        if content:
            item["content"] = content
        if encrypted:
            item["encrypted_content"] = encrypted
        return item

    @staticmethod
    def _text_item(parts: list[str], phase: Any = None) -> dict[str, Any]:
        item: dict[str, Any] = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text} for text in parts],
        }
        if isinstance(phase, str) and phase:
            item["phase"] = phase
        return item

    def _call_item(self, call: ToolCallBlock, item_id: str | None) -> dict[str, Any]:
        item: dict[str, Any] = {
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments or "{}",
        }
        if item_id and self.send_item_ids:
            item["id"] = item_id
        return item

    def should_retry_request(self, error: LlmError, options: GenerateOptions) -> bool:
        failure = error.failure
        detail = (failure.detail or "").lower()
        if (
            self.include_encrypted_reasoning
            and failure.status == 400
            and any(marker in detail for marker in _INCLUDE_REJECTED)
        ):
            with self.lock:
                self.include_encrypted_reasoning = False
            return True
        if self.include_obfuscation is not None and failure.status == 400 and "stream_options" in detail:
            with self.lock:
                self.include_obfuscation = None
            return True
        return False

    # ------------------------------------------------------------------ response

    def make_translator(self, options: GenerateOptions, request_id: str | None) -> Translator:
        return OpenAIResponsesTranslator(
            provider=options.provider,
            request_id=request_id,
            max_tokens=options.max_tokens,
            client_tools=self.client_tools(options),
        )

    @staticmethod
    def client_tools(options: GenerateOptions) -> frozenset[str]:
        """The names of the client tools the request declares (function and custom tools,
        ``extra_body``'s ``tools`` when it replaces them): a custom tool call under another
        name was run by the server (translator rule 3)."""
        names = {tool.name for tool in options.tools}
        extra = (options.extra_body or {}).get("tools")
        if isinstance(extra, list):
            names = set()
            for tool in extra:
                if isinstance(tool, dict) and tool.get("type") in ("function", "custom"):
                    name = tool.get("name")
                    if isinstance(name, str):
                        names.add(name)
        return frozenset(names)


class OpenAIResponsesAdapter(HttpAdapter):
    """Stream from the OpenAI Responses API (or a compatible ``/responses`` endpoint): the
    Responses wire + ``Bearer`` auth + the attempt loop (rule 4)."""

    default_name = "OpenAI Responses"
    default_base_url = DEFAULT_BASE_URL
    #: the variable read for the provider's own host only (a different ``key_env`` goes anywhere)
    own_key_env = "OPENAI_API_KEY"
    #: the wire this adapter builds (a subclass of :class:`OpenAIResponsesWire`)
    wire_class: type[OpenAIResponsesWire] = OpenAIResponsesWire

    def __init__(
        self,
        *,
        key_env: str | None = "OPENAI_API_KEY",
        include_obfuscation: bool | None = None,
        **given: Unpack[ResponsesAdapterSettings],
    ) -> None:
        choice = check_bool_or_none(include_obfuscation, f"{type(self).__name__}.include_obfuscation")
        settings, body = split_responses(given)
        super().__init__(
            key_env=(key_env,) if key_env else (),
            # the default variable goes only to the provider; one the caller named goes anywhere
            key_any_host=key_env != self.own_key_env,
            **settings,
        )
        self._body = body  # a subclass that builds its own wire passes them on
        self.wire: OpenAIResponsesWire = self.wire_class(self.base_url, self.title, **body)
        if choice is not None:  # set after: a wire subclass's __init__ need not take it
            self.wire.include_obfuscation = choice

    def connect(
        self,
        *,
        fallback: bool = True,
        max_reconnects: int = 5,
        max_age: float = DEFAULT_MAX_AGE,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        chain: bool = False,
    ) -> ResponsesSession:
        """A session whose turns share one WebSocket to ``{base_url}/responses`` (rule 6;
        :mod:`~dshstream._adapters.responses_session`): use it as a context manager, stream
        from it or register it with a service. Nothing connects until the first turn."""
        return ResponsesSession(
            self,
            fallback=fallback,
            max_reconnects=max_reconnects,
            max_age=max_age,
            max_message_size=max_message_size,
            chain=chain,
        )

    @property
    def include_encrypted_reasoning(self) -> bool:
        """Whether encrypted reasoning is asked for (the wire's; off once a server refused it)."""
        return self.wire.include_encrypted_reasoning

    @property
    def reasoning_summary(self) -> str | None:
        """The reasoning summary asked for with an effort (the wire's)."""
        return self.wire.reasoning_summary

    @property
    def send_item_ids(self) -> bool:
        """Whether replayed items carry their ``id`` (the wire's)."""
        return self.wire.send_item_ids

    @property
    def compact_threshold(self) -> int | None:
        """The input tokens past which the server compacts the context (the wire's)."""
        return self.wire.compact_threshold
