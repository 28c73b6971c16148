"""What each provider API takes of media parts: per kind, the media types and their wire
names, the URL schemes, per-part and per-request limits (sizes from the providers'
documentation, cited beside each table), and the bytes-free summary of a request's parts
for failure diagnostics.

Contract: stdlib + ``parts``/``types``/``validate``; pure.

1. :class:`MediaSupport` is one provider API. :meth:`MediaSupport.accept` checks one part
   and gives its wire name; :meth:`MediaSupport.check` checks every part of a request
   (counts and total size too). Both raise :class:`~dshstream._core.errors.ConfigurationError`
   naming the message, the part and the provider. Adapters only shape JSON from
   :attr:`~dshstream._core.parts.MediaPart.base64` /
   :attr:`~dshstream._core.parts.MediaPart.data_url` and the wire name.
2. :func:`media_summary` lists kind, media type and size (or ``"url"``) — never bytes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .parts import MEDIA_KINDS, MediaKind, MediaPart
from .types import format_size
from .validate import invalid

if TYPE_CHECKING:
    from .request import Message

__all__ = [
    "ANTHROPIC",
    "BEDROCK_CLAUDE",
    "BEDROCK_CONVERSE",
    "COHERE",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "MediaSupport",
    "converse_document_name",
    "media_summary",
]


@dataclass(frozen=True)
class MediaSupport:
    """What one provider API takes of media parts (rule 1).

    ``types`` maps a kind to its accepted media types and each one's wire name (a format
    word like ``png``, or the media type the API spells differently); a kind that is
    absent is not accepted. ``url_schemes`` maps a kind to the URL schemes it may be sent
    by reference; ``url_media_type`` says a URL part must have a known media type.
    ``max_part`` is the largest part per kind, in bytes (of the base64 text when
    ``encoded_limits``); ``max_count`` the most parts of a kind in one request;
    ``max_total`` the most bytes of all inline parts together (base64 text when
    ``encoded_limits``).
    """

    provider: str
    types: Mapping[MediaKind, Mapping[str, str]]
    url_schemes: Mapping[MediaKind, frozenset[str]] = field(default_factory=dict)
    url_media_type: bool = False
    max_part: Mapping[MediaKind, int] = field(default_factory=dict)
    max_count: Mapping[MediaKind, int] = field(default_factory=dict)
    max_total: int | None = None
    encoded_limits: bool = False

    def _refuse(self, part: MediaPart, where: str, reason: str) -> Exception:
        return invalid(f"{where}: {self.provider} {reason} ({type(part).__name__}: {part.describe()})")

    def accept(self, part: MediaPart, where: str = "Message") -> str:
        """The wire name of ``part``'s media type, after checking the provider takes it
        (kind, media type, URL scheme, size); a ``ConfigurationError`` otherwise."""
        table = self.types.get(part.kind)
        if not table:
            raise self._refuse(part, where, f"does not take {part.kind} parts")
        media = part.media_type
        if part.url is not None:
            scheme = urlsplit(part.url).scheme.lower()
            schemes = self.url_schemes.get(part.kind, frozenset())
            if scheme not in schemes:
                how = f"only {', '.join(sorted(schemes))} URLs" if schemes else "no URLs, only bytes"
                raise self._refuse(part, where, f"takes {how} for {part.kind} parts")
            if media is None:
                if self.url_media_type:
                    raise self._refuse(part, where, "needs the media type of a URL part; pass media_type=")
                return ""
        if media is None or media not in table:
            raise self._refuse(
                part, where, f"does not take {media} {part.kind}s (it takes {', '.join(sorted(table))})"
            )
        limit = self.max_part.get(part.kind)
        if limit is not None and part.data is not None:
            size = part.encoded_size if self.encoded_limits else len(part.data)
            if size > limit:
                what = "base64-encoded " if self.encoded_limits else ""
                raise self._refuse(
                    part, where, f"takes {part.kind} parts of at most {format_size(limit)} {what}(this one: {format_size(size)})"
                )
        return table[media]

    def check(self, messages: Iterable[Message]) -> None:
        """Check every media part of ``messages`` (:meth:`accept`), then the per-request
        counts and total size."""
        counts: dict[MediaKind, int] = {}
        total = 0
        for position, message in enumerate(messages):
            if isinstance(message.content, str):
                continue
            for index, item in enumerate(message.content):
                if not isinstance(item, MediaPart):
                    continue
                self.accept(item, f"messages[{position}].content[{index}]")
                counts[item.kind] = counts.get(item.kind, 0) + 1
                if item.data is not None:
                    total += item.encoded_size if self.encoded_limits else len(item.data)
        for kind, count in counts.items():
            most = self.max_count.get(kind)
            if most is not None and count > most:
                raise invalid(f"{self.provider} takes at most {most} {kind} parts per request, got {count}")
        if self.max_total is not None and total > self.max_total:
            what = "base64-encoded " if self.encoded_limits else ""
            raise invalid(
                f"{self.provider} takes at most {format_size(self.max_total)} of {what}media per request, "
                f"got {format_size(total)}"
            )


def media_summary(messages: Iterable[Message], limit: int = 8) -> list[dict[str, object]]:
    """A prompt-free, bytes-free summary of the media parts of ``messages`` for failure
    diagnostics: kind, media type and size (or ``"url"``), the first ``limit`` of them."""
    out: list[dict[str, object]] = []
    for message in messages:
        for part in message.attachments:
            if len(out) == limit:
                return out
            entry: dict[str, object] = {"kind": part.kind, "media_type": part.media_type}
            if part.data is not None:
                entry["size"] = len(part.data)
            else:
                entry["source"] = "url"
            out.append(entry)
    return out


def converse_document_name(part: MediaPart, position: int) -> str:
    """A Bedrock Converse document ``name``: the part's name without its extension, reduced
    to the characters Converse allows (letters, digits, single spaces, hyphens,
    parentheses, square brackets), at most 200 characters; ``document-<n>`` without a name
    that has a letter or digit."""
    stem = os.path.splitext(part.name or "")[0]
    cleaned = re.sub(r"[^A-Za-z0-9\s\-()\[\]]", "-", stem)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()[:200].strip()
    return cleaned if re.search(r"[A-Za-z0-9]", cleaned) else f"document-{position}"


MB = 1024 * 1024
_IMAGES_4 = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_WEB = frozenset({"https", "http"})

# OpenAI (chat completions and Responses): images PNG/JPEG/WEBP/non-animated GIF, up to
# 50 MB of media per request ("Images and vision" guide, input requirements); Azure
# OpenAI refuses images over 20 MB (20,971,520 bytes); audio input is WAV or MP3
# (``input_audio.format``, openai-python ``ChatCompletionContentPartInputAudioParam``);
# file inputs up to 50 MB ("File inputs" guide). Responses has no audio content part
# (``ResponseInputContentParam`` is text, image and file).
_OPENAI_DOCUMENTS = {
    media: media
    for media in (
        "application/pdf",
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "application/json",
        "application/msword",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.ms-excel",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
}
OPENAI_CHAT = MediaSupport(
    provider="OpenAI chat completions",
    types={
        "image": _IMAGES_4,
        "document": _OPENAI_DOCUMENTS,
        "audio": {"audio/wav": "wav", "audio/mpeg": "mp3"},
    },
    url_schemes={"image": _WEB},
    max_part={"image": 20 * MB, "document": 50 * MB, "audio": 50 * MB},
    max_count={"image": 500},
    max_total=50 * MB,
)
OPENAI_RESPONSES = MediaSupport(
    provider="OpenAI Responses",
    types={"image": _IMAGES_4, "document": _OPENAI_DOCUMENTS},
    url_schemes={"image": _WEB, "document": _WEB},
    max_part={"image": 20 * MB, "document": 50 * MB},
    max_count={"image": 500},
    max_total=50 * MB,
)
# Anthropic Messages: images JPEG/PNG/GIF/WEBP (``Base64ImageSourceParam.media_type``),
# at most 5 MB each and 100 per request ("Vision" guide); documents are PDF (base64 or
# URL) or plain text (``PlainTextSourceParam``: other text types go as text/plain); a
# request is at most 32 MB ("PDF support" and API request size limits). No audio.
_ANTHROPIC_IMAGES = {media: media for media in _IMAGES_4}
_ANTHROPIC_DOCUMENTS = {
    "application/pdf": "application/pdf",
    "text/plain": "text/plain",
    "text/markdown": "text/plain",
    "text/csv": "text/plain",
    "text/html": "text/plain",
}
ANTHROPIC = MediaSupport(
    provider="Anthropic Messages",
    types={"image": _ANTHROPIC_IMAGES, "document": _ANTHROPIC_DOCUMENTS},
    url_schemes={"image": frozenset({"https"}), "document": frozenset({"https"})},
    max_part={"image": 5 * MB},
    max_count={"image": 100},
    max_total=32 * MB,
    encoded_limits=True,
)
# Claude through Bedrock InvokeModel: the Anthropic body, bytes only (no URL sources);
# Bedrock's own per-image limit of 3.75 MB applies.
BEDROCK_CLAUDE = MediaSupport(
    provider="Claude on Bedrock InvokeModel",
    types={"image": _ANTHROPIC_IMAGES, "document": _ANTHROPIC_DOCUMENTS},
    max_part={"image": 3_932_160},
    max_count={"image": 20},
    max_total=20 * MB,
    encoded_limits=True,
)
# Gemini API (Vertex AI reuses it): images PNG/JPEG/WEBP/HEIC/HEIF, audio WAV/MP3/AIFF/
# AAC/OGG/FLAC (Gemini spells MP3 ``audio/mp3``), documents PDF and text types
# ("Document understanding": ``text/md`` for Markdown); inline data up to 100 MB per
# request (Gemini API update of 2026-01-12; PDFs 50 MB); ``fileData`` takes ``gs://``
# and https (Files API, public or signed) URIs with their ``mimeType``.
GEMINI = MediaSupport(
    provider="Gemini",
    types={
        "image": {m: m for m in ("image/png", "image/jpeg", "image/webp", "image/heic", "image/heif")},
        "document": {
            "application/pdf": "application/pdf",
            "text/plain": "text/plain",
            "text/markdown": "text/md",
            "text/csv": "text/csv",
            "text/html": "text/html",
        },
        "audio": {
            "audio/wav": "audio/wav",
            "audio/mpeg": "audio/mp3",
            "audio/aiff": "audio/aiff",
            "audio/aac": "audio/aac",
            "audio/ogg": "audio/ogg",
            "audio/flac": "audio/flac",
        },
    },
    url_schemes={kind: frozenset({"https", "http", "gs"}) for kind in MEDIA_KINDS},
    url_media_type=True,
    max_part={"document": 50 * MB},
    max_total=100 * MB,
    encoded_limits=True,
)
# Bedrock Converse: image formats png|jpeg|gif|webp, at most 3.75 MB and 20 per request;
# document formats pdf|csv|doc|docx|xls|xlsx|html|txt|md, at most 4.5 MB and 5 per
# request (API reference, ``Message.content``); audio formats from ``AudioFormat``;
# bytes, or ``s3Location`` for ``s3://`` URIs.
BEDROCK_CONVERSE = MediaSupport(
    provider="Bedrock Converse",
    types={
        "image": _IMAGES_4,
        "document": {
            "application/pdf": "pdf",
            "text/csv": "csv",
            "application/msword": "doc",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
            "application/vnd.ms-excel": "xls",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
            "text/html": "html",
            "text/plain": "txt",
            "text/markdown": "md",
        },
        "audio": {
            "audio/mpeg": "mp3",
            "audio/wav": "wav",
            "audio/flac": "flac",
            "audio/ogg": "ogg",
            "audio/aac": "aac",
            "audio/mp4": "m4a",
            "audio/webm": "webm",
        },
    },
    url_schemes={kind: frozenset({"s3"}) for kind in MEDIA_KINDS},
    url_media_type=True,
    max_part={"image": 3_932_160, "document": 4_718_592},
    max_count={"image": 20, "document": 5},
)
# Cohere Chat v2: images only, as ``image_url`` parts (a data URL, or the image's URL), up
# to 20 per request (Command A Vision; "Image Inputs" guide); no documents or audio as
# parts (documents go in the request's ``documents``, as text).
COHERE = MediaSupport(
    provider="Cohere",
    types={"image": _IMAGES_4},
    url_schemes={"image": _WEB},
    max_count={"image": 20},
)
