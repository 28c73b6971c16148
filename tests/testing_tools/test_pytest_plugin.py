"""The pytest plugin, as a user's test suite meets it: a project of its own in a scratch
directory, run by pytest in a subprocess — recorded once against the provider (a loopback
server playing a real recorded stream), with pytest-xdist; then replayed with the provider
gone; then broken in each way that must fail loudly."""

from __future__ import annotations

import configparser
import importlib.metadata
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dshstream
from dshstream.testing import ReplayServer
from helpers import fixture_bytes

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCE = str(Path(dshstream.__file__).resolve().parent.parent)

#: the user's application: its service is built at import time, deep in "the app"
APP = '''
import os
from dshstream import GenerateOptions, LlmService, Message, OpenAIChatAdapter

service = LlmService()
service.register_adapter(["openai"], OpenAIChatAdapter(
    api_key=os.environ.get("OPENAI_API_KEY", "placeholder"), base_url=os.environ["APP_OPENAI_URL"]))


def ask(question: str) -> str:
    result = service.stream(GenerateOptions(provider="openai", model="gpt-4o-mini",
                                            messages=(Message.user(question),))).result()
    if result.failure is not None:
        return "sorry, something went wrong"    # the app swallows failures
    return result.text or result.tool_calls[0].arguments
'''

TESTS = '''
import pytest
import app


@pytest.mark.dshstream_cassette
@pytest.mark.parametrize("city", ["Edinburgh", "Paris"])
def test_weather(city):
    assert "Edinburgh" in app.ask(f"Weather in {city}?")


def test_with_the_fixture(dshstream_cassette):
    assert "Edinburgh" in app.ask("Weather, please")
    assert len(dshstream_cassette.interactions) == 1


@pytest.mark.dshstream_cassette("shared", match_on=("method", "path"))
def test_named_cassette():
    assert app.ask("any question") != "sorry, something went wrong"


class TestInAClass:
    @pytest.mark.dshstream_cassette
    def test_swallowed(self):
        app.ask("A question whose failure the app hides")   # no assertion: the plugin checks


def test_without_a_cassette_is_untouched():
    assert app.ask("uncassetted") != "sorry, something went wrong"
'''


OTHER = '''
import pytest
import app

pytestmark = pytest.mark.dshstream_cassette


@pytest.mark.parametrize("n", [1, 2])
def test_numbered(n):
    assert "Edinburgh" in app.ask(f"question {n}")
'''


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(APP, encoding="utf-8")
    (project / "test_app.py").write_text(TESTS, encoding="utf-8")
    (project / "test_other.py").write_text(OTHER, encoding="utf-8")
    (project / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n", encoding="utf-8")
    return project


def _pytest(project: Path, url: str, *args: str, env: dict[str, str] | None = None,
            autoload: bool = False) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DSHSTREAM_RECORD"))}
    environment.update({"PYTHONPATH": os.pathsep.join([SOURCE, str(project)]), "APP_OPENAI_URL": url})
    plugins: list[str] = []
    if not autoload:  # exactly this checkout's plugin, whatever the environment has installed
        environment["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        plugins = ["-p", "dshstream._pytest_plugin", "-p", "xdist.plugin"]
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", *plugins, *args], cwd=project, env=environment,
                          capture_output=True, text=True, timeout=180)


def _cassettes(project: Path) -> list[str]:
    return sorted(p.relative_to(project).as_posix() for p in project.rglob("*.json"))


@pytest.fixture
def provider() -> ReplayServer:
    server = ReplayServer({"/": fixture_bytes("openai/single_tool_call.sse")}).start()
    return server


def test_record_with_xdist_then_replay_offline(tmp_path: Path, provider: ReplayServer) -> None:
    project = _project(tmp_path)
    url = f"{provider.url}/v1"
    recorded = _pytest(project, url, "-n", "2", "--dshstream-record")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert "8 passed" in recorded.stdout
    assert _cassettes(project) == [
        "cassettes/test_app/TestInAClass.test_swallowed.json",
        "cassettes/test_app/shared.json",
        "cassettes/test_app/test_weather_Edinburgh_.json",
        "cassettes/test_app/test_weather_Paris_.json",
        "cassettes/test_app/test_with_the_fixture.json",
        "cassettes/test_other/test_numbered_1_.json",
        "cassettes/test_other/test_numbered_2_.json",
    ]
    assert len(provider.requests) == 8, "every request went to the provider"
    provider.stop()  # the provider is gone

    replayed = _pytest(project, url, "-n", "2", "-k", "not untouched")
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "7 passed" in replayed.stdout

    # the same again, one process, the mode from the environment
    again = _pytest(project, url, "-k", "not untouched", env={"DSHSTREAM_RECORD": "0"})
    assert again.returncode == 0 and "7 passed" in again.stdout, again.stdout


def test_a_missing_or_changed_cassette_fails_the_test_with_the_command_that_records_it(
    tmp_path: Path, provider: ReplayServer
) -> None:
    project = _project(tmp_path)
    url = f"{provider.url}/v1"
    assert _pytest(project, url, "--dshstream-record").returncode == 0
    provider.stop()
    (project / "cassettes" / "test_app" / "test_weather_Paris_.json").unlink()
    (project / "test_app.py").write_text(TESTS.replace("A question whose failure", "A changed question whose failure"),
                                         encoding="utf-8")
    run = _pytest(project, url, "-k", "not untouched", "-rf")
    assert run.returncode == 1, run.stdout
    out = run.stdout
    assert "2 failed, 5 passed" in out, out
    assert "test_weather_Paris_.json: no recorded answer for POST " in out and "the cassette does not exist" in out
    assert "record it with: python -m pytest --dshstream-record 'test_app.py::test_weather[Paris]'" in out
    # the app swallowed the failure; the test fails all the same, saying why
    assert "FAILED test_app.py::TestInAClass::test_swallowed - Failed: cassette " in out
    assert "another body" in out and "'test_app.py::TestInAClass::test_swallowed'" in out


def test_a_wrong_marker_argument_fails_at_setup_naming_it(tmp_path: Path, provider: ReplayServer) -> None:
    project = _project(tmp_path)
    (project / "test_app.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.dshstream_cassette(matchon=("url",))
        def test_typo():
            pass

        @pytest.mark.dshstream_cassette(match_on=("headers",))
        def test_wrong_criterion():
            pass
    '''), encoding="utf-8")
    run = _pytest(project, f"{provider.url}/v1", "-rE")
    assert run.returncode == 1 and "2 errors" in run.stdout, run.stdout
    assert "has no argument 'matchon'" in run.stdout and "match_on must name some of method, url, path, body" in run.stdout


def test_the_plugin_is_registered_through_an_entry_point_and_lists_its_marker(tmp_path: Path) -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    entry_points = config["options.entry_points"]["pytest11"].split()
    assert entry_points == ["dshstream", "=", "dshstream._pytest_plugin"]
    project = _project(tmp_path)
    markers = _pytest(project, "http://127.0.0.1:9/v1", "--markers")
    assert "@pytest.mark.dshstream_cassette(name=None, *, match_on=" in markers.stdout
    assert "--dshstream-record" in _pytest(project, "http://127.0.0.1:9/v1", "--help").stdout

    installed = [ep for ep in importlib.metadata.entry_points(group="pytest11") if ep.value == "dshstream._pytest_plugin"]
    if not installed:  # (PYTHONPATH puts this checkout first: the entry point loads its plugin)
        pytest.skip("the installed dshstream has no pytest11 entry point (pip install -e . from this checkout)")
    autoloaded = _pytest(project, "http://127.0.0.1:9/v1", "--markers", autoload=True)
    assert "@pytest.mark.dshstream_cassette" in autoloaded.stdout, autoloaded.stdout + autoloaded.stderr


def test_importing_the_plugin_imports_nothing_of_the_package() -> None:
    code = ("import sys, dshstream._pytest_plugin\n"
            "print(sorted(m for m in sys.modules if m.startswith(('dshstream.', 'requests'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": SOURCE}).stdout
    assert eval(out) == ["dshstream._core", "dshstream._core.errors", "dshstream._core.types", "dshstream._exports",
                         "dshstream._pytest_plugin", "dshstream._version"]
