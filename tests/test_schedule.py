"""The nightly deployment on a real Prefect server: registered with its cron schedule,
and a run of it produces a complete round."""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request

import pytest

from tests.conftest import cli_env, flywheel, flywheel_executable
from warehouse.store import Store

pytestmark = pytest.mark.slow


def _api(url: str, path: str, body: dict | None = None) -> dict | list:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{url}{path}", data=data, method="GET" if body is None else "POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read() or b"null")


def _wait(what: str, check, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)  # polling the Prefect API for the condition


def test_serve_registers_the_nightly_schedule_and_runs_a_round(tmp_path, prefect_server):
    (tmp_path / "flywheel.toml").write_text("[round]\nepisodes = 12\nrollouts = 2\n")
    proc = subprocess.Popen(
        [flywheel_executable(), "serve", "--cron", "0 3 * * *", "--config", str(tmp_path / "flywheel.toml")],
        env=cli_env(prefect_server),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def deployment():
            assert proc.poll() is None, proc.stderr.read()
            found = _api(prefect_server, "/deployments/filter", {"deployments": {"name": {"any_": ["nightly"]}}})
            return found[0] if found else None

        dep = _wait("the deployment", deployment)
        assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 3 * * *"]
        run = _api(prefect_server, f"/deployments/{dep['id']}/create_flow_run", {})

        def finished():
            state = _api(prefect_server, f"/flow_runs/{run['id']}")["state"]["type"]
            assert state not in ("FAILED", "CRASHED", "CANCELLED"), state
            return state == "COMPLETED"

        _wait("the scheduled round", finished, timeout=300)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    con = Store(tmp_path / "flywheel-data").duck()
    assert con.execute("SELECT count(*) FROM episodes").fetchone()[0] == 12


def test_serve_without_a_prefect_server_is_one_line(tmp_path):
    proc = flywheel("serve", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: flywheel serve needs a Prefect server")
    bad = flywheel("serve", env=cli_env("http://127.0.0.1:1/api"), cwd=tmp_path)
    assert bad.returncode == 1 and "cannot reach the Prefect server" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
