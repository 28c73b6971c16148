"""The public surface and the architecture: exports, layering, the requests boundary."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import dshstream

PACKAGE = Path(dshstream.__file__).parent

# Imports only point down this list (same level allowed). DESIGN §1.
LAYERS: dict[str, int] = {
    "_version": 1, "types": 1, "errors": 1, "attribution": 1, "dialects": 1, "strict_json": 1,
    "sse": 2, "redaction": 2, "log": 2, "filters": 2, "headers": 2, "http_request": 2, "validate": 2, "request": 2,
    "classify": 3, "assembler": 3, "contract": 3, "wires": 3, "decoding": 3, "pump": 3, "retry": 3, "render": 3,
    "replay_server": 3,
    "transport": 4,
    "adapters": 5, "service": 5, "chunk_stream": 5, "defaults": 5, "cli": 5, "demo": 5, "notebook": 5,
    "__main__": 5, "__init__": 6,
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return rel.parts[0]


def _imports(path: Path) -> set[str]:
    """Top-level names imported: package-internal as their first segment, plus 'requests'."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package_parts = path.relative_to(PACKAGE).parent.parts
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "requests":
                    found.add("requests")
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if (node.module or "").split(".")[0] == "requests":
                    found.add("requests")
                continue
            base = list(package_parts[: len(package_parts) - (node.level - 1)])
            target = base + (node.module.split(".") if node.module else [])
            if target:
                found.add(target[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_requests_is_imported_in_exactly_one_module() -> None:
    importers = [p.relative_to(PACKAGE).as_posix() for p in _modules() if "requests" in _imports(p)]
    assert importers == ["transport.py"]


def test_imports_only_point_down() -> None:
    violations = []
    for path in _modules():
        top = _top(path)
        level = LAYERS[top]
        for name in _imports(path) - {"requests"}:
            if name in LAYERS and LAYERS[name] > level:
                violations.append(f"{path.relative_to(PACKAGE)} (L{level}) imports {name} (L{LAYERS[name]})")
    assert violations == []


def test_every_module_is_placed_in_a_layer_and_has_a_docstring() -> None:
    for path in _modules():
        assert _top(path) in LAYERS, path
        if path.name != "__init__.py" or path.parent == PACKAGE:
            assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), path


def test_all_is_sorted_complete_and_importable() -> None:
    assert dshstream.__all__ == sorted(dshstream.__all__)
    for name in dshstream.__all__:
        assert getattr(dshstream, name) is not None, name


def test_import_does_not_pull_in_requests() -> None:
    code = "import sys, dshstream; print('requests' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_py_typed_marker_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    """Importing a submodule sets it as a package attribute: a submodule named like a
    public function (``decode``, ``redact``, ``stream``) would replace that function."""

    code = (
        "import importlib, pkgutil, types, dshstream\n"
        "for m in pkgutil.walk_packages(dshstream.__path__, 'dshstream.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "bad = [n for n in dshstream.__all__ if isinstance(getattr(dshstream, n), types.ModuleType)]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
