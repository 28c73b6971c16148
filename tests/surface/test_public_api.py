"""The public surface and the architecture: exports, layering, the requests boundary."""

from __future__ import annotations

import ast
import functools
import importlib
import pickle
import re
import subprocess
import sys
import types
import typing
from pathlib import Path

import pytest

from helpers import REPOSITORY

import dshstream
from dshstream import _exports

PACKAGE = Path(dshstream.__file__).parent

# Imports only point down this list (same level allowed). DESIGN §1. A unit is a module
# or subpackage of ``_core`` (``_core/wires`` is ``wires``), or a top-level private module.
LAYERS: dict[str, int] = {
    "_version": 1, "types": 1, "errors": 1, "attribution": 1, "dialects": 1, "strict_json": 1, "provider_names": 1,
    "sse": 2, "chunked": 2, "ws_frames": 2, "ws_handshake": 2, "eventstream": 2, "sigv4": 2, "redact": 2, "log": 2, "closing": 2, "filters": 2, "http_request": 2, "multipart": 2, "jsonl": 2, "validate": 2, "response_format": 2, "parts": 2, "media_support": 2, "request": 2,
    "prompt_cache": 2,
    "headers": 2, "recovery": 2, "rate_limits": 2,
    "messages_dialects": 1,
    "classify": 3, "assembler": 3, "contract": 3, "wires": 3, "decode": 3, "pump": 3, "retry": 3,
    "partial_json": 3, "partial_json_reader": 2,
    "_render": 3, "_replay_server": 3, "_rate_limited_server": 3,
    "_transport": 4,
    "_adapters": 5, "_service": 5, "_chunk_stream": 5, "_defaults": 5, "_cli": 5, "_demo": 5,
    "_notebook": 5, "_tool_loop": 5, "__main__": 5, "__init__": 6, "_core": 6,
    "records": 2, "_observe": 5, "otel": 6,
    "chain": 3, "portable": 3, "_fallback": 5,  # fallback chains: the values, the portable history, the runner
    "_exports": 1, "namespace": 6,  # the public sub-namespaces (dshstream/sansio.py ...)
    "_cassettes": 5, "_web": 5, "_batch": 5, "_pytest_plugin": 6,
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
    if len(parts) == 1 and parts[0] in _exports.NAMESPACES:
        return "namespace"  # dshstream/errors.py, not _core/errors.py
    return parts[0]


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = rel.parts[:-1] if rel.parts[-1] == "__init__" and len(rel.parts) > 1 else rel.parts
    return _unit(parts)


@functools.cache  # each module parsed once for the layer tests below
def _imports(path: Path) -> frozenset[str]:
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
    return frozenset(found)


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


def test_every_module_is_private_but_the_namespaces() -> None:
    """Modules are private but the public namespaces (the package root and its named
    sub-namespaces) and the optional integrations (``dshstream.otel``), which ``import
    dshstream`` never loads."""
    namespaces = [f"{home}.py" for home in _exports.NAMESPACES]
    public = [p.relative_to(PACKAGE).as_posix() for p in PACKAGE.iterdir()
              if p.suffix == ".py" and not p.name.startswith("_")
              and p.name not in OPTIONAL_PUBLIC_MODULES + namespaces]
    public += [p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "demo_data"))]
    assert public == []
    assert all((PACKAGE / name).is_file() for name in namespaces)


def test_the_sans_io_core_never_reaches_for_the_network() -> None:
    for path in (PACKAGE / "_core").rglob("*.py"):
        assert not ({"requests", "urllib3", "_transport", "_adapters", "_service"} & _imports(path)), path


def test_py_typed_marker_ships() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_no_public_name_is_shadowed_by_a_submodule() -> None:
    """Importing a submodule sets it as a package attribute: a submodule named like a
    public function (``decode``, ``redact``, ``stream``) would replace that function, in
    the package root or in any namespace."""

    code = (
        "import importlib, pkgutil, types, dshstream\n"
        "for m in pkgutil.walk_packages(dshstream.__path__, 'dshstream.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "spaces = [dshstream] + [getattr(dshstream, n) for n in dshstream._exports.NAMESPACES]\n"
        "bad = [n for s in spaces for n in s.__all__ if isinstance(getattr(s, n), types.ModuleType)]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- the public surface

#: every public namespace: ``""`` is the package root
HOMES = ["", *_exports.NAMESPACES]
#: what ``import dshstream`` imports of the package: the vocabulary and the surface table
VOCABULARY = {"dshstream", "dshstream._version", "dshstream._core", "dshstream._core.types",
              "dshstream._core.errors", "dshstream._exports"}
#: public names documented by their docstrings alone (reference): neither README.rst,
#: CONTRIBUTING.rst nor an example names them. Keep it short; it is checked both ways.
REFERENCE_ONLY = {"__version__"}


def _namespace(home: str) -> types.ModuleType:
    return importlib.import_module(_exports.qualified(home))


def _public() -> dict[tuple[str, str], object]:
    """(home, name) -> value, for every public name (each loaded)."""
    return {(home, name): getattr(_namespace(home), name) for home in HOMES for name in _namespace(home).__all__}


def _run(code: str, *options: str) -> str:
    proc = subprocess.run([sys.executable, *options, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_package_root_is_small() -> None:
    assert len(dshstream.__all__) <= 50, "the root keeps the names of everyday use; the rest go to a namespace"
    assert "stream" in dshstream.__all__ and "LlmService" in dshstream.__all__


@pytest.mark.parametrize("home", HOMES, ids=lambda home: _exports.qualified(home))
def test_each_namespace_exports_exactly_its_all(home: str) -> None:
    module = _namespace(home)
    assert module.__all__ == sorted(set(module.__all__)) and module.__all__
    assert module.__doc__ and len(module.__doc__) > 200, "a namespace's docstring is its contract"
    for name in module.__all__:  # every name loads (and is then cached in the module)
        assert getattr(module, name) is not None, name
    names = {name for name in module.__all__ if not name.startswith("_")}
    exported = {name for name, value in vars(module).items()
                if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert exported == names
    shown = {name for name in dir(module) if not name.startswith("_")}
    assert shown == names | (set(_exports.NAMESPACES) if not home else set())
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        getattr(module, "NoSuchName")


def test_no_name_is_public_in_two_places() -> None:
    names = [name for home in HOMES for name in _namespace(home).__all__]
    assert sorted({name for name in names if names.count(name) > 1}) == []
    assert not set(names) & set(_exports.NAMESPACES)
    values = [value for value in _public().values() if isinstance(value, (type, types.FunctionType))]
    assert len({id(value) for value in values}) == len(values), "one object, one public name"


@pytest.mark.parametrize("home", HOMES, ids=lambda home: _exports.qualified(home))
def test_the_static_imports_name_what_the_surface_table_lists(home: str) -> None:
    """``_exports.SURFACE`` drives ``__all__`` and lazy loading; the namespace module's
    static imports (``X as X``, for type checkers) name the same pairs."""
    path = PACKAGE / ("__init__.py" if not home else f"{home}.py")
    static: dict[str, tuple[str, str]] = {}
    private: dict[str, tuple[str, str]] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                visit(node.body)
            elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                for alias in node.names:
                    bound = alias.asname or alias.name
                    if bound.startswith("_") and bound != "__version__":
                        private[bound] = (f".{node.module}", alias.name)
                    else:
                        assert alias.asname == alias.name, f"{path.name}: {alias.name} must be imported 'as' itself"
                        static[bound] = (f".{node.module}", alias.name)
            elif (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                  and isinstance(node.value, ast.Name) and node.value.id in private):
                static[node.target.id] = private[node.value.id]  # a renamed type alias

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    table = {name: where for (where_home, name), where in _exports._WHERE.items() if where_home == home}
    assert static == table


def test_each_public_name_comes_from_its_private_module() -> None:
    """The table is true: each name is defined where it says (a module that merely imports
    it would leave it its private path), and is in that module's ``__all__`` when it has one."""
    for (home, name), (module_name, private) in _exports._WHERE.items():
        module = importlib.import_module(module_name, "dshstream")
        assert getattr(module, private) is getattr(_namespace(home), name), name
        declared = getattr(module, "__all__", None)
        assert declared is None or private in declared, f"{module_name}.__all__ lacks {private}"


def test_public_classes_and_functions_carry_their_public_path() -> None:
    for (home, name), value in _public().items():
        if isinstance(value, (type, types.FunctionType)):
            assert (value.__module__, value.__qualname__) == (_exports.qualified(home), name)
            assert pickle.loads(pickle.dumps(value)) is value  # pickled by that path
    assert repr(dshstream.TextDelta) == "<class 'dshstream.TextDelta'>"
    assert repr(dshstream.LlmService) == "<class 'dshstream.LlmService'>"
    assert repr(dshstream.sansio.SSEDecoder) == "<class 'dshstream.sansio.SSEDecoder'>"
    assert dshstream.sansio.decode.__module__ == "dshstream.sansio"
    assert dshstream.errors.ServerError.__module__ == "dshstream.errors"


def test_values_pickle_by_their_public_paths() -> None:
    from dshstream.adapters import ModelInfo, RetryPolicy
    from dshstream.errors import ServerError
    from dshstream.observe import FirstChunkRecord
    from dshstream.sansio import ServerSentEvent
    from dshstream.testing import Route

    failure = dshstream.LlmFailure(code="SERVER", message="p: server error (SERVER, HTTP 500)",
                                   category="provider_overloaded", retryable=True, status=500)
    values: list[object] = [
        dshstream.TextDelta(0, "hi"), dshstream.Finish(dshstream.FinishReason("error", failure=failure)),
        ServerSentEvent(event="message", data="{}"), ModelInfo(id="m", name="M"), RetryPolicy(max_retries=1),
        Route(body=b"data: {}\n\n"), FirstChunkRecord("s1", "p", "m", 0.1, "TextDelta"),
    ]
    for value in values:
        data = pickle.dumps(value)
        assert f"{type(value).__module__}".encode() in data and b"_core" not in data, type(value)
        assert pickle.loads(data) == value
    error = ServerError(failure)
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is ServerError and copy.failure == failure


def test_a_value_shows_its_public_path_however_it_was_reached() -> None:
    """The vocabulary's classes get their public paths when the package is imported: an
    error raised before ``dshstream.errors`` was ever imported shows (and pickles as)
    ``dshstream.errors.ServerError`` all the same. Loading a name publishes every module
    imported with it: the records an observer hears, with the service."""
    code = (
        "import pickle, sys, dshstream\n"
        "from dshstream._core.errors import error_for, make_failure\n"
        "error = error_for(make_failure('SERVER', 'p: server error (SERVER, HTTP 500)', status=500))\n"
        "print(type(error).__module__, 'dshstream.errors' in sys.modules)\n"
        "copy = pickle.loads(pickle.dumps(error))\n"
        "print(type(copy) is type(error), type(copy).__module__)\n"
        "dshstream.LlmService\n"
        "records = sys.modules['dshstream._core.records']\n"
        "print(records.StreamStarted.__module__, 'dshstream.observe' in sys.modules)\n"
    )
    assert _run(code).split() == ["dshstream.errors", "False", "True", "dshstream.errors",
                                  "dshstream.observe", "False"]


@pytest.mark.parametrize("namespace", ["dshstream", *(f"dshstream.{home}" for home in _exports.NAMESPACES)])
def test_importing_a_namespace_imports_only_the_vocabulary(namespace: str) -> None:
    """``import dshstream`` imports no adapter, no service, no transport and no ``requests``
    (nor any other name's module), and importing a namespace imports nothing more."""
    code = (f"import sys, {namespace}\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dshstream', 'requests', 'urllib3')))")
    assert set(eval(_run(code))) == VOCABULARY | {namespace}


def test_everyday_use_warns_about_nothing() -> None:
    """Every public name loads with deprecation warnings as errors (only the moved names warn)."""
    code = "import dshstream\ndshstream.stream\n" + "".join(
        f"import {_exports.qualified(home)} as m\n[getattr(m, n) for n in m.__all__]\n" for home in HOMES)
    _run(code, "-W", "error::DeprecationWarning")


MOVED = sorted(name for name in _exports.FORMER_ROOT if name not in dshstream.__all__)


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_name_still_resolves_from_the_root_with_a_warning(name: str) -> None:
    new = _exports.RENAMED.get(name, name)
    (home,) = [home for home in _exports.NAMESPACES if new in _namespace(home).__all__]
    with pytest.warns(DeprecationWarning) as caught:
        value = getattr(dshstream, name)
    assert value is getattr(_namespace(home), new)
    (warning,) = caught
    assert f"dshstream.{home}.{new} (from dshstream.{home} import {new})" in str(warning.message)
    assert warning.filename == __file__, "the warning points at the caller"
    assert name not in dshstream.__all__ and name not in dir(dshstream)
    assert name not in vars(dshstream), "never cached: every use warns"


def test_the_moved_names_resolve_in_a_from_import_and_in_old_pickles() -> None:
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=r"dshstream\.sansio\.SSEDecoder") as caught:
        exec("from dshstream import SSEDecoder", namespace)  # noqa: S102 - old code
    assert namespace["SSEDecoder"] is dshstream.sansio.SSEDecoder and caught[0].filename == "<string>"
    old_pickle = b"\x80\x04\x95\x18\x00\x00\x00\x00\x00\x00\x00\x8c\tdshstream\x94\x8c\nSSEDecoder\x94\x93\x94."
    with pytest.warns(DeprecationWarning):
        assert pickle.loads(old_pickle) is dshstream.sansio.SSEDecoder  # pickled when it was dshstream.SSEDecoder


def test_every_former_root_name_is_still_reachable() -> None:
    assert len(_exports.FORMER_ROOT) == 128, "the flat layout's root names: a record, never edited"
    # root names added after the flat layout: fallback chains (issue 30), prompt caching (issue 33)
    new_root = {"Target", "CachePoint"}
    assert set(dshstream.__all__) - _exports.FORMER_ROOT == new_root, "a new root name? then add it here"
    assert set(_exports.RENAMED) <= _exports.FORMER_ROOT
    assert not set(_exports.RENAMED.values()) & _exports.FORMER_ROOT
    every = {name for home in HOMES for name in _namespace(home).__all__}
    assert {_exports.RENAMED.get(name, name) for name in _exports.FORMER_ROOT} <= every


def test_the_renamed_names_say_what_they_are() -> None:
    from dshstream.errors import CredentialOwner, may_view_detail
    from dshstream.observe import FirstChunkRecord, ObserverRecord

    assert typing.get_args(CredentialOwner) == ("server", "personal", "subscription")
    assert may_view_detail("personal", viewer_owns_key=True)
    assert FirstChunkRecord.__name__ == "FirstChunkRecord" and FirstChunkRecord in typing.get_args(ObserverRecord)
    assert repr(FirstChunkRecord("s1", "p", "m", 0.25, "TextDelta")).startswith("FirstChunkRecord(stream_id='s1'")
    for old in _exports.RENAMED:
        assert all(old not in _namespace(home).__all__ for home in HOMES)


def test_the_namespaces_are_attributes_of_the_package() -> None:
    for home in _exports.NAMESPACES:
        assert getattr(dshstream, home) is _namespace(home)


def _documents() -> str:
    files = [REPOSITORY / "README.rst", REPOSITORY / "CONTRIBUTING.rst", *sorted((REPOSITORY / "examples").glob("*.py"))]
    return "\n".join(path.read_text(encoding="utf-8") for path in files)


def test_every_public_name_is_documented() -> None:
    """In README.rst, CONTRIBUTING.rst or an example — or listed as reference-only, and then
    documented by a docstring (its own, or its namespace's)."""
    text = _documents()
    mentioned = {name for home in HOMES for name in _namespace(home).__all__
                 if re.search(rf"(?<![\w]){re.escape(name)}(?!\w)", text)}
    public = {name for home in HOMES for name in _namespace(home).__all__}
    assert sorted(public - mentioned - REFERENCE_ONLY) == [], "document it, or list it in REFERENCE_ONLY"
    assert sorted(REFERENCE_ONLY - public) == [], "a stale REFERENCE_ONLY entry"
    assert sorted(REFERENCE_ONLY & mentioned) == [], "documented now: drop it from REFERENCE_ONLY"
    for (home, name), value in _public().items():
        if name in REFERENCE_ONLY and name != "__version__":
            assert (getattr(value, "__doc__", None) or "").strip() or name in (_namespace(home).__doc__ or ""), name
