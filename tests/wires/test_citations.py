"""Citations and sources reach the user (issue #15, rule 3).

Anthropic ``citations_delta``, Responses ``output_text.annotation.added``/``annotations``,
Gemini ``groundingMetadata`` and OpenRouter ``annotations`` become ``TextBlock.citations``
(with the ``BlockEnd``; the chunk union stays closed) and ``result.citations``; the CLI
renderer and the notebook view list the sources under the answer.

Recorded: Anthropic web search (``anthropic/web_search_server_tool_citations.sse``),
Responses web search (``openai-responses/builtin-tools/web_search_call_url_citations_gpt5nano.sse``),
Gemini and Vertex grounding, Perplexity Sonar's ``search_results``
(``perplexity/sonar_search_results_cost_done_object.sse``). Built from the published schemas: Anthropic document and
search-result locations, Responses file citations, annotations only in ``done`` events,
Gemini retrieved context, OpenRouter ``url_citation`` annotations (no recording found).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from helpers import fixture_bytes

from dshstream._core.assembler import AssembledResponse, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.types import (
    BlockEnd,
    Citation,
    Finish,
    FinishReason,
    StreamChunk,
    TextBlock,
    TextDelta,
    chunk_from_dict,
    chunk_to_dict,
)
from dshstream._notebook import MarkdownView
from dshstream._render import TextRenderer, describe_source


def run(data: bytes, wire: str) -> tuple[list[StreamChunk], AssembledResponse]:
    chunks = list(check_contract(decode(data, wire=wire)))
    return chunks, assemble(chunks)


def events(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: ")]


def sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def data_only(*payloads: dict[str, Any], done: bool = False) -> bytes:
    body = b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads)
    return body + (b"data: [DONE]\n\n" if done else b"")


# --------------------------------------------------------------------------- Anthropic


def test_recorded_anthropic_web_search_citations() -> None:
    data = fixture_bytes("anthropic/web_search_server_tool_citations.sse")
    chunks, result = run(data, "anthropic")
    raw_by_block: dict[int, list[dict[str, Any]]] = {}
    for event in events(data):
        if event["type"] == "content_block_delta" and event["delta"]["type"] == "citations_delta":
            raw_by_block.setdefault(event["index"], []).append(event["delta"]["citation"])
    assert raw_by_block  # the recording cites
    expected = [
        Citation("url", url=c["url"], title=c["title"], cited_text=c["cited_text"])
        for index in sorted(raw_by_block)
        for c in raw_by_block[index]
    ]
    assert list(result.citations) == expected
    assert all(c.kind == "url" and c.url and c.url.startswith("https://") for c in result.citations)
    # they arrive with the BlockEnd of the text block they belong to
    cited_ends = [c for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, TextBlock) and c.block.citations]
    assert sum(len(e.block.citations) for e in cited_ends if isinstance(e.block, TextBlock)) == len(expected)
    # and stay in the replay state exactly as received
    replayed = [c for entry in result.replay_state["content"] for c in entry.get("citations", [])]
    assert replayed == [c for index in sorted(raw_by_block) for c in raw_by_block[index]]


def anthropic(*blocks: tuple[dict[str, Any], list[dict[str, Any]]]) -> bytes:
    payloads: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude-sonnet-4-6", "content": [],
                                              "usage": {"input_tokens": 50, "output_tokens": 1}}}
    ]
    for index, (start, deltas) in enumerate(blocks):
        payloads.append({"type": "content_block_start", "index": index, "content_block": start})
        payloads += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        payloads.append({"type": "content_block_stop", "index": index})
    payloads += [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}},
                 {"type": "message_stop"}]
    return sse(*payloads)


def test_anthropic_document_and_search_result_locations() -> None:
    char = {"type": "char_location", "cited_text": "The grass is green.", "document_index": 0,
            "document_title": "Facts", "start_char_index": 0, "end_char_index": 20}
    page = {"type": "page_location", "cited_text": "Water boils at 100 C.", "document_index": 1,
            "document_title": "Physics.pdf", "start_page_number": 3, "end_page_number": 5}
    block = {"type": "content_block_location", "cited_text": "b", "document_index": 2, "document_title": None,
             "start_block_index": 1, "end_block_index": 2}
    search = {"type": "search_result_location", "cited_text": "Use the API key.", "source": "https://docs.example/auth",
              "title": "Auth", "search_result_index": 0, "start_block_index": 0, "end_block_index": 1}
    text = {"type": "text", "text": ""}
    data = anthropic(
        (text, [{"type": "citations_delta", "citation": char}, {"type": "text_delta", "text": "Grass is green."}]),
        ({"type": "text", "text": "Water boils at 100 C.", "citations": [page]},
         [{"type": "citations_delta", "citation": block}, {"type": "citations_delta", "citation": search}]),
    )
    _, result = run(data, "anthropic")
    first, second = [b for b in result.blocks if isinstance(b, TextBlock)]
    assert first.citations == (
        Citation("document", title="Facts", cited_text="The grass is green.", location="document 0, chars 0-19"),
    )
    assert second.citations == (
        Citation("document", title="Physics.pdf", cited_text="Water boils at 100 C.", location="document 1, pages 3-4"),
        Citation("document", cited_text="b", location="document 2, blocks 1"),
        Citation("search-result", url="https://docs.example/auth", title="Auth", cited_text="Use the API key.",
                 location="search result 0, blocks 0"),
    )
    assert result.citations == first.citations + second.citations


def test_anthropic_text_without_citations_has_none() -> None:
    _, result = run(fixture_bytes("anthropic/text.sse"), "anthropic")
    assert result.citations == ()
    assert all(b.citations == () for b in result.blocks if isinstance(b, TextBlock))


# --------------------------------------------------------------------------- Responses


def test_recorded_responses_url_citations_span_their_links() -> None:
    data = fixture_bytes("openai-responses/builtin-tools/web_search_call_url_citations_gpt5nano.sse")
    _, result = run(data, "openai-responses")
    (block,) = [b for b in result.blocks if isinstance(b, TextBlock)]
    raw = [e["annotation"] for e in events(data) if e["type"] == "response.output_text.annotation.added"]
    assert len(raw) == 6
    assert block.citations == tuple(
        Citation("url", url=a["url"], title=a["title"], start=a["start_index"], end=a["end_index"]) for a in raw
    )
    for citation in block.citations:
        assert citation.start is not None and citation.end is not None and citation.url is not None
        linked = block.text[citation.start : citation.end]
        assert linked.startswith("([") and citation.url in linked


def message_events(annotations_in: str) -> bytes:
    annotation = {"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://a.example/", "title": "A"}
    part = {"type": "output_text", "text": "Hello", "annotations": [annotation]}
    item = {"type": "message", "id": "m1", "role": "assistant", "content": [part]}
    empty_part = {**part, "annotations": []}
    payloads: list[dict[str, Any]] = [
        {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "item_id": "m1", "content_index": 0, "delta": "Hello"},
        {"type": "response.output_text.done", "output_index": 0, "item_id": "m1", "content_index": 0, "text": "Hello"},
    ]
    if annotations_in != "terminal":
        payloads.append({"type": "response.content_part.done", "output_index": 0, "item_id": "m1", "content_index": 0,
                         "part": part if annotations_in == "part" else empty_part})
        payloads.append({"type": "response.output_item.done", "output_index": 0,
                         "item": item if annotations_in in ("part", "item") else {**item, "content": [empty_part]}})
    payloads.append({"type": "response.completed", "response": {"id": "r", "model": "m", "status": "completed",
                                                                "output": [item]}})
    return sse(*payloads)


@pytest.mark.parametrize("where", ["part", "terminal"])
def test_responses_annotations_given_only_in_done_events(where: str) -> None:
    _, result = run(message_events(where), "openai-responses")
    assert result.citations == (Citation("url", url="https://a.example/", title="A", start=0, end=5),)


def test_responses_file_citations() -> None:
    annotations = [
        {"type": "file_citation", "file_id": "file-1", "filename": "report.pdf", "index": 12},
        {"type": "container_file_citation", "container_id": "cntr_1", "file_id": "cfile_2", "filename": "plot.png",
         "start_index": 3, "end_index": 9},
        {"type": "file_path", "file_id": "file-3", "index": 4},
    ]
    item = {"type": "message", "id": "m1", "role": "assistant",
            "content": [{"type": "output_text", "text": "See the report.", "annotations": annotations}]}
    _, result = run(sse({"type": "response.completed", "response": {"id": "r", "model": "m", "status": "completed",
                                                                    "output": [item]}}), "openai-responses")
    assert result.citations == (
        Citation("file", title="report.pdf", location="file-1", start=12),
        Citation("file", title="plot.png", location="cntr_1/cfile_2", start=3, end=9),
        Citation("file", location="file-3", start=4),
    )


# --------------------------------------------------------------------------- Gemini


@pytest.mark.parametrize("rel", [
    "gemini/grounding_web_search.sse",
    "vertex/gemini25_flash_grounding_global.sse",
    "gemini/gemini3_flash_grounding_supports_byte_offsets_tool_use_prompt_tokens.sse",  # multibyte text
])
def test_recorded_gemini_grounding(rel: str) -> None:
    """Each support is a citation of each chunk it names; its segment's startIndex and
    endIndex are UTF-8 byte offsets into the answer (a character count would be wrong
    after a "°" or a "’"), so its span in the text block, in characters, is the passage."""
    data = fixture_bytes(rel)
    _, result = run(data, "gemini")
    last = [e for e in events(data) if e["candidates"][0].get("groundingMetadata", {}).get("groundingChunks")][-1]
    grounding = last["candidates"][0]["groundingMetadata"]
    chunks = grounding["groundingChunks"]
    encoded = result.text.encode("utf-8")
    expected = []
    for support in grounding["groundingSupports"]:
        segment = support["segment"]
        start = len(encoded[: segment.get("startIndex", 0)].decode("utf-8"))
        end = start + len(encoded[segment.get("startIndex", 0) : segment["endIndex"]].decode("utf-8"))
        for i in support["groundingChunkIndices"]:
            expected.append(Citation("url", url=chunks[i]["web"]["uri"], title=chunks[i]["web"]["title"],
                                     cited_text=segment["text"], start=start, end=end))
    assert list(result.citations) == expected and expected
    for citation in result.citations:
        assert citation.start is not None and result.text[citation.start : citation.end] == citation.cited_text
    if "byte_offsets" in rel:  # the byte offsets differ from the character ones here
        assert any(len(result.text[: c.start].encode("utf-8")) != c.start for c in result.citations if c.start)


def test_gemini_grounding_offsets_that_miss_the_passage_are_not_kept() -> None:
    grounding = {
        "groundingChunks": [{"web": {"uri": "https://a.example/", "title": "a"}}],
        "groundingSupports": [
            {"segment": {"endIndex": 5, "text": "Paris"}, "groundingChunkIndices": [0]},  # start 0 left out
            {"segment": {"startIndex": 3, "endIndex": 9, "text": "Paris"}, "groundingChunkIndices": [0]},
            {"segment": {"startIndex": 7, "endIndex": 8, "text": "é"}, "groundingChunkIndices": [0]},  # mid-character
        ],
    }
    data = gemini(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Paris é"}]}, "finishReason": "STOP",
                         "groundingMetadata": grounding}]},
    )
    _, result = run(data, "gemini")
    assert [(c.start, c.end) for c in result.citations] == [(0, 5), (None, None), (None, None)]


def gemini(*responses: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(r)}\r\n\r\n".encode() for r in responses)


def test_gemini_grounding_without_supports_cites_each_chunk() -> None:
    grounding = {"groundingChunks": [
        {"retrievedContext": {"uri": "gs://bucket/a.pdf", "title": "a.pdf", "text": "Refunds take 5 days."}},
        {"web": {"uri": "https://b.example/", "title": "b.example"}},
    ]}
    data = gemini(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "Refunds take five days."}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
                         "groundingMetadata": grounding}]},
    )
    _, result = run(data, "gemini")
    assert result.citations == (
        Citation("document", url="gs://bucket/a.pdf", title="a.pdf", cited_text="Refunds take 5 days."),
        Citation("url", url="https://b.example/", title="b.example"),
    )


# --------------------------------------------------------------------------- OpenRouter


def test_openrouter_url_citation_annotations() -> None:
    annotation = {"type": "url_citation", "url_citation": {
        "url": "https://news.example/a", "title": "A headline", "content": "The quoted passage.",
        "start_index": 0, "end_index": 9}}
    base = {"id": "gen-1", "model": "openai/gpt-4o:online", "object": "chat.completion.chunk"}
    data = data_only(
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Headlines today."}}]},
        {**base, "choices": [{"index": 0, "delta": {"content": "", "annotations": [annotation]}}]},
        {**base, "choices": [{"index": 0, "delta": {"annotations": [annotation]}, "finish_reason": "stop"}]},
        done=True,
    )
    chunks, result = run(data, "openrouter")
    assert result.citations == (
        Citation("url", url="https://news.example/a", title="A headline", cited_text="The quoted passage.",
                 start=0, end=9),
    )
    assert result.text == "Headlines today."
    assert sum(isinstance(c, TextDelta) for c in chunks) == 1


# --------------------------------------------------------------------------- Perplexity

PERPLEXITY = "perplexity/sonar_search_results_cost_done_object.sse"


def test_recorded_perplexity_search_results_are_the_answers_sources_in_order() -> None:
    data = fixture_bytes(PERPLEXITY)
    first = events(data.replace(b"\r\n", b"\n"))[0]
    results, urls = first["search_results"], first["citations"]
    assert len(results) == 8 and [r["url"] for r in results] == urls
    _, result = run(data, "perplexity")
    # one citation per search result, in the order sent: the answer's [n] is the n-th
    assert result.citations == tuple(
        Citation("url", url=r["url"], title=r["title"], cited_text=r["snippet"]) for r in results
    )
    assert result.text == "1 2 3" and result.finish.raw == "stop"
    assert result.usage is not None and result.usage.cost == 0.00501  # the cost object's total_cost


def test_recorded_perplexity_citations_alone_are_urls() -> None:
    # before search_results (2026-02): URLs only, read the same way, in the order sent
    data = fixture_bytes("perplexity/sonar_citations_urls_only_shortened.sse")
    urls = events(data)[0]["citations"]
    _, result = run(data, "perplexity")
    assert result.citations == tuple(Citation("url", url=url) for url in urls) and len(urls) == 7
    assert "[2]" in result.text and result.finish.raw == "stop"


def test_perplexity_sources_read_again_when_the_list_grows() -> None:
    one = {"title": "One", "url": "https://one.example/", "snippet": "first"}
    two = {"title": "Two", "url": "https://two.example/"}
    base = {"id": "p1", "model": "sonar", "object": "chat.completion.chunk"}
    data = data_only(
        {**base, "search_results": [one], "choices": [{"index": 0, "delta": {"content": "A [1]"}}]},
        {**base, "search_results": [one], "choices": [{"index": 0, "delta": {"content": " B [2]."}}]},
        {**base, "search_results": [one, two], "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    _, result = run(data, "perplexity")
    assert result.citations == (
        Citation("url", url="https://one.example/", title="One", cited_text="first"),
        Citation("url", url="https://two.example/", title="Two"),
    )


def test_perplexity_route_streams_its_sources_over_http() -> None:
    from dshstream import GenerateOptions, LlmService, Message, OpenAIChatAdapter
    from dshstream.testing import ReplayServer

    with ReplayServer({"/chat/completions": fixture_bytes(PERPLEXITY)}) as server:
        adapter = OpenAIChatAdapter(dialect="perplexity", base_url=server.url, api_key="pplx-test")
        assert adapter.wire.models_url() == f"{server.url}/v1/models"
        service = LlmService()
        service.register_adapter(["perplexity"], adapter)
        options = GenerateOptions(provider="perplexity", model="sonar", messages=(Message.user("Count from 1 to 3"),))
        with service.stream(options) as stream:
            result = stream.result()
    assert result.text == "1 2 3" and len(result.citations) == 8
    assert result.usage is not None and result.usage.cost == 0.00501


# --------------------------------------------------------------------------- the block and its display

CITED = TextBlock(
    "Paris is the capital.",
    (
        Citation("url", url="https://en.wikipedia.org/wiki/Paris", title="Paris - Wikipedia", start=0, end=5),
        Citation("url", url="https://en.wikipedia.org/wiki/Paris", title="Paris - Wikipedia", start=6, end=20),
        Citation("document", title="atlas.pdf", cited_text="Paris, capital of France", location="document 0, page 3"),
    ),
)


def test_citations_round_trip_through_json() -> None:
    end = BlockEnd(index=0, block=CITED)
    data = chunk_to_dict(end)
    assert data["block"]["citations"][0] == {"kind": "url", "url": "https://en.wikipedia.org/wiki/Paris",
                                             "title": "Paris - Wikipedia", "start": 0, "end": 5}
    assert chunk_from_dict(json.loads(json.dumps(data))) == end
    assert chunk_to_dict(BlockEnd(index=0, block=TextBlock("x"))) == {
        "type": "block-end", "index": 0, "block": {"type": "text", "text": "x"}}
    assert TextBlock("x") == TextBlock("x", ())


def cited_stream() -> list[StreamChunk]:
    return [
        TextDelta(0, "Paris is the capital."),
        BlockEnd(0, CITED),
        Finish(reason=FinishReason(kind="stop")),
    ]


def test_the_cli_lists_sources_under_the_answer() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = TextRenderer(out, err)
    for chunk in cited_stream():
        renderer.feed(chunk)
    lines = out.getvalue().splitlines()
    assert lines == [
        "Paris is the capital.",
        "sources:",
        "  [1] Paris - Wikipedia — https://en.wikipedia.org/wiki/Paris",
        "  [2] atlas.pdf — document 0, page 3",
        "finish: stop",
    ]


def test_describe_source_without_title_or_url() -> None:
    assert describe_source(Citation("url", url="https://x.example/")) == "https://x.example/"
    assert describe_source(Citation("document", location="document 2, chars 0-9")) == "document 2, chars 0-9"
    assert describe_source(Citation("file")) == "file"


def test_the_notebook_lists_sources_as_links() -> None:
    view = MarkdownView()
    for chunk in cited_stream():
        view.feed(chunk)
    rendered = view.render()
    answer, sources = rendered.split("\n\n")[:2], rendered.split("**Sources**\n\n")[1]
    assert answer[0] == "Paris is the capital."
    assert sources.splitlines()[:2] == [
        "1. [Paris - Wikipedia](https://en.wikipedia.org/wiki/Paris)",
        "2. atlas.pdf — document 0, page 3",
    ]
