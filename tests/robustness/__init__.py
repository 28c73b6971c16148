"""Robustness across the layers: the whole corpus split anywhere, network faults, fuzzing, trust
boundaries, secrets echoed by a server."""
