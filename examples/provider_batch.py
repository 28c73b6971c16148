"""Provider batches: the requests of ``run_many`` sent as one Anthropic Message Batch (the
providers bill batches at half price), polled until it ends, read back by the same wire
translator a stream goes through, and resumed by id as a restarted process would.

Runs offline: a small stand-in for the Message Batches API on 127.0.0.1 (create, a poll
that is still ``in_progress``, then ``ended``, results written out of order with an
``errored`` and an ``expired`` row); no key.

    python examples/provider_batch.py
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dshstream import AnthropicAdapter, LlmService
from dshstream.batch import resume_batch, submit_batch


def message(prompt: str) -> dict[str, Any]:
    """What ``POST /v1/messages`` would answer, as a batch row carries it."""
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": f"{prompt.upper()}!"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 12, "output_tokens": 4}}


class BatchesStandIn(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True  # each response is several small writes: no delayed-ACK wait
    batches: dict[str, list[dict[str, Any]]] = {}
    polls: dict[str, int] = {}

    def log_message(self, *args: Any) -> None:
        pass

    def answer(self, value: Any, content_type: str = "application/json") -> None:
        data = value if isinstance(value, bytes) else json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        batch_id = f"msgbatch_{len(self.batches) + 1}"
        self.batches[batch_id] = body["requests"]
        self.answer({"id": batch_id, "type": "message_batch", "processing_status": "in_progress"})

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        parts = self.path.strip("/").split("/")  # v1 messages batches ID [results]
        batch_id = parts[3]
        if parts[-1] == "results":
            lines = []
            for entry in reversed(self.batches[batch_id]):  # out of order: rows are matched by custom_id
                prompt = entry["params"]["messages"][-1]["content"]
                prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
                if prompt == "too long":
                    result: dict[str, Any] = {"type": "errored", "error": {"type": "error", "error": {
                        "type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000"}}}
                elif prompt == "late":
                    result = {"type": "expired"}
                else:
                    result = {"type": "succeeded", "message": message(prompt)}
                lines.append(json.dumps({"custom_id": entry["custom_id"], "result": result}) + "\n")
            self.answer("".join(lines).encode(), "application/binary")
            return
        self.polls[batch_id] = self.polls.get(batch_id, 0) + 1
        ended = self.polls[batch_id] >= 2
        host = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.answer({"id": batch_id, "type": "message_batch",
                     "processing_status": "ended" if ended else "in_progress",
                     "request_counts": {"processing": 0 if ended else 4, "succeeded": 2 if ended else 0,
                                        "errored": 1 if ended else 0, "canceled": 0, "expired": 1 if ended else 0},
                     "results_url": f"{host}/v1/messages/batches/{batch_id}/results" if ended else None})


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BatchesStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    rows = [{"id": "a", "prompt": "hello"}, {"id": "b", "prompt": "too long"},
            {"id": "c", "prompt": "late"}, {"id": "d", "prompt": "world"}]

    def service() -> LlmService:
        made = LlmService()
        made.register_adapter(["anthropic"], AnthropicAdapter(base_url=url, api_key="loopback"))
        return made

    handle = submit_batch(rows, service=service(), provider="anthropic", model="claude-x")
    print(f"submitted {handle.id}")
    # ... the process restarts here: the id and the same rows are all it needs
    later = resume_batch(handle.id, rows, service=service(), provider="anthropic", model="claude-x")
    for result in later.results(poll_interval=0.05, on_progress=lambda p: print(
            f"  poll: {p.done} done, {p.failed} failed, {p.in_flight} running")):
        if result.ok:
            print(f"{result.id}: {result.text!r} ({result.finish}, {result.usage.total_tokens} tokens)")
        else:
            print(f"{result.id}: {result.failure.code}: {result.failure.message}")
    server.shutdown()


if __name__ == "__main__":
    main()
