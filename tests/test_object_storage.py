"""An s3:// data directory through the real command line: moto's S3 server (checking keys), a
real PostgreSQL state database and a real Prefect server.

A round into a bucket reads back through ``flywheel status`` and ``flywheel export`` with the
same episodes, by id, and the same export files as the same round into a local directory; a
round killed mid-shard-write and rerun loses and duplicates nothing and leaves no object that
is not recorded; a wrong endpoint, a missing bucket, a wrong key or a missing state URL is
one line, a non-zero exit and nothing written."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sqlmodel import select

from tests.conftest import cli_env, flywheel, free_port
from tests.test_secrets import _prefect_records
from warehouse.settings import S3Settings
from warehouse.state import Shard
from warehouse.store import Store

pytestmark = pytest.mark.slow
ROUND = ("run", "--episodes", "12", "--rollouts", "2", "--seed", "7", "--no-progress")
EXPORT = ("export", "--verified", "--out", "out")
PREFIX = "team/flywheel"


def _episodes(store: Store) -> list[str]:
    return [r[0] for r in store.duck().execute("SELECT episode_id FROM episodes ORDER BY 1").fetchall()]


def _files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "openai-chat").iterdir()) if not p.name.endswith(".manifest.json")}


@pytest.fixture(scope="module")
def local_round(tmp_path_factory, prefect_server):
    """The same round into a local data directory: what the bucket's round must equal."""
    cwd = tmp_path_factory.mktemp("local")
    env = cli_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="4")
    for args in (ROUND, EXPORT):
        done = flywheel(*args, env=env, cwd=cwd)
        assert done.returncode == 0, done.stderr
    return {"episodes": _episodes(Store(cwd / "flywheel-data")), "files": _files(cwd / "out")}


def _env(prefect_server, s3_server, state_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    return cli_env(prefect_server, FLYWHEEL_STATE_URL=state_url, FLYWHEEL_LOCAL_DIR=str(tmp_path / "local"),
                   FLYWHEEL_ROUND__SHARD_SIZE="4", **s3_server.env(), **extra)


def _store(s3_server, url: str, state_url: str, local: Path) -> Store:
    s3 = S3Settings(endpoint_url=s3_server.endpoint, access_key=s3_server.access_key,
                    secret_key=s3_server.secret_key)
    return Store(url, state_url, create=False, s3=s3, local_dir=local)


def _objects(s3_server, bucket: str) -> set[str]:
    """The shard objects in the bucket (a key ending in "/" is pyarrow's folder marker: not an object)."""
    return {k.removeprefix(f"{PREFIX}/") for k in s3_server.keys(bucket, f"{PREFIX}/") if not k.endswith("/")}


def _recorded(store: Store) -> set[str]:
    with store.session() as s:
        return {sh.path for sh in s.exec(select(Shard))}


def test_a_round_into_a_bucket_reads_back_like_a_local_round(tmp_path, prefect_server, s3_server,
                                                               fresh_postgres_url, local_round):
    bucket = s3_server.new_bucket()
    url = f"s3://{bucket}/{PREFIX}"
    env = _env(prefect_server, s3_server, fresh_postgres_url, tmp_path)
    # shards from 2 worker processes (asked for: a round this small would otherwise collect in its own process)
    run = flywheel(*ROUND, "--data-dir", url, "--json", "--workers", "2", env={**env, "FLYWHEEL_ROUND__RUNNER": "processes"},
                   cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["runner"] == "processes"
    read_env = {**env, "FLYWHEEL_DATA_DIR": url}  # the same place through the environment
    status = flywheel("status", "--json", env=read_env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    shown = json.loads(status.stdout)
    assert shown["data_dir"] == url
    assert [(r["round"], r["status"], r["episodes"]) for r in shown["rounds"]] == [
        ("r0001", "complete", len(local_round["episodes"]))]
    export = flywheel(*EXPORT, env=read_env, cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert _files(tmp_path / "out") == local_round["files"]  # byte for byte

    store = _store(s3_server, url, fresh_postgres_url, tmp_path / "another-machine")
    assert _episodes(store) == local_round["episodes"]
    assert _objects(s3_server, bucket) == _recorded(store)  # every shard in the bucket, nothing else
    assert not (tmp_path / "flywheel-data").exists()  # nothing of the data went to a local directory
    assert (tmp_path / "local" / "prefect").is_dir()  # Prefect's home lives in the local directory
    said = run.stdout + run.stderr + status.stdout + status.stderr + export.stdout + export.stderr
    assert "Traceback" not in said
    assert s3_server.secret_key not in said + _prefect_records(prefect_server)  # the round's parameters too


def test_a_round_killed_mid_shard_write_then_rerun_loses_and_duplicates_nothing(tmp_path, prefect_server, s3_server,
                                                                               fresh_postgres_url, local_round):
    bucket = s3_server.new_bucket()
    url = f"s3://{bucket}/{PREFIX}"
    env = {**_env(prefect_server, s3_server, fresh_postgres_url, tmp_path), "FLYWHEEL_DATA_DIR": url}
    args = (*ROUND, "--workers", "1")  # shards written in this process, where the kill points are armed
    store = _store(s3_server, url, fresh_postgres_url, tmp_path / "check")

    # killed with half of a collection shard's bytes sent into its upload (the unit's first table is
    # in the bucket already, not yet recorded: an orphan): the half-sent object never appears
    killed = flywheel(*args, env={**env, "FLYWHEEL_KILL_AT": "shard.written:6"}, cwd=tmp_path)
    assert killed.returncode == -9, f"never reached: {killed.returncode} {killed.stderr}"
    client = s3_server.client()
    for key in _objects(s3_server, bucket):  # whatever is in the bucket is whole
        body = client.get_object(Bucket=bucket, Key=f"{PREFIX}/{key}")["Body"].read()
        assert pq.read_table(io.BytesIO(body)).num_rows > 0
    assert _objects(s3_server, bucket) - _recorded(store), "the kill left no orphan to remove"

    rerun = flywheel(*args, "--json", env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["orphans_removed"] >= 1
    episodes = _episodes(store)
    assert episodes == local_round["episodes"] and len(set(episodes)) == len(episodes)
    assert _objects(s3_server, bucket) == _recorded(store)  # no orphan left, no recorded shard missing


def _fails_in_one_line(proc, *needles: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("case", ["wrong endpoint", "missing bucket", "wrong secret key", "no state URL", "no keys"])
def test_bad_object_storage_settings_are_one_line_and_write_nothing(tmp_path, s3_server, fresh_postgres_url, case):
    bucket = s3_server.new_bucket()
    env = _env(None, s3_server, fresh_postgres_url, tmp_path, FLYWHEEL_DATA_DIR=f"s3://{bucket}/{PREFIX}")
    needles = {
        "wrong endpoint": ("cannot reach S3 at", "s3.endpoint_url"),
        "missing bucket": ("bucket nosuch-bucket does not exist",),
        "wrong secret key": (f"refused the keys for bucket {bucket}", "s3.secret_key"),
        "no state URL": ("set state_url",),
        "no keys": ("no s3.access_key and s3.secret_key",),
    }[case]
    if case == "wrong endpoint":
        env.update(FLYWHEEL_S3__ENDPOINT_URL=f"http://127.0.0.1:{free_port()}", FLYWHEEL_S3__RETRIES="0")
    elif case == "missing bucket":
        env["FLYWHEEL_DATA_DIR"] = f"s3://nosuch-bucket/{PREFIX}"
    elif case == "wrong secret key":
        env["FLYWHEEL_S3__SECRET_KEY"] = "not-the-secret-key"
    elif case == "no state URL":
        del env["FLYWHEEL_STATE_URL"]
    else:
        del env["FLYWHEEL_S3__ACCESS_KEY"], env["FLYWHEEL_S3__SECRET_KEY"]
    _fails_in_one_line(flywheel("run", "--episodes", "2", "--no-progress", env=env, cwd=tmp_path), *needles)
    _fails_in_one_line(flywheel("status", env=env, cwd=tmp_path), *needles)
    assert s3_server.keys(bucket) == []  # nothing in the bucket
    assert list(tmp_path.iterdir()) == []  # nor a local directory, nor a stray data directory
    import psycopg

    with psycopg.connect(fresh_postgres_url.replace("+psycopg", "")) as con:  # nor a table in the state database
        assert con.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
