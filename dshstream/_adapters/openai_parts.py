"""The OpenAI content-part form of a user turn with media: a request piece every
OpenAI-format API shares (chat completions and its dialects, LiteLLM, Cohere), kept apart
so that none of them imports another provider's module.

Contract: pure; each part is checked against the caller's media table
(:class:`~dshstream._core.media_support.MediaSupport`) before it is written, so a table
that takes images only (Cohere's) refuses the rest.
"""

from __future__ import annotations

from typing import Any

from .._core.media_support import OPENAI_CHAT, MediaSupport
from .._core.parts import MediaPart
from .._core.request import Message
from .._core.types import TextBlock

__all__ = ["chat_content_parts"]


def chat_content_parts(message: Message, support: MediaSupport = OPENAI_CHAT) -> list[dict[str, Any]]:
    """A user turn with media as chat-completions content parts, in order: ``text``,
    ``image_url`` (a data URL, or the image's URL), ``input_audio`` (base64 and
    ``wav``/``mp3``) and ``file`` (``file_data`` as a data URL, with its ``filename``);
    each part checked against ``support`` (any OpenAI-format API can reuse it)."""
    out: list[dict[str, Any]] = []
    for item in message.parts:
        if isinstance(item, TextBlock):
            if item.text:
                out.append({"type": "text", "text": item.text})
        elif isinstance(item, MediaPart):
            wire = support.accept(item)
            if item.kind == "image":
                out.append({"type": "image_url", "image_url": {"url": item.url or item.data_url}})
            elif item.kind == "audio":
                out.append({"type": "input_audio", "input_audio": {"data": item.base64, "format": wire}})
            else:
                out.append({"type": "file", "file": {"filename": item.filename, "file_data": item.data_url}})
    return out
