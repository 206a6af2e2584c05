"""Storage refusals: what the warehouse will not do to files, and the one line a user gets when the
disk or the data directory cannot take a write.

- ``export --out`` inside the data directory (its shards, the directory itself, through a symlink) is
  refused before anything is written.
- ``export`` onto a full disk (a small tmpfs, where this process may mount one) or past a file size
  limit (RLIMIT_FSIZE, which needs no privilege) is one line naming ``--out``, and leaves no manifest
  nor temporary file behind.
- ``decide`` on a read-only data directory (a read-only bind mount as root, ``chmod`` otherwise) is
  one line naming the state database, and records nothing.
- ``review_port`` outside 1-65535 is refused by the settings check.
"""

from __future__ import annotations

import os
import resource
import sqlite3
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import cli_env, flywheel, flywheel_executable
from tests.fuzz import assert_one_clear_line, tree_digest
from tests.review_fixtures import PASSWORD, make_accounts, make_round
from tests.test_bad_input_cli import run_cli
from warehouse import shard_intents
from warehouse.errors import ConfigError
from warehouse.settings import load_settings
from warehouse.store import Store


@pytest.fixture(autouse=True)
def no_user_settings(monkeypatch):
    """A user's FLYWHEEL_* variables never change what these tests see."""
    for name in [k for k in os.environ if k.startswith("FLYWHEEL_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> tuple[Path, list[str]]:
    data = tmp_path_factory.mktemp("refusals") / "data"
    store = Store(data)
    ids = make_round(store, n_tasks=40, families=("F01", "F02", "F05"))
    make_accounts(store)
    return data, ids


def _export(data: Path, out: Path, *more: str) -> list[str]:
    return ["export", "--verified", "--no-progress", "--data-dir", str(data), "--out", str(out), *more]


# --- export --out inside the warehouse ----------------------------------------------------


@pytest.mark.parametrize("inside", ["shards", "shards/episodes/r0001", ".", "new/deeper", "via-link"])
def test_export_into_the_data_directory_is_refused_in_one_line(world, tmp_path, capsys, inside):
    data, _ = world
    if inside == "via-link":  # a directory elsewhere that is a symlink into the shards
        (tmp_path / "via-link").symlink_to(data / "shards")
        out = tmp_path / "via-link" / "ünïcode\nexport"
    else:
        out = data / inside
    before = tree_digest(data)
    code, _, err = run_cli(_export(data, out), capsys)
    assert code == 1
    assert_one_clear_line(err)
    assert "is inside the data directory" in err and str(data.resolve()) in err
    assert tree_digest(data) == before
    assert not (data / "new").exists()


def test_export_beside_the_data_directory_is_not_refused(world, tmp_path, capsys):
    data, _ = world
    sibling = data.parent / f"{data.name}-exports"  # a name that starts like the data directory's
    code, _, err = run_cli(_export(data, sibling), capsys)
    assert code == 0, err
    assert (sibling / "openai-chat" / "openai-chat.manifest.json").exists()


# --- export onto a full disk --------------------------------------------------------------


@contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``where`` (skipped where this process may not mount one)."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _no_half_export(out: Path) -> None:
    left = sorted(str(p.relative_to(out)) for p in out.rglob("*")) if out.exists() else []
    assert left == [], left  # not the export's link, nor the version it was writing


def test_export_onto_a_full_disk_is_one_line_with_the_path(world, tmp_path, capsys):
    data, _ = world
    with small_disk(tmp_path / "disk", "16k") as disk:
        out = disk / "out"
        code, _, err = run_cli(_export(data, out), capsys)
        assert code == 1
        assert_one_clear_line(err)
        assert f"cannot write the export into {out}" in err and "No space left on device" in err
        _no_half_export(out)


def test_export_past_a_file_size_limit_is_one_line_with_the_path(tmp_path, fresh_postgres_url):
    """The same without a mount: RLIMIT_FSIZE caps every file the command writes (Python ignores
    SIGXFSZ, so a write past it fails with EFBIG). The state is in PostgreSQL, so that the export's
    own files are the only ones the command writes to."""
    data = tmp_path / "data"
    store = Store(data, fresh_postgres_url)
    make_round(store, n_tasks=8)
    store.engine.dispose()
    limit = 4096
    out = tmp_path / "out"

    def capped() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = cli_env(None)
    argv = _export(data, out, "--format", "sharegpt", "--state-url", fresh_postgres_url)
    done = subprocess.run([flywheel_executable(), *argv], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, preexec_fn=capped)
    assert done.returncode == 1, done.stdout + done.stderr
    assert_one_clear_line(done.stderr)
    assert f"cannot write the export into {out}" in done.stderr and "File too large" in done.stderr
    _no_half_export(out)
    # the same export without the cap is larger than the cap: the limit is what failed it
    whole = flywheel(*_export(data, tmp_path / "whole", "--format", "sharegpt", "--state-url", fresh_postgres_url),
                     env=env, cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert max(p.stat().st_size for p in (tmp_path / "whole" / "sharegpt").iterdir()) > limit


# --- decide on a read-only data directory -------------------------------------------------


@contextmanager
def read_only_view(data: Path, where: Path) -> Iterator[Path]:
    """``data`` seen read-only at ``where``: a read-only bind mount as root (whom file modes do not
    stop), the files' write bits taken away otherwise."""
    if os.geteuid() == 0:
        where.mkdir()
        bound = subprocess.run(["mount", "--bind", str(data), str(where)], capture_output=True, text=True)
        if bound.returncode != 0:
            pytest.skip(f"cannot bind-mount here: {bound.stderr.strip()}")
        try:
            ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(where)], capture_output=True, text=True)
            if ro.returncode != 0:
                pytest.skip(f"cannot remount read-only here: {ro.stderr.strip()}")
            yield where
        finally:
            subprocess.run(["umount", "-l", str(where)], check=False)
        return
    modes = {p: p.stat().st_mode for p in [data, *data.rglob("*")]}
    for p, mode in modes.items():
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield data
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


@pytest.mark.parametrize("reader_open", [False, True], ids=["alone", "while-a-reader-holds-it"])
def test_decide_on_a_read_only_data_directory_is_one_line(world, tmp_path, capsys, reader_open):
    data, ids = world
    before = tree_digest(data)
    reader = None
    if reader_open:  # a review app reading the database keeps its WAL files beside it
        reader = sqlite3.connect(data / "state.db")
        reader.execute("SELECT count(*) FROM rounds").fetchall()
    try:
        with read_only_view(data, tmp_path / "ro") as ro:
            argv = ["decide", ids[0], "--reviewer", "ann", "--decision", "approve", "--password-stdin",
                    "--data-dir", str(ro)]
            code, _, err = run_cli(argv, capsys, stdin=PASSWORD + "\n")
    finally:
        if reader is not None:
            reader.close()
    assert code == 1
    assert_one_clear_line(err)
    assert "state database" in err and "read-only" in err and str(ro) in err
    assert tree_digest(data) == before


# --- review_port ----------------------------------------------------------------------------


@pytest.mark.parametrize("port", [0, -1, 65536, 10**9])
def test_a_review_port_out_of_range_is_refused_by_the_settings_check(world, tmp_path, capsys, port):
    config = tmp_path / "flywheel.toml"
    config.write_text(f"review_port = {port}\n")
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert "review_port" in str(refused.value) and str(config) in str(refused.value)
    assert "\n" not in str(refused.value)
    code, _, err = run_cli(["status", "--config", str(config), "--data-dir", str(world[0])], capsys)
    assert code == 1 and "review_port" in err
    assert_one_clear_line(err)


@pytest.mark.parametrize("port", [1, 8501, 65535])
def test_a_review_port_in_range_is_taken(tmp_path, port):
    config = tmp_path / "flywheel.toml"
    config.write_text(f"review_port = {port}\n")
    assert load_settings(config).review_port == port


# --- orphan removal deletes only what a writer of ours left -------------------------------


def _parquet_bytes(store: Store) -> bytes:
    (recorded,) = store.readable(store.recorded())["episodes"]
    return Path(recorded).read_bytes()


def _episode_store(tmp_path: Path, state_url: str | None) -> Store:
    from tests.test_storage import _episode

    store = Store(tmp_path / "data", state_url)
    store.commit_unit("r0001", "s00000", {"episodes": [_episode(1)]})
    return store


def test_orphan_removal_never_follows_a_symlink_out_of_the_data_directory(tmp_path, state_url):
    store = _episode_store(tmp_path, state_url)
    data = bytes(_parquet_bytes(store))
    outside = tmp_path / "someone's files"
    (outside / "r0009").mkdir(parents=True)
    for name in ("s00000.parquet", "s00001.parquet.tmp-77", "keep.parquet"):
        (outside / "r0009" / name).write_bytes(data)
    (outside / "single.parquet").write_bytes(data)
    shards = tmp_path / "data" / "shards" / "episodes"
    (shards / "r0009").symlink_to(outside / "r0009", target_is_directory=True)  # a folder of shards elsewhere
    (shards / "r0001" / "s00007.parquet").symlink_to(outside / "single.parquet")
    (tmp_path / "data" / "shards" / "linked-table").symlink_to(outside, target_is_directory=True)
    # even an intent naming a path through the symlink (as if a killed writer had declared it) deletes nothing there
    with store.session() as s:
        shard_intents.declare(session=s, paths=["shards/episodes/r0009/s00000.parquet",
                                                "shards/episodes/r0001/s00007.parquet"])
    assert store.clean_orphans() == []
    assert sorted(p.name for p in (outside / "r0009").iterdir()) == ["keep.parquet", "s00000.parquet",
                                                                     "s00001.parquet.tmp-77"]
    assert (outside / "single.parquet").read_bytes() == data
    assert (shards / "r0001" / "s00007.parquet").is_symlink()
    assert (shards / "r0001" / "s00000.parquet").exists()  # the recorded shard


def test_a_shards_folder_that_is_a_symlink_is_not_walked(tmp_path):
    store = _episode_store(tmp_path, None)
    data = tmp_path / "data"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.parquet.tmp-1").write_bytes(b"theirs")
    (data / "shards").rename(tmp_path / "real-shards")
    (data / "shards").symlink_to(elsewhere, target_is_directory=True)
    assert store.clean_orphans() == []
    assert (elsewhere / "x.parquet.tmp-1").read_bytes() == b"theirs"


def test_a_killed_writer_leaves_only_what_the_next_run_removes(tmp_path, state_url, monkeypatch):
    """A shard written and never recorded (the writer died between the put and the record) is
    removed by the next writer, and recording it again later works: the intent is what marks it."""
    from tests.test_storage import _episode
    from warehouse import state

    store = _episode_store(tmp_path, state_url)
    def killed(**_):  # as a kill between the put and the record would leave things
        raise RuntimeError("killed before recording")

    monkeypatch.setattr(state, "record_shards", killed)
    with pytest.raises(RuntimeError, match="killed"):
        store.commit_unit("r0001", "s00001", {"episodes": [_episode(2)]})
    monkeypatch.undo()
    left = tmp_path / "data" / "shards" / "episodes" / "r0001" / "s00001.parquet"
    assert left.exists()
    (left.parent / "exported-by-hand.parquet").write_bytes(left.read_bytes())
    assert store.clean_orphans() == ["shards/episodes/r0001/s00001.parquet"]
    assert sorted(p.name for p in left.parent.iterdir()) == ["exported-by-hand.parquet", "s00000.parquet"]
    store.commit_unit("r0001", "s00001", {"episodes": [_episode(2)]})
    with store.session() as s:
        assert state.recorded_keys(session=s, round_id="r0001", table_name="episodes") == {"s00000", "s00001"}
        assert shard_intents.pending(session=s) == set()



@pytest.mark.slow
def test_a_round_keeps_files_it_never_wrote_under_shards(tmp_path, prefect_server):
    """The command as a user runs it: someone's export and a symlink out of the data directory sit
    under ``shards/`` when a round starts; the round removes neither, nor anything they point at."""
    import json

    from tests.test_faults import _env

    data = tmp_path / "flywheel-data"
    theirs = data / "shards" / "episodes" / "r0001" / "their export.parquet"
    theirs.parent.mkdir(parents=True)
    theirs.write_bytes(b"PAR1 not ours PAR1")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("s00000.parquet", "s00000.parquet.tmp-1"):
        (outside / name).write_text("ünïcode\nnot ours")
    (data / "shards" / "episodes" / "r0002").symlink_to(outside, target_is_directory=True)
    link = theirs.with_name("s00009.parquet")
    link.symlink_to(outside / "s00000.parquet")
    done = flywheel("run", "--episodes", "4", "--seed", "1", "--no-progress", "--json", env=_env(prefect_server),
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["orphans_removed"] == 0
    assert theirs.read_bytes() == b"PAR1 not ours PAR1"
    assert link.is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["s00000.parquet", "s00000.parquet.tmp-1"]
    assert Store(data).duck().execute("SELECT count(*) FROM episodes").fetchone()[0] >= 4
