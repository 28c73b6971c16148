"""The public surface and the distribution: exports and layers, README and examples, packaging,
vendoring."""
