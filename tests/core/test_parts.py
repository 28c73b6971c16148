"""Media parts (images, documents, audio): building and checking them, sniffing their type
from magic bytes, messages that carry them, per-provider acceptance rules, and that no
repr, log line or failure diagnostic ever prints their bytes."""

from __future__ import annotations

import base64
import logging
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from dshstream import (
    AudioPart,
    ConfigurationError,
    DocumentPart,
    ImagePart,
    MediaPart,
    Message,
    ReasoningBlock,
    TextBlock,
)
from dshstream.errors import ConfigurationTypeError
from dshstream._adapters.reporting import request_summary
from dshstream._core.log import get_logger
from dshstream._core.media_support import (
    ANTHROPIC,
    BEDROCK_CONVERSE,
    GEMINI,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    converse_document_name,
    media_summary,
)
from dshstream._core.parts import MAX_PART_BYTES, decode_base64, normalize_media_type, sniff_media_type
from dshstream._core.request import GenerateOptions


def png_bytes(width: int = 1, height: int = 1) -> bytes:
    """A valid PNG image (one black pixel by default)."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))

    raw = b"".join(b"\x00" + b"\x00\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def wav_bytes(samples: int = 8) -> bytes:
    data = b"\x00\x00" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data


PNG = png_bytes()
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + b"\x00" * 32 + b"\xff\xd9"
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8L\x0d\x00\x00\x00\x2f\x00\x00\x00\x10\x07\x10\x11\x11\x88\x88\xfe\x07\x00"
PDF = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n%%EOF\n"
WAV = wav_bytes()
MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" + b"\x00" * 64
MP3_FRAME = b"\xff\xfb\x90\x00" + b"\x00" * 64
FLAC = b"fLaC\x00\x00\x00\x22" + b"\x00" * 34
OGG = b"OggS\x00\x02" + b"\x00" * 40
AAC = b"\xff\xf1\x50\x80\x02\x1f\xfc" + b"\x00" * 16
M4A = b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00" + b"\x00" * 16
HEIC = b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00" + b"\x00" * 16
AIFF = b"FORM\x00\x00\x00\x40AIFFCOMM" + b"\x00" * 24


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (GIF, "image/gif"),
        (WEBP, "image/webp"),
        (HEIC, "image/heic"),
        (PDF, "application/pdf"),
        (WAV, "audio/wav"),
        (MP3, "audio/mpeg"),
        (MP3_FRAME, "audio/mpeg"),
        (FLAC, "audio/flac"),
        (OGG, "audio/ogg"),
        (AAC, "audio/aac"),
        (M4A, "audio/mp4"),
        (AIFF, "audio/aiff"),
        (b"just some text", None),
        (b"PK\x03\x04 a zip (docx?)", None),
        (b"", None),
    ],
)
def test_the_media_type_is_sniffed_from_magic_bytes(data: bytes, expected: str | None) -> None:
    assert sniff_media_type(data) == expected


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("image/JPG", "image/jpeg"),
        ("audio/mp3", "audio/mpeg"),
        ("audio/x-wav", "audio/wav"),
        ("text/plain; charset=utf-8", "text/plain"),
        ("text/md", "text/markdown"),
    ],
)
def test_media_types_are_normalized(given: str, normalized: str) -> None:
    assert normalize_media_type(given) == normalized


def test_wire_base64_is_decoded_tolerantly_and_refused_when_it_is_not_base64() -> None:
    raw = bytes(range(256))
    assert decode_base64(base64.b64encode(raw).decode()) == raw
    assert decode_base64(base64.urlsafe_b64encode(raw).decode().rstrip("=")) == raw
    assert decode_base64("aGVs\nbG8=") == b"hello"
    for bad in ("", "not base64!", None, 42, "===="):
        assert decode_base64(bad) is None


# --------------------------------------------------------------------------- building


def test_from_bytes_sniffs_or_takes_the_media_type() -> None:
    image = ImagePart.from_bytes(PNG)
    assert (image.media_type, image.data, image.url, image.size) == ("image/png", PNG, None, len(PNG))
    assert ImagePart.from_bytes(JPEG, "image/jpg").media_type == "image/jpeg"
    assert AudioPart.from_bytes(MP3, "audio/mp3", name="clip.mp3").name == "clip.mp3"
    doc = DocumentPart.from_bytes(b"# Notes\n", "text/markdown")
    assert doc.media_type == "text/markdown" and doc.filename == "document.md"
    assert ImagePart(data=bytearray(PNG)).data == PNG  # type: ignore[arg-type]  # a bytearray is copied


def test_from_bytes_refuses_what_it_cannot_trust() -> None:
    with pytest.raises(ConfigurationError, match=r"ImagePart.media_type is needed.*pass media_type="):
        ImagePart.from_bytes(b"no magic here")
    with pytest.raises(ConfigurationError, match=r"ImagePart.media_type must be an image type.*'application/pdf'.*use DocumentPart"):
        ImagePart.from_bytes(PDF, "application/pdf")
    with pytest.raises(ConfigurationError, match=r"ImagePart.media_type is 'image/jpeg' but the data is image/png"):
        ImagePart.from_bytes(PNG, "image/jpeg")
    with pytest.raises(ConfigurationError, match=r"AudioPart.data is empty"):
        AudioPart.from_bytes(b"", "audio/wav")
    with pytest.raises(ConfigurationError, match=r"must look like 'type/subtype'"):
        DocumentPart.from_bytes(b"x", "pdf")
    with pytest.raises(ConfigurationTypeError, match=r"ImagePart.data must be bytes, got str"):
        ImagePart(data="iVBORw0KGgo=", media_type="image/png")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"exactly one of data= \(bytes\) or url="):
        ImagePart(data=PNG, url="https://example.com/a.png")
    with pytest.raises(ConfigurationError, match=r"exactly one of"):
        ImagePart()
    with pytest.raises(ConfigurationTypeError, match=r"MediaPart is abstract"):
        MediaPart(data=PNG)


def test_from_path_sniffs_then_falls_back_to_the_extension(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(PNG)
    (tmp_path / "scan.bin").write_bytes(PDF)  # the bytes win over a wrong extension
    (tmp_path / "notes.md").write_text("# Title\n\nBody\n", encoding="utf-8")
    (tmp_path / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "clip.wav").write_bytes(WAV)

    cat = ImagePart.from_path(tmp_path / "cat.png")
    assert (cat.media_type, cat.name, cat.data) == ("image/png", "cat.png", PNG)
    assert DocumentPart.from_path(tmp_path / "scan.bin").media_type == "application/pdf"
    assert DocumentPart.from_path(str(tmp_path / "notes.md")).media_type == "text/markdown"
    assert DocumentPart.from_path(tmp_path / "table.csv", name="data").name == "data"
    assert AudioPart.from_path(tmp_path / "clip.wav").media_type == "audio/wav"


def test_media_part_picks_the_class_from_the_file(tmp_path: Path) -> None:
    for name, data, cls in (("a.png", PNG, ImagePart), ("b.pdf", PDF, DocumentPart), ("c.mp3", MP3, AudioPart)):
        (tmp_path / name).write_bytes(data)
        part = MediaPart.from_path(tmp_path / name)
        assert type(part) is cls and part.data == data
    assert type(MediaPart.from_bytes(WAV)) is AudioPart
    assert type(MediaPart.from_url("https://example.com/report.pdf")) is DocumentPart
    with pytest.raises(ConfigurationError, match=r"MediaPart.from_url: cannot tell the media type"):
        MediaPart.from_url("https://example.com/blob")


def test_from_path_refuses_the_wrong_kind_unknown_files_and_missing_ones(tmp_path: Path) -> None:
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "data.xyz").write_bytes(b"\x01\x02\x03")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ConfigurationError, match=r"ImagePart.from_path: .*report.pdf' is application/pdf \(document\), not image; use DocumentPart"):
        ImagePart.from_path(tmp_path / "report.pdf")
    with pytest.raises(ConfigurationError, match=r"cannot tell the media type of .*data.xyz.*pass media_type="):
        MediaPart.from_path(tmp_path / "data.xyz")
    assert DocumentPart.from_path(tmp_path / "data.xyz", "application/json").media_type == "application/json"
    with pytest.raises(ConfigurationError, match=r"empty.png' is empty"):
        ImagePart.from_path(tmp_path / "empty.png")
    with pytest.raises(FileNotFoundError):
        ImagePart.from_path(tmp_path / "missing.png")


def test_from_path_refuses_a_huge_file_before_reading_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(PNG)
    monkeypatch.setattr("dshstream._core.parts.MAX_PART_BYTES", 16)
    with pytest.raises(ConfigurationError, match=r"over the 16 B limit"):
        ImagePart.from_path(big)
    assert MAX_PART_BYTES >= 100 * 1024 * 1024


def test_urls_are_checked_and_data_urls_become_bytes() -> None:
    remote = ImagePart.from_url("https://example.com/photos/cat.JPG?size=large")
    assert (remote.url, remote.data, remote.media_type, remote.size) == (
        "https://example.com/photos/cat.JPG?size=large", None, "image/jpeg", None,
    )
    assert ImagePart.from_url("https://example.com/render").media_type is None  # unknown is allowed
    assert DocumentPart.from_url("gs://bucket/report.pdf").media_type == "application/pdf"
    assert AudioPart.from_url("s3://bucket/clip.mp3").media_type == "audio/mpeg"
    inline = ImagePart.from_url("data:image/png;base64," + base64.b64encode(PNG).decode())
    assert (inline.url, inline.data, inline.media_type) == (None, PNG, "image/png")
    text = DocumentPart.from_url("data:text/plain,hello%20world")
    assert (text.data, text.media_type) == (b"hello world", "text/plain")
    for bad in ("ftp://example.com/a.png", "file:///etc/passwd", "https://", "cat.png", "https://exa mple.com/a.png"):
        with pytest.raises(ConfigurationError, match=r"url must|url is"):
            ImagePart.from_url(bad)
    with pytest.raises(ConfigurationError, match=r"base64 payload is invalid"):
        ImagePart.from_url("data:image/png;base64,!!!")


# --------------------------------------------------------------------------- never the bytes


def test_repr_and_str_show_type_and_size_never_bytes() -> None:
    secret_bytes = PNG + b"TOPSECRETPIXELS" * 100
    part = ImagePart.from_bytes(secret_bytes, name="cat.png")
    for text in (repr(part), str(part), f"{part}", repr(Message.user("look", part))):
        assert "TOPSECRET" not in text and "iVBOR" not in text and "\\x89PNG" not in text
    assert repr(part) == f"ImagePart(media_type='image/png', size={len(secret_bytes) / 1024:.1f} KB, name='cat.png')"
    signed = DocumentPart.from_url("https://bucket.example.com/r.pdf?X-Amz-Signature=abcdef0123456789&x=1")
    assert "abcdef0123456789" not in repr(signed) and "[REDACTED]" in repr(signed)


def test_logs_through_the_redacting_logger_show_no_bytes(caplog: pytest.LogCaptureFixture) -> None:
    part = AudioPart.from_bytes(WAV + b"PRIVATEVOICE" * 50)
    log = get_logger("dshstream.test_parts")
    with caplog.at_level(logging.INFO, logger="dshstream"):
        log.info("sending %r and %s", part, Message.user("transcribe", part))
    assert "PRIVATEVOICE" not in caplog.text and "UklGR" not in caplog.text
    assert "AudioPart(media_type='audio/wav'" in caplog.text


def test_failure_diagnostics_summarize_media_without_bytes() -> None:
    options = GenerateOptions(
        provider="openai",
        model="m",
        messages=(Message.user("compare", ImagePart.from_bytes(PNG), DocumentPart.from_url("https://e.com/a.pdf")),),
    )
    summary = request_summary(options)
    assert summary["attachments"] == [
        {"kind": "image", "media_type": "image/png", "size": len(PNG)},
        {"kind": "document", "media_type": "application/pdf", "source": "url"},
    ]
    assert "iVBOR" not in repr(summary)
    assert "attachments" not in request_summary(GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),)))
    many = [Message.user("x", *(ImagePart.from_bytes(PNG) for _ in range(20)))]
    assert len(media_summary(many)) == 8


# --------------------------------------------------------------------------- messages


def test_a_user_message_mixes_text_and_parts_in_order() -> None:
    image, doc = ImagePart.from_bytes(PNG), DocumentPart.from_bytes(PDF)
    message = Message.user("What is in this picture?", image, "and this file?", doc)
    assert message.content == (TextBlock("What is in this picture?"), image, TextBlock("and this file?"), doc)
    assert message.text == "What is in this picture?and this file?"
    assert message.blocks == (TextBlock("What is in this picture?"), TextBlock("and this file?"))
    assert message.attachments == (image, doc)
    assert message.parts == message.content
    assert Message.user("", image).content == (image,)
    assert Message.user("plain").content == "plain" and Message.user("plain").attachments == ()
    assert Message("user", [TextBlock("x"), image]).attachments == (image,)  # type: ignore[arg-type]


def test_parts_belong_in_user_messages_only() -> None:
    image = ImagePart.from_bytes(PNG)
    for role in ("assistant", "system", "tool"):
        with pytest.raises(ConfigurationError, match=rf"content\[1\]: a ImagePart belongs in a user message, not a {role}"):
            Message(role, (TextBlock("x"), image))
    with pytest.raises(ConfigurationTypeError, match=r"content\[0\] must be a TextBlock.*ImagePart, DocumentPart or AudioPart, got bytes"):
        Message("user", (PNG,))  # type: ignore[arg-type]
    assert Message("assistant", (ReasoningBlock("r"), TextBlock("t"))).blocks == (ReasoningBlock("r"), TextBlock("t"))


def test_parts_are_frozen_hashable_values() -> None:
    a, b = ImagePart.from_bytes(PNG, name="x"), ImagePart.from_bytes(PNG, name="x")
    assert a == b and hash(a) == hash(b) and a != ImagePart.from_bytes(PNG)
    with pytest.raises(AttributeError):
        a.media_type = "image/gif"  # type: ignore[misc]
    assert a.data_url == "data:image/png;base64," + base64.b64encode(PNG).decode()
    with pytest.raises(ConfigurationError, match=r"a URL part has no bytes"):
        _ = ImagePart.from_url("https://e.com/a.png").base64


# --------------------------------------------------------------------------- provider rules


def one(part: MediaPart, text: str = "Describe it.") -> list[Message]:
    return [Message.user(text, part)]


@pytest.mark.parametrize(
    ("support", "part", "wire"),
    [
        (OPENAI_CHAT, ImagePart.from_bytes(PNG), "png"),
        (OPENAI_CHAT, AudioPart.from_bytes(MP3), "mp3"),
        (OPENAI_CHAT, DocumentPart.from_bytes(PDF), "application/pdf"),
        (OPENAI_RESPONSES, ImagePart.from_url("https://e.com/a.webp"), "webp"),
        (ANTHROPIC, DocumentPart.from_bytes(b"# x", "text/markdown"), "text/plain"),
        (GEMINI, AudioPart.from_bytes(MP3), "audio/mp3"),
        (GEMINI, DocumentPart.from_bytes(b"# x", "text/markdown"), "text/md"),
        (BEDROCK_CONVERSE, DocumentPart.from_bytes(b"a,b", "text/csv"), "csv"),
        (BEDROCK_CONVERSE, ImagePart.from_url("s3://bucket/cat.jpeg"), "jpeg"),
    ],
)
def test_each_provider_names_what_it_takes(support: object, part: MediaPart, wire: str) -> None:
    assert support.accept(part) == wire  # type: ignore[attr-defined]
    support.check(one(part))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("support", "part", "message"),
    [
        (ANTHROPIC, AudioPart.from_bytes(WAV), r"Anthropic Messages does not take audio parts \(AudioPart: audio/wav"),
        (OPENAI_RESPONSES, AudioPart.from_bytes(WAV), r"OpenAI Responses does not take audio parts"),
        (OPENAI_CHAT, AudioPart.from_bytes(FLAC), r"does not take audio/flac audios \(it takes audio/mpeg, audio/wav\)"),
        (OPENAI_CHAT, AudioPart.from_url("https://e.com/a.mp3"), r"takes no URLs, only bytes for audio parts"),
        (OPENAI_CHAT, DocumentPart.from_url("https://e.com/a.pdf"), r"takes no URLs, only bytes for document parts"),
        (ANTHROPIC, ImagePart.from_bytes(HEIC), r"does not take image/heic images"),
        (ANTHROPIC, ImagePart.from_url("gs://b/a.png"), r"takes only https URLs for image parts"),
        (GEMINI, ImagePart.from_bytes(GIF), r"Gemini does not take image/gif images"),
        (GEMINI, ImagePart.from_url("https://e.com/render"), r"Gemini needs the media type of a URL part"),
        (BEDROCK_CONVERSE, ImagePart.from_url("https://e.com/a.png"), r"Bedrock Converse takes only s3 URLs"),
        (BEDROCK_CONVERSE, DocumentPart.from_bytes(b"{}", "application/json"), r"does not take application/json documents"),
    ],
)
def test_a_part_a_provider_cannot_take_is_refused_naming_both(support: object, part: MediaPart, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        support.check(one(part))  # type: ignore[attr-defined]
    with pytest.raises(ConfigurationError, match=r"^messages\[0\]\.content\[1\]: "):
        support.check(one(part))  # type: ignore[attr-defined]


def test_documented_size_limits_are_enforced() -> None:
    # Anthropic: 5 MB per image, of the base64 text
    just_over = ImagePart.from_bytes(PNG + b"\x00" * (5 * 1024 * 1024 * 3 // 4))
    with pytest.raises(ConfigurationError, match=r"Anthropic Messages takes image parts of at most 5.0 MB base64-encoded"):
        ANTHROPIC.check(one(just_over))
    # Bedrock: 3.75 MB per image, 4.5 MB per document (raw bytes)
    BEDROCK_CONVERSE.check(one(ImagePart.from_bytes(PNG + b"\x00" * (3_932_160 - len(PNG)))))
    with pytest.raises(ConfigurationError, match=r"Bedrock Converse takes image parts of at most 3.8 MB"):
        BEDROCK_CONVERSE.check(one(ImagePart.from_bytes(PNG + b"\x00" * (3_932_161 - len(PNG)))))
    with pytest.raises(ConfigurationError, match=r"document parts of at most 4.5 MB"):
        BEDROCK_CONVERSE.check(one(DocumentPart.from_bytes(PDF + b"\x00" * 4_718_592)))
    # OpenAI: 20 MB per image, 50 MB per request
    with pytest.raises(ConfigurationError, match=r"image parts of at most 20.0 MB"):
        OPENAI_CHAT.check(one(ImagePart.from_bytes(PNG + b"\x00" * 20 * 1024 * 1024)))
    nine_mb = ImagePart.from_bytes(PNG + b"\x00" * 9 * 1024 * 1024)
    with pytest.raises(ConfigurationError, match=r"OpenAI chat completions takes at most 50.0 MB of media per request, got 54.0 MB"):
        OPENAI_CHAT.check([Message.user("x", *([nine_mb] * 3)), Message.user("y", *([nine_mb] * 3))])


def test_per_request_counts_are_enforced() -> None:
    images = [ImagePart.from_bytes(PNG)] * 21
    with pytest.raises(ConfigurationError, match=r"Bedrock Converse takes at most 20 image parts per request, got 21"):
        BEDROCK_CONVERSE.check([Message.user("many", *images)])
    BEDROCK_CONVERSE.check([Message.user("many", *images[:20])])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Q3 report.final.pdf", "Q3 report-final"),
        ("weird/name*with?chars.docx", "weird-name-with-chars"),
        ("  spaced    out  .txt", "spaced out"),
        (None, "document-3"),
        ("%%%.pdf", "document-3"),
    ],
)
def test_converse_document_names_follow_the_allowed_characters(name: str | None, expected: str) -> None:
    part = DocumentPart.from_bytes(PDF, name=name)
    assert converse_document_name(part, 3) == expected


def test_heic_and_heif_are_one_container() -> None:
    assert ImagePart.from_bytes(HEIC, "image/heif").media_type == "image/heif"
    assert ImagePart.from_bytes(b"\x00\x00\x00\x18ftypmif1" + b"\x00" * 20, "image/heic").media_type == "image/heic"


# --------------------------------------------------------------------------- hostile paths and URLs


def _within(seconds: float, call: Any) -> Any:
    """``call()`` on a daemon thread: its result or exception, or a failure when it hangs."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(("ok", call()))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box.append(("raised", exc))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert box, f"still running after {seconds}s (it blocks)"
    kind, value = box[0]
    if kind == "raised":
        raise value
    return value


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_from_path_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)  # nobody ever writes to it: an open() for reading would wait forever
    with pytest.raises(ConfigurationError, match=r"ImagePart.from_path: .*pipe.png' is a FIFO \(named pipe\), not a regular file"):
        _within(10.0, lambda: ImagePart.from_path(fifo))
    with pytest.raises(ConfigurationError, match="FIFO"):
        _within(10.0, lambda: MediaPart.from_path(fifo, "image/png"))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_from_path_refuses_devices_before_reading_them() -> None:
    # /dev/zero has no size and no end: it used to be read up to the 512 MiB limit
    with pytest.raises(ConfigurationError, match=r"'/dev/zero' is a character device, not a regular file"):
        _within(10.0, lambda: ImagePart.from_path("/dev/zero", "image/png"))


def test_from_path_refuses_a_directory_as_a_configuration_error(tmp_path: Path) -> None:
    folder = tmp_path / "photos.png"
    folder.mkdir()
    with pytest.raises(ConfigurationError, match=r"photos.png' is a directory, not a regular file"):
        ImagePart.from_path(folder)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks here")
def test_from_path_follows_a_symlink_to_a_file_and_judges_its_target(tmp_path: Path) -> None:
    target = tmp_path / "real.png"
    target.write_bytes(PNG)
    link = tmp_path / "link.png"
    link.symlink_to(target)
    part = ImagePart.from_path(link)
    assert part.data == PNG and part.name == "link.png"
    folder_link = tmp_path / "folder.png"
    folder_link.symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ConfigurationError, match="is a directory"):
        ImagePart.from_path(folder_link)


def test_from_path_never_reads_more_than_the_limit_of_a_growing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = tmp_path / "grown.png"
    grown.write_bytes(PNG + b"\x00" * 64)
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:  # the size it had when it was checked
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 8, *info[7:]))

    monkeypatch.setattr("dshstream._core.parts.MAX_PART_BYTES", 16)
    monkeypatch.setattr(os, "fstat", stale_fstat)
    reads: list[int] = []
    real_fdopen = os.fdopen

    def counting_fdopen(fd: int, mode: str) -> Any:
        handle = real_fdopen(fd, mode)
        read = handle.read

        class Counted:
            def read(self, size: int = -1) -> bytes:
                data: bytes = read(size)
                reads.append(len(data))
                return data

            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *exc: object) -> None:
                handle.close()

        return Counted()

    monkeypatch.setattr(os, "fdopen", counting_fdopen)
    with pytest.raises(ConfigurationError, match=r"grown.png' grew over the 16 B limit while it was read"):
        ImagePart.from_path(grown)
    assert sum(reads) == 17  # the limit plus the one byte that proves it is over


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("https://alice:hunter2-secret@example.com/cat.png", "must not carry credentials"),
        ("https://token-only-user@example.com/cat.png", "must not carry credentials"),
        ("s3://user-id:user-secret@bucket/cat.png", "must not carry credentials"),
        ("https:///etc/passwd.png", "must name a valid host"),
        ("https:cat.png", "must name a valid host"),
        ("https://example.com:99999/cat.png", "must name a valid host"),
        ("file:///etc/passwd.png", "must be an https, http, gs or s3 URL"),
        ("javascript:alert(1)//cat.png", "must be an https, http, gs or s3 URL"),
    ],
)
def test_urls_with_credentials_or_without_a_host_are_refused_without_echoing_them(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ImagePart.from_url(url, "image/png")
    message = str(info.value)
    assert says in message and "ImagePart" in message
    for secret in ("hunter2-secret", "wJalrXUtnFEMI"):
        assert secret not in message and secret not in repr(info.value.failure)
