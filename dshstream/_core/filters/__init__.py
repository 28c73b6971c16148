"""Incremental text filters (sans-IO): think tags, reasoning spills, verbatim tool calls,
truncated-JSON repair, and the pipeline that chains the first three for a chat wire
(:mod:`dshstream._core.filters.pipeline`). Each is linear-time and bounded in memory."""
