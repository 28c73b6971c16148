"""The README's "On Ray / Spark / Dask" recipes, as code a test runs against a loopback
server: each block pointed at the keyless ``vllm`` provider (``VLLM_BASE_URL``), a
scratch checkpoint folder and 40 rows instead of 1,000. Every replaced text must be in the
block, so a recipe that drifts fails its test instead of running something else."""

from __future__ import annotations

from pathlib import Path

from surface.test_readme import README, examples

SECTION = "On Ray / Spark / Dask"


def recipe(marker: str, checkpoint_dir: Path) -> str:
    """The source of the section's block that contains ``marker``, ready to run."""
    blocks = [e.source for e in examples(README.read_text(encoding="utf-8")) if e.section == SECTION and marker in e.source]
    assert len(blocks) == 1, f"one block of {SECTION!r} should contain {marker!r}"
    source = blocks[0]
    for choices in (
        # keyword arguments (run_partition) or constructor kwargs (RayMapper)
        (('provider="openai", model="gpt-4o-mini"', 'provider="vllm", model="m"'),
         ('"provider": "openai", "model": "gpt-4o-mini"', '"provider": "vllm", "model": "m"')),
        (('"/mnt/shared/answers"', repr(str(checkpoint_dir))),),
        (("range(1000)", "range(40)"),),
    ):
        found = next(((old, new) for old, new in choices if old in source), None)
        assert found is not None, f"the recipe no longer contains {choices[0][0]!r}"
        source = source.replace(*found)
    return source
