"""The notebook renderer: driven with a fake display, and once in a real Jupyter kernel."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from dshstream import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    GenerateOptions,
    Message,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    TokenUsage,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)
from dshstream._adapters.base import LlmAdapter, ProviderInfo
from dshstream._chunk_stream import ChunkStream
from dshstream._notebook import display
from dshstream._service import LlmService


class FakeHandle:
    def __init__(self) -> None:
        self.updates: list[str] = []

    def update(self, obj: Any) -> None:
        self.updates.append(obj)


class Scripted(LlmAdapter):
    def __init__(self, chunks: list[StreamChunk], interrupt_at: int | None = None) -> None:
        self.chunks = chunks
        self.interrupt_at = interrupt_at

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        for number, chunk in enumerate(self.chunks):
            if number == self.interrupt_at:
                raise KeyboardInterrupt
            yield chunk

    def provider_info(self, provider: str) -> ProviderInfo:
        return ProviderInfo(provider, "Scripted")


def many_chunks() -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStart(index=0, block_type="reasoning"), ReasoningDelta(index=0, text="plan <b>")]
    chunks += [BlockStart(index=1, block_type="text")]
    chunks += [TextDelta(index=1, text="word ") for _ in range(2000)]
    chunks += [
        BlockStart(index=2, block_type="tool-call"),
        ToolCallDelta(index=2, id="c1", name="get_weather", arguments_delta='{"city":"Paris"}'),
        BlockEnd(index=2, block=ToolCallBlock(id="c1", name="get_weather", arguments='{"city":"Paris"}')),
        UsageChunk(usage=TokenUsage(10, 20, reasoning_tokens=5)),
        Finish(reason=FinishReason(kind="tool-calls", raw="tool_calls")),
    ]
    return chunks


def open_stream(adapter: LlmAdapter) -> ChunkStream:
    service = LlmService()
    service.register_adapter(["p"], adapter)
    return service.stream(GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),)))


def run(adapter: LlmAdapter) -> tuple[FakeHandle, Any]:
    handle = FakeHandle()
    result = display(open_stream(adapter), display_factory=lambda initial: handle)
    return handle, result


def test_renders_throttled_markdown_with_reasoning_tools_usage_and_finish() -> None:
    handle, result = run(Scripted(many_chunks()))
    # 2,000 chunks arrive in far less than a second: at most a handful of updates.
    assert 1 <= len(handle.updates) <= 16
    final = handle.updates[-1]
    assert "<details><summary>Reasoning</summary>" in final and "plan &lt;b&gt;" in final
    assert final.count("word") == 2000
    assert "| `get_weather` | `{\"city\":\"Paris\"}` | `c1` |" in final
    assert "usage: in 10 · out 20 (5 reasoning)" in final
    assert "finish: tool-calls (tool_calls)" in final
    assert result.tool_calls[0].name == "get_weather"


def test_stop_button_ends_the_stream_shows_it_aborted_and_stops_the_cell() -> None:
    stream = open_stream(Scripted(many_chunks(), interrupt_at=500))
    handle = FakeHandle()
    with pytest.raises(KeyboardInterrupt):
        display(stream, display_factory=lambda initial: handle)
    assert stream.done
    result = stream.partial()
    assert result.finish.kind == "aborted"
    assert result.text.count("word") == 497
    assert handle.updates[-1].count("word") == 497  # the partial answer stays on screen
    assert "finish: aborted" in handle.updates[-1]


def test_stop_during_a_display_update_also_ends_the_stream() -> None:
    class Interrupting(FakeHandle):
        def update(self, obj: Any) -> None:
            super().update(obj)
            if len(self.updates) == 1:
                raise KeyboardInterrupt

    stream = open_stream(Scripted(many_chunks()))
    handle = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        display(stream, display_factory=lambda initial: handle)
    assert stream.done and stream.partial().finish.kind == "aborted"
    assert "finish: aborted" in handle.updates[-1]
    assert handle.updates[-1].count("finish:") == 1


def test_stop_in_the_plain_text_fallback_propagates(capsys: pytest.CaptureFixture[str]) -> None:
    stream = open_stream(Scripted(many_chunks(), interrupt_at=10))
    with pytest.raises(KeyboardInterrupt):
        stream.display()
    out = capsys.readouterr().out
    assert "word word" in out
    assert "finish: aborted" in out
    assert stream.partial().finish.kind == "aborted"


def test_plain_text_fallback_outside_a_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    service = LlmService()
    service.register_adapter(["p"], Scripted(many_chunks()[:10] + many_chunks()[-1:]))
    stream = service.stream(GenerateOptions(provider="p", model="m", messages=(Message.user("hi"),)))
    stream.display()
    assert "word word" in capsys.readouterr().out


def test_display_returns_nothing_and_the_result_stays_on_the_stream(capsys: pytest.CaptureFixture[str]) -> None:
    # None, as IPython's own display() returns: a cell ending in it shows only the rendering
    stream = open_stream(Scripted(many_chunks()))
    shown: object = stream.display()  # type: ignore[func-returns-value]
    assert shown is None
    assert "word word" in capsys.readouterr().out
    result = stream.result()  # the stream is done: its assembled response, as rendered
    assert result.text.count("word") == 2000 and result.tool_calls[0].name == "get_weather"
    assert stream.result() == result == stream.partial()


def test_a_registration_has_an_empty_display_hook_but_a_repr() -> None:
    service = LlmService()
    registration = service.register_adapter(["p"], Scripted([]))
    assert registration._ipython_display_() is None  # type: ignore[func-returns-value]
    assert repr(registration) == "Registration(providers=['p'], disposed=False)"


def execute_notebook(*cells: str, allow_errors: bool = False) -> Any:
    """Run ``cells`` in a real python3 kernel; returns the executed notebook."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = nbformat.v4.new_notebook()
    for cell in cells:
        notebook.cells.append(nbformat.v4.new_code_cell(textwrap.dedent(cell)))
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3", allow_errors=allow_errors)
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - a missing kernelspec is an environment problem
        if "No such kernel" in str(exc):
            pytest.skip(f"no python3 kernel: {exc}")
        raise
    return notebook


def markdown_of(outputs: list[Any]) -> list[str]:
    return [
        o["data"]["text/markdown"]
        for o in outputs
        if o.get("output_type") in ("display_data", "update_display_data") and "text/markdown" in o.get("data", {})
    ]


def streams_of(outputs: list[Any]) -> str:
    return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")


def test_in_a_real_kernel() -> None:
    code = textwrap.dedent(
        """
        from dshstream import LlmService, OpenAIChatAdapter, GenerateOptions, Message
        from dshstream._replay_server import ReplayServer
        body = (b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"Hello from the kernel"}}]}\\n\\n'
                b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\n'
                b'data: [DONE]\\n\\n')
        with ReplayServer({"/v1/": body}) as server:
            service = LlmService()
            service.register_adapter(["local"], OpenAIChatAdapter(api_key="k", base_url=server.url + "/v1"))
            stream = service.stream(GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),)))
            stream.display()
        print("TEXT=" + stream.result().text)
        """
    )
    notebook = execute_notebook(code)
    outputs = notebook.cells[0].outputs
    assert "TEXT=Hello from the kernel" in streams_of(outputs)
    assert any("Hello from the kernel" in m for m in markdown_of(outputs))


def test_a_cell_shows_only_the_rendering() -> None:
    # A setup cell ending in register_adapter(...), then a cell ending in stream.display():
    # no Registration(...) line, no AssembledResponse repr; the result is on the stream.
    setup = """
        from dshstream import LlmService, OpenAIChatAdapter, GenerateOptions, Message
        from dshstream._replay_server import ReplayServer
        body = (b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"Only this"}}]}\\n\\n'
                b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\n'
                b'data: [DONE]\\n\\n')
        server = ReplayServer({"/v1/": body}).start()
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k", base_url=server.url + "/v1"))
        """
    show = """
        stream = service.stream(GenerateOptions(provider="local", model="m", messages=(Message.user("hi"),)))
        stream.display()
        """
    after = """
        print("TEXT=" + stream.result().text)
        server.stop()
        """
    notebook = execute_notebook(setup, show, after)
    assert notebook.cells[0].outputs == []
    outputs = notebook.cells[1].outputs
    assert outputs and all(o["output_type"] in ("display_data", "update_display_data") for o in outputs), outputs
    assert all(set(o["data"]) == {"text/markdown", "text/plain"} for o in outputs), outputs
    assert "Only this" in markdown_of(outputs)[-1]
    assert not any("AssembledResponse" in str(o) or "Registration" in str(o) for o in outputs)
    assert streams_of(notebook.cells[2].outputs) == "TEXT=Only this\n"


def test_stop_in_a_real_kernel_stops_the_cell_not_just_the_stream() -> None:
    # The cell interrupts itself (as the Stop button does: SIGINT to the kernel) while
    # the first of two streams is stalled on a slow loopback server.
    start = """
        import os, signal, threading
        from dshstream import LlmService, OpenAIChatAdapter, GenerateOptions, Message
        from dshstream._replay_server import ReplayServer, Route
        event = lambda text: ('data: {"id":"x","choices":[{"index":0,"delta":{"content":"%s"}}]}\\n\\n' % text).encode()
        route = Route(body=b"", script=[event("Partial "), event("answer"), 30.0, event(" never shown"),
                                        b'data: {"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\\n\\n',
                                        b"data: [DONE]\\n\\n"])
        server = ReplayServer({"/v1/": route}).start()
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k", base_url=server.url + "/v1"))
        started, streams = [], []
        """
    loop = """
        threading.Timer(0.8, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        for prompt in ("first", "second"):
            started.append(prompt)
            streams.append(service.stream(GenerateOptions(provider="local", model="m",
                                                          messages=(Message.user(prompt),))))
            streams[-1].display()
        """
    after = """
        partial = streams[0].partial()
        print("STARTED=" + ",".join(started))
        print("REQUESTS=%d" % len(server.requests))
        print("PARTIAL=%s|%s" % (partial.text, partial.finish.kind))
        server.stop()
        """
    notebook = execute_notebook(start, loop, after, allow_errors=True)
    outputs = notebook.cells[1].outputs
    errors = [o for o in outputs if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["KeyboardInterrupt"], outputs
    final = markdown_of(outputs)[-1]
    assert "Partial answer" in final and "never shown" not in final
    assert "finish: aborted" in final
    after_out = streams_of(notebook.cells[2].outputs)
    assert "STARTED=first\n" in after_out  # the second stream never started
    assert "REQUESTS=1\n" in after_out
    assert "PARTIAL=Partial answer|aborted" in after_out


def _failing() -> list[StreamChunk]:
    from dshstream._core.errors import make_failure

    failure = make_failure("AUTH", "p: authentication failed (AUTH, HTTP 401)", provider="p", status=401,
                           detail="upstream: key sk-upstream-CANARY123456 revoked")
    return [TextDelta(index=0, text="par"), Finish(reason=FinishReason(kind="error", failure=failure))]


def test_a_failure_is_shown_with_the_tips_for_the_credential() -> None:
    from dshstream.errors import recovery_tips
    from dshstream._core.errors import make_failure

    auth = make_failure("AUTH", "x")
    handle, result = run(Scripted(_failing()))
    page = handle.updates[-1]
    assert result.failure is not None and "authentication failed" in page
    personal = recovery_tips(auth, "personal", shared_key=False)
    assert all(f"*tip: {tip}*" in page for tip in personal)
    assert "shared key" not in page and "CANARY" not in page

    handle = FakeHandle()
    display(open_stream(Scripted(_failing())), display_factory=lambda initial: handle, credential="server")
    assert all(f"*tip: {tip}*" in handle.updates[-1] for tip in recovery_tips(auth, "server"))

    handle = FakeHandle()
    display(open_stream(Scripted(_failing())), display_factory=lambda initial: handle, credential=None)
    assert "tip:" not in handle.updates[-1]


def test_tips_in_the_plain_text_fallback(capsys: pytest.CaptureFixture[str]) -> None:
    display(open_stream(Scripted(_failing())))
    out = capsys.readouterr().out
    assert "finish: error — p: authentication failed" in out
    assert "tip: Check that your API key is correct" in out


def test_an_unknown_credential_is_refused_before_streaming() -> None:
    from dshstream import ConfigurationError

    stream = open_stream(Scripted(_failing()))
    with pytest.raises(ConfigurationError, match="credential"):
        display(stream, credential="owner")  # type: ignore[arg-type]
