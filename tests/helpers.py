"""Shared test helpers: fixture loading, split feeding, a loopback replay server."""

from __future__ import annotations

import os
import random
import string
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dshstream._core.decode import decode
from dshstream._core.types import FinishKind, StreamChunk

#: tests/ itself: the shared modules (this one, conftest.py, rawserver.py,
#: fake_llama_server.py) and fixtures/; the test files live one level down, in a directory
#: per layer of the package
TESTS = Path(__file__).resolve().parent
#: the source tree (or the unpacked sdist): README.rst, CONTRIBUTING.rst, examples/, scripts/
REPOSITORY = TESTS.parent
FIXTURES = TESTS / "fixtures" / "real"


def fixture_bytes(relative: str) -> bytes:
    """The exact bytes of a recorded transcript under tests/fixtures/real."""
    return (FIXTURES / relative).read_bytes()


def split_at(data: bytes, cuts: Iterable[int]) -> list[bytes]:
    """``data`` cut at the given offsets (out-of-range and duplicate cuts ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    pieces = []
    start = 0
    for point in points:
        pieces.append(data[start:point])
        start = point
    pieces.append(data[start:])
    return pieces


def decode_all(data: bytes | Sequence[bytes], wire: str, **options: object) -> list[StreamChunk]:
    """Every chunk of a stream, as a list."""
    return list(decode(data, wire=wire, **options))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- corpus wires

_NATIVE_WIRES = ("anthropic", "cohere", "gemini", "gemini-interactions", "openai-responses")


def fixture_wire(relative: str) -> str:
    """The wire that decodes the recorded transcript ``relative`` (``provider/name.sse``).

    Provider directories named after a native wire use it; DeepSeek's, OpenRouter's,
    xAI's, LM Studio's and Azure's ``responses_api_*`` recordings are the Responses wire; ``vertex/`` (Gemini on Vertex AI)
    is ``gemini``; ``openai/`` (legacy completions included) and ``azure/`` are
    ``openai-chat``; ``bedrock/`` (binary AWS event-stream bodies) is ``bedrock-converse``
    (``bedrock-invoke`` for the InvokeModelWithResponseStream ``invoke_*`` recordings);
    another directory is its chat dialect when one exists, else ``openai-chat``.
    """
    from dshstream._core.dialects import DIALECTS

    provider, _, name = relative.partition("/")
    if provider == "bedrock":
        return "bedrock-invoke" if name.startswith("invoke_") else "bedrock-converse"
    if provider in _NATIVE_WIRES:
        return provider
    if provider == "vertex":
        return "gemini"
    if provider in ("deepseek", "openrouter", "xai", "lmstudio", "azure") and name.startswith("responses_api_"):
        return "openai-responses"
    if provider == "openai":
        return "openai-chat"
    return provider if provider in DIALECTS else "openai-chat"


def all_fixtures() -> list[str]:
    """Every recorded transcript, as ``provider/name.sse`` (also one folder deeper:
    ``openai-responses/builtin-tools/``) or ``bedrock/name.eventstream``, sorted."""
    found = [*FIXTURES.glob("*/*.sse"), *FIXTURES.glob("*/*/*.sse"), *FIXTURES.glob("*/*.eventstream")]
    return sorted(p.relative_to(FIXTURES).as_posix() for p in found)


# --------------------------------------------------------------------------- known finishes


class FixtureFinish(NamedTuple):
    """How a recorded transcript ends: ``FinishReason.kind``, ``.raw`` (the provider's own
    word, ``None`` when it sent none) and, for ``error``, the failure's ``code``."""

    kind: FinishKind
    raw: str | None
    code: str | None = None


#: The finish of every transcript under tests/fixtures/real, read off the recording (its
#: last ``finish_reason``/``stop_reason``/``finishReason``/``status``, or its error event)
#: and checked by decoding it (tests/robustness/test_corpus.py::test_known_finish). Worth
#: knowing: a tool call turns a Gemini ``STOP`` and a Responses ``completed`` into
#: ``tool-calls``; OpenRouter's Kimi recording sends no finish word at all (``tool-calls``
#: because it called a tool); OpenRouter's raw word is its ``native_finish_reason``, and
#: its ``midstream_error_chunk`` sends ``length`` and then an in-band error, which wins;
#: the Responses quota recording is an ``error`` event then ``response.failed``
#: (``QUOTA``); Groq's error event is ``tool_use_failed`` (``INVALID_REQUEST``);
#: llama-server's ``{"error": {"code": 500}}`` is ``SERVER``; Bedrock's Claude Instant
#: text completion stops at once on its stop sequence with an empty completion
#: (``EMPTY_RESPONSE``), and Titan's guardrail-blocked answer sends no finish word
#: (``INTERVENED``, ``CONTENT_FILTER``).
KNOWN_FINISH: dict[str, FixtureFinish] = {
    "alibaba/qwen3max_reasoning_content.sse": FixtureFinish("stop", "stop"),
    "alibaba/qwen3max_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "anthropic/adaptive_thinking_interleaved_opus46.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/advisor_tool_result_iterations.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/cache_creation_and_read_code_execution.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/cache_read_compaction.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/code_execution_bash_and_text_editor_results.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/compaction_delta_iterations_opus46.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/legacy_text_completion_claude21.sse": FixtureFinish("stop", "stop_sequence"),
    "anthropic/mcp_tool_use.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/parallel_tool_use.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/programmatic_code_execution_result_then_text.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/programmatic_code_execution_then_tool_use_with_caller.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/programmatic_tool_call_in_message_start.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/redacted_thinking.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/stop_sequence_prefill.sse": FixtureFinish("stop", "stop_sequence"),
    "anthropic/structured_output_json_schema_sonnet45.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/text.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/text_and_tool_use_plus_server_tool_use.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/thinking_long_sonnet4.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/thinking_signature_context_management.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/thinking_signature_delta.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/thinking_then_tool_use.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/tool_search_regex_result_then_tool_use.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/tool_use_empty_input.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/tool_use_with_args.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/web_fetch_20260209_dynamic_filtering_container.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/web_fetch_tool_result_sonnet4.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/web_search_server_tool_citations.sse": FixtureFinish("stop", "end_turn"),
    "avian/kimi_k25_reasoning_details_and_reasoning_content_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "azure/foundry_models_grok41_fast_text.sse": FixtureFinish("stop", "stop"),
    "azure/gpt35_turbo_prompt_filter_first.sse": FixtureFinish("stop", "stop"),
    "azure/gpt41_mini_filter_results_on_finish_chunk.sse": FixtureFinish("stop", "stop"),
    "azure/gpt41_mini_obfuscation_protected_material.sse": FixtureFinish("stop", "stop"),
    "azure/gpt52_usage_latency_checkpoint.sse": FixtureFinish("stop", "stop"),
    "azure/langchain_lcel_test_azure.sse": FixtureFinish("stop", "stop"),
    "azure/model_router_prompt_filter_results.sse": FixtureFinish("stop", "stop"),
    "bedrock/claude37_cache_read.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude37_cache_write.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude37_redacted_reasoning.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude3_sonnet_text_then_tool_use.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/claude3_sonnet_tool_use_first.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/claude_sonnet45_document_citations.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude_sonnet45_native_output.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude_sonnet46_structured_output.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/claude_sonnet4_reasoning_signature.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/converse_ai21_jamba15_mini_max_tokens.eventstream": FixtureFinish("max-tokens", "max_tokens"),
    "bedrock/converse_claude_sonnet5_adaptive_thinking_summarized.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/converse_claude_sonnet5_document_chunk_citations.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/converse_claude_sonnet5_text_then_tool_use_typed_start.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/converse_cohere_command_r_max_tokens.eventstream": FixtureFinish("max-tokens", "max_tokens"),
    "bedrock/converse_mistral7b_instruct_text.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/deepseek_r1_reasoning_no_signature.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/gpt_oss_120b_reasoning_empty_text_delta.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/invoke_claude35_sonnet_text_two_tool_uses.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/invoke_claude3_sonnet_messages.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/invoke_claude_instant_text_completion.eventstream": FixtureFinish("error", "stop_sequence", "EMPTY_RESPONSE"),
    "bedrock/invoke_cohere_command_light_text.eventstream": FixtureFinish("max-tokens", "MAX_TOKENS"),
    "bedrock/invoke_cohere_command_light_two_generations.eventstream": FixtureFinish("max-tokens", "MAX_TOKENS"),
    "bedrock/invoke_llama2_13b_chat_length.eventstream": FixtureFinish("max-tokens", "length"),
    "bedrock/invoke_nova_lite_block_per_delta.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/invoke_titan_express_guardrail_input_blocked.eventstream": FixtureFinish("error", "INTERVENED", "CONTENT_FILTER"),
    "bedrock/invoke_titan_express_guardrail_masked.eventstream": FixtureFinish("stop", "FINISH"),
    "bedrock/invoke_titan_tg1_large_length.eventstream": FixtureFinish("max-tokens", "LENGTH"),
    "bedrock/llama32_1b_text.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/nova2_lite_code_interpreter_server_tool.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/nova2_lite_web_grounding_citation_blocks.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/nova_micro_text.eventstream": FixtureFinish("stop", "end_turn"),
    "bedrock/nova_micro_text_then_tool_use.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "bedrock/nova_micro_two_tool_uses.eventstream": FixtureFinish("tool-calls", "tool_use"),
    "cerebras/gpt_oss_120b_reasoning_then_streamed_tool_args.sse": FixtureFinish("tool-calls", "tool_calls"),
    "cerebras/qwen3_coder_480b_tool_call_one_chunk_time_info_no_done.sse": FixtureFinish("tool-calls", "tool_calls"),
    "cerebras/qwen3_coder_480b_two_tool_calls_one_delta.sse": FixtureFinish("tool-calls", "tool_calls"),
    "cohere-compat/compatibility_api_command_r7b_chat_stream.sse": FixtureFinish("stop", "stop"),
    "cohere/command_a_no_argument_tool_call.sse": FixtureFinish("tool-calls", "TOOL_CALL"),
    "cohere/command_a_plus_thinking_document_citations.sse": FixtureFinish("stop", "COMPLETE"),
    "cohere/command_a_text_cached_tokens.sse": FixtureFinish("stop", "COMPLETE"),
    "cohere/command_a_tool_plan_tool_call.sse": FixtureFinish("tool-calls", "TOOL_CALL"),
    "cohere/command_a_tool_result_citation.sse": FixtureFinish("stop", "COMPLETE"),
    "cohere/command_parallel_tool_calls_vercel.sse": FixtureFinish("tool-calls", "TOOL_CALL"),
    "deepseek/chat_text_finish_length.sse": FixtureFinish("max-tokens", "length"),
    "deepseek/reasoner_reasoning_content_then_content.sse": FixtureFinish("stop", "stop"),
    "deepseek/reasoner_tool_call_cache_hit.sse": FixtureFinish("tool-calls", "tool_calls"),
    "deepseek/responses_api_function_call.sse": FixtureFinish("tool-calls", "completed"),
    "deepseek/responses_api_text.sse": FixtureFinish("stop", "completed"),
    "fireworks/deepseek_r1_think_tags_in_content_usage_every_chunk.sse": FixtureFinish("stop", "stop"),
    "gemini-interactions/error_gateway_timeout.sse": FixtureFinish("error", None, "TIMEOUT"),
    "gemini-interactions/google_search_then_function_call.sse": FixtureFinish("tool-calls", "requires_action"),
    "gemini-interactions/image_text_incomplete.sse": FixtureFinish("max-tokens", "incomplete"),
    "gemini-interactions/parallel_function_calls_streamed_args.sse": FixtureFinish("tool-calls", "requires_action"),
    "gemini-interactions/recorded_basic_text.sse": FixtureFinish("stop", "completed"),
    "gemini-interactions/recorded_function_call.sse": FixtureFinish("tool-calls", "requires_action"),
    "gemini-interactions/recorded_google_search.sse": FixtureFinish("stop", "completed"),
    "gemini-interactions/recorded_image_input_incomplete_flash_lite.sse": FixtureFinish("max-tokens", "incomplete"),
    "gemini-interactions/recorded_thinking_summary_event_metadata_usage.sse": FixtureFinish("stop", "completed"),
    "gemini-interactions/text_thought_signature.sse": FixtureFinish("stop", "completed"),
    "gemini-interactions/thinking_summary.sse": FixtureFinish("stop", "completed"),
    "gemini/code_execution.sse": FixtureFinish("stop", "STOP"),
    "gemini/empty_text_thought_signature_gemini3.sse": FixtureFinish("stop", "STOP"),
    "gemini/file_search_retrieved_context_citations.sse": FixtureFinish("stop", "STOP"),
    "gemini/function_call.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/gemini3_flash_grounding_supports_byte_offsets_tool_use_prompt_tokens.sse": FixtureFinish("stop", "STOP"),
    "gemini/function_call_array_partial_args_no_terminal_call.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/function_call_ids_thought_signature_gemini35.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/function_call_thought_signature_gemini3.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/grounding_web_search.sse": FixtureFinish("stop", "STOP"),
    "gemini/server_side_mcp_function_call_response_text.sse": FixtureFinish("stop", "STOP"),
    "gemini/text.sse": FixtureFinish("stop", "STOP"),
    "gemini/thought_parts_with_signature.sse": FixtureFinish("stop", "STOP"),
    "gemini/url_context_metadata_web_fetch.sse": FixtureFinish("stop", "STOP"),
    "gemini/usage_thoughts_service_tier.sse": FixtureFinish("stop", "STOP"),
    "gemini/vertex_function_call_partial_args.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/vertex_function_call_partial_args_nested.sse": FixtureFinish("tool-calls", "STOP"),
    "gemini/vertex_malformed_function_call.sse": FixtureFinish("error", "MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
    "gemini/vertex_text_thought_signature.sse": FixtureFinish("stop", "STOP"),
    "gemini/vertex_thought_then_max_tokens.sse": FixtureFinish("max-tokens", "MAX_TOKENS"),
    "gemini/vertex_thought_then_no_args_function_calls.sse": FixtureFinish("tool-calls", "STOP"),
    "groq/compound_web_search_executed_tools.sse": FixtureFinish("stop", "stop"),
    "groq/gpt_oss_reasoning_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "groq/midstream_error_tool_use_failed.sse": FixtureFinish("error", None, "INVALID_REQUEST"),
    "groq/text_llama33_x_groq_usage.sse": FixtureFinish("stop", "stop"),
    "groq/qwen3_32b_think_tags_in_content_raw_reasoning_format.sse": FixtureFinish("stop", "stop"),
    "groq/tool_call_llama33.sse": FixtureFinish("tool-calls", "tool_calls"),
    "huggingface/hfinference_tgi321_llama31_8b_empty_id_role_every_chunk.sse": FixtureFinish("max-tokens", "length"),
    "huggingface/router_glm46_cerebras_reasoning_field_tool_call_no_done.sse": FixtureFinish("tool-calls", "tool_calls"),
    "huggingface/router_glm46_newline_content_before_reasoning.sse": FixtureFinish("stop", "stop"),
    "huggingface/router_glm46_reasoning_content_two_tool_calls_cached.sse": FixtureFinish("tool-calls", "tool_calls"),
    "huggingface/router_hyperbolic_llama32_3b_cumulative_usage_every_chunk.sse": FixtureFinish("max-tokens", "length"),
    "huggingface/router_kimi_k2_groq_x_groq_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "huggingface/router_novita_llama31_sla_metrics.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamacpppython_qwen_tool_calls_forced.sse": FixtureFinish("tool-calls", "tool_calls"),
    "llamacpp/llamacpppython_smollm2_basic.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamacpppython_smollm2_include_usage_ignored.sse": FixtureFinish("max-tokens", "length"),
    "llamacpp/llamacpppython_smollm2_long_with_ping_comment.sse": FixtureFinish("max-tokens", "length"),
    "llamacpp/llamaserver_gpt_oss_20b_reasoning_streamed_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "llamacpp/llamaserver_local_qwen_think_tags_in_content.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamaserver_local_qwen_tool_calls_b1.sse": FixtureFinish("tool-calls", "tool_calls"),
    "llamacpp/llamaserver_qwen_basic.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamaserver_qwen_include_usage.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamaserver_qwen_midstream_error.sse": FixtureFinish("error", None, "SERVER"),
    "llamacpp/llamaserver_qwen_reasoning_content.sse": FixtureFinish("stop", "stop"),
    "llamacpp/llamaserver_qwen_tool_calls.sse": FixtureFinish("tool-calls", "tool_calls"),
    "llamacpp/llamaserver_smollm2_long_256tok.sse": FixtureFinish("max-tokens", "length"),
    "lmstudio/responses_api_reasoning_text_function_call.sse": FixtureFinish("tool-calls", "completed"),
    "mistral/magistral_small_p_padding.sse": FixtureFinish("stop", "stop"),
    "mistral/magistral_thinking_content_parts.sse": FixtureFinish("stop", "stop"),
    "mistral/text.sse": FixtureFinish("stop", "stop"),
    "mistral/tool_call_single_chunk.sse": FixtureFinish("tool-calls", "tool_calls"),
    "novita/deepseek_r1_distill_qwen14b_think_tags_content_filter.sse": FixtureFinish("stop", "stop"),
    "ollama/v1_qwen25_05b_tool_call_markup_left_in_content.sse": FixtureFinish("stop", "stop"),
    "openai-responses/background_resumed_starting_after.sse": FixtureFinish("stop", "completed"),
    "openai-responses/bedrock_mantle_gpt56_function_call.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/bedrock_mantle_gpt_oss_text_at_content_index_1.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/apply_patch_call_gpt51.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/azure_image_generation_partial_image.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/code_interpreter_call_container_file_citation.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/file_search_call_file_citations_gpt5.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/image_generation_call_truncated_result_gpt5.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/local_shell_call_gpt5_codex.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/mcp_approval_request_gpt5mini.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/mcp_call_after_approval.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/mcp_list_tools_item_done_missing.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/program_output_then_text.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/program_then_function_call_with_caller.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/shell_call_gpt51.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/shell_call_hosted_output_skills.sse": FixtureFinish("stop", "completed"),
    "openai-responses/builtin-tools/tool_search_call_client_execution.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/tool_search_server_then_function_call.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/web_search_call_url_citations_gpt5nano.sse": FixtureFinish("stop", "completed"),
    "openai-responses/error_event_insufficient_quota.sse": FixtureFinish("error", None, "QUOTA"),
    "openai-responses/function_call.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/function_call_gpt55.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/incomplete_max_output_tokens_gpt4o.sse": FixtureFinish("max-tokens", "max_output_tokens"),
    "openai-responses/reasoning_item_then_function_call_gpt5.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/reasoning_summary_multi_part_o3mini.sse": FixtureFinish("stop", "completed"),
    "openai-responses/reasoning_summary_then_function_call_codex.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/text.sse": FixtureFinish("stop", "completed"),
    "openai-responses/text_after_function_results.sse": FixtureFinish("stop", "completed"),
    "openai-responses/text_single_delta_gpt55.sse": FixtureFinish("stop", "completed"),
    "openai/content_logprobs.sse": FixtureFinish("stop", "stop"),
    "openai/finish_length.sse": FixtureFinish("max-tokens", "length"),
    "openai/legacy_completions_text.sse": FixtureFinish("max-tokens", "length"),
    "openai/multiple_choices_n3.sse": FixtureFinish("stop", "stop"),
    "openai/named_tool_choice_finish_stop_gpt4_0125.sse": FixtureFinish("tool-calls", "stop"),
    "openai/parallel_tool_calls.sse": FixtureFinish("tool-calls", "tool_calls"),
    "openai/refusal.sse": FixtureFinish("stop", "stop"),
    "openai/refusal_logprobs.sse": FixtureFinish("stop", "stop"),
    "openai/single_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "openai/text_include_usage.sse": FixtureFinish("stop", "stop"),
    "openai/text_moderation_chunk_obfuscation_gpt5.sse": FixtureFinish("stop", "stop"),
    "openai/text_service_tier_obfuscation_gpt41nano.sse": FixtureFinish("stop", "stop"),
    "openai/tool_call_include_usage_gpt4o_mini.sse": FixtureFinish("tool-calls", "tool_calls"),
    "openrouter/cache_usage_bedrock_claude.sse": FixtureFinish("stop", "stop"),
    "openrouter/gemini25_flash_reasoning_text_google_vertex.sse": FixtureFinish("stop", "STOP"),
    "openrouter/gemini25_flash_lite_15_same_index_tool_calls_then_malformed_function_call_error_trailing_usage.sse": (
        FixtureFinish("error", "MALFORMED_FUNCTION_CALL", "SERVER")
    ),
    "openrouter/midstream_error_chunk.sse": FixtureFinish("error", "length", "INVALID_REQUEST"),
    "openrouter/reasoning_details_claude.sse": FixtureFinish("stop", "stop"),
    "openrouter/reasoning_grok4.sse": FixtureFinish("stop", "completed"),
    "openrouter/reasoning_o3.sse": FixtureFinish("stop", "completed"),
    "openrouter/responses_api_reasoning_text_gpt_oss.sse": FixtureFinish("stop", "completed"),
    "openrouter/tool_call_kimi_k2_novita.sse": FixtureFinish("tool-calls", None),
    "openrouter/web_search_annotations_deepseek.sse": FixtureFinish("stop", "stop"),
    "perplexity/sonar_citations_urls_only_shortened.sse": FixtureFinish("stop", "stop"),
    "perplexity/sonar_search_results_cost_done_object.sse": FixtureFinish("stop", "stop"),
    "sambanova/hfrouter_llama31_8b_role_every_chunk_no_usage.sse": FixtureFinish("max-tokens", "length"),
    "snowflake/cortex_claude_reasoning_details_no_finish_reason.sse": FixtureFinish("stop", None),
    "together/hfrouter_llama3_8b_text_token_id_content_on_finish.sse": FixtureFinish("max-tokens", "length"),
    "together/llama33_70b_finish_reason_eos.sse": FixtureFinish("stop", "eos"),
    "together/llama33_70b_turbo_text_usage_cached_tokens.sse": FixtureFinish("stop", "stop"),
    "vertex/gemini15_flash002_text_a.sse": FixtureFinish("stop", "STOP"),
    "vertex/gemini25_flash_grounding_global.sse": FixtureFinish("stop", "STOP"),
    "vertex/gemini25_flash_text_a.sse": FixtureFinish("stop", "STOP"),
    "vertex/gemini25_flash_text_b.sse": FixtureFinish("stop", "STOP"),
    "vertex/gemini3pro_partial_args_number_values_single_chunk.sse": FixtureFinish("tool-calls", "STOP"),
    "vllm/crusoe_llama33_text_usage.sse": FixtureFinish("stop", "stop"),
    "xai/grok3mini_reasoning_content_text.sse": FixtureFinish("stop", "stop"),
    "xai/grok3mini_reasoning_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "xai/responses_api_reasoning_encrypted_store_false.sse": FixtureFinish("stop", "completed"),
    "xai/responses_api_web_search_call_citations.sse": FixtureFinish("stop", "completed"),
    "zai/glm47_reasoning_content.sse": FixtureFinish("stop", "stop"),
    "anthropic/vertex_streamrawpredict_haiku45_tool_use.sse": FixtureFinish("tool-calls", "tool_use"),
    "anthropic/vertex_streamrawpredict_sonnet45_thinking_padded_json.sse": FixtureFinish("stop", "end_turn"),
    "anthropic/azure_foundry_messages_opus45_thinking_padded_json.sse": FixtureFinish("stop", "end_turn"),
    "openrouter/minimax_m1_novita_empty_response_usage_no_finish.sse": FixtureFinish("error", None, "EMPTY_RESPONSE"),
    "zai/coding_glm45v_tool_call_in_finish_chunk_repeated_finish.sse": FixtureFinish("tool-calls", "tool_calls"),
    "zai/glm46_reasoning_text_tool_call_cached_tokens.sse": FixtureFinish("tool-calls", "tool_calls"),
    "azure/responses_api_gpt5_mini_reasoning_summary_function_call_content_filters.sse": FixtureFinish("tool-calls", "completed"),
    "hyper/deepseek_v4_pro_reasoning_only_finish_length.sse": FixtureFinish("max-tokens", "length"),
    "hyper/deepseek_v4_pro_reasoning_parallel_tool_calls_cost_object.sse": FixtureFinish("tool-calls", "tool_calls"),
    "hyper/glm51_reasoning_tool_call_cached_outside_prompt_tokens.sse": FixtureFinish("tool-calls", "tool_calls"),
    "openrouter/glm5_turbo_zai_reasoning_text_two_tool_calls_cached.sse": FixtureFinish("tool-calls", "tool_calls"),
    "vercel/claude_sonnet4_reasoning_details_signature_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "vercel/gemini3_pro_encrypted_reasoning_after_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "vercel/gpt5_reasoning_summary_details_tool_call.sse": FixtureFinish("tool-calls", "tool_calls"),
    "xai/grok45_reasoning_content_tool_call_cost_ticks.sse": FixtureFinish("tool-calls", "tool_calls"),
    "xai/responses_api_x_search_custom_tool_call_subsearch_grok4fast.sse": FixtureFinish("stop", "completed"),
    "xai/responses_api_web_search_call_url_citation_grok4fast.sse": FixtureFinish("stop", "completed"),
    "azure/responses_api_gpt51_codex_mini_function_call_content_filters.sse": FixtureFinish("tool-calls", "completed"),
    "openai-responses/builtin-tools/web_search_call_open_page_find_in_page_actions_gpt5mini.sse": FixtureFinish("stop", "completed"),
}


def routed_session(real_base_url: str, loopback_url: str) -> object:
    """A ``requests.Session`` that sends requests for ``real_base_url``'s host to
    ``loopback_url`` instead (the URL the adapter builds, headers and all, stay as they
    would be for the real host; only the connection goes to 127.0.0.1)."""
    from urllib.parse import urlsplit, urlunsplit

    import requests

    real = urlsplit(real_base_url)
    target = urlsplit(loopback_url)

    class _Reroute(requests.adapters.HTTPAdapter):
        def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
            assert request.url is not None
            parts = urlsplit(request.url)
            request.url = urlunsplit((target.scheme, target.netloc, parts.path, parts.query, ""))
            return super().send(request, *args, **kwargs)

    session = requests.Session()
    session.mount(f"{real.scheme}://{real.netloc}", _Reroute())
    return session


# --------------------------------------------------------------------------- fake keys

KEY_CHARS = string.ascii_letters + string.digits


def fake_key(prefix: str, length: int, alphabet: str = KEY_CHARS, seed: int = 0) -> str:
    """A key-shaped test value built at run time: ``prefix`` and ``length`` characters of
    ``alphabet`` from a generator seeded by the arguments (the same value every run). Tests
    exercise real key formats (``AIza...``, ``gsk_...``, ``AKIA...``) without a key-shaped
    literal in the repository, which a secret scanner would rightly flag."""
    rng = random.Random(f"{prefix}|{length}|{alphabet}|{seed}")
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


# --------------------------------------------------------------------------- sockets and threads


def socket_inodes() -> set[str]:
    """The inodes of this process's open sockets (``/proc``, Linux; empty where there is none)."""
    import os

    if not os.path.isdir("/proc/self/fd"):
        return set()
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def client_sockets(port: int) -> int:
    """Open sockets of this process connected *to* ``port`` on loopback, whatever their TCP
    state (connecting included). Reads ``/proc`` (Linux); 0 where there is none."""
    ours = socket_inodes()
    if not ours:
        return 0
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in ours:
                count += 1
    return count


def send_threads() -> int:
    """Live transport worker threads (each sends one request and waits for its headers)."""
    import threading

    return sum(1 for t in threading.enumerate() if t.name == "dshstream-send" and t.is_alive())


#: ``DSHSTREAM_REQUIRE_ENGINES=1`` (``.ci/run``'s main leg, which installs the ``ray`` and
#: ``dask`` extras): a missing Ray or Dask fails its tests instead of skipping them
REQUIRE_ENGINES = os.environ.get("DSHSTREAM_REQUIRE_ENGINES", "") == "1"


def require_engine(module: str, extra: str | None, *, import_now: bool = True) -> Any:
    """The distributed engine ``module`` imported, or skip saying how to install it (fail,
    under ``DSHSTREAM_REQUIRE_ENGINES=1``, for an engine of an ``extra``; pyspark, which
    needs Java, always skips). With ``import_now=False`` (a top-level ``module`` only) it
    is only found, not imported, and ``None`` is returned: a module-level check that
    leaves a slow import to the fixture that needs it."""
    import importlib
    import importlib.util

    import pytest

    try:
        if not import_now:
            if importlib.util.find_spec(module) is None:
                raise ImportError(module)
            return None
        return importlib.import_module(module)
    except ImportError:
        how = f"pip install -e '.[{extra}]'" if extra else f"pip install {module} (and a Java runtime)"
        if REQUIRE_ENGINES and extra:
            pytest.fail(f"DSHSTREAM_REQUIRE_ENGINES=1 but {module} is not installed ({how})", pytrace=False)
        pytest.skip(f"{module} is not installed ({how})", allow_module_level=True)


def default_sigint() -> None:
    """``preexec_fn`` for a child a test interrupts with SIGINT: a shell that starts a
    command in the background (``cmd &`` without job control) makes it ignore SIGINT, and
    an ignored signal stays ignored across ``exec`` — Python would then never raise
    KeyboardInterrupt. The default disposition lets the child's Python install its own."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


class SkippedSleeps:
    """Stands in for a module's ``time`` (``monkeypatch.setattr(module, "time", ...)``):
    the real clock, but each ``sleep`` recorded in :attr:`slept` and returned at once, so
    a backoff schedule is asserted instead of waited out."""

    def __init__(self) -> None:
        import time

        self.monotonic = time.monotonic
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
