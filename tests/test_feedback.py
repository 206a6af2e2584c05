"""Feedback closes the loop: competence per family decides the next batch's mix."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from rich.console import Console

from flows import stages
from flows.pipeline import plan_eval, run_eval
from flows.planning import next_plan, plan_view
from flows.stages.feedback import import_feedback
from flows.views import print_plan
from generators.batch_plan import Plan
from tests.conftest import cli_env, flywheel
from warehouse.errors import InputError
from warehouse.settings import load_settings
from warehouse.state import Round
from warehouse.store import Store


def _complete_round(store: Store, settings) -> str:
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan)
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=datetime.now(UTC))
    stages.curate_round(store, rnd.id)
    stages.finish_round(store, rnd.id)
    return rnd.id


def test_an_eval_on_dev_tasks_steers_the_next_plan_and_those_on_test_and_train_do_not(tmp_path, state_url):
    settings = load_settings(data_dir=tmp_path / "d", state_url=state_url, round={"episodes": 60, "rollouts": 2})
    store = Store(settings.data_dir, settings.state_url)
    _complete_round(store, settings)
    count = "SELECT count(*) FROM episodes"
    round_episodes = store.duck(["r0001"]).execute(count).fetchone()[0]  # 60 planned, and later sessions of F09
    families = stages.selected_families(settings)
    even = next_plan(store, settings, families, 2)
    assert len(set(even.weights.values())) == 1
    with pytest.raises(InputError, match=r"--split 'challenge': evaluate on dev .*, test .* or train"):
        plan_eval(store, settings, families, split="challenge", episodes=10)
    round_tasks = {r[0] for r in store.duck(["r0001"]).execute("SELECT task_id FROM tasks").fetchall()}
    # A test eval and a train eval (new tasks of the trained variants: did the model learn them?) are
    # recorded and reported, but the plan does not move.
    reported = {}
    for split in ("test", "train"):
        held = plan_eval(store, settings, families, split=split, episodes=30)
        reported[split] = len(held.tasks)
        assert {t.split for t in held.tasks} == {split} and held.tasks
        assert not round_tasks & {t.task_id for t in held.tasks}  # fresh tasks, never the round's own
        assert run_eval(store, settings, held).imported == len(held.tasks)
        assert store.duck().execute("SELECT DISTINCT split FROM feedback WHERE batch = ?",
                                    [held.batch]).fetchall() == [(split,)]
        assert next_plan(store, settings, families, 2).weights == even.weights
    # flywheel plan says they are there and do not steer it (not "no feedback yet")
    shown = plan_view(store, settings, families)
    assert not shown["competence"]
    assert [(r["split"], r["results"]) for r in shown["reported_evals"]] == [("train", reported["train"]),
                                                                             ("test", reported["test"])]
    console = Console(record=True, width=200)
    print_plan(console, shown)
    assert f"Reported only, never planned from: {held.batch} (" in console.export_text()
    # A dev eval: fresh dev tasks only (none of the round's), results with failure types.
    dev = plan_eval(store, settings, families, split="dev", episodes=60)
    assert {t.split for t in dev.tasks} == {"dev"} and len(dev.tasks) == 60 - 10 * len(dev.missing)
    assert not round_tasks & {t.task_id for t in dev.tasks}
    result = run_eval(store, settings, dev)
    assert (result.batch, result.imported) == (dev.batch, len(dev.tasks))
    # the same eval again is not run twice (planned anew, levels may have moved with this very feedback:
    # a family at a high rate probes the level above, and that is another eval)
    assert run_eval(store, settings, dev).already
    failures = store.duck().execute(
        "SELECT count(*) FILTER (WHERE NOT success), count(failure_type) FROM feedback WHERE batch = ?",
        [dev.batch]).fetchone()
    assert failures[0] > 0 and failures[0] == failures[1]  # every failure says why
    adapted = next_plan(store, settings, families, 2)
    assert len(set(adapted.weights.values())) > 1
    assert set(adapted.reasons) == set(families)
    # Eval episodes are never a round's (so never training data).
    assert store.duck(["r0001"]).execute(count).fetchone()[0] == round_episodes >= 60
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


def test_the_command_line_names_the_file_of_each_skipped_record_as_import_does(tmp_path):
    from tests.review_fixtures import make_round

    store = Store(tmp_path / "d")
    make_round(store, n_tasks=2)
    (task_id,) = store.duck().execute("SELECT task_id FROM tasks ORDER BY task_id LIMIT 1").fetchone()
    (tmp_path / "in[").mkdir()
    results = tmp_path / "in[" / "bold]results.jsonl"  # a path that reads as markup: printed as it is
    results.write_text("\n".join([json.dumps({"task_id": task_id, "success": True}), "{not json",
                                  json.dumps({"task_id": "t-nope", "success": True})]) + "\n")
    proc = flywheel("feedback", str(results), "--data-dir", str(tmp_path / "d"), env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == [
        f"warning: {results}: line 2: skipped: not JSON at column 2: Expecting property name enclosed in double quotes",
        f"warning: {results}: line 3: skipped: unknown task id 't-nope'"]
    assert proc.stdout.startswith(f"Recorded 1 results from {results} as fb-")
    again = flywheel("feedback", str(results), "--data-dir", str(tmp_path / "d"), env=cli_env(None), cwd=tmp_path)
    assert again.returncode == 0 and again.stdout.startswith(f"{results} was already imported as fb-"), again.stderr


def test_past_twenty_skipped_records_feedback_says_how_many_more(tmp_path):
    import io

    from rich.console import Console

    from flows.views import print_skipped

    errors = io.StringIO()
    print_skipped(Console(file=errors, width=400), "r.jsonl", [(f"line {n}", "[bold]x") for n in range(1, 23)], limit=20)
    lines = errors.getvalue().splitlines()
    assert lines[0] == "warning: r.jsonl: line 1: skipped: [bold]x" and len(lines) == 21
    assert lines[-1] == "warning: r.jsonl: ... and 2 more skipped records"


def _one_approved_round(tmp_path, **round_settings):
    """Settings, store and the id of a complete round with one episode approved (accounts ann and lea)."""
    from review_app import decisions
    from tests.review_fixtures import make_accounts

    settings = load_settings(data_dir=tmp_path / "d", round=round_settings)
    store = Store(settings.data_dir)
    first = _complete_round(store, settings)
    make_accounts(store)
    eid = store.duck().execute("SELECT min(episode_id) FROM episodes").fetchone()[0]
    decisions.record_decision(store, reviewer="ann", round_id=first, episode_id=eid, decision="approve")
    return settings, store, first


def test_a_released_sampling_plan_decides_the_next_round_once(tmp_path):
    from review_app import release
    from review_app.data import Overlap

    settings, store, first = _one_approved_round(tmp_path, episodes=24, rollouts=2)
    rel = release.approve_release(
        store, lead="lea", dataset_version="v1", round_ids=[first],
        sampling_plan={"episodes": 10, "families": {"F02": 0.75, "F05": 0.25}, "difficulties": {"F02": 2}},
        overlap=Overlap(0.0, 2),
    )
    families = stages.selected_families(settings)
    planned = next_plan(store, settings, families, 2)
    assert planned.source == f"release {rel.id}" and planned.episodes == 10
    assert {s.family for s in planned.slots} == {"F02", "F05"}
    assert planned.weights == {"F02": 0.75, "F05": 0.25}
    assert {s.difficulty for s in planned.slots if s.family == "F02"} == {2}  # the lead's level
    second = _complete_round(store, settings)
    assert store.duck([second]).execute("SELECT count(*) FROM episodes").fetchone()[0] == 10
    # Used once: the round after goes back to the settings and the feedback.
    after = next_plan(store, settings, families, 3)
    assert after.source == "even" and after.episodes == 24


def test_a_release_without_a_sampling_plan_leaves_the_next_round_to_the_planner(tmp_path):
    from review_app import release
    from review_app.data import Overlap

    settings, store, first = _one_approved_round(tmp_path, episodes=12, rollouts=1)
    rel = release.approve_release(store, lead="lea", dataset_version="v1", round_ids=[first], sampling_plan=None,
                                  overlap=Overlap(0.0, 2))
    assert rel.sampling_plan == {} and rel.episodes == 1
    planned = next_plan(store, settings, stages.selected_families(settings), 2)
    assert planned.source == "even" and planned.episodes == 12  # the settings and the feedback, not the release
    with pytest.raises(InputError, match="sampling plan"):  # a plan, when given, is still checked
        release.approve_release(store, lead="lea", dataset_version="v2", round_ids=[first],
                                sampling_plan={"episodes": 0, "families": {}}, overlap=Overlap(0.0, 2))


def test_a_nightly_round_without_a_new_release_makes_only_the_configured_share(tmp_path):
    from flows.planning import nightly_episodes
    from review_app import decisions, release
    from review_app.data import Overlap
    from tests.review_fixtures import make_accounts

    settings = load_settings(data_dir=tmp_path / "d", round={"episodes": 40, "rollouts": 2})
    store = Store(settings.data_dir)
    assert nightly_episodes(store, settings) == (40, "the first round")
    first = _complete_round(store, settings)
    n, why = nightly_episodes(store, settings)
    assert n == 0 and "no release approved since r0001" in why
    quarter = load_settings(data_dir=tmp_path / "d", round={"episodes": 40, "unreleased_share": 0.25})
    assert nightly_episodes(store, quarter)[0] == 10
    make_accounts(store)
    eid = store.duck().execute("SELECT min(episode_id) FROM episodes").fetchone()[0]
    decisions.record_decision(store, reviewer="ann", round_id=first, episode_id=eid, decision="approve")
    release.approve_release(store, lead="lea", dataset_version="v1", round_ids=[first], overlap=Overlap(0.0, 2),
                            sampling_plan={"episodes": 8, "families": {"F01": 1.0}})
    assert nightly_episodes(store, settings) == (40, "release rel-0001 was approved since r0001 began")
