"""The nightly deployment on a real Prefect server: registered with its cron schedule,
and a run of it produces a complete round."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from review_app import decisions, release
from review_app.data import Overlap
from tests.conftest import alive, cli_env, flywheel, flywheel_executable, running, wait_for
from tests.review_fixtures import make_accounts
from warehouse import state
from warehouse.store import Store

pytestmark = pytest.mark.slow


def _api(url: str, path: str, body: dict | None = None, *, tries: int = 6) -> dict | list:
    """One call to the Prefect API; a busy server's 502/503 is retried, as Prefect's own client does."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        f"{url}{path}", data=data, method="GET" if body is None else "POST", headers={"Content-Type": "application/json"}
    )
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            if err.code not in (502, 503) or attempt == tries - 1:
                raise
            time.sleep(0.5 * 2**attempt)  # backoff before retrying a busy server
    raise AssertionError("unreachable")


def test_serve_registers_the_nightly_schedule_and_runs_a_round(tmp_path, prefect_server):
    (tmp_path / "flywheel.toml").write_text("[round]\nepisodes = 12\nrollouts = 2\n")
    args = [flywheel_executable(), "serve", "--cron", "0 3 * * *", "--config", str(tmp_path / "flywheel.toml")]
    with running(args, env=cli_env(prefect_server), cwd=tmp_path) as proc:

        def deployment():
            alive(proc)
            found = _api(prefect_server, "/deployments/filter", {"deployments": {"name": {"any_": ["nightly"]}}})
            return found[0] if found else None

        dep = wait_for("the deployment", deployment)
        assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 3 * * *"]
        run = _api(prefect_server, f"/deployments/{dep['id']}/create_flow_run", {})

        def finished():
            state = _api(prefect_server, f"/flow_runs/{run['id']}")["state"]["type"]
            assert state not in ("FAILED", "CRASHED", "CANCELLED"), state
            return state == "COMPLETED"

        wait_for("the scheduled round", finished, timeout=300)
        store = Store(tmp_path / "flywheel-data")
        assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 12
        # the operator's window: runs named after the round and its shards, the round's report as an artifact
        assert _api(prefect_server, f"/flow_runs/{run['id']}")["name"] == "nightly r0001"
        # (the Prefect server is the session's: other tests' rounds are on it too)
        inner = _api(prefect_server, "/flow_runs/filter",
                     {"flow_runs": {"parent_flow_run_id": {"any_": [run["id"]]}}})
        assert [r["name"] for r in inner] == ["r0001"]
        shards = _api(prefect_server, "/task_runs/filter", {"flow_runs": {"id": {"any_": [inner[0]["id"]]}}})
        assert any(t["name"].startswith("r0001/s00000") for t in shards), sorted(t["name"] for t in shards)
        report = _api(prefect_server, "/artifacts/filter",
                      {"artifacts": {"key": {"any_": ["round-r0001"]}, "flow_run_id": {"any_": [inner[0]["id"]]}}})
        assert len(report) == 1 and report[0]["type"] == "markdown"
        text = report[0]["data"]
        assert text.startswith("# Round r0001") and "**12 episodes**" in text
        for section in ("## By family", "## By capability", "## Curation funnel", "## Cost", "## What to review next"):
            assert section in text, section

        # The next night, with no release approved since: no round, and the Prefect UI says why.
        def night() -> str:
            run = _api(prefect_server, f"/deployments/{dep['id']}/create_flow_run", {})

            def done():
                state = _api(prefect_server, f"/flow_runs/{run['id']}")["state"]["type"]
                assert state not in ("FAILED", "CRASHED", "CANCELLED"), state
                return state == "COMPLETED"

            wait_for("a scheduled run", done, timeout=300)
            return run["id"]

        skipped = night()
        ended = _api(prefect_server, f"/flow_runs/{skipped}")
        assert ended["state"]["name"] == "Skipped" and ended["name"] == "nightly skipped"
        assert "no release approved since r0001 began" in ended["state"]["message"]

        def said() -> list[str]:
            logs = _api(prefect_server, "/logs/filter", {"logs": {"flow_run_id": {"any_": [skipped]}}})
            return [log["message"] for log in logs if "Nightly round skipped" in log["message"]]

        assert "no release approved since r0001 began" in wait_for("the run's log line", said, timeout=60)[0]
        with store.session() as s:
            assert [r.id for r in state.list_rounds(session=s)] == ["r0001"]
        # A lead approves a release with a plan: the next night runs exactly that plan.
        make_accounts(store)
        eid = store.duck().execute("SELECT min(episode_id) FROM episodes").fetchone()[0]
        decisions.record_decision(store, reviewer="ann", round_id="r0001", episode_id=eid, decision="approve")
        release.approve_release(store, lead="lea", dataset_version="v1", round_ids=["r0001"], overlap=Overlap(0.0, 2),
                                sampling_plan={"episodes": 6, "families": {"F02": 1.0}})
        night()
        assert store.duck(["r0002"]).execute("SELECT count(*), min(family), max(family) FROM episodes").fetchone() \
            == (6, "F02", "F02")
    # an export under a Prefect server publishes its manifest's summary beside the rounds' reports
    exported = flywheel("export", "--verified", "--out", str(tmp_path / "out"), env=cli_env(prefect_server),
                        cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    manifest = json.loads((tmp_path / "out" / "openai-chat" / "openai-chat.manifest.json").read_text())
    art = [a for a in _api(prefect_server, "/artifacts/filter", {"artifacts": {"key": {"any_": ["export-openai"]}}})
           if str(tmp_path / "out") in a["data"]]
    assert len(art) == 1 and art[0]["data"].startswith("# Export: openai")
    for split, rows in manifest["splits"].items():
        assert f"| {split} | {rows} |" in art[0]["data"]
    said = [line.split(" ", 2)[2] for line in proc.stdout.read().splitlines() if " nightly " in f" {line}"]
    # one line as each run starts and one as it ends, in order
    assert said == ["nightly run started", "nightly r0001 finished: 12 episodes, " + said[1].split(", ")[1],
                    "nightly run started", "nightly run skipped: " + said[3].split(": ", 1)[1],
                    "nightly run started", "nightly r0002 finished: 6 episodes, " + said[5].split(", ")[1]], said


def test_serve_without_a_prefect_server_is_one_line(tmp_path):
    proc = flywheel("serve", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("error: flywheel serve needs a Prefect server")
    bad = flywheel("serve", env=cli_env("http://127.0.0.1:1/api"), cwd=tmp_path)
    assert bad.returncode == 1 and "cannot reach the Prefect server" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_deploy_puts_the_nightly_round_in_a_work_pool_whose_worker_runs_it(tmp_path, prefect_server,
                                                                            fresh_postgres_url):
    secret = "pw-for-no-ui-5150"  # trust auth here: the server ignores it, the UI must never show it
    url = fresh_postgres_url.replace("postgres@", f"postgres:{secret}@", 1)
    (tmp_path / "flywheel.toml").write_text("[round]\nepisodes = 8\nrollouts = 2\n")
    pool = f"flywheel-{uuid.uuid4().hex[:8]}"
    deployed = flywheel("deploy", "--pool", pool, "--cron", "0 4 * * *", "--config", str(tmp_path / "flywheel.toml"),
                        env=cli_env(prefect_server, FLYWHEEL_STATE_URL=url), cwd=tmp_path)
    assert deployed.returncode == 0, deployed.stderr
    assert f"prefect worker start --pool '{pool}'" in deployed.stdout and "a new process pool" in deployed.stdout
    found = _api(prefect_server, "/deployments/filter", {"work_pools": {"name": {"any_": [pool]}}})
    assert len(found) == 1
    dep = found[0]
    assert [s["schedule"]["cron"] for s in dep["schedules"]] == ["0 4 * * *"]
    assert secret not in json.dumps(dep), {k: v for k, v in dep.items() if secret in json.dumps(v)}
    assert dep["parameters"]["state_url"] == fresh_postgres_url  # the password left out, nothing else
    run = _api(prefect_server, f"/deployments/{dep['id']}/create_flow_run", {})
    # a worker on another machine: the project installed, no FLYWHEEL_* set, its own working directory
    elsewhere = tmp_path / "worker"
    elsewhere.mkdir()
    worker = [str(Path(sys.executable).parent / "prefect"), "worker", "start", "--pool", pool]
    with running(worker, env=cli_env(prefect_server), cwd=elsewhere) as proc:

        def finished():
            alive(proc)
            state = _api(prefect_server, f"/flow_runs/{run['id']}")["state"]["type"]
            assert state not in ("FAILED", "CRASHED", "CANCELLED"), state
            return state == "COMPLETED"

        wait_for("the pool's round", finished, timeout=300)
    store = Store(tmp_path / "flywheel-data", fresh_postgres_url)
    assert store.duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 8
    again = flywheel("deploy", "--pool", pool, "--config", str(tmp_path / "flywheel.toml"),
                     env=cli_env(prefect_server, FLYWHEEL_STATE_URL=url), cwd=tmp_path)
    assert again.returncode == 0 and "a new process pool" not in again.stdout  # redeploying updates, in place
    assert len(_api(prefect_server, "/deployments/filter", {"work_pools": {"name": {"any_": [pool]}}})) == 1


def test_deploy_without_a_pool_name_or_a_prefect_server_is_one_line(tmp_path):
    empty = flywheel("deploy", "--pool", " ", env=cli_env("http://127.0.0.1:1/api"), cwd=tmp_path)
    assert empty.returncode == 1 and empty.stderr.strip() == "error: --pool needs the name of a Prefect work pool"
    down = flywheel("deploy", "--pool", "night", env=cli_env("http://127.0.0.1:1/api"), cwd=tmp_path)
    assert down.returncode == 1 and "cannot reach the Prefect server" in down.stderr
    assert len(down.stderr.strip().splitlines()) == 1
