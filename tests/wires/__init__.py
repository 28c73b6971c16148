"""Tests of each wire translator (dshstream/_core/wires) over the recorded corpus, and the rules
every wire follows (endings, finish words, usage by model, citations)."""
