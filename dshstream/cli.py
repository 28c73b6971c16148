"""The ``dshstream`` command: ``chat``, ``replay``, ``demo``, ``providers``, ``models``.

Exit codes: 0 ok; 1 a provider failure, or a stream (also a replayed one) that ends in an
error finish — its classified headline goes to stderr; 2 usage error; 130 interrupted.
``NO_COLOR`` is honoured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from ._version import __version__
from .errors import LlmError
from .types import Finish, StreamChunk, chunk_to_dict

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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
    chat.add_argument("--base-url", help="an OpenAI-compatible endpoint to talk to")
    chat.add_argument("--dialect", help="OpenAI-compatible dialect for --base-url (default: the provider's)")
    chat.add_argument("--api-key-env", default=None, help="variable holding the key (default OPENAI_API_KEY)")
    chat.add_argument("--system", help="system prompt")
    chat.add_argument(
        "--reasoning-effort", choices=("off", "minimal", "low", "medium", "high", "max"), default=None
    )
    chat.add_argument("--tools", help="JSON file with a list of tools (OpenAI or {name, parameters} form)")
    chat.add_argument("--max-tokens", type=int)
    chat.add_argument("--temperature", type=float)
    chat.add_argument("--timeout", type=float, help="total time limit in seconds")
    chat.add_argument("--idle-timeout", type=float, help="seconds without content before giving up")
    chat.add_argument("--json", action="store_true", help="print JSONL chunks instead of text")

    sub.add_parser("providers", help="list the providers configured from the environment")
    models = sub.add_parser("models", help="list a provider's models")
    models.add_argument("-p", "--provider", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    out, err = sys.stdout, sys.stderr
    try:
        if args.command == "demo":
            from .demo import run_demo

            return run_demo(out, err)
        if args.command == "replay":
            return _replay(args, out, err)
        if args.command == "chat":
            return _chat(args, out, err)
        if args.command == "providers":
            from .defaults import default_service

            for info in default_service().list_providers():
                out.write(f"{info.id}\t{info.name}\n")
            return EXIT_OK
        if args.command == "models":
            from .defaults import default_service

            for model in default_service().list_models(args.provider):
                out.write(f"{model.id}\n")
            return EXIT_OK
    except KeyboardInterrupt:
        err.write("\ninterrupted\n")
        return EXIT_INTERRUPTED
    except LlmError as exc:
        err.write(f"error: {exc.failure.message}\n")
        return EXIT_USAGE if exc.failure.code in ("NO_ADAPTER", "INVALID_OPTIONS") else EXIT_FAILURE
    except OSError as exc:
        err.write(f"error: {exc.strerror or exc}\n")
        return EXIT_USAGE
    return EXIT_USAGE


def _emit(chunks: Iterable[StreamChunk], fmt_json: bool, out: TextIO, err: TextIO, *, status: bool = False) -> int:
    """Print chunks; returns the exit code from the final finish."""
    from .render import TextRenderer

    renderer = None if fmt_json else TextRenderer(out, err, status=status)
    code = EXIT_OK
    for chunk in chunks:
        if renderer is None:
            out.write(json.dumps(chunk_to_dict(chunk), ensure_ascii=False) + "\n")
        else:
            renderer.feed(chunk)
        if type(chunk) is Finish and chunk.reason.failure is not None:
            err.write(f"error: {chunk.reason.failure.message}\n")
            code = EXIT_FAILURE
    out.flush()
    return code


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .decoding import decode, detect_wire

    if args.file == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(args.file, "rb") as handle:
            data = handle.read()
    wire = args.wire or detect_wire(data)
    options: dict[str, Any] = {}
    if args.think_tags is not None and wire not in ("anthropic", "gemini", "openai-responses"):
        options["think_tags"] = args.think_tags
    try:
        chunks = decode(data, wire=wire, **options)
        return _emit(chunks, args.format == "jsonl", out, err)
    except ValueError as exc:
        err.write(f"error: {exc}\n")
        return EXIT_USAGE


def _load_tools(path: str) -> tuple[Any, ...]:
    from .request import ToolSpec

    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    tools = []
    for entry in raw if isinstance(raw, list) else [raw]:
        spec = entry.get("function", entry) if isinstance(entry, dict) else {}
        tools.append(
            ToolSpec(
                name=str(spec["name"]),
                description=str(spec.get("description", "")),
                parameters=spec.get("parameters") or {"type": "object", "properties": {}},
            )
        )
    return tuple(tools)


def _chat(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .request import GenerateOptions, Message
    from .service import LlmService

    prompt = " ".join(args.prompt) if args.prompt else sys.stdin.read()
    if not prompt.strip():
        err.write("error: empty prompt\n")
        return EXIT_USAGE
    if args.base_url:
        from .adapters.openai_chat import OpenAIChatAdapter
        from .dialects import DIALECTS

        dialect = args.dialect or (args.provider if args.provider in DIALECTS else "custom")
        key_env = args.api_key_env or "OPENAI_API_KEY"
        service = LlmService()
        service.register_adapter(
            [args.provider],
            OpenAIChatAdapter(api_key=os.environ.get(key_env) or None, base_url=args.base_url, dialect=dialect),
        )
    else:
        from .defaults import default_service

        service = default_service()
    messages = [Message.user(prompt)]
    if args.system:
        messages.insert(0, Message.system(args.system))
    options = GenerateOptions(
        provider=args.provider,
        model=args.model,
        messages=tuple(messages),
        tools=_load_tools(args.tools) if args.tools else (),
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        reasoning_effort=args.reasoning_effort,
        timeout=args.timeout,
        idle_timeout=args.idle_timeout,
    )
    stream = service.stream(options)
    try:
        return _emit(stream, args.json, out, err, status=not args.json)
    finally:
        stream.close()
