"""The sans-IO core: bytes, strings and dicts in, typed values out.

Contract: nothing in this subpackage opens a socket, starts a thread, sleeps, reads the
clock or reads an environment variable (locks and a caller's cancel event are all it knows
of threads); none of it imports ``requests``, the
transport, the adapters or the service (a test enforces it). Every parser here is
incremental (``feed``/``close``), linear in its input and bounded in memory, so every
recorded stream can be replayed without a network and every piece tested with a byte
literal. Layers inside (imports only point down): types, errors, attribution, dialects,
strict JSON; then SSE framing, redaction, logging, validation, media parts, requests and
filters (reading a media file happens only when a caller asks: ``MediaPart.from_path``); then
classification, wires, the decoder, the pump, the retry policy, the assembler and the
contract checker.
"""
