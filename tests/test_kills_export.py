"""An export killed (SIGKILL, a real ``flywheel export``) at each file of its swap leaves the old
export or no manifest at all, and the next export finishes the swap: no file of the old export
survives beside the new manifest (issue: a rejected split's file outlived a killed export, and
``openai-chat.*.jsonl`` picked it up)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import cli_env, flywheel
from tests.curation_data import build_round
from warehouse import state

EXPORT = ("export", "--verified", "--format", "openai", "--out", "out")


def _run(cwd: Path, data: Path, kill: str | None = None):
    extra = {"FLYWHEEL_KILL_AT": kill} if kill else {}
    return flywheel(*EXPORT, "--data-dir", str(data), env=cli_env(None, **extra), cwd=cwd)


def _state(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _consistent(out: Path) -> dict | None:
    """The manifest, when there is one, after checking it lists exactly the export's files beside it."""
    path = out / "openai-chat.manifest.json"
    visible = {p.name for p in out.glob("openai-chat.*.jsonl")}
    if not path.exists():
        return None
    manifest = json.loads(path.read_text())
    assert visible == set(manifest["files"]), "a manifest beside files it does not list"
    for name, f in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == f["sha256"]
    return manifest


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """The old export (every split), then a round where people rejected every episode of one split,
    whose clean export lacks that split's file."""
    base = tmp_path_factory.mktemp("killexp")
    store, round_id = build_round(base / "data", episodes=60, rollouts=2)
    assert _run(base, base / "data").returncode == 0
    old = _state(base / "out")
    old_manifest = json.loads(old["openai-chat.manifest.json"])
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
    new = _state(clean / "out")
    assert f"openai-chat.{gone}.jsonl" in old and f"openai-chat.{gone}.jsonl" not in new
    return base / "data", old, new, len(old_manifest["files"])


def _without_times(files: dict[str, bytes]) -> dict:
    return {n: (json.loads(b) | {"created_at": None}) if n.endswith(".manifest.json") else b for n, b in files.items()}


@pytest.mark.parametrize("point", ["export.journal:1", "export.file:1", "export.file:2", "export.file:3",
                                   "export.manifest:1"])
def test_a_killed_export_leaves_the_old_or_none_and_the_next_one_leaves_no_old_file(exports, tmp_path, point):
    data, old, new, _ = exports
    out = tmp_path / "out"
    out.mkdir()
    for name, body in old.items():
        (out / name).write_bytes(body)
    killed = _run(tmp_path, data, kill=point)
    assert killed.returncode == -9, f"{point} never reached: {killed.stderr}"
    manifest = _consistent(out)
    if manifest is not None:  # killed before the swap began: the old export, as it was (and hidden temporaries)
        assert {n: b for n, b in _state(out).items() if not n.startswith(".")} == old
    else:  # killed in the swap: no manifest vouches for anything, and the journal says how to finish
        assert (out / ".openai-chat.swap.json").exists()
    again = _run(tmp_path, data)
    assert again.returncode == 0, again.stderr
    _consistent(out)
    assert _without_times(_state(out)) == _without_times(new)  # exactly the clean new export: nothing old left
