"""Past one machine: a round's shards on a Dask cluster (a local one with two worker processes)
give the same episodes, by id, as the default runner; on a running cluster whose workers are
elsewhere, they find the data directory the user named."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    cli_env,
    flywheel,
    free_port,
    listening,
    port_taken,
    running,
    single_session_families,
    wait_for,
)
from warehouse.store import Store

pytestmark = pytest.mark.slow


def _round(tmp_path, name: str, env: dict[str, str], *extra: str) -> tuple[dict, list[tuple]]:
    data = tmp_path / name
    run = flywheel("run", "--episodes", "24", "--seed", "7", "--data-dir", str(data), "--json", *extra,
                   env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "distributed" not in run.stderr, run.stderr
    rows = Store(data).duck().execute(
        "SELECT e.episode_id, o.success, o.final_state_hash, o.steps FROM episodes e JOIN outcomes o USING (episode_id) "
        "ORDER BY 1").fetchall()
    return json.loads(run.stdout), rows


def test_a_round_on_a_local_dask_cluster_gives_the_same_episodes_as_the_default_runner(tmp_path, prefect_server):
    # counts exact episodes: single-session families only (F09's later session would come on top)
    env = cli_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="6",
                  FLYWHEEL_ROUND__FAMILIES='["F01","F02","F03","F04","F05","F06"]')
    plain, plain_rows = _round(tmp_path, "default", env, "--workers", "1")
    with port_taken(8787):  # Dask's dashboard port, held by another cluster or RStudio: no warning on stderr
        dask, dask_rows = _round(tmp_path, "dask", {**env, "FLYWHEEL_ROUND__RUNNER": "dask"}, "--workers", "2")
    assert (plain["runner"], dask["runner"], dask["workers"]) == ("threads", "dask", 2)
    assert len(dask_rows) == len({r[0] for r in dask_rows}) == 24
    assert dask_rows == plain_rows  # same ids, same outcomes, same final states


def test_workers_in_another_directory_find_a_data_dir_given_relative(tmp_path, prefect_server):
    # a running cluster, its scheduler and worker each in a directory of its own, as on other machines
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(Path(sys.executable).with_name("dask"))
    env = cli_env(prefect_server, DASK_LOGGING__DISTRIBUTED="warning")
    for name in ("scheduler", "worker", "user"):
        (tmp_path / name).mkdir()
    with running([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], env=env,
                 cwd=tmp_path / "scheduler"), \
            running([dask, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"], env=env,
                    cwd=tmp_path / "worker"):
        wait_for("the Dask scheduler", lambda: listening(port), timeout=60)
        run = flywheel("run", "--episodes", "8", "--workers", "2", "--data-dir", "data", "--json",
                       env={**env, "FLYWHEEL_ROUND__DASK_ADDRESS": address, "FLYWHEEL_ROUND__SHARD_SIZE": "2",
                            "FLYWHEEL_ROUND__FAMILIES": single_session_families()}, cwd=tmp_path / "user", timeout=600)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["runner"] == "dask"
    assert Store(tmp_path / "user" / "data").duck().execute("SELECT count(*) FROM episodes").fetchone()[0] == 8
    assert not (tmp_path / "worker" / "data").exists()  # no stray data directory where the worker runs
