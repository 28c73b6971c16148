"""The adapter interface: the seam between the service and one provider API.

Contract: :class:`LlmAdapter` is what :class:`~dshstream._service.LlmService` calls —
``stream`` (or ``stream_batches``, the same chunks a list per network read),
``provider_info``, ``list_models`` and ``count_tokens`` (the provider's own count, or a
``ConfigurationError`` saying it has none: never an estimate). Every stream obeys the chunk protocol's adapter
contract (DESIGN.md §2): usage before one terminal ``Finish``, raw JSON tool arguments,
failures raised as ``LlmError`` or ended as an error finish. HTTP providers subclass
:class:`~dshstream._adapters.http.HttpAdapter`, which implements all of it once (and
reports its attempts to observers). A service observes every adapter's streams; an adapter
reports its attempts through :func:`dshstream._observe.watching` (``HttpAdapter`` and
``LiteLLMAdapter`` do); one that does not reports none (``StreamFinished.attempts`` is 0).

Telemetry facts an observer reads when a stream starts (:meth:`LlmAdapter.telemetry`):
the conventions' well-known ``gen_ai.provider.name`` of the API the adapter speaks (an
``AnthropicAdapter`` registered under any route name is ``anthropic``; ``None``: unknown),
the operation name (``chat``; Gemini's ``generate_content``) and the server the request
goes to (host and port), all without I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .._core.records import Telemetry
from .._core.request import GenerateOptions
from .._core.validate import invalid
from .._core.types import StreamChunk
from .settings import FailureReporter

__all__ = ["FailureReporter", "LlmAdapter", "ModelInfo", "ProviderInfo", "Telemetry"]


@dataclass(frozen=True, slots=True)
class ProviderInfo:
    """A provider route as the service lists it."""

    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """A model a provider offers (advisory)."""

    id: str
    name: str


class LlmAdapter:
    """The interface every adapter implements."""

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        """Stream one response as chunks."""
        raise NotImplementedError

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        """The same chunks in lists, as they are decoded (one list per network read).

        The service consumes this when no listener needs single chunks: a list per read
        instead of a generator hop per chunk. Override it for speed; the default wraps
        :meth:`stream`.
        """
        for chunk in self.stream(options):
            yield [chunk]

    def provider_info(self, provider: str) -> ProviderInfo:
        """Describe the route ``provider`` this adapter serves."""
        return ProviderInfo(id=provider, name=provider)

    def telemetry(self, options: GenerateOptions) -> Telemetry:
        """The provider name, operation and server of a request for ``options`` (the
        module docstring); pure and cheap, never raises for valid options."""
        return Telemetry()

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        """Models available on ``provider`` (advisory: others are still accepted), fetched
        within ``timeout`` seconds in all (default 30)."""
        return []

    def count_tokens(self, options: GenerateOptions, *, timeout: float | None = None) -> int:
        """The input tokens ``options`` would bill, counted by the provider's own endpoint
        within ``timeout`` seconds in all (default 30). An adapter whose provider has no
        such endpoint raises ``ConfigurationError`` saying so: nothing is estimated."""
        raise invalid(f"{type(self).__name__}: the provider has no token-counting endpoint (count_tokens)")
