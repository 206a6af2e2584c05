"""Feedback closes the loop: competence per family decides the next batch's mix."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from flows import stages
from flows.feedback_cmd import eval_round, import_feedback
from flows.stages.plan import next_plan
from generators.competence import Competence, competence_table, next_mix
from generators.planner import Plan
from tests.conftest import cli_env, flywheel
from warehouse.contract import FeedbackRecord
from warehouse.errors import InputError
from warehouse.settings import load_settings
from warehouse.state import Round
from warehouse.store import Store

NOW = datetime(2026, 3, 2, tzinfo=UTC)
MAXIMA = {"A": 3, "B": 3, "C": 3, "D": 3, "E": 3}


def _fb(family: str, difficulty: int, results: list[bool]) -> list[FeedbackRecord]:
    return [
        FeedbackRecord(task_id=f"t{i}", family=family, difficulty=difficulty, success=ok, batch="b", recorded_at=NOW)
        for i, ok in enumerate(results)
    ]


def test_competence_zones_need_evidence():
    table = competence_table(_fb("A", 1, [True] * 2) + _fb("B", 1, [True] * 20) + _fb("C", 2, [False] * 20))
    assert table[("A", 1)].zone == "learning"  # two results prove nothing yet
    assert table[("B", 1)].zone == "mastered"
    assert table[("C", 2)].zone == "failing"
    assert Competence("X", 1, 0, 0).zone == "unexplored"


def test_next_mix_moves_each_family_where_it_has_most_to_learn():
    records = (
        _fb("A", 1, [True] * 19 + [False])  # mastered level 1: harder tasks
        + _fb("B", 3, [True] * 20)  # mastered the hardest level: fewer
        + _fb("C", 2, [False] * 20)  # failing level 2: step down
        + _fb("D", 1, [True, False] * 10)  # learning, right at one half
    )
    mix = {m.family: m for m in next_mix(list("ABCDE"), competence_table(records), base_difficulty=1, max_difficulty=MAXIMA)}
    assert (mix["A"].difficulty, mix["B"].difficulty, mix["C"].difficulty, mix["D"].difficulty) == (2, 3, 1, 1)
    assert mix["B"].weight < mix["D"].weight
    assert mix["E"].reason.startswith("no feedback")
    assert all(m.reason for m in mix.values())


def test_learning_weight_peaks_at_one_half():
    def weight(successes: int) -> float:
        table = competence_table(_fb("D", 1, [True] * successes + [False] * (20 - successes)))
        return next_mix(["D"], table, base_difficulty=1, max_difficulty=MAXIMA)[0].weight

    assert weight(10) > weight(14) > weight(16)
    assert weight(10) > weight(6) > weight(4)


def _complete_round(store: Store, settings) -> str:
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan)
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=datetime.now(UTC))
    stages.curate_round(store, rnd.id)
    stages.finish_round(store, rnd.id)
    return rnd.id


def test_eval_of_a_round_changes_the_next_plan(tmp_path, state_url):
    settings = load_settings(data_dir=tmp_path / "d", state_url=state_url, round={"episodes": 60, "rollouts": 2})
    store = Store(settings.data_dir, settings.state_url)
    first = _complete_round(store, settings)
    families = stages.selected_families(settings)
    even = next_plan(store, settings, families, 2)
    assert len(set(even.weights.values())) == 1
    result = eval_round(store, None)
    assert (result.batch, result.imported) == (f"eval-{first}", 60)
    assert eval_round(store, first).already
    adapted = next_plan(store, settings, families, 2)
    assert len(set(adapted.weights.values())) > 1
    assert set(adapted.reasons) == set(families)
    # The next round is planned from that feedback, and keeps its plan when resumed.
    second = _complete_round(store, settings)
    with store.session() as s:
        plan = Plan.from_dict(s.get(Round, second).plan)
    assert plan.weights == adapted.weights


def test_trainer_feedback_import_reports_bad_lines_and_is_idempotent(tmp_path):
    settings = load_settings(data_dir=tmp_path / "d", round={"episodes": 10, "rollouts": 1})
    store = Store(settings.data_dir)
    _complete_round(store, settings)
    task_ids = [r[0] for r in store.duck().execute("SELECT task_id FROM tasks ORDER BY task_id").fetchall()]
    lines = [json.dumps({"task_id": t, "success": i % 2 == 0}) for i, t in enumerate(task_ids[:6])]
    lines.insert(2, "{not json")
    lines.append(json.dumps({"task_id": "t-nope", "success": True}))
    lines.append(json.dumps({"task_id": task_ids[6], "reward": 1.0}))
    lines.append(json.dumps({"task_id": task_ids[7]}))
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = import_feedback(store, path, model="sft-v1")
    assert result.imported == 7
    assert [where for where, _ in result.skipped] == ["line 3", "line 8", "line 10"]
    assert "not JSON" in result.skipped[0][1] and "unknown task id" in result.skipped[1][1]
    assert import_feedback(store, path, model="sft-v1").already
    rows = store.duck().execute("SELECT count(*), count(DISTINCT batch) FROM feedback").fetchone()
    assert rows == (7, 1)


def test_feedback_file_that_is_not_json_is_one_line(tmp_path):
    bad = tmp_path / "eval.json"
    bad.write_text('[{"task_id": "x", "success": true},\n oops]')
    with pytest.raises(InputError, match=r"eval.json:2:2: not JSON"):
        import_feedback(Store(tmp_path / "d"), bad, model="")
    proc = flywheel("feedback", str(bad), "--data-dir", str(tmp_path / "d"), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [f"error: {bad}:2:2: not JSON: Expecting value"]


def test_a_released_sampling_plan_decides_the_next_round_once(tmp_path):
    from review_app import decisions, release
    from review_app.data import Overlap
    from tests.review_fixtures import make_accounts

    settings = load_settings(data_dir=tmp_path / "d", round={"episodes": 24, "rollouts": 2})
    store = Store(settings.data_dir)
    first = _complete_round(store, settings)
    make_accounts(store)
    eid = store.duck().execute("SELECT episode_id FROM episodes ORDER BY episode_id LIMIT 1").fetchone()[0]
    decisions.record_decision(store, reviewer="ann", round_id=first, episode_id=eid, decision="approve")
    rel = release.approve_release(
        store, lead="lea", dataset_version="v1", round_ids=[first],
        sampling_plan={"episodes": 10, "families": {"F02": 0.75, "F05": 0.25}}, overlap=Overlap(0.0, 2),
    )
    families = stages.selected_families(settings)
    planned = next_plan(store, settings, families, 2)
    assert planned.source == f"release {rel.id}" and planned.episodes == 10
    assert {s.family for s in planned.slots} == {"F02", "F05"}
    assert planned.weights == {"F02": 0.75, "F05": 0.25}
    second = _complete_round(store, settings)
    assert store.duck([second]).execute("SELECT count(*) FROM episodes").fetchone()[0] == 10
    # Used once: the round after goes back to the settings and the feedback.
    after = next_plan(store, settings, families, 3)
    assert after.source == "even" and after.episodes == 24
