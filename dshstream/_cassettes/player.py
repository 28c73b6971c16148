"""Replay: recorded answers served through the real HTTP path, on 127.0.0.1.

Contract: a :class:`Player` is an :class:`~dshstream._transport.intercept.Interceptor`.
Nothing it does leaves the machine: a request it cannot answer is refused before anything
is sent.

1. **Matched, in order, once.** A request is redacted as a recorded one was
   (:mod:`~dshstream._cassettes.redaction` rule 5) and compared on the cassette's
   ``match_on`` criteria (default the method, the URL and the body's digest); it gets the
   first recorded interaction that matches and has not answered yet, so repeated requests
   (a retry after a 429) get the answers in the order recorded. Each interaction answers
   one request.
2. **Unmatched fails loudly.** A request with no such interaction raises
   :class:`~dshstream._core.errors.ConfigurationError` (``INVALID_OPTIONS``), not
   retried, whose message says what was asked, why nothing matched (no such method and
   URL, a different body, every match used already) and how to record it; the miss is
   also handed to ``on_miss`` (the cassette keeps it, and the test fails even when the
   code under test swallows the failure).
3. **Every layer exercised.** The matched answer is served by a
   :class:`~dshstream._replay_server.ReplayServer` on 127.0.0.1 and the request is sent
   there by an :class:`~dshstream._transport.client.HttpTransport` of the player's own
   (``requests`` and ``urllib3``, the chunked reader, the pool, the watchdog), with its
   destination rewritten to ``http://127.0.0.1:PORT/<n>/<path>?<query>``: the status,
   headers (less the hop-by-hop ones, and the length and encoding of a body now sent
   decoded) and body as recorded, ended as recorded (a ``cut`` body without its chunked
   terminator, an ``open`` one held). The session ignores proxy settings of the
   environment (loopback never goes through a proxy).
4. **Timing on request.** Instant by default — one write per event; with ``timing`` the
   recorded pauses between reads are kept (a UI test watching text arrive), when the
   cassette recorded them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._core.errors import error_for, make_failure
from .._core.http_request import HttpRequest
from .._replay_server import ReplayServer, Route
from .._transport import HttpTransport, new_session
from .format import Interaction
from .redaction import Redaction, body_digest, request_key

if TYPE_CHECKING:
    from .._transport.stream import HttpStream
    from .._transport.intercept import Exchange

__all__ = ["HOP_HEADERS", "Player", "route_for"]

#: recorded answer headers not sent again: the transfer's own, and what the server adds
HOP_HEADERS = frozenset(
    {
        "content-length",
        "transfer-encoding",
        "content-encoding",
        "connection",
        "keep-alive",
        "date",
        "server",
        "content-type",
    }
)


def route_for(interaction: Interaction, *, timing: bool = False) -> Route:
    """The route that serves ``interaction`` as recorded (rules 3, 4)."""
    headers = {k: v for k, v in interaction.response_headers.items() if k.lower() not in HOP_HEADERS}
    script: list[bytes | float] | None = None
    if timing and interaction.timing:
        script = []
        body, at, last = interaction.body, 0, 0.0
        for position, (seconds, size) in enumerate(interaction.timing):
            script.append(max(0.0, seconds - last))
            last = seconds
            end = len(body) if position == len(interaction.timing) - 1 else min(len(body), at + size)
            if end > at:
                script.append(body[at:end])
            at = end
        if at < len(body):
            script.append(body[at:])
    return Route(
        body=interaction.body,
        status=interaction.status,
        content_type=interaction.header("content-type") or "application/octet-stream",
        headers=headers,
        script=script,
        ending=interaction.end,
    )


def _content_type(request: HttpRequest) -> str | None:
    return next((v for k, v in request.headers.items() if k.lower() == "content-type"), None)


class Player:
    """Answers requests with ``interactions`` (rules 1-4); :meth:`stop` when done."""

    def __init__(
        self,
        interactions: list[Interaction],
        *,
        match_on: tuple[str, ...],
        fields: tuple[str, ...] = (),
        timing: bool = False,
        where: str = "the cassette",
        how_to_record: str = "",
        on_miss: Callable[[str], None] | None = None,
        absent: bool = False,
    ) -> None:
        self.interactions = interactions
        #: the cassette file does not exist (every request is a miss that says so)
        self.absent = absent
        self.match_on = match_on
        self.fields = fields
        self.where = where
        self.how_to_record = how_to_record
        self._on_miss = on_miss
        self._lock = threading.Lock()
        self._keys = [request_key(i.method, i.url, i.request_body, match_on) for i in interactions]
        #: which interactions have answered (rule 1)
        self.used = [False] * len(interactions)
        self.server = ReplayServer({f"/{n}/": route_for(i, timing=timing) for n, i in enumerate(interactions)})
        self.server.start()
        session = new_session()
        session.trust_env = False  # rule 3: no proxy between us and 127.0.0.1
        self.transport = HttpTransport(session)

    def stop(self) -> None:
        """Stop the loopback server (held connections end) and close the session."""
        self.server.stop()
        self.transport.session.close()

    def exchange(self, transport: HttpTransport, exchange: Exchange) -> HttpStream:
        method, request, data, limits = exchange.method, exchange.request, exchange.data, exchange.limits
        redaction = Redaction(self.fields, request.secrets)
        url = redaction.url(request.url)
        body = redaction.request_body(data or b"", _content_type(request))
        key = request_key(method, url, body, self.match_on)
        with self._lock:
            found = next((n for n, k in enumerate(self._keys) if k == key and not self.used[n]), None)
            if found is not None:
                self.used[found] = True
        if found is None:
            message = self._miss(method, url, body, key)
            if self._on_miss is not None:
                self._on_miss(message)
            raise error_for(make_failure("INVALID_OPTIONS", message, provider=limits.provider))
        split = urlsplit(request.url)
        local = f"{self.server.url}/{found}{split.path or '/'}" + (f"?{split.query}" if split.query else "")
        return self.transport.send_direct(exchange._replace(request=request.with_url(local)))

    def _miss(self, method: str, url: str, body: bytes, key: tuple[object, ...]) -> str:
        """Rule 2's message: what was asked, why nothing matched, how to record it."""
        asked = f"{method.upper()} {url}"
        if self.absent:
            why = "the cassette does not exist"
        elif not self.interactions:
            why = "it holds no recorded exchange"
        else:
            same_target = [n for n, i in enumerate(self.interactions) if i.method == method.upper() and i.url == url]
            if any(k == key for k in self._keys):
                why = f"its {sum(k == key for k in self._keys)} matching exchange(s) answered already"
            elif same_target:
                why = (
                    f"{len(same_target)} recorded exchange(s) have this method and URL but another body "
                    f"(sha256 {body_digest(body)[:12]} asked, "
                    f"{', '.join(body_digest(self.interactions[n].request_body)[:12] for n in same_target[:3])} "
                    "recorded): the request changed"
                )
            else:
                targets = sorted({f"{i.method} {i.url}" for i in self.interactions})
                why = f"it has no exchange for this method and URL (it has: {'; '.join(targets[:3])})"
        record = f"; record it with: {self.how_to_record}" if self.how_to_record else ""
        return f"cassette {self.where}: no recorded answer for {asked}: {why}{record}"
