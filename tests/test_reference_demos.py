"""Reference demonstrations in a failure curriculum: planned with a count and a reason, collected
by the reference policy and verified like any episode, never measured as the model's (no pairs,
no RL statistics, no competence, no success rate), and trained on only when people approve."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from curation.report import round_counts
from flows import stages
from flows.export_cmd import export
from flows.planning import plan_view
from flows.stages.collect import collect_records, commit_records
from flows.stages.feedback import import_feedback
from flows.views import status_rows
from generators.batch_plan import Plan, reference_episodes
from generators.competence import competence_table
from review_app import decisions as review_decisions
from review_app.agreement import Overlap
from review_app.final import final_decisions
from tests.conftest import cli_env, flywheel
from tests.review_fixtures import make_accounts
from warehouse import state
from warehouse.contract import REFERENCE_POLICY, FeedbackRecord
from warehouse.query import iter_records
from warehouse.settings import load_settings
from warehouse.store import Store

T0 = datetime(2026, 3, 2, tzinfo=UTC)
FAMILIES = ["F01", "F03"]
EXTRA_KEY = "extra-reference"  # a reference episode put beside the model's rollouts of one task (see fixture)


def _failing_feedback(store: Store) -> None:
    """A trainer batch: F03 fails at the lowest level (a failure curriculum), F01 is half learned."""
    rows = [FeedbackRecord(task_id=f"t-{f}-{i}", family=f, difficulty=1, success=f == "F01" and i % 2 == 0,
                           model="sft-1", batch="fb-1", recorded_at=T0, template="v.direct", source="trainer")
            for f in FAMILIES for i in range(20)]
    store.commit_unit("feedback", "fb-1", {"feedback": rows})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One curated round planned from that feedback. Beside it, one reference episode on a task the
    model also ran, once failing and once not: without the exclusions it would be paired with the
    model's failure and counted in the task's RL statistics (the planner itself never does this)."""
    settings = load_settings(data_dir=tmp_path_factory.mktemp("ref") / "d",
                             round={"episodes": 40, "rollouts": 2, "families": FAMILIES})
    store = Store(settings.data_dir)
    _failing_feedback(store)
    view = plan_view(store, settings, FAMILIES)
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan)
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=T0)
    failed = store.duck([rnd.id]).execute(
        "SELECT e.task_id FROM episodes e JOIN outcomes o USING (episode_id) WHERE e.policy <> ? GROUP BY 1 "
        "HAVING bool_or(o.success) AND bool_or(NOT o.success) ORDER BY 1 LIMIT 1", [REFERENCE_POLICY]).fetchone()[0]
    task = next(iter_records(store.duck([rnd.id]), "tasks", "task_id = ?", [failed]))
    extra = collect_records(store, rnd.id, [(task, 0)], settings, T0, policy=REFERENCE_POLICY, seed=rnd.seed)
    commit_records(store, rnd.id, EXTRA_KEY, extra)
    stages.curate_round(store, rnd.id)
    stages.finish_round(store, rnd.id)
    return settings, store, rnd.id, view, extra[0].episode.episode_id


def _episodes(store: Store, round_id: str, extra_id: str) -> list[tuple]:
    """(episode id, task id, family, policy, success) of the round's planned episodes."""
    return store.duck([round_id]).execute(
        "SELECT e.episode_id, e.task_id, e.family, e.policy, o.success FROM episodes e JOIN outcomes o "
        "USING (episode_id) WHERE e.episode_id <> ? ORDER BY 1", [extra_id]).fetchall()


def test_a_family_failing_at_the_lowest_level_gets_reference_demonstrations_with_count_and_reason(world, tmp_path):
    settings, store, rid, view, extra_id = world
    with store.session() as s:
        plan = Plan.from_dict(s.get(state.Round, rid).plan)
    f03 = sum(slot.rollouts for slot in plan.slots if slot.family == "F03")
    n = reference_episodes(f03, settings.round.reference_share)
    assert n >= 1 and set(plan.demonstrations) == {"F03"} and plan.demonstrations["F03"]["episodes"] == n
    assert "reference demonstrations" in plan.demonstrations["F03"]["reason"]
    assert plan.episodes == sum(slot.rollouts for slot in plan.slots) == 40
    # `flywheel plan --json` showed exactly this before the round ran
    row = {m["family"]: m for m in view["mix"]}["F03"]
    assert (row["reference_episodes"], row["reference_reason"]) == (n, plan.demonstrations["F03"]["reason"])
    assert row["curriculum"] == "failure" and view["demonstrations"] == plan.demonstrations
    # collected by the reference policy, one rollout per task of its own, none of another family
    refs = [e for e in _episodes(store, rid, extra_id) if e[3] == REFERENCE_POLICY]
    assert len(refs) == n and {e[2] for e in refs} == {"F03"} and len({e[1] for e in refs}) == n
    model_tasks = {e[1] for e in _episodes(store, rid, extra_id) if e[3] != REFERENCE_POLICY}
    assert not model_tasks & {e[1] for e in refs}
    # the command line shows the next plan the same way (F03 still fails: demonstrations again)
    env = cli_env(None, FLYWHEEL_ROUND__FAMILIES=json.dumps(FAMILIES), FLYWHEEL_ROUND__EPISODES="40")
    proc = flywheel("plan", "--json", "--data-dir", str(settings.data_dir), env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["demonstrations"]["F03"]["episodes"] == n and "reference demonstrations" in \
        shown["demonstrations"]["F03"]["reason"]


def test_reference_demonstrations_are_verified_like_any_episode_and_go_to_people(world):
    _, store, rid, _, extra_id = world
    refs = [e[0] for e in _episodes(store, rid, extra_id) if e[3] == REFERENCE_POLICY]
    marks = store.duck([rid]).execute(
        "SELECT episode_id, \"check\", mark, passed, reason FROM marks WHERE episode_id IN (SELECT unnest(?))",
        [refs]).fetchall()
    by = {(e, c): (m, p, r) for e, c, m, p, r in marks}
    for eid in refs:
        assert by[(eid, "schema")][1] and by[(eid, "replay")][0] != "mismatch"
        assert by[(eid, "verified")][1], by[(eid, "verified")]  # the verifier passed it: the reference solution
        assert by[(eid, "routing")][0] == "needs_review" and "reference demonstration" in by[(eid, "routing")][2]
    outcomes = store.duck([rid]).execute("SELECT bool_and(success) FROM outcomes WHERE episode_id IN "
                                         "(SELECT unnest(?))", [refs]).fetchone()[0]
    assert outcomes


def test_reference_demonstrations_are_never_paired_nor_in_rl_statistics(world, tmp_path):
    _, store, rid, _, extra_id = world
    _, manifest = export(store, tmp_path / "dpo", fmt="dpo", include_verified=True)
    pairs = [json.loads(line) for f in sorted((tmp_path / "dpo").glob("dpo/*.jsonl")) for line in f.read_text().splitlines()]
    assert pairs, manifest
    refs = {e[0] for e in _episodes(store, rid, "") if e[3] == REFERENCE_POLICY}
    assert extra_id in refs
    in_pairs = {p["metadata"][k] for p in pairs for k in ("chosen_id", "rejected_id")}
    assert not in_pairs & refs
    held_out = store.duck([rid]).execute("SELECT count(*) FROM episodes WHERE episode_id IN (SELECT unnest(?)) "
                                         "AND split = 'challenge'", [sorted(refs)]).fetchone()[0]
    assert manifest["excluded"]["reference_demonstration"] == len(refs) - held_out  # the rest: held out first
    # RL: the task the extra demonstration shares with the model counts only the model's rollouts
    export(store, tmp_path / "rl", fmt="rl", include_verified=True)
    rows = {r["task_id"]: r for f in sorted((tmp_path / "rl").glob("rl-tasks/*.jsonl"))
            for r in map(json.loads, f.read_text().splitlines())}
    shared = store.duck([rid]).execute("SELECT task_id FROM episodes WHERE episode_id = ?", [extra_id]).fetchone()[0]
    model = store.duck([rid]).execute(
        "SELECT count(*), count(*) FILTER (WHERE o.success) FROM episodes e JOIN outcomes o USING (episode_id) "
        "WHERE e.task_id = ? AND e.policy <> ?", [shared, REFERENCE_POLICY]).fetchone()
    group = rows[shared]["group"]
    assert (group["rollouts"], group["successes"], group["reference_demonstrations"]) == (*model, 1)
    assert not group["solved_by_all"]  # the model failed it at least once; the demonstration does not hide that


def test_reference_demonstrations_are_not_the_models_success_or_competence(world, tmp_path):
    settings, store, rid, _, extra_id = world
    episodes = _episodes(store, rid, "")
    row = next(r for r in status_rows(store) if r["round"] == rid)
    model = [e for e in episodes if e[3] != REFERENCE_POLICY]
    refs = [e for e in episodes if e[3] == REFERENCE_POLICY]
    assert row["episodes"] == len(episodes) and row["reference_demonstrations"] == len(refs)
    assert row["successes"] == sum(bool(e[4]) for e in model)
    assert row["families"]["F03"]["episodes"] == sum(1 for e in model if e[2] == "F03")
    counts = round_counts(store, rid)  # what `flywheel run` prints at the end
    assert (counts["episodes"], counts["successes"], counts["reference_demonstrations"]) == \
        (row["episodes"], row["successes"], len(refs))
    # a trainer's results on the demonstrated tasks are skipped: the model was shown their solution
    path = tmp_path / "results.jsonl"
    tasks = sorted({e[1] for e in episodes})
    path.write_text("".join(json.dumps({"task_id": t, "success": True}) + "\n" for t in tasks))
    result = import_feedback(store, path, model="sft-2")
    demonstrated = {e[1] for e in refs}
    assert result.imported == len(tasks) - len(demonstrated)
    assert {w for w, why in result.skipped if "reference demonstration" in why} == \
        {f"line {tasks.index(t) + 1}" for t in demonstrated}
    feedback = list(iter_records(store.duck(), "feedback"))
    recorded = [r for r in feedback if r.batch == result.batch]
    assert recorded and not {r.task_id for r in recorded} & demonstrated
    # so competence counts the model's F03 tasks of this batch beside the first batch's 20, no demonstration
    f03 = [r for r in recorded if (r.family, r.difficulty) == ("F03", 1)]
    assert f03 and competence_table(feedback)[("F03", 1)].n == 20 + len(f03)


def test_a_reference_demonstration_reaches_sft_only_when_approved(world, tmp_path):
    _, store, rid, _, extra_id = world
    sound = [eid for (eid,) in store.duck([rid]).execute(
        "SELECT e.episode_id FROM episodes e JOIN marks m USING (episode_id) WHERE e.policy = ? AND e.episode_id <> ? "
        "AND e.split = 'train' "  # a held-out split's episode is never a training row, approved or not
        "GROUP BY 1 HAVING bool_and(m.passed OR m.\"check\" IN ('routing', 'pii')) ORDER BY 1",
        [REFERENCE_POLICY, extra_id]).fetchall()]
    assert len(sound) >= 2, "two demonstrations that curation finds sound"
    approved, unreviewed = sound[0], sound[1]
    make_accounts(store)
    review_decisions.record_decision(store, reviewer="ann", round_id=rid, episode_id=approved, decision="approve")
    decided = final_decisions(store, None, Overlap(0.0, 2))
    _, manifest = export(store, tmp_path / "sft", fmt="openai", include_verified=True, decisions=decided)
    exported = {json.loads(line)["metadata"]["episode_id"] for f in sorted((tmp_path / "sft").glob("openai-chat/*.jsonl"))
                for line in f.read_text().splitlines()}
    assert approved in exported
    assert unreviewed not in exported  # verified, yet nobody approved it: --verified is not enough
    assert manifest["excluded"]["reference_unapproved"] >= 1
    assert REFERENCE_POLICY in manifest["lineage"]["policies"]


def test_people_see_the_marker_in_the_queue_the_episode_page_and_label_studio(world):
    from review_app import accounts, episode, queue
    from review_app.label_studio.tasks import task_payload

    _, store, rid, _, extra_id = world
    refs = {e[0] for e in _episodes(store, rid, "") if e[3] == REFERENCE_POLICY}
    rows = queue.queue_page(store, accounts.User("cy", "reviewer"), queue.QueueFilter(status="any"), limit=100).rows
    assert {r["episode_id"] for r in rows if r["reference"]} == refs
    assert all(r["routed"] for r in rows if r["reference"])  # they lead the queue with the routed episodes
    ref_view = episode.load_episode(store, sorted(refs)[0], rid)
    assert episode.is_reference(ref_view.episode)
    payload = task_payload(ref_view)["data"]
    assert payload["reference_demonstration"] is True and "Reference demonstration" in payload["html"]
    other = next(r["episode_id"] for r in rows if not r["reference"])
    plain = task_payload(episode.load_episode(store, other, rid))["data"]
    assert "reference_demonstration" not in plain and "Reference demonstration" not in plain["html"]
