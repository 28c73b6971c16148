"""Tests of the sans-IO core (dshstream/_core): framing, decoding, filters, JSON, classification,
redaction, retry and the values a caller builds."""
