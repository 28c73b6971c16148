"""Wire translators (sans-IO): one per provider stream format. Each turns decoded SSE
events into dshstream chunks and obeys the adapter contract (DESIGN §2); what they share
lives once, one concern per module: the translator base (the one failure path, the
endings) in :mod:`dshstream._core.wires.translator`; the chunk writer (block index
allocation, deferring usage and finish to the end, truncation marking, the replay hook
every ending asks) in :mod:`dshstream._core.wires.writer`; the fast delta constructors in
:mod:`dshstream._core.wires.deltas`; typed reads of wire JSON in
:mod:`dshstream._core.wires.json_values`; usage records in
:mod:`dshstream._core.wires.usage`; the content blocks the Anthropic and Converse wires
hold for replay in :mod:`dshstream._core.wires.replay_blocks`; a model's parallel dispatch
wrapper, recognised and expanded, in :mod:`dshstream._core.wires.parallel_wrapper`."""
