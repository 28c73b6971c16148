"""The HTTP calls of a provider batch, through the adapter's own transport and auth flow.

Contract:

1. **The adapter's seam.** Every call goes through the adapter's
   :attr:`~dshstream._adapters.http.HttpAdapter.transport` (its TLS, proxy and cassette
   settings included) with headers built as the adapter builds them (JSON, the wire's
   protocol headers, the caller's headers, attribution) plus the credential its
   :attr:`~dshstream._adapters.http.HttpAdapter.auth_flow` adds for that call. A
   credential travels in a header, never in a URL, and every value sent is one of the
   call's ``secrets``, redacted from any failure.
2. **Bounded.** Each call has a total time limit (``timeout``, seconds); a JSON answer is
   read to at most :data:`~dshstream._transport.interface.JSON_BODY_LIMIT` bytes, a result
   file to at most ``result_limit`` bytes (``MALFORMED_RESPONSE`` past it, never cut).
6. **Result files as rows.** :meth:`BatchCalls.jsonl_rows` reads a JSONL result file
   through the incremental :class:`~dshstream._core.jsonl.JsonlReader` as its pieces
   arrive (the transport's ``get_stream``), so what is held is the rows, never the file: a
   line is at most ``line_limit`` bytes. A transport without ``get_stream`` (one written
   before it) gives the whole body (``get_bytes``, within ``result_limit``), fed to the same
   reader in pieces. The rows come as the reader gives them (failures included).
3. **Refreshed once.** A call refused with a rejected credential is made again once when
   the flow changed what it sends (a callable's token, a key pool's next key), as
   ``list_models`` does (http rule 5).
4. **Only the provider's host.** A URL the provider hands back (Anthropic's
   ``results_url``) is fetched with the credential only when its scheme, host and port
   are the adapter's ``base_url``'s; anything else is ``MALFORMED_RESPONSE``, nothing sent.
5. A transport without ``post_json``, ``post_bytes`` or ``get_bytes`` is a
   ``ConfigurationError`` saying which, before anything is sent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from ..._adapters.credentials import FetchLimits
from ..._core.errors import LlmError, error_for, make_failure
from ..._core.jsonl import DEFAULT_MAX_LINE, JsonlReader, JsonlRow
from ..._core.multipart import MultipartFile, encode_multipart
from ..._core.redact import redact
from ..._core.validate import invalid

if TYPE_CHECKING:
    from ..._adapters.http import HttpAdapter

__all__ = ["BatchCalls"]

T = TypeVar("T")

#: the default bound of one downloaded result file (a 50,000-row OpenAI batch fits)
RESULT_LIMIT = 512 * 1024 * 1024
#: the default bound of one result line (one row's answer)
LINE_LIMIT = DEFAULT_MAX_LINE
#: the piece size a whole body is fed to the row reader in (rule 6's fallback)
_PIECE = 1 << 16


class BatchCalls:
    """One adapter's batch calls for ``provider`` (rules 1-6)."""

    def __init__(
        self,
        adapter: HttpAdapter,
        provider: str,
        *,
        timeout: float = 60.0,
        result_limit: int = RESULT_LIMIT,
        line_limit: int = LINE_LIMIT,
        cancel: threading.Event | None = None,
    ) -> None:
        self.adapter = adapter
        self.provider = provider
        self.timeout = timeout
        self.result_limit = result_limit
        self.line_limit = line_limit
        self.cancel = cancel
        transport = adapter.transport
        for name in ("get_json", "post_json", "post_bytes", "get_bytes"):
            if not callable(getattr(transport, name, None)):
                raise invalid(f"{adapter.title}: the transport has no {name}, needed by a provider batch", wrong_type=True)

    def _call(self, send: Callable[[dict[str, str], tuple[str, ...], float], T]) -> T:
        flow = self.adapter.auth_flow.for_stream()
        deadline = time.monotonic() + self.timeout
        refreshes = 0
        while True:
            added, secrets = flow.headers(self.provider, FetchLimits(deadline=deadline, cancel=self.cancel))
            headers = {**self.adapter.request_headers(streaming=False), **added}
            try:
                return send(headers, secrets, max(0.001, deadline - time.monotonic()))
            except LlmError as exc:  # rule 3
                if not flow.refresh_after(exc.failure, self.provider) or refreshes >= flow.refresh_limit:
                    raise
                refreshes += 1

    def get_json(self, url: str) -> Any:
        transport: Any = self.adapter.transport
        return self._call(lambda headers, secrets, left: transport.get_json(
            url, headers, provider=self.provider, secrets=secrets, timeout=left, cancel=self.cancel))

    def post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        transport: Any = self.adapter.transport
        return self._call(lambda headers, secrets, left: transport.post_json(
            url, body, headers, provider=self.provider, secrets=secrets, timeout=left, cancel=self.cancel))

    def post_multipart(self, url: str, fields: Mapping[str, str], files: list[MultipartFile]) -> Any:
        data, content_type = encode_multipart(fields, files)
        transport: Any = self.adapter.transport
        return self._call(lambda headers, secrets, left: transport.post_bytes(
            url, data, content_type, headers, provider=self.provider, secrets=secrets, timeout=left,
            cancel=self.cancel))

    def get_bytes(self, url: str) -> bytes:
        transport: Any = self.adapter.transport
        data: bytes = self._call(lambda headers, secrets, left: transport.get_bytes(
            url, headers, provider=self.provider, secrets=secrets, timeout=left, cancel=self.cancel,
            limit=self.result_limit))
        return data

    def jsonl_rows(self, url: str, what: str) -> Iterator[JsonlRow]:
        """The rows of the JSONL file at ``url``, read as it arrives (rules 2, 6); ``what``
        names the file in a row's failure."""
        reader = JsonlReader(max_line=self.line_limit, what=what, provider=self.provider)
        for piece in self._pieces(url):
            yield from reader.feed(piece)
        yield from reader.close()

    def _pieces(self, url: str) -> Iterator[bytes]:
        """The body of ``url`` in pieces, at most ``result_limit`` bytes in all (rules 2, 6)."""
        transport: Any = self.adapter.transport
        opener = getattr(transport, "get_stream", None)
        if not callable(opener):  # rule 6: a transport of before, the whole body
            data = self.get_bytes(url)
            for start in range(0, len(data), _PIECE):
                yield data[start:start + _PIECE]
            return
        stream = self._call(lambda headers, secrets, left: opener(
            url, headers, provider=self.provider, secrets=secrets, timeout=left, cancel=self.cancel))
        try:
            size = 0
            for piece in stream:
                size += len(piece)
                if size > self.result_limit:  # rule 2: a failure, never a cut
                    raise error_for(make_failure(
                        "MALFORMED_RESPONSE",
                        f"{self.provider}: the answer is larger than {self.result_limit} bytes (MALFORMED_RESPONSE)",
                        provider=self.provider, request_id=getattr(stream, "request_id", None),
                    ))
                yield piece
        finally:
            stream.close()

    def check_own_host(self, url: str) -> str:
        """``url`` when it is on the adapter's own origin (rule 4), else raise."""
        mine, theirs = urlsplit(self.adapter.base_url), urlsplit(url)
        if (theirs.scheme, theirs.hostname, theirs.port) != (mine.scheme, mine.hostname, mine.port):
            raise error_for(make_failure(
                "MALFORMED_RESPONSE",
                f"{self.provider}: the batch points at {redact(url, limit=200)}, not the provider's own host; "
                "not fetched with its credential (MALFORMED_RESPONSE)",
                provider=self.provider,
            ))
        return url
