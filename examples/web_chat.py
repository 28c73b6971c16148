"""A chat page served by Flask, the answer streamed to the browser as it is written.

The view returns ``dshstream.web.ui_message_stream(...)``: the Vercel AI SDK's UI message
stream (what ``useChat`` reads), one server-sent event per part, flushed as each exists.
The page reads it with a few lines of plain JavaScript (no build step) and shows the
reasoning and the answer as they arrive; Stop aborts the request, and the closed
connection closes the model's stream at once (the log line says ``aborted``).

    python examples/web_chat.py                 # a recorded Gemini answer, paced, on 127.0.0.1
    python examples/web_chat.py --base-url http://127.0.0.1:8080/v1   # a local model server

Without ``--base-url`` the model is a bundled real Gemini stream (the demo's), served on
127.0.0.1 one event every ``--pace`` seconds, whatever you ask. Needs ``flask``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from importlib.resources import files
from typing import Any

from flask import Flask, Response, request
from werkzeug.serving import make_server

from dshstream import GeminiAdapter, GenerateOptions, LlmService, Message, OpenAIChatAdapter
from dshstream.testing import ReplayServer, Route
from dshstream.web import ui_message_stream

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>dshstream chat</title>
<style>
 body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; }
 #reasoning { color: #666; white-space: pre-wrap; font-size: 14px; }
 #answer { white-space: pre-wrap; border-left: 3px solid #4a7; padding-left: .8rem; min-height: 1.5em; }
 #error { color: #b00; } #status { color: #888; font-size: 13px; }
</style></head>
<body>
<h1>Ask the model</h1>
<form id="ask"><input id="question" size="50" value="How do I cross the street?">
<button id="send">Send</button> <button id="stop" type="button" disabled>Stop</button></form>
<details open><summary>reasoning</summary><div id="reasoning"></div></details>
<div id="answer"></div><div id="error"></div><div id="status"></div>
<script>
const $ = id => document.getElementById(id);
let controller = null;

async function ask(question) {
  for (const id of ["reasoning", "answer", "error"]) $(id).textContent = "";
  $("status").textContent = "streaming"; $("stop").disabled = false; $("send").disabled = true;
  controller = new AbortController();
  // the body useChat's transport sends: UI messages
  const body = {messages: [{id: "u1", role: "user", parts: [{type: "text", text: question}]}]};
  try {
    const response = await fetch("/api/chat", {method: "POST", body: JSON.stringify(body),
      headers: {"content-type": "application/json"}, signal: controller.signal});
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf("\\n\\n")) >= 0) {
        const event = buffer.slice(0, end); buffer = buffer.slice(end + 2);
        if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
        show(JSON.parse(event.slice(6)));
      }
    }
    if ($("status").textContent === "streaming") $("status").textContent = "ended";
  } catch (error) {
    $("status").textContent = error.name === "AbortError" ? "stopped" : "failed: " + error;
  } finally {
    $("stop").disabled = true; $("send").disabled = false;
  }
}

function show(part) {
  if (part.type === "text-delta") $("answer").textContent += part.delta;
  else if (part.type === "reasoning-delta") $("reasoning").textContent += part.delta;
  else if (part.type === "tool-input-available") $("answer").textContent += `[${part.toolName}(${JSON.stringify(part.input)})]`;
  else if (part.type === "error") $("error").textContent = part.errorText;
  else if (part.type === "finish") $("status").textContent = "done: " + (part.finishReason || "");
  else if (part.type === "abort") $("status").textContent = "aborted";
}

$("ask").addEventListener("submit", event => { event.preventDefault(); ask($("question").value); });
$("stop").addEventListener("click", () => controller && controller.abort());
</script>
</body></html>
"""


def make_app(service: LlmService, provider: str, model: str) -> Flask:
    """The app: the page, and the chat endpoint streaming the model's answer."""
    app = Flask(__name__)

    @app.get("/")
    def page() -> str:
        return PAGE

    @app.post("/api/chat")
    def chat() -> Response:
        body: dict[str, Any] = request.get_json(force=True)
        messages = tuple(
            Message.user(text) if turn["role"] == "user" else Message.assistant(text)
            for turn in body["messages"]
            if (text := "".join(p.get("text", "") for p in turn.get("parts", []) if p.get("type") == "text"))
        )
        stream = service.stream(GenerateOptions(provider=provider, model=model, messages=messages))
        answer = ui_message_stream(stream)  # closes `stream` when the browser goes away
        return Response(answer, headers=answer.headers)

    return app


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5000, help="the port on 127.0.0.1 (0: any free one)")
    parser.add_argument("--base-url", help="an OpenAI-compatible server (a local llama.cpp: http://127.0.0.1:8080/v1)")
    parser.add_argument("--model", default="local", help="the model, with --base-url")
    parser.add_argument("--pace", type=float, default=0.15, help="seconds between recorded events (no --base-url)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    logging.getLogger("dshstream.observe").setLevel(logging.INFO)  # one line per answer: how it finished

    service = LlmService()
    recorded: ReplayServer | None = None
    if args.base_url:
        service.register_adapter(["model"], OpenAIChatAdapter(base_url=args.base_url))
        provider, model = "model", args.model
    else:
        events = (files("dshstream") / "demo_data" / "gemini_thoughts.sse").read_bytes().split(b"\r\n\r\n")
        script: list[bytes | float] = []
        for event in events:
            if event.strip():
                script += [event + b"\r\n\r\n", args.pace]
        recorded = ReplayServer({"/": Route(body=b"", script=script)}).start()
        service.register_adapter(["gemini"], GeminiAdapter(api_key="recorded", base_url=recorded.url))
        provider, model = "gemini", "gemini-2.5-pro"

    server = make_server("127.0.0.1", args.port, make_app(service, provider, model), threaded=True)
    print(f"serving on http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        if recorded is not None:
            recorded.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
