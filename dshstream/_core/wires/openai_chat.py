"""The OpenAI chat-completions wire and every OpenAI-compatible dialect.

Contract (sans-IO; events of ``data: {chat.completion.chunk}`` frames, ``[DONE]`` last):

1. Choice 0 only (``n > 1`` streams use choice 0). Within one delta the order is reasoning,
   content, tool calls, finish reason.
2. Reasoning from ``reasoning_content`` or ``reasoning`` (or Mistral ``thinking`` parts);
   OpenRouter ``reasoning_details`` are merged per entry into replay state, and a
   ``reasoning.text`` signature is set on the reasoning block. Content from a string or a
   Mistral part list (legacy ``/completions`` ``choices[].text`` too); ``refusal`` text is
   visible text, past the filters. A block opens only on its first non-empty payload;
   content and reasoning go through :class:`~dshstream._core.filters.pipeline.ContentFilters`
   (optional think-tag stripping, the reasoning spill guard, ``<tool_call>`` markup naming
   one of ``client_tools`` — on by the dialect's ``tool_markup``, local servers that may
   leave the model's tool template unparsed —, verbatim tool calls) when any
   stage is on (until the pipeline is a pass-through: every stage off or settled),
   straight to the writer otherwise.
3. Tool calls are correlated by id, then wire index, then the latest open call (Ollama
   omits ``index``); a repeated id or name is identity, never appended. A new id at an
   index whose call already has another id and whole JSON arguments is another call, and
   the index is its from then on (vLLM and SGLang stream parallel calls all at index 0);
   a new id while the arguments are unfinished is the same call. ``annotations``
   on a delta (OpenRouter and OpenAI search ``url_citation`` s) become the citations of
   the text block, attached as the stream ends (a repeat is kept once); so do
   Perplexity's top-level ``search_results`` (``url``, ``title``, ``snippet`` as the cited
   text; else the older ``citations``, URLs alone), after them and in the order sent, so
   that the answer's ``[n]`` marks the n-th of them. Perplexity repeats the whole list on
   every chunk: it is read again only when its length changes. Groq compound's
   ``executed_tools`` (tools the server ran) are no calls: one entry per ``index`` in
   ``metadata.server_tools`` (``type``, ``index``, ``arguments``; the last report of an
   index wins), in index order. A model's parallel dispatch wrapper — a call named
   ``multi_tool_use.parallel`` listing the real calls
   (:mod:`~dshstream._core.wires.parallel_wrapper`, checked against ``client_tools``) — is
   held until the stream ends and becomes the calls it lists (ids ``{id}_{i}``), which go
   back on the next turn as ordinary tool calls; a cut stream, another shape or an
   undeclared tool leaves it the one call it is.
4. Usage from any chunk that carries it, last wins (trailing ``choices: []`` chunk, vLLM
   continuous stats, Groq ``x_groq.usage``); cached tokens (``prompt_tokens_details.
   cached_tokens``, else DeepSeek's ``prompt_cache_hit_tokens``, else a top-level
   ``cached_tokens``: Together, Moonshot) are subtracted from input,
   unless there are more of them than input tokens: then the input count is already the
   uncached input (Grok on Azure Foundry: ``prompt_tokens`` 7 beside 161 cached, and
   ``total_tokens`` 15 with the 8 output tokens). A server that reports reasoning outside
   ``completion_tokens`` (xAI: ``total_tokens`` counts it apart; Vercel's gateway: more
   reasoning tokens than completion tokens) gets it added. The cost is the usage's
   (:func:`~dshstream._core.wires.usage.usage_cost`); a top-level ``usage.reasoning_tokens``
   (Perplexity) counts when ``completion_tokens_details`` has none. Entries
   of a relayed ``usage.iterations`` that name another model go to
   ``metadata.usage_by_model``, never into the usage.
5. ``finish_reason``: ``""`` is null; stop/tool_calls/length map to stop/tool-calls/
   max-tokens; content_filter is an ``error`` finish with ``CONTENT_FILTER`` (the
   categories the choice's Azure ``content_filter_results`` mark filtered in its
   ``detail``); anything else an ``error`` finish with the reason upper-cased; ``raw``
   keeps ``native_finish_reason`` when present. A native word of Gemini's other than
   STOP and MAX_TOKENS (``MALFORMED_FUNCTION_CALL``..., relayed by a gateway under a
   normalized ``stop``) is the ``error`` finish the Gemini wire makes of it, never ``stop``.
6. An ``{"error": ...}`` payload or an ``event: error`` frame decides a classified error
   finish, keeping partial output and usage: open blocks end there (cut), and from then on
   only a chunk's usage is read, to ``[DONE]`` or the end — OpenRouter sends its usage in a
   chunk after the error chunk.
7. ``[DONE]`` is the terminal marker; EOF without it is normal only after a finish reason.
8. :meth:`OpenAIChatTranslator.on_payload` takes one chunk already parsed, under rules 1-6:
   the path for libraries that hand over chunk objects instead of bytes (LiteLLM).
9. The serving provider (``metadata.serving_provider``, and a failure's) is the first a
   chunk names: OpenRouter's top-level ``provider``, or Vercel's AI Gateway's
   ``delta.provider_metadata.gateway.routing.finalProvider``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from typing import Any

from ..classify import content_filter_summary
from ..dialects import DIALECTS, get_dialect
from ..filters.pipeline import REASONING_KEY, TEXT_KEY, ContentFilters
from ..strict_json import dump_json, loads_or_none
from ..types import Citation, FinishKind, TokenUsage
from .json_values import dict_or_empty, first_str, int_or_none
from .parallel_wrapper import PARALLEL_WRAPPERS, child_id, may_wrap, parallel_calls
from .translator import Translator
from .usage import split_iterations, usage_cost
from .gemini import GEMINI_FAILURE_WORDS, gemini_finish_failure

_FINISH_KINDS: dict[str, FinishKind] = {
    "stop": "stop",
    "end": "stop",
    "eos": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "max-tokens",
    "max_tokens": "max-tokens",
}


def openai_chat_usage(usage: dict[str, Any]) -> TokenUsage | None:
    """Normalize a chat-completions ``usage`` object to disjoint counts."""
    prompt = int_or_none(usage.get("prompt_tokens"))
    completion = int_or_none(usage.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    prompt = prompt or 0
    completion = completion or 0
    prompt_details = dict_or_empty(usage.get("prompt_tokens_details"))
    completion_details = dict_or_empty(usage.get("completion_tokens_details"))
    cache_read = int_or_none(prompt_details.get("cached_tokens"))
    if cache_read is None:
        cache_read = int_or_none(usage.get("prompt_cache_hit_tokens"))
    if cache_read is None:
        cache_read = int_or_none(usage.get("cached_tokens"))
    cache_write = int_or_none(prompt_details.get("cache_write_tokens"))
    reasoning = int_or_none(completion_details.get("reasoning_tokens"))
    if reasoning is None and "reasoning_tokens" in usage:
        reasoning = int_or_none(usage["reasoning_tokens"])
    total = int_or_none(usage.get("total_tokens"))
    output = completion
    if reasoning and (
        (total is not None and total == prompt + completion + reasoning) or reasoning > completion
    ):
        output = completion + reasoning  # reasoning counted outside completion_tokens (xAI, Vercel's gateway)
    cost = usage_cost(usage)
    uncached = prompt - (cache_read or 0) - (cache_write or 0)
    return TokenUsage(
        input_tokens=uncached if uncached >= 0 else prompt,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        reasoning_tokens=reasoning,
        cost=cost,
    )


def content_filter_detail(choice: Mapping[str, Any] | None) -> str | None:
    """The filtered categories of a ``content_filter`` finish (Azure puts them in the
    choice's ``content_filter_results``), for the failure's detail; ``None`` if none."""
    return content_filter_summary(choice.get("content_filter_results")) if choice is not None else None


def chat_citation(annotation: Any) -> Citation | None:
    """A chat-completions annotation (``{"type": "url_citation", "url_citation": {...}}``,
    or the same fields flat) as a citation; ``None`` when it is not an object."""
    if type(annotation) is not dict:
        return None
    kind = first_str(annotation.get("type")) or "unknown"
    body = annotation.get(kind)
    fields = body if type(body) is dict else annotation
    return Citation(
        "url" if kind == "url_citation" else kind,
        url=first_str(fields.get("url")),
        title=first_str(fields.get("title")),
        cited_text=first_str(fields.get("content")),
        start=int_or_none(fields.get("start_index")),
        end=int_or_none(fields.get("end_index")),
    )


class OpenAIChatTranslator(Translator):
    """Chat-completions chunks (any dialect) to dshstream chunks."""

    wire = "openai-chat"
    terminal_data = "[DONE]"

    def __init__(
        self,
        *,
        dialect: str = "openai",
        provider: str | None = None,
        request_id: str | None = None,
        think_tags: bool | None = None,
        spill_guard: bool = True,
        verbatim_tools: Sequence[Mapping[str, Any]] = (),
        max_tokens: int | None = None,
        client_tools: Collection[str] | None = None,
        tool_markup: bool | None = None,
    ) -> None:
        preset = DIALECTS.get(dialect) or get_dialect(dialect)  # get_dialect for its KeyError only
        super().__init__(provider=provider or preset.name, request_id=request_id, max_tokens=max_tokens)
        self.dialect = preset
        use_tags = preset.think_tags if think_tags is None else think_tags
        self._filters: ContentFilters | None = None
        # Where content and reasoning go: the filter pipeline, or straight to the writer.
        self._content: Callable[[str], None] = partial(self.writer.text, TEXT_KEY)
        self._reasoning: Callable[[str], None] = partial(self.writer.reasoning, REASONING_KEY)
        #: ``_content`` is the writer's own (no filter stage, or all settled): called inline
        self._direct = True
        use_markup = preset.tool_markup if tool_markup is None else tool_markup
        markup_tools = sorted(client_tools) if use_markup and client_tools else ()
        if use_tags or spill_guard or verbatim_tools or markup_tools:
            self._filters = ContentFilters(
                self.writer,
                think_tags=use_tags,
                spill_guard=spill_guard,
                verbatim_tools=verbatim_tools,
                markup_tools=markup_tools,
            )
            self._content = self._filtered_content
            self._reasoning = self._filters.reasoning
            self._direct = False
        self._by_id: dict[str, int] = {}
        self._by_index: dict[int, int] = {}
        self._last_call: int | None = None
        self._calls = 0
        self._reasoning_details: list[dict[str, Any]] = []
        self._executed: dict[int, dict[str, Any]] | None = None  # Groq executed_tools by index (rule 3)
        self._details_by_index: dict[Any, dict[str, Any]] = {}
        self._tool_signatures: dict[str, str] = {}
        self._citations: list[Citation] | None = None
        self._failed = False  # an in-band error came: only usage is read from here (rule 6)
        # Perplexity's search results (rule 3), and the (key, length) they were read at
        self._sources: list[Citation] | None = None
        self._sources_read: tuple[str, int] | None = None
        #: the names of the tools the request declared (``None``: unknown; rule 3)
        self.client_tools = frozenset(client_tools) if client_tools is not None else None
        # key -> a parallel wrapper's call id, name and held arguments (rule 3), made on the first
        self._wrappers: dict[int, tuple[str | None, str, list[str]]] | None = None

    # ------------------------------------------------------------------ events

    def on_payload(self, event: str, payload: Any) -> None:
        """One chunk already parsed: an SSE ``data`` payload, or a chunk dict a library
        produced (LiteLLM's ``ModelResponseStream.model_dump()``); ``event`` is the SSE
        event type (``"error"`` marks an error frame)."""
        if type(payload) is not dict:
            if event == "error":
                self.fail_with(payload)
            return
        writer = self.writer
        # writer.identify, inlined: this runs for every chunk of every chat stream
        if writer.response_id is None:
            rid = payload.get("id")
            if isinstance(rid, str) and rid:
                writer.response_id = rid
        model = payload.get("model")
        if model and model != writer.model and type(model) is str:
            writer.model = model
        # ``in`` before a lookup of a key most chunks lack: cheaper than ``get`` (a method call)
        if writer.serving_provider is None and "provider" in payload:
            served = payload["provider"]
            if isinstance(served, str) and served:
                writer.serving_provider = served
        usage = payload.get("usage")
        if usage is None and "x_groq" in payload:
            usage = dict_or_empty(payload["x_groq"]).get("usage")
        if usage is not None and type(usage) is dict and ("prompt_tokens" in usage or "completion_tokens" in usage):
            writer.defer_usage(openai_chat_usage, usage)
        if self._failed:  # rule 6: after an in-band error only its usage is read
            return
        if "search_results" in payload or "citations" in payload:
            self._on_sources(payload)
        choices = payload.get("choices")
        if choices and type(choices) is list:
            choice = choices[0]
            if type(choice) is not dict or choice.get("index", 0) not in (0, None):
                choice = self._choice_zero(choices)
            if choice is not None:
                # _on_choice, inlined with the one-field delta fast path: runs per chunk
                delta = choice.get("delta")
                if type(delta) is not dict:
                    if delta is None:
                        text = choice.get("text")  # legacy /completions streams
                        if isinstance(text, str) and text:
                            self._content(text)
                elif len(delta) != 1:
                    self._on_delta(delta)
                else:  # most deltas carry exactly one field
                    ((field, value),) = delta.items()
                    if field == "content" and type(value) is str:
                        if value:
                            if self._direct:  # no filter stage left: ``_content``'s partial, inlined
                                writer.text(TEXT_KEY, value)
                            else:
                                self._content(value)
                    elif field == "tool_calls" and type(value) is list:
                        for call in value:
                            if type(call) is not dict:
                                continue
                            if len(call) == 2:
                                # ``_on_tool_call``'s continuation shape, inlined:
                                # {"index": i, "function": {"arguments": s}} of a known call
                                function = call.get("function")
                                if type(function) is dict and len(function) == 1:
                                    index = call.get("index")
                                    known = self._by_index.get(index) if type(index) is int else None
                                    fragment = function.get("arguments")
                                    if known is not None and type(fragment) is str and self._wrappers is None:
                                        self._last_call = known
                                        writer.tool_call(known, None, None, fragment)
                                        continue
                            self._on_tool_call(call)
                    else:
                        self._on_delta(delta)
                reason = choice.get("finish_reason")
                if reason and isinstance(reason, str):
                    native = choice.get("native_finish_reason")
                    raw = native if isinstance(native, str) and native else reason
                    self._on_finish_reason(reason, raw, choice)
        if event == "error" or ("error" in payload and payload["error"] is not None):
            self._fail_in_band(payload)

    def _fail_in_band(self, payload: dict[str, Any]) -> None:
        """Rule 6: the error decides the finish now; the stream is read on to its end for
        a usage chunk that may follow (OpenRouter sends one after its error chunk)."""
        failure = self.classify_error(payload)
        self.flush(cut=True)
        writer = self.writer
        writer.end_all(cut=True)
        writer.set_finish("error", writer.finish_raw, failure)
        self._failed = True

    @staticmethod
    def _choice_zero(choices: list[Any]) -> dict[str, Any] | None:
        for choice in choices:
            if type(choice) is dict and choice.get("index", 0) in (0, None):
                return choice
        return None

    def _filtered_content(self, text: str) -> None:
        """Content through the filter pipeline; once every stage is off or settled (the
        pipeline's rule 5: a plain pass-through) content goes straight to the writer."""
        filters = self._filters
        assert filters is not None
        filters.content(text)
        if filters.stripper is None and filters.guard is None and filters.markup is None and filters.verbatim is None:
            self._content = partial(self.writer.text, TEXT_KEY)
            self._reasoning = partial(self.writer.reasoning, REASONING_KEY)
            self._direct = True

    def _on_delta(self, delta: dict[str, Any]) -> None:
        """A delta in general (``on_payload`` handles the one-field shapes itself)."""
        if "provider_metadata" in delta and self.writer.serving_provider is None:
            # Vercel's AI Gateway names the provider that served in its routing record (rule 9)
            routing = dict_or_empty(dict_or_empty(dict_or_empty(delta["provider_metadata"]).get("gateway")).get("routing"))
            served = first_str(routing.get("finalProvider"))
            if served is not None:
                self.writer.serving_provider = served
        reasoning = delta.get("reasoning_content")
        if not (isinstance(reasoning, str) and reasoning):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._reasoning(reasoning)
        details = delta.get("reasoning_details")
        if type(details) is list and details:
            self._merge_reasoning_details(details, bool(reasoning))
        content = delta.get("content")
        if isinstance(content, str):
            if content:
                self._content(content)
        elif type(content) is list:
            self._on_content_parts(content)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self.writer.text(TEXT_KEY, refusal)  # refusal text bypasses the filters
        tool_calls = delta.get("tool_calls")
        if type(tool_calls) is list:
            for call in tool_calls:
                if type(call) is dict:
                    self._on_tool_call(call)
        if "annotations" in delta:
            self._on_annotations(delta["annotations"])
        if "executed_tools" in delta:
            self._on_executed_tools(delta["executed_tools"])

    def _on_sources(self, payload: dict[str, Any]) -> None:
        """Perplexity's ``search_results`` (or ``citations``), whole on every chunk (rule 3)."""
        key = "search_results"
        listed = payload.get(key)
        if type(listed) is not list or not listed:
            key = "citations"
            listed = payload.get(key)
            if type(listed) is not list or not listed:
                return
        if self._sources_read == (key, len(listed)):
            return
        self._sources_read = (key, len(listed))
        sources: list[Citation] = []
        for item in listed:
            if type(item) is dict:
                url = first_str(item.get("url"))
                sources.append(Citation("url", url=url, title=first_str(item.get("title")),
                                        cited_text=first_str(item.get("snippet"))))
            elif type(item) is str and item:
                sources.append(Citation("url", url=item))
        self._sources = sources

    def _on_executed_tools(self, tools: Any) -> None:
        """Groq compound's server-run tools (rule 3): one summary per ``index``, the last
        report of it winning (arguments first, then again with the output)."""
        if type(tools) is not list:
            return
        if self._executed is None:
            self._executed = {}
        for tool in tools:
            if type(tool) is not dict or type(tool.get("index")) is not int:
                continue
            summary: dict[str, Any] = {"type": first_str(tool.get("type")) or "tool", "index": tool["index"]}
            arguments = first_str(tool.get("arguments"))
            if arguments is not None:
                summary["arguments"] = arguments
            self._executed[tool["index"]] = summary

    def _on_annotations(self, annotations: Any) -> None:
        if type(annotations) is not list:
            return
        if self._citations is None:
            self._citations = []
        for annotation in annotations:
            citation = chat_citation(annotation)
            if citation is not None and citation not in self._citations:
                self._citations.append(citation)

    def _on_content_parts(self, parts: list[Any]) -> None:
        for part in parts:
            if type(part) is not dict:
                continue
            kind = part.get("type")
            if kind == "text":
                text = part.get("text")
                if isinstance(text, str) and text:
                    self._content(text)
            elif kind == "thinking":
                thinking = part.get("thinking")
                pieces = thinking if type(thinking) is list else [thinking]
                for piece in pieces:
                    text = piece.get("text") if type(piece) is dict else piece
                    if isinstance(text, str) and text:
                        self._reasoning(text)

    def _merge_reasoning_details(self, details: list[Any], text_already_streamed: bool) -> None:
        for entry in details:
            if type(entry) is not dict:
                continue
            kind, position = entry.get("type"), entry.get("index", len(self._reasoning_details))
            if not isinstance(kind, (str, type(None))) or not isinstance(position, (str, int, type(None))):
                continue  # not a reasoning-details entry we can merge
            key = (kind, position)
            merged = self._details_by_index.get(key)
            if merged is None:
                merged = dict(entry)
                self._details_by_index[key] = merged
                self._reasoning_details.append(merged)
            else:
                for field, value in entry.items():
                    if field in ("text", "summary") and isinstance(value, str):
                        merged[field] = str(merged.get(field) or "") + value
                    elif value not in (None, ""):
                        merged[field] = value
            text = first_str(entry.get("text"), entry.get("summary")) if not text_already_streamed else None
            signature = first_str(entry.get("signature")) if entry.get("type") == "reasoning.text" else None
            if text or (signature and self.writer.is_open(REASONING_KEY)):
                # Some routes stream reasoning only inside reasoning_details; a signature
                # belongs to the reasoning block it closes.
                self.writer.reasoning(REASONING_KEY, text or "", signature=signature)

    def _on_tool_call(self, call: dict[str, Any]) -> None:
        if len(call) == 2 and "function" in call:
            # Fast path for the continuation shape {"index": i, "function": {"arguments": s}}.
            index = call.get("index")
            known = self._by_index.get(index) if type(index) is int else None
            function = call["function"]
            if known is not None and type(function) is dict and len(function) == 1:
                fragment = function.get("arguments")
                if type(fragment) is str:
                    self._last_call = known
                    if self._wrappers is not None and known in self._wrappers:
                        self._wrappers[known][2].append(fragment)  # rule 3: held
                        return
                    self.writer.tool_call(known, None, None, fragment)
                    return
        call_id = call.get("id")
        if not call_id or type(call_id) is not str:
            call_id = None
        wire_index = call.get("index")
        if type(wire_index) is not int:
            wire_index = None
        key: int | None = None
        if call_id is not None:
            key = self._by_id.get(call_id)
        reused = False
        if key is None and wire_index is not None:
            key = self._by_index.get(wire_index)
            if key is not None and call_id is not None and self._call_done(key, call_id):
                key, reused = None, True  # another call at a reused index (rule 3)
        if key is None and call_id is None and wire_index is None:
            key = self._last_call
        if key is None:
            key = self._calls
            self._calls += 1
            if self._filters is not None:  # held text keeps its place before the call
                self._filters.barrier()
        if call_id is not None and call_id not in self._by_id:
            self._by_id[call_id] = key
        if wire_index is not None and (reused or wire_index not in self._by_index):
            self._by_index[wire_index] = key
        self._last_call = key
        function = call.get("function")
        name = arguments = None
        if type(function) is dict:
            name = function.get("name")
            arguments = function.get("arguments")
        if type(arguments) is not str:
            arguments = (dump_json(arguments) or "") if isinstance(arguments, (dict, list)) else ""
        wrappers = self._wrappers
        if wrappers is not None and key in wrappers:
            held_id, held_name, pieces = wrappers[key]
            wrappers[key] = (held_id or call_id, held_name, pieces)
            if arguments:
                pieces.append(arguments)  # rule 3: held until the arguments are whole
            return
        if type(name) is str and name in PARALLEL_WRAPPERS and may_wrap(name, self.client_tools) and not self.writer.is_open(key):
            if wrappers is None:
                wrappers = self._wrappers = {}
            wrappers[key] = (call_id, str(name), [arguments] if arguments else [])
            return
        self.writer.tool_call(key, call_id, name if type(name) is str else None, arguments)
        extra = call.get("extra_content")
        if extra:
            signature = dict_or_empty(dict_or_empty(extra).get("google")).get("thought_signature")
            if isinstance(signature, str) and signature:
                self._tool_signatures[call_id or f"#{key}"] = signature

    def _call_done(self, key: int, call_id: str) -> bool:
        """Whether the call under ``key`` is over when a call ``call_id`` comes at its index:
        it has another id and whole JSON arguments (rule 3)."""
        state = self.writer.open_call(key)
        if state is None:
            return False
        own, pieces = state
        if own is None or own == call_id or not pieces or not pieces[-1].rstrip().endswith(("}", "]")):
            return False  # checked first: a server that sends a new id on every delta stays linear
        return loads_or_none("".join(pieces)) is not None

    def _on_finish_reason(self, reason: str, raw: str, choice: dict[str, Any] | None = None) -> None:
        kind = _FINISH_KINDS.get(reason)
        writer = self.writer
        if raw in GEMINI_FAILURE_WORDS and raw != reason:
            # a gateway's normalized word for a Gemini failure: never trust its "stop"
            writer.set_finish("error", raw, gemini_finish_failure(writer, raw))
            return
        if kind is not None:
            writer.set_finish(kind, raw)
            return
        who = writer.provider
        if reason == "content_filter":
            failure = writer.failure(
                "CONTENT_FILTER",
                f"{who}: response blocked by the provider's content filter",
                detail=content_filter_detail(choice),
            )
        elif reason == "error":
            failure = writer.failure("SERVER", f"{who}: stream terminated due to a provider error")
        else:
            failure = writer.stop_failure(reason)
        writer.set_finish("error", raw, failure)

    # ------------------------------------------------------------------ end

    def flush(self, *, cut: bool) -> None:
        if self._filters is not None:
            self._filters.flush(cut=cut)
        writer = self.writer
        if self._wrappers:
            self._unwrap(cut)
        if self._citations or self._sources:
            writer.cite(TEXT_KEY, [*(self._citations or ()), *(self._sources or ())])
        if self._executed:
            writer.server_tools.extend(self._executed[i] for i in sorted(self._executed))
        raw = writer.raw_usage
        if raw is not None and "iterations" in raw:
            _, others = split_iterations(raw["iterations"], writer.model, openai_chat_usage)
            writer.usage_by_model = others or None

    def _unwrap(self, cut: bool) -> None:
        """Each held parallel wrapper: its calls, or — its arguments not that shape, or cut
        off — the one call it is (rule 3)."""
        writer = self.writer
        wrappers, self._wrappers = self._wrappers or {}, None
        for key, (call_id, name, pieces) in wrappers.items():
            arguments = "".join(pieces)
            tools = self.client_tools
            calls = None if cut or tools is None else parallel_calls(arguments, tools)
            if calls is None or call_id is None:
                writer.tool_call(key, call_id, name, arguments)
                continue
            for position, (child_name, child_arguments) in enumerate(calls):
                child_key = key
                if position:
                    child_key = self._calls
                    self._calls += 1
                writer.tool_call(child_key, child_id(call_id, position), child_name, child_arguments)

    def replay_state(self) -> Any:
        state: dict[str, Any] = {}
        if self._reasoning_details:
            state["reasoning_details"] = self._reasoning_details
        if self._tool_signatures:
            state["tool_signatures"] = self._tool_signatures
        return {"wire": "openai-chat", **state} if state else None
