"""Several API keys as one credential: ``api_key=KeyPool([...])``.

A rate-limited key cools down for as long as the provider said, a rejected one is parked,
and the attempt moves to the next key at once; one pool serves every thread and adapter
it is given to; when every key is cooling a stream waits for the first free one, within
its limits, or fails saying so. Runs offline: recorded answers served on 127.0.0.1.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from importlib.resources import files

from dshstream import (AnthropicAdapter, AssembledResponse, GenerateOptions, LlmService, Message,
                       OpenAIChatAdapter)
from dshstream.adapters import KeyPool
from dshstream.testing import ReplayServer, Route

DEMO = files("dshstream") / "demo_data"
ANSWER = Route(body=(DEMO / "openrouter_reasoning.sse").read_bytes())  # "What is 2+2?"
CLAUDE = Route(body=(DEMO / "anthropic_thinking_tool_use.sse").read_bytes())


def throttled(seconds: str) -> Route:
    return Route(status=429, headers={"retry-after": seconds}, content_type="application/json",
                 body=b'{"error": {"message": "Rate limit reached for requests"}}')


REVOKED = Route(status=401, content_type="application/json", body=b'{"error": {"message": "Incorrect API key"}}')


def ask(service: LlmService, provider: str, timeout: float | None = None) -> AssembledResponse:
    options = GenerateOptions(provider=provider, model="m", messages=(Message.user("What is 2+2?"),),
                              timeout=timeout)
    return service.stream(options).result()


def main() -> None:
    routes = {
        "/first/v1/": [throttled("30"), REVOKED, ANSWER],  # answered in order
        "/chat/v1/": ANSWER,
        "/claude/": CLAUDE,
        "/wait/v1/": [throttled("0.3"), throttled("0.6"), ANSWER],
        "/busy/v1/": throttled("20"),
    }
    with ReplayServer(routes) as server:
        # 1. One stream: team-a is rate limited (it cools for 30 s), team-b is rejected
        #    (parked), team-c answers; the stream never waited.
        pool = KeyPool({"team-a": "example-key-a", "team-b": "example-key-b",
                        "team-c": "example-key-c", "team-d": "example-key-d"})
        service = LlmService()
        service.register_adapter(["first"], OpenAIChatAdapter(api_key=pool, base_url=f"{server.url}/first/v1"))
        result = ask(service, "first")
        print(result.text)
        for key in pool.state():  # for a dashboard: no secret in it
            state = "parked" if key.parked else "cooling" if key.cooling_until else "available"
            print(f"{key.label}: {key.uses} uses, {state}, last {key.last_code or '-'}")

        # 2. The same pool shared by 32 threads and two adapters: team-a and team-b stay out.
        service.register_adapter(["chat"], OpenAIChatAdapter(api_key=pool, base_url=f"{server.url}/chat/v1"))
        service.register_adapter(["claude"], AnthropicAdapter(api_key=pool, base_url=f"{server.url}/claude"))
        with ThreadPoolExecutor(max_workers=32) as threads:
            results = list(threads.map(lambda n: ask(service, "chat" if n % 2 else "claude"), range(32)))
        ok = sum(1 for result in results if result.ok)
        uses = ", ".join(f"{key.label} {key.uses}" for key in pool.state() if key.available)
        print(f"32 streams on 2 adapters: {ok} ok ({uses} uses)")

        # 3. Every key cooling: the stream waits for the first free one, within its timeout.
        waiting = KeyPool(["example-key-1", "example-key-2"])
        service.register_adapter(["wait"], OpenAIChatAdapter(api_key=waiting, base_url=f"{server.url}/wait/v1"))
        started = time.monotonic()
        result = ask(service, "wait", timeout=10)
        print(f"waited {time.monotonic() - started:.1f}s for the first free key: {result.finish.kind}")

        # 4. ... or, when the first is free only after the deadline, fails with the real failure.
        busy = KeyPool(["example-key-x", "example-key-y", "example-key-z"])
        service.register_adapter(["busy"], OpenAIChatAdapter(api_key=busy, base_url=f"{server.url}/busy/v1"))
        failure = ask(service, "busy", timeout=2).failure
        if failure is not None:
            print(failure.code, failure.message)


if __name__ == "__main__":
    main()
