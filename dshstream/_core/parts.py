"""Media parts of a user message — images, documents and audio: frozen, validated values,
sniffed from their bytes, read from a path or referenced by URL.

Contract: stdlib + ``errors``/``validate``/``redact``/``types``; no network. Reading a
file happens only in :meth:`MediaPart.from_path`, which the caller invokes.

1. A part is a frozen value: :class:`ImagePart`, :class:`DocumentPart` or
   :class:`AudioPart`, holding exactly one of ``data`` (bytes) or ``url``, a
   ``media_type`` and an optional ``name``. It is checked where it is built: the media type
   is normalized (``image/jpg`` -> ``image/jpeg``, ``audio/mp3`` -> ``audio/mpeg``,
   parameters dropped) and must belong to the part's kind (``image/*``; ``audio/*``;
   ``application/*`` or ``text/*`` for a document); bytes are non-empty; bytes whose
   signature says another type than the one given are refused; a URL is ``https``,
   ``http``, ``gs`` or ``s3`` URL with a host and without credentials (``user:pass@``
   would reach the provider; a signed URL is the way) (a ``data:`` URL becomes bytes).
   Messages name the field.
2. Constructors: ``from_bytes(data, media_type=None)`` (``None``: sniffed from the magic
   bytes), ``from_path(path, media_type=None)`` (sniffed from the magic bytes — PNG, JPEG,
   GIF, WEBP, HEIC, PDF, WAV, MP3, FLAC, OGG, AAC, M4A, AIFF, WEBM — else from the file
   extension; ``name`` defaults to the file name; only a regular file is read — a
   directory, FIFO, device (``/dev/zero``) or socket is refused before any read, without
   blocking; files over :data:`MAX_PART_BYTES` are refused before they are read, and at
   most that many bytes plus one are ever read) and ``from_url(url, media_type=None)`` (the type from the
   URL's extension when not given; it may stay unknown). On :class:`MediaPart` itself
   they pick the class from the media type.
3. ``repr`` and ``str`` show the kind, media type, size and name, never the bytes; a URL
   is shown redacted (signed query values masked).
4. What each provider takes of them (media types, URL schemes, limits) is
   :mod:`~dshstream._core.media_support`.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeAlias, TypeVar
from urllib.parse import unquote_to_bytes, urlsplit

from .redact import redact
from .types import format_size
from .validate import describe, invalid

__all__ = [
    "AudioPart",
    "DocumentPart",
    "ImagePart",
    "MAX_PART_BYTES",
    "MediaKind",
    "MediaPart",
    "decode_base64",
    "media_kind",
    "normalize_media_type",
    "sniff_media_type",
]

MediaKind: TypeAlias = Literal["image", "document", "audio"]
MEDIA_KINDS: tuple[MediaKind, ...] = ("image", "document", "audio")

#: the largest file :meth:`MediaPart.from_path` reads (above every provider's inline limit)
MAX_PART_BYTES = 512 * 1024 * 1024
URL_SCHEMES = frozenset({"https", "http", "gs", "s3"})

# Known media types: type -> (kind, usual extension).
KNOWN_TYPES: dict[str, tuple[MediaKind, str]] = {
    "image/png": ("image", ".png"),
    "image/jpeg": ("image", ".jpg"),
    "image/gif": ("image", ".gif"),
    "image/webp": ("image", ".webp"),
    "image/heic": ("image", ".heic"),
    "image/heif": ("image", ".heif"),
    "image/svg+xml": ("image", ".svg"),
    "application/pdf": ("document", ".pdf"),
    "text/plain": ("document", ".txt"),
    "text/markdown": ("document", ".md"),
    "text/csv": ("document", ".csv"),
    "text/html": ("document", ".html"),
    "application/json": ("document", ".json"),
    "application/msword": ("document", ".doc"),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ("document", ".docx"),
    "application/vnd.ms-excel": ("document", ".xls"),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ("document", ".xlsx"),
    "audio/wav": ("audio", ".wav"),
    "audio/mpeg": ("audio", ".mp3"),
    "audio/flac": ("audio", ".flac"),
    "audio/ogg": ("audio", ".ogg"),
    "audio/aac": ("audio", ".aac"),
    "audio/mp4": ("audio", ".m4a"),
    "audio/webm": ("audio", ".weba"),
    "audio/aiff": ("audio", ".aiff"),
}
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/mp3": "audio/mpeg",
    "audio/mpeg3": "audio/mpeg",
    "audio/x-mpeg": "audio/mpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/x-flac": "audio/flac",
    "audio/x-aiff": "audio/aiff",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/x-aac": "audio/aac",
    "audio/opus": "audio/ogg",
    "text/md": "text/markdown",
    "text/x-markdown": "text/markdown",
}
_EXTENSIONS: dict[str, str] = {ext: media for media, (_, ext) in KNOWN_TYPES.items()}
_EXTENSIONS.update(
    {
        ".jpeg": "image/jpeg",
        ".jpe": "image/jpeg",
        ".htm": "text/html",
        ".markdown": "text/markdown",
        ".text": "text/plain",
        ".log": "text/plain",
        ".oga": "audio/ogg",
        ".opus": "audio/ogg",
        ".aif": "audio/aiff",
        ".mpga": "audio/mpeg",
    }
)
_HEIF = {"image/heic", "image/heif"}  # one container: either name fits either brand
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,127}")
_KIND_PREFIXES: dict[MediaKind, tuple[str, ...]] = {
    "image": ("image/",),
    "audio": ("audio/",),
    "document": ("application/", "text/"),
}


# --------------------------------------------------------------------------- sniffing


def sniff_media_type(data: bytes) -> str | None:
    """The media type that ``data``'s leading bytes identify, or ``None``."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    if head.startswith(b"RIFF") and len(head) >= 12:
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(head[8:12])
    if head.startswith(b"FORM") and head[8:12] in (b"AIFF", b"AIFC"):
        return "audio/aiff"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"heic", b"heix", b"heim", b"heis"):
            return "image/heic"
        if brand in (b"mif1", b"msf1", b"heif"):
            return "image/heif"
        if brand in (b"M4A ", b"M4B "):
            return "audio/mp4"
        return None
    if head.startswith(b"fLaC"):
        return "audio/flac"
    if head.startswith(b"OggS"):
        return "audio/ogg"
    if head.startswith(b"ID3"):
        return "audio/mpeg"
    if head.startswith(b"\x1a\x45\xdf\xa3") and b"webm" in data[:64]:
        return "audio/webm"
    if len(head) >= 2 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0:
        layer = (head[1] >> 1) & 0x3
        if layer == 0 and head[1] & 0xF6 == 0xF0:
            return "audio/aac"  # ADTS
        if layer == 1:  # MPEG audio layer III
            return "audio/mpeg"
    return None


def normalize_media_type(value: str) -> str:
    """``value`` lower-cased, without parameters, with common aliases resolved."""
    media = value.split(";", 1)[0].strip().lower()
    return _ALIASES.get(media, media)


def media_kind(media_type: str) -> MediaKind | None:
    """The kind a (normalized) media type belongs to, or ``None``."""
    known = KNOWN_TYPES.get(media_type)
    if known is not None:
        return known[0]
    for kind, prefixes in _KIND_PREFIXES.items():
        if media_type.startswith(prefixes):
            return kind
    return None


def _from_extension(name: str) -> str | None:
    return _EXTENSIONS.get(os.path.splitext(name)[1].lower())


def decode_base64(value: object) -> bytes | None:
    """The bytes of a base64 (standard or URL-safe, padding optional) string from the wire,
    or ``None`` when it is not one (or is empty)."""
    if not isinstance(value, str) or not value:
        return None
    text = "".join(value.split())
    text += "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            data = base64.urlsafe_b64decode(text)
        else:
            data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data or None


def _encoded_size(size: int) -> int:
    return (size + 2) // 3 * 4


# --------------------------------------------------------------------------- parts

_P = TypeVar("_P", bound="MediaPart")


@dataclass(frozen=True, slots=True, repr=False)
class MediaPart:
    """An image, document or audio clip in a user message (rule 1). Build one with
    :meth:`from_path`, :meth:`from_bytes` or :meth:`from_url` of :class:`ImagePart`,
    :class:`DocumentPart` or :class:`AudioPart` (or of this class, which picks one)."""

    data: bytes | None = None
    url: str | None = None
    media_type: str | None = None
    name: str | None = None
    kind: ClassVar[MediaKind]

    def __post_init__(self) -> None:
        cls = type(self)
        where = cls.__name__
        if cls is MediaPart:
            raise invalid(
                "MediaPart is abstract: build an ImagePart, DocumentPart or AudioPart "
                "(MediaPart.from_path/from_bytes/from_url pick one)",
                wrong_type=True,
            )
        data: object = self.data
        url: object = self.url
        if (data is None) == (url is None):
            raise invalid(f"{where} needs exactly one of data= (bytes) or url=")
        media: object = self.media_type
        sniffed: str | None = None
        if media is not None and not isinstance(media, str):
            raise invalid(f"{where}.media_type must be a str, got {describe(media)}", wrong_type=True)
        if self.name is not None and not isinstance(self.name, str):
            raise invalid(f"{where}.name must be a str, got {describe(self.name)}", wrong_type=True)
        if url is not None:
            if not isinstance(url, str):
                raise invalid(f"{where}.url must be a str, got {describe(url)}", wrong_type=True)
            if url[:5].lower() == "data:":
                data, declared = _parse_data_url(url, where)
                media = media or declared
                object.__setattr__(self, "url", None)
            else:
                _check_url(url, where)
                if media is None:
                    media = _from_extension(urlsplit(url).path)
                    if media is not None and media_kind(media) != cls.kind:
                        media = None  # the extension is not evidence enough to refuse a URL
        if data is not None:
            if isinstance(data, (bytearray, memoryview)):
                data = bytes(data)
            if not isinstance(data, bytes):
                raise invalid(f"{where}.data must be bytes, got {describe(data)}", wrong_type=True)
            if not data:
                raise invalid(f"{where}.data is empty")
            object.__setattr__(self, "data", data)
            sniffed = sniff_media_type(data)
            if media is None:
                media = sniffed
                if media is None:
                    raise invalid(
                        f"{where}.media_type is needed: the data's type is not recognized from its "
                        f"first bytes; pass media_type= (e.g. {_EXAMPLE[cls.kind]!r})"
                    )
        if media is not None:
            media = self._checked_media_type(media, where)
            if data is not None and sniffed is not None and sniffed != media and {sniffed, media} != _HEIF:
                raise invalid(f"{where}.media_type is {media!r} but the data is {sniffed} (from its first bytes)")
            object.__setattr__(self, "media_type", media)

    @classmethod
    def _checked_media_type(cls, value: str, where: str) -> str:
        media = normalize_media_type(value)
        if not _MEDIA_TYPE.fullmatch(media):
            raise invalid(f"{where}.media_type must look like 'type/subtype', got {describe(value)}")
        kind = media_kind(media)
        if kind != cls.kind:
            what = f"an {cls.kind}" if cls.kind[0] in "aeiou" else f"a {cls.kind}"
            other = f"; use {_CLASS_NAMES[kind]}" if kind is not None else ""
            raise invalid(f"{where}.media_type must be {what} type ({_PREFIX_TEXT[cls.kind]}), got {media!r}{other}")
        return media

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_bytes(cls: type[_P], data: bytes, media_type: str | None = None, *, name: str | None = None) -> _P:
        """A part holding ``data``; ``media_type`` ``None`` sniffs it from the bytes."""
        target = _pick(cls, data, media_type, None, f"{cls.__name__}.from_bytes")
        return target(data=data, media_type=media_type, name=name)

    @classmethod
    def from_path(
        cls: type[_P], path: str | os.PathLike[str], media_type: str | None = None, *, name: str | None = None
    ) -> _P:
        """A part holding the bytes of the file at ``path`` (rule 2)."""
        where = f"{cls.__name__}.from_path"
        filename = os.fspath(path)
        if not isinstance(filename, str):
            raise invalid(f"{where}: path must be a str or os.PathLike, got {describe(path)}", wrong_type=True)
        data = _read_file(filename, where)
        if not data:
            raise invalid(f"{where}: {filename!r} is empty")
        if media_type is None:
            media_type = sniff_media_type(data) or _from_extension(filename)
            if media_type is None:
                raise invalid(
                    f"{where}: cannot tell the media type of {filename!r} (no known signature or extension); "
                    "pass media_type="
                )
        target = _pick(cls, data, media_type, filename, where)
        return target(data=data, media_type=media_type, name=os.path.basename(filename) if name is None else name)

    @classmethod
    def from_url(cls: type[_P], url: str, media_type: str | None = None, *, name: str | None = None) -> _P:
        """A part the provider fetches from ``url`` (``https``, ``http``, ``gs``, ``s3``;
        a ``data:`` URL becomes bytes); the media type is guessed from the extension."""
        where = f"{cls.__name__}.from_url"
        if not isinstance(url, str):
            raise invalid(f"{where}: url must be a str, got {describe(url)}", wrong_type=True)
        guess = media_type
        if guess is None and url[:5].lower() == "data:":
            guess = url[5:].split(",", 1)[0].split(";", 1)[0] or None
        if guess is None:
            guess = _from_extension(urlsplit(url).path)
        target = _pick(cls, None, guess, redact(url, limit=120), where)
        return target(url=url, media_type=media_type, name=name)

    # ------------------------------------------------------------------ read-outs

    @property
    def size(self) -> int | None:
        """The size of ``data`` in bytes (``None`` for a URL)."""
        return None if self.data is None else len(self.data)

    @property
    def encoded_size(self) -> int:
        """How many characters the part takes in a JSON body (base64 or the URL)."""
        if self.data is not None:
            return _encoded_size(len(self.data))
        return len(self.url or "")

    @property
    def base64(self) -> str:
        """``data`` as standard base64 text (for a URL part: an error)."""
        if self.data is None:
            raise invalid(f"{type(self).__name__}: a URL part has no bytes to encode")
        return base64.b64encode(self.data).decode("ascii")

    @property
    def data_url(self) -> str:
        """``data:<media type>;base64,<data>``."""
        return f"data:{self.media_type};base64,{self.base64}"

    @property
    def filename(self) -> str:
        """``name``, or ``<kind><usual extension>`` (``document.pdf``) without one."""
        if self.name:
            return self.name
        known = KNOWN_TYPES.get(self.media_type or "")
        return f"{self.kind}{known[1] if known else ''}"

    def describe(self) -> str:
        """``image/png, 12 KB, cat.png`` — what logs and errors show of the part."""
        bits = [self.media_type or "unknown type"]
        if self.data is not None:
            bits.append(format_size(len(self.data)))
        else:
            bits.append(f"url {redact(self.url or '', limit=80)!r}")
        if self.name:
            bits.append(repr(self.name))
        return ", ".join(bits)

    def __repr__(self) -> str:
        if self.data is not None:
            where = f"size={format_size(len(self.data))}"
        else:
            where = f"url={redact(self.url or '', limit=200)!r}"
        name = f", name={self.name!r}" if self.name is not None else ""
        return f"{type(self).__name__}(media_type={self.media_type!r}, {where}{name})"

    __str__ = __repr__


@dataclass(frozen=True, slots=True, repr=False)
class ImagePart(MediaPart):
    """An image: PNG, JPEG, GIF, WEBP, HEIC/HEIF (as the provider allows)."""

    kind: ClassVar[MediaKind] = "image"


@dataclass(frozen=True, slots=True, repr=False)
class DocumentPart(MediaPart):
    """A document: PDF, plain text, Markdown, CSV, HTML, Word or Excel (as the provider allows)."""

    kind: ClassVar[MediaKind] = "document"


@dataclass(frozen=True, slots=True, repr=False)
class AudioPart(MediaPart):
    """An audio clip: WAV, MP3, FLAC, OGG, AAC, M4A, AIFF, WEBM (as the provider allows)."""

    kind: ClassVar[MediaKind] = "audio"


_CLASSES: dict[MediaKind, type[MediaPart]] = {"image": ImagePart, "document": DocumentPart, "audio": AudioPart}
_CLASS_NAMES: dict[MediaKind, str] = {kind: part.__name__ for kind, part in _CLASSES.items()}
_PREFIX_TEXT: dict[MediaKind, str] = {"image": "image/...", "audio": "audio/...", "document": "application/... or text/..."}
_EXAMPLE: dict[MediaKind, str] = {"image": "image/png", "document": "application/pdf", "audio": "audio/wav"}


def _pick(cls: type[_P], data: bytes | None, media_type: str | None, source: str | None, where: str) -> type[_P]:
    """The class to build: ``cls``, or for :class:`MediaPart` the one of the media type."""
    if cls is not MediaPart:
        if source is not None and media_type is not None and isinstance(media_type, str):
            kind = media_kind(normalize_media_type(media_type))
            if kind is not None and kind != cls.kind:
                raise invalid(
                    f"{where}: {source!r} is {normalize_media_type(media_type)} ({kind}), not {cls.kind}; "
                    f"use {_CLASS_NAMES[kind]} (or MediaPart, which picks the class)"
                )
        return cls
    if media_type is None and data is not None:
        media_type = sniff_media_type(data)
    if not isinstance(media_type, str):
        hint = f" of {source!r}" if source else ""
        raise invalid(f"{where}: cannot tell the media type{hint}; pass media_type= or use ImagePart, DocumentPart or AudioPart")
    kind = media_kind(normalize_media_type(media_type))
    if kind is None:
        raise invalid(f"{where}: {normalize_media_type(media_type)!r} is not an image, document or audio type")
    picked: type[_P] = _CLASSES[kind]  # type: ignore[assignment]
    return picked


_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_READ_PIECE = 1024 * 1024


def _read_file(filename: str, where: str) -> bytes:
    """The bytes of the regular file ``filename`` (rule 2). It is opened without blocking (a
    FIFO with no writer would block ``open``) and checked on its descriptor before a byte
    is read; a file that grows past the limit while it is read is refused too."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(filename, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            what = next((name for test, name in _FILE_KINDS if test(info.st_mode)), "not a regular file")
            raise invalid(f"{where}: {filename!r} is {what}, not a regular file")
        if info.st_size > MAX_PART_BYTES:
            raise invalid(
                f"{where}: {filename!r} is {format_size(info.st_size)}, over the {format_size(MAX_PART_BYTES)} limit"
            )
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        pieces = [handle.read(info.st_size)] if info.st_size else []
        total = sum(map(len, pieces))
        while total <= MAX_PART_BYTES:  # a file that grew (or reports no size): bounded pieces
            piece = handle.read(min(_READ_PIECE, MAX_PART_BYTES + 1 - total))
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
    if total > MAX_PART_BYTES:
        raise invalid(f"{where}: {filename!r} grew over the {format_size(MAX_PART_BYTES)} limit while it was read")
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _check_url(url: str, where: str) -> None:
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme.lower() not in URL_SCHEMES:
        raise invalid(
            f"{where}.url must be an https, http, gs or s3 URL (or a data: URL), got {redact(url, limit=60)!r}"
        )
    if any(ch in url for ch in "\r\n\t ") or not url.isprintable():
        raise invalid(f"{where}.url must not contain whitespace or control characters")
    if "@" in parts.netloc:
        # the provider (and its logs) would get them: never forward credentials in a URL
        raise invalid(
            f"{where}.url must not carry credentials (user:password@host); use a signed URL or send the bytes"
        )
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError:
        host = None
    if not host:
        raise invalid(f"{where}.url must name a valid host (and port) ({parts.scheme}://host/...), got {redact(url, limit=60)!r}")


def _parse_data_url(url: str, where: str) -> tuple[bytes, str | None]:
    header, sep, payload = url[5:].partition(",")
    if not sep:
        raise invalid(f"{where}.url is a data: URL without a comma")
    params = header.split(";")
    declared = params[0].strip() or None
    if "base64" in (p.strip().lower() for p in params[1:]):
        data = decode_base64(payload)
        if data is None:
            raise invalid(f"{where}.url is a data: URL whose base64 payload is invalid or empty")
    else:
        data = unquote_to_bytes(payload)
    return data, declared
