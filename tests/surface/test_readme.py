"""README.rst can't drift from the code: its Python examples run, and say what they print.

Rules checked, per ``.. code-block:: python`` example of README.rst:

1. it compiles, every name it takes from ``dshstream`` is in ``dshstream.__all__`` (``from
   dshstream import ...`` and ``dshstream.NAME`` after ``import dshstream``), every name it
   takes from a public submodule exists there, and it imports no private module;
2. it **runs**. The examples of one top-level section (a title underlined with ``=``) run
   in order in one namespace, as a reader pastes them into one session; each section
   starts fresh. They run in a scratch directory, with no provider key or cloud setting in
   the environment, and with every connection and name lookup beyond 127.0.0.1 refused
   (an attempt fails the example even when the example copes with the failure);
3. a paragraph ``It prints::`` right after an example is its exact output;
4. two reST comments right before an example change how it runs:

   - ``.. needs-account: WHY`` — it needs a cloud account, a key or files the suite does not
     have: it is only checked by rule 1, and ``WHY`` must say what it needs;
   - ``.. model-server: RECORDING...`` — it is written for a local server at
     ``http://127.0.0.1:8080``: with ``DSHSTREAM_TEST_SERVER`` set it runs against that
     server (the model's words then differ, so rule 3 is not applied), else against a
     ``ReplayServer`` answering with the recordings named (repository paths, served in
     order, the last one repeating). An example naming that address must carry one of the
     two.

An example neither run nor marked can't exist: every unmarked example is run.

Beside the examples: the usage example that opens ``dshstream``'s docstring (what
``help(dshstream)`` shows first) runs under the same rules; CONTRIBUTING.rst's Layout
section names every module of the package and draws the test tree; every
``examples/*.py`` either file names exists; the wheel README.rst installs is this version;
its set-up runs the test command ``.ci/run`` runs; and both files parse as
reStructuredText without a warning (when docutils is installed).
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import logging
import os
import re
import socket
import tempfile
import textwrap
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import REPOSITORY

import dshstream
import dshstream._defaults
from dshstream.testing import ReplayServer, Route

ROOT = REPOSITORY
README = ROOT / "README.rst"
CONTRIBUTING = ROOT / "CONTRIBUTING.rst"
_DIRECTIVE = re.compile(r"^\.\. code-block:: python[ \t]*$")
_NEEDS_ACCOUNT = ".. needs-account:"
_MODEL_SERVER = ".. model-server:"
_PRINTS = "It prints::"
#: the local server address README examples are written for (llama.cpp's default)
LOCAL_SERVER = "http://127.0.0.1:8080"


@dataclass(frozen=True)
class Example:
    """One ``.. code-block:: python`` of a reST file."""

    line: int  #: the first line of the code
    source: str  #: dedented
    section: str  #: the top-level section it is in
    needs_account: str | None = None  #: why it is not run
    model_server: tuple[str, ...] | None = None  #: the recordings standing in for the server
    prints: str | None = None  #: its exact output, from ``It prints::``


def _indented_block(lines: list[str], i: int) -> tuple[list[str], int]:
    """The indented lines from ``i`` on (blank lines inside kept), and the index after them."""
    while i < len(lines) and not lines[i].strip():
        i += 1
    body: list[str] = []
    while i < len(lines) and (not lines[i].strip() or lines[i][:1] in (" ", "\t")):
        body.append(lines[i])
        i += 1
    return body, i


def _dedented(body: list[str]) -> str:
    return textwrap.dedent("\n".join(body)).strip("\n") + "\n"


def _is_title(lines: list[str], k: int) -> bool:
    """Whether line ``k`` is a top-level section title (underlined with ``=``)."""
    title, under = lines[k].strip(), lines[k + 1] if k + 1 < len(lines) else ""
    return bool(title) and not set(title) <= {"="} and bool(re.fullmatch(r"=+", under)) and len(under) >= len(title)


def examples(text: str) -> list[Example]:
    """Every ``.. code-block:: python`` of ``text``, with its section, marker and output."""
    lines = text.splitlines()
    found: list[Example] = []
    section = ""
    i = 0
    while i < len(lines):
        if _is_title(lines, i):
            section = lines[i].strip()
        if not _DIRECTIVE.match(lines[i]):
            i += 1
            continue
        before = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        needs_account = before[len(_NEEDS_ACCOUNT):].strip() if before.startswith(_NEEDS_ACCOUNT) else None
        model_server = tuple(before[len(_MODEL_SERVER):].split()) if before.startswith(_MODEL_SERVER) else None
        body, end = _indented_block(lines, i + 1)
        start = end - len(body)
        while start < end and not lines[start].strip():
            start += 1
        prints = None
        after = end
        while after < len(lines) and not lines[after].strip():
            after += 1
        if after < len(lines) and lines[after].strip() == _PRINTS:
            output, end = _indented_block(lines, after + 1)
            prints = _dedented(output)
        found.append(Example(start + 1, _dedented(body), section, needs_account, model_server, prints))
        i = end
    return found


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, dedented source) of each ``.. code-block:: python`` body."""
    return [(example.line, example.source) for example in examples(text)]


EXAMPLES = examples(README.read_text(encoding="utf-8"))
RUN = [example for example in EXAMPLES if example.needs_account is None]


def _package_docstring_example() -> Example:
    """The first literal block of ``dshstream``'s docstring: the usage example."""
    doc = dshstream.__doc__ or ""
    lines = doc.splitlines()
    opening = next(k for k, line in enumerate(lines) if line.rstrip().endswith("::"))
    body, _ = _indented_block(lines, opening + 1)
    return Example(opening + 2, _dedented(body), "dshstream.__doc__")


DOC_EXAMPLE = _package_docstring_example()


# --------------------------------------------------------------------------- extraction


def test_the_readme_has_python_examples() -> None:
    # the extraction itself is checked: a README reformatted out of its reach would make
    # every other test here pass vacuously
    assert len(EXAMPLES) >= 25
    assert all(example.source.strip() for example in EXAMPLES)
    assert len(RUN) > len(EXAMPLES) // 2, "most examples run; only a few may need an account"
    assert sum(example.prints is not None for example in RUN) >= 8
    assert EXAMPLES[0].section == "Quickstart" and EXAMPLES[0].needs_account is None, "the first example runs"


def test_block_extraction_keeps_blank_lines_and_stops_at_the_next_paragraph() -> None:
    text = "Intro\n\n.. code-block:: python\n\n    a = 1\n\n    b = 2\n\nAfter.\n\n.. code-block:: python\n\n    c = 3\n"
    assert python_blocks(text) == [(5, "a = 1\n\nb = 2\n"), (13, "c = 3\n")]


def test_extraction_reads_sections_markers_and_output() -> None:
    text = textwrap.dedent(
        """\
        One
        ===

        .. needs-account: a key

        .. code-block:: python

            a = 1

        Two
        ===

        .. model-server: x.sse y.sse

        .. code-block:: python

            print(2)

        It prints::

            2

        After.
        """
    )
    assert examples(text) == [
        Example(8, "a = 1\n", "One", needs_account="a key"),
        Example(17, "print(2)\n", "Two", model_server=("x.sse", "y.sse"), prints="2\n"),
    ]


# --------------------------------------------------------------------------- names


def _check_names(example: Example, where: str) -> None:
    tree = ast.parse(example.source, f"{where}:{example.line}")
    compile(tree, f"{where}:{example.line}", "exec", dont_inherit=True)
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
    assert not missing, f"{where}:{example.line} uses names dshstream does not export: {missing}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"line{example.line}" for example in EXAMPLES])
def test_example_compiles_and_uses_only_public_names(example: Example) -> None:
    _check_names(example, "README.rst")


def test_the_package_docstring_opens_with_a_usage_example() -> None:
    doc = dshstream.__doc__ or ""
    opening = doc[: doc.index(DOC_EXAMPLE.source.splitlines()[0])]
    assert "dshstream/" not in opening and "_core" not in opening, "help(dshstream) opens with usage, not the tree"
    assert "dshstream.stream(" in DOC_EXAMPLE.source
    _check_names(DOC_EXAMPLE, "dshstream.__doc__")


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """How one example ran."""

    stdout: str = ""
    error: str | None = None  #: the traceback, or what went wrong
    skipped: str | None = None  #: why it was not run
    live: bool = False  #: ran against the live model server


def _loopback(host: object) -> bool:
    text = str(host).strip("[]")
    return text in ("localhost", "::1") or text.startswith("127.")


class _Network:
    """Refuses every name lookup and connection beyond 127.0.0.1, and remembers them."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._getaddrinfo = socket.getaddrinfo
        self._connect = socket.socket.connect
        self._connect_ex = socket.socket.connect_ex

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        network = self

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if host is not None and not _loopback(host):
                network.attempts.append(f"name lookup of {host!r}")
                raise socket.gaierror(f"README examples stay on 127.0.0.1 (looked up {host!r})")
            return network._getaddrinfo(host, *args, **kwargs)

        def allowed(sock: socket.socket, address: Any) -> bool:
            if sock.family not in (socket.AF_INET, socket.AF_INET6) or _loopback(address[0]):
                return True
            network.attempts.append(f"connection to {address!r}")
            return False

        def connect(sock: socket.socket, address: Any) -> None:
            if not allowed(sock, address):
                raise ConnectionRefusedError(f"README examples stay on 127.0.0.1 (connect to {address!r})")
            network._connect(sock, address)

        def connect_ex(sock: socket.socket, address: Any) -> int:
            if not allowed(sock, address):
                raise ConnectionRefusedError(f"README examples stay on 127.0.0.1 (connect to {address!r})")
            return network._connect_ex(sock, address)

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket.socket, "connect", connect)
        monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


#: the environment an example never sees: keys, cloud settings, local server URLs
_HIDDEN = re.compile(
    r"(_API_KEY|_KEY|_TOKEN|_SECRET|_BASE_URL)$|^(AWS_|AZURE_|GOOGLE_|OPENAI_|ANTHROPIC_|GEMINI_|OLLAMA_)|^DSHSTREAM_DEBUG$"
)


@contextlib.contextmanager
def _sandbox() -> Iterator[_Network]:
    """A scratch directory, no key or cloud setting, no network beyond 127.0.0.1, the shared
    default service built afresh; the logging set-up restored afterwards."""
    root = logging.getLogger()
    package = logging.getLogger("dshstream")
    saved = (root.handlers[:], root.level, package.handlers[:], package.level)
    network = _Network()
    with tempfile.TemporaryDirectory(prefix="readme-") as scratch, pytest.MonkeyPatch.context() as monkeypatch:
        for name in list(os.environ):
            if _HIDDEN.search(name):
                monkeypatch.delenv(name)
        monkeypatch.setenv("CLOUDSDK_CONFIG", os.path.join(scratch, "no-gcloud"))
        monkeypatch.setattr(dshstream._defaults, "_service", None, raising=False)
        monkeypatch.chdir(scratch)
        network.install(monkeypatch)
        try:
            yield network
        finally:
            root.handlers[:], package.handlers[:] = saved[0], saved[2]
            root.setLevel(saved[1])
            package.setLevel(saved[3])


def _served(example: Example, live: str) -> tuple[str, ReplayServer | None]:
    """The source to run, and the replay server standing in for the local server."""
    if example.model_server is None:
        return example.source, None
    if live:
        return example.source.replace(LOCAL_SERVER, live.rstrip("/")), None
    routes = [Route(body=(ROOT / name).read_bytes()) for name in example.model_server]
    server = ReplayServer({"/": routes}).start()
    return example.source.replace(LOCAL_SERVER, server.url), server


def _run(example: Example, namespace: dict[str, Any], network: _Network, live: str) -> Outcome:
    outcome = Outcome(live=bool(live and example.model_server is not None))
    source, server = _served(example, live)
    out = io.StringIO()
    seen = len(network.attempts)
    try:
        code = compile(source, f"README.rst:{example.line}", "exec", dont_inherit=True)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            exec(code, namespace)  # noqa: S102 - the README's own examples
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] != "dshstream":
            outcome.skipped = f"needs {exc.name}, which is not installed"
        else:
            outcome.error = traceback.format_exc()
    except Exception:  # noqa: BLE001 - reported by the example's test
        outcome.error = traceback.format_exc()
    finally:
        if server is not None:
            server.stop()
    outcome.stdout = out.getvalue()
    if network.attempts[seen:] and outcome.error is None:
        outcome.error = f"the example tried to leave 127.0.0.1: {network.attempts[seen:]}"
    return outcome


def run_examples(to_run: list[Example], live: str = "") -> dict[int, Outcome]:
    """Run ``to_run`` in order, one namespace per section; after a failure, the rest of its
    section is skipped (it would fail on the names the failed example did not define)."""
    outcomes: dict[int, Outcome] = {}
    with _sandbox() as network:
        section: str | None = None
        namespace: dict[str, Any] = {}
        failed: int | None = None
        for example in to_run:
            if example.section != section:
                section, namespace, failed = example.section, {"__name__": "__readme__"}, None
            if failed is not None:
                outcomes[example.line] = Outcome(skipped=f"an earlier example of {section!r} failed (line {failed})")
                continue
            outcomes[example.line] = outcome = _run(example, namespace, network, live)
            if outcome.error is not None:
                failed = example.line
    return outcomes


@pytest.fixture(scope="module")
def outcomes() -> dict[int, Outcome]:
    return run_examples(RUN, live=os.environ.get("DSHSTREAM_TEST_SERVER", ""))


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


@pytest.mark.parametrize("example", RUN, ids=[f"line{example.line}" for example in RUN])
def test_example_runs_and_prints_what_it_says(example: Example, outcomes: dict[int, Outcome]) -> None:
    outcome = outcomes[example.line]
    if outcome.skipped is not None:
        pytest.skip(outcome.skipped)
    assert outcome.error is None, f"README.rst:{example.line} ({example.section}) failed:\n{outcome.error}"
    if example.prints is not None and not outcome.live:
        assert _lines(outcome.stdout) == _lines(example.prints), f"README.rst:{example.line} printed something else"


def test_the_package_docstring_example_runs_and_shows_the_failure_without_a_key() -> None:
    (outcome,) = run_examples([DOC_EXAMPLE]).values()
    assert outcome.error is None, outcome.error
    assert outcome.stdout.startswith("NO_ADAPTER "), outcome.stdout


def test_examples_that_need_an_account_say_what_they_need() -> None:
    marked = [example for example in EXAMPLES if example.needs_account is not None]
    assert marked, "the cloud examples are marked"
    assert all(len(example.needs_account or "") >= 8 for example in marked), [e.line for e in marked]
    assert not [e.line for e in marked if e.model_server is not None or e.prints is not None]


def test_examples_for_a_local_server_are_marked_and_their_recordings_exist() -> None:
    unmarked = [e.line for e in EXAMPLES if LOCAL_SERVER in e.source and e.model_server is None and e.needs_account is None]
    assert not unmarked, f"examples talking to {LOCAL_SERVER} without a marker: {unmarked}"
    served = [e for e in EXAMPLES if e.model_server is not None]
    assert served and all(e.model_server and LOCAL_SERVER in e.source for e in served)
    assert not [name for e in served for name in e.model_server or () if not (ROOT / name).is_file()]


def test_the_sandbox_refuses_the_network_beyond_loopback() -> None:
    probe = Example(1, "import socket\nsocket.create_connection(('192.0.2.1', 443), timeout=1)\n", "probe")
    (outcome,) = run_examples([probe]).values()
    assert outcome.error is not None and "stay on 127.0.0.1" in outcome.error
    lookup = Example(1, "import socket\ntry:\n    socket.getaddrinfo('api.openai.com', 443)\nexcept OSError:\n    pass\n", "probe")
    (outcome,) = run_examples([lookup]).values()
    assert outcome.error is not None and "tried to leave 127.0.0.1" in outcome.error


# --------------------------------------------------------------------------- the files


def _section(text: str, title: str) -> str:
    start = text.index(f"\n{title}\n{'=' * len(title)}\n")
    following = re.search(r"\n[^\n]+\n=+\n", text[start + len(title) + 2 :])
    return text[start : start + len(title) + 2 + following.start()] if following else text[start:]


def test_the_layout_lists_every_module() -> None:
    layout = _section(CONTRIBUTING.read_text(encoding="utf-8"), "Layout")
    package = Path(dshstream.__file__).parent
    modules = sorted(p for p in package.rglob("*.py") if p.name != "__init__.py" or p.parent == package)
    missing = [str(p.relative_to(package)) for p in modules if not re.search(rf"(?<![\w.]){re.escape(p.name)}\b", layout)]
    assert not missing, f"CONTRIBUTING.rst's Layout section does not list {missing}"


def test_the_layout_draws_the_test_tree() -> None:
    """Every test directory and every shared module at the top of tests/ is in the Layout
    section; the test files sit one level down, each directory a package (no file name
    can collide with another directory's)."""
    layout = _section(CONTRIBUTING.read_text(encoding="utf-8"), "Layout")
    tests = ROOT / "tests"
    data = ("__pycache__", "fixtures", "js")  # recordings; the JavaScript client's package
    directories = sorted(p for p in tests.iterdir() if p.is_dir() and p.name not in data)
    assert directories and not list(tests.glob("test_*.py"))
    assert not [d.name for d in directories if not (d / "__init__.py").is_file() or not list(d.glob("test_*.py"))]
    shared = sorted(p.name for p in tests.glob("*.py"))
    listed = [*(f"{d.name}/" for d in directories), "fixtures/", "js/", *shared]
    missing = [name for name in listed if not re.search(rf"^\s+{re.escape(name)}\s", layout, re.M)]
    assert not missing, f"CONTRIBUTING.rst's Layout section does not draw {missing}"


@pytest.mark.parametrize("path", [README, CONTRIBUTING], ids=lambda p: p.name)
def test_every_example_a_file_names_exists(path: Path) -> None:
    named = set(re.findall(r"examples/([\w.]+\.py)", path.read_text(encoding="utf-8")))
    assert named
    assert not [name for name in sorted(named) if not (ROOT / "examples" / name).is_file()]


def test_the_readme_names_every_example() -> None:
    text = README.read_text(encoding="utf-8")
    assert not [p.name for p in sorted((ROOT / "examples").glob("*.py")) if f"examples/{p.name}" not in text]


def test_the_wheel_the_readme_installs_is_this_version() -> None:
    wheels = re.findall(r"dshstream-([\w.]+)-py3-none-any\.whl", README.read_text(encoding="utf-8"))
    assert wheels and set(wheels) == {dshstream.__version__}


def test_the_set_up_runs_the_test_command_ci_runs() -> None:
    setup = _section(README.read_text(encoding="utf-8"), "Set-up")
    assert "dshstream demo" in setup
    install = re.search(r"pip install -e '(\.\[[\w,]+\])'", setup)
    assert install is not None, setup
    command = "python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile"
    assert command in setup
    ci = ROOT / ".ci" / "run"
    if not ci.is_file():
        pytest.skip("no .ci/run (an unpacked sdist)")
    script = ci.read_text(encoding="utf-8")
    assert command in script
    # the same extras as CI's main leg: the README's command runs the tests CI runs, not skips
    assert f"pip install --quiet -e '{install.group(1)}'" in script


@pytest.mark.parametrize("path", [README, CONTRIBUTING], ids=lambda p: p.name)
def test_the_file_is_valid_restructuredtext(path: Path) -> None:
    docutils_core = pytest.importorskip("docutils.core")
    warnings = io.StringIO()
    docutils_core.publish_doctree(
        path.read_text(encoding="utf-8"), settings_overrides={"warning_stream": warnings, "report_level": 2}
    )
    assert warnings.getvalue() == ""
