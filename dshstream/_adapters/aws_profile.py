"""The AWS shared config and credentials files, read without an AWS SDK: the profile's
region and credentials for an adapter that signs with SigV4 (Bedrock, Claude Platform on
AWS), where ``aws configure``, ``AWS_PROFILE`` or a ``credential_process`` helper put them.

Contract (the files, the profile and the precedence as the AWS CLI and SDKs define them):

1. **Which profile, which files.** ``AWS_PROFILE``, else ``AWS_DEFAULT_PROFILE``, else
   ``default``; ``AWS_SHARED_CREDENTIALS_FILE`` (default ``~/.aws/credentials``) and
   ``AWS_CONFIG_FILE`` (default ``~/.aws/config``). A missing or unreadable file holds no
   profile. In the credentials file a profile is ``[NAME]``; in the config file
   ``[profile NAME]``, and the default profile ``[default]`` too. A file that does not parse,
   and a profile named by ``AWS_PROFILE`` that neither file has, are each a
   ``ConfigurationError`` naming them.
2. **Static keys.** ``aws_access_key_id`` + ``aws_secret_access_key`` (+
   ``aws_session_token``) from the profile in the credentials file, else in the config
   file. One of the two without the other is a ``ConfigurationError`` naming the file and
   the profile.
3. **credential_process.** Without static keys, the config file's ``credential_process``
   is run (split as a shell splits words, never through a shell), bounded at
   :data:`PROCESS_TIMEOUT` seconds; its output is a JSON object with ``Version`` 1,
   ``AccessKeyId``, ``SecretAccessKey`` and optional ``SessionToken`` and ``Expiration``
   (ISO 8601). It runs when an attempt first needs credentials (an attempt's credential
   fetch: credentials rule 6), and its answer is reused until :data:`REFRESH_BEFORE`
   seconds before its ``Expiration`` (without one, for the adapter's life). A failed run,
   an answer that is not such an object: a ``ConfigurationError`` naming
   ``credential_process`` and the profile, with the process's last line of stderr,
   redacted.
4. **Not done without an SDK.** ``role_arn`` (assume role), ``sso_session`` /
   ``sso_start_url``, ``web_identity_token_file`` and ``credential_source`` need calls to
   STS or SSO: a profile that holds one of them and neither of the above is a
   ``ConfigurationError`` saying so and naming ``credentials=`` (a callable such as a
   ``boto3.Session(profile_name=...)``'s frozen credentials) as the way.
5. **Region.** The profile's ``region`` in the config file, used after ``AWS_REGION`` and
   ``AWS_DEFAULT_REGION``.
6. **When.** The files are read when the adapter is built, as the environment's keys are,
   and sent only where those would be (the adapter's real host).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._core.redact import redact
from .._core.sigv4 import AwsCredentials
from .._core.validate import invalid

__all__ = ["PROCESS_TIMEOUT", "REFRESH_BEFORE", "Profile", "ProcessCredentials", "aws_profile", "refresh_at"]

#: seconds a ``credential_process`` may run (rule 3)
PROCESS_TIMEOUT = 60.0
#: seconds before its ``Expiration`` a process's credentials are fetched again (rule 3)
REFRESH_BEFORE = 300.0
#: the keys that need STS or SSO (rule 4)
_NEEDS_SDK = ("role_arn", "sso_session", "sso_start_url", "web_identity_token_file", "credential_source")


@dataclass(frozen=True)
class Profile:
    """What the files say of one profile (rules 1-5)."""

    name: str
    #: static keys (rule 2), or a process to run (rule 3), or neither
    credentials: AwsCredentials | ProcessCredentials | None
    region: str
    #: where the credentials came from, for ``repr`` and messages: ``profile NAME``
    origin: str


def _read(path: str, label: str) -> Any:
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False, default_section="\x00none")
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            parser.read_file(file)
    except OSError:
        return None
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise invalid(f"the AWS {label} file {path} does not parse: {type(exc).__name__}") from None
    return parser


def _section(parser: Any, name: str) -> dict[str, str]:
    if parser is None or not parser.has_section(name):
        return {}
    return {key: value.strip() for key, value in parser.items(name)}


def aws_profile() -> Profile | None:
    """The environment's profile as the files describe it (rules 1-5); ``None`` when
    neither file names it."""
    named = (os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "").strip()
    name = named or "default"
    credentials_path = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"
    config_path = os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config"
    credentials_file = _read(credentials_path, "credentials")
    config = _read(config_path, "config")
    in_credentials = _section(credentials_file, name)
    in_config = _section(config, f"profile {name}") or (_section(config, "default") if name == "default" else {})
    if not in_credentials and not in_config:
        if named and (credentials_file is not None or config is not None):
            raise invalid(f"AWS_PROFILE names the profile {name!r}, which neither {credentials_path} nor {config_path} has")
        return None
    origin = f"profile {name}"
    credentials: AwsCredentials | ProcessCredentials | None = None
    for values, path in ((in_credentials, credentials_path), (in_config, config_path)):
        key_id, secret = values.get("aws_access_key_id", ""), values.get("aws_secret_access_key", "")
        if key_id or secret:
            if not (key_id and secret):
                raise invalid(
                    f"AWS {origin} in {path} has {'aws_access_key_id' if key_id else 'aws_secret_access_key'} "
                    "without the other"
                )
            credentials = AwsCredentials(key_id, secret, values.get("aws_session_token") or None)
            break
    if credentials is None and in_config.get("credential_process"):
        credentials = ProcessCredentials(in_config["credential_process"], origin)
    if credentials is None:
        needs = [key for key in _NEEDS_SDK if in_config.get(key) or in_credentials.get(key)]
        if needs:
            raise invalid(
                f"AWS {origin} uses {needs[0]}, which needs STS or SSO calls that dshstream does not make "
                "without an AWS SDK: pass credentials= a callable, e.g. "
                "lambda: boto3.Session(profile_name=...).get_credentials().get_frozen_credentials() as a tuple"
            )
    return Profile(name, credentials, in_config.get("region", ""), origin)


def refresh_at(expiration: object, margin: float) -> float | str:
    """When credentials that expire at ``expiration`` (ISO 8601 with a zone; ``None``:
    never) are fetched again: ``margin`` seconds before; or why ``expiration`` is not one."""
    if expiration is None:
        return float("inf")
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(str(expiration).replace("Z", "+00:00"))
    except ValueError:
        return f"an Expiration that is not ISO 8601: {str(expiration)[:40]!r}"
    if moment.tzinfo is None:
        return "an Expiration without a time zone"
    return moment.timestamp() - margin


class ProcessCredentials:
    """A profile's ``credential_process`` as a zero-argument credentials callable (rule 3):
    run on the first call, its answer reused until shortly before it expires."""

    def __init__(self, command: str, origin: str, clock: Callable[[], float] = time.time) -> None:
        self.command = command
        self.origin = origin
        self._clock = clock
        self._lock = threading.Lock()
        self._held: AwsCredentials | None = None
        self._until = 0.0

    def __repr__(self) -> str:
        return f"ProcessCredentials({self.origin})"

    def __call__(self) -> AwsCredentials:
        with self._lock:
            if self._held is None or self._clock() >= self._until:
                self._held, self._until = self._run()
            return self._held

    def _fail(self, why: str) -> Exception:
        return invalid(f"AWS {self.origin}: credential_process {why}")

    def _run(self) -> tuple[AwsCredentials, float]:
        import shlex  # only where a profile runs a process
        import subprocess

        try:
            argv = shlex.split(self.command, posix=os.name != "nt")  # Windows paths keep their backslashes
        except ValueError as exc:
            raise self._fail(f"does not split into words: {exc}") from None
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROCESS_TIMEOUT, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            raise self._fail(f"could not run: {type(exc).__name__}: {redact(str(exc))}") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or [""])[-1]
            raise self._fail(f"exited with status {done.returncode}: {redact(last)[:200]}")
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            raise self._fail("printed something that is not JSON") from None
        if not isinstance(answer, dict) or answer.get("Version") != 1:
            raise self._fail('printed no JSON object with "Version": 1')
        key_id, secret, token = answer.get("AccessKeyId"), answer.get("SecretAccessKey"), answer.get("SessionToken")
        if not (isinstance(key_id, str) and key_id and isinstance(secret, str) and secret):
            raise self._fail("printed no AccessKeyId and SecretAccessKey")
        if token is not None and not isinstance(token, str):
            raise self._fail("printed a SessionToken that is not a string")
        until = refresh_at(answer.get("Expiration"), REFRESH_BEFORE)
        if isinstance(until, str):
            raise self._fail(f"printed {until}")
        return AwsCredentials(key_id, secret, token or None), until
