"""The examples in examples/ that need no key run as documented.

Each example runs in a fresh interpreter, as a reader runs it; the runs are started
together when the first test here needs one (most of an example's time is an
interpreter starting, a LiteLLM import or a pause it makes on purpose), and each test
reads its own run's output.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import REPOSITORY

ROOT = REPOSITORY
ENV = {**os.environ, "NO_COLOR": "1"}
HAS_LITELLM = importlib.util.find_spec("litellm") is not None


def run(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env or ENV, timeout=timeout,
                          cwd=ROOT, check=False)


def _tiny_png() -> bytes:
    """An image of the reader's own, made with the example's own ``png`` helper."""
    spec = importlib.util.spec_from_file_location("attach_image", ROOT / "examples" / "attach_image.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data: bytes = module.png(8, 4)
    return data


def _runs(scratch: Path) -> dict[str, tuple[tuple[str, ...], dict[str, str] | None, float]]:
    """Every offline example run: name -> (arguments, environment, timeout)."""
    (scratch / "tiny.png").write_bytes(_tiny_png())
    no_keys = {k: v for k, v in ENV.items() if not k.endswith(("_API_KEY", "_KEY"))}
    runs: dict[str, tuple[tuple[str, ...], dict[str, str] | None, float]] = {
        "cancel_from_thread": (("examples/cancel_from_thread.py",), None, 60),
        "replay_transcript": (
            ("examples/replay_transcript.py", "tests/fixtures/real/anthropic/thinking_then_tool_use.sse"), None, 60,
        ),
        # nothing listens on the discard port
        "tool_loop_failed": (("examples/tool_loop.py",), {**ENV, "DSHSTREAM_TEST_SERVER": "http://127.0.0.1:9"}, 120),
        "structured_output": (("examples/structured_output.py",), None, 60),
        "observe_calls": (("examples/observe_calls.py",), None, 60),
        "attach_image": (("examples/attach_image.py",), None, 60),
        "attach_image_own": (("examples/attach_image.py", str(scratch / "tiny.png")), None, 60),
        "quickstart_without_a_key": (("examples/quickstart.py", "hi"), no_keys, 60),
        "provider_batch": (("examples/provider_batch.py",), None, 60),
    }
    if HAS_LITELLM:
        # importing litellm alone takes seconds; under a loaded CI machine, many more
        runs["litellm_any_provider"] = (("examples/litellm_any_provider.py",), None, 180)
    return runs


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """Every run of :func:`_runs`, started at once: name -> its finished process."""
    runs = _runs(tmp_path_factory.mktemp("examples"))
    with ThreadPoolExecutor(max_workers=len(runs)) as pool:
        yield {name: pool.submit(run, *args, env=env, timeout=timeout) for name, (args, env, timeout) in runs.items()}


def finished(example: dict[str, Future[subprocess.CompletedProcess[str]]], name: str) -> subprocess.CompletedProcess[str]:
    return example[name].result()


def test_provider_batch_example(example: dict[str, Future[subprocess.CompletedProcess[str]]]) -> None:
    proc = finished(example, "provider_batch")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "submitted dsb1:anthropic=msgbatch_1",
        "  poll: 0 done, 0 failed, 4 running",
        "  poll: 2 done, 2 failed, 0 running",
        "a: 'HELLO!' (stop, 16 tokens)",
        "b: CONTEXT_WINDOW_EXCEEDED: anthropic: context window exceeded by 50000 tokens (250000 > 200000) "
        "(CONTEXT_WINDOW_EXCEEDED, HTTP 400)",
        "c: TIMEOUT: anthropic: the batch's 24 hours ended before this row ran (TIMEOUT)",
        "d: 'WORLD!' (stop, 16 tokens)",
    ]


def test_cancel_from_thread_example(example: dict[str, Future[subprocess.CompletedProcess[str]]]) -> None:
    proc = finished(example, "cancel_from_thread")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "'Once upon a time' aborted ABORTED"


def test_replay_transcript_example(example: dict[str, Future[subprocess.CompletedProcess[str]]]) -> None:
    proc = finished(example, "replay_transcript")
    assert proc.returncode == 0, proc.stderr
    assert "[anthropic]" in proc.stdout
    assert "name='fixed_version'" in proc.stdout


@pytest.mark.skipif(not HAS_LITELLM, reason="the litellm extra is not installed")
def test_litellm_any_provider_example_offline(example: dict[str, Future[subprocess.CompletedProcess[str]]]) -> None:
    proc = finished(example, "litellm_any_provider")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "claude (LiteLLM anthropic/):"
    assert "  [tool call] fixed_version({})" in lines
    assert "  [tool call] get_capital({\"country\":\"UK\"})" in lines
    finishes = [line for line in lines if line.startswith("  finish=")]
    assert len(finishes) == 2 and all(line.startswith("  finish=tool-calls usage=TokenUsage(") for line in finishes)
    assert finishes[0].endswith("signed_reasoning=True")  # the Anthropic thinking signature survived LiteLLM


def test_tool_loop_example_reports_a_failed_step_with_tips(
    example: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    proc = finished(example, "tool_loop_failed")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "failed at step 1: local: " in proc.stderr and "(TRANSPORT)" in proc.stderr
    assert "tip: Check the network connection, then try again." in proc.stderr


def test_tool_loop_example_against_the_live_server() -> None:
    server = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")
    if not server:
        pytest.skip("DSHSTREAM_TEST_SERVER is not set")
    proc = run("examples/tool_loop.py", env={**ENV, "DSHSTREAM_TEST_SERVER": server}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '[step 1] get_weather({"city": "Paris"})' in proc.stdout
    assert "ran get_weather: ok ->" in proc.stdout
    assert "2 steps (done), 4 messages" in proc.stdout


def _sections(stdout: str, *titles: str) -> list[list[str]]:
    out: list[list[str]] = []
    for line in stdout.splitlines():
        if line in titles:
            out.append([])
        elif out:
            out[-1].append(line)
    assert len(out) == len(titles), stdout
    return out


def test_structured_output_example_reads_a_real_bedrock_answer_while_it_streams(
    example: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    proc = finished(example, "structured_output")
    assert proc.returncode == 0, proc.stderr
    first, cut, patches = _sections(
        proc.stdout, "Bedrock Converse, response_format=JsonSchema('CityInfo', ...):",
        "The same answer, cut off mid-stream:", "A recorded OpenAI tool call's arguments, as patches:",
    )
    # the recorded deltas are '{"' / 'city":"' / 'Paris","country":"France","population":' / '2161' / '000}':
    # a number is shown only once complete, so 2161 never appears
    assert first == [
        "  partial   {}",
        "  partial   {'city': ''}",
        "  partial   {'city': 'Paris', 'country': 'France'}",
        "  done      {'city': 'Paris', 'country': 'France', 'population': 2161000}",
        "  finish=stop usage: in=210 out=18",
        "  the request carried outputConfig.textFormat: type='json_schema' name='CityInfo'",
    ]
    assert cut == [
        "  partial   {}",
        "  partial   {'city': ''}",
        "  partial   {'city': 'Paris', 'country': 'France'}",
        "  truncated {'city': 'Paris', 'country': 'France'}",
        "  finish=error (STREAM_CLOSED)",
    ]
    assert patches == [
        "  add    () {}",
        "  add    ('ticker',) 'AAP'",
        "  append ('ticker',) 'L'",
        "  add    ('exchange',) 'NA'",
        "  append ('exchange',) 'SDAQ'",
        '  arguments: {"ticker": "AAPL", "exchange": "NASDAQ"}',
    ]


def test_observe_calls_example_hears_each_stream_end_once(
    example: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    proc = finished(example, "observe_calls")
    assert proc.returncode == 0, proc.stderr
    otel = importlib.util.find_spec("opentelemetry.sdk") is not None
    titles = ["1. a stream read to its end:", "2. a stream whose first attempt was rate limited:",
              "3. a stream left after its first chunk:"] + (["OpenTelemetry spans (the adapters' observer):"] if otel else [])
    plain, busy, left, *spans = _sections(proc.stdout, *titles)
    for lines, provider in ((plain, "plain"), (busy, "busy"), (left, "left")):
        records = [line.split()[0] for line in lines if not line.startswith("  log ")]
        assert records[0] == "started" and records[-1] == "finished", lines
        assert records.count("started") == records.count("first") == records.count("finished") == 1, lines
        assert lines[0] == f"  started   {provider} anthropic/claude-sonnet-4.5 max_tokens=512"
        info = [line for line in lines if line.startswith(f"  log       INFO dshstream.observe: {provider} ")]
        assert len(info) == 1, lines
        assert "Why is the sky blue" not in "\n".join(lines)  # records never carry the prompt
    assert "  attempt   #1 ok, 11 chunks, server 127.0.0.1" in plain
    assert plain[-2] == ("  finished  stop after 1 attempt(s), 11 chunks, in=43 out=36 cost=$0.000669, "
                         "response gen-1765226419-AGrwjunAftQIAgweibL8")
    assert [line for line in busy if line.startswith("  attempt")] == [
        "  attempt   #1 failed RATE_LIMIT (HTTP 429), 0 chunks, server 127.0.0.1",
        "  attempt   #2 ok, 11 chunks, server 127.0.0.1",
    ]
    assert any(line.startswith("  finished  stop after 2 attempt(s), 11 chunks") for line in busy)
    assert any("WARNING dshstream.adapters: busy: attempt 1 failed: RATE_LIMIT" in line for line in busy)
    assert any(line.startswith("  attempt   #1 aborted ABORTED, ") for line in left)
    assert any(line.startswith("  finished  aborted after 1 attempt(s), ") for line in left)
    if otel:
        (span_lines,) = spans
        assert len(span_lines) == 3
        assert span_lines[0].startswith("  chat anthropic/claude-sonnet-4.5: UNSET error.type=None input_tokens=43 ")
        assert span_lines[1].count("'dshstream.attempt'") == 2
        assert span_lines[2].startswith("  chat anthropic/claude-sonnet-4.5: ERROR error.type=ABORTED ")


@pytest.mark.parametrize("own_image", [False, True])
def test_attach_image_example_shows_each_providers_image_part(
    example: dict[str, Future[subprocess.CompletedProcess[str]]], own_image: bool
) -> None:
    size = 4 * ((len(_tiny_png()) + 2) // 3) if own_image else 2396
    proc = finished(example, "attach_image_own" if own_image else "attach_image")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "iVBOR" not in out  # the bytes are elided
    name = "tiny.png" if own_image else "gradient.png"
    assert f"attachments=(ImagePart(media_type='image/png', size=" in out and f"name='{name}')" in out
    elided = f"<{size} base64 characters>"
    assert f'{{"type": "image_url", "image_url": {{"url": "data:image/png;base64,{elided}"}}}}' in out
    assert f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{elided}"}}}}' in out
    assert f'{{"inlineData": {{"mimeType": "image/png", "data": "{elided}"}}}}' in out
    assert f'{{"image": {{"format": "png", "source": {{"bytes": "{elided}"}}}}}}' in out
    assert out.count('"What is in this picture?"') == 4
    for line in ("openai: POST /v1/chat/completions -> finish tool-calls",
                 "gemini: POST /v1beta/models/gemini-2.5-flash:streamGenerateContent -> finish stop",
                 "bedrock: POST /model/us.amazon.nova-lite-v1%3A0/converse-stream -> finish stop"):
        assert line in out
    assert "  INVALID_OPTIONS: messages[0].content[1]: Anthropic Messages does not take audio parts" in out
    assert out.rstrip().endswith("requests sent: 0")


def test_quickstart_without_a_key_names_the_variables_and_exits_2(
    example: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    proc = finished(example, "quickstart_without_a_key")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "OPENAI_API_KEY" in proc.stderr and "ANTHROPIC_API_KEY" in proc.stderr and "dshstream demo" in proc.stderr


def test_many_requests_example_resumes_from_its_checkpoint() -> None:
    proc = run("examples/many_requests.py")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "first run: 40 of 40 ok, 40 requests sent",
        "rerun: 40 rows from the checkpoint, 0 requests sent",
        "checkpoint: 40 lines",
        "an answer: '2 + 2 = 4'",
    ]
