"""Packaging metadata agrees with the files and with the CI matrix.

The sdist itself is built, unpacked and tested by ``.ci/run`` (the ``sdist`` leg); these
checks are the cheap part that needs no build: the license file the metadata names exists
and is the license it claims, the manifest ships what the tests read, and the declared
minimum versions are the ones the ``legacy`` legs pin. Skipped outside a source checkout
(an installed wheel has no setup.cfg next to it).
"""

from __future__ import annotations

import configparser
import re

import pytest

from helpers import REPOSITORY

ROOT = REPOSITORY
if not (ROOT / "setup.cfg").is_file():
    pytest.skip("not a source tree", allow_module_level=True)


def _setup_cfg() -> configparser.ConfigParser:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    return config


def _requirements() -> dict[str, str]:
    lines = _setup_cfg()["options"]["install_requires"].split("\n")
    found = {}
    for line in lines:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*>=\s*([0-9.]+)\s*", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def test_license_file_exists_and_matches_the_metadata() -> None:
    metadata = _setup_cfg()["metadata"]
    assert metadata["license"] == "MIT"
    assert metadata.get("author"), "author metadata"
    files = metadata["license_files"].split()
    assert files == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text


def test_manifest_ships_what_the_tests_read() -> None:
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split("\n")
    directives = {line.strip() for line in manifest if line.strip() and not line.lstrip().startswith("#")}
    # tests/helpers.py, tests/fixtures/ and every other file under tests/; the examples
    # that tests/surface/test_examples.py runs; the license
    assert {"graft tests", "graft examples"} <= directives
    assert any(line.startswith("include ") and "LICENSE" in line.split() for line in directives)
    assert (ROOT / "tests" / "helpers.py").is_file() and (ROOT / "tests" / "fixtures").is_dir()


def test_declared_minimums_are_the_pins_the_legacy_legs_test() -> None:
    minimums = _requirements()
    assert minimums == {"requests": "2.28", "urllib3": "1.26"}
    if not (ROOT / ".ci" / "run").is_file():
        pytest.skip("no .ci/run (an unpacked sdist)")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    tox = (ROOT / "tox.ini").read_text(encoding="utf-8")
    for name, version in minimums.items():
        pin = f"{name}=={version}.*"
        assert pin in ci, f".ci/run does not test {pin}"
        assert pin in tox, f"tox.ini does not test {pin}"


def _ci_array(text: str, name: str) -> list[str]:
    match = re.search(rf"^{name}=\(([^)]*)\)", text, re.M)
    assert match, f".ci/run has no {name}"
    return match.group(1).split()


def test_the_test_files_ci_and_tox_name_exist_and_the_legacy_subsets_agree() -> None:
    if not (ROOT / ".ci" / "run").is_file():
        pytest.skip("no .ci/run (an unpacked sdist)")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(ROOT / "tox.ini", encoding="utf-8")
    legacy = _ci_array(ci, "LEGACY_TESTS")
    named = [*legacy, *_ci_array(ci, "SDIST_TESTS")]
    assert named and not [path for path in named if not (ROOT / path).is_file()]
    assert tox["legacy"]["tests"].split() == legacy


def test_the_files_the_loadfile_order_names_exist() -> None:
    """tests/conftest.py's schedule hints name real test files (a stale name would only
    cost balance, not correctness, so this keeps them honest)."""
    import conftest

    named = {*conftest.LONGEST_FIRST, *conftest.SAME_WORKER, *conftest.SAME_WORKER.values()}
    assert not [name for name in sorted(named) if not (ROOT / name).is_file()]
    assert set(conftest.SAME_WORKER.values()) <= set(conftest.LONGEST_FIRST)
