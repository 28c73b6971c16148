"""Provider batches (dshstream.batch.submit_batch, run_many(mode="batch")) against the
loopback imitation of the OpenAI, Anthropic and Gemini batch APIs: upload, create, polls
through the states, results out of order with mixed rows, expiry, cancel, resume, split
at the limits, and the same input run live and as a batch giving the same rows."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dshstream import (
    AnthropicAdapter, ConfigurationError, GeminiAdapter, GenerateOptions, LlmService, Message, OpenAIChatAdapter,
    OpenAIResponsesAdapter,
)
from dshstream.adapters import AzureOpenAIAdapter, AzureOpenAIResponsesAdapter
from dshstream.batch import BatchProgress, BatchResult, resume_batch, run_many, submit_batch
from dshstream._batch.provider.anthropic_api import AnthropicBatchApi
from dshstream._batch.provider.api import ProviderBatchStatus
from dshstream._batch.provider.openai_api import OpenAIBatchApi
from dshstream._batch.provider.runner import api_for, custom_id_of
from dshstream.testing import MemoryAnswer, MemoryTransport
from helpers import fake_key
from service.provider_batch_server import BatchApiServer

KEY = fake_key("sk-proj-", 48)  # CANARY: built at run time, never a real key

#: provider route -> (adapter factory, fixture recordings of that wire)
KINDS: dict[str, Any] = {
    "openai": (lambda url: OpenAIChatAdapter(base_url=f"{url}/v1", api_key=KEY, max_retries=0),
               ["openai/text_include_usage.sse", "openai/tool_call_include_usage_gpt4o_mini.sse",
                "openai/refusal.sse", "openai/finish_length.sse"]),
    "responses": (lambda url: OpenAIResponsesAdapter(base_url=f"{url}/v1", api_key=KEY, max_retries=0),
                  ["openai-responses/text.sse", "openai-responses/function_call.sse",
                   "openai-responses/reasoning_summary_multi_part_o3mini.sse"]),
    "anthropic": (lambda url: AnthropicAdapter(base_url=url, api_key=KEY, max_retries=0),
                  ["anthropic/text.sse", "anthropic/thinking_then_tool_use.sse", "anthropic/tool_use_empty_input.sse",
                   "anthropic/web_search_server_tool_citations.sse"]),
    "gemini": (lambda url: GeminiAdapter(base_url=url, api_key=KEY, max_retries=0),
               ["gemini/text.sse", "gemini/function_call.sse", "gemini/thought_parts_with_signature.sse",
                "gemini/grounding_web_search.sse"]),
}


def _service(server: BatchApiServer, kind: str) -> LlmService:
    service = LlmService()
    service.register_adapter([kind], KINDS[kind][0](server.url))
    return service


def _mixed() -> list[dict[str, Any]]:
    return [
        {"id": "a", "prompt": "hello"},
        {"id": "b", "prompt": "fail:400"},
        {"id": "c", "prompt": "expire"},
        {"id": "d", "prompt": "drop"},
        {"id": "e", "prompt": "fail:500"},
        {"id": "f", "prompt": "world"},
    ]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_batch_goes_through_its_states_and_every_row_is_matched_by_id(kind: str) -> None:
    seen: list[BatchProgress] = []
    with BatchApiServer() as server:
        service = _service(server, kind)
        handle = submit_batch(_mixed(), service=service, provider=kind, model="m")
        assert handle.id.startswith(f"dsb1:{kind}=") and len(handle.batches) == 1
        rows = list(handle.results(poll_interval=0.01, on_progress=seen.append))
    assert [r.id for r in rows] == ["a", "b", "c", "d", "e", "f"]  # input order; the server wrote them reversed
    by_id = {r.id: r for r in rows}
    assert by_id["a"].ok and by_id["a"].text == "echo hello" and by_id["a"].finish == "stop"
    assert by_id["f"].text == "echo world" and by_id["f"].response is not None
    usage = by_id["a"].usage
    assert usage is not None and usage.input_tokens == 5 and usage.output_tokens == 3
    bad = by_id["b"].failure
    assert bad is not None and bad.code == "INVALID_REQUEST" and not by_id["b"].ok
    assert by_id["e"].failure is not None and by_id["e"].failure.code in ("SERVER", "OVERLOADED")
    assert by_id["e"].failure.retryable
    if kind == "gemini":  # Gemini's inlined responses have no expired row: the missing row is its own failure
        assert by_id["c"].failure is not None and by_id["c"].failure.code == "MALFORMED_RESPONSE"
    else:
        assert by_id["c"].failure is not None and by_id["c"].failure.code == "TIMEOUT"
    missing = by_id["d"].failure
    assert missing is not None and missing.code == "MALFORMED_RESPONSE" and "no row" in missing.message
    polls = [entry for entry in server.seen if entry[0] == "GET" and "results" not in entry[1]
             and "/content" not in entry[1]]
    assert len(polls) == 3 and len(seen) == 3
    assert seen[0].in_flight == 6 or kind == "anthropic" and seen[0].in_flight >= 0
    assert seen[-1].in_flight == 0
    for method, path, headers in server.seen:  # the key in its header on every call, never in a URL
        assert KEY not in path
        assert KEY in (headers.get("authorization", "") + headers.get("x-api-key", "") +
                       headers.get("x-goog-api-key", ""))
        if kind == "anthropic":
            assert headers["anthropic-version"]


def test_the_openai_upload_is_multipart_jsonl_of_the_wire_bodies() -> None:
    with BatchApiServer() as server:
        handle = submit_batch([{"id": "x", "prompt": "hi", "max_tokens": 7}], service=_service(server, "openai"),
                              provider="openai", model="gpt-x")
        content_type, raw = server.uploads[0]
        assert content_type.startswith("multipart/form-data; boundary=")
        assert b'name="file"; filename="batch.jsonl"' in raw and b"Content-Type: application/jsonl" in raw
        line = json.loads(server.files["file-1"].splitlines()[0])
        assert line["custom_id"] == custom_id_of("x") and line["url"] == "/v1/chat/completions"
        assert line["body"]["model"] == "gpt-x" and "stream" not in line["body"]
        assert "stream_options" not in line["body"] and line["body"]["max_completion_tokens"] == 7
        assert [r.text for r in handle.results(poll_interval=0.01)] == ["echo hi"]


def _live_and_batch(kind: str, tmp_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[BatchResult],
                                                         list[BatchResult]]:
    lines = [{"id": f"row{i}", "prompt": f"fixture:{name}"} for i, name in enumerate(KINDS[kind][1])]
    lines.append({"id": "bad", "prompt": "fail:400"})
    source = tmp_path / "input.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))

    def rows() -> Iterator[dict[str, Any]]:
        with open(source) as handle:
            for line in handle:
                yield json.loads(line)

    with BatchApiServer() as server:
        service = _service(server, kind)
        live = list(run_many(rows(), service=service, provider=kind, model="m", ordered=True, progress=False,
                             checkpoint=tmp_path / "live.jsonl"))
        batch = list(run_many(rows(), service=service, provider=kind, model="m", mode="batch", poll_interval=0.01,
                              progress=False, checkpoint=tmp_path / "batch.jsonl"))
    read = [[json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
            for name in ("live.jsonl", "batch.jsonl")]
    return read[0], read[1], live, batch


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_same_input_live_and_as_a_batch_gives_the_same_rows(kind: str, tmp_path: Path) -> None:
    live_lines, batch_lines, live, batch = _live_and_batch(kind, tmp_path)
    assert len(live_lines) == len(batch_lines) == len(KINDS[kind][1]) + 1

    def comparable(line: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in line.items() if k not in ("duration", "request_id")}  # timing and ids
        if out.get("failure"):
            out["failure"] = {k: v for k, v in out["failure"].items() if k != "request_id"}
        return out

    assert sorted(map(comparable, live_lines), key=lambda r: r["id"]) == \
        sorted(map(comparable, batch_lines), key=lambda r: r["id"])
    for one, other in zip(live, batch):
        assert one.id == other.id
        if one.ok:
            assert one.response is not None and other.response is not None
            assert one.response.blocks == other.response.blocks
            assert one.response.finish == other.response.finish and one.response.usage == other.response.usage
            assert one.response.replay_state == other.response.replay_state
    assert any(r.tool_calls for r in batch) or kind == "responses" and any(r.text for r in batch)
    bad = next(r for r in batch if r.id == "bad")
    assert bad.failure is not None and bad.failure.code == "INVALID_REQUEST" and bad.failure.status == 400


def test_a_large_input_is_split_at_the_row_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAIBatchApi, "max_rows", 2)
    with BatchApiServer() as server:
        handle = submit_batch([{"id": str(i), "prompt": f"p{i}"} for i in range(5)],
                              service=_service(server, "openai"), provider="openai", model="m")
        assert len(handle.batches) == 3 and handle.id.count(";") == 2
        assert [r.text for r in handle.results(poll_interval=0.01)] == [f"echo p{i}" for i in range(5)]
        assert len(server.uploads) == 3


def test_a_large_input_is_split_at_the_byte_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AnthropicBatchApi, "max_bytes", 700)
    rows = [{"id": str(i), "prompt": "x" * 200} for i in range(4)] + [{"id": "huge", "prompt": "y" * 1000}]
    with BatchApiServer() as server:
        handle = submit_batch(rows, service=_service(server, "anthropic"), provider="anthropic", model="m")
        assert len(handle.batches) == 2
        results = list(handle.results(poll_interval=0.01))
    assert [r.ok for r in results] == [True, True, True, True, False]
    huge = results[-1].failure
    assert huge is not None and huge.code == "INVALID_OPTIONS" and "more than one" in huge.message


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_resume_after_a_restart_reads_the_same_batches(kind: str) -> None:
    rows = [{"id": "one", "prompt": "first"}, {"id": "two", "prompt": "second"}]
    with BatchApiServer() as server:
        batch_id = submit_batch(rows, service=_service(server, kind), provider=kind, model="m").id
        created = len([s for s in server.seen if s[0] == "POST"])
        later = resume_batch(batch_id, list(reversed(rows)), service=_service(server, kind), provider=kind, model="m")
        results = list(later.results(poll_interval=0.01))
        assert len([s for s in server.seen if s[0] == "POST"]) == created  # nothing submitted again
    assert [(r.id, r.text) for r in results] == [("two", "echo second"), ("one", "echo first")]


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_cancel_keeps_what_finished_and_fails_the_rest(kind: str) -> None:
    with BatchApiServer(polls_to_end=100) as server:
        handle = submit_batch([{"id": str(i), "prompt": f"p{i}"} for i in range(4)],
                              service=_service(server, kind), provider=kind, model="m")
        assert handle.wait(poll_interval=0.01, timeout=0.05) is False
        handle.cancel()
        results = list(handle.results(poll_interval=0.01))
    assert [r.ok for r in results] == [True, True, False, False]
    assert all(r.failure is not None and r.failure.code == "ABORTED" for r in results[2:])


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_an_expired_batch_keeps_its_answered_rows(kind: str) -> None:
    with BatchApiServer(expire_batches=True) as server:
        results = list(run_many([{"id": str(i), "prompt": f"p{i}"} for i in range(4)], service=_service(server, kind),
                                provider=kind, model="m", mode="batch", poll_interval=0.01, progress=False))
    assert [r.ok for r in results] == [True, True, False, False]
    for row in results[2:]:
        assert row.failure is not None and row.failure.code == "TIMEOUT" and row.failure.retryable


def test_a_checkpoint_rerun_submits_only_what_is_not_done(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    rows = [{"id": "a", "prompt": "one"}, {"id": "b", "prompt": "fail:400"}]
    with BatchApiServer() as server:
        service = _service(server, "anthropic")
        first = list(run_many(rows, service=service, provider="anthropic", model="m", mode="batch",
                              poll_interval=0.01, checkpoint=path, progress=False))
        again = list(run_many(rows, service=service, provider="anthropic", model="m", mode="batch",
                              poll_interval=0.01, checkpoint=path, progress=False))
        created = [s for s in server.seen if s[0] == "POST" and s[1] == "/v1/messages/batches"]
    assert [r.ok for r in first] == [True, False] and [r.resumed for r in again] == [True, False]
    assert len(created) == 2 and len(server.batches[max(server.batches)].rows) == 1  # only the failed row again
    assert len(path.read_text().splitlines()) == 3


def test_a_provider_without_a_batch_api_is_refused_before_anything_is_sent() -> None:
    with BatchApiServer() as server:
        service = LlmService()
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="custom", api_key=""))
        with pytest.raises(ConfigurationError, match="no provider batch API"):
            submit_batch([{"prompt": "x"}], service=service, provider="local", model="m")
        with pytest.raises(ConfigurationError, match="max_cost"):
            run_many([{"prompt": "x"}], service=service, provider="local", model="m", mode="batch", max_cost=1.0)
        with pytest.raises(ConfigurationError, match="mode"):
            run_many([{"prompt": "x"}], service=service, provider="local", model="m", mode="later")
        with pytest.raises(ConfigurationError, match="ProviderBatch.id"):
            resume_batch("batch_123", [], service=service)
        assert server.seen == []


def test_a_duplicate_key_and_an_invalid_row_are_failed_rows() -> None:
    with BatchApiServer() as server:
        rows = [{"id": "a", "prompt": "x"}, {"id": "a", "prompt": "y"}, {"id": "c", "promt": "z"}]
        results = list(submit_batch(rows, service=_service(server, "gemini"), provider="gemini", model="m")
                       .results(poll_interval=0.01))
    assert [r.ok for r in results] == [True, False, False]
    assert results[1].failure is not None and "already in this batch" in results[1].failure.message
    assert results[2].failure is not None and "'promt'" in results[2].failure.message


def test_a_results_url_on_another_host_is_never_fetched_with_the_key() -> None:
    with BatchApiServer() as server:
        api = api_for(_service(server, "anthropic"), "anthropic", timeout=5.0, result_limit=1000)
        status = ProviderBatchStatus("msgbatch_1", "ended", True, raw={"results_url": "http://elsewhere.invalid/results"})
        with pytest.raises(Exception) as caught:
            list(api.results(status))
        assert getattr(caught.value, "code", None) == "MALFORMED_RESPONSE"
        assert server.seen == []


def test_a_result_file_over_its_bound_is_a_failure_not_a_cut(tmp_path: Path) -> None:
    with BatchApiServer() as server:
        handle = submit_batch([{"id": str(i), "prompt": "p" * 50} for i in range(4)],
                              service=_service(server, "openai"), provider="openai", model="m", result_limit=100)
        with pytest.raises(Exception) as caught:
            list(handle.results(poll_interval=0.01))
    assert getattr(caught.value, "code", None) == "MALFORMED_RESPONSE" and "larger than 100" in str(caught.value)


def test_options_rows_and_a_timeout_that_passes_first() -> None:
    options = GenerateOptions(provider="openai", model="m", messages=(Message(role="user", content="opt"),))
    with BatchApiServer(polls_to_end=100) as server:
        handle = submit_batch([options], service=_service(server, "openai"))
        with pytest.raises(Exception) as caught:
            next(handle.results(poll_interval=0.01, timeout=0.05))
        assert getattr(caught.value, "code", None) == "TIMEOUT" and handle.id in str(caught.value)


def test_a_recorded_openai_batch_output_file_reads_as_its_rows() -> None:
    """A real OpenAI batch output file (tests/fixtures/real/batch/, PROVENANCE.md) through the
    API's row reader and the chat wire's own translator."""
    from dshstream._batch.provider.events import events_for
    from dshstream._core.assembler import assemble
    from helpers import FIXTURES

    recorded = (FIXTURES / "batch" / "openai_chat_output.jsonl").read_bytes()
    adapter = OpenAIChatAdapter(base_url="http://127.0.0.1:1/v1", api_key=KEY, transport=MemoryTransport(
        handler=lambda sent: MemoryAnswer(recorded, headers={"content-type": "application/octet-stream"})))
    service = LlmService()
    service.register_adapter(["openai"], adapter)
    api = api_for(service, "openai", timeout=5.0, result_limit=1 << 20)
    status = ProviderBatchStatus("batch_LunAvcYn4RGXvp59fWOxse0s", "completed", True,
                                 raw={"output_file_id": "file-out"})
    rows = list(api.results(status))
    assert [row.custom_id for row in rows] == ["request-1", "request-2"]
    options = GenerateOptions(provider="openai", model="gpt-3.5-turbo-0125", messages=(Message.user("q"),))
    first, second = rows
    assert first.request_id == "a6ce4ecd1904d2fd7ef85e668567f29d"
    for row, text, tokens in ((first, "No", (61, 1)), (second, "From a psychological perspective", (52, 193))):
        assert row.body is not None and row.failure is None
        translator = adapter.wire.make_translator(options, row.request_id)
        response = assemble(translator.feed_events(events_for(translator.wire, row.body)) + translator.close())
        assert response.text.startswith(text) and response.finish.kind == "stop"
        assert response.usage is not None and (response.usage.input_tokens, response.usage.output_tokens) == tokens
        assert response.metadata is not None and response.metadata.response_id == row.body["id"]
    assert "\n\nAdditionally" in response.text


@pytest.mark.parametrize("api_version", ["v1", "2024-10-21"])
@pytest.mark.parametrize("responses", [False, True])
def test_azure_openai_batches_use_the_resource_urls(api_version: str, responses: bool) -> None:
    with BatchApiServer() as server:
        kind = AzureOpenAIResponsesAdapter if responses else AzureOpenAIAdapter
        adapter = kind(endpoint=server.url, api_key=KEY, api_version=api_version)
        service = LlmService()
        service.register_adapter(["azure"], adapter)
        handle = submit_batch([{"id": "x", "prompt": "hi"}, {"id": "y", "prompt": "fail:400"}], service=service,
                              provider="azure", model="my-batch-deployment")
        rows = list(handle.results(poll_interval=0.01))
        line = json.loads(server.files["file-1"].splitlines()[0])
    assert [r.ok for r in rows] == [True, False] and rows[0].text == "echo hi"
    assert line["url"] == ("/responses" if responses else "/chat/completions")
    assert line["body"]["model"] == "my-batch-deployment" and "stream" not in line["body"]
    assert all(path.startswith("/openai/v1/" if api_version == "v1" else "/openai/") for _, path, _ in server.seen)
    expected = "" if api_version == "v1" else f"api-version={api_version}"
    assert server.azure_queries and set(server.azure_queries) == {expected}
    assert all(headers.get("api-key") == KEY for _, _, headers in server.seen)


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_a_batch_that_failed_as_a_whole_gives_every_row_its_failure(kind: str) -> None:
    with BatchApiServer(fail_batches=True) as server:
        handle = submit_batch([{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}],
                              service=_service(server, kind), provider=kind, model="m")
        results = list(handle.results(poll_interval=0.01))
        statuses = handle.status()
    assert statuses[0].ended and statuses[0].failure is not None
    assert [r.ok for r in results] == [False, False]
    for row in results:
        assert row.failure is not None and row.failure == statuses[0].failure
        assert row.failure.code in ("MODEL_NOT_FOUND", "INVALID_REQUEST")


def test_run_many_in_batch_mode_reads_and_sends_nothing_until_iterated() -> None:
    with BatchApiServer() as server:
        service = _service(server, "anthropic")
        read: list[str] = []

        def rows() -> Iterator[dict[str, Any]]:
            for name in ("a", "b"):
                read.append(name)
                yield {"id": name, "prompt": name}

        results = run_many(rows(), service=service, provider="anthropic", model="m", mode="batch",
                           poll_interval=0.01, progress=False)
        assert read == [] and server.seen == []
        unused = run_many(rows(), service=service, provider="anthropic", model="m", mode="batch", progress=False)
        unused.close()  # closed before its first result: nothing submitted
        assert read == [] and server.seen == []
        first = next(results)
        assert first.id == "a" and first.text == "echo a" and read == ["a", "b"]
        assert [r.id for r in results] == ["b"]
        assert len([entry for entry in server.seen if entry[0] == "POST"]) == 1


@pytest.mark.parametrize("setting", [
    {"concurrency": 2}, {"max_attempts": 1}, {"limiter": lambda provider: None}, {"max_tokens": 10},
    {"poll_interval": 0}, {"price": "free"},
])
def test_settings_a_provider_batch_has_no_use_for_are_refused_when_called(setting: dict[str, Any]) -> None:
    (name,) = setting
    with BatchApiServer() as server:
        with pytest.raises(ConfigurationError, match=rf"run_many\({name}="):
            run_many([{"prompt": "x"}], service=_service(server, "openai"), provider="openai", model="m",
                     mode="batch", **setting)
        results = run_many([{"prompt": "x"}], service=_service(server, "openai"), provider="openai", model="m",
                           mode="batch", concurrency=8, ordered=True, max_attempts=6)  # defaults, and ordered: moot
        results.close()
        assert server.seen == []


def test_a_route_without_a_batch_api_is_refused_at_the_call_or_before_anything_is_sent() -> None:
    with BatchApiServer() as server:
        service = _service(server, "openai")
        service.register_adapter(["local"], OpenAIChatAdapter(base_url=f"{server.url}/v1", dialect="custom", api_key=""))
        with pytest.raises(ConfigurationError, match="no provider batch API"):
            run_many([{"prompt": "x"}], service=service, provider="local", model="m", mode="batch")
        rows = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y", "provider": "local"}]
        results = run_many(rows, service=service, provider="openai", model="m", mode="batch", progress=False)
        with pytest.raises(ConfigurationError, match="'local'.*no provider batch API"):
            next(results)
        assert server.seen == []
