"""A loopback OpenAI-compatible chat server that enforces a rate limit, for the executor's
tests and benchmark: ``limit`` requests per fixed ``window`` (seconds). Over the limit it
answers 429 with ``retry-after`` and the ``x-ratelimit-*`` headers; within it, a short SSE
stream with the same headers and a usage chunk. It records every request it accepted (the
prompt's text) and the most requests it ever accepted in one window."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RateLimitedServer:
    def __init__(self, limit: int = 5, window: float = 1.0, *, delay: float = 0.0, fail: str | None = None) -> None:
        self.limit = limit
        self.window = window
        self.delay = delay
        self.fail = fail  # a prompt answered 400
        self.lock = threading.Lock()
        self.window_start = time.monotonic()
        self.count = 0
        self.max_in_window = 0
        self.accepted: Counter[str] = Counter()
        self.rejected = 0
        self.requests = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                owner.handle(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> RateLimitedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _admit(self) -> tuple[bool, int, float]:
        with self.lock:
            self.requests += 1
            now = time.monotonic()
            if now - self.window_start >= self.window:
                self.window_start += self.window * int((now - self.window_start) // self.window)
                self.count = 0
            reset = self.window_start + self.window - now
            if self.count >= self.limit:
                self.rejected += 1
                return False, 0, reset
            self.count += 1
            self.max_in_window = max(self.max_in_window, self.count)
            return True, self.limit - self.count, reset

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        prompt = str(body["messages"][-1]["content"])
        admitted, remaining, reset = self._admit()
        headers = {
            "x-ratelimit-limit-requests": str(self.limit),
            "x-ratelimit-remaining-requests": str(remaining),
            "x-ratelimit-reset-requests": f"{max(reset, 0.001) * 1000:.0f}ms",
            "x-request-id": f"req-{self.requests}",
        }
        if not admitted:
            payload = json.dumps({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}).encode()
            handler.send_response(429)
            headers["retry-after-ms"] = f"{max(reset, 0.001) * 1000:.0f}"
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            return
        if self.fail is not None and prompt == self.fail:
            payload = json.dumps({"error": {"message": "bad request", "type": "invalid_request_error"}}).encode()
            handler.send_response(400)
            handler.send_header("content-type", "application/json")
            handler.send_header("content-length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            with self.lock:
                self.accepted[prompt] += 1
            return
        if self.delay:
            time.sleep(self.delay)
        events = [
            {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": f"echo {prompt}"}, "finish_reason": None}]},
            {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "cost": 0.001}},
        ]
        payload = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        handler.send_response(200)
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        with self.lock:
            self.accepted[prompt] += 1
