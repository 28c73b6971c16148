"""The OpenAI Responses wire (``POST /responses`` with ``stream: true``), as OpenAI,
DeepSeek and OpenRouter serve it.

Contract (sans-IO; one JSON event per SSE frame, dispatched on the payload's ``type`` so
data-only framings work too):

1. ``response.created``/``in_progress``/``queued`` carry metadata (response id, model).
   Where the caller gave no ``client_tools`` (a recording decoded on its own), the
   response's own ``tools`` — the request's, echoed — name them: its ``function`` and
   ``custom`` tools (rule 3's who-ran-it).
   One response per stream: a second ``response.created`` naming another response id —
   two responses spliced together by a gateway — ends the stream in band with
   ``MALFORMED_RESPONSE``, the first response's output kept (its items would otherwise
   be merged by ``output_index`` into the first's); one naming the same id is metadata.
2. Output items are correlated by ``output_index``, then by item id (some gateways issue
   temporary ids). Every content part is its own block, opened on its first non-empty
   payload: ``output_text`` and ``refusal`` parts are text, ``reasoning_summary`` parts
   and ``reasoning_text`` parts are reasoning, a ``function_call`` item is one tool call
   (``call_id`` is the block id). A part or item whose text arrives only in its ``done``
   event (or only in the terminal response) is emitted from there, once. A done item's
   ``n``-th part is the part its events numbered ``n``, or, when no event used that
   number, the ``n``-th part they opened (Bedrock Mantle numbers a message's parts on
   from the reasoning item before it: its one text part is ``content_index`` 1). A text part's
   block ends with its ``content_part.done`` (or its item's ``done``), carrying the part's
   annotations (``output_text.annotation.added`` events, or the ``annotations`` of the
   part, item or terminal output) as :class:`~dshstream._core.types.Citation` s.
3. Client-executed built-in tools are tool calls too, one block per item, opened when the
   item is added and given its arguments when it is done: ``local_shell_call``,
   ``shell_call``, ``apply_patch_call`` and ``computer_call`` (named ``local_shell``,
   ``shell``, ``apply_patch``, ``computer``), ``custom_tool_call`` (the custom tool's own
   name) and ``mcp_approval_request`` (named ``mcp_approval_request``, its item ``id`` as
   the call id; the others use ``call_id``). Their arguments are a JSON object carrying
   the item's payload under its own key: ``{"action": ...}`` (``computer`` adds
   ``actions`` and ``pending_safety_checks`` when present), ``{"operation": ...}``,
   ``{"input": ...}``, ``{"server_label", "name", "arguments"}``; ``tool_search_call``
   (named ``tool_search``, ``{"arguments": ...}``) when its ``execution`` is ``client``.
   Server-executed items
   (``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
   ``image_generation_call``, ``mcp_call``, ``mcp_list_tools``) are not calls: they are
   summarized in the finish's ``metadata.server_tools`` (a web search's queries and
   sources, or what its ``open_page``/``find_in_page`` action read: ``action``, ``url``,
   ``pattern``) and make a response without
   blocks a ``stop``, never ``EMPTY_RESPONSE``. The image an ``image_generation_call``
   carries (``result``, base64) is delivered as a file block
   (:class:`~dshstream._core.types.FileBlock`: the media type from the bytes, else from
   ``output_format``) once, when its item is done or in the terminal output. An image
   whose ``result`` is there but does not decode is not dropped silently: its entry in
   ``metadata.server_tools`` (which names the item ``id``) carries ``image_lost`` saying
   why, so the caller knows an image was produced and lost.
   **Who ran it** is decided by what the response says, not by item type alone: an item of a
   client kind is server-run (a server tool, not a call) when the response holds its output
   item (an item whose type ends in ``_output`` with the same ``call_id``: a hosted shell's
   ``shell_call_output``), when its ``execution`` is ``server`` (``tool_search_call``), or
   when it is a ``custom_tool_call`` whose name is not among the client tools the request
   declared (``client_tools``; xAI shows a server-side search's sub-searches so). Since the
   output item follows its call, a ``shell_call``, ``custom_tool_call`` or
   ``tool_search_call`` (without ``execution``) is held from its ``done`` until the next
   item is added or the terminal event, and only then opened as a call, or not; a stream
   cut while one is held (``STREAM_CLOSED``) leaves it out of the blocks: who runs it is
   not known, and a call the server may have run is no call to hand the caller.
4. ``response.completed`` is the terminal marker: usage (cached tokens subtracted from
   input, ``input_tokens_details.cache_write_tokens`` as cache writes, subtracted too,
   reasoning tokens reported as inside output, the cost when one is reported — a gateway's
   ``cost``, xAI's ``cost_in_usd_ticks`` (:func:`~dshstream._core.wires.usage.usage_cost`);
   entries of ``usage.iterations`` that name another model go to
   ``metadata.usage_by_model``), finish ``tool-calls`` exactly when the response has a
   function-call or client-run built-in call item (rule 3), else ``stop``. ``response.incomplete``
   finishes ``max-tokens`` (or ``CONTENT_FILTER``) from ``incomplete_details.reason``.
   ``response.failed`` and ``error`` events end the stream with a classified error
   finish, keeping partial output and usage.
5. Replay state: ``{"wire": "openai-responses", "items": [...]}`` — every output item, in
   output order, taken from the terminal ``response.output`` when it has them: reasoning
   items verbatim but ``status`` (id, ``encrypted_content``, summary, content),
   function-call items (id, ``call_id``, name, and ``caller``/``namespace`` when present;
   the arguments come from the call block), message items (id, ``phase`` when present,
   ``text_parts``: how many text blocks it produced; the text comes from the text blocks)
   and every other item verbatim — built-in tool items and their outputs, ``compaction``
   items (``encrypted_content``), ``program``/``program_output`` items, and item types
   this module does not know: kept, never discarded. ``server_calls`` lists the call ids
   of client-kind items the server ran (rule 3): they go back without a tool result.
6. Unknown event types are skipped; unknown item types produce no chunks (but are
   replayed, rule 5). ``data: [DONE]`` (OpenRouter) ends the
   input; reaching it, or EOF, before a terminal event is ``STREAM_CLOSED``.
7. **Sequence numbers.** An event carrying an integer ``sequence_number`` not above the
   last one processed (:attr:`last_sequence`, translator rule 8; ``after`` to start
   past one) is dropped: a resumed stream's replayed events are processed once. Events
   without one are always processed. :attr:`items_done` holds the ``output_index`` of
   every item done so far (what a poll of the stored response still has to deliver).
8. **The parallel wrapper** (:mod:`~dshstream._core.wires.parallel_wrapper`: one
   ``function_call`` named ``parallel`` listing the real calls, checked against
   ``client_tools``) is the calls it dispatches. Its arguments are held until its item is
   done; one cut off before is the one call, cut. Its replay entry keeps the wrapper's own
   ``arguments`` and its calls' ids (``parallel``): the wrapper goes back as the model
   sent it, and its calls' results as its one ``function_call_output``.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Sequence
from typing import Any

from ..parts import decode_base64, sniff_media_type
from ..sse import ServerSentEvent
from ..strict_json import dump_json, loads_event
from ..types import Citation, TokenUsage
from .json_values import dict_or_empty, first_str, int_or_none, list_or_empty
from .parallel_wrapper import child_id, may_wrap, parallel_calls
from .translator import Translator
from .usage import reported_counts, split_iterations, usage_cost

WIRE = "openai-responses"
_MAX_TOKENS_REASONS = frozenset({"max_output_tokens", "max_tokens", "length"})
# a message content part's type -> the field that holds its text
_MESSAGE_TEXT = {"output_text": "text", "refusal": "refusal"}
#: client-executed built-in tool items: item type -> (tool name, payload keys); the
#: custom tool's name is its own
CLIENT_CALLS: dict[str, tuple[str, tuple[str, ...]]] = {
    "local_shell_call": ("local_shell", ("action",)),
    "shell_call": ("shell", ("action",)),
    "apply_patch_call": ("apply_patch", ("operation",)),
    "computer_call": ("computer", ("action", "actions", "pending_safety_checks")),
    "custom_tool_call": ("custom_tool", ("input",)),
    "mcp_approval_request": ("mcp_approval_request", ("server_label", "name", "arguments")),
    "tool_search_call": ("tool_search", ("arguments",)),
}
#: client kinds whose item may have been run by the server: held until that is known (rule 3)
_MAYBE_SERVER = frozenset({"shell_call", "custom_tool_call", "tool_search_call"})
#: server-executed built-in tool items
SERVER_TOOLS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
    }
)
# an image_generation_call's output_format -> media type
_IMAGE_FORMATS = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif", "svg": "image/svg+xml"}
# scalar fields a server tool summary keeps
_SUMMARY_FIELDS = ("name", "server_label", "container_id", "error")


def item_kind(item: dict[str, Any]) -> str:
    """An output item's ``type`` (``""`` when it is not a string: wire JSON is untrusted)."""
    kind = item.get("type")
    return kind if isinstance(kind, str) else ""


def client_call(item: dict[str, Any]) -> tuple[str | None, str, str] | None:
    """``(call id, tool name, arguments JSON)`` of a client-executed built-in tool item,
    or ``None`` for any other item."""
    kind = item_kind(item)
    spec = CLIENT_CALLS.get(kind)
    if spec is None:
        return None
    name, keys = spec
    if kind == "mcp_approval_request":
        call_id = first_str(item.get("id"))
        payload = {key: item.get(key) for key in keys}
    else:
        call_id = first_str(item.get("call_id"), item.get("id"))
        payload = {key: item[key] for key in keys if item.get(key) not in (None, [])}
        if kind == "custom_tool_call":
            name = first_str(item.get("name")) or name
            payload.setdefault("input", "")
    return call_id, name, dump_json(payload) or "{}"


def server_run(item: dict[str, Any], output: Sequence[dict[str, Any]], client_tools: Collection[str] | None) -> bool:
    """Whether ``item``, of a client kind, was run by the server (rule 3): its
    ``execution`` says so, its output item is in ``output``, or it is a custom tool call the
    request did not declare among ``client_tools`` (``None``: unknown)."""
    kind = item_kind(item)
    if kind not in CLIENT_CALLS:
        return False
    execution = item.get("execution")
    if execution in ("server", "client"):
        return bool(execution == "server")
    if kind == "custom_tool_call" and client_tools is not None and item.get("name") not in client_tools:
        return True
    call_id = first_str(item.get("call_id"))
    return call_id is not None and any(
        other.get("call_id") == call_id and item_kind(other).endswith("_output") for other in output
    )


def _server_tool_summary(item: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {"type": item_kind(item)}
    for field in ("id", "status", *_SUMMARY_FIELDS):
        value = item.get(field)
        if isinstance(value, (str, int, float, bool)) and value != "":
            summary[field] = value
    action = dict_or_empty(item.get("action"))
    query = first_str(action.get("query"))
    listed = list_or_empty(item.get("queries")) + list_or_empty(action.get("queries"))
    queries = [q for q in listed if isinstance(q, str)]
    if query is not None and query not in queries:
        queries.insert(0, query)
    if queries:
        summary["queries"] = queries
    sources = [first_str(dict_or_empty(src).get("url")) for src in list_or_empty(action.get("sources"))]
    if any(sources):
        summary["sources"] = [url for url in sources if url]
    kind = first_str(action.get("type"))
    if kind is not None and kind != "search":  # a web search's open_page / find_in_page: what it read
        summary["action"] = kind
        for field in ("url", "pattern"):
            value = first_str(action.get(field))
            if value is not None:
                summary[field] = value
    if summary["type"] == "mcp_list_tools":
        summary["tools"] = [first_str(dict_or_empty(t).get("name")) for t in list_or_empty(item.get("tools"))]
    return summary


def responses_citation(annotation: Any) -> Citation | None:
    """A Responses ``output_text`` annotation as a citation (``None`` when it is not one)."""
    if type(annotation) is not dict:
        return None
    kind = first_str(annotation.get("type")) or "unknown"
    start = int_or_none(annotation.get("start_index"))
    end = int_or_none(annotation.get("end_index"))
    if kind == "url_citation":
        return Citation("url", url=first_str(annotation.get("url")), title=first_str(annotation.get("title")),
                        start=start, end=end)
    if kind in ("file_citation", "container_file_citation", "file_path"):
        file_id = first_str(annotation.get("file_id"))
        container = first_str(annotation.get("container_id"))
        location = f"{container}/{file_id}" if container and file_id else file_id
        index = int_or_none(annotation.get("index"))
        return Citation(
            "file",
            title=first_str(annotation.get("filename")),
            location=location,
            start=start if start is not None else index,
            end=end,
        )
    return Citation(kind, url=first_str(annotation.get("url")), title=first_str(annotation.get("title")),
                    start=start, end=end)


def _message_text_field(part: dict[str, Any]) -> str | None:
    kind = part.get("type")
    return _MESSAGE_TEXT.get(kind) if isinstance(kind, str) else None


def responses_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """Normalize a Responses ``usage`` object to disjoint counts."""
    input_tokens = int_or_none(usage.get("input_tokens"))
    output_tokens = int_or_none(usage.get("output_tokens"))
    if input_tokens is None and output_tokens is None:
        return None
    details = dict_or_empty(usage.get("input_tokens_details"))
    cached = int_or_none(details.get("cached_tokens"))
    written = int_or_none(details.get("cache_write_tokens"))
    reasoning = int_or_none(dict_or_empty(usage.get("output_tokens_details")).get("reasoning_tokens"))
    cost = usage_cost(usage)
    return TokenUsage(
        input_tokens=max(0, (input_tokens or 0) - (cached or 0) - (written or 0)),
        output_tokens=output_tokens or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=reasoning,
        cost=cost,
    )


class _Slot:
    """One output item as the stream reveals it."""

    __slots__ = ("number", "item_type", "item", "keys", "key_set", "text_parts", "identified")

    def __init__(self, number: int) -> None:
        self.number = number
        self.item_type: str | None = None
        self.item: dict[str, Any] | None = None  # the item as last reported
        self.keys: list[Hashable] = []  # block keys in opening order
        self.key_set: set[Hashable] = set()
        self.text_parts = 0
        self.identified = False  # a tool call's id and name are known


#: output items during which the provider works without content (translator rule 6)
_QUIET_ITEMS = frozenset({
    "reasoning", "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call",
    "mcp_call", "mcp_list_tools", "function_call", "custom_tool_call",
})


class OpenAIResponsesTranslator(Translator):
    """Responses API events to dshstream chunks."""

    wire = WIRE

    def __init__(
        self,
        *,
        provider: str | None = None,
        request_id: str | None = None,
        max_tokens: int | None = None,
        after: int = -1,
        client_tools: Collection[str] | None = None,
    ) -> None:
        super().__init__(provider=provider, request_id=request_id, max_tokens=max_tokens)
        #: the names of the client tools the request declared (``None``: unknown; rule 3)
        self.client_tools = frozenset(client_tools) if client_tools is not None else None
        self._held: _Slot | None = None  # a client-kind call waiting to be known client-run
        self._lost_images: set[str] = set()  # ids of generated images whose data did not decode (rule 3)
        self._server_slots: set[int] = set()  # slots of client-kind items the server ran
        self._wrappers: dict[int, list[str]] = {}  # slot -> a parallel wrapper's held arguments (rule 8)
        self._expanded: dict[int, list[str]] = {}  # slot -> the child call ids of an expanded wrapper
        self._created: str | None = None  # the id of the response.created seen (rule 1)
        #: the last sequence number processed (rule 7)
        self.last_sequence = after
        #: the ``output_index`` of every item whose ``output_item.done`` was processed
        self.items_done: set[int] = set()
        self._slots: list[_Slot] = []
        self._by_index: dict[int, _Slot] = {}
        self._by_id: dict[str, _Slot] = {}
        self._streamed: set[Hashable] = set()  # block keys that received a payload
        self._opened: set[Hashable] = set()  # tool-call and file block keys ever opened
        self._output: list[dict[str, Any]] = []  # the terminal response's output items
        self._completed = False  # a completed/incomplete terminal event arrived
        self._usage: dict[str, Any] | None = None  # the last raw usage record
        # text block key -> annotation index -> citation (created on the first annotation)
        self._citations: dict[Hashable, dict[int, Citation]] | None = None

    # ------------------------------------------------------------------ dispatch

    def on_event(self, event: ServerSentEvent) -> None:
        data = event.data
        if data == "[DONE]":
            self.end_input()  # [DONE] before a terminal response event
            return
        payload = loads_event(data)
        if type(payload) is not dict:
            return
        sequence = payload.get("sequence_number")
        if type(sequence) is int:  # rule 7: a replayed event is processed once
            if sequence <= self.last_sequence:
                return
            self.last_sequence = sequence
        kind = payload.get("type")
        if not isinstance(kind, str) or not kind:
            kind = event.event
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, payload)

    # ------------------------------------------------------------------ slots

    def _slot(self, payload: dict[str, Any], item: dict[str, Any] | None = None) -> _Slot:
        if item is None:  # fast path: a delta for a known item
            index = payload.get("output_index")
            if type(index) is int:
                known = self._by_index.get(index)
                if known is not None:
                    return known
        item_id = first_str(payload.get("item_id"), item.get("id") if item is not None else None)
        index = payload.get("output_index")
        index = index if type(index) is int else None
        slot: _Slot | None = None
        if index is not None:
            slot = self._by_index.get(index)
        if slot is None and item_id is not None:
            slot = self._by_id.get(item_id)
        if slot is None:
            slot = _Slot(len(self._slots))
            self._slots.append(slot)
        if index is not None:
            self._by_index.setdefault(index, slot)
        if item_id is not None:
            self._by_id.setdefault(item_id, slot)
        if item is not None:
            item_type = item.get("type")
            if isinstance(item_type, str):
                slot.item_type = item_type
            slot.item = item
        return slot

    def _key(self, slot: _Slot, part: str, position: Any) -> Hashable:
        key = (slot.number, part, position if type(position) is int else 0)
        if key not in slot.key_set:
            slot.key_set.add(key)
            slot.keys.append(key)
        return key

    # ------------------------------------------------------------------ content

    def _text(self, slot: _Slot, key: Hashable, text: Any) -> None:
        if isinstance(text, str) and text:
            if key not in self._streamed:
                self._streamed.add(key)
                slot.text_parts += 1
            self.writer.text(key, text)

    def _reasoning(self, key: Hashable, text: Any) -> None:
        if isinstance(text, str) and text:
            self._streamed.add(key)
            self.writer.reasoning(key, text)

    @staticmethod
    def _position(slot: _Slot, part: str, position: int) -> int:
        """The event numbering of a done item's ``position``-th ``part`` (rule 2)."""
        if (slot.number, part, position) in slot.key_set:
            return position
        opened = [key[2] for key in slot.keys if type(key) is tuple and key[1] == part]
        return opened[position] if position < len(opened) else position

    def _fill(self, slot: _Slot, part: str, position: Any, text: Any) -> Hashable:
        """Text known only from a ``done`` event or the terminal output: emit it unless
        deltas already did. ``part`` ``"text"`` is visible text, any other reasoning."""
        key = self._key(slot, part, position)
        if key not in self._streamed:
            if part == "text":
                self._text(slot, key, text)
            else:
                self._reasoning(key, text)
        return key

    def _end_part(self, slot: _Slot, part: str, position: Any, text: Any) -> None:
        """A part's ``done`` event: fill its text, end its block."""
        self._end_key(self._fill(slot, part, position, text))

    def _end_key(self, key: Hashable) -> None:
        """End the block under ``key``, a text block with the citations it collected."""
        if self._citations is not None:
            found = self._citations.pop(key, None)
            if found:
                self.writer.cite(key, [found[i] for i in sorted(found)])
        self.writer.end(key)

    def _annotate(self, key: Hashable, position: Any, annotation: Any) -> None:
        """One annotation of the text part under ``key`` (a repeat replaces)."""
        citation = responses_citation(annotation)
        if citation is None:
            return
        if self._citations is None:
            self._citations = {}
        found = self._citations.setdefault(key, {})
        found[position if type(position) is int else len(found)] = citation

    def _annotate_all(self, key: Hashable, annotations: Any) -> None:
        """A part's full annotation list (from a ``done`` event or the terminal output)."""
        if type(annotations) is list and annotations:
            for position, annotation in enumerate(annotations):
                self._annotate(key, position, annotation)

    def _tool(self, slot: _Slot, item: dict[str, Any] | None, arguments: str = "") -> None:
        key = self._key(slot, "tool", 0)
        call_id = name = None
        if item is not None:
            call_id = first_str(item.get("call_id"), item.get("id"))
            name = first_str(item.get("name"))
            if call_id is not None and name is not None:
                slot.identified = True
        if arguments:
            self._streamed.add(key)
        self._opened.add(key)
        self.writer.tool_call(key, call_id=call_id, name=name, arguments=arguments)

    def _builtin(self, slot: _Slot, item: dict[str, Any], *, complete: bool) -> None:
        """A client-executed built-in tool item: open its call when it is added, give it
        its arguments once, from the item as it is when done."""
        key = self._key(slot, "tool", 0)
        if key in self._streamed or (key in self._opened and not self.writer.is_open(key)):
            return
        call = client_call(item)
        if call is None:
            return
        call_id, name, arguments = call
        if not complete:
            arguments = ""
        elif arguments:
            self._streamed.add(key)
        if call_id is not None:
            slot.identified = True
        self._opened.add(key)
        self.writer.tool_call(key, call_id=call_id, name=name, arguments=arguments)

    def _may_wrap(self, item: dict[str, Any]) -> bool:
        """Whether the ``function_call`` ``item`` may be a parallel wrapper (rule 8)."""
        return may_wrap(item.get("name"), self.client_tools)

    def _unwrap(self, slot: _Slot, item: dict[str, Any] | None, arguments: str) -> None:
        """A held wrapper, done: its calls, or the one call it is (rule 8). ``arguments``:
        the item's own, else what was held."""
        held = self._wrappers.pop(slot.number, None)
        if not arguments and held:
            arguments = "".join(held)
        tools = self.client_tools
        calls = parallel_calls(arguments, tools) if tools is not None and item is not None else None
        call_id = first_str(item.get("call_id"), item.get("id")) if item is not None else None
        if calls is None or call_id is None:
            self._tool(slot, item if item is not None else slot.item, arguments)
            return
        children = []
        for position, (name, child_arguments) in enumerate(calls):
            key = self._key(slot, "tool", position)
            child = child_id(call_id, position)
            children.append(child)
            self._opened.add(key)
            self._streamed.add(key)
            self.writer.tool_call(key, call_id=child, name=name, arguments=child_arguments)
        slot.identified = True
        self._expanded[slot.number] = children

    def _fill_item(self, slot: _Slot, item: dict[str, Any]) -> None:
        """Emit whatever ``item`` holds that the stream has not shown yet."""
        kind = item_kind(item)
        if kind == "message":
            for position, part in enumerate(list_or_empty(item.get("content"))):
                part = dict_or_empty(part)
                field = _message_text_field(part)
                if field is not None:
                    key = self._fill(slot, "text", self._position(slot, "text", position), part.get(field))
                    if "annotations" in part and self.writer.is_open(key):
                        self._annotate_all(key, part["annotations"])
        elif kind == "reasoning":
            for part_name in ("summary", "content"):
                for position, part in enumerate(list_or_empty(item.get(part_name))):
                    self._fill(slot, part_name, self._position(slot, part_name, position), dict_or_empty(part).get("text"))
        elif kind == "function_call":
            arguments = item.get("arguments")
            if not isinstance(arguments, str):
                arguments = ""
            if slot.number in self._expanded:
                return
            key = self._key(slot, "tool", 0)
            if slot.number in self._wrappers or (key not in self._opened and self._may_wrap(item)):
                self._unwrap(slot, item, arguments)
                return
            if key not in self._opened:
                self._tool(slot, item, arguments)  # never streamed: the whole call now
            elif self.writer.is_open(key):
                pending = arguments if key not in self._streamed else ""
                if pending or not slot.identified:
                    self._tool(slot, item, pending)
        elif kind in CLIENT_CALLS:
            if slot.number not in self._server_slots and slot is not self._held:
                self._builtin(slot, item, complete=True)
        elif kind == "image_generation_call":
            self._generated_image(slot, item)

    def _generated_image(self, slot: _Slot, item: dict[str, Any]) -> None:
        """The image of a done ``image_generation_call``, once (rule 3)."""
        key = (slot.number, "file", 0)
        if key in self._opened:
            return
        result = item.get("result")
        data = decode_base64(result)
        if data is None:
            if result not in (None, ""):  # produced, but unreadable: flagged, not dropped
                self._lost_images.add(first_str(item.get("id")) or f"#{slot.number}")
            return
        self._lost_images.discard(first_str(item.get("id")) or f"#{slot.number}")
        self._opened.add(key)
        output_format = item.get("output_format")
        media_type = sniff_media_type(data) or _IMAGE_FORMATS.get(output_format if isinstance(output_format, str) else "")
        self.writer.file(media_type or "image/png", data)

    def _release(self, following: dict[str, Any] | None) -> None:
        """The held call is a call after all, unless ``following`` (the next item) is its
        output or it is known server-run (rule 3)."""
        held = self._held
        if held is None or held.item is None:
            return
        self._held = None
        if following is not None and server_run(held.item, (following,), self.client_tools):
            self._server_slots.add(held.number)
        if held.number in self._server_slots:
            return
        self._builtin(held, held.item, complete=True)
        self._end_slot(held)

    def _end_slot(self, slot: _Slot) -> None:
        for key in slot.keys:
            self._end_key(key)

    # ------------------------------------------------------------------ handlers

    def _on_response_meta(self, payload: dict[str, Any]) -> None:
        response = dict_or_empty(payload.get("response"))
        writer = self.writer
        writer.identify(response.get("id"), response.get("model"), response.get("provider"))
        tools = response.get("tools")
        if self.client_tools is None and type(tools) is list:  # rule 1: the request's, echoed
            self.client_tools = frozenset(
                name
                for tool in tools
                if type(tool) is dict and tool.get("type") in ("function", "custom")
                for name in (first_str(tool.get("name")),)
                if name is not None
            )
        usage = response.get("usage")
        if type(usage) is dict:
            normalized = responses_usage(usage)
            if normalized is not None:
                writer.usage = normalized
                self._usage = writer.raw_usage = usage

    def _on_created(self, payload: dict[str, Any]) -> None:
        """``response.created``: one response per stream (rule 1)."""
        created = first_str(dict_or_empty(payload.get("response")).get("id"))
        opened = self._created
        if opened is not None and created is not None and created != opened:
            self.end_spliced("response", created, opened)
            return
        if opened is None:
            self._created = created
        self._on_response_meta(payload)

    def _on_item_added(self, payload: dict[str, Any]) -> None:
        item = dict_or_empty(payload.get("item"))
        slot = self._slot(payload, item)
        kind = item_kind(item)
        # reasoning and server-run tools may go on for minutes without content (translator rule 6)
        self.quiet = kind in _QUIET_ITEMS
        if self._held is not None and self._held is not slot:
            self._release(item)
        if kind == "function_call":
            arguments = item.get("arguments")
            arguments = arguments if isinstance(arguments, str) else ""
            if self._may_wrap(item):
                self._wrappers[slot.number] = [arguments] if arguments else []
            else:
                self._tool(slot, item, arguments)
        elif kind in CLIENT_CALLS:
            if server_run(item, (), self.client_tools):
                self._server_slots.add(slot.number)
            elif kind not in _MAYBE_SERVER:
                self._builtin(slot, item, complete=False)

    def _on_item_done(self, payload: dict[str, Any]) -> None:
        self.quiet = False
        index = payload.get("output_index")
        if type(index) is int:
            self.items_done.add(index)
        item = dict_or_empty(payload.get("item"))
        slot = self._slot(payload, item)
        if self._held is not None and self._held is not slot:
            self._release(item)
        kind = item_kind(item)
        if kind in CLIENT_CALLS and server_run(item, (), self.client_tools):
            self._server_slots.add(slot.number)
        if kind in _MAYBE_SERVER and slot.number not in self._server_slots:
            self._held = slot  # rule 3: its output item may follow
        self._fill_item(slot, item)
        self._end_slot(slot)

    def _on_part_done(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        part = dict_or_empty(payload.get("part"))
        position = payload.get("content_index")
        field = _message_text_field(part)
        if field is not None:
            key = self._fill(slot, "text", position, part.get(field))
            if "annotations" in part:
                self._annotate_all(key, part["annotations"])
            self._end_key(key)
        elif part.get("type") == "reasoning_text":
            self._end_part(slot, "content", position, part.get("text"))

    def _on_text_delta(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        self._text(slot, self._key(slot, "text", payload.get("content_index")), payload.get("delta"))

    def _on_text_done(self, payload: dict[str, Any]) -> None:
        # The block stays open for the part's annotations: it ends with content_part.done
        # (or the item's done, or the terminal response).
        slot = self._slot(payload)
        self._fill(slot, "text", payload.get("content_index"), payload.get("text"))

    def _on_annotation(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        key = self._key(slot, "text", payload.get("content_index"))
        self._annotate(key, payload.get("annotation_index"), payload.get("annotation"))

    def _on_refusal_done(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        self._end_part(slot, "text", payload.get("content_index"), payload.get("refusal"))

    def _on_summary_delta(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        self._reasoning(self._key(slot, "summary", payload.get("summary_index")), payload.get("delta"))

    def _on_summary_done(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        text = payload.get("text")
        if text is None:
            text = dict_or_empty(payload.get("part")).get("text")
        self._end_part(slot, "summary", payload.get("summary_index"), text)

    def _on_reasoning_text_delta(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        self._reasoning(self._key(slot, "content", payload.get("content_index")), payload.get("delta"))

    def _on_reasoning_text_done(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        self._end_part(slot, "content", payload.get("content_index"), payload.get("text"))

    def _on_arguments_delta(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        if slot.item_type is None:
            slot.item_type = "function_call"
        delta = payload.get("delta")
        if isinstance(delta, str) and delta:
            held = self._wrappers.get(slot.number) if self._wrappers else None  # none held: no lookup per delta
            if held is not None:
                held.append(delta)  # rule 8: a wrapper's arguments wait for its done
            else:
                self._tool(slot, None, delta)

    def _on_arguments_done(self, payload: dict[str, Any]) -> None:
        slot = self._slot(payload)
        if slot.item_type is None:
            slot.item_type = "function_call"
        arguments = payload.get("arguments")
        held = self._wrappers.get(slot.number)
        if held is not None:
            if isinstance(arguments, str) and arguments:
                held[:] = [arguments]  # the whole text: it replaces the deltas (rule 8)
            return
        key = self._key(slot, "tool", 0)
        reopen = key in self._opened and not self.writer.is_open(key)
        if key not in self._streamed and isinstance(arguments, str) and arguments and not reopen:
            self._tool(slot, slot.item, arguments)

    # ------------------------------------------------------------------ terminal events

    def _reconcile(self, response: dict[str, Any]) -> list[dict[str, Any]]:
        """Match the terminal output to the streamed items; emit what the stream missed."""
        output = [item for item in list_or_empty(response.get("output")) if type(item) is dict]
        slots = []
        for index, item in enumerate(output):
            slot = self._by_index.get(index)
            item_id = first_str(item.get("id"))
            if slot is None and item_id is not None:
                slot = self._by_id.get(item_id)
            if slot is None:
                slot = self._slot({"output_index": index}, item)
            elif slot.item_type is None and isinstance(item.get("type"), str):
                slot.item_type = item["type"]
            if server_run(item, output, self.client_tools):
                self._server_slots.add(slot.number)
            slots.append(slot)
        self._release(None)
        for slot, item in zip(slots, output):
            self._fill_item(slot, item)
        return output

    def _replay_items(self, output: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
        """The replay items of the terminal ``output``, or of the streamed items without one,
        and the call ids of the server-run client-kind items among them (rule 5)."""
        slots: list[tuple[_Slot | None, dict[str, Any]]]
        if output:
            slots = []
            for index, item in enumerate(output):
                slot = self._by_index.get(index)
                if slot is None:
                    slot = self._by_id.get(first_str(item.get("id")) or "")
                slots.append((slot, item))
        else:
            slots = [(slot, slot.item) for slot in self._slots if slot.item is not None]
        items: list[dict[str, Any]] = []
        server_calls: list[str] = []
        for slot, item in slots:
            item_type = item.get("type")
            if slot is not None and slot.number in self._server_slots:
                call_id = first_str(item.get("call_id"), item.get("id"))
                if call_id is not None:
                    server_calls.append(call_id)
            if item_type == "reasoning":
                entry = {k: v for k, v in item.items() if k != "status" and v is not None}
                entry.setdefault("summary", [])
                items.append(entry)
            elif item_type == "function_call":
                entry = {"type": "function_call"}
                for field in ("id", "call_id", "name", "namespace"):
                    value = first_str(item.get(field))
                    if value is not None:
                        entry[field] = value
                if item.get("caller") is not None:
                    entry["caller"] = item["caller"]
                children = self._expanded.get(slot.number) if slot is not None else None
                if children is not None:  # rule 8: the wrapper as sent, and its calls' ids
                    arguments = item.get("arguments")
                    entry["arguments"] = arguments if isinstance(arguments, str) else ""
                    entry["parallel"] = list(children)
                items.append(entry)
            elif item_type == "message":
                entry = {"type": "message", "text_parts": slot.text_parts if slot is not None else 0}
                for field in ("id", "phase"):
                    value = first_str(item.get(field))
                    if value is not None:
                        entry[field] = value
                items.append(entry)
            elif isinstance(item_type, str) and item_type:
                items.append(dict(item))  # verbatim, known or not: it goes back as it came
        return items, server_calls

    def replay_state(self) -> Any:
        items, server_calls = self._replay_items(self._output)
        if not items:
            return None
        state: dict[str, Any] = {"wire": WIRE, "items": items}
        if server_calls:
            state["server_calls"] = server_calls
        return state

    def token_counts(self) -> tuple[int | None, int | None]:
        return reported_counts(self._usage, "input_tokens", "output_tokens")

    def flush(self, *, cut: bool) -> None:
        writer = self.writer
        if self._citations:  # text parts whose done never came: their citations still count
            for key, found in self._citations.items():
                writer.cite(key, [found[i] for i in sorted(found)])
            self._citations = None
        if self._output:
            items = self._output
        else:
            items = [slot.item for slot in self._slots if slot.item is not None]
        if cut:
            self._held = None  # rule 3: who runs it is unknown; no call to run (still replayed)
        else:
            self._release(None)
        for number in list(self._wrappers):  # rule 8: a wrapper never done is the call it says
            slot = self._slots[number]
            if cut:
                self._tool(slot, slot.item, "".join(self._wrappers.pop(number)))
            else:
                self._unwrap(slot, slot.item, "")
        for item in items:
            kind = item_kind(item)
            if kind in SERVER_TOOLS or (kind in CLIENT_CALLS and self._ran_on_server(item)):
                summary = _server_tool_summary(item)
                if kind == "image_generation_call" and self._image_lost(item):
                    summary["image_lost"] = "the result is not base64 image data"
                writer.server_tools.append(summary)
        if self._usage is not None and "iterations" in self._usage:
            _, others = split_iterations(self._usage["iterations"], writer.model, responses_usage)
            writer.usage_by_model = others or None

    def _image_lost(self, item: dict[str, Any]) -> bool:
        """Whether the generated image of ``item`` did not decode (rule 3)."""
        item_id = first_str(item.get("id"))
        if item_id is not None:
            return item_id in self._lost_images
        return bool(self._lost_images) and any(slot.item is item and f"#{slot.number}" in self._lost_images
                                               for slot in self._slots)

    def _ran_on_server(self, item: dict[str, Any]) -> bool:
        """Whether the client-kind ``item`` (a streamed or terminal one) was server-run."""
        if server_run(item, self._output, self.client_tools):
            return True
        return any(slot.item is item and slot.number in self._server_slots for slot in self._slots)

    def _has_function_call(self, output: list[dict[str, Any]]) -> bool:
        if output:
            return any(
                item_kind(item) == "function_call" or (item_kind(item) in CLIENT_CALLS and not self._ran_on_server(item))
                for item in output
            )
        return any(
            slot.item_type == "function_call" or (slot.item_type in CLIENT_CALLS and slot.number not in self._server_slots)
            for slot in self._slots
        )

    def _terminal(self, payload: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        self._on_response_meta(payload)
        response = dict_or_empty(payload.get("response"))
        output = self._reconcile(response)
        self._output = output
        return response, output

    def _on_completed(self, payload: dict[str, Any]) -> None:
        response, output = self._terminal(payload)
        status = first_str(response.get("status")) or "completed"
        if self._has_function_call(output):
            self.writer.set_finish("tool-calls", status)
        else:
            self.writer.set_finish("stop", status)
        self.complete()

    def _on_incomplete(self, payload: dict[str, Any]) -> None:
        response, _ = self._terminal(payload)
        details = dict_or_empty(response.get("incomplete_details"))
        reason = first_str(details.get("reason")) or "incomplete"
        writer = self.writer
        who = writer.provider
        if reason in _MAX_TOKENS_REASONS:
            writer.set_finish("max-tokens", reason)
        elif reason == "content_filter":
            writer.set_finish(
                "error",
                reason,
                writer.failure("CONTENT_FILTER", f"{who}: response blocked by the provider's content filter"),
            )
        else:
            writer.set_finish("error", reason, writer.stop_failure(reason))
        self.complete()

    def _on_failed(self, payload: dict[str, Any]) -> None:
        response, output = self._terminal(payload)
        if not self._replay_items(output)[0]:
            self._output = []  # nothing replayable in the failed response: replay the stream's items
        error = response.get("error")
        self.writer.finish_raw = "failed"
        self.fail_with({"error": error} if error is not None else payload)

    def _on_error(self, payload: dict[str, Any]) -> None:
        self.fail_with(payload)


_HANDLERS: dict[str, Any] = {
    "response.created": OpenAIResponsesTranslator._on_created,
    "response.in_progress": OpenAIResponsesTranslator._on_response_meta,
    "response.queued": OpenAIResponsesTranslator._on_response_meta,
    "response.output_item.added": OpenAIResponsesTranslator._on_item_added,
    "response.output_item.done": OpenAIResponsesTranslator._on_item_done,
    "response.content_part.done": OpenAIResponsesTranslator._on_part_done,
    "response.output_text.delta": OpenAIResponsesTranslator._on_text_delta,
    "response.output_text.done": OpenAIResponsesTranslator._on_text_done,
    "response.output_text.annotation.added": OpenAIResponsesTranslator._on_annotation,
    "response.refusal.delta": OpenAIResponsesTranslator._on_text_delta,
    "response.refusal.done": OpenAIResponsesTranslator._on_refusal_done,
    "response.reasoning_summary_text.delta": OpenAIResponsesTranslator._on_summary_delta,
    "response.reasoning_summary_text.done": OpenAIResponsesTranslator._on_summary_done,
    "response.reasoning_summary_part.done": OpenAIResponsesTranslator._on_summary_done,
    "response.reasoning_text.delta": OpenAIResponsesTranslator._on_reasoning_text_delta,
    "response.reasoning_text.done": OpenAIResponsesTranslator._on_reasoning_text_done,
    "response.function_call_arguments.delta": OpenAIResponsesTranslator._on_arguments_delta,
    "response.function_call_arguments.done": OpenAIResponsesTranslator._on_arguments_done,
    "response.completed": OpenAIResponsesTranslator._on_completed,
    "response.done": OpenAIResponsesTranslator._on_completed,
    "response.incomplete": OpenAIResponsesTranslator._on_incomplete,
    "response.failed": OpenAIResponsesTranslator._on_failed,
    "error": OpenAIResponsesTranslator._on_error,
}
