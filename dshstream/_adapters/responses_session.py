"""ResponsesSession: a Responses adapter whose turns share one kept WebSocket — a
conversation or a tool loop on one connection (``OpenAIResponsesAdapter.connect()``).

Contract:

1. **The same adapter, another transport.** A session is a copy of the adapter it was
   made from — its wire, auth flow, credential, retry policy, observer, failure reporter
   and settings shared — whose transport is a
   :class:`~dshstream._transport.ws_transport.WebSocketTransport` around the adapter's own
   HTTP transport. Every stream goes through the one attempt loop, the byte pump, the
   Responses translator and the assembler, unchanged; what goes over the socket and what
   over HTTP, reconnects, the connection cap and the fallback are the transport's rules
   (:mod:`~dshstream._transport.ws_transport`).
2. **An adapter.** It is an :class:`~dshstream._adapters.base.LlmAdapter`: stream from it
   directly, or register it with an :class:`~dshstream._service.LlmService` (so
   ``run_tools`` runs every step of a tool loop over the one socket). One turn at a time
   goes over the socket; a second stream started while one is in flight goes over HTTP.
3. **Opened lazily, closed once.** Nothing connects until the first turn; ``close()``
   (or leaving the ``with`` block) closes the socket with a close handshake, bounded, and
   is idempotent; a session used after ``close()`` connects again. Only a transport that
   sends real HTTP (the default one, or a caller's ``session=``) gets a socket: with any
   other (``MemoryTransport``, a caller's own) every turn goes through it, unchanged.
4. **Checked early.** ``max_reconnects`` (an int >= 0), ``max_age`` and
   ``max_message_size`` (positive) and ``fallback`` and ``chain`` (bools) are validated
   when the session is made: a mistake is a ``ConfigurationError`` naming the argument.
5. **Chaining, on request.** ``chain=True`` sends a turn that exactly continues the
   socket's last response as ``previous_response_id`` plus its new input items
   (:mod:`~dshstream._transport.ws_chain`: the history must be that response's own, as
   the assembler replays it); off by default, every turn carries its whole history.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._core.request import GenerateOptions
from .._core.types import StreamChunk
from .._core.validate import describe, invalid
from .._core.ws_frames import DEFAULT_MAX_MESSAGE_SIZE
from .._transport import HttpTransport
from .._transport.ws_transport import DEFAULT_MAX_AGE, SocketStats, WebSocketTransport
from .base import LlmAdapter, ModelInfo, ProviderInfo

if TYPE_CHECKING:
    from typing_extensions import Self

    from .http import HttpAdapter

__all__ = ["ResponsesSession"]


class ResponsesSession(LlmAdapter):
    """A Responses adapter whose turns go over one kept WebSocket (rules 1-4); a context
    manager. Made by ``OpenAIResponsesAdapter.connect()``."""

    def __init__(
        self,
        adapter: HttpAdapter,
        *,
        fallback: bool = True,
        max_reconnects: int = 5,
        max_age: float = DEFAULT_MAX_AGE,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        chain: bool = False,
    ) -> None:
        if not isinstance(chain, bool):
            raise invalid(f"connect: chain must be a bool, got {describe(chain)}", wrong_type=True)
        if not isinstance(fallback, bool):
            raise invalid(f"connect: fallback must be a bool, got {describe(fallback)}", wrong_type=True)
        if isinstance(max_reconnects, bool) or not isinstance(max_reconnects, int) or max_reconnects < 0:
            raise invalid(f"connect: max_reconnects must be an int >= 0, got {describe(max_reconnects)}")
        if isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or not max_age > 0:
            raise invalid(f"connect: max_age must be a positive number of seconds, got {describe(max_age)}")
        if isinstance(max_message_size, bool) or not isinstance(max_message_size, int) or max_message_size < 1:
            raise invalid(f"connect: max_message_size must be a positive int, got {describe(max_message_size)}")
        http = adapter.transport
        self._adapter = copy.copy(adapter)
        self._socket: WebSocketTransport | None = None
        if isinstance(http, HttpTransport):  # rule 3: only real HTTP gets a socket
            self._socket = WebSocketTransport(
                http,
                connection=http.connection,
                connect_timeout=http.connect_timeout,
                fallback=fallback,
                max_reconnects=max_reconnects,
                max_age=float(max_age),
                max_message_size=max_message_size,
                trust_env=http.session.trust_env,
                chain=chain,
            )
            self._adapter.transport = self._socket

    def __repr__(self) -> str:
        state = "connected" if self.connected else "idle"
        return f"ResponsesSession({self._adapter!r}, {state})"

    @property
    def adapter(self) -> HttpAdapter:
        """The adapter this session streams through (a copy of the one it was made from)."""
        return self._adapter

    @property
    def connected(self) -> bool:
        """Whether a socket is open and kept for the next turn."""
        return self._socket is not None and self._socket.connected

    @property
    def stats(self) -> SocketStats:
        """Connects, turns over the socket and over HTTP, replaced sockets."""
        return self._socket.stats if self._socket is not None else SocketStats()

    @property
    def fell_back(self) -> str | None:
        """Why every turn goes over HTTP now (no socket to be had), or ``None``."""
        if self._socket is None:
            return "the adapter's transport is not HTTP"
        return self._socket.given_up

    # ------------------------------------------------------------------ the adapter (rule 2)

    def stream(self, options: GenerateOptions) -> Iterator[StreamChunk]:
        return self._adapter.stream(options)

    def stream_batches(self, options: GenerateOptions) -> Iterator[list[StreamChunk]]:
        return self._adapter.stream_batches(options)

    def provider_info(self, provider: str) -> ProviderInfo:
        return self._adapter.provider_info(provider)

    def list_models(self, provider: str, *, timeout: float | None = None) -> list[ModelInfo]:
        return self._adapter.list_models(provider, timeout=timeout)

    def count_tokens(self, options: GenerateOptions, *, timeout: float | None = None) -> int:
        return self._adapter.count_tokens(options, timeout=timeout)

    # ------------------------------------------------------------------ closing (rule 3)

    def close(self) -> None:
        """Close the socket (idempotent, never raises)."""
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
