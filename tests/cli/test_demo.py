"""The demo shows each recording's real request, and its reply answers that request."""

from __future__ import annotations

import io

import pytest

from dshstream.sansio import assemble, decode, detect_wire
from dshstream._demo import DEMOS, Demo, load_transcript, run_demo


@pytest.mark.parametrize("demo", DEMOS, ids=[d.file for d in DEMOS])
def test_every_tool_the_reply_calls_was_offered(demo: Demo) -> None:
    data = load_transcript(demo.file)
    result = assemble(decode(data, wire=detect_wire(data)))
    offered = {tool.name for tool in demo.tools}
    assert {call.name for call in result.tool_calls} <= offered


def test_the_demo_prints_each_request_before_its_reply() -> None:
    out = io.StringIO()
    assert run_demo(out, io.StringIO()) == 0
    text = out.getvalue()
    for demo in DEMOS:
        header = text.index(f"[{demo.provider} · {demo.model}]")
        assert text.index(f"user: {demo.prompt}", header) > header
    assert "user: What is the capital of the UK? Use the tool, then answer." in text
    assert text.rstrip().endswith(f"{len(DEMOS)}/{len(DEMOS)} streams completed over 127.0.0.1")
