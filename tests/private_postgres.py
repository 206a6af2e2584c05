"""A PostgreSQL server of a test's own (initdb and pg_ctl on a free port in a temporary
directory), for tests that stop and restart the state database. Never the machine's shared
server. Skips, saying why, where PostgreSQL's server binaries are not installed."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import free_port


def _binary(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for root in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (root / name).exists():
            return str(root / name)
    return None


@dataclass
class PrivatePostgres:
    pg_ctl: str
    data: Path
    port: int
    user: str | None  # run the server as this account (PostgreSQL refuses to run as root)

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str) -> None:
        cmd = [self.pg_ctl, "-D", str(self.data), "-w", "-t", "60", *args]
        done = subprocess.run(cmd, user=self.user, capture_output=True, text=True, timeout=90)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {args[0]} failed: {done.stdout} {done.stderr}")

    def start(self) -> None:
        opts = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._ctl("-l", str(self.data / "server.log"), "-o", opts, "start")

    def stop(self) -> None:
        self._ctl("-m", "fast", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()


@contextmanager
def private_postgres() -> Iterator[PrivatePostgres]:
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL's initdb and pg_ctl are not installed here")
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' account to run a private server as")
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="flywheel-pg-"))
    data = root / "data"
    data.mkdir()
    if user:
        for p in (root, data):
            shutil.chown(p, user)
    done = subprocess.run([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"],
                          user=user, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr}")
    server = PrivatePostgres(pg_ctl, data, free_port(), user)
    server.start()
    try:
        yield server
    finally:
        try:
            server._ctl("-m", "immediate", "stop")
        except RuntimeError:
            pass  # already stopped
        shutil.rmtree(root, ignore_errors=True)
