"""Tests of the adapters (dshstream/_adapters) over loopback HTTP: the requests each one builds,
credentials, structured output, media, failures, LiteLLM."""
