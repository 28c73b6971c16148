"""A vendored copy (``legacyapp._vendor.dshstream``) works on its own and never touches an
installed ``dshstream``: no absolute self-import, package data read from its own files,
loggers rooted at its own name.

The package directory is copied into a temporary ``legacyapp/_vendor/dshstream`` and
exercised in subprocesses (a fresh interpreter, so this test process's imports cannot mask
a leak), in two situations:

- ``next-to``: the installed ``dshstream`` is importable and imported first;
- ``alone``: ``import dshstream`` is made impossible (``sys.modules["dshstream"] = None``), as
  in an application that only has the vendored copy.

Each runs the demo (every transcript must come from the vendored ``demo_data``), a replay of
a recorded fixture through the vendored CLI, and a loopback stream through the vendored
``LlmService``; then it checks that every vendored module and logger lives under the
vendored name and that no ``dshstream.*`` module was imported on the vendored copy's behalf.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import FIXTURES

import dshstream
from dshstream._demo import DEMOS

PACKAGE_DIR = Path(dshstream.__file__).resolve().parent
FIXTURE = FIXTURES / "anthropic" / "thinking_then_tool_use.sse"
VENDORED = "legacyapp._vendor.dshstream"

_PROBE = r'''
import contextlib, importlib, io, json, logging, os, sys
from importlib import resources

mode, root, fixture = sys.argv[1:4]
report = {"mode": mode}
if mode == "alone":
    sys.modules["dshstream"] = None  # any absolute self-import now fails
else:
    import dshstream as installed  # the installed copy, loaded first on purpose
    report["installed_file"] = installed.__file__
before = {name for name in sys.modules if name == "dshstream" or name.startswith("dshstream.")}

# Record every anchor the package data is looked up with.
anchors = []
_files = resources.files
def files(anchor):
    found = _files(anchor)
    anchors.append([anchor if isinstance(anchor, str) else anchor.__name__, str(found)])
    return found
resources.files = files

vendored = importlib.import_module("legacyapp._vendor.dshstream")
demo = importlib.import_module("legacyapp._vendor.dshstream._demo")
cli = importlib.import_module("legacyapp._vendor.dshstream._cli")
log = importlib.import_module("legacyapp._vendor.dshstream._core.log")
replay_server = importlib.import_module("legacyapp._vendor.dshstream._replay_server")

# 1. The demo, through the command line's entry point.
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    report["demo_rc"] = cli.main(["demo"])
report["demo_out"] = out.getvalue()
report["demo_err"] = err.getvalue()
report["anchors"] = anchors

# 2. A replay of a recorded transcript.
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    report["replay_rc"] = cli.main(["replay", fixture, "--format", "jsonl"])
report["replay_out"] = out.getvalue()

# 3. A loopback stream through the vendored service.
body = (
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
    b'"delta":{"content":"vendored hello"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: [DONE]\n\n'
)
with replay_server.ReplayServer({"/v1/": replay_server.Route(body=body)}) as server:
    service = vendored.LlmService(check_contract=True)
    service.register_adapter(["local"], vendored.OpenAIChatAdapter(base_url=server.url + "/v1", dialect="llamacpp"))
    options = vendored.GenerateOptions(provider="local", model="m", messages=(vendored.Message.user("hi"),))
    with service.stream(options) as stream:
        chunks = list(stream)
        result = stream.result()
report["stream_text"] = result.text
report["stream_finish"] = result.finish.kind
report["chunk_modules"] = sorted({type(c).__module__ for c in chunks})

# 4. Where everything lives.
report["modules"] = {
    name: getattr(module, "__file__", None)
    for name, module in sys.modules.items()
    if module is not None and name.startswith("legacyapp._vendor.dshstream")
}
report["leaked_modules"] = sorted(
    name for name in sys.modules
    if (name == "dshstream" or name.startswith("dshstream.")) and name not in before
    and sys.modules[name] is not None
)
report["root_logger"] = log.ROOT_LOGGER_NAME
report["loggers"] = sorted(
    name for name, logger in logging.root.manager.loggerDict.items()
    if isinstance(logger, logging.Logger)
    and any(isinstance(f, log.RedactingFilter) for f in logger.filters)
)
print(json.dumps(report))
'''


@pytest.fixture(scope="module")
def vendor_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("vendor")
    app = root / "legacyapp"
    (app / "_vendor").mkdir(parents=True)
    (app / "__init__.py").write_text('"""An application that vendors dshstream."""\n')
    (app / "_vendor" / "__init__.py").write_text("")
    shutil.copytree(
        PACKAGE_DIR,
        app / "_vendor" / "dshstream",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    return root


def _probe(root: Path, mode: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "NO_COLOR")}
    env["PYTHONPATH"] = str(root)
    env["NO_COLOR"] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, str(root), str(FIXTURE)],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    report: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


def test_no_absolute_self_reference_in_the_sources() -> None:
    """Imports are relative; package data and loggers are found from ``__name__``."""
    offenders = []
    patterns = (
        re.compile(r"""resources\.files\(\s*["']"""),
        re.compile(r"""import_module\(\s*["']dshstream"""),
        re.compile(r"""logging\.getLogger\(\s*["']dshstream"""),
    )
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        # import statements, read from the syntax tree: a usage example in a docstring
        # (``import dshstream``, as a user writes it) is not a self-reference
        for node in ast.walk(ast.parse(text)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [
                f"{path.relative_to(PACKAGE_DIR)}: import {name}"
                for name in names
                if name == "dshstream" or name.startswith("dshstream.")
            ]
        for pattern in patterns:
            for match in pattern.finditer(text):
                offenders.append(f"{path.relative_to(PACKAGE_DIR)}: {match.group(0).strip()}")
    assert not offenders, offenders


@pytest.mark.parametrize("mode", ["next-to", "alone"])
def test_vendored_copy_runs_demo_replay_and_a_loopback_stream(vendor_root: Path, mode: str) -> None:
    report = _probe(vendor_root, mode)
    vendored_dir = vendor_root / "legacyapp" / "_vendor" / "dshstream"

    if mode == "next-to":
        installed_file = Path(str(report["installed_file"])).resolve()
        assert vendor_root not in installed_file.parents, "the installed copy must be a different one"

    # The demo: every stream completed, from the vendored data.
    assert report["demo_rc"] == 0, report["demo_err"]
    assert f"{len(DEMOS)}/{len(DEMOS)} streams completed" in str(report["demo_out"])
    # (other libraries, certifi for one, look up their own data the same way)
    lookups = [(str(a), Path(f).resolve()) for a, f in report["anchors"]]  # type: ignore[attr-defined]
    ours = [(a, f) for a, f in lookups if "dshstream" in a or f.name == "dshstream"]
    assert len(ours) >= len(DEMOS), f"the demo did not read its data through importlib.resources: {lookups}"
    assert all(a == VENDORED and f == vendored_dir.resolve() for a, f in ours), ours

    # The replay: the same chunks the installed copy gives.
    assert report["replay_rc"] == 0
    expected = subprocess.run(
        [sys.executable, "-m", "dshstream", "replay", str(FIXTURE), "--format", "jsonl"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert report["replay_out"] == expected and expected

    # The loopback stream, typed with the vendored chunk classes.
    assert report["stream_text"] == "vendored hello"
    assert report["stream_finish"] == "stop"
    assert report["chunk_modules"] == [VENDORED]  # public classes carry the package's own name

    # Modules, loggers: all under the vendored name, none imported from the installed copy.
    modules: dict[str, str | None] = report["modules"]  # type: ignore[assignment]
    assert f"{VENDORED}._demo" in modules and f"{VENDORED}._transport" in modules
    for name, file in modules.items():
        assert file is not None and vendored_dir.resolve() in Path(file).resolve().parents, (name, file)
    assert report["leaked_modules"] == []
    assert report["root_logger"] == VENDORED
    loggers = [str(name) for name in report["loggers"]]  # type: ignore[attr-defined]
    assert VENDORED in loggers and f"{VENDORED}.transport" in loggers, loggers
    vendored_loggers = [name for name in loggers if name == VENDORED or name.startswith(VENDORED + ".")]
    strays = [name for name in loggers if name not in vendored_loggers and not name.startswith("dshstream")]
    assert not strays, strays
    if mode == "alone":
        assert vendored_loggers == loggers, loggers  # nothing was created under the installed name  # nothing was created under the installed name
