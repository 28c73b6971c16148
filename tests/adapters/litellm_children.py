"""The fresh interpreters of ``test_litellm_boundaries.py``'s no-network tests: each
imports LiteLLM through the adapter behind a socket guard (every non-loopback connect and
lookup refused and recorded) and streams, then prints what it tried.

Each spends seconds importing LiteLLM, mostly waiting for its own CPU: :func:`started`
starts both once per process, and ``test_litellm.py`` (handed out with the boundaries
file as one unit, on one worker, by ``tests/conftest.py``'s ``SAME_WORKER``) starts them
at its beginning, so they run while its own tests do instead of after them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future
from typing import Any

from helpers import TESTS

NO_USAGE = (
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n'
    b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo"},'
    b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)

_GUARD = """
import json, os, socket, sys
attempts = []
real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo
def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
        attempts.append("connect %r" % (address,))
        raise OSError("guard")
    return real_connect(self, address)
def getaddrinfo(host, *args, **kwargs):
    if host not in (None, "127.0.0.1", "::1", "localhost"):
        attempts.append("resolve %r" % (host,))
        raise socket.gaierror("guard")
    return real_getaddrinfo(host, *args, **kwargs)
socket.socket.connect = connect
socket.getaddrinfo = getaddrinfo
sys.path.insert(0, sys.argv[1])
from helpers import fixture_bytes
from dshstream._adapters.litellm import LiteLLMAdapter
from dshstream._core.request import GenerateOptions, Message
from dshstream._replay_server import ReplayServer, Route
from dshstream._service import LlmService
no_usage = json.loads(sys.argv[2]).encode("latin-1")
kinds = []
with ReplayServer() as server:
    server.add("/v1/messages", Route(body=fixture_bytes("anthropic/text.sse")))
    server.add("/v1/chat/completions", Route(body=no_usage))
    service = LlmService()
    # an Anthropic beta header makes LiteLLM read its beta-header table
    service.register_adapter(["a"], LiteLLMAdapter(model_prefix="anthropic/", base_url=server.url, api_key="k-0123456789",
                                                   headers={"anthropic-beta": "context-management-2025-06-27"}))
    # no usage from a llama-3 model: LiteLLM counts it with a Hugging Face tokenizer
    service.register_adapter(["o"], LiteLLMAdapter(model_prefix="openai/", base_url=server.url + "/v1", api_key="k-0123456789"))
    for route, model in (("a", "claude-sonnet-4-5"), ("o", "llama-3.1-8b-instant"))[: int(sys.argv[3])]:
        kinds.append(service.stream(GenerateOptions(provider=route, model=model, messages=(Message.user("hi"),))).result().finish.kind)
names = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "LITELLM_OFFLINE_MODE")
print(json.dumps({"attempts": attempts, "kinds": kinds, "env": {n: os.environ.get(n) for n in names}}))
"""


def _child(env: dict[str, str], streams: int = 2) -> dict[str, Any]:
    tests = str(TESTS)
    proc = subprocess.run(
        [sys.executable, "-c", _GUARD, tests, json.dumps(NO_USAGE.decode("latin-1")), str(streams)],
        capture_output=True, text=True, timeout=240, check=False, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}


_lock = threading.Lock()
_started: dict[str, Future[dict[str, Any]]] = {}


def _in_background(run: Any, *args: Any) -> Future[dict[str, Any]]:
    """``run(*args)`` on a daemon thread (a child still running when pytest exits is not
    waited for), its outcome in the future."""
    future: Future[dict[str, Any]] = Future()

    def target() -> None:
        try:
            future.set_result(run(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the test through the future
            future.set_exception(exc)

    threading.Thread(target=target, name="litellm-child", daemon=True).start()
    return future


def started() -> dict[str, Future[dict[str, Any]]]:
    """Both children, started at the first call in this process: "clean" (no
    ``LITELLM_`` variable set) and "caller-switch" (the caller's own
    ``LITELLM_OFFLINE_MODE=false``, one stream)."""
    with _lock:
        if not _started:
            caller = {**_clean_environment(), "LITELLM_OFFLINE_MODE": "false"}
            _started["clean"] = _in_background(_child, _clean_environment())
            _started["caller-switch"] = _in_background(_child, caller, 1)
        return _started
