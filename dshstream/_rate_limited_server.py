"""A loopback OpenAI-compatible chat server that enforces a rate limit: for the executor's
tests, the benchmark of many requests, and the distributed-engine tests. Stdlib only.

Contract:

1. **The limit.** At most ``limit`` requests, and (when ``token_limit`` is set) at most
   ``token_limit`` tokens, per fixed ``window`` seconds; each answered request costs
   :data:`TOKENS_PER_REQUEST` tokens. Over either limit it answers 429 with
   ``retry-after-ms`` and the ``x-ratelimit-*`` headers, as OpenAI does; within them, the
   answer carries the same headers (``limit``, ``remaining``, ``reset`` as a Go duration,
   for requests and, when limited, tokens) and an ``x-request-id``.
2. **The answer.** ``"stream": true`` gets an SSE stream (the text ``echo PROMPT``, a
   ``stop`` finish, a usage chunk with a ``cost``); otherwise one ``chat.completion`` JSON
   body with the same text and usage. The prompt is the last message's content; a prompt
   equal to ``fail`` is answered 400.
3. **What it records.** ``accepted`` (a Counter of the prompts it answered, 400s
   included), ``rejected`` (429s), ``requests``, ``max_in_window`` and
   ``max_tokens_in_window`` (the most it admitted in one window). ``GET /stats`` returns
   them as JSON (``duplicates``: prompts answered more than once), for a server run in
   another process: ``python -m dshstream._rate_limited_server --limit N --window S``
   prints its URL on the first line and serves until stdin closes.
4. It binds 127.0.0.1 on a free port and never reaches beyond it.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from ._replay_server import LoopbackHandler, shut_down_now

__all__ = ["TOKENS_PER_REQUEST", "RateLimitedServer"]

#: what one answered request costs against ``token_limit``: its usage (10 in, 5 out)
TOKENS_PER_REQUEST = 15


class RateLimitedServer:
    """The server (rules 1-4); a context manager, or ``start()``/``stop()``."""

    def __init__(
        self,
        limit: int = 5,
        window: float = 1.0,
        *,
        delay: float = 0.0,
        fail: str | None = None,
        token_limit: int | None = None,
    ) -> None:
        self.limit = limit
        self.window = window
        self.delay = delay
        self.fail = fail
        self.token_limit = token_limit
        self.lock = threading.Lock()
        self.window_start = time.monotonic()
        self.count = 0
        self.tokens = 0
        self.max_in_window = 0
        self.max_tokens_in_window = 0
        self.accepted: Counter[str] = Counter()
        self.rejected = 0
        self.requests = 0
        owner = self

        class Handler(LoopbackHandler):
            def do_POST(self) -> None:
                owner.handle(self)

            def do_GET(self) -> None:
                owner.send_stats(self)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # a burst of new connections is not refused (the default: 5)

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that hung up (a cancelled row): nothing to report

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # a short poll: stop() waits for serve_forever to notice, half a second by default
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def start(self) -> RateLimitedServer:
        self.window_start = time.monotonic()
        self.thread.start()
        return self

    def stop(self) -> None:
        shut_down_now(self.httpd)
        self.httpd.server_close()

    def __enter__(self) -> RateLimitedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats(self) -> dict[str, Any]:
        """Rule 3's counts."""
        with self.lock:
            return {
                "requests": self.requests,
                "rejected": self.rejected,
                "answered": sum(self.accepted.values()),
                "distinct": len(self.accepted),
                "duplicates": sum(1 for count in self.accepted.values() if count > 1),
                "max_in_window": self.max_in_window,
                "max_tokens_in_window": self.max_tokens_in_window,
                "limit": self.limit,
                "token_limit": self.token_limit,
                "window": self.window,
            }

    def _admit(self) -> tuple[bool, int, int | None, float]:
        """Rule 1: (admitted, requests left, tokens left, seconds to the reset)."""
        with self.lock:
            self.requests += 1
            now = time.monotonic()
            if now - self.window_start >= self.window:
                self.window_start += self.window * int((now - self.window_start) // self.window)
                self.count = 0
                self.tokens = 0
            reset = self.window_start + self.window - now
            over_tokens = self.token_limit is not None and self.tokens + TOKENS_PER_REQUEST > self.token_limit
            if self.count >= self.limit or over_tokens:
                self.rejected += 1
                tokens_left = None if self.token_limit is None else max(0, self.token_limit - self.tokens)
                return False, max(0, self.limit - self.count), tokens_left, reset
            self.count += 1
            self.tokens += TOKENS_PER_REQUEST
            self.max_in_window = max(self.max_in_window, self.count)
            self.max_tokens_in_window = max(self.max_tokens_in_window, self.tokens)
            tokens_left = None if self.token_limit is None else self.token_limit - self.tokens
            return True, self.limit - self.count, tokens_left, reset

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], content_type: str, payload: bytes) -> None:
        handler.send_response(status)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    def send_stats(self, handler: BaseHTTPRequestHandler) -> None:
        self._send(handler, 200, {}, "application/json", json.dumps(self.stats()).encode())

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        prompt = str(body["messages"][-1]["content"])
        admitted, remaining, tokens_left, reset = self._admit()
        reset_text = f"{max(reset, 0.001) * 1000:.0f}ms"
        headers = {
            "x-ratelimit-limit-requests": str(self.limit),
            "x-ratelimit-remaining-requests": str(remaining),
            "x-ratelimit-reset-requests": reset_text,
            "x-request-id": f"req-{self.requests}",
        }
        if self.token_limit is not None and tokens_left is not None:
            headers["x-ratelimit-limit-tokens"] = str(self.token_limit)
            headers["x-ratelimit-remaining-tokens"] = str(tokens_left)
            headers["x-ratelimit-reset-tokens"] = reset_text
        if not admitted:
            headers["retry-after-ms"] = f"{max(reset, 0.001) * 1000:.0f}"
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
            self._send(handler, 429, headers, "application/json", json.dumps(error).encode())
            return
        if self.fail is not None and prompt == self.fail:
            error = {"error": {"message": "bad request", "type": "invalid_request_error"}}
            with self.lock:  # counted before the answer goes: a client that has it sees the count
                self.accepted[prompt] += 1
            self._send(handler, 400, headers, "application/json", json.dumps(error).encode())
            return
        if self.delay:
            time.sleep(self.delay)
        text = f"echo {prompt}"
        with self.lock:  # counted before the answer goes (as above)
            self.accepted[prompt] += 1
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": TOKENS_PER_REQUEST, "cost": 0.001}
        if body.get("stream"):
            events = [
                {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
                {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [], "usage": usage},
            ]
            payload = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
            self._send(handler, 200, headers, "text/event-stream", payload)
        else:
            answer = {
                "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage,
            }
            self._send(handler, 200, headers, "application/json", json.dumps(answer).encode())


def main(argv: list[str] | None = None) -> None:
    """Rule 3: serve from another process until stdin closes."""
    parser = argparse.ArgumentParser(prog="python -m dshstream._rate_limited_server")
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("--window", type=float, default=1.0)
    parser.add_argument("--token-limit", type=int, default=None)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args(argv)
    with RateLimitedServer(args.limit, args.window, delay=args.delay, token_limit=args.token_limit) as server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
