"""Start and stop a real Label Studio for tests, from its own virtual environment.

Used by ``.ci/run`` (``python -m tests.label_studio.server up|down``) and by the pytest
fixture in tests/conftest.py when no server was started for it. Runs only on this machine
(127.0.0.1, a free port); each start gets a fresh data directory, copied from a migrated
template kept beside the virtual environment so that migrations run once per version.

    python -m tests.label_studio.server install          # the venv, if it is missing
    python -m tests.label_studio.server up --env-file F  # start; F gets the FLYWHEEL_TEST_LS_* lines
    python -m tests.label_studio.server down --pid PID   # stop (the whole process group)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

VERSION = "1.23.2"  # the Label Studio the tests run against; the SDK's major (2.x) is the one it ships
ADMIN, ANNOTATORS = "admin@example.com", ("ann@example.com", "bob@example.com")
BOOTSTRAP = Path(__file__).with_name("bootstrap.py")


def default_venv() -> Path:
    """``FLYWHEEL_TEST_LS_VENV``, else a path outside any clone, keyed by the version."""
    env = os.environ.get("FLYWHEEL_TEST_LS_VENV")
    return Path(env) if env else Path.home() / ".cache" / "agent-flywheel" / f"label-studio-{VERSION}"


def venv_ready(venv: Path) -> bool:
    """The venv has a Label Studio of our version that imports."""
    py = venv / "bin" / "python"
    if not py.exists():
        return False
    probe = subprocess.run([str(py), "-c", "import label_studio, sys; sys.stdout.write(label_studio.__version__)"],
                           capture_output=True, text=True, timeout=120)
    return probe.returncode == 0 and probe.stdout.strip() == VERSION


def install(venv: Path) -> None:
    """Create the venv and install Label Studio from PyPI into it (slow: once per version)."""
    if venv_ready(venv):
        return
    shutil.rmtree(venv, ignore_errors=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    py = shutil.which("python3.11") or sys.executable
    subprocess.run([py, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, f"label-studio=={VERSION}"], check=True)
    if not venv_ready(venv):
        raise SystemExit(f"label-studio {VERSION} does not import in {venv}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLYWHEEL_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(LABEL_STUDIO_BASE_DATA_DIR=str(data), LOG_LEVEL="ERROR", DJANGO_DEBUG="false",
               LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="true", SENTRY_DSN="", FRONTEND_SENTRY_DSN="",
               COLLECT_ANALYTICS="false")
    return env


def _bootstrap(venv: Path, data: Path, emails: list[str]) -> dict[str, str]:
    out = subprocess.run([str(venv / "bin" / "python"), str(BOOTSTRAP), str(data), *emails], env=_env(data),
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"Label Studio bootstrap failed: {tail[0]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fresh_data_dir(venv: Path, where: Path) -> Path:
    """A new data directory, migrated: a copy of the version's template (made on first use)."""
    template = venv / "template-data"
    if not (template / "label_studio.sqlite3").exists():
        scratch = Path(tempfile.mkdtemp(prefix="ls-template-", dir=venv))
        _bootstrap(venv, scratch, [])
        shutil.rmtree(template, ignore_errors=True)
        scratch.rename(template)
    data = where / "ls-data"
    shutil.copytree(template, data)
    return data


@dataclass
class Server:
    url: str
    tokens: dict[str, str]  # e-mail -> personal access token; ADMIN's is the sync's
    pid: int
    data_dir: Path

    def env_lines(self) -> str:
        return (f"FLYWHEEL_TEST_LS_URL={self.url}\nFLYWHEEL_TEST_LS_TOKENS='{json.dumps(self.tokens)}'\n"
                f"FLYWHEEL_TEST_LS_PID={self.pid}\n")


def start(venv: Path, where: Path, *, timeout: float = 300) -> Server:
    """Migrate a fresh data directory, make the users and tokens, start the server, wait for it."""
    data = fresh_data_dir(venv, where)
    tokens = _bootstrap(venv, data, [ADMIN, *ANNOTATORS])
    port = free_port()
    log = (where / "label-studio.log").open("w")
    proc = subprocess.Popen(
        [str(venv / "bin" / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1", "--port",
         str(port), "--data-dir", str(data), "--username", ADMIN, "--password", "unused-password"],
        env=_env(data), cwd=where, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while not _healthy(url):
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc.pid)
            raise RuntimeError(f"Label Studio did not start (see {where / 'label-studio.log'})")
        time.sleep(0.5)
    return Server(url, tokens, proc.pid, data)


def stop(pid: int) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL if it lingers."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(100):
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.label_studio.server", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("install", help="create the Label Studio venv if it is missing")
    up = sub.add_parser("up", help="start a server with a fresh data directory")
    up.add_argument("--env-file", required=True, help="file to write the FLYWHEEL_TEST_LS_* variables to")
    up.add_argument("--dir", default=None, help="where the data directory and log go (default: a new temp dir)")
    down = sub.add_parser("down", help="stop a server")
    down.add_argument("--pid", type=int, required=True)
    args = parser.parse_args(argv)
    venv = default_venv()
    if args.cmd == "install":
        install(venv)
    elif args.cmd == "up":
        where = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="flywheel-ls-"))
        where.mkdir(parents=True, exist_ok=True)
        server = start(venv, where)
        Path(args.env_file).write_text(server.env_lines())
        print(f"Label Studio {VERSION} at {server.url} (pid {server.pid}, data {server.data_dir})")
    else:
        stop(args.pid)


if __name__ == "__main__":
    main()
