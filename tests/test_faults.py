"""Faults a round must live through: the state PostgreSQL restarting, the disk filling, two
writers on one data directory, reviewers deciding while a round curates.

A real ``flywheel`` subprocess is held at a named point (``FLYWHEEL_HOLD_AT`` and
``FLYWHEEL_HOLD_FILE``, see ``warehouse/killpoints.py``): it writes the marker file and waits
until the test deletes it, so the fault lands at a known place, with no race and no sleep.
Every time: one clear line or a finished round, then a rerun that finishes with nothing lost
and nothing duplicated. The model endpoint's faults are in ``tests/test_model_faults.py``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlmodel import select

from tests.conftest import cli_env, flywheel, flywheel_executable, single_session_families, wait_for
from tests.private_postgres import private_postgres
from warehouse import state
from warehouse.objects import data_checksum
from warehouse.store import Store

pytestmark = pytest.mark.slow
ROUND = ("run", "--episodes", "20", "--seed", "9", "--no-progress")
LONG = os.environ.get("FLYWHEEL_LONG_TESTS") == "1"  # every point on every backend


# The faults do not depend on the families; these tests count exact episodes, and a multi-session
# scenario's later sessions come on top of --episodes, so the rounds here keep to one-session families.
SINGLE_SESSION = single_session_families()


def _env(prefect_server: str | None, **extra: str) -> dict[str, str]:
    return cli_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="5", FLYWHEEL_ROUND__FAMILIES=SINGLE_SESSION, **extra)


@contextmanager
def held(args, *, env: dict[str, str], cwd: Path, point: str) -> Iterator[subprocess.Popen]:
    """A command standing at ``point`` (armed with FLYWHEEL_HOLD_AT) until the block ends; then it
    goes on, and the caller waits for it."""
    marker = cwd / f"held-{point.replace(':', '-')}"
    proc = subprocess.Popen([flywheel_executable(), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**env, "FLYWHEEL_HOLD_AT": point, "FLYWHEEL_HOLD_FILE": str(marker)})
    try:
        def standing() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"exited with {proc.returncode} before {point}: {proc.stderr.read()}")
            return marker.exists()

        wait_for(f"the command held at {point}", standing, timeout=120, interval=0.05)
        yield proc
    finally:
        marker.unlink(missing_ok=True)
        if proc.poll() is None:
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise


def _finished(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


def _one_line_error(code: int, err: str, *needles: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and len(lines) == 1, (code, err)
    assert lines[0].startswith("error: ") and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _episode_ids(store: Store, round_id: str = "r0001") -> list[str]:
    rows = store.duck([round_id]).execute("SELECT episode_id FROM episodes ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def _recorded_shards_whole(store: Store) -> None:
    """Every recorded shard is on disk with the checksum it was recorded with; no temporary file is left."""
    with store.session() as s:
        shards = list(s.exec(select(state.Shard)))
    for shard in shards:
        path = store.data_dir / shard.path
        assert path.exists() and data_checksum(path.read_bytes()) == shard.checksum, shard.path
    assert not [p for p in (store.data_dir / "shards").rglob("*") if ".tmp-" in p.name]


# --- the state database restarting ------------------------------------------------------


@pytest.fixture(scope="module")
def clean_round(tmp_path_factory, prefect_server) -> list[str]:
    cwd = tmp_path_factory.mktemp("clean")
    done = flywheel(*ROUND, env=_env(prefect_server), cwd=cwd)
    assert done.returncode == 0, done.stderr
    return _episode_ids(Store(cwd / "flywheel-data"))


def test_state_postgres_restarting_mid_round_is_ridden_through(tmp_path, prefect_server, clean_round):
    with private_postgres() as pg:
        env = _env(prefect_server, FLYWHEEL_STATE_URL=pg.url)
        with held(ROUND, env=env, cwd=tmp_path, point="unit.committed:2") as proc:
            pg.restart()  # every connection the round holds is cut
        code, out, err = _finished(proc)
        assert code == 0, err
        assert "Finished round r0001: 20 episodes" in out
        assert _episode_ids(Store(tmp_path / "flywheel-data", pg.url)) == clean_round


def test_state_postgres_down_mid_round_stops_in_one_line_and_the_rerun_finishes(
        tmp_path, prefect_server, clean_round):
    with private_postgres() as pg:
        env = _env(prefect_server, FLYWHEEL_STATE_URL=pg.url)
        with held(ROUND, env=env, cwd=tmp_path, point="unit.committed:2") as proc:
            pg.stop()
        code, _, err = _finished(proc)
        _one_line_error(code, err, "state database", f"127.0.0.1:{pg.port}", "rerun")
        pg.start()
        rerun = flywheel(*ROUND, env=env, cwd=tmp_path)
        assert rerun.returncode == 0, rerun.stderr
        assert "Resumed and finished round r0001: 20 episodes" in rerun.stdout
        store = Store(tmp_path / "flywheel-data", pg.url)
        assert _episode_ids(store) == clean_round
        _recorded_shards_whole(store)


# --- the disk filling -------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 16 MB tmpfs of the test's own (skipped where this process may not mount one)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here to fill: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; returns the filler to delete."""
    filler = disk / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
        except OSError:
            pass
    return filler


@pytest.mark.parametrize("point", ["tasks.gated", "unit.committed:2"] + (["curate.marked"] if LONG else []))
def test_the_disk_filling_mid_round_is_one_line_naming_the_path_and_the_rerun_finishes(
        small_disk, prefect_server, clean_round, point):
    data = small_disk / "flywheel-data"
    env = _env(prefect_server, FLYWHEEL_DATA_DIR=str(data))
    with held(ROUND, env=env, cwd=small_disk.parent, point=point) as proc:
        filler = _fill(small_disk)
    code, _, err = _finished(proc)
    _one_line_error(code, err, str(data))
    assert "space" in err
    store = Store(data)
    _recorded_shards_whole(store)
    filler.unlink()
    rerun = flywheel(*ROUND, env=env, cwd=small_disk.parent)
    assert rerun.returncode == 0, rerun.stderr
    assert _episode_ids(store) == clean_round
    _recorded_shards_whole(store)


# --- two writers, and reviewers while a round curates -------------------------------------


def test_a_second_writer_is_refused_in_one_line_while_a_round_writes(tmp_path, prefect_server):
    env = _env(prefect_server)
    with held(ROUND, env=env, cwd=tmp_path, point="unit.committed:2") as proc:
        for args in (ROUND, ("eval", "--episodes", "10", "--no-progress")):
            second = flywheel(*args, env=env, cwd=tmp_path)
            _one_line_error(second.returncode, second.stderr, "another flywheel run is writing to")
    code, _, err = _finished(proc)
    assert code == 0, err
    assert len(set(_episode_ids(Store(tmp_path / "flywheel-data")))) == 20


def test_a_round_starting_while_an_eval_records_a_shard_takes_nothing_of_it(tmp_path, prefect_server):
    env = _env(prefect_server)
    assert flywheel(*ROUND, env=env, cwd=tmp_path).returncode == 0
    evaluation = ("eval", "--episodes", "20", "--no-progress")
    # the eval stands between renaming a shard into place and recording it: a round that took it for an
    # orphan would delete it, and the eval would then record a file that is not there
    with held(evaluation, env=env, cwd=tmp_path, point="shard.renamed:1") as proc:
        second = flywheel(*ROUND, env=env, cwd=tmp_path)
    code, _, err = _finished(proc)
    assert code == 0, err
    _one_line_error(second.returncode, second.stderr, "another flywheel run is writing to")
    store = Store(tmp_path / "flywheel-data")
    _recorded_shards_whole(store)
    evaluated = store.duck().execute("SELECT count(*) FROM feedback WHERE source = 'eval'").fetchone()[0]
    assert evaluated == 20
    assert flywheel(*ROUND, env=env, cwd=tmp_path).returncode == 0  # refused while the eval wrote, not for good
    assert len(set(_episode_ids(store, "r0002"))) == 20


@pytest.mark.parametrize(("point", "backend"), [("curate.marked", "postgres"), ("round.curated", "sqlite")] + (
    [("curate.marked", "sqlite"), ("round.curated", "postgres")] if LONG else []))
def test_reviewers_deciding_while_a_round_curates_lose_nothing_and_wait_for_nothing(
        tmp_path, prefect_server, backend, point, request):
    from review_app import decisions
    from tests.review_fixtures import make_accounts

    url = request.getfixturevalue("fresh_postgres_url") if backend == "postgres" else None
    env = _env(prefect_server, **({"FLYWHEEL_STATE_URL": url} if url else {}))
    assert flywheel(*ROUND, env=env, cwd=tmp_path).returncode == 0
    store = Store(tmp_path / "flywheel-data", url)
    make_accounts(store)
    first = _episode_ids(store)
    with held(ROUND, env=env, cwd=tmp_path, point=point) as proc:
        second = _episode_ids(store, "r0002")
        assert len(second) == 20  # collected; the round is curating
        slowest = 0.0
        for i, eid in enumerate(first + second):
            t0 = time.monotonic()
            decisions.record_decision(store, reviewer="ann" if i % 2 else "bob",
                                      round_id="r0001" if eid in first else "r0002", episode_id=eid,
                                      decision="approve" if i % 3 else "reject",
                                      reason_code="" if i % 3 else "wrong_result")
            slowest = max(slowest, time.monotonic() - t0)
        assert slowest < 5, f"a decision waited {slowest:.1f} s on the curating round"
    code, _, err = _finished(proc)
    assert code == 0, err
    with store.session() as s:
        reviews = list(s.exec(select(state.Review)))
    assert sorted(r.episode_id for r in reviews) == sorted(first + second)
    assert len(set(_episode_ids(store, "r0002"))) == 20
