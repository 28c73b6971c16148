"""Transport: the only module that imports ``requests``.

Contract:
- POST with ``stream=True`` and read the body with ``response.raw.read1()`` so every byte
  reaches the caller as soon as it arrives, on chunked and close-delimited bodies alike
  (never ``iter_lines()``: a CRLF split across reads dispatches a half-built event; never
  ``iter_content(chunk_size=None)`` on a non-chunked body: it reads to EOF).
- A non-2xx answer is read (bounded) and classified into an :class:`LlmError`.
- A blocked read never outlives its limits: a shared watchdog thread shuts the socket down
  when the caller cancels, when no content arrived for ``idle_timeout`` (keep-alives are
  liveness, not content: the consumer calls :meth:`HttpStream.touch` on content) or when the
  total ``timeout`` ran out. ``abort()`` does the same from any thread.
- Every foreign exception is mapped here, once, into an :class:`LlmError` whose detail is
  redacted; it is never chained raw (its text can carry a key in a URL).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import requests

from .classify import classify_error_payload, classify_http_error, request_id_from
from .errors import LlmError, error_for, make_failure
from .http_request import HttpRequest
from .log import get_logger
from .redaction import redact

log = get_logger("dshstream.transport")

#: the session type adapters accept (re-exported so no other module imports requests)
Session = requests.Session

DEFAULT_IDLE_TIMEOUT = 300.0
DEFAULT_CONNECT_TIMEOUT = 10.0
_READ_SIZE = 65536
_ERROR_BODY_LIMIT = 65536
_WATCH_INTERVAL = 0.05
_RELEASE_WAIT = 0.05


class _Watchdog:
    """One daemon thread that enforces cancel and time limits on every open stream."""

    def __init__(self) -> None:
        self._streams: set[HttpStream] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.add(stream)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="dshstream-watchdog", daemon=True)
                self._thread.start()
        self._wake.set()

    def remove(self, stream: HttpStream) -> None:
        with self._lock:
            self._streams.discard(stream)

    def _run(self) -> None:
        while True:
            with self._lock:
                streams = list(self._streams)
            if not streams:
                self._wake.wait(5.0)
                self._wake.clear()
                continue
            now = time.monotonic()
            for stream in streams:
                stream.check(now)
            time.sleep(_WATCH_INTERVAL)


_watchdog = _Watchdog()


class HttpStream:
    """An open streaming response: iterate for byte pieces; always closed when done."""

    def __init__(
        self,
        response: requests.Response,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None,
        idle_timeout: float | None,
        deadline: float | None,
        started: float,
    ) -> None:
        self.response = response
        self.status = response.status_code
        self.headers: dict[str, str] = dict(response.headers)
        self.request_id = request_id_from(self.headers)
        self._request = request
        self._provider = provider
        self._cancel = cancel
        self._idle_timeout = idle_timeout
        self._deadline = deadline
        self._last_content = started
        self._abort_code: str | None = None
        #: bytes read ahead (while checking what the body is), handed out first
        self.prefix = b""
        self._abort_message = ""
        self._closed = False
        self._lock = threading.Lock()
        _watchdog.add(self)

    # ------------------------------------------------------------------ control

    def touch(self) -> None:
        """Content arrived: restart the idle clock."""
        self._last_content = time.monotonic()

    def check(self, now: float) -> None:
        """Watchdog tick: abort on cancel or an expired limit."""
        if self._closed or self._abort_code is not None:
            return
        if self._cancel is not None and self._cancel.is_set():
            self.abort("ABORTED", f"{self._provider}: stream cancelled by the caller")
        elif self._deadline is not None and now >= self._deadline:
            self.abort("TIMEOUT", f"{self._provider}: total timeout expired (TIMEOUT)")
        elif self._idle_timeout is not None and now - self._last_content >= self._idle_timeout:
            self.abort(
                "TIMEOUT",
                f"{self._provider}: no content for {self._idle_timeout:g}s (idle timeout, TIMEOUT)",
            )

    def abort(self, code: str = "ABORTED", message: str | None = None) -> None:
        """End a blocked read now, from any thread; the reader raises ``code``."""
        with self._lock:
            if self._abort_code is not None or self._closed:
                return
            self._abort_code = code
            self._abort_message = message or f"{self._provider}: stream cancelled by the caller"
        _shutdown(self.response)

    @property
    def aborted(self) -> bool:
        """Whether :meth:`abort` ended the stream."""
        return self._abort_code is not None

    def raise_if_aborted(self) -> None:
        """Raise the abort's error if the stream was aborted."""
        if self._abort_code is not None:
            raise error_for(
                make_failure(
                    self._abort_code,
                    self._abort_message,
                    provider=self._provider,
                    request_id=self.request_id,
                )
            )

    def release(self) -> None:
        """The stream reached its terminal marker: hand the connection back to the session's
        pool for the next request when the rest of the body (usually just the chunked
        terminator) is already here; otherwise close it. Never waits more than a moment."""
        if self._closed:
            return
        raw: Any = self.response.raw
        sock = _socket_of(raw)
        if sock is None or self._abort_code is not None:
            self.close()
            return
        try:
            # A server that keeps the body open after its end marker must not hold the
            # caller: a short socket timeout ends the wait (and that connection).
            sock.settimeout(_RELEASE_WAIT)
            drained = 0
            while drained <= _ERROR_BODY_LIMIT:
                data = raw.read1(_READ_SIZE)
                if not data:
                    break
                drained += len(data)
            else:
                self.close()
                return
            sock.settimeout(None)
        except Exception:  # noqa: BLE001 - any trouble: just close
            self.close()
            return
        self._closed = True
        _watchdog.remove(self)
        try:
            raw.release_conn()
        except Exception:  # noqa: BLE001
            self.response.close()

    def close(self) -> None:
        """Release the connection (idempotent)."""
        if self._closed:
            return
        self._closed = True
        _watchdog.remove(self)
        try:
            self.response.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass

    def __enter__(self) -> HttpStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ reading

    def __iter__(self) -> Iterator[bytes]:
        if self.prefix:
            prefix, self.prefix = self.prefix, b""
            yield prefix
        raw = self.response.raw
        read1 = raw.read1
        # Decode only a compressed body: urllib3's decoding path buffers and copies every
        # read even for identity bodies.
        encoding = self.headers.get("content-encoding") or self.headers.get("Content-Encoding") or ""
        decode = encoding.lower() not in ("", "identity")
        while True:
            try:
                data = read1(_READ_SIZE, decode_content=decode)
            except Exception as exc:  # noqa: BLE001 - mapped once, here
                self.raise_if_aborted()
                raise self._read_failure(exc) from None
            if not data:
                self.raise_if_aborted()
                return
            yield data

    def _read_failure(self, exc: BaseException) -> LlmError:
        detail = redact(f"{type(exc).__name__}: {exc}", self._request.secrets, limit=1900)
        if _is_timeout(exc):
            return error_for(
                make_failure(
                    "TIMEOUT",
                    f"{self._provider}: read timed out (TIMEOUT)",
                    provider=self._provider,
                    request_id=self.request_id,
                    detail=detail,
                )
            )
        return error_for(
            make_failure(
                "TRANSPORT",
                f"{self._provider}: the response body failed mid-stream (TRANSPORT)",
                provider=self._provider,
                request_id=self.request_id,
                detail=detail,
            )
        )


def _is_timeout(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (TimeoutError, socket.timeout, requests.Timeout)):
            return True
        if "timed out" in str(current).lower() or "timeout" in type(current).__name__.lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def _shutdown(response: requests.Response) -> None:
    """Shut the response's socket down so a blocked read returns at once."""
    raw: Any = response.raw
    try:
        shutdown = getattr(raw, "shutdown", None)
        if shutdown is not None:
            shutdown()
            return
        sock = _socket_of(raw)
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # noqa: BLE001 - best effort: the socket may be gone already
        pass


def _socket_of(raw: Any) -> socket.socket | None:
    connection = getattr(raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if isinstance(sock, socket.socket):
        return sock
    fp = getattr(getattr(raw, "_fp", None), "fp", None)
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


class Transport:
    """Sends :class:`HttpRequest` values with a ``requests.Session`` (one per transport)."""

    def __init__(
        self,
        session: requests.Session | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        self.session = session if session is not None else requests.Session()
        self.connect_timeout = connect_timeout

    def __repr__(self) -> str:
        return f"Transport(connect_timeout={self.connect_timeout!r})"

    def open(
        self,
        request: HttpRequest,
        *,
        provider: str,
        cancel: threading.Event | None = None,
        idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT,
        deadline: float | None = None,
    ) -> HttpStream:
        """POST ``request`` and return the open stream, or raise a classified LlmError."""
        started = time.monotonic()
        if cancel is not None and cancel.is_set():
            raise error_for(
                make_failure("ABORTED", f"{provider}: stream cancelled by the caller", provider=provider)
            )
        read_timeout = idle_timeout
        if deadline is not None:
            remaining = max(0.001, deadline - started)
            read_timeout = remaining if read_timeout is None else min(read_timeout, remaining)
        try:
            response = self.session.post(
                request.url,
                data=request.body_bytes(),
                headers=dict(request.headers),
                stream=True,
                timeout=(self.connect_timeout, read_timeout),
            )
        except requests.exceptions.InvalidURL as exc:
            raise self._failure("INVALID_OPTIONS", "the base URL is not valid", exc, request, provider) from None
        except requests.exceptions.ConnectTimeout as exc:
            raise self._failure("TIMEOUT", "connect timed out", exc, request, provider) from None
        except requests.exceptions.Timeout as exc:
            raise self._failure("TIMEOUT", "no response before the timeout", exc, request, provider) from None
        except (requests.exceptions.RequestException, OSError, ValueError) as exc:
            raise self._failure("TRANSPORT", "request failed", exc, request, provider) from None
        stream = HttpStream(
            response,
            request,
            provider=provider,
            cancel=cancel,
            idle_timeout=idle_timeout,
            deadline=deadline,
            started=started,
        )
        if response.status_code >= 300:
            try:
                body = _read_bounded(stream)
            finally:
                stream.close()
            raise error_for(
                classify_http_error(
                    response.status_code,
                    body,
                    stream.headers,
                    provider=provider,
                    secrets=request.secrets,
                )
            )
        content_type = (stream.headers.get("content-type") or stream.headers.get("Content-Type") or "").lower()
        if "json" in content_type and "event-stream" not in content_type:
            _refuse_json_body(stream, request, provider)
        return stream

    def get_json(
        self,
        url: str,
        headers: dict[str, str],
        *,
        provider: str,
        secrets: tuple[str, ...] = (),
        timeout: float = 30.0,
    ) -> Any:
        """GET ``url`` and return its JSON, or raise a classified LlmError."""
        request = HttpRequest(url=url, headers=headers, body={}, secrets=secrets)
        try:
            response = self.session.get(url, headers=headers, timeout=(self.connect_timeout, timeout))
        except requests.exceptions.Timeout as exc:
            raise self._failure("TIMEOUT", "no response before the timeout", exc, request, provider) from None
        except (requests.exceptions.RequestException, OSError, ValueError) as exc:
            raise self._failure("TRANSPORT", "request failed", exc, request, provider) from None
        with response:
            if response.status_code >= 300:
                raise error_for(
                    classify_http_error(
                        response.status_code,
                        response.content[:_ERROR_BODY_LIMIT],
                        dict(response.headers),
                        provider=provider,
                        secrets=secrets,
                    )
                )
            try:
                return response.json()
            except ValueError:
                raise error_for(
                    make_failure(
                        "MALFORMED_RESPONSE",
                        f"{provider}: the answer is not JSON (MALFORMED_RESPONSE)",
                        provider=provider,
                    )
                ) from None

    @staticmethod
    def _failure(
        code: str, what: str, exc: BaseException, request: HttpRequest, provider: str
    ) -> LlmError:
        detail = redact(f"{type(exc).__name__}: {exc}", request.secrets, limit=1900)
        log.warning("%s: %s (%s)", provider, what, code)
        return error_for(make_failure(code, f"{provider}: {what} ({code})", provider=provider, detail=detail))


def _refuse_json_body(stream: HttpStream, request: HttpRequest, provider: str) -> None:
    """A 2xx answer labelled JSON: some servers report errors that way, others ignore
    ``stream: true``. Raise a classified error for a JSON document; hand anything else
    (an event stream with a wrong label) on to the reader unchanged."""
    pieces = iter(stream)
    head = next(pieces, b"")  # one read: a mislabelled event stream must not be delayed
    if head.lstrip()[:1] not in (b"{", b"["):
        stream.prefix = head
        return
    size = len(head)
    rest = [head]
    for piece in pieces:
        rest.append(piece)
        size += len(piece)
        if size >= _ERROR_BODY_LIMIT:
            break
    head = b"".join(rest)
    try:
        payload = json.loads(head)
    except ValueError:
        stream.prefix = head
        return
    stream.close()
    if _has_error(payload):
        raise error_for(classify_error_payload(payload, provider=provider, secrets=request.secrets))
    raise error_for(
        make_failure(
            "MALFORMED_RESPONSE",
            f"{provider}: the server answered with a JSON document instead of an event stream "
            "(MALFORMED_RESPONSE)",
            provider=provider,
            request_id=stream.request_id,
            detail=redact(head.decode("utf-8", "replace"), request.secrets, limit=1900),
        )
    )


def _has_error(payload: Any) -> bool:
    if isinstance(payload, list) and payload:
        payload = payload[0]
    return isinstance(payload, dict) and (payload.get("error") is not None or payload.get("type") == "error")


def _read_bounded(stream: HttpStream) -> bytes:
    pieces: list[bytes] = []
    size = 0
    try:
        for piece in stream:
            pieces.append(piece)
            size += len(piece)
            if size >= _ERROR_BODY_LIMIT:
                break
    except LlmError:
        pass
    return b"".join(pieces)[:_ERROR_BODY_LIMIT]
