"""The ``dshstream`` command: ``chat``, ``replay``, ``demo``, ``providers``, ``models``.

Exit codes: 0 ok, also when the reader of stdout goes away (``dshstream demo | head``: a
closed pipe ends the command quietly); 1 a provider failure, or a stream (also a replayed
one) that ends in an error finish — its classified headline goes to stderr (once: on a
terminal the finish line already shows it); 2 usage error — one line on stderr, no
traceback (a missing key names the variable to set, a bad ``--base-url``, ``--tools`` file
or path is named); 130 interrupted (the partial answer stays on screen). ``NO_COLOR`` is
honoured.

Keys: a key read from the environment goes only to its provider's own host. With
``--base-url`` no environment key is sent unless the caller names the variable with
``--api-key-env``.

Clouds, configured from the environment their SDKs read: ``-p azure`` (the model is the
deployment; ``AZURE_OPENAI_ENDPOINT`` or ``--base-url``, ``AZURE_OPENAI_API_KEY`` or
``--api-key-env``, ``OPENAI_API_VERSION``), ``-p vertex`` (``GOOGLE_CLOUD_PROJECT``,
``GOOGLE_CLOUD_LOCATION``, Application Default Credentials of the ``authorized_user``
kind; ``--api-key-env`` names an express-mode key instead; a ``claude-*`` model goes to
Claude on Vertex) and ``-p vertex-anthropic``; ``-p bedrock`` (Amazon Bedrock Converse:
``AWS_REGION``, and ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN`` or
``AWS_BEARER_TOKEN_BEDROCK``).

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
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit

from ._version import __version__
from ._core.errors import LlmError, make_failure
from ._core.types import Finish, LlmFailure, StreamChunk, chunk_to_dict

if TYPE_CHECKING:
    from ._adapters.base import LlmAdapter
    from ._service import LlmService

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class UsageError(Exception):
    """A mistake in the command line: one line on stderr (then its ``tips``, one a line),
    exit 2."""

    def __init__(self, message: str, tips: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tips = tuple(tips)


def _tips(failure: LlmFailure, key_env: Sequence[str] = (), base_url: bool = False) -> tuple[str, ...]:
    """The recovery tips under a failure: the command line runs on the user's own key."""
    from ._core.recovery import recovery_tips

    option = "--base-url" if base_url else None
    try:
        return recovery_tips(failure, "personal", key_env=key_env, base_url_option=option, shared_key=False)
    except LlmError:  # an --api-key-env name that is not variable-shaped: tips without it
        return recovery_tips(failure, "personal", base_url_option=option, shared_key=False)


def _write_tips(err: TextIO, tips: Sequence[str]) -> None:
    err.writelines(f"tip: {tip}\n" for tip in tips)


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

    chat = sub.add_parser("chat", help="stream a reply from a provider")
    chat.add_argument("prompt", nargs="*", help="the prompt (default: read stdin)")
    chat.add_argument("-p", "--provider", default="openai")
    chat.add_argument("-m", "--model", required=True)
    chat.add_argument("--base-url", help="an OpenAI-compatible endpoint to talk to (http:// or https://)")
    chat.add_argument("--dialect", help="OpenAI-compatible dialect for --base-url (default: the provider's)")
    chat.add_argument(
        "--api-key-env",
        default=None,
        help="variable holding the key (default: the provider's own, e.g. OPENAI_API_KEY; "
        "with --base-url no key is sent unless this names one)",
    )
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

    sub.add_parser("providers", help="list the providers configured from the environment")
    models = sub.add_parser("models", help="list a provider's models")
    models.add_argument("-p", "--provider", required=True)
    models.add_argument("--api-key-env", default=None, help="variable holding the key (default: the provider's own)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
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
        service = _service_for(args.provider, api_key_env=args.api_key_env, for_chat=False, model="")
        for model in service.list_models(args.provider):
            out.write(f"{model.id}\n")
        return EXIT_OK
    return EXIT_USAGE


def _emit(
    chunks: Iterable[StreamChunk],
    fmt_json: bool,
    out: TextIO,
    err: TextIO,
    *,
    status: bool = False,
    tips: Callable[[LlmFailure], Sequence[str]] | None = None,
) -> int:
    """Print chunks; returns the exit code from the final finish. ``tips`` gives the
    lines printed under a failure (none for a replayed transcript: no key took part)."""
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
        if tips is not None:
            _write_tips(err, tips(failure))
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
    try:
        wire = args.wire or detect_wire(data)
        options: dict[str, Any] = {}
        if args.think_tags is not None and wire not in ("anthropic", "gemini", "openai-responses"):
            options["think_tags"] = args.think_tags
        chunks = decode(data, wire=wire, **options)
        return _emit(chunks, args.format == "jsonl", out, err)
    except ValueError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


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
        name = spec.get("name")
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f'{where} has no "name"; {shape}')
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
    """An adapter talking to ``provider``'s own host (or ``base_url``)."""
    if provider == "anthropic":
        from ._adapters.anthropic import AnthropicAdapter

        return AnthropicAdapter(api_key=api_key)
    if provider == "gemini":
        from ._adapters.gemini import GeminiAdapter

        return GeminiAdapter(api_key=api_key)
    from ._adapters.openai_chat import OpenAIChatAdapter

    return OpenAIChatAdapter(api_key=api_key, base_url=base_url, dialect=provider)


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
    dialect = DIALECTS.get(provider)
    return (dialect.key_env,) if dialect is not None and dialect.key_env else ()


def _service_for(
    provider: str,
    *,
    api_key_env: str | None = None,
    base_url: str | None = None,
    dialect: str | None = None,
    for_chat: bool = True,
    model: str = "",
) -> LlmService:
    """A service with one adapter for ``provider``, or a :class:`UsageError` saying what
    is missing (the key variable to set, or ``--base-url``)."""
    from ._defaults import CLOUD_PROVIDERS, KEYED_PROVIDERS, LOCAL_PROVIDERS
    from ._core.dialects import DIALECTS
    from ._service import LlmService

    service = LlmService()
    if provider in CLOUD_PROVIDERS:
        if dialect is not None:
            raise UsageError(f"--dialect is not used with -p {provider}")
        service.register_adapter([provider], _cloud_adapter(provider, model, api_key_env, base_url))
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
    base_url_hint = " (or --base-url URL for an OpenAI-compatible server)" if for_chat else ""
    keyed = dict(KEYED_PROVIDERS)
    known = [*keyed, *CLOUD_PROVIDERS, *(d for d in DIALECTS if d not in keyed)]
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
            raise UsageError(message, _tips(missing, names, base_url=for_chat))
    service.register_adapter([provider], _adapter(provider, key))
    return service


def _chat(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from ._core.request import GenerateOptions, Message

    service = _service_for(
        args.provider, api_key_env=args.api_key_env, base_url=args.base_url, dialect=args.dialect, model=args.model
    )
    tools = _load_tools(args.tools) if args.tools else ()
    prompt = " ".join(args.prompt) if args.prompt else sys.stdin.read()
    if not prompt.strip():
        raise UsageError("empty prompt")
    attachments = [_load_attachment(path) for path in args.attach or ()]
    response_format = _load_schema(args.schema) if args.schema else _json_mode() if args.json_mode else None
    messages = [Message.user(prompt, *attachments)]
    if args.system:
        messages.insert(0, Message.system(args.system))
    options = GenerateOptions(
        provider=args.provider,
        model=args.model,
        messages=tuple(messages),
        tools=tools,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        reasoning_effort=args.reasoning_effort,
        timeout=args.timeout,
        idle_timeout=args.idle_timeout,
        response_format=response_format,
    )
    stream = service.stream(options)
    names = _key_names(args.provider, args.api_key_env, args.base_url)
    try:
        return _emit(
            stream, args.json, out, err, status=not args.json, tips=lambda failure: _tips(failure, names)
        )
    finally:
        stream.close()
