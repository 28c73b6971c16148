"""Media parts on the wire: every provider's request body, captured by a loopback server,
checked against the provider's published schema for every part type it takes — the
official SDKs' request types (openai-python, anthropic-sdk-python, validated with
pydantic), botocore's Bedrock service model, and the Gemini REST reference — and parts a
provider cannot take refused before anything is sent."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from helpers import fake_key, fixture_bytes
from core.test_parts import MP3, PDF, PNG, WAV, WEBP

from dshstream import (
    AudioPart,
    ConfigurationError,
    DocumentPart,
    ImagePart,
    MediaPart,
    Message,
)
from dshstream._adapters.anthropic import AnthropicAdapter
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.custom import CustomAdapter
from dshstream._adapters.gemini import GeminiAdapter
from dshstream._adapters.http import HttpAdapter
from dshstream._adapters.openai_chat import OpenAIChatAdapter, OpenAIChatWire
from dshstream._adapters.openai_responses import OpenAIResponsesAdapter
from dshstream._core.request import GenerateOptions
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService

pydantic = pytest.importorskip("pydantic")
KEY = "sk-loopback-media-0123456789abcdef"  # CANARY: a fake key for the test
EVENTSTREAM = "application/vnd.amazon.eventstream"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _materialize(value: Any) -> Any:
    """pydantic validates ``Iterable`` fields lazily: walk them so every entry is checked."""
    if isinstance(value, dict):
        return {k: _materialize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_materialize(v) for v in value]
    if hasattr(value, "__next__"):
        return [_materialize(v) for v in value]
    return value


def assert_matches_sdk_type(value: Any, sdk_type: Any) -> None:
    """``value`` validates against the SDK's TypedDict and has no key the type lacks
    (pydantic drops unknown TypedDict keys, so the round trip must be exact)."""
    adapter = pydantic.TypeAdapter(sdk_type)  # alive while its lazy iterators run
    validated = _materialize(adapter.validate_python(copy.deepcopy(value)))
    assert validated == value


def run(server: ReplayServer, adapter: HttpAdapter, provider: str, model: str, *messages: Message) -> dict[str, Any]:
    """Stream one request through ``adapter`` on loopback; the body the server received."""
    service = LlmService(check_contract=True)
    service.register_adapter([provider], adapter)
    result = service.stream(GenerateOptions(provider=provider, model=model, messages=messages)).result()
    assert result.ok, result.failure
    assert len(server.requests) == 1
    body: dict[str, Any] = server.requests[0].body
    return body


def refused_without_sending(server: ReplayServer, adapter: HttpAdapter, provider: str, part: MediaPart, message: str) -> None:
    """The part is refused at build time (``ConfigurationError``), and through the service
    as an ``INVALID_OPTIONS`` finish; the server hears nothing."""
    options = GenerateOptions(provider=provider, model="m", messages=(Message.user("Look:", part),))
    with pytest.raises(ConfigurationError, match=message):
        adapter.build_request(options)
    service = LlmService()
    service.register_adapter([provider], adapter)
    result = service.stream(options).result()
    assert result.failure is not None and result.failure.code == "INVALID_OPTIONS"
    assert "Look:" not in result.failure.message and "iVBOR" not in result.failure.message
    assert server.requests == []


# --------------------------------------------------------------------------- OpenAI chat


def test_openai_chat_sends_every_part_type_as_the_sdk_types_it(server: ReplayServer) -> None:
    from openai.types.chat import ChatCompletionUserMessageParam

    server.add("/chat/completions", fixture_bytes("openai/text_include_usage.sse"))
    adapter = OpenAIChatAdapter(api_key=KEY, base_url=server.url)
    message = Message.user(
        "What is in these?",
        ImagePart.from_bytes(PNG),
        ImagePart.from_url("https://example.com/cat.webp"),
        AudioPart.from_bytes(WAV),
        AudioPart.from_bytes(MP3),
        DocumentPart.from_bytes(PDF, name="report.pdf"),
        "Answer briefly.",
    )
    body = run(server, adapter, "openai", "gpt-4o", Message.system("Be terse."), message)
    user = body["messages"][1]
    assert_matches_sdk_type(user, ChatCompletionUserMessageParam)
    assert user["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.webp"}},
        {"type": "input_audio", "input_audio": {"data": b64(WAV), "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": b64(MP3), "format": "mp3"}},
        {"type": "file", "file": {"filename": "report.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"}},
        {"type": "text", "text": "Answer briefly."},
    ]
    assert body["messages"][0] == {"role": "system", "content": "Be terse."}  # text-only turns unchanged


def test_a_custom_openai_compatible_endpoint_takes_images_the_same_way(server: ReplayServer) -> None:
    from openai.types.chat import ChatCompletionUserMessageParam

    server.add("/chat/completions", fixture_bytes("openai/text_include_usage.sse"))
    adapter = CustomAdapter(api_key=KEY, base_url=server.url)
    body = run(server, adapter, "local", "qwen-vl", Message.user("Describe.", ImagePart.from_bytes(WEBP)))
    assert_matches_sdk_type(body["messages"][0], ChatCompletionUserMessageParam)
    assert body["messages"][0]["content"][1] == {"type": "image_url", "image_url": {"url": f"data:image/webp;base64,{b64(WEBP)}"}}


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (AudioPart.from_url("https://example.com/a.mp3"), r"OpenAI chat completions takes no URLs, only bytes for audio parts"),
        (AudioPart.from_bytes(b"fLaC" + b"\x00" * 40), r"does not take audio/flac audios"),
        (ImagePart.from_bytes(b"\x00\x00\x00\x18ftypheic" + b"\x00" * 20), r"does not take image/heic images"),
    ],
)
def test_openai_chat_refuses_before_sending(server: ReplayServer, part: MediaPart, message: str) -> None:
    refused_without_sending(server, OpenAIChatAdapter(api_key=KEY, base_url=server.url), "openai", part, message)


# --------------------------------------------------------------------------- OpenAI Responses


def test_openai_responses_sends_images_and_files_as_the_sdk_types_them(server: ReplayServer) -> None:
    from openai.types.responses import EasyInputMessageParam

    server.add("/responses", fixture_bytes("openai-responses/text.sse"))
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=server.url)
    message = Message.user(
        "Compare:",
        ImagePart.from_bytes(PNG),
        ImagePart.from_url("https://example.com/a.jpg"),
        DocumentPart.from_bytes(PDF),
        DocumentPart.from_url("https://example.com/paper.pdf"),
    )
    body = run(server, adapter, "openai", "gpt-5", message)
    item = body["input"][0]
    assert_matches_sdk_type(item, EasyInputMessageParam)
    assert item["content"] == [
        {"type": "input_text", "text": "Compare:"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{b64(PNG)}", "detail": "auto"},
        {"type": "input_image", "image_url": "https://example.com/a.jpg", "detail": "auto"},
        {"type": "input_file", "filename": "document.pdf", "file_data": f"data:application/pdf;base64,{b64(PDF)}"},
        {"type": "input_file", "file_url": "https://example.com/paper.pdf"},
    ]


def test_openai_responses_refuses_audio(server: ReplayServer) -> None:
    adapter = OpenAIResponsesAdapter(api_key=KEY, base_url=server.url)
    refused_without_sending(server, adapter, "openai", AudioPart.from_bytes(WAV), r"OpenAI Responses does not take audio parts")


# --------------------------------------------------------------------------- Anthropic


def test_anthropic_sends_images_and_documents_as_the_sdk_types_them(server: ReplayServer) -> None:
    from anthropic.types import MessageParam

    server.add("/v1/messages", fixture_bytes("anthropic/text.sse"))
    adapter = AnthropicAdapter(api_key=KEY, base_url=server.url)
    message = Message.user(
        "Read these.",
        ImagePart.from_bytes(PNG),
        ImagePart.from_url("https://example.com/chart.gif"),
        DocumentPart.from_bytes(PDF, name="Q3 report.pdf"),
        DocumentPart.from_url("https://example.com/paper.pdf"),
        DocumentPart.from_bytes("# Notes\n\nÜber alles.".encode(), "text/markdown", name="notes.md"),
    )
    body = run(server, adapter, "anthropic", "claude-sonnet-4-5", message, Message.tool_result("t1", "ok"))
    user = body["messages"][0]
    assert_matches_sdk_type(user, MessageParam)
    assert user["content"][:6] == [
        {"type": "text", "text": "Read these."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(PNG)}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/chart.gif"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)}, "title": "Q3 report.pdf"},
        {"type": "document", "source": {"type": "url", "url": "https://example.com/paper.pdf"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "# Notes\n\nÜber alles."}, "title": "notes.md"},
    ]
    assert user["content"][6]["type"] == "tool_result"  # the following tool turn merged in, in order


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (AudioPart.from_bytes(WAV), r"Anthropic Messages does not take audio parts"),
        (DocumentPart.from_bytes(b"\xff\xfe bad", "text/plain"), r"takes text documents as UTF-8"),
        (ImagePart.from_bytes(PNG + b"\x00" * (4 * 1024 * 1024)), r"image parts of at most 5.0 MB base64-encoded"),
    ],
)
def test_anthropic_refuses_before_sending(server: ReplayServer, part: MediaPart, message: str) -> None:
    refused_without_sending(server, AnthropicAdapter(api_key=KEY, base_url=server.url), "anthropic", part, message)


# --------------------------------------------------------------------------- Gemini

_GEMINI_DATA_FIELDS = {"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"}
_GEMINI_PART_FLAGS = {"thought", "thoughtSignature", "videoMetadata", "partMetadata"}


def assert_gemini_content(content: dict[str, Any]) -> None:
    """A ``Content`` per the Gemini REST reference: ``role`` and ``parts``; each ``Part``
    holds exactly one data field; ``Blob`` is ``{mimeType, data}`` (base64),
    ``FileData`` is ``{mimeType, fileUri}``."""
    assert set(content) == {"role", "parts"} and content["role"] in ("user", "model")
    for part in content["parts"]:
        data_fields = set(part) & _GEMINI_DATA_FIELDS
        assert len(data_fields) == 1 and set(part) <= _GEMINI_DATA_FIELDS | _GEMINI_PART_FLAGS, part
        if "inlineData" in part:
            blob = part["inlineData"]
            assert set(blob) == {"mimeType", "data"} and "/" in blob["mimeType"]
            assert base64.b64decode(blob["data"], validate=True)
        if "fileData" in part:
            assert set(part["fileData"]) == {"mimeType", "fileUri"}


def test_gemini_sends_inline_data_and_file_data_per_the_rest_reference(server: ReplayServer) -> None:
    server.add("/v1beta/models/", fixture_bytes("gemini/text.sse"))
    adapter = GeminiAdapter(api_key=fake_key("AIzaSy", 33), base_url=server.url)
    message = Message.user(
        "Summarize all of it.",
        ImagePart.from_bytes(PNG),
        ImagePart.from_url("gs://bucket/photo.jpeg"),
        DocumentPart.from_bytes(PDF),
        DocumentPart.from_bytes(b"# x", "text/markdown"),
        AudioPart.from_bytes(MP3),
        AudioPart.from_url("https://generativelanguage.googleapis.com/v1beta/files/abc", "audio/wav"),
    )
    body = run(server, adapter, "gemini", "gemini-2.5-flash", message)
    content = body["contents"][0]
    assert_gemini_content(content)
    assert content["parts"] == [
        {"text": "Summarize all of it."},
        {"inlineData": {"mimeType": "image/png", "data": b64(PNG)}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://bucket/photo.jpeg"}},
        {"inlineData": {"mimeType": "application/pdf", "data": b64(PDF)}},
        {"inlineData": {"mimeType": "text/md", "data": b64(b"# x")}},
        {"inlineData": {"mimeType": "audio/mp3", "data": b64(MP3)}},
        {"fileData": {"mimeType": "audio/wav", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
    ]


def test_gemini_failure_diagnostics_show_media_types_and_sizes_only(server: ReplayServer) -> None:
    server.add("/v1beta/models/", Route(body=b'{"error": {"code": 400, "message": "bad image", "status": "INVALID_ARGUMENT"}}', status=400, content_type="application/json"))
    adapter = GeminiAdapter(api_key=fake_key("AIzaSy", 33), base_url=server.url, max_retries=0)
    service = LlmService()
    service.register_adapter(["gemini"], adapter)
    options = GenerateOptions(provider="gemini", model="gemini-2.5-flash", messages=(Message.user("x", ImagePart.from_bytes(PNG)),))
    failure = service.stream(options).result().failure
    assert failure is not None and failure.diagnostics is not None
    assert failure.diagnostics["attachments"] == [{"kind": "image", "media_type": "image/png", "size": len(PNG)}]
    assert failure.diagnostics["final_turn_parts"] == {"text": 1, "inlineData": 1}
    assert b64(PNG) not in repr(failure)


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (ImagePart.from_url("https://example.com/render"), r"Gemini needs the media type of a URL part"),
        (DocumentPart.from_bytes(b"PK\x03\x04", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"), r"Gemini does not take application/vnd"),
    ],
)
def test_gemini_refuses_before_sending(server: ReplayServer, part: MediaPart, message: str) -> None:
    adapter = GeminiAdapter(api_key=fake_key("AIzaSy", 33), base_url=server.url)
    refused_without_sending(server, adapter, "gemini", part, message)


# --------------------------------------------------------------------------- Bedrock


def bedrock(server: ReplayServer, **settings: Any) -> BedrockAdapter:
    return BedrockAdapter(region="us-east-1", api_key="bedrock-api-key-loopback-0123456789", base_url=server.url, **settings)


def _blobs_to_bytes(value: Any) -> Any:
    """The REST JSON spelling of a blob is base64 text; botocore's validator wants bytes."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v) if k == "bytes" and isinstance(v, str) else _blobs_to_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blobs_to_bytes(v) for v in value]
    return value


def assert_converse_request(body: dict[str, Any], model: str) -> None:
    """``body`` is a valid ConverseStream input per botocore's service model (unknown keys,
    wrong enum values, missing required members and bad document names all fail)."""
    session = pytest.importorskip("botocore.session")
    validate = pytest.importorskip("botocore.validate")
    service = session.get_session().get_service_model("bedrock-runtime")
    shape = service.operation_model("ConverseStream").input_shape
    report = validate.ParamValidator().validate({"modelId": model, **_blobs_to_bytes(body)}, shape)
    assert not report.has_errors(), report.generate_report()


def test_bedrock_converse_sends_image_document_and_audio_blocks_per_the_service_model(server: ReplayServer) -> None:
    server.add("/model/", Route(body=fixture_bytes("bedrock/nova_micro_text.eventstream"), content_type=EVENTSTREAM))
    message = Message.user(
        "What do these say?",
        ImagePart.from_bytes(PNG),
        ImagePart.from_url("s3://my-bucket/scan.webp"),
        DocumentPart.from_bytes(PDF, name="Q3 report.final.pdf"),
        DocumentPart.from_bytes(b"a,b\n1,2\n", "text/csv", name="Q3 report.final.csv"),
        AudioPart.from_bytes(MP3),
    )
    model = "us.amazon.nova-lite-v1:0"
    body = run(server, bedrock(server), "bedrock", model, message)
    assert_converse_request(body, model)
    assert body["messages"][0]["content"] == [
        {"text": "What do these say?"},
        {"image": {"format": "png", "source": {"bytes": b64(PNG)}}},
        {"image": {"format": "webp", "source": {"s3Location": {"uri": "s3://my-bucket/scan.webp"}}}},
        {"document": {"format": "pdf", "name": "Q3 report-final", "source": {"bytes": b64(PDF)}}},
        {"document": {"format": "csv", "name": "Q3 report-final (2)", "source": {"bytes": b64(b"a,b\n1,2\n")}}},
        {"audio": {"format": "mp3", "source": {"bytes": b64(MP3)}}},
    ]


def test_bedrock_invoke_sends_claude_the_anthropic_blocks(server: ReplayServer) -> None:
    from anthropic.types import MessageParam

    server.add("/model/", Route(body=fixture_bytes("bedrock/invoke_claude3_sonnet_messages.eventstream"), content_type=EVENTSTREAM))
    message = Message.user("Read.", ImagePart.from_bytes(PNG), DocumentPart.from_bytes(PDF))
    body = run(server, bedrock(server, api="invoke"), "bedrock", "anthropic.claude-3-sonnet-20240229-v1:0", message)
    assert_matches_sdk_type(body["messages"][0], MessageParam)
    assert [block["type"] for block in body["messages"][0]["content"]] == ["text", "image", "document"]


@pytest.mark.parametrize(
    ("settings", "part", "message"),
    [
        ({}, ImagePart.from_url("https://example.com/a.png"), r"Bedrock Converse takes only s3 URLs for image parts"),
        ({}, AudioPart.from_bytes(b"FORM\x00\x00\x00\x40AIFF" + b"\x00" * 24), r"does not take audio/aiff audios"),
        ({}, DocumentPart.from_bytes(PDF + b"\x00" * 4_718_592), r"document parts of at most 4.5 MB"),
        ({"api": "invoke"}, ImagePart.from_url("https://example.com/a.png"), r"Claude on Bedrock InvokeModel takes no URLs"),
        ({"api": "invoke"}, AudioPart.from_bytes(WAV), r"Claude on Bedrock InvokeModel does not take audio parts"),
    ],
)
def test_bedrock_refuses_before_sending(server: ReplayServer, settings: dict[str, Any], part: MediaPart, message: str) -> None:
    refused_without_sending(server, bedrock(server, **settings), "bedrock", part, message)


def test_bedrock_converse_needs_text_beside_a_document(server: ReplayServer) -> None:
    options = GenerateOptions(provider="bedrock", model="m", messages=(Message.user("", DocumentPart.from_bytes(PDF)),))
    with pytest.raises(ConfigurationError, match=r"a user message with a document needs text too"):
        bedrock(server).build_request(options)


# --------------------------------------------------------------------------- any adapter


def test_an_adapter_that_declares_no_media_support_refuses_parts(server: ReplayServer) -> None:
    class TextOnlyWire(OpenAIChatWire):
        media = None

    class TextOnly(OpenAIChatAdapter):
        wire_class = TextOnlyWire

    adapter = TextOnly(api_key=KEY, base_url=server.url)
    refused_without_sending(server, adapter, "textonly", ImagePart.from_bytes(PNG), r"TextOnly does not take images, documents or audio")
    text_only = GenerateOptions(provider="textonly", model="m", messages=(Message.user("hi"),))
    assert adapter.build_request(text_only).body["messages"] == [{"role": "user", "content": "hi"}]
