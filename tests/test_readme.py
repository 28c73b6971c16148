"""README.rst can't drift from the API: every Python example in it compiles, and every
name it takes from ``dshstream`` is a public one.

Rules checked, per ``.. code-block:: python`` block of README.rst:

1. the block compiles (``compile()``; nothing is run, so no network and no key);
2. every name imported with ``from dshstream import ...`` is in ``dshstream.__all__``;
3. every ``dshstream.NAME`` attribute read (after ``import dshstream``) is in
   ``dshstream.__all__``;
4. every name imported from a public submodule (``from dshstream.otel import ...``)
   exists there, and no example imports a private module (``dshstream._core...``).

Beside the examples: the Layout section names every module of the package, every
``examples/*.py`` the README names exists, and the README parses as reStructuredText
without a warning (when docutils is installed).
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import textwrap
from pathlib import Path

import pytest

import dshstream

README = Path(__file__).parent.parent / "README.rst"
_DIRECTIVE = re.compile(r"^\.\. code-block:: python[ \t]*$")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, dedented source) of each ``.. code-block:: python`` body."""
    lines = text.splitlines()
    blocks: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        if not _DIRECTIVE.match(lines[i]):
            i += 1
            continue
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        start = i
        body: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
            body.append(lines[i])
            i += 1
        blocks.append((start + 1, textwrap.dedent("\n".join(body)).strip("\n") + "\n"))
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_examples() -> None:
    # the extraction itself is checked: a README reformatted out of its reach would make
    # every other test here pass vacuously
    assert len(BLOCKS) >= 25
    assert all(source.strip() for _, source in BLOCKS)


def test_block_extraction_keeps_blank_lines_and_stops_at_the_next_paragraph() -> None:
    text = "Intro\n\n.. code-block:: python\n\n    a = 1\n\n    b = 2\n\nAfter.\n\n.. code-block:: python\n\n    c = 3\n"
    assert python_blocks(text) == [(5, "a = 1\n\nb = 2\n"), (13, "c = 3\n")]


@pytest.mark.parametrize(("line", "source"), BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_example_compiles_and_uses_only_public_names(line: int, source: str) -> None:
    tree = ast.parse(source, f"README.rst:{line}")
    compile(tree, f"README.rst:{line}", "exec", dont_inherit=True)
    public = set(dshstream.__all__)
    missing: list[str] = []
    package_aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "dshstream":
                    package_aliases.add(alias.asname or "dshstream")
                elif alias.name.startswith("dshstream."):
                    assert not alias.name.split(".")[1].startswith("_"), f"private module {alias.name}"
                    importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "dshstream":
            assert node.level == 0
            if node.module == "dshstream":
                missing += [a.name for a in node.names if a.name not in public]
            else:
                assert not node.module.split(".")[1].startswith("_"), f"private module {node.module}"
                module = importlib.import_module(node.module)
                missing += [f"{node.module}.{a.name}" for a in node.names if not hasattr(module, a.name)]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in package_aliases
            and node.attr not in public
        ):
            missing.append(f"dshstream.{node.attr}")
    assert not missing, f"README.rst:{line} uses names dshstream does not export: {missing}"


def test_the_layout_lists_every_module() -> None:
    text = README.read_text(encoding="utf-8")
    layout = text[text.index("\nLayout\n======\n") :]
    package = Path(dshstream.__file__).parent
    modules = sorted(p for p in package.rglob("*.py") if p.name != "__init__.py" or p.parent == package)
    missing = [str(p.relative_to(package)) for p in modules if not re.search(rf"(?<![\w.]){re.escape(p.name)}\b", layout)]
    assert not missing, f"README.rst's Layout section does not list {missing}"


def test_every_example_the_readme_names_exists() -> None:
    root = README.parent
    named = set(re.findall(r"examples/([\w.]+\.py)", README.read_text(encoding="utf-8")))
    assert named
    assert not [name for name in sorted(named) if not (root / "examples" / name).is_file()]


def test_the_readme_is_valid_restructuredtext() -> None:
    docutils_core = pytest.importorskip("docutils.core")
    warnings = io.StringIO()
    docutils_core.publish_doctree(
        README.read_text(encoding="utf-8"), settings_overrides={"warning_stream": warnings, "report_level": 2}
    )
    assert warnings.getvalue() == ""
