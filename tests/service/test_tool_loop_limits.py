"""run_tools per-step caps (rule 7): a step asking for thousands of calls, or for results
that add up to a next request of 100 MB, runs what the caps allow and answers every other
call with an error result saying why, so the model sees it and the history stays valid.
Scripted steps on the loopback replay server, through the real HTTP path.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from service.test_tool_loop import ask, calls_step, local_service, sent_messages, text_step

from dshstream import ConfigurationError, LlmService, ToolSpec, run_tools
from dshstream._replay_server import ReplayServer
from dshstream._tool_loop import DEFAULT_MAX_CALLS_PER_STEP, DEFAULT_MAX_STEP_RESULT_CHARS

TOOL = ToolSpec("t")


def calls(n: int) -> bytes:
    return calls_step([(f"call_{i}", "t", "{}") for i in range(n)])


class Counter:
    """A tool that counts its runs and answers ``size`` characters."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.runs = 0
        self.lock = threading.Lock()

    def __call__(self) -> str:
        with self.lock:
            self.runs += 1
        return "x" * self.size


def test_the_defaults_are_documented_values() -> None:
    assert (DEFAULT_MAX_CALLS_PER_STEP, DEFAULT_MAX_STEP_RESULT_CHARS) == (64, 1_000_000)


@pytest.mark.parametrize("parallel", [False, True])
def test_calls_past_max_calls_per_step_are_answered_and_not_run(server: ReplayServer, parallel: bool) -> None:
    service = local_service(server, [calls(500), text_step("Done.")])
    tool = Counter()
    result = run_tools(service, ask(tools=(TOOL,)), {"t": tool}, parallel=parallel).result()
    assert tool.runs == DEFAULT_MAX_CALLS_PER_STEP
    [first, _] = result.steps
    assert first.limited_by == ("max_calls_per_step",)
    statuses = [o.status for o in first.outcomes]
    assert statuses == ["ok"] * 64 + ["limited"] * 436
    refusal = first.outcomes[64].result
    assert refusal.is_error and "max_calls_per_step" in refusal.content and "500" in refusal.content
    # every call of the assistant turn has its answer in the next request, in call order
    sent = sent_messages(server, 1)
    [turn] = [m for m in sent if m["role"] == "assistant"]
    answers = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert answers == [c["id"] for c in turn["tool_calls"]] == [f"call_{i}" for i in range(500)]
    assert result.stopped == "done" and result.text == "Done."


def test_results_past_max_step_result_chars_are_not_run_and_the_crossing_one_is_cut(server: ReplayServer) -> None:
    """The 1,000 calls x 100,000 characters of the issue: the next request stays near the
    step's budget instead of 100 MB."""
    service = local_service(server, [calls(1000), text_step("Done.")])
    tool = Counter(100_000)
    result = run_tools(service, ask(tools=(TOOL,)), {"t": tool}, max_calls_per_step=1000).result()
    [first, _] = result.steps
    assert tool.runs == 10  # 10 x 100,000 = the 1,000,000 budget; the rest never ran
    assert [o.status for o in first.outcomes] == ["ok"] * 10 + ["limited"] * 990
    assert first.limited_by == ("max_step_result_chars",)
    assert "max_step_result_chars" in first.outcomes[10].result.content
    request = len(json.dumps(server.requests[1].body))
    assert 1_000_000 < request < 1_500_000, request  # the budget, 1,000 calls and their short answers
    assert len(sent_messages(server, 1)) == 1 + 1 + 1000  # user, assistant, one answer per call


def test_the_result_that_crosses_the_budget_is_cut_to_what_is_left(server: ReplayServer) -> None:
    service = local_service(server, [calls(3), text_step("Done.")])
    tool = Counter(400)
    result = run_tools(service, ask(tools=(TOOL,)), {"t": tool}, max_step_result_chars=1000).result()
    contents = [o.result.content for o in result.outcomes]
    assert contents[:2] == ["x" * 400] * 2
    assert contents[2] == "x" * 200 + "…[truncated 200 chars]"
    assert [o.status for o in result.outcomes] == ["ok"] * 3 and tool.runs == 3
    assert result.steps[0].limited_by == ("max_step_result_chars",)


def test_with_parallel_a_result_past_the_budget_is_withheld(server: ReplayServer) -> None:
    """Pooled calls may have run before the budget was spent: their results are not sent,
    and the outcome says they ran (``withheld``, not ``limited``)."""
    service = local_service(server, [calls(6), text_step("Done.")])
    tool = Counter(600)
    result = run_tools(service, ask(tools=(TOOL,)), {"t": tool}, parallel=True, max_step_result_chars=1000).result()
    statuses = [o.status for o in result.outcomes]
    assert statuses[:2] == ["ok", "ok"] and set(statuses[2:]) <= {"withheld", "limited"}
    assert result.outcomes[1].result.content == "x" * 400 + "…[truncated 200 chars]"
    for outcome in result.outcomes[2:]:
        assert outcome.result.is_error and "max_step_result_chars" in outcome.result.content
    assert tool.runs == 6 - statuses.count("limited")
    sent = sum(len(m["content"]) for m in sent_messages(server, 1) if m["role"] == "tool")
    assert sent < 1000 + 50 + 4 * 200


def test_steps_within_the_caps_say_nothing(server: ReplayServer) -> None:
    service = local_service(server, [calls(3), text_step("Done.")])
    result = run_tools(service, ask(tools=(TOOL,)), {"t": Counter()}).result()
    assert [step.limited_by for step in result.steps] == [(), ()]
    assert [o.status for o in result.outcomes] == ["ok"] * 3


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"max_calls_per_step": 0}, "max_calls_per_step"),
        ({"max_calls_per_step": "64"}, "max_calls_per_step"),
        ({"max_calls_per_step": True}, "max_calls_per_step"),
        ({"max_step_result_chars": 0}, "max_step_result_chars"),
        ({"max_step_result_chars": 1.5}, "max_step_result_chars"),
    ],
)
def test_the_caps_are_validated_naming_the_setting(settings: dict[str, Any], says: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        run_tools(LlmService(), ask(tools=(TOOL,)), {"t": Counter()}, **settings)
    assert says in str(info.value)
