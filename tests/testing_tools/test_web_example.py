"""examples/web_chat.py, opened in headless Chromium: the answer appears on the page as it
streams (a recorded Gemini answer, paced), and Stop closes the model's stream."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest

from dshstream.sansio import assemble, decode

from .support import ROOT, chromium

EXPECTED = assemble(decode((files("dshstream") / "demo_data" / "gemini_thoughts.sse").read_bytes(), wire="gemini"))
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1000,800"]


class Example:
    """The example app in a subprocess; its stderr lines are collected as they come."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.proc = subprocess.Popen([sys.executable, "examples/web_chat.py", "--port", "0", *args], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        line = self.proc.stdout.readline()
        assert line.startswith("serving on http://127.0.0.1:"), line + self.proc.stderr.read()
        self.url = line.split()[-1]
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if text in line:
                return line
        raise AssertionError(f"no log line with {text!r} within {timeout}s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the file (each test loads its own page): a start takes
    seconds, more on a cold disk."""
    binary, driver_path = chromium()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    with tempfile.TemporaryDirectory(prefix="dshstream-chromium-") as profile:
        for flag in [*FLAGS, f"--user-data-dir={profile}"]:
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service(driver_path), options=options)
        try:
            yield driver
        finally:
            driver.quit()


def _text(driver: Any, element: str) -> str:
    value: str = driver.execute_script(f"return document.getElementById({element!r}).textContent")
    return value


def test_the_answer_appears_on_the_page_as_it_streams(browser: Any) -> None:
    example = Example("--pace", "0.06")
    try:
        browser.get(example.url)
        browser.find_element("id", "send").click()
        seen: list[str] = []
        reasoning_before_answer = False
        end = time.monotonic() + 60
        while time.monotonic() < end:
            answer, status = _text(browser, "answer"), _text(browser, "status")
            if answer and (not seen or seen[-1] != answer):
                seen.append(answer)
            if not answer and _text(browser, "reasoning"):
                reasoning_before_answer = True
            if status.startswith("done"):
                break
            time.sleep(0.03)
        assert _text(browser, "status") == "done: stop"
        assert _text(browser, "answer") == EXPECTED.text and _text(browser, "reasoning") == EXPECTED.reasoning
        assert _text(browser, "error") == ""
        assert reasoning_before_answer, "the reasoning came first, and showed while the answer was still empty"
        partial = [text for text in seen if text != EXPECTED.text]
        assert len(partial) >= 3, f"the answer appeared in {len(seen)} steps: it was not streamed"
        assert all(EXPECTED.text.startswith(text) for text in partial), "each step a prefix of the answer"
        example.wait_for("gemini gemini-2.5-pro: stop", timeout=10)
    finally:
        example.stop()


def test_stop_closes_the_models_stream(browser: Any) -> None:
    example = Example("--pace", "0.3")
    try:
        browser.get(example.url)
        browser.find_element("id", "send").click()
        end = time.monotonic() + 30
        while not _text(browser, "answer") and time.monotonic() < end:
            time.sleep(0.03)
        assert _text(browser, "answer"), "the answer began"
        browser.find_element("id", "stop").click()
        line = example.wait_for("gemini gemini-2.5-pro: ", timeout=10)
        assert ": aborted ABORTED" in line, line
        stopped_at = _text(browser, "answer")
        time.sleep(0.7)  # two more paces: nothing arrives after Stop
        assert _text(browser, "answer") == stopped_at != EXPECTED.text and _text(browser, "status") == "stopped"
    finally:
        example.stop()


def test_the_example_chats_with_the_local_model_server() -> None:
    """With ``--base-url``, the live model's answer (the local llama.cpp server CI starts)."""
    server = os.environ.get("DSHSTREAM_TEST_SERVER", "").rstrip("/")
    if not server:
        pytest.skip("DSHSTREAM_TEST_SERVER is not set (the local model server: see CONTRIBUTING.rst)")
    import json

    from .wsgi_checks import read_all

    question = {"messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Say hello in one word."}]}]}
    example = Example("--base-url", f"{server}/v1", "--model", "qwen")
    try:
        head, events, _ = read_all(f"{example.url}/api/chat", question)
        parts = [json.loads(event) for event in events if event != "[DONE]"]
        assert "x-vercel-ai-ui-message-stream: v1" in head.lower() and events[-1] == "[DONE]"
        assert "".join(p["delta"] for p in parts if p["type"] == "text-delta").strip()
        assert parts[-1]["type"] == "finish" and parts[-1]["finishReason"] in ("stop", "length")
    finally:
        example.stop()
