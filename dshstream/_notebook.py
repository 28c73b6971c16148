"""Live rendering of a stream in a Jupyter notebook, with a plain-text fallback.

Contract: IPython is imported lazily, only when :func:`display` runs; outside a kernel
the stream is rendered as plain text by :class:`~dshstream._render.TextRenderer`. In a
notebook the answer is shown as Markdown, updated at most ``max_updates_per_second``
times (default 15), reasoning in a collapsible section, the sources the answer cites as a
numbered list of links under it, images the model produced inline (an ``<img>`` with a
data URL; other files as their media type and size), tool calls as a small table, usage and finish at the
end. The stop button (``KeyboardInterrupt``) ends the current stream — its partial
output stays on screen, marked aborted, and stays available as ``stream.partial()`` —
and then propagates, so the cell stops (a cell looping over prompts needs one Stop, not
one per stream). The plain-text fallback does the same. A failure is shown with the
recovery tips for the owner of the ``credential`` (the user's own key by default).

A cell shows the rendering and nothing else: ``ChunkStream.display()`` returns ``None``
(the assembled response is ``stream.result()`` afterwards, as it stays available).
Returning a value whose display hook is empty was the other choice: it keeps
``r = stream.display()`` working, but a result that renders as nothing when the user does
ask for it (``r`` alone in a cell) is a trap, and a plain Python prompt would still print
its repr under the text rendering. A :class:`~dshstream._service.Registration` (what a
setup cell's ``register_adapter`` returns) must stay the return value (``dispose`` and
``replace`` need it), so it gets the empty display hook instead: it is a handle, not a
result to look at, and ``print(registration)`` still describes it.
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from ._core.assembler import AssembledResponse
from ._core.recovery import CREDENTIAL_SOURCES, CredentialSource, recovery_tips
from ._core.validate import check_choice
from ._render import Sources, TextRenderer, describe_file, describe_source, describe_usage
from ._core.types import (
    BlockEnd,
    Citation,
    FileBlock,
    Finish,
    LlmFailure,
    ReasoningDelta,
    StreamChunk,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    UsageChunk,
)


#: image types a notebook shows inline
INLINE_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"})


def _markdown_source(citation: Citation) -> str:
    """A citation as Markdown: a link when it has a URL."""
    if citation.url is None:
        return html.escape(describe_source(citation))
    label = citation.title or citation.url
    label = label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
    url = citation.url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
    return f"[{html.escape(label)}]({url})"


def _markdown_file(block: FileBlock) -> str:
    """A file the model produced: an image inline (an ``<img>`` with a data URL), any
    other file as its media type and size."""
    label = html.escape(describe_file(block), quote=True)
    if block.media_type in INLINE_IMAGES:
        return f'<img src="data:{block.media_type};base64,{block.base64}" alt="{label}" title="{label}"/>'
    return f"*[{label}]*"


class Displayable(Protocol):
    """What :func:`display` needs of a stream (a :class:`~dshstream._chunk_stream.ChunkStream`
    has it; this module never imports that one, which imports this one lazily)."""

    def __iter__(self) -> Iterator[StreamChunk]: ...

    def close(self) -> None: ...

    def partial(self) -> AssembledResponse: ...


class DisplayHandle(Protocol):
    """What IPython's ``display(..., display_id=True)`` returns."""

    def update(self, obj: Any) -> None: ...


class MarkdownView:
    """Accumulates a stream into Markdown (pure: no IPython needed)."""

    def __init__(self, tips: Callable[[LlmFailure], Sequence[str]] | None = None) -> None:
        #: the recovery tips listed under a failure, if any
        self.tips = tips
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.tool_calls: list[ToolCallBlock] = []
        #: the files the model produced, as rendered once (an image inline)
        self.files: list[str] = []
        self.sources: list[tuple[int, Citation]] = []
        self._numbered = Sources()
        self.footer = ""
        self.finished = False

    def feed(self, chunk: object) -> None:
        if type(chunk) is TextDelta:
            self.text.append(chunk.text)
        elif type(chunk) is ReasoningDelta:
            self.reasoning.append(chunk.text)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, ToolCallBlock):
            self.tool_calls.append(chunk.block)
        elif type(chunk) is BlockEnd and isinstance(chunk.block, FileBlock):
            self.files.append(_markdown_file(chunk.block))
        elif type(chunk) is BlockEnd and isinstance(chunk.block, TextBlock) and chunk.block.citations:
            self.sources.extend(self._numbered.new(chunk.block.citations))
        elif type(chunk) is UsageChunk:
            self.footer = f"*usage: {describe_usage(chunk.usage)}*"
        elif type(chunk) is Finish:
            self.finished = True
            reason = chunk.reason
            line = f"*finish: {reason.kind}{f' ({reason.raw})' if reason.raw else ''}*"
            if reason.failure is not None:
                line += f" — **{html.escape(reason.failure.message)}**"
                for tip in self.tips(reason.failure) if self.tips is not None else ():
                    line += f"  \n*tip: {html.escape(tip)}*"
            self.footer = f"{self.footer}  \n{line}" if self.footer else line

    def render(self) -> str:
        parts = []
        if self.reasoning:
            body = html.escape("".join(self.reasoning))
            parts.append(f"<details><summary>Reasoning</summary>\n\n<pre>{body}</pre>\n\n</details>")
        if self.text:
            parts.append("".join(self.text))
        parts.extend(self.files)
        if self.sources:
            lines = [f"{number}. {_markdown_source(citation)}" for number, citation in self.sources]
            parts.append("**Sources**\n\n" + "\n".join(lines))
        if self.tool_calls:
            rows = ["| tool | arguments | id |", "|---|---|---|"]
            for call in self.tool_calls:
                args = call.arguments.replace("|", "\\|")
                flag = " ⚠ truncated" if call.arguments_truncated else ""
                rows.append(f"| `{call.name}` | `{args}`{flag} | `{call.id}` |")
            parts.append("\n".join(rows))
        if self.footer:
            parts.append(self.footer)
        return "\n\n".join(parts)


def _ipython_display() -> Callable[[str], DisplayHandle] | None:
    """A factory of live Markdown displays when running inside a kernel, else None."""
    if "IPython" not in sys.modules:
        return None
    try:
        import IPython
        import IPython.display
    except ImportError:
        return None
    get_ipython: Any = getattr(IPython, "get_ipython", None)
    markdown: Any = IPython.display.Markdown
    ipy_display: Any = IPython.display.display
    if get_ipython is None:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None

    def make(initial: str) -> DisplayHandle:
        handle: DisplayHandle = ipy_display(markdown(initial), display_id=True)

        class _Handle:
            def update(self, obj: Any) -> None:
                handle.update(markdown(obj))

        return _Handle()

    return make


def _tips_for(credential: CredentialSource | None) -> Callable[[LlmFailure], Sequence[str]] | None:
    """The tips function for ``credential`` (checked now, not at the first failure)."""
    if credential is None:
        return None
    check_choice(credential, "display: credential", CREDENTIAL_SOURCES)

    def tips(failure: LlmFailure) -> tuple[str, ...]:
        # a notebook has no shared key to switch back to
        return recovery_tips(failure, credential, shared_key=False)

    return tips


def display(
    stream: Displayable,
    *,
    max_updates_per_second: float = 15.0,
    display_factory: Callable[[str], DisplayHandle] | None = None,
    credential: CredentialSource | None = "personal",
) -> AssembledResponse:
    """Render ``stream`` live; returns the assembled response (an error finish included).

    A failure is shown with the recovery tips for whoever owns the ``credential``: the
    notebook's user and their own key by default (``"server"`` for an operator's
    notebook, ``None`` for no tips); see :func:`~dshstream._core.recovery.recovery_tips`.

    ``KeyboardInterrupt`` (the notebook's Stop) closes the stream, shows the partial
    output marked aborted and propagates; ``stream.partial()`` keeps that result.
    """
    tips = _tips_for(credential)
    factory = display_factory or _ipython_display()
    if factory is None:
        renderer = TextRenderer(tips=tips)
        finished = False
        try:
            for chunk in stream:
                renderer.feed(chunk)
                finished = type(chunk) is Finish
        except KeyboardInterrupt:
            stream.close()
            if not finished:
                renderer.feed(Finish(reason=stream.partial().finish))
            renderer.close()
            raise
        renderer.close()
        return stream.partial()
    view = MarkdownView(tips=tips)
    handle = factory("")
    interval = 1.0 / max_updates_per_second
    last = 0.0
    dirty = False
    try:
        for chunk in stream:
            view.feed(chunk)
            dirty = True
            now = time.monotonic()
            if now - last >= interval:
                handle.update(view.render())
                last = now
                dirty = False
    except KeyboardInterrupt:
        # Stop: end this stream, show what came marked aborted, then stop the cell.
        stream.close()
        if not view.finished:
            view.feed(Finish(reason=stream.partial().finish))
        handle.update(view.render())
        raise
    if dirty:
        handle.update(view.render())
    return stream.partial()
