"""Incremental text filters (sans-IO): think tags, reasoning spills, verbatim tool calls,
truncated-JSON repair. Each is linear-time and bounded in memory."""
