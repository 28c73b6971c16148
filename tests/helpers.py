"""Shared test helpers: fixture loading, split feeding, a loopback replay server."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from dshstream.decoding import decode
from dshstream.types import StreamChunk

FIXTURES = Path(__file__).parent / "fixtures" / "real"


def fixture_bytes(relative: str) -> bytes:
    """The exact bytes of a recorded transcript under tests/fixtures/real."""
    return (FIXTURES / relative).read_bytes()


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (out-of-range and duplicate cuts ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    pieces = []
    start = 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def decode_all(data: bytes | Sequence[bytes], wire: str, **options: object) -> list[StreamChunk]:
    """Every chunk of a stream, as a list."""
    return list(decode(data, wire=wire, **options))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- corpus wires

_NATIVE_WIRES = ("anthropic", "gemini", "openai-responses")


def fixture_wire(relative: str) -> str:
    """The wire that decodes the recorded transcript ``relative`` (``provider/name.sse``).

    Provider directories named after a native wire use it; DeepSeek's and OpenRouter's
    ``responses_api_*`` recordings are the Responses wire; ``openai/`` (legacy completions
    included) is ``openai-chat``; another directory is its chat dialect when one exists,
    else ``openai-chat``.
    """
    from dshstream.dialects import DIALECTS

    provider, _, name = relative.partition("/")
    if provider in _NATIVE_WIRES:
        return provider
    if provider in ("deepseek", "openrouter") and name.startswith("responses_api_"):
        return "openai-responses"
    if provider == "openai":
        return "openai-chat"
    return provider if provider in DIALECTS else "openai-chat"


def all_fixtures() -> list[str]:
    """Every recorded transcript, as ``provider/name.sse``, sorted."""
    return sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.glob("*/*.sse"))


def routed_session(real_base_url: str, loopback_url: str) -> object:
    """A ``requests.Session`` that sends requests for ``real_base_url``'s host to
    ``loopback_url`` instead (the URL the adapter builds, headers and all, stay as they
    would be for the real host; only the connection goes to 127.0.0.1)."""
    from urllib.parse import urlsplit, urlunsplit

    import requests

    real = urlsplit(real_base_url)
    target = urlsplit(loopback_url)

    class _Reroute(requests.adapters.HTTPAdapter):
        def send(self, request, *args, **kwargs):  # type: ignore[no-untyped-def,override]
            parts = urlsplit(request.url)
            request.url = urlunsplit((target.scheme, target.netloc, parts.path, parts.query, ""))
            return super().send(request, *args, **kwargs)

    session = requests.Session()
    session.mount(f"{real.scheme}://{real.netloc}", _Reroute())
    return session
