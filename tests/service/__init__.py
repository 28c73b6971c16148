"""Tests of the service layer: LlmService, ChunkStream, observers, OpenTelemetry, the tool loop,
default_service()."""
