"""An export killed (SIGKILL, a real ``flywheel export``) at each of its points -- after each new
file, after the manifest, after the link is swapped, at each file of the old version removed --
leaves ``out/openai-chat`` exactly the old export or exactly the new one, never a mix, and the next
export leaves exactly the new one and nothing else (issue: a rejected split's file outlived a killed
export, and ``openai-chat.*.jsonl`` picked it up)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import cli_env, flywheel
from tests.curation_data import build_round
from warehouse import state

EXPORT = ("export", "--verified", "--format", "openai", "--out", "out")
NAME = "openai-chat"


def _run(cwd: Path, data: Path, kill: str | None = None):
    extra = {"FLYWHEEL_KILL_AT": kill} if kill else {}
    return flywheel(*EXPORT, "--data-dir", str(data), env=cli_env(None, **extra), cwd=cwd)


def _seen(out: Path) -> dict[str, bytes]:
    """The export a reader sees through ``out/openai-chat`` (every file, by name), after checking that
    its manifest lists exactly the files beside it, with their checksums."""
    shown = out / NAME
    files = {p.name: p.read_bytes() for p in sorted(shown.iterdir())}
    manifest = json.loads(files[f"{NAME}.manifest.json"])
    assert set(files) - {f"{NAME}.manifest.json"} == set(manifest["files"]), "a manifest beside files it does not list"
    for name, f in manifest["files"].items():
        assert hashlib.sha256(files[name]).hexdigest() == f["sha256"]
    assert set(p.name for p in out.glob(f"{NAME}/{NAME}.*.jsonl")) <= set(manifest["files"])
    files[f"{NAME}.manifest.json"] = json.dumps(manifest | {"created_at": None}, sort_keys=True).encode()
    return files


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """The old export (every split), then a round where people rejected every episode of one split,
    whose clean export lacks that split's file."""
    base = tmp_path_factory.mktemp("killexp")
    store, round_id = build_round(base / "data", episodes=60, rollouts=2)
    assert _run(base, base / "data").returncode == 0
    old = _seen(base / "out")
    old_manifest = json.loads(old[f"{NAME}.manifest.json"])
    splits = sorted(f["split"] for f in old_manifest["files"].values())
    gone = "dev" if "dev" in splits else splits[-1]
    ids = [e for (e,) in store.duck().execute(
        "SELECT episode_id FROM episodes e JOIN tasks t USING (task_id) WHERE t.split = ?", [gone]).fetchall()]
    with store.session() as s:
        for eid in ids:
            s.add(state.Review(episode_id=eid, round_id=round_id, reviewer="bob", decision="reject",
                               reason="wrong_result", decided_at=datetime.now(UTC)))
        s.commit()
    clean = base / "clean"
    clean.mkdir()
    assert _run(clean, base / "data").returncode == 0
    new = _seen(clean / "out")
    assert f"{NAME}.{gone}.jsonl" in old and f"{NAME}.{gone}.jsonl" not in new
    assert len(new) == 3 and len(old) == 4  # two split files and three, and each its manifest
    return base / "data", base / "out", old, new


# after each of the new export's two files, its manifest, the swap, each of the old version's four files
POINTS = ["export.file:1", "export.file:2", "export.manifest:1", "export.swap:1",
          "export.remove:1", "export.remove:2", "export.remove:3", "export.remove:4"]


@pytest.mark.parametrize("point", POINTS)
def test_a_killed_export_leaves_the_old_export_or_the_new_never_a_mix_and_the_next_one_the_new(
        exports, tmp_path, point):
    data, old_out, old, new = exports
    out = tmp_path / "out"
    shutil.copytree(old_out, out, symlinks=True)  # the old export as it was left: its link and its version
    killed = _run(tmp_path, data, kill=point)
    assert killed.returncode == -9, f"{point} never reached: {killed.stderr}"
    seen = _seen(out)
    swapped = point.startswith(("export.swap", "export.remove"))
    assert seen == (new if swapped else old), f"killed at {point}: neither the old export nor the new one"
    again = _run(tmp_path, data)
    assert again.returncode == 0, again.stderr
    assert _seen(out) == new
    # nothing else left: the link, and the one version it points at (the killed run's leftovers are gone)
    assert sorted(p.name for p in out.iterdir()) == sorted([NAME, os.readlink(out / NAME)])
