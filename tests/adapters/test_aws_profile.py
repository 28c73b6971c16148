"""The AWS profile of the shared config and credentials files (``_adapters/aws_profile.py``):
which profile and file, static keys, ``credential_process`` run once and again near its
expiry, what needs an AWS SDK said so, the profile's region, and a Bedrock stream signed
with the profile's keys (checked against the signature written out in test_bedrock.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from dshstream._adapters.aws_profile import REFRESH_BEFORE, ProcessCredentials, aws_profile
from dshstream._adapters.bedrock import BedrockAdapter
from dshstream._adapters.claude_aws import ClaudePlatformAwsAdapter
from dshstream._core.errors import ConfigurationError
from dshstream._core.sigv4 import AwsCredentials
from dshstream._core.types import Finish
from dshstream._replay_server import ReplayServer, Route
from adapters.test_bedrock import _expected_signature, options
from helpers import fixture_bytes, routed_session

KEY_ID = "AKIDPROFILEEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYPROFILEKEY"
TOKEN = "FQoGZXIvYXdzProfileSessionCANARY"  # CANARY: a fake session token
HOST = "https://bedrock-runtime.eu-west-3.amazonaws.com"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    credentials, config = tmp_path / "credentials", tmp_path / "config"
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    return credentials, config


def test_no_files_no_profile(files: tuple[Path, Path]) -> None:
    assert aws_profile() is None
    assert BedrockAdapter(region="us-east-1").auth_mode == "none"


def test_the_default_profile_from_the_credentials_file_wins_over_the_config_file(files: tuple[Path, Path]) -> None:
    credentials, config = files
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"
                           f"aws_session_token = {TOKEN}\n[other]\naws_access_key_id = X\naws_secret_access_key = Y\n")
    config.write_text("[default]\nregion = eu-west-3\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = s\n")
    profile = aws_profile()
    assert profile is not None and profile.origin == "profile default" and profile.region == "eu-west-3"
    assert profile.credentials == AwsCredentials(KEY_ID, SECRET, TOKEN)
    adapter = BedrockAdapter()
    assert adapter.region == "eu-west-3" and adapter.base_url == HOST
    assert adapter.auth_mode == "sigv4" and "profile default" in repr(adapter)
    assert SECRET not in repr(adapter) and TOKEN not in repr(adapter)


def test_aws_profile_names_the_config_files_profile_section(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, config = files
    config.write_text(f"[profile work]\nregion = ap-south-1\naws_access_key_id = {KEY_ID}\n"
                      f"aws_secret_access_key = {SECRET}\n[work]\naws_access_key_id = WRONG\n")
    assert aws_profile() is None  # the default profile is in neither file
    monkeypatch.setenv("AWS_PROFILE", "work")
    profile = aws_profile()
    assert profile is not None and profile.credentials == AwsCredentials(KEY_ID, SECRET, None)
    assert profile.region == "ap-south-1"
    monkeypatch.setenv("AWS_REGION", "us-west-2")  # the environment's region comes first
    assert BedrockAdapter().region == "us-west-2"


def test_profile_default_in_the_config_file_is_the_default_profile(files: tuple[Path, Path]) -> None:
    _, config = files
    config.write_text(f"[profile default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    profile = aws_profile()
    assert profile is not None and profile.credentials == AwsCredentials(KEY_ID, SECRET, None)


def test_environment_keys_come_before_the_profile(files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    credentials, _ = files
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDENVIRONMENT")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "environment-secret-key-1234")
    assert "environment" in repr(BedrockAdapter(region="us-east-1"))


def test_the_profile_goes_only_to_the_real_host(files: tuple[Path, Path]) -> None:
    credentials, _ = files
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    assert BedrockAdapter(region="us-east-1", base_url="https://proxy.example.com").auth_mode == "none"


def test_a_half_profile_and_what_needs_an_sdk_are_configuration_errors(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials, config = files
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\n")
    with pytest.raises(ConfigurationError, match="aws_access_key_id without the other"):
        BedrockAdapter(region="us-east-1")
    credentials.write_text("")
    config.write_text("[profile sso]\nsso_session = corp\nregion = us-east-1\n[profile role]\n"
                      "role_arn = arn:aws:iam::123456789012:role/x\nsource_profile = default\n")
    for name, key in (("sso", "sso_session"), ("role", "role_arn")):
        monkeypatch.setenv("AWS_PROFILE", name)
        with pytest.raises(ConfigurationError, match=f"uses {key}.*credentials="):
            BedrockAdapter(region="us-east-1")
    monkeypatch.setenv("AWS_PROFILE", "missing")
    with pytest.raises(ConfigurationError, match="AWS_PROFILE names the profile 'missing'"):
        BedrockAdapter(region="us-east-1")
    config.write_text("[default\nbroken")
    monkeypatch.delenv("AWS_PROFILE")
    with pytest.raises(ConfigurationError, match="does not parse"):
        BedrockAdapter(region="us-east-1")


def _process(tmp_path: Path, answer: dict[str, Any] | str, status: int = 0) -> str:
    script = tmp_path / "helper.py"
    count = tmp_path / "runs"
    text = answer if isinstance(answer, str) else json.dumps(answer)
    script.write_text(
        "import sys, pathlib\n"
        f"p = pathlib.Path({str(count)!r}); p.write_text(str(int(p.read_text() or 0) + 1) if p.exists() else '1')\n"
        f"sys.stdout.write({text!r})\n"
        f"sys.stderr.write('first line\\nthe helper says no\\n' if {status} else '')\n"
        f"sys.exit({status})\n"
    )
    return f'"{sys.executable}" "{script}" --profile corp'


def _runs(tmp_path: Path) -> int:
    return int((tmp_path / "runs").read_text())


def test_credential_process_runs_once_and_again_near_its_expiry(tmp_path: Path, files: tuple[Path, Path]) -> None:
    _, config = files
    answer = {"Version": 1, "AccessKeyId": KEY_ID, "SecretAccessKey": SECRET, "SessionToken": TOKEN,
              "Expiration": "2030-01-01T00:00:00Z"}
    config.write_text(f"[default]\ncredential_process = {_process(tmp_path, answer)}\n")
    profile = aws_profile()
    assert profile is not None and isinstance(profile.credentials, ProcessCredentials)
    now = [1_800_000_000.0]  # 2027
    source = ProcessCredentials(profile.credentials.command, profile.origin, clock=lambda: now[0])
    assert source() == AwsCredentials(KEY_ID, SECRET, TOKEN) and source() == source()
    assert _runs(tmp_path) == 1
    now[0] = 1_893_456_000.0 - REFRESH_BEFORE + 1  # within the margin before 2030-01-01
    source()
    assert _runs(tmp_path) == 2


@pytest.mark.parametrize(
    ("answer", "status", "says"),
    [
        ({"Version": 1, "AccessKeyId": KEY_ID, "SecretAccessKey": SECRET}, 3, "status 3: the helper says no"),
        ("not json", 0, "not JSON"),
        ({"Version": 2, "AccessKeyId": KEY_ID, "SecretAccessKey": SECRET}, 0, '"Version": 1'),
        ({"Version": 1, "AccessKeyId": KEY_ID}, 0, "no AccessKeyId and SecretAccessKey"),
        ({"Version": 1, "AccessKeyId": KEY_ID, "SecretAccessKey": SECRET, "Expiration": "soon"}, 0, "ISO 8601"),
    ],
)
def test_a_failing_credential_process_is_a_configuration_error_naming_it(
    tmp_path: Path, answer: dict[str, Any] | str, status: int, says: str
) -> None:
    source = ProcessCredentials(_process(tmp_path, answer, status), "profile corp")
    with pytest.raises(ConfigurationError, match="profile corp: credential_process") as info:
        source()
    assert says in str(info.value)
    assert SECRET not in str(info.value)


def test_a_bedrock_stream_is_signed_with_the_process_credentials(
    tmp_path: Path, files: tuple[Path, Path], server: ReplayServer
) -> None:
    _, config = files
    answer = {"Version": 1, "AccessKeyId": KEY_ID, "SecretAccessKey": SECRET, "SessionToken": TOKEN}
    config.write_text(f"[default]\nregion = us-east-1\ncredential_process = {_process(tmp_path, answer)}\n")
    server.add("/model/", Route(body=fixture_bytes("bedrock/nova_micro_text.eventstream"),
                                content_type="application/vnd.amazon.eventstream"))
    session: Any = routed_session("https://bedrock-runtime.us-east-1.amazonaws.com", server.url)
    adapter = BedrockAdapter(session=session)
    assert "profile default" in repr(adapter) and not (tmp_path / "runs").exists()  # run by the first attempt
    chunks = list(adapter.stream(options()))
    last = chunks[-1]
    assert isinstance(last, Finish) and last.reason.kind == "stop"
    request = server.requests[-1]
    headers = {k.lower(): v for k, v in request.headers.items()}
    assert f"Credential={KEY_ID}/" in headers["authorization"] and "/us-east-1/bedrock/" in headers["authorization"]
    assert headers["x-amz-security-token"] == TOKEN
    body = json.dumps(request.body, ensure_ascii=False, separators=(",", ":")).encode()
    expected = _expected_signature("POST", request.path, headers, body, SECRET)
    assert headers["authorization"].endswith(f"Signature={expected}")
    assert _runs(tmp_path) == 1


def test_claude_platform_on_aws_takes_the_profile_too(files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    credentials, _ = files
    monkeypatch.setenv("ANTHROPIC_AWS_WORKSPACE_ID", "wrkspc_01")
    with pytest.raises(ConfigurationError, match="an AWS profile"):
        ClaudePlatformAwsAdapter(region="us-east-1")
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    adapter = ClaudePlatformAwsAdapter(region="us-east-1")
    assert adapter.auth_mode == "sigv4" and "profile default" in repr(adapter)


def test_default_service_registers_bedrock_from_a_profile(files: tuple[Path, Path]) -> None:
    from dshstream._defaults import cloud_configured

    credentials, config = files
    assert not cloud_configured("bedrock")
    credentials.write_text(f"[default]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n")
    assert not cloud_configured("bedrock")  # no region anywhere
    config.write_text("[default]\nregion = eu-west-3\n")
    assert cloud_configured("bedrock")
