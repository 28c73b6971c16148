"""The command line end to end, in a subprocess: replay, demo, exit codes.

The one-line usage errors (and which key goes to a ``--base-url``) are checked by calling
the command line's ``main`` in this process (``run_here``): the same argument parsing and
messages, without an interpreter start per case; that ``python -m dshstream`` turns
``main``'s return into the exit status is checked by the subprocess tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, KNOWN_FINISH, REPOSITORY, fake_key

ENV = {**os.environ, "NO_COLOR": "1"}


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dshstream", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        env=ENV,
        timeout=120,
    )


REPLAYS = [
    "openai/tool_call_include_usage_gpt4o_mini.sse",
    "deepseek/reasoner_reasoning_content_then_content.sse",
    "anthropic/thinking_then_tool_use.sse",
    "gemini/text.sse",
    "openai-responses/text.sse",
]


@pytest.mark.parametrize("fixture", REPLAYS)
def test_replay_jsonl_detects_the_wire(fixture: str) -> None:
    proc = run("replay", str(FIXTURES / fixture), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "finish"
    known = KNOWN_FINISH[fixture]
    assert lines[-1]["reason"] == {"kind": known.kind, "raw": known.raw}


def test_replay_text_from_stdin() -> None:
    data = (FIXTURES / "deepseek/reasoner_reasoning_content_then_content.sse").read_bytes()
    proc = run("replay", "-", stdin=data)
    assert proc.returncode == 0, proc.stderr
    assert "[reasoning]" in proc.stdout
    assert proc.stdout.endswith("usage: in 6 · out 212 (198 reasoning)\nfinish: stop (stop)\n")
    assert "\x1b[" not in proc.stdout  # NO_COLOR


def test_replay_summary_shows_the_prompt_cache_saving() -> None:
    """The usage line says what share of the input the prompt cache served (issue 33):
    DeepSeek read 320 of 339 input tokens from its cache."""
    proc = run("replay", str(FIXTURES / "deepseek/reasoner_tool_call_cache_hit.sse"))
    assert proc.returncode == 0, proc.stderr
    assert "usage: in 19 (+320 cache read, 94% of input cached) · out 83 (39 reasoning)\n" in proc.stdout


def test_replay_of_an_error_stream_exits_1_with_the_headline() -> None:
    proc = run("replay", str(FIXTURES / "openrouter/midstream_error_chunk.sse"), "--wire", "openrouter")
    assert proc.returncode == 1
    assert proc.stderr == "error: openrouter: invalid request (INVALID_REQUEST, HTTP 400)\n"


def test_replay_of_a_truncated_stream_exits_1(tmp_path: object) -> None:
    data = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    cut = data[: data.index(b"finish_reason\":\"stop") - 200]
    proc = run("replay", "-", "--wire", "openai-chat", "--format", "jsonl", stdin=cut)
    assert proc.returncode == 1
    finish = json.loads(proc.stdout.splitlines()[-1])
    assert finish["type"] == "finish" and finish["reason"]["kind"] == "error"
    assert finish["reason"]["failure"]["code"] == "STREAM_CLOSED"
    assert proc.stderr == "error: openai: stream ended before the provider's end-of-stream marker\n"


def test_usage_errors_exit_2() -> None:
    assert run("replay").returncode == 2
    assert run("nonsense").returncode == 2
    assert run("replay", "/nonexistent/file.sse").returncode == 2
    assert run("replay", str(FIXTURES / "gemini/text.sse"), "--wire", "nope").returncode == 2


def test_demo_streams_every_bundled_transcript_over_loopback() -> None:
    proc = run("demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "5/5 streams completed over 127.0.0.1" in out
    assert "→ tool call get_capital" in out
    assert "[reasoning]" in out
    assert out.count("usage: in ") == 5  # every bundled transcript reports usage


def test_chat_against_a_loopback_endpoint() -> None:
    from dshstream._replay_server import ReplayServer

    body = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run("chat", "-p", "local", "-m", "gpt-4o", "--base-url", f"{server.url}/v1", "--json", "Hi")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout.splitlines()[-1])["reason"]["kind"] == "stop"
        assert server.requests[-1].body["messages"] == [{"role": "user", "content": "Hi"}]


def test_chat_provider_failure_exits_1() -> None:
    from dshstream._replay_server import ReplayServer, Route

    with ReplayServer({"/v1/": Route(body=b'{"error":{"message":"bad key"}}', status=401)}) as server:
        proc = run("chat", "-p", "local", "-m", "x", "--base-url", f"{server.url}/v1", "Hi")
    assert proc.returncode == 1
    assert proc.stderr == (
        "error: local: authentication failed (AUTH, HTTP 401)\n"
        "tip: Check that your API key is correct, active and allowed to use this model.\n"
    )
    assert proc.stdout == "finish: error — local: authentication failed (AUTH, HTTP 401)\n"


def test_chat_failure_tips_are_the_personal_ones_naming_the_key_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream.errors import recovery_tips
    from dshstream._core.errors import make_failure
    from dshstream._replay_server import ReplayServer, Route

    answers = {"/v1/": Route(body=b'{"error":{"message":"sk-upstream-SECRET1234567890 is bad"}}', status=401)}
    with ReplayServer(answers) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "x", "--base-url", f"{server.url}/v1",
                        "--api-key-env", "MY_GATEWAY_KEY", "Hi", env={"MY_GATEWAY_KEY": "gw-key-1234"})
    assert proc.returncode == 1
    tips = [line.removeprefix("tip: ") for line in proc.stderr.splitlines() if line.startswith("tip: ")]
    expected = recovery_tips(make_failure("AUTH", "x"), "personal", key_env="MY_GATEWAY_KEY", shared_key=False)
    assert tips == list(expected) and "MY_GATEWAY_KEY" in tips[0]
    assert "shared" not in proc.stderr and "pool" not in proc.stderr and "SECRET" not in proc.stderr


def test_a_replayed_failure_gets_no_tips() -> None:
    proc = run("replay", str(FIXTURES / "openrouter/midstream_error_chunk.sse"), "--wire", "openrouter")
    assert "tip:" not in proc.stderr


def test_chat_sends_system_tools_and_reasoning_effort(tmp_path: "os.PathLike[str]") -> None:
    from pathlib import Path

    from dshstream._replay_server import ReplayServer

    tools = Path(tmp_path) / "tools.json"
    tools.write_text(json.dumps([{"type": "function", "function": {
        "name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {}}}}]))
    body = (FIXTURES / "openai/single_tool_call.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run("chat", "-p", "deepseek", "-m", "deepseek-reasoner", "--base-url", f"{server.url}/v1",
                   "--system", "Be brief.", "--tools", str(tools), "--reasoning-effort", "high",
                   "--max-tokens", "50", "Weather?")
        assert proc.returncode == 0, proc.stderr
        assert "→ tool call GetWeatherArgs" in proc.stdout
        sent = server.requests[-1].body
    assert sent["messages"][0] == {"role": "system", "content": "Be brief."}
    assert sent["tools"][0]["function"]["name"] == "get_weather"
    assert sent["thinking"] == {"type": "enabled"} and sent["reasoning_effort"] == "high"
    assert sent["max_tokens"] == 50


# --------------------------------------------------------------------------- rough edges

PROVIDER_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "xai": "XAI_API_KEY",
    "xai-chat": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "perplexity": "PERPLEXITY_API_KEY",
}
ALL_KEYS = {*PROVIDER_KEYS.values(), "GOOGLE_API_KEY", "VLLM_API_KEY"}


def run_here(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    env: dict[str, str] | None = None,
    drop: set[str] = ALL_KEYS,
) -> subprocess.CompletedProcess[str]:
    """``main(args)`` in this process, with ``NO_COLOR=1``, the ``drop`` variables unset
    and ``env`` set; stdout and stderr captured."""
    from dshstream._cli import main

    monkeypatch.setenv("NO_COLOR", "1")
    for name in drop:
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    capsys.readouterr()
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["dshstream", *args], code, out, err)


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed attempts are retried as usual, after a thousandth of the usual backoff: these
    tests read the message the last attempt ends with, not how long the retries waited."""
    from dshstream._core.retry import RetryPolicy

    delay = RetryPolicy.delay

    def quick(self: RetryPolicy, *args: Any, **kwargs: Any) -> float | None:
        wait = delay(self, *args, **kwargs)
        return None if wait is None else wait / 1000

    monkeypatch.setattr(RetryPolicy, "delay", quick)


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The one ``error:`` line, with the ``tip:`` lines under it (if any) joined to it."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines and lines[0].startswith("error: "), proc.stderr
    assert all(line.startswith("tip: ") for line in lines[1:]), proc.stderr
    return " ".join(lines)


@pytest.mark.parametrize("provider", sorted(PROVIDER_KEYS))
def test_a_missing_key_names_the_variable_to_set(
    provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = run_here(monkeypatch, capsys, "chat", "-p", provider, "-m", "some-model", "x")
    line = one_error_line(proc)
    assert PROVIDER_KEYS[provider] in line and "--base-url" in line
    assert "no adapter" not in line
    # the tip is the personal one of recovery_tips, not a string of the command's own
    tip = proc.stderr.splitlines()[1]
    assert tip.startswith(f"tip: Set {PROVIDER_KEYS[provider]}")
    assert tip.endswith(" to your API key, or pass --base-url to use an OpenAI-compatible server.")


def test_models_without_a_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "models", "-p", "groq"))
    assert "GROQ_API_KEY" in line


def test_an_unknown_provider_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "nope", "-m", "m", "x"))
    assert "'nope'" in line and "openai" in line


def test_replay_of_a_missing_file_names_the_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "replay", "/nonexistent/file.sse", drop=set()))
    assert "/nonexistent/file.sse" in line


@pytest.mark.parametrize("url", ["notaurl", "ftp://127.0.0.1/v1", "http://", "http://:80/v1", "127.0.0.1:8080/v1"])
def test_an_invalid_base_url_is_a_usage_error(
    url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url", url, "hi"))
    assert "not a valid URL" in line and "TRANSPORT" not in line


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "No such file"),
        ("[{", "not valid JSON"),
        ('[{"type": "function", "function": {"description": "no name"}}]', 'no "name"'),
        ('["get_weather"]', "not an object"),
        ('[{"name": "f", "parameters": [1, 2]}]', '"parameters" must be'),
        ("[]", "empty"),
    ],
)
def test_a_bad_tools_file_is_one_line_and_exit_2(
    tmp_path: "os.PathLike[str]",
    content: str | None,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    path = Path(tmp_path) / "tools.json"
    if content is not None:
        path.write_text(content)
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                                   "http://127.0.0.1:9/v1", "--tools", str(path), "hi"))
    assert str(path) in line and says in line


def _authorization(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    env: dict[str, str],
    provider: str = "openai",
) -> str | None:
    from dshstream._replay_server import ReplayServer

    body = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", provider, "-m", "m", "--base-url", f"{server.url}/v1",
                        *args, "Hi", env=env)
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == 1
        return server.requests[0].headers.get("authorization")


@pytest.mark.parametrize("provider", ["openai", "deepseek", "local"])
def test_base_url_gets_no_environment_key_unless_named(
    provider: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = {name: f"sk-env-secret-{n:04d}" for n, name in enumerate(sorted(ALL_KEYS))}
    assert _authorization(monkeypatch, capsys, env=keys, provider=provider) is None
    assert _authorization(monkeypatch, capsys, "--api-key-env", "MY_GATEWAY_KEY",
                          env={**keys, "MY_GATEWAY_KEY": "gw-key-1234"}, provider=provider) == "Bearer gw-key-1234"


def test_a_named_but_unset_key_variable_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                                   "http://127.0.0.1:9/v1", "--api-key-env", "NOT_SET_ANYWHERE", "hi"))
    assert "NOT_SET_ANYWHERE" in line


def test_a_closed_pipe_is_a_quiet_successful_exit() -> None:
    from dshstream._replay_server import ReplayServer, Route

    data = (FIXTURES / "openai/text_include_usage.sse").read_bytes()
    events = [event + b"\n\n" for event in data.split(b"\n\n") if event.strip()]
    # A few events, then a pause while the reader goes away, then the rest.
    route = Route(body=b"", script=[*events[:5], 0.5, *events[5:]])
    with ReplayServer({"/v1/": route}) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dshstream", "chat", "-p", "local", "-m", "m", "--base-url", f"{server.url}/v1",
             "--json", "Hi"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=ENV,
        )
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        assert first.startswith(b"{")
        proc.stdout.close()  # like `| head -1`
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 0
    assert stderr == b""


def test_demo_into_head_is_quiet() -> None:
    command = f"{sys.executable} -m dshstream demo | head -2"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=ENV,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(proc.stdout.splitlines()) == 2


def test_a_failure_goes_to_stderr_once_when_piped() -> None:
    proc = run("replay", str(FIXTURES / "openrouter/midstream_error_chunk.sse"), "--wire", "openrouter")
    assert proc.returncode == 1
    headline = proc.stderr.removeprefix("error: ").strip()
    assert proc.stderr.count("error: ") == 1
    assert f"finish: error (length) — {headline}" in proc.stdout  # the record on stdout is whole


# --------------------------------------------------------------------------- structured output

CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
               "additionalProperties": False}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (CITY_SCHEMA, {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY_SCHEMA, "strict": True}}),
        ({"name": "Place", "schema": CITY_SCHEMA, "strict": False},
         {"type": "json_schema", "json_schema": {"name": "Place", "schema": CITY_SCHEMA, "strict": False}}),
        (None, {"type": "json_object"}),
    ],
    ids=["schema-file", "openai-wrapper", "json-mode"],
)
def test_chat_asks_for_json(
    tmp_path: "os.PathLike[str]",
    content: dict[str, object] | None,
    expected: dict[str, object],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    from dshstream._replay_server import ReplayServer

    path = Path(tmp_path) / "city.json"
    path.write_text(json.dumps(content))
    option = ["--schema", str(path)] if content is not None else ["--json-mode"]
    with ReplayServer({"/v1/": (FIXTURES / "openai/text_include_usage.sse").read_bytes()}) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url", f"{server.url}/v1",
                        *option, "Where?")
        assert proc.returncode == 0, proc.stderr
        sent = server.requests[-1].body
    assert sent["response_format"] == expected


@pytest.mark.parametrize(
    ("content", "says"),
    [("[1, 2]", "expected a JSON Schema object"), ("{", "not valid JSON"), (None, "No such file"),
     ('{"name": "has space", "schema": {"type": "object"}}', "JsonSchema.name")],
)
def test_a_bad_schema_file_is_one_line_and_exit_2(
    tmp_path: "os.PathLike[str]",
    content: str | None,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    path = Path(tmp_path) / "schema.json"
    if content is not None:
        path.write_text(content)
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                                   "http://127.0.0.1:9/v1", "--schema", str(path), "hi"))
    assert str(path) in line and says in line


# --------------------------------------------------------------------------- a newcomer's first minutes

LOCAL_URLS = {"OLLAMA_HOST", "OLLAMA_BASE_URL", "LLAMACPP_BASE_URL", "VLLM_BASE_URL", "LMSTUDIO_BASE_URL"}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def failure_lines(proc: subprocess.CompletedProcess[str]) -> tuple[str, str, list[str]]:
    """The ``error:`` headline, the ``cause:`` and the tips of a failed command (exit 1)."""
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("error: ") and lines[1].startswith("cause: "), proc.stderr
    assert all(line.startswith("tip: ") for line in lines[2:]) and lines[2:], proc.stderr
    return lines[0], lines[1].removeprefix("cause: "), [line.removeprefix("tip: ") for line in lines[2:]]


def test_connection_refused_names_the_address_and_the_option_that_fixes_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], quick_retries: None
) -> None:
    port = closed_port()
    proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                    f"http://user:sk-url-secret-0000@127.0.0.1:{port}/v1", "hi")
    headline, cause, tips = failure_lines(proc)
    assert "TRANSPORT" in headline
    assert cause == f"connection refused by 127.0.0.1:{port}"
    assert tips == [f"Start the server at 127.0.0.1:{port}, or point --base-url at the address it listens on."]
    assert "sk-url-secret" not in proc.stderr + proc.stdout and "Errno" not in proc.stderr


def test_models_of_a_local_server_say_which_variable_points_at_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    port = closed_port()
    default = run_here(monkeypatch, capsys, "models", "-p", "llamacpp", drop=ALL_KEYS | LOCAL_URLS,
                       env={"LLAMACPP_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    _, cause, tips = failure_lines(default)
    assert cause == f"connection refused by 127.0.0.1:{port}"
    assert tips == [f"Start the server at 127.0.0.1:{port}, or point LLAMACPP_BASE_URL or --base-url at the "
                    "address it listens on."]


def test_models_takes_base_url_and_the_local_variables(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream._replay_server import ReplayServer, Route

    listing = Route(body=b'{"object":"list","data":[{"id":"qwen"},{"id":"smollm2"}]}', content_type="application/json")
    with ReplayServer({"/v1/models": listing}) as server:
        flag = run_here(monkeypatch, capsys, "models", "-p", "llamacpp", "--base-url", f"{server.url}/v1")
        assert (flag.returncode, flag.stdout, flag.stderr) == (0, "qwen\nsmollm2\n", "")
        variable = run_here(monkeypatch, capsys, "models", "-p", "llamacpp", drop=ALL_KEYS | LOCAL_URLS,
                            env={"LLAMACPP_BASE_URL": f"{server.url}/v1"})
        assert (variable.returncode, variable.stdout) == (0, "qwen\nsmollm2\n"), variable.stderr
        host = server.url.removeprefix("http://")
        ollama = run_here(monkeypatch, capsys, "models", "-p", "ollama", drop=ALL_KEYS | LOCAL_URLS,
                          env={"OLLAMA_HOST": host})  # Ollama's own form: host:port, no scheme
        assert (ollama.returncode, ollama.stdout) == (0, "qwen\nsmollm2\n"), ollama.stderr
        assert [r.path for r in server.requests] == ["/v1/models"] * 3


def test_a_local_variable_that_is_not_a_url_is_a_usage_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "llamacpp", "-m", "m", "hi",
                                   drop=ALL_KEYS | LOCAL_URLS, env={"LLAMACPP_BASE_URL": "box:8080"}))
    assert "LLAMACPP_BASE_URL" in line and "not a valid URL" in line


def test_a_local_variables_url_gets_no_environment_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream._replay_server import ReplayServer

    with ReplayServer({"/v1/": (FIXTURES / "openai/text_include_usage.sse").read_bytes()}) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", "vllm", "-m", "m", "hi", drop=ALL_KEYS | LOCAL_URLS,
                        env={"VLLM_BASE_URL": f"{server.url}/v1", "VLLM_API_KEY": "sk-vllm-env-0000000000"})
        assert proc.returncode == 0, proc.stderr
        assert "authorization" not in server.requests[-1].headers


def test_a_404_that_is_no_unknown_model_tips_the_base_url(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream._replay_server import ReplayServer, Route

    with ReplayServer({"/v1/": Route(body=b"x")}) as server:  # nothing under /api
        proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url", f"{server.url}/api", "hi")
    _, cause, tips = failure_lines(proc)
    assert cause == f"HTTP 404 from {server.url.removeprefix('http://')}: no such endpoint under /api"
    assert tips == ["Check --base-url: the server has no such endpoint there (an OpenAI-compatible API root usually "
                    "ends in /v1)."]
    assert "request options" not in proc.stderr


def test_an_unknown_model_404_still_tips_the_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream._replay_server import ReplayServer, Route

    body = b'{"error":{"message":"The model `nope` does not exist","type":"invalid_request_error","code":"model_not_found"}}'
    with ReplayServer({"/v1/": Route(body=body, status=404, content_type="application/json")}) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "nope", "--base-url", f"{server.url}/v1", "hi")
    assert proc.returncode == 1
    assert "MODEL_NOT_FOUND" in proc.stderr and "cause:" not in proc.stderr
    assert "model name" in proc.stderr and "base URL" not in proc.stderr


def test_replay_of_a_file_that_is_no_transcript_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    readme = REPOSITORY / "README.rst"
    line = one_error_line(run_here(monkeypatch, capsys, "replay", str(readme), drop=set()))
    assert "README.rst: not a transcript" in line and "end-of-stream" not in line
    page = tmp_path / "page.html"
    page.write_bytes(b"<html><body>data: not an event</body></html>")
    assert "not a transcript" in one_error_line(run_here(monkeypatch, capsys, "replay", str(page), drop=set()))
    # a real transcript cut short is still a stream that ended early, not "not a transcript"
    cut = tmp_path / "cut.sse"
    cut.write_bytes((FIXTURES / "openai/text_include_usage.sse").read_bytes()[:300])
    proc = run_here(monkeypatch, capsys, "replay", str(cut), drop=set())
    assert proc.returncode == 1 and "end-of-stream marker" in proc.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"name": 3}', 'tool 1: "name" must be a string, got a number'),
        ('[{"name": ["f"]}]', 'tool 1: "name" must be a string, got an array'),
        ('{"name": "  "}', 'tool 1: "name" must not be empty'),
        ('{"description": "d"}', 'tool 1 has no "name"'),
    ],
)
def test_a_tool_name_that_is_not_a_string_says_so(
    content: str, says: str, tmp_path: "os.PathLike[str]", monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pathlib import Path

    path = Path(tmp_path) / "tools.json"
    path.write_text(content)
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                                   "http://127.0.0.1:9/v1", "--tools", str(path), "hi"))
    assert says in line


@pytest.mark.parametrize(
    ("option", "flag"),
    [(["--max-tokens", "-5"], "--max-tokens"), (["--max-tokens", "0"], "--max-tokens"),
     (["--timeout", "-1"], "--timeout"), (["--idle-timeout", "0"], "--idle-timeout")],
)
def test_a_bad_option_value_names_the_flag(
    option: list[str], flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url",
                                   "http://127.0.0.1:9/v1", *option, "hi"))
    assert line.startswith(f"error: {flag} ") and "GenerateOptions" not in line


def test_piped_stdin_with_no_prompt_is_one_turn() -> None:
    from dshstream._replay_server import ReplayServer

    with ReplayServer({"/v1/": (FIXTURES / "openai/text_include_usage.sse").read_bytes()}) as server:
        proc = run("chat", "-p", "local", "-m", "m", "--base-url", f"{server.url}/v1", stdin=b"Hi there\n")
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == 1
        assert server.requests[0].body["messages"] == [{"role": "user", "content": "Hi there\n"}]
    assert "> " not in proc.stderr and "/exit" not in proc.stderr + proc.stdout


def test_https_to_a_plain_http_server_says_to_use_http(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], quick_retries: None
) -> None:
    from dshstream._replay_server import ReplayServer

    with ReplayServer({"/v1/": (FIXTURES / "openai/text_include_usage.sse").read_bytes()}) as server:
        where = server.url.removeprefix("http://")
        proc = run_here(monkeypatch, capsys, "chat", "-p", "local", "-m", "m", "--base-url", f"https://{where}/v1", "hi")
    _, cause, tips = failure_lines(proc)
    assert cause == f"{where} does not speak TLS (https://)"
    assert tips == ["Use http:// in --base-url."]


def test_an_anthropic_compatible_route_streams_with_its_own_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dshstream._replay_server import ReplayServer

    body = (FIXTURES / "anthropic/thinking_then_tool_use.sse").read_bytes()
    with ReplayServer({"/v1/": body}) as server:
        proc = run_here(monkeypatch, capsys, "chat", "-p", "deepseek-anthropic", "-m", "deepseek-chat",
                        "--base-url", server.url, "--json", "Hi", env={"DEEPSEEK_API_KEY": "ds-key-1234567890"})
        assert proc.returncode == 0, proc.stderr
        sent = server.requests[-1]
    assert sent.path == "/v1/messages" and sent.headers["x-api-key"] == "ds-key-1234567890"
    assert json.loads(proc.stdout.splitlines()[-1])["reason"]["kind"] == "tool-calls"


@pytest.mark.parametrize(
    ("provider", "named"), [("deepseek-anthropic", "DEEPSEEK_API_KEY"), ("claude-aws", "ANTHROPIC_AWS_WORKSPACE_ID")]
)
def test_the_messages_routes_name_what_to_set(
    provider: str, named: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("DEEPSEEK_API_KEY", "ANTHROPIC_AWS_WORKSPACE_ID", "ANTHROPIC_AWS_API_KEY", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    line = one_error_line(run_here(monkeypatch, capsys, "chat", "-p", provider, "-m", "m", "x"))
    assert named in line
def test_xai_is_the_responses_api_and_xai_chat_the_deprecated_chat_api(monkeypatch: pytest.MonkeyPatch) -> None:
    from dshstream._adapters.openai_chat import OpenAIChatAdapter
    from dshstream._adapters.xai import XAIAdapter
    from dshstream._cli import _service_for

    monkeypatch.setenv("XAI_API_KEY", fake_key("xai-", 80))
    responses = _service_for("xai").adapter_for("xai")
    chat = _service_for("xai-chat").adapter_for("xai-chat")
    assert isinstance(responses, XAIAdapter) and responses.base_url == "https://api.x.ai/v1"
    assert isinstance(chat, OpenAIChatAdapter) and chat.dialect.name == "xai"
