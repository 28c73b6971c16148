"""A loopback imitation of three provider batch APIs on one port — OpenAI (``/v1/files``,
``/v1/batches``), Anthropic (``/v1/messages/batches``) and Gemini
(``/v1beta/models/{m}:batchGenerateContent``, ``/v1beta/batches/{id}``) — plus their
streaming endpoints, so one input runs live and as a batch against the same answers.

What each request gets is decided by its last user prompt:

- ``fixture:PROVIDER/NAME.sse``: live, the recorded stream's bytes; in a batch, the
  non-streaming body that stream adds up to (``service.batch_bodies``);
- ``fail:STATUS``: live, that HTTP status with the provider's error body; in a batch, an
  error row with the same status and body;
- ``expire``: an expired row; ``drop``: no result row at all;
- anything else: a short answer ``echo PROMPT`` with usage.

Azure OpenAI's ``/openai/v1/...`` and ``/openai/...?api-version=`` paths are the OpenAI
routes (their queries kept in ``azure_queries``). Each status poll moves a batch one state on (OpenAI ``validating`` → ``in_progress`` →
``finalizing`` → ``completed``; Anthropic ``in_progress`` twice → ``ended``; Gemini
``PENDING`` → ``RUNNING`` → ``SUCCEEDED``); result rows are written in reverse input order.
``fail_batches=True`` ends every OpenAI and Gemini batch failed as a whole (the OpenAI
validation error, the Gemini operation error). ``expire_batches=True`` ends every batch expired (rows answered before it keep their
answers: the first half); a cancel request ends it cancelled the same way. Every request's
method, path and headers are recorded in ``seen``."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any

from helpers import fixture_bytes
from service.batch_bodies import anthropic_body, chat_body, gemini_body, responses_body
from dshstream._replay_server import LoopbackHandler, shut_down_now

_ERRORS: dict[str, Callable[[int], dict[str, Any]]] = {
    "openai": lambda status: {"error": {"message": f"rejected with {status}",
                                        "type": "invalid_request_error" if status < 500 else "server_error",
                                        "param": None, "code": None}},
    "anthropic": lambda status: {"type": "error", "error": {"type": "invalid_request_error" if status < 500 else
                                                            "api_error", "message": f"rejected with {status}"}},
    "gemini": lambda status: {"error": {"code": status, "message": f"rejected with {status}",
                                        "status": "INVALID_ARGUMENT" if status < 500 else "INTERNAL"}},
}
_STATUS_WORD = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def prompt_of(kind: str, body: dict[str, Any]) -> str:
    """The last user prompt of a request body of ``kind`` (chat, responses, anthropic, gemini)."""
    if kind == "chat" or kind == "anthropic":
        return _text(body["messages"][-1]["content"])
    if kind == "responses":
        last = body["input"][-1]
        return _text(last.get("content"))
    return _text(body["contents"][-1]["parts"])


def _echo(kind: str, prompt: str) -> dict[str, Any]:
    text = f"echo {prompt}"
    if kind == "chat":
        return {"id": "chatcmpl-echo", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
    if kind == "responses":
        return {"id": "resp_echo", "object": "response", "status": "completed", "model": "m",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}}
    if kind == "anthropic":
        return {"id": "msg_echo", "type": "message", "role": "assistant", "model": "m",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 3}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                            "index": 0}],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 3, "totalTokenCount": 8},
            "modelVersion": "m", "responseId": "gem_echo"}


_BODIES = {"chat": chat_body, "responses": responses_body, "anthropic": anthropic_body, "gemini": gemini_body}
_PROVIDER = {"chat": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def answer(kind: str, body: dict[str, Any]) -> tuple[str, Any]:
    """``("ok", body)``, ``("error", (status, body))``, ``("expire", None)`` or ``("drop", None)``."""
    prompt = prompt_of(kind, body)
    if prompt.startswith("fixture:"):
        made = _BODIES[kind](fixture_bytes(prompt[len("fixture:"):]))
        assert made is not None, prompt
        return "ok", made
    if prompt.startswith("fail:"):
        status = int(prompt[len("fail:"):])
        return "error", (status, _ERRORS[_PROVIDER[kind]](status))
    if prompt in ("expire", "drop"):
        return prompt, None
    return "ok", _echo(kind, prompt)


class _Batch:
    def __init__(self, api: str, ident: str, kind: str, rows: list[tuple[str, dict[str, Any]]]) -> None:
        self.api = api
        self.id = ident
        self.kind = kind
        self.rows = rows  # (custom id, request body)
        self.polls = 0
        self.cancelled = False


class BatchApiServer:
    """The loopback batch APIs (see the module docstring)."""

    def __init__(self, *, expire_batches: bool = False, polls_to_end: int = 3, fail_batches: bool = False) -> None:
        self.expire_batches = expire_batches
        self.fail_batches = fail_batches
        self.polls_to_end = polls_to_end
        self.lock = threading.Lock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.uploads: list[tuple[str, bytes]] = []  # (content type, body) of every upload
        self.counter = 0
        self.azure_queries: list[str] = []
        owner = self

        class Handler(LoopbackHandler):
            def do_GET(self) -> None:
                owner.dispatch(self, "GET")

            def do_POST(self) -> None:
                owner.dispatch(self, "POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # a short poll: shutdown() waits for serve_forever to notice, half a second by default
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> BatchApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        shut_down_now(self.httpd)
        self.httpd.server_close()

    # ------------------------------------------------------------------ plumbing

    def _next(self, prefix: str) -> str:
        with self.lock:
            self.counter += 1
            return f"{prefix}{self.counter}"

    def _send(self, handler: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("content-type", content_type)
        handler.send_header("content-length", str(len(data)))
        handler.send_header("x-request-id", self._next("req-"))
        handler.end_headers()
        handler.wfile.write(data)

    def _json(self, handler: BaseHTTPRequestHandler, value: Any, status: int = 200) -> None:
        self._send(handler, status, json.dumps(value).encode(), "application/json")

    def dispatch(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path
        with self.lock:
            self.seen.append((method, path, {k.lower(): v for k, v in handler.headers.items()}))
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        if path.startswith("/openai/"):  # Azure OpenAI: the same API under the resource's /openai root
            path, _, query = path.partition("?")
            self.azure_queries.append(query)
            path = "/v1" + path.removeprefix("/openai/v1").removeprefix("/openai")
        routes: list[tuple[str, str, Any]] = [
            ("POST", r"/v1/files", self._upload),
            ("GET", r"/v1/files/([^/]+)/content", self._file),
            ("POST", r"/v1/batches", self._openai_create),
            ("GET", r"/v1/batches/([^/]+)", self._openai_status),
            ("POST", r"/v1/batches/([^/]+)/cancel", self._cancel),
            ("POST", r"/v1/messages/batches", self._anthropic_create),
            ("GET", r"/v1/messages/batches/([^/]+)", self._anthropic_status),
            ("GET", r"/v1/messages/batches/([^/]+)/results", self._anthropic_results),
            ("POST", r"/v1/messages/batches/([^/]+)/cancel", self._cancel),
            ("POST", r"/v1beta/models/([^/:]+):batchGenerateContent", self._gemini_create),
            ("GET", r"/v1beta/batches/([^/:]+)", self._gemini_status),
            ("POST", r"/v1beta/batches/([^/:]+):cancel", self._gemini_cancel),
            ("POST", r"/v1/chat/completions", lambda h, r: self._stream(h, "chat", r)),
            ("POST", r"/v1/responses", lambda h, r: self._stream(h, "responses", r)),
            ("POST", r"/v1/messages", lambda h, r: self._stream(h, "anthropic", r)),
            ("POST", r"/v1beta/models/([^/:]+):streamGenerateContent\?alt=sse", lambda h, r, _m: self._stream(h, "gemini", r)),
        ]
        for want, pattern, action in routes:
            match = re.fullmatch(pattern, path)
            if want == method and match:
                action(handler, raw, *match.groups())
                return
        self._json(handler, {"error": {"message": f"no route {method} {path}"}}, 404)

    # ------------------------------------------------------------------ streaming (the live path)

    def _stream(self, handler: BaseHTTPRequestHandler, kind: str, raw: bytes) -> None:
        body = json.loads(raw)
        prompt = prompt_of(kind, body)
        outcome, value = answer(kind, body)
        if outcome == "error":
            status, payload = value
            self._json(handler, payload, status)
        elif prompt.startswith("fixture:"):
            self._send(handler, 200, fixture_bytes(prompt[len("fixture:"):]), "text/event-stream")
        else:
            self._json(handler, {"error": {"message": "only fixture: and fail: prompts stream here"}}, 400)

    # ------------------------------------------------------------------ OpenAI

    def _upload(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        content_type = handler.headers.get("content-type", "")
        self.uploads.append((content_type, raw))
        boundary = content_type.split("boundary=", 1)[1].encode()
        parts = {}
        for part in raw.split(b"--" + boundary)[1:-1]:
            head, _, content = part.removeprefix(b"\r\n").removesuffix(b"\r\n").partition(b"\r\n\r\n")
            name = re.search(rb'name="([^"]+)"', head)
            assert name is not None
            parts[name.group(1).decode()] = content
        assert parts["purpose"] == b"batch", parts.get("purpose")
        ident = self._next("file-")
        self.files[ident] = parts["file"]
        self._json(handler, {"id": ident, "object": "file", "purpose": "batch", "bytes": len(parts["file"])})

    def _openai_create(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        body = json.loads(raw)
        assert body["completion_window"] == "24h"
        lines = [json.loads(line) for line in self.files[body["input_file_id"]].splitlines() if line.strip()]
        assert all(line["url"] == body["endpoint"] and line["method"] == "POST" for line in lines)
        kind = "chat" if body["endpoint"].endswith("/chat/completions") else "responses"
        batch = _Batch("openai", self._next("batch_"), kind, [(line["custom_id"], line["body"]) for line in lines])
        self.batches[batch.id] = batch
        self._json(handler, self._openai_view(batch))

    def _state(self, batch: _Batch) -> str:
        """``running``, ``ended``, ``expired`` or ``cancelled``, the poll counted."""
        if batch.cancelled:
            return "cancelled"
        if batch.polls < self.polls_to_end:
            return "running"
        return "expired" if self.expire_batches else "ended"

    def _openai_view(self, batch: _Batch) -> dict[str, Any]:
        state = self._state(batch)
        word = {"running": ["validating", "in_progress", "finalizing"][min(batch.polls, 2)],
                "ended": "completed", "expired": "expired", "cancelled": "cancelled"}[state]
        view: dict[str, Any] = {"id": batch.id, "object": "batch", "status": word, "endpoint": "",
                                "request_counts": {"total": len(batch.rows), "completed": 0, "failed": 0}}
        if state != "running" and self.fail_batches:
            view["status"] = "failed"
            view["errors"] = {"object": "list", "data": [{"code": "invalid_request", "line": 1, "param": None,
                                                          "message": "The model 'm' does not exist or you do not have access to it."}]}
            return view
        if state != "running":
            out, err = [], []
            answered = self._answered(batch, state)
            for position, (custom_id, body) in reversed(list(enumerate(batch.rows))):
                outcome, value = answer(batch.kind, body)
                if position not in answered:
                    code = "batch_expired" if state == "expired" else "batch_cancelled"
                    err.append({"id": f"b{position}", "custom_id": custom_id, "response": None,
                                "error": {"code": code, "message": "not run"}})
                elif outcome == "ok":
                    out.append({"id": f"b{position}", "custom_id": custom_id, "error": None,
                                "response": {"status_code": 200, "request_id": f"rq{position}", "body": value}})
                elif outcome == "error":
                    status, payload = value
                    err.append({"id": f"b{position}", "custom_id": custom_id, "error": None,
                                "response": {"status_code": status, "request_id": f"rq{position}", "body": payload}})
                elif outcome == "expire":
                    err.append({"id": f"b{position}", "custom_id": custom_id, "response": None,
                                "error": {"code": "batch_expired", "message": "expired"}})
            for name, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    ident = self._next("file-")
                    self.files[ident] = "".join(json.dumps(r) + "\n" for r in rows).encode()
                    view[name] = ident
            view["request_counts"] = {"total": len(batch.rows), "completed": len(out), "failed": len(err)}
        return view

    def _answered(self, batch: _Batch, state: str) -> set[int]:
        every = set(range(len(batch.rows)))
        return every if state == "ended" else set(range(len(batch.rows) // 2))

    def _openai_status(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        batch = self.batches[ident]
        batch.polls += 1
        self._json(handler, self._openai_view(batch))

    def _file(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        self._send(handler, 200, self.files[ident], "application/octet-stream")

    def _cancel(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        batch = self.batches[ident]
        batch.cancelled = True
        self._json(handler, {"id": ident, "status": "cancelling", "processing_status": "canceling"})

    # ------------------------------------------------------------------ Anthropic

    def _anthropic_create(self, handler: BaseHTTPRequestHandler, raw: bytes) -> None:
        body = json.loads(raw)
        rows = [(entry["custom_id"], entry["params"]) for entry in body["requests"]]
        assert all("stream" not in params for _, params in rows)
        batch = _Batch("anthropic", self._next("msgbatch_"), "anthropic", rows)
        self.batches[batch.id] = batch
        self._json(handler, self._anthropic_view(batch))

    def _anthropic_view(self, batch: _Batch) -> dict[str, Any]:
        state = self._state(batch)
        view: dict[str, Any] = {"id": batch.id, "type": "message_batch",
                                "processing_status": "in_progress" if state == "running" else "ended",
                                "request_counts": {"processing": len(batch.rows), "succeeded": 0, "errored": 0,
                                                   "canceled": 0, "expired": 0}, "results_url": None}
        if state != "running":
            view["results_url"] = f"{self.url}/v1/messages/batches/{batch.id}/results"
            view["request_counts"] = {"processing": 0, "succeeded": len(batch.rows), "errored": 0,
                                      "canceled": 0, "expired": 0}
        return view

    def _anthropic_status(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        batch = self.batches[ident]
        batch.polls += 1
        self._json(handler, self._anthropic_view(batch))

    def _anthropic_results(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        batch = self.batches[ident]
        state = self._state(batch)
        answered = self._answered(batch, state)
        lines = []
        for position, (custom_id, body) in reversed(list(enumerate(batch.rows))):
            outcome, value = answer(batch.kind, body)
            if position not in answered:
                result: dict[str, Any] = {"type": "expired" if state == "expired" else "canceled"}
            elif outcome == "ok":
                result = {"type": "succeeded", "message": value}
            elif outcome == "error":
                result = {"type": "errored", "error": value[1]}
            elif outcome == "expire":
                result = {"type": "expired"}
            else:
                continue
            lines.append(json.dumps({"custom_id": custom_id, "result": result}) + "\n")
        self._send(handler, 200, "".join(lines).encode(), "application/binary")

    # ------------------------------------------------------------------ Gemini

    def _gemini_create(self, handler: BaseHTTPRequestHandler, raw: bytes, model: str) -> None:
        body = json.loads(raw)["batch"]
        assert body["displayName"]
        entries = body["inputConfig"]["requests"]["requests"]
        batch = _Batch("gemini", self._next(""), "gemini", [(e["metadata"]["key"], e["request"]) for e in entries])
        self.batches[batch.id] = batch
        self._json(handler, self._gemini_view(batch))

    def _gemini_view(self, batch: _Batch) -> dict[str, Any]:
        state = self._state(batch)
        word = {"running": "BATCH_STATE_PENDING" if batch.polls < 2 else "BATCH_STATE_RUNNING",
                "ended": "BATCH_STATE_SUCCEEDED", "expired": "BATCH_STATE_EXPIRED",
                "cancelled": "BATCH_STATE_CANCELLED"}[state]
        meta = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                "model": "models/m", "name": f"batches/{batch.id}", "displayName": "dshstream", "state": word,
                "batchStats": {"requestCount": str(len(batch.rows))}}
        view: dict[str, Any] = {"name": f"batches/{batch.id}", "metadata": meta}
        if state != "running" and self.fail_batches:
            meta["state"] = "BATCH_STATE_FAILED"
            view.update(done=True, error={"code": 3, "message": "model m is not found for batch mode",
                                          "status": "INVALID_ARGUMENT"})
            return view
        if state != "running":
            responses = []
            answered = self._answered(batch, state)
            for position, (key, body) in reversed(list(enumerate(batch.rows))):
                outcome, value = answer("gemini", body)
                if position not in answered or outcome in ("drop", "expire"):
                    continue
                if outcome == "ok":
                    responses.append({"response": value, "metadata": {"key": key}})
                else:
                    error = value[1]["error"]  # a google.rpc.Status: its gRPC code
                    grpc = {400: 3, 500: 13}[error["code"]]
                    responses.append({"error": {"code": grpc, "message": error["message"]}, "metadata": {"key": key}})
            view["done"] = True
            view["response"] = {**meta, "output": {"inlinedResponses": {"inlinedResponses": responses}}}
        return view

    def _gemini_status(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        batch = self.batches[ident]
        batch.polls += 1
        self._json(handler, self._gemini_view(batch))

    def _gemini_cancel(self, handler: BaseHTTPRequestHandler, raw: bytes, ident: str) -> None:
        self.batches[ident].cancelled = True
        self._json(handler, {})
