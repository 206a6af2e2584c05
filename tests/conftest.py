"""Shared fixtures: state backends (SQLite and the machine's PostgreSQL), a real Prefect
server for command-line tests, and a helper to run the ``flywheel`` command."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

POSTGRES_ADMIN = os.environ.get("FLYWHEEL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
ROOT = Path(__file__).resolve().parents[1]


def _pg_admin_conn():
    import psycopg

    return psycopg.connect(POSTGRES_ADMIN.replace("+psycopg", ""), autocommit=True)


@pytest.fixture
def fresh_postgres_url() -> Iterator[str]:
    """A database of its own for one test (for tests that count rows from zero)."""
    name = f"flywheel_t_{uuid.uuid4().hex[:10]}"
    with _pg_admin_conn() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield POSTGRES_ADMIN.rsplit("/", 1)[0] + f"/{name}"
    with _pg_admin_conn() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", autouse=True)
def quick_scrypt() -> Iterator[int]:
    """Accounts made and checked in the tests' own process hash with scrypt N=2**14 rather than the
    real 2**17 (about a second a hash on a loaded machine, times every account of the suite), from
    before any fixture makes one; tests of the real cost ask for :func:`real_scrypt`. Commands run
    as subprocesses use the real cost. Yields the real N."""
    from review_app import accounts

    real = accounts.SCRYPT_N
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accounts, "SCRYPT_N", 2**14)
        yield real


@pytest.fixture
def real_scrypt(quick_scrypt, monkeypatch) -> int:
    """The scrypt cost new hashes get outside tests, for this test (undoes :func:`quick_scrypt`)."""
    from review_app import accounts

    monkeypatch.setattr(accounts, "SCRYPT_N", quick_scrypt)
    return quick_scrypt


@pytest.fixture(params=["sqlite", "postgres"])
def state_url(request, tmp_path) -> str | None:
    """Each state-database test runs on SQLite (the default) and on PostgreSQL."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("fresh_postgres_url")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def port_taken(port: int) -> Iterator[None]:
    """``port`` of every interface taken for the block, as another program would hold it (already
    taken by something else is the same case)."""
    with socket.socket() as held:
        try:
            held.bind(("0.0.0.0", port))
            held.listen()
        except OSError:
            pass
        yield


def wait_for(what: str, check, *, timeout: float = 120, interval: float = 0.3):
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)  # polling for a condition, not waiting for luck


def http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def listening(port: int) -> bool:
    """Whether something on this machine accepts connections on ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


@contextmanager
def running(args: list[str], *, env: dict[str, str], cwd: Path) -> Iterator[subprocess.Popen]:
    """A long-running command (a server), interrupted like a user would when done."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def alive(proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        raise AssertionError(f"the command exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
    return True


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory) -> Iterator[str]:
    """A real Prefect server for the session; command-line tests run their flows on it."""
    home = tmp_path_factory.mktemp("prefect-home")
    port = free_port()
    env = {
        **os.environ,
        "PREFECT_HOME": str(home),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }
    log = (home / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_for("the Prefect server", lambda: proc.poll() is None and http_ok(f"{url}/health"), timeout=120)
    except AssertionError:
        proc.kill()
        raise RuntimeError(f"Prefect server did not start; see {home / 'server.log'}") from None
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


def single_session_families() -> str:
    """Every family whose scenario is one session, as FLYWHEEL_ROUND__FAMILIES takes them: tests that
    count exact episodes use it (a multi-session family's later sessions come on top of --episodes)."""
    import json

    from generators.phone.families import FAMILIES

    return json.dumps(sorted(f for f, fam in FAMILIES.items() if fam.sessions == 1))


def cli_env(prefect_url: str | None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLYWHEEL_")}
    if prefect_url:
        env["PREFECT_API_URL"] = prefect_url
    # a round's temporary Prefect server migrates a fresh home first: with the suite on every core,
    # that can take longer than the command's default 90 s (a test of that timeout sets its own)
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "300")
    env.update(extra)
    return env


def flywheel_executable() -> str:
    """The console script installed beside this interpreter (as ``pip install`` made it)."""
    script = Path(sys.executable).with_name("flywheel")
    if not script.exists():
        raise RuntimeError(f"flywheel is not installed in {script.parent}; run: pip install -e '.[dev]'")
    return str(script)


def flywheel(*args: str, env: dict[str, str], cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the installed ``flywheel`` command line as a user would."""
    return subprocess.run(
        [flywheel_executable(), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


@dataclass
class LabelStudioServer:
    """A running Label Studio: its URL and a personal access token per user (admin first)."""

    url: str
    tokens: dict[str, str]

    @property
    def admin_token(self) -> str:
        return next(iter(self.tokens.values()))


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory) -> Iterator[LabelStudioServer]:
    """The server .ci/run started (FLYWHEEL_TEST_LS_URL, FLYWHEEL_TEST_LS_TOKENS), or one started
    here from the Label Studio venv (see README, Label Studio); skipped locally without that venv."""
    from tests.label_studio import server as ls_server

    url = os.environ.get("FLYWHEEL_TEST_LS_URL")
    if url:
        yield LabelStudioServer(url, json.loads(os.environ["FLYWHEEL_TEST_LS_TOKENS"]))
        return
    venv = ls_server.default_venv()
    if not ls_server.venv_ready(venv):
        if os.environ.get("CI"):
            pytest.fail(f"no Label Studio venv at {venv}; .ci/run installs it")
        pytest.skip(f"no Label Studio {ls_server.VERSION} venv at {venv} "
                    "(python -m tests.label_studio.server install)")
    started = ls_server.start(venv, tmp_path_factory.mktemp("label-studio"))
    try:
        yield LabelStudioServer(started.url, started.tokens)
    finally:
        ls_server.stop(started.pid)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """moto's S3 server for the session, checking keys (see tests/s3_server.py); a bucket per test."""
    from tests import s3_server as moto

    server = moto.start(free_port(), tmp_path_factory.mktemp("moto") / "server.log", wait_for)
    yield server
    moto.stop(server.pid)


def export_dir(out: Path | str, manifest: dict) -> Path:
    """Where the files of an export into ``--out out`` are read: ``out/NAME``, the link to its current version."""
    from curation.export_run import FORMATS

    return Path(out) / FORMATS[manifest["format"]][0]
