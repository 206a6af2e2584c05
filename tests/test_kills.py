"""Kill -9 at named points of each long command, rerun, and compare with a run never killed.

A real ``flywheel`` subprocess is armed with ``FLYWHEEL_KILL_AT=POINT:N`` (see
``warehouse/killpoints.py``) and SIGKILLs itself the N-th time it passes POINT: the kill
lands at the same place every time, no sleep-and-hope. After the rerun: no lost episode,
no duplicate, and the same episodes and export files, byte for byte, as the clean run.
An export killed midway leaves a whole export: the old one or the new, its manifest true.

``FLYWHEEL_LONG_TESTS=1`` adds the long variant: many random kill points per command.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from tests.conftest import cli_env, flywheel
from warehouse.store import Store

pytestmark = pytest.mark.slow
LONG = os.environ.get("FLYWHEEL_LONG_TESTS") == "1"
ROUND = ("run", "--episodes", "40", "--seed", "3", "--no-progress")
EXPORT = ("export", "--verified", "--out", "out")
# Each long command and the points it passes (with how many times at most, for random picks).
POINTS = {
    "run": [("shard.written", 4), ("shard.renamed", 4), ("unit.committed", 5),
            ("tasks.gated", 1), ("curate.marked", 1), ("round.curated", 1)],  # writing tasks, curating
    "export": [("export.file", 2), ("export.manifest", 1), ("export.swap", 1), ("export.remove", 2)],
}


def _env(prefect_server, **extra):
    return cli_env(prefect_server, FLYWHEEL_ROUND__SHARD_SIZE="10", **extra)


def _episodes(data: Path) -> list[str]:
    con = Store(data).duck()
    return [r[0] for r in con.execute("SELECT episode_id FROM episodes ORDER BY episode_id").fetchall()]


def _files(out: Path) -> dict[str, bytes]:
    """The files of the export a reader sees through ``out/openai-chat``, but its manifest (it has the time)."""
    return {p.name: p.read_bytes() for p in sorted((out / "openai-chat").iterdir()) if not p.name.endswith(".manifest.json")}


@pytest.fixture(scope="module")
def clean(tmp_path_factory, prefect_server):
    """One round and one export never killed: what every killed-and-rerun run must equal."""
    cwd = tmp_path_factory.mktemp("clean")
    env = _env(prefect_server)
    for args in (ROUND, EXPORT):
        done = flywheel(*args, env=env, cwd=cwd)
        assert done.returncode == 0, done.stderr
    return {"episodes": _episodes(cwd / "flywheel-data"), "files": _files(cwd / "out")}


def _killed_then_rerun(cwd: Path, prefect_server, args, point: str) -> None:
    killed = flywheel(*args, env=_env(prefect_server, FLYWHEEL_KILL_AT=point), cwd=cwd)
    assert killed.returncode == -9, f"{point} was never reached: {killed.returncode} {killed.stderr}"
    rerun = flywheel(*args, env=_env(prefect_server), cwd=cwd)
    assert rerun.returncode == 0, rerun.stderr
    assert "Traceback" not in rerun.stdout + rerun.stderr


def _cases(command: str) -> list[str]:
    fixed = [f"{name}:{min(2, most)}" for name, most in POINTS[command]]
    if not LONG:
        return fixed
    rng = random.Random(14)
    return fixed + [f"{n}:{rng.randint(1, most)}" for n, most in rng.choices(POINTS[command], k=12)]


@pytest.mark.parametrize("point", _cases("run"))
def test_a_round_killed_at_a_point_then_rerun_equals_a_clean_round(tmp_path, prefect_server, clean, point):
    _killed_then_rerun(tmp_path, prefect_server, ROUND, point)
    episodes = _episodes(tmp_path / "flywheel-data")
    # 40 planned, plus the later sessions of F09's two-session scenarios
    assert len(episodes) == len(set(episodes)) == len(clean["episodes"]) >= 40
    assert episodes == clean["episodes"]
    done = flywheel(*EXPORT, env=_env(prefect_server), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _files(tmp_path / "out") == clean["files"]


@pytest.mark.parametrize("point", _cases("export"))
def test_an_export_killed_midway_leaves_a_whole_export_then_the_rerun_equals_a_clean_one(
        tmp_path, prefect_server, clean, point):
    for args in (ROUND, EXPORT):  # a previous export is in place: it must not vouch for a half-new set
        done = flywheel(*args, env=_env(prefect_server), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    killed = flywheel(*EXPORT, env=_env(prefect_server, FLYWHEEL_KILL_AT=point), cwd=tmp_path)
    assert killed.returncode == -9, killed.stderr
    # killed midway: a reader sees a whole export (the old one or the new, the same here), its manifest true
    manifest = json.loads((tmp_path / "out" / "openai-chat" / "openai-chat.manifest.json").read_text())
    assert set(manifest["files"]) == set(_files(tmp_path / "out")) and _files(tmp_path / "out") == clean["files"]
    rerun = flywheel(*EXPORT, env=_env(prefect_server), cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert _files(tmp_path / "out") == clean["files"]
    assert len(list((tmp_path / "out").iterdir())) == 2  # the link and its version: the killed one's are gone
