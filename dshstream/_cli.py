"""The ``dshstream`` command: ``chat``, ``replay``, ``demo``, ``providers``, ``models``.

Exit codes: 0 ok, also when the reader of stdout goes away (``dshstream demo | head``: a
closed pipe ends the command quietly); 1 a provider failure, or a stream (also a replayed
one) that ends in an error finish — its classified headline goes to stderr (once: on a
terminal the finish line already shows it); 2 usage error — one line on stderr, no
traceback (a missing key names the variable to set, a bad ``--base-url``, ``--tools`` file
or path is named; a bad option value names the flag); 130 interrupted (the partial answer
stays on screen). ``NO_COLOR`` is honoured (it drops colour and the live status line, never
text). A failure is explained by its headline, a ``cause:`` line where the command can name
the cause without upstream text (``connection refused by 127.0.0.1:8080``, an HTTP 404 at
the configured URL), and ``tip:`` lines naming the option or variable that fixes it.

``chat`` with a prompt (or piped stdin) is one turn. On a terminal with no prompt it is a
conversation: a ``> `` prompt, the history kept across turns (each reply appended as the
service returns it, its replay state included), ``/exit`` or Ctrl-D to leave, Ctrl-C
cancels the answer being streamed (the partial answer stays, and is kept in the history)
and gives the prompt back; a failed turn is dropped from the history.

Local servers (``-p ollama``, ``llamacpp``, ``vllm``, ``lmstudio``) are keyless and found at
``--base-url``, else their variable (``OLLAMA_HOST`` or ``OLLAMA_BASE_URL``,
``LLAMACPP_BASE_URL``, ``VLLM_BASE_URL``, ``LMSTUDIO_BASE_URL``: see
:mod:`dshstream._defaults`), else their default port on 127.0.0.1; ``models`` takes
``--base-url`` as ``chat`` does. ``batch`` (:mod:`dshstream._batch.command`) takes the same
provider, model and server options; ``--provider-batch`` sends the file as the provider's
batch jobs instead (``--detach`` prints their id, ``--resume ID`` waits for them).

Keys: a key read from the environment goes only to its provider's own host. With
``--base-url`` no environment key is sent unless the caller names the variable with
``--api-key-env``.

Clouds are configured from the environment their SDKs read (the variables:
:mod:`dshstream._defaults`; ``AWS_SESSION_TOKEN`` too): ``-p azure`` (the model is the
deployment; ``--base-url`` and ``--api-key-env`` stand in for the endpoint and key
variables), ``-p vertex`` (``--api-key-env`` names an express-mode key instead; a
``claude-*`` model goes to Claude on Vertex), ``-p vertex-anthropic`` and ``-p bedrock``
(Amazon Bedrock Converse).

``chat --attach FILE`` (repeatable) sends an image, a document or an audio file with the
prompt; its kind comes from the file's content (or extension). A file the provider cannot
take is refused before anything is sent; a file the model produces is shown as
``[image/png, 123 KB]`` (``--json`` carries its bytes, base64).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from ._version import __version__
from ._core.errors import LlmError, make_failure
from ._core.types import Finish, LlmFailure, StreamChunk, TextBlock, ToolCallBlock, chunk_to_dict

if TYPE_CHECKING:
    from ._adapters.base import LlmAdapter
    from ._chunk_stream import ChunkStream
    from ._core.request import GenerateOptions, Message
    from ._service import LlmService

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A mistake in the command line: one line on stderr (then its ``tips``, one a line),
    exit 2."""

    def __init__(self, message: str, tips: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tips = tuple(tips)


@dataclass(frozen=True)
class Target:
    """What the explanation of a failure may name: the variables the key was read from,
    the URL the command talked to (the caller's own configuration, never upstream text),
    and the options or variables that change that URL."""

    key_env: tuple[str, ...] = ()
    url: str | None = None
    url_options: tuple[str, ...] = ()


def _tips(failure: LlmFailure, key_env: Sequence[str] = (), base_url: Sequence[str] | bool = False) -> tuple[str, ...]:
    """The recovery tips under a failure: the command line runs on the user's own key.
    ``base_url``: the options or variables that set the server's URL (``True``: ``--base-url``)."""
    from ._core.recovery import recovery_tips

    options = ("--base-url",) if base_url is True else tuple(base_url or ())
    try:
        return recovery_tips(failure, "personal", key_env=key_env, base_url_option=options or None, shared_key=False)
    except LlmError:  # an --api-key-env name that is not variable-shaped: tips without it
        return recovery_tips(failure, "personal", base_url_option=options or None, shared_key=False)


def _write_tips(err: TextIO, tips: Sequence[str]) -> None:
    err.writelines(f"tip: {tip}\n" for tip in tips)


def _endpoint(url: str | None) -> str | None:
    """``host:port`` of ``url`` (its user and password, path and query left out)."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port is not None else shown


#: (pattern in a transport failure's redacted exception text, its kind); only ever
#: matched, never echoed
_TRANSPORT_CAUSES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"connection refused|ECONNREFUSED|WinError 10061", re.I), "refused"),
    (
        re.compile(
            r"name or service not known|nodename nor servname|getaddrinfo failed|failure in name resolution|"
            r"NameResolutionError|failed to resolve|no address associated",
            re.I,
        ),
        "dns",
    ),
    (re.compile(r"CERTIFICATE_VERIFY_FAILED|certificate verify failed", re.I), "certificate"),
    (re.compile(r"WRONG_VERSION_NUMBER|wrong version number|record layer failure", re.I), "not-tls"),
    (re.compile(r"no route to host|network is unreachable|EHOSTUNREACH|ENETUNREACH", re.I), "unreachable"),
    (re.compile(r"connection reset|RemoteDisconnected|connection aborted|BadStatusLine", re.I), "reset"),
)


def _cause(failure: LlmFailure, target: Target) -> tuple[str, tuple[str, ...]] | None:
    """``(cause, tips)`` for a failure whose cause the command can name from facts it
    owns — the kind of a transport error, the URL it was configured with, the status —
    or ``None``. The tips name the options (or variables) that fix it; nothing here
    quotes upstream text or a key."""
    from ._core.redact import redact

    url = target.url
    if url is None and failure.diagnostics:
        shown = failure.diagnostics.get("base_url")
        url = shown if isinstance(shown, str) else None
    where = _endpoint(url)
    if where is None:
        return None
    options = " or ".join(target.url_options)
    detail = failure.detail or ""
    if failure.code in ("TRANSPORT", "TLS"):  # a handshake that failed is TLS (transport failures rule 4)
        kind = next((kind for pattern, kind in _TRANSPORT_CAUSES if pattern.search(detail)), None)
        host = where.rsplit(":", 1)[0] if not where.endswith("]") else where
        if kind == "refused":
            fix = (
                f"Start the server at {where}, or point {options} at the address it listens on."
                if options
                else "Check your network connection and proxy settings (HTTPS_PROXY), then try again."
            )
            return f"connection refused by {where}", (fix,)
        if kind == "dns":
            fix = f"Check the host name in {options}." if options else "Check your network connection and DNS."
            return f"the host name {host} does not resolve", (fix,)
        if kind == "certificate":
            return f"the TLS certificate of {where} is not trusted", (
                "Set REQUESTS_CA_BUNDLE to the CA bundle that signs it (a company proxy or a private CA).",
            )
        if kind == "not-tls":
            fix = f"Use http:// in {options}." if options else (
                "Check your proxy settings (HTTPS_PROXY): something on the way answers without TLS."
            )
            return f"{where} does not speak TLS (https://)", (fix,)
        if kind == "unreachable":
            fix = f"Check the network connection and the address in {options}." if options else (
                "Check your network connection."
            )
            return f"{where} is unreachable from this machine", (fix,)
        if kind == "reset" and "request failed" in failure.message:  # before any answer, not mid-stream
            fix = f"Check that {options} points at an HTTP server for this API." if options else (
                "Try again; check your network connection and proxy settings if it persists."
            )
            return f"{where} closed the connection without an HTTP answer", (fix,)
        return None
    if failure.status == 404 and failure.code in ("HTTP_404", "INVALID_REQUEST"):
        path = urlsplit(url).path if url else ""
        return f"HTTP 404 from {where}: no such endpoint under {redact(path or '/', limit=120)}", ()
    return None


def _explain(failure: LlmFailure, target: Target) -> tuple[str | None, tuple[str, ...]]:
    """The ``cause:`` line (or ``None``) and the ``tip:`` lines under a failure: the
    command's own tips where it named the cause, else the recovery tips."""
    named = _cause(failure, target)
    tips = _tips(failure, target.key_env, target.url_options)
    if named is None:
        return None, tips
    cause, own = named
    return cause, own or tips


def _write_explanation(err: TextIO, failure: LlmFailure, target: Target | None) -> None:
    if target is None:
        return
    cause, tips = _explain(failure, target)
    if cause is not None:
        err.write(f"cause: {cause}\n")
    _write_tips(err, tips)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dshstream", description="Stream LLM responses from any provider as one chunk protocol."
    )
    parser.add_argument("--version", action="version", version=f"dshstream {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    sub.add_parser("demo", help="stream bundled real transcripts over 127.0.0.1 (no key needed)")

    replay = sub.add_parser("replay", help="normalize a recorded SSE transcript")
    replay.add_argument("file", help="transcript path, or - for stdin")
    replay.add_argument("--wire", help="wire format (default: detected from the content)")
    replay.add_argument("--format", choices=("text", "jsonl"), default="text")
    replay.add_argument("--think-tags", action=argparse.BooleanOptionalAction, default=None)

    chat = sub.add_parser(
        "chat",
        help="stream a reply from a provider (on a terminal with no prompt: a conversation)",
        description="Stream a reply. With a prompt, or with stdin piped, one turn; on a terminal with no "
        "prompt, a conversation: /exit or Ctrl-D leaves, Ctrl-C stops the answer being streamed.",
    )
    chat.add_argument("prompt", nargs="*", help="the prompt (default: read stdin; on a terminal: a conversation)")
    chat.add_argument("-p", "--provider", default="openai")
    chat.add_argument("-m", "--model", required=True)
    _server_options(chat)
    chat.add_argument("--system", help="system prompt")
    chat.add_argument(
        "--reasoning-effort", choices=("off", "minimal", "low", "medium", "high", "max"), default=None
    )
    chat.add_argument("--tools", help="JSON file with a list of tools (OpenAI or {name, parameters} form)")
    chat.add_argument(
        "--attach",
        action="append",
        metavar="FILE",
        help="send an image, document (PDF...) or audio file with the prompt (repeatable)",
    )
    shape = chat.add_mutually_exclusive_group()
    shape.add_argument(
        "--schema",
        metavar="FILE",
        help='answer as JSON following the JSON Schema in FILE (or {"name", "schema", "strict"}); '
        "the provider's own structured-output mechanism",
    )
    shape.add_argument("--json-mode", action="store_true", help="answer with any valid JSON (JSON mode)")
    chat.add_argument("--max-tokens", type=int)
    chat.add_argument("--temperature", type=float)
    chat.add_argument("--timeout", type=float, help="total time limit in seconds")
    chat.add_argument("--idle-timeout", type=float, help="seconds without content before giving up")
    chat.add_argument("--json", action="store_true", help="print JSONL chunks instead of text")

    batch = sub.add_parser(
        "batch",
        help="send every request of a JSONL file, N at a time, within the provider's rate limits",
        description="Each input line is {\"id\": ..., \"prompt\": \"...\"} or {\"id\": ..., \"messages\": [...]}. "
        "Finished rows are appended to OUTPUT as they complete; rerunning with the same OUTPUT resumes, "
        "sending only the rows not done there.",
    )
    batch.add_argument("input", help="the requests, one JSON object a line (- for stdin)")
    batch.add_argument("-o", "--output", required=True, help="the results, JSONL (resumed when it exists)")
    batch.add_argument("-p", "--provider", default="openai")
    batch.add_argument("-m", "--model", required=True)
    _server_options(batch)
    batch.add_argument("--concurrency", type=int, default=8, help="requests at once (default 8)")
    batch.add_argument("--max-cost", type=float, help="stop sending once this much (USD) is spent")
    batch.add_argument("--max-total-tokens", type=int, help="stop sending once this many tokens are used")
    batch.add_argument("--fsync", action="store_true", help="fsync the output after every row")
    batch.add_argument("--provider-batch", action="store_true",
                       help="send the rows as the provider's batch jobs (OpenAI, Anthropic, Gemini: half price, "
                       "within 24 hours) and wait for them")
    batch.add_argument("--detach", action="store_true", help="with --provider-batch: print the batch id and exit")
    batch.add_argument("--resume", metavar="ID", help="wait for provider batches submitted before (same INPUT)")
    batch.add_argument("--poll-interval", type=float, default=30.0, help="seconds between polls (default 30)")

    sub.add_parser("providers", help="list the providers configured from the environment")
    models = sub.add_parser("models", help="list a provider's models")
    models.add_argument("-p", "--provider", required=True)
    _server_options(models)
    return parser


def _server_options(command: argparse.ArgumentParser) -> None:
    """Where to send the request, and with which key: the same options for every command
    that talks to a provider."""
    command.add_argument(
        "--base-url",
        help="an OpenAI-compatible endpoint to talk to (http:// or https://); local servers also read "
        "OLLAMA_HOST, LLAMACPP_BASE_URL, VLLM_BASE_URL, LMSTUDIO_BASE_URL",
    )
    command.add_argument("--dialect", help="OpenAI-compatible dialect for --base-url (default: the provider's)")
    command.add_argument(
        "--api-key-env",
        default=None,
        help="variable holding the key (default: the provider's own, e.g. OPENAI_API_KEY; "
        "with --base-url no key is sent unless this names one)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the module docstring lists them)."""
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    try:
        code = _dispatch(args, out, err)
        out.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:
        # The reader went away (``| head``): the Unix convention is a quiet, successful
        # exit. Point stdout at devnull so the interpreter's final flush is quiet too.
        _silence_stdout()
        return EXIT_OK
    except KeyboardInterrupt:
        err.write("\ninterrupted\n")
        return EXIT_INTERRUPTED
    except UsageError as exc:
        err.write(f"error: {exc}\n")
        _write_tips(err, exc.tips)
        return EXIT_USAGE
    except LlmError as exc:
        err.write(f"error: {exc.failure.message}\n")
        _write_tips(err, _tips(exc.failure))
        return EXIT_USAGE if exc.failure.code in ("NO_ADAPTER", "INVALID_OPTIONS") else EXIT_FAILURE
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        err.write(f"error: {where}{exc.strerror or exc}\n")
        return EXIT_USAGE


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor
        pass


def _dispatch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.command == "demo":
        from ._demo import run_demo

        return run_demo(out, err)
    if args.command == "replay":
        return _replay(args, out, err)
    if args.command == "chat":
        return _chat(args, out, err)
    if args.command == "providers":
        from ._defaults import default_service

        for info in default_service().list_providers():
            out.write(f"{info.id}\t{info.name}\n")
        return EXIT_OK
    if args.command == "models":
        return _models(args, out, err)
    if args.command == "batch":
        from ._batch.command import run_batch_command

        service, _target = _connect(
            args.provider, api_key_env=args.api_key_env, base_url=args.base_url, dialect=args.dialect, model=args.model
        )
        return run_batch_command(args, service, out, err)
    return EXIT_USAGE


def _models(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    service, target = _connect(
        args.provider, api_key_env=args.api_key_env, base_url=args.base_url, dialect=args.dialect
    )
    try:
        models = service.list_models(args.provider)
    except LlmError as exc:
        if exc.failure.code in ("NO_ADAPTER", "INVALID_OPTIONS"):
            raise
        err.write(f"error: {exc.failure.message}\n")
        _write_explanation(err, exc.failure, target)
        return EXIT_FAILURE
    for model in models:
        out.write(f"{model.id}\n")
    return EXIT_OK


def _emit(
    chunks: Iterable[StreamChunk],
    fmt_json: bool,
    out: TextIO,
    err: TextIO,
    *,
    status: bool = False,
    target: Target | None = None,
) -> int:
    """Print chunks; returns the exit code from the final finish. ``target`` is what the
    explanation under a failure may name (none for a replayed transcript: no request was
    sent, no key took part)."""
    from ._render import TextRenderer

    renderer = None if fmt_json else TextRenderer(out, err, status=status)
    code = EXIT_OK
    failure = None
    try:
        for chunk in chunks:
            if renderer is None:
                out.write(json.dumps(chunk_to_dict(chunk), ensure_ascii=False) + "\n")
                out.flush()  # live for a reader at the other end of a pipe
            else:
                renderer.feed(chunk)
            if type(chunk) is Finish and chunk.reason.failure is not None:
                failure = chunk.reason.failure
        out.flush()
    except KeyboardInterrupt:
        if renderer is not None:
            renderer.close()  # clears the status line; the partial answer stays
        err.write("interrupted\n")
        err.flush()
        return EXIT_INTERRUPTED
    except BaseException:
        if renderer is not None:
            renderer.close()
        raise
    if renderer is not None:
        renderer.summary()
    if failure is not None:
        if renderer is None or not renderer.failure_shown:
            err.write(f"error: {failure.message}\n")
        _write_explanation(err, failure, target)
        code = EXIT_USAGE if failure.code in ("NO_ADAPTER", "INVALID_OPTIONS") else EXIT_FAILURE
    return code


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ._core.decode import decode, detect_wire

    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.file, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise UsageError(f"{args.file}: {exc.strerror or exc}") from None
    name = "stdin" if args.file == "-" else args.file
    if not _is_transcript(data):
        raise UsageError(
            f"{name}: not a transcript (no SSE 'data:' lines, and not an AWS event stream)",
            ("Replay the raw body of a streaming response, recorded with e.g. curl -N ... > stream.sse.",),
        )
    try:
        wire = args.wire or detect_wire(data)
        options: dict[str, Any] = {}
        if args.think_tags is not None and wire not in ("anthropic", "gemini", "gemini-interactions", "openai-responses"):
            options["think_tags"] = args.think_tags
        chunks = decode(data, wire=wire, **options)
        return _emit(chunks, args.format == "jsonl", out, err)
    except ValueError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


_SSE_DATA_LINE = re.compile(rb"(?:\A|[\r\n])(?:\xef\xbb\xbf)?data(?:[:\r\n]|\Z)")


def _is_transcript(data: bytes) -> bool:
    """Whether ``data`` is a recorded stream at all: an event stream with at least one
    ``data`` field (the one that carries events; a README or an HTML page has none), or
    an AWS event stream (a valid prelude)."""
    from ._core.decode import detect_wire

    return _SSE_DATA_LINE.search(data) is not None or detect_wire(data).startswith("bedrock-")


def _read_json(option: str, path: str) -> Any:
    """The JSON document in the file ``option`` names; every problem is one
    :class:`UsageError` line."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise UsageError(f"{option} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UsageError(f"{option} {path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{option} {path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None


def _load_schema(path: str) -> Any:
    """The :class:`JsonSchema` for ``--schema path``: a JSON Schema object (named after the
    file), or OpenAI's ``{"name", "schema", "strict"?, "description"?}`` wrapper."""
    from ._core.response_format import JsonSchema

    raw = _read_json("--schema", path)
    if not isinstance(raw, dict):
        raise UsageError(f"--schema {path}: expected a JSON Schema object")
    if isinstance(raw.get("schema"), dict) and isinstance(raw.get("name"), str):
        fields = {k: raw[k] for k in ("name", "schema", "strict", "description") if k in raw}
    else:
        stem = re.sub(r"[^A-Za-z0-9_-]", "_", os.path.splitext(os.path.basename(path))[0])[:64]
        fields = {"name": stem or "answer", "schema": raw}
    try:
        return JsonSchema(**fields)
    except (LlmError, TypeError, ValueError) as exc:
        raise UsageError(f"--schema {path}: {exc.failure.message if isinstance(exc, LlmError) else exc}") from None


def _load_tools(path: str) -> tuple[Any, ...]:
    """The tools in a JSON file; every problem is one :class:`UsageError` line."""
    from ._core.request import ToolSpec

    raw = _read_json("--tools", path)
    shape = (
        'expected a tool or a list of tools, each {"name": ..., "description": ..., "parameters": {...}} '
        'or {"type": "function", "function": {...}}'
    )
    entries = raw if isinstance(raw, list) else [raw]
    if not entries:
        raise UsageError(f"--tools {path}: the list is empty; {shape}")
    tools = []
    for number, entry in enumerate(entries, 1):
        spec = entry.get("function", entry) if isinstance(entry, dict) else None
        where = f"--tools {path}: tool {number}"
        if not isinstance(spec, dict):
            raise UsageError(f"{where} is not an object; {shape}")
        if "name" not in spec or spec["name"] is None:
            raise UsageError(f'{where} has no "name"; {shape}')
        name = spec["name"]
        if not isinstance(name, str):
            raise UsageError(f'{where}: "name" must be a string, got {_json_type(name)}')
        if not name.strip():
            raise UsageError(f'{where}: "name" must not be empty')
        description = spec.get("description", "")
        if not isinstance(description, str):
            raise UsageError(f'{where} ({name}): "description" must be a string')
        parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(parameters, dict):
            raise UsageError(f'{where} ({name}): "parameters" must be a JSON Schema object')
        try:
            tools.append(ToolSpec(name=name, description=description, parameters=parameters))
        except (LlmError, TypeError, ValueError) as exc:
            message = exc.failure.message if isinstance(exc, LlmError) else str(exc)
            raise UsageError(f"{where} ({name}): {message}") from None
    return tuple(tools)


def _json_type(value: object) -> str:
    """The JSON type of a parsed value, for a message (the value itself is not echoed)."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _load_attachment(path: str) -> Any:
    """The media part for ``--attach path`` (its kind from the file's type); every problem
    is one :class:`UsageError` line."""
    from ._core.parts import MediaPart

    try:
        return MediaPart.from_path(path)
    except OSError as exc:
        raise UsageError(f"--attach {path}: {exc.strerror or exc}") from None
    except LlmError as exc:
        raise UsageError(f"--attach {path}: {exc.failure.message}") from None


def _json_mode() -> Any:
    from ._core.response_format import JsonMode

    return JsonMode()


def _check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; else a :class:`UsageError`."""
    from ._core.redact import redact

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise UsageError(
            f"--base-url {redact(url, limit=200)!r} is not a valid URL (expected http:// or https:// and a host)"
        )
    return url


def _key_from(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise UsageError(f"--api-key-env {name}: the variable {name} is not set")
    return value


def _adapter(provider: str, api_key: str | None, base_url: str | None = None) -> LlmAdapter:
    """An adapter for ``provider``'s own host (or ``base_url``)."""
    from ._defaults import keyed_adapter

    return keyed_adapter(provider, api_key, base_url)


def _cloud_adapter(provider: str, model: str, api_key_env: str | None, base_url: str | None) -> LlmAdapter:
    """The adapter for a cloud provider from the environment, or a :class:`UsageError`
    naming what to set."""
    from ._defaults import cloud_adapter

    settings: dict[str, Any] = {}
    if api_key_env:
        settings["api_key"] = _key_from(api_key_env)
    if provider == "azure":
        if base_url is not None:
            settings["endpoint"] = _check_url(base_url)
        elif not os.environ.get("AZURE_OPENAI_ENDPOINT"):
            raise UsageError(
                "provider 'azure' needs an endpoint: set AZURE_OPENAI_ENDPOINT "
                "(or --base-url https://<resource>.openai.azure.com)"
            )
    elif base_url is not None:
        where = "AWS_REGION" if provider == "bedrock" else "GOOGLE_CLOUD_LOCATION"
        raise UsageError(f"--base-url is not used with -p {provider}: set {where} instead")
    if provider == "bedrock":
        return _bedrock_adapter(settings)
    if provider == "vertex" and model.startswith("claude"):
        provider = "vertex-anthropic"
    express = provider == "vertex" and "api_key" in settings
    if provider != "azure" and not express and not os.environ.get("GOOGLE_CLOUD_PROJECT"):
        hint = " (or --api-key-env naming an express-mode key)" if provider == "vertex" else ""
        raise UsageError(f"provider {provider!r} needs GOOGLE_CLOUD_PROJECT{hint}")
    try:
        adapter = cloud_adapter(provider, **settings)
    except LlmError as exc:
        raise UsageError(exc.failure.message) from None
    if adapter.credential.describe() == "none":
        if provider == "azure":
            raise UsageError("provider 'azure' needs an API key: set AZURE_OPENAI_API_KEY (or name one with --api-key-env)")
        raise UsageError(
            f"provider {provider!r} needs credentials: run `gcloud auth application-default login` or set "
            "GOOGLE_APPLICATION_CREDENTIALS to an authorized_user file (service accounts: use the library's "
            "api_key= callable recipe)"
        )
    return adapter


def _bedrock_adapter(settings: dict[str, Any]) -> LlmAdapter:
    """Amazon Bedrock from the environment, or a :class:`UsageError` naming what to set."""
    from ._defaults import cloud_adapter

    if not (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")):
        raise UsageError("provider 'bedrock' needs a region: set AWS_REGION (or AWS_DEFAULT_REGION)")
    try:
        adapter = cloud_adapter("bedrock", **settings)
    except LlmError as exc:
        raise UsageError(exc.failure.message) from None
    if getattr(adapter, "auth_mode", "none") == "none":
        raise UsageError(
            "provider 'bedrock' needs credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
            "(and AWS_SESSION_TOKEN for temporary ones), or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK"
        )
    return adapter


def _messages_adapter(provider: str, api_key_env: str | None, base_url: str | None) -> LlmAdapter:
    """An Anthropic Messages route served elsewhere (``deepseek-anthropic``) or Claude
    Platform on AWS (``claude-aws``), from the environment; or a :class:`UsageError`
    naming what to set."""
    from ._adapters.anthropic import AnthropicAdapter
    from ._core.messages_dialects import MESSAGES_DIALECTS
    from ._defaults import MESSAGES_ROUTES

    settings: dict[str, Any] = {}
    if api_key_env:
        settings["api_key"] = _key_from(api_key_env)
    if base_url is not None:
        settings["base_url"] = _check_url(base_url)
    try:
        if provider == "claude-aws":
            from ._adapters.claude_aws import ClaudePlatformAwsAdapter

            return ClaudePlatformAwsAdapter(**settings)
        preset = MESSAGES_DIALECTS[dict(MESSAGES_ROUTES)[provider]]
        if "api_key" not in settings:
            key = os.environ.get(preset.key_env or "")
            if not key:
                message = f"provider {provider!r} needs an API key"
                missing = make_failure("NO_ADAPTER", message, provider=provider)
                raise UsageError(message, _tips(missing, (preset.key_env or "",), base_url=False))
            settings["api_key"] = key
        return AnthropicAdapter(dialect=preset.name, **settings)
    except LlmError as exc:
        raise UsageError(exc.failure.message) from None


def _key_names(provider: str, api_key_env: str | None = None, base_url: str | None = None) -> tuple[str, ...]:
    """The variables the command reads ``provider``'s key from (none with a ``--base-url``
    unless one is named)."""
    from ._core.dialects import DIALECTS
    from ._defaults import KEYED_PROVIDERS

    if api_key_env:
        return (api_key_env,)
    if base_url is not None:
        return ()
    keyed = dict(KEYED_PROVIDERS)
    if provider in keyed:
        return keyed[provider]
    if provider == "azure":  # the key a rejected-key tip names (the SDK's variable)
        return ("AZURE_OPENAI_API_KEY",)
    dialect = DIALECTS.get(provider)
    return (dialect.key_env,) if dialect is not None and dialect.key_env else ()


def _connect(
    provider: str,
    *,
    api_key_env: str | None = None,
    base_url: str | None = None,
    dialect: str | None = None,
    model: str = "",
) -> tuple[LlmService, Target]:
    """:func:`_service_for`, and what an explanation of its failures may name."""
    service = _service_for(provider, api_key_env=api_key_env, base_url=base_url, dialect=dialect, model=model)
    url = getattr(service.adapter_for(provider), "base_url", None)
    return service, Target(
        key_env=_key_names(provider, api_key_env, base_url),
        url=url if isinstance(url, str) else None,
        url_options=_url_options(provider, base_url),
    )


def _url_options(provider: str, base_url: str | None) -> tuple[str, ...]:
    """The ways the user sets ``provider``'s URL: what a wrong-address tip names (none
    for a hosted provider's own API, where the address is not the user's to fix)."""
    from ._defaults import LOCAL_PROVIDERS, local_base_url, local_url_variables
    from ._core.dialects import DIALECTS

    if base_url is not None:
        return ("--base-url",)
    if provider in LOCAL_PROVIDERS:
        try:
            found = local_base_url(provider)
        except LlmError:
            found = None
        # the variable in use, else the conventional one (the last: Ollama's OLLAMA_HOST)
        variable = found[1] if found is not None else local_url_variables(provider)[-1]
        return (variable, "--base-url") if found is not None else ("--base-url", variable)
    if provider == "azure":
        return ("--base-url", "AZURE_OPENAI_ENDPOINT")
    if provider in DIALECTS and DIALECTS[provider].keyless:
        return ("--base-url",)
    return ()


def _local_url(provider: str) -> str | None:
    """The local ``provider``'s URL from its variable (``None``: its default address); a
    value that is not a URL is a :class:`UsageError` naming the variable."""
    from ._defaults import local_base_url

    try:
        found = local_base_url(provider)
    except LlmError as exc:
        raise UsageError(exc.failure.message) from None
    return found[0] if found is not None else None


def _service_for(
    provider: str,
    *,
    api_key_env: str | None = None,
    base_url: str | None = None,
    dialect: str | None = None,
    model: str = "",
) -> LlmService:
    """A service with one adapter for ``provider``, or a :class:`UsageError` saying what
    is missing (the key variable to set, or ``--base-url``)."""
    from ._defaults import CLOUD_PROVIDERS, KEYED_PROVIDERS, LOCAL_PROVIDERS, MESSAGES_ROUTES
    from ._core.dialects import DIALECTS
    from ._service import LlmService

    service = LlmService()
    if provider in CLOUD_PROVIDERS:
        if dialect is not None:
            raise UsageError(f"--dialect is not used with -p {provider}")
        service.register_adapter([provider], _cloud_adapter(provider, model, api_key_env, base_url))
        return service
    if provider in dict(MESSAGES_ROUTES) or provider == "claude-aws":
        if dialect is not None:
            raise UsageError(f"--dialect is not used with -p {provider}")
        service.register_adapter([provider], _messages_adapter(provider, api_key_env, base_url))
        return service
    if base_url is not None:
        from ._adapters.openai_chat import OpenAIChatAdapter

        chosen = dialect or (provider if provider in DIALECTS else "custom")
        if chosen not in DIALECTS:
            raise UsageError(f"unknown --dialect {chosen!r}; known: {', '.join(DIALECTS)}")
        # Only a variable the caller named: "" (not None) keeps the adapter from reading
        # the dialect's own variable and sending that key to another host.
        named = _key_from(api_key_env) if api_key_env else ""
        adapter: LlmAdapter = OpenAIChatAdapter(api_key=named, base_url=_check_url(base_url), dialect=chosen)
        service.register_adapter([provider], adapter)
        return service
    base_url_hint = " (or --base-url URL for an OpenAI-compatible server)"
    keyed = dict(KEYED_PROVIDERS)
    known = [*keyed, *CLOUD_PROVIDERS, *(route for route, _ in MESSAGES_ROUTES), "claude-aws"]
    known += [d for d in DIALECTS if d not in keyed]
    if provider not in keyed and provider not in DIALECTS:
        raise UsageError(
            f"unknown provider {provider!r}; known: {', '.join(known)}{base_url_hint}"
        )
    if api_key_env:
        key: str | None = _key_from(api_key_env)
    elif provider in LOCAL_PROVIDERS or (provider in DIALECTS and DIALECTS[provider].keyless):
        key = None  # a local server: its own optional variable, for its own host
    else:
        names = _key_names(provider)
        key = next((os.environ[name] for name in names if os.environ.get(name)), None)
        if key is None:
            message = f"provider {provider!r} needs an API key"
            missing = make_failure("NO_ADAPTER", message, provider=provider)
            raise UsageError(message, _tips(missing, names, base_url=True))
    # a local server's URL from its variable is keyless: the adapter sends the dialect's
    # own key variable (VLLM_API_KEY) only to the dialect's default host
    url = _local_url(provider) if provider in LOCAL_PROVIDERS else None
    service.register_adapter([provider], _adapter(provider, key, url))
    return service


#: GenerateOptions fields named by the flag that sets them, in the command's messages
_FLAGS = {
    "GenerateOptions.max_tokens": "--max-tokens",
    "GenerateOptions.temperature": "--temperature",
    "GenerateOptions.timeout": "--timeout",
    "GenerateOptions.idle_timeout": "--idle-timeout",
    "GenerateOptions.reasoning_effort": "--reasoning-effort",
    "GenerateOptions.model": "-m/--model",
    "GenerateOptions.provider": "-p/--provider",
    "GenerateOptions.response_format": "--schema",
    "GenerateOptions.tools": "--tools",
}
_FIELD = re.compile("|".join(re.escape(name) + r"\b" for name in _FLAGS))


def _flag_error(exc: LlmError) -> UsageError:
    """A rejected option value as a usage error naming the flag, not the field."""
    return UsageError(_FIELD.sub(lambda match: _FLAGS[match.group(0)], exc.failure.message))


def _chat(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ._core.request import GenerateOptions, Message

    service, target = _connect(
        args.provider, api_key_env=args.api_key_env, base_url=args.base_url, dialect=args.dialect, model=args.model
    )
    tools = _load_tools(args.tools) if args.tools else ()
    attachments = [_load_attachment(path) for path in args.attach or ()]
    response_format = _load_schema(args.schema) if args.schema else _json_mode() if args.json_mode else None
    system = (Message.system(args.system),) if args.system else ()

    def options_for(history: Sequence[Message]) -> GenerateOptions:
        try:
            return GenerateOptions(
                provider=args.provider,
                model=args.model,
                messages=(*system, *history),
                tools=tools,
                max_tokens=args.max_tokens,
                temperature=args.temperature,
                reasoning_effort=args.reasoning_effort,
                timeout=args.timeout,
                idle_timeout=args.idle_timeout,
                response_format=response_format,
            )
        except LlmError as exc:
            if exc.failure.code in ("INVALID_OPTIONS", "INVALID_OPTIONS_TYPE"):
                raise _flag_error(exc) from None
            raise

    if not args.prompt and _isatty(sys.stdin):
        # checked before the first prompt: a bad flag is not found after the user typed
        options_for([Message.user("check")])
        return _conversation(service, target, options_for, attachments, args, out, err)
    prompt = " ".join(args.prompt) if args.prompt else sys.stdin.read()
    if not prompt.strip():
        raise UsageError("empty prompt")
    stream = _open(service, options_for([Message.user(prompt, *attachments)]))
    try:
        return _emit(stream, args.json, out, err, status=not args.json, target=target)
    finally:
        stream.close()


def _open(service: LlmService, options: GenerateOptions) -> ChunkStream:
    """``service.stream(options)``, an option the service refuses named by its flag."""
    try:
        return service.stream(options)
    except LlmError as exc:
        if exc.failure.code in ("INVALID_OPTIONS", "INVALID_OPTIONS_TYPE"):
            raise _flag_error(exc) from None
        raise


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except (OSError, ValueError):  # a closed stream
        return False


# --------------------------------------------------------------------------- conversation

PROMPT = "> "
EXIT_WORDS = ("/exit", "/quit")


def _conversation(
    service: LlmService,
    target: Target,
    options_for: Callable[[Sequence[Message]], GenerateOptions],
    attachments: Sequence[Any],
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
) -> int:
    """``chat`` on a terminal with no prompt: turns until ``/exit`` or end of input.

    A reply cut short by Ctrl-C keeps its visible text but no replay state (it is not a
    whole turn). Ctrl-C while an answer streams cancels it through its cancel event (the
    transport ends the read at once); a second Ctrl-C before it ends interrupts as usual.
    Ctrl-C at the prompt clears the line.
    """
    from ._core.request import Message

    history: list[Message] = []
    read = _line_reader(out, err)
    err.write(f"chatting with {args.model} ({args.provider}); /exit or Ctrl-D leaves, Ctrl-C stops an answer\n")
    err.flush()
    pending = list(attachments)  # files go with the first prompt
    while True:
        try:
            line = read(PROMPT)
        except EOFError:  # Ctrl-D
            err.write("\n")
            return EXIT_OK
        except KeyboardInterrupt:
            err.write("\n(/exit or Ctrl-D leaves)\n")
            continue
        prompt = line.strip()
        if not prompt:
            continue
        if prompt in EXIT_WORDS:
            return EXIT_OK
        turn = Message.user(prompt, *pending)
        try:
            reply = _turn(service, options_for([*history, turn]), target, args.json, out, err)
        except KeyboardInterrupt:  # between two reads of the stream: the turn is dropped
            err.write("\ninterrupted\n")
            continue
        if reply is not None:
            history += [turn, reply]
            pending = []


def _line_reader(out: TextIO, err: TextIO) -> Callable[[str], str]:
    """Read one line after a prompt: with line editing (``readline``) when stdout is the
    terminal too, else the prompt goes to stderr and stdout keeps only answers."""
    if _isatty(out) and out is sys.stdout:
        try:
            import readline  # noqa: F401 - imported for its effect: line editing in input()
        except ImportError:  # no readline on this platform: plain input()
            pass
        return input

    def read(prompt: str) -> str:
        err.write(prompt)
        err.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    return read


@contextmanager
def _ctrl_c_cancels(stream: ChunkStream) -> Iterator[list[bool]]:
    """While the block runs, Ctrl-C (SIGINT) cancels ``stream`` instead of raising; a
    second Ctrl-C raises ``KeyboardInterrupt`` as usual. Yields ``[cancelled]``."""
    cancelled = [False]

    def on_sigint(signum: int, frame: object) -> None:
        if cancelled[0]:
            raise KeyboardInterrupt
        cancelled[0] = True
        stream.cancel()

    try:
        previous = signal.signal(signal.SIGINT, on_sigint)
    except ValueError:  # not the main thread: Ctrl-C keeps its usual meaning
        yield cancelled
        return
    try:
        yield cancelled
    finally:
        signal.signal(signal.SIGINT, previous)


def _turn(
    service: LlmService, options: GenerateOptions, target: Target, fmt_json: bool, out: TextIO, err: TextIO
) -> Message | None:
    """Stream one turn of a conversation; the reply to keep in the history, or ``None``
    when the turn failed (or was cancelled before any text)."""
    from ._core.request import Message
    from ._render import TextRenderer

    stream = _open(service, options)
    renderer = None if fmt_json else TextRenderer(out, err, status=True)
    cancelled = [False]
    try:
        with _ctrl_c_cancels(stream) as cancelled:
            for chunk in stream:
                if renderer is None:
                    out.write(json.dumps(chunk_to_dict(chunk), ensure_ascii=False) + "\n")
                elif type(chunk) is Finish and cancelled[0]:
                    break  # the caller's own stop: "interrupted", not a failure's finish line
                else:
                    renderer.feed(chunk)
            out.flush()
    except KeyboardInterrupt:  # the second Ctrl-C: the stream is closed below
        cancelled[0] = True
    except BaseException:
        if renderer is not None:
            renderer.close()
        raise
    finally:
        stream.close()
    result = stream.partial()
    if cancelled[0]:
        if renderer is not None:
            renderer.close()  # clears the status line; the partial answer stays
        err.write("interrupted\n")
        err.flush()
        text = tuple(block for block in result.blocks if isinstance(block, TextBlock) and block.text.strip())
        if not text:
            return None
        return Message("assistant", text, provider=result.provider, model=result.model)
    if renderer is not None:
        renderer.summary(result)
    failure = result.failure
    if failure is not None:
        if renderer is None or not renderer.failure_shown:
            err.write(f"error: {failure.message}\n")
        _write_explanation(err, failure, target)
        err.flush()
        return None
    if any(isinstance(block, ToolCallBlock) for block in result.blocks):
        # the command runs no tools: a call with no result would make the next request
        # invalid, so the turn keeps its text only (and no replay state, which is per block)
        text = tuple(block for block in result.blocks if isinstance(block, TextBlock))
        if not text:
            return None
        return Message("assistant", text, provider=result.provider, model=result.model)
    return result.message()
