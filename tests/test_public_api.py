"""The public surface and the architecture: exports, layering, the requests boundary."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import dshstream

PACKAGE = Path(dshstream.__file__).parent

# Imports only point down this list (same level allowed). DESIGN §1. A unit is a module
# or subpackage of ``_core`` (``_core/wires`` is ``wires``), or a top-level private module.
LAYERS: dict[str, int] = {
    "_version": 1, "types": 1, "errors": 1, "attribution": 1, "dialects": 1, "strict_json": 1,
    "sse": 2, "chunked": 2, "eventstream": 2, "sigv4": 2, "redact": 2, "log": 2, "filters": 2, "http_request": 2, "validate": 2, "response_format": 2, "parts": 2, "media_support": 2, "request": 2,
    "headers": 2, "recovery": 2,
    "classify": 3, "assembler": 3, "contract": 3, "wires": 3, "decode": 3, "pump": 3, "retry": 3,
    "partial_json": 3, "partial_json_reader": 2,
    "_render": 3, "_replay_server": 3,
    "_transport": 4,
    "_adapters": 5, "_service": 5, "_chunk_stream": 5, "_defaults": 5, "_cli": 5, "_demo": 5,
    "_notebook": 5, "_tool_loop": 5, "__main__": 5, "__init__": 6, "_core": 6,
    "records": 2, "_observe": 5, "otel": 6,
}
#: the optional integrations: public modules that only the caller imports (``import
#: dshstream`` never does)
OPTIONAL_PUBLIC_MODULES = ["otel.py"]
#: units that make up the sans-IO core (DESIGN §1): they never import the transport
SANS_IO = {name for name, level in LAYERS.items() if level <= 3 and not name.startswith("_")}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py"))


def _unit(parts: list[str] | tuple[str, ...]) -> str:
    if parts and parts[0] == "_core":
        return parts[1] if len(parts) > 1 else "_core"
    return parts[0]


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = rel.parts[:-1] if rel.parts[-1] == "__init__" and len(rel.parts) > 1 else rel.parts
    return _unit(parts)


def _imports(path: Path) -> set[str]:
    """Units imported (package-internal), plus 'requests' and 'urllib3'."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package_parts = path.relative_to(PACKAGE).parent.parts
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("requests", "urllib3"):
                    found.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if (node.module or "").split(".")[0] in ("requests", "urllib3"):
                    found.add((node.module or "").split(".")[0])
                continue
            base = list(package_parts[: len(package_parts) - (node.level - 1)])
            target = base + (node.module.split(".") if node.module else [])
            if target:
                found.add(_unit(target))
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_requests_is_imported_in_the_transport_package_only() -> None:
    """``requests`` and ``urllib3`` are imported under ``_transport/`` and nowhere else; its
    protocol (``interface.py``) and the pieces both transports share import neither."""
    importers = [p.relative_to(PACKAGE).as_posix() for p in _modules() if {"requests", "urllib3"} & _imports(p)]
    assert importers and all(name.startswith("_transport/") for name in importers), importers
    shared = ["interface.py", "base.py", "answers.py", "watchdog.py", "memory.py"]
    assert not [name for name in shared if f"_transport/{name}" in importers]


def test_imports_only_point_down() -> None:
    violations = []
    for path in _modules():
        top = _top(path)
        level = LAYERS[top]
        for name in _imports(path) - {"requests", "urllib3"}:
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


def test_the_export_table_all_and_the_static_imports_agree() -> None:
    """One name -> module table (``_EXPORTS``) feeds lazy loading and ``__all__``; the
    eager imports and the ``TYPE_CHECKING`` imports name exactly the same pairs."""
    table: dict[str, str] = dshstream._EXPORTS
    assert sorted(dshstream.__all__) == sorted([*table, "__version__"])
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    static: dict[str, str] = {}
    checking: set[str] = set()
    for node in tree.body:
        nodes = node.body if isinstance(node, ast.If) else [node]
        for sub in nodes:
            if isinstance(sub, ast.ImportFrom) and sub.level == 1 and sub.module != "_version":
                for alias in sub.names:
                    static[alias.name] = f".{sub.module}"
                    if isinstance(node, ast.If):
                        checking.add(alias.name)
    assert static == table
    eager: frozenset[str] = dshstream._EAGER
    assert {n for n in table if table[n] not in eager} == checking
    for name, module in table.items():  # the table is true: each name lives where it says
        import importlib

        assert getattr(importlib.import_module(module, "dshstream"), name) is getattr(dshstream, name), name


def test_public_objects_show_their_public_path() -> None:
    assert repr(dshstream.TextDelta) == "<class 'dshstream.TextDelta'>"
    assert dshstream.LlmService.__module__ == "dshstream"
    assert dshstream.RateLimitError.__module__ == "dshstream"
    assert dshstream.decode.__module__ == "dshstream"
    assert all(not name.startswith("_") or name.startswith("__") for name in dshstream.__all__)


def test_every_module_is_private() -> None:
    """Modules are private: the public surface is the package namespace alone, plus the
    optional integrations (``dshstream.otel``), which ``import dshstream`` never loads."""
    public = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.iterdir()
              if p.suffix == ".py" and not p.name.startswith("_")
              and p.name not in OPTIONAL_PUBLIC_MODULES]
    public += [p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "demo_data"))]
    assert public == []


def test_the_sans_io_core_never_reaches_for_the_network() -> None:
    for path in (PACKAGE / "_core").rglob("*.py"):
        assert not ({"requests", "urllib3", "_transport", "_adapters", "_service"} & _imports(path)), path


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
