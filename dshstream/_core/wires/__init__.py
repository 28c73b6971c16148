"""Wire translators (sans-IO): one per provider stream format. Each turns decoded SSE
events into dshstream chunks and obeys the adapter contract (DESIGN §2); what they share
(block index allocation, deferring usage and finish to the end, truncation marking, the
one failure path and the replay hook every ending asks) lives once, in
:mod:`dshstream._core.wires.base`."""
