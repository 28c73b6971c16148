"""Cancel a stream from another thread (a UI button, a deadline, a supervisor).

The reader ends promptly with an ``aborted`` finish, even while blocked on a silent socket,
and keeps what it had received.
"""

from __future__ import annotations

import threading

from dshstream import GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream.testing import ReplayServer, Route

CHUNK = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"Once upon a time"}}]}\n\n'


def main() -> None:
    # A server that sends one chunk, then stalls for a minute.
    with ReplayServer({"/v1/": Route(body=b"", script=[CHUNK, 60.0])}) as server:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(api_key="k", base_url=f"{server.url}/v1"))
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        options = GenerateOptions(provider="local", model="m", messages=(Message.user("story"),), cancel=cancel)
        result = service.stream(options).result()
        print(repr(result.text), result.finish.kind, result.failure.code if result.failure else None)


if __name__ == "__main__":
    main()
