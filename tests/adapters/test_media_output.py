"""Files the model produces — Gemini ``inlineData`` images, Responses
``image_generation_call`` results — are delivered as file blocks, not dropped: the chunk
stream, the contract, the assembler, serialization, replay in the next request, the
terminal and notebook views; and the command line's ``--attach``."""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_key
from adapters.test_media_requests import assert_gemini_content
from core.test_parts import PDF, PNG, WEBP

from dshstream import ConfigurationError, FileBlock, Message
from dshstream._adapters.gemini import GeminiAdapter
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._cli import main
from dshstream._core.assembler import AssembledResponse, BlockAssembler, assemble
from dshstream._core.contract import check_contract
from dshstream._core.decode import decode
from dshstream._core.errors import ProtocolError
from dshstream._core.request import GenerateOptions
from dshstream._core.types import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    StreamChunk,
    TextBlock,
    TextDelta,
    block_from_dict,
    block_to_dict,
    chunk_from_dict,
    chunk_to_dict,
)
from dshstream._notebook import MarkdownView
from dshstream._render import TextRenderer
from dshstream._replay_server import ReplayServer


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def run(data: bytes, wire: str) -> tuple[list[StreamChunk], AssembledResponse]:
    chunks = list(check_contract(decode(data, wire=wire)))
    return chunks, assemble(chunks)


# --------------------------------------------------------------------------- Gemini


def gemini_sse(*responses: dict[str, Any]) -> bytes:
    return b"".join(f"data: {json.dumps(r)}\r\n\r\n".encode() for r in responses)


def candidate(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if finish:
        cand["finishReason"] = finish
    return {"candidates": [cand], "modelVersion": "gemini-2.5-flash-image", "responseId": "r1"}


DRAFT = {"inlineData": {"mimeType": "image/png", "data": b64(PNG + b"draft")}, "thought": True}
IMAGE = {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}}
GEMINI_IMAGE_STREAM = gemini_sse(
    candidate({"text": "Here is "}, {"text": "your cat:"}),
    candidate(DRAFT),
    candidate(IMAGE),
    candidate({"text": "Enjoy!"}, finish="STOP"),
    {"usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1290}, "modelVersion": "gemini-2.5-flash-image"},
)


def test_gemini_inline_data_is_a_file_block_between_the_text_blocks() -> None:
    chunks, result = run(GEMINI_IMAGE_STREAM, "gemini")
    starts = [c for c in chunks if isinstance(c, BlockStart)]
    assert [(s.index, s.block_type) for s in starts] == [(0, "text"), (1, "file"), (2, "text")]
    file_start = chunks.index(starts[1])
    assert chunks[file_start + 1] == BlockEnd(1, FileBlock("image/png", PNG))  # whole, at once
    assert result.finish.kind == "stop" and result.text == "Here is your cat:Enjoy!"
    assert result.files == (FileBlock("image/png", PNG),)  # the thought draft is not delivered
    assert [type(b).__name__ for b in result.blocks] == ["TextBlock", "FileBlock", "TextBlock"]
    parts = result.replay_state["parts"]
    assert DRAFT in parts and IMAGE in parts  # both kept for replay, in order
    assert parts.index(DRAFT) < parts.index(IMAGE)


def test_gemini_inline_data_that_is_not_base64_is_kept_for_replay_only() -> None:
    broken = {"inlineData": {"mimeType": "image/png", "data": "%%% not base64 %%%"}}
    _, result = run(gemini_sse(candidate({"text": "x"}, broken, finish="STOP")), "gemini")
    assert result.files == () and broken in result.replay_state["parts"]


def test_gemini_without_a_mime_type_sniffs_the_bytes() -> None:
    _, result = run(gemini_sse(candidate({"inlineData": {"data": b64(WEBP)}}, finish="STOP")), "gemini")
    assert result.files == (FileBlock("image/webp", WEBP),) and result.ok


def test_gemini_replays_the_image_in_the_model_turn() -> None:
    _, result = run(GEMINI_IMAGE_STREAM, "gemini")
    adapter = GeminiAdapter(api_key=fake_key("AIzaSy", 33))
    history = [Message.user("Draw a cat"), result.message(), Message.user("Make it blue")]
    contents = adapter.wire.build_contents(history)
    assert contents[1]["role"] == "model" and IMAGE in contents[1]["parts"] and DRAFT in contents[1]["parts"]
    for content in contents:
        assert_gemini_content(content)
    # history written by hand (no replay state): the file block goes back as inlineData
    by_hand = Message.assistant([TextBlock("Here:"), FileBlock("image/png", PNG)])
    rebuilt = adapter.wire.build_contents([Message.user("Draw"), by_hand])[1]
    assert rebuilt == {"role": "model", "parts": [{"text": "Here:"}, IMAGE]}
    assert_gemini_content(rebuilt)


# --------------------------------------------------------------------------- Responses


def responses_sse(*payloads: dict[str, Any]) -> bytes:
    return b"".join(f"event: {p['type']}\ndata: {json.dumps(p)}\n\n".encode() for p in payloads)


def image_call(result: bytes | None, **fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "image_generation_call", "id": "ig_1", "status": "completed" if result else "in_progress"}
    if result is not None:
        item["result"] = b64(result)
    return {**item, **fields}


MESSAGE = {
    "type": "message",
    "id": "msg_1",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "Here it is.", "annotations": []}],
}


def responses_image_stream(done: dict[str, Any]) -> bytes:
    return responses_sse(
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-5"}},
        {"type": "response.output_item.added", "output_index": 0, "item": image_call(None)},
        {"type": "response.image_generation_call.partial_image", "output_index": 0, "partial_image_b64": b64(b"partial")},
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.output_item.added", "output_index": 1, "item": {**MESSAGE, "content": []}},
        {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Here it is."},
        {"type": "response.output_item.done", "output_index": 1, "item": MESSAGE},
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "model": "gpt-5", "status": "completed", "output": [done, MESSAGE],
                         "usage": {"input_tokens": 10, "output_tokens": 50}},
        },
    )


def test_a_generated_image_is_delivered_once_and_replayed_by_item() -> None:
    done = image_call(PNG, output_format="png", revised_prompt="a cat")
    chunks, result = run(responses_image_stream(done), "openai-responses")
    assert [c.block_type for c in chunks if isinstance(c, BlockStart)] == ["file", "text"]
    assert result.files == (FileBlock("image/png", PNG),)  # not twice (item done + terminal output)
    assert result.text == "Here it is." and result.finish.kind == "stop"
    assert result.metadata is not None and result.metadata.server_tools[0]["type"] == "image_generation_call"
    adapter = OpenAIResponsesAdapter(api_key="sk-loopback-0123456789abcdef")
    options = GenerateOptions(provider="openai", model="gpt-5", messages=(Message.user("Draw a cat"), result.message(), Message.user("Bluer")))
    items = adapter.wire.build_body(options)["input"]
    assert items[1] == done and items[2]["type"] == "message"  # verbatim, in output order


@pytest.mark.parametrize(
    ("data", "output_format", "media_type"),
    [
        (PNG, "webp", "image/png"),  # the bytes win over the declared format
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>", "svg", "image/svg+xml"),
        (b"\x00\x01 unknown", None, "image/png"),  # the tool's default format
    ],
)
def test_a_generated_image_gets_its_media_type(data: bytes, output_format: str | None, media_type: str) -> None:
    fields = {"output_format": output_format} if output_format else {}
    _, result = run(responses_image_stream(image_call(data, **fields)), "openai-responses")
    assert result.files == (FileBlock(media_type, data),)


def test_a_generated_image_whose_data_does_not_decode_is_flagged_not_dropped() -> None:
    lost = {**image_call(None), "status": "completed", "result": "%%% not base64 %%%", "output_format": "png"}
    data = responses_image_stream(lost)
    for pieces in ([data], [data[i:i + 1] for i in range(len(data))]):  # whole, and byte by byte
        result = assemble(list(check_contract(decode(pieces, wire="openai-responses"))))
        assert result.files == () and result.text == "Here it is." and result.finish.kind == "stop"
        assert result.metadata is not None
        (tool,) = result.metadata.server_tools
        assert tool["type"] == "image_generation_call" and tool["id"] == "ig_1"
        assert tool["image_lost"] == "the result is not base64 image data"
    # one that decodes is not flagged; one still in progress (no result) is not lost
    for item in (image_call(PNG), image_call(None)):
        _, result = run(responses_image_stream(item), "openai-responses")
        assert result.metadata is not None and "image_lost" not in result.metadata.server_tools[0]


# --------------------------------------------------------------------------- the block


def test_file_blocks_round_trip_through_json_and_never_print_their_bytes() -> None:
    block = FileBlock("image/png", PNG + b"SECRETPIXELS", name="cat.png")
    assert "SECRETPIXELS" not in repr(block) and "iVBOR" not in repr(block)
    assert repr(block) == f"FileBlock(media_type='image/png', size={len(PNG) + 12} B, name='cat.png')"
    as_dict = block_to_dict(block)
    assert as_dict == {"type": "file", "media_type": "image/png", "data": b64(PNG + b"SECRETPIXELS"), "name": "cat.png"}
    assert block_from_dict(json.loads(json.dumps(as_dict))) == block
    chunk = BlockEnd(3, FileBlock("application/pdf", PDF))
    assert chunk_from_dict(json.loads(json.dumps(chunk_to_dict(chunk)))) == chunk
    assert chunk_from_dict(chunk_to_dict(BlockStart(3, "file"))) == BlockStart(3, "file")
    with pytest.raises(ValueError, match="not base64"):
        block_from_dict({"type": "file", "media_type": "image/png", "data": "!!"})


def test_the_contract_and_the_assembler_know_file_blocks() -> None:
    finish = Finish(FinishReason("stop"))
    good: list[StreamChunk] = [BlockStart(0, "file"), BlockEnd(0, FileBlock("image/png", PNG)), finish]
    assert list(check_contract(good)) == good
    for bad in (FileBlock("image/png", b""), FileBlock("", PNG)):
        with pytest.raises(ProtocolError, match=r"file block 0 without a media type or bytes"):
            list(check_contract([BlockStart(0, "file"), BlockEnd(0, bad), finish]))
    with pytest.raises(ProtocolError, match=r"BlockEnd of type 'file' for a 'text' block"):
        list(check_contract([BlockStart(0, "text"), BlockEnd(0, FileBlock("image/png", PNG)), finish]))
    assembler = BlockAssembler()
    assembler.extend([BlockStart(0, "text"), TextDelta(0, "hi"), BlockStart(1, "file")])  # cut before its end
    assert assembler.result().blocks == (TextBlock("hi"),)
    assert assemble(good).message().blocks == (FileBlock("image/png", PNG),)


def test_the_terminal_shows_type_and_size_and_the_notebook_shows_the_image() -> None:
    out, err = io.StringIO(), io.StringIO()
    renderer = TextRenderer(out, err)
    view = MarkdownView()
    for chunk in decode(GEMINI_IMAGE_STREAM, wire="gemini"):
        renderer.feed(chunk)
        view.feed(chunk)
    renderer.close()
    assert f"[image/png, {len(PNG)} B]\n" in out.getvalue() and "iVBOR" not in out.getvalue()
    page = view.render()
    assert f'<img src="data:image/png;base64,{b64(PNG)}" alt="image/png, {len(PNG)} B"' in page
    assert page.index("Here is your cat:Enjoy!") < page.index("<img")  # the answer, then its images
    pdf_view = MarkdownView()
    pdf_view.feed(BlockEnd(0, FileBlock("application/pdf", PDF, name="report.pdf")))
    assert pdf_view.render() == f"*[application/pdf, {len(PDF)} B, report.pdf]*"


# --------------------------------------------------------------------------- command line


def chat(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    monkeypatch.setenv("NO_COLOR", "1")
    code = main(["chat", "-p", "local", "-m", "vision-model", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_attach_sends_each_file_as_its_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers import fixture_bytes

    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    with ReplayServer({"/v1/": fixture_bytes("openai/text_include_usage.sse")}) as server:
        code, out, err = chat(
            capsys, monkeypatch, "--base-url", f"{server.url}/v1", "--attach", str(tmp_path / "cat.png"),
            "--attach", str(tmp_path / "report.pdf"), "What", "is", "this?",
        )
        assert code == 0, err
        content = server.requests[-1].body["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
    ]


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("missing.png", None, r"error: --attach .*missing.png: No such file or directory"),
        ("blob.xyz", b"\x00\x01\x02", r"error: --attach .*blob.xyz: MediaPart.from_path: cannot tell the media type"),
        ("song.flac", b"fLaC" + b"\x00" * 40, r"error: .*OpenAI chat completions does not take audio/flac audios"),
    ],
)
def test_cli_attach_problems_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str, data: bytes | None, message: str
) -> None:
    if data is not None:
        (tmp_path / name).write_bytes(data)
    with ReplayServer({"/v1/": b""}) as server:
        code, _, err = chat(capsys, monkeypatch, "--base-url", f"{server.url}/v1", "--attach", str(tmp_path / name), "Hi")
        assert server.requests == []
    assert code == 2
    assert re.search(message, err), err
    assert "iVBOR" not in err and "Traceback" not in err


def test_cli_replay_shows_a_generated_image(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    path = tmp_path / "image.sse"
    path.write_bytes(GEMINI_IMAGE_STREAM)
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"your cat:\n[image/png, {len(PNG)} B]\nEnjoy!" in out
    assert main(["replay", str(path), "--format", "jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    files = [line["block"] for line in lines if line["type"] == "block-end" and line["block"]["type"] == "file"]
    assert files == [{"type": "file", "media_type": "image/png", "data": b64(PNG)}]


def test_a_config_error_names_the_part_not_its_bytes() -> None:
    from dshstream import AudioPart
    from dshstream._adapters.anthropic import AnthropicAdapter

    wav = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 40
    options = GenerateOptions(provider="anthropic", model="claude-sonnet-4-5", messages=(Message.user("hear", AudioPart.from_bytes(wav, name="memo.wav")),))
    with pytest.raises(ConfigurationError) as caught:
        AnthropicAdapter(api_key="loopback-key-0123456789abcdef").build_request(options)
    assert str(caught.value.failure.message) == (
        "messages[0].content[1]: Anthropic Messages does not take audio parts (AudioPart: audio/wav, 56 B, 'memo.wav')"
    )

