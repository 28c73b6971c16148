"""A stand-in for llama.cpp's ``llama-server``, for the tests of scripts/model-server.sh.

It takes the same command line (only ``--host``/``--port`` matter; ``--version`` prints a
version), answers ``GET /health`` with ``{"status": "ok"}`` and ``POST
/v1/chat/completions`` with one short non-streamed completion, and runs until killed. It
lets the script's build selection, self-check, start and stop be tested in seconds, with
no compiler and no model.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # each response is several small writes: no delayed-ACK wait
    def log_message(self, format: str, *args: object) -> None:  # keep the log quiet
        pass

    def _send(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": {"code": 404, "message": "not found"}})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/chat/completions":
            message = {"role": "assistant", "content": "Hi."}
            self._send(200, {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        else:
            self._send(404, {"error": {"code": 404, "message": "not found"}})


def main(argv: list[str]) -> int:
    if "--version" in argv:
        print("version: 0 (fake llama-server for tests)")
        return 0
    host, port = "127.0.0.1", 8080
    for flag, value in zip(argv, argv[1:]):
        if flag == "--host":
            host = value
        elif flag == "--port":
            port = int(value)
    print(f"fake llama-server listening on {host}:{port}", flush=True)
    ThreadingHTTPServer((host, port), _Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
