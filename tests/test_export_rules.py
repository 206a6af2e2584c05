"""Export rules every format keeps: a turn that gets no loss in SFT is never a preference pair's chosen
side, and an episode with no trainable turn gives no row in any format."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from curation.export_run import SFT_FORMATS, run_export
from curation.export_source import masked_steps
from curation.formats.dpo import Rollout, step_pairs
from tests.conftest import export_dir
from tests.curation_data import build_round


@pytest.fixture(scope="module")
def curated(tmp_path_factory):
    store, round_id = build_round(tmp_path_factory.mktemp("rules") / "data", episodes=240, rollouts=3)
    return store, round_id, store.duck([round_id])


def _rows(out: Path, manifest: dict) -> list[dict]:
    rows = []
    for name in manifest["files"]:
        if name.endswith(".jsonl"):
            rows += [json.loads(line) for line in (export_dir(out, manifest) / name).read_text(encoding="utf-8").splitlines()]
        elif name.endswith(".parquet"):
            rows += pq.read_table(export_dir(out, manifest) / name).to_pylist()
    return rows


def _approve(episode_id: str, first_wrong_step: int | None = None) -> SimpleNamespace:
    return SimpleNamespace(episode_id=episode_id, decision="approve", reviewer="ana", first_wrong_step=first_wrong_step,
                           recovered=False)


def _episode_of(fmt: str, row: dict) -> str:
    if fmt == "sharegpt":
        return row["id"]
    if fmt == "adp":
        return row["details"]["episode_id"]
    return row.get("episode_id") or row["metadata"]["episode_id"]


@pytest.mark.parametrize("fmt", SFT_FORMATS)
def test_first_wrong_step_zero_gives_no_row_in_any_format(curated, fmt):
    _, round_id, con = curated
    ids = [e for (e,) in con.execute(
        "SELECT episode_id FROM episodes e JOIN tasks t USING (task_id) WHERE t.split = 'train' ORDER BY 1 LIMIT 2").fetchall()]
    decisions = {ids[0]: _approve(ids[0], first_wrong_step=0), ids[1]: _approve(ids[1])}
    with tempfile.TemporaryDirectory() as out:
        _, manifest = run_export(con, fmt, Path(out), rounds=[round_id], decisions=decisions, include_verified=False,
                                 scrubber=None)
        exported = {_episode_of(fmt, r) for r in _rows(Path(out), manifest)}
    assert ids[0] not in exported and ids[1] in exported
    assert manifest["excluded"]["no_trainable_turn"] == 1
    assert manifest["approved_left_out"]["episodes"][0]["episode_id"] == ids[0]


def test_no_chosen_side_is_a_turn_sft_masks(curated):
    _, round_id, con = curated
    masked = {e: masked_steps({"heuristics_detail": d}) for e, d in con.execute(
        "SELECT episode_id, max(detail) FROM marks WHERE \"check\" = 'heuristics' GROUP BY 1").fetchall()}
    assert any(masked.values())  # the round has steps the heuristics mask
    with tempfile.TemporaryDirectory() as out:
        _, manifest = run_export(con, "dpo", Path(out), rounds=[round_id], decisions={}, include_verified=True,
                                 scrubber=None, pairs="both")
        rows = _rows(Path(out), manifest)
    steps = [r for r in rows if r["metadata"]["level"] == "step"]
    episodes = [r for r in rows if r["metadata"]["level"] == "episode"]
    assert steps and episodes
    for r in steps:
        assert r["metadata"]["divergence_step"] not in masked[r["metadata"]["chosen_id"]]
    for r in episodes:
        assert not masked[r["metadata"]["chosen_id"]]


def _turns(calls: list[str]) -> tuple:
    turns = [({"role": "system", "content": "s"}, None), ({"role": "user", "content": "u"}, None)]
    for i, name in enumerate(calls):
        turns.append(({"role": "assistant", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}]}, i))
    return tuple(turns)


def test_a_step_pair_never_chooses_a_masked_turn():
    good = Rollout(None, "chosen", "verifier", turns=_turns(["a", "b"]))
    bad = Rollout(None, "rejected", "verifier", "failure", turns=_turns(["a", "c"]))
    assert len(step_pairs([good, bad])) == 1
    assert step_pairs([Rollout(None, "chosen", "verifier", turns=_turns(["a", "b"]), no_loss=frozenset({1})), bad]) == []
