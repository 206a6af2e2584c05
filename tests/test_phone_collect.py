"""run_episode is deterministic, and replay reproduces the recorded final state."""

from datetime import datetime, timezone

from generators.collect import run_episode
from generators.phone.families import FAMILIES
from generators.policies import ScriptedPolicy
from tests.world_hashes import replay_final_hash
from warehouse.ids import episode_id

WHEN = datetime(2026, 3, 1, tzinfo=timezone.utc)


def test_run_episode_is_deterministic_and_replayable():
    for fid, family in sorted(FAMILIES.items()):
        for seed in range(8):
            task = family.make_task(seed, 1 + seed % 3)
            a = run_episode(task, ScriptedPolicy(seed=5), rollout=seed % 2, round_id="r", batch_id="b", created_at=WHEN)
            b = run_episode(task, ScriptedPolicy(seed=5), rollout=seed % 2, round_id="r", batch_id="b", created_at=WHEN)
            assert a.model_dump_json() == b.model_dump_json()
            assert a.episode.episode_id == episode_id(task.task_id, "scripted", seed % 2)
            assert replay_final_hash(task, [s.action for s in a.steps], family) == a.outcome.final_state_hash
            assert a.steps[-1].feedback.state_hash == a.outcome.final_state_hash


def test_outcome_fields_for_reference_run():
    task = FAMILIES["F03"].make_task(4, 3)
    rec = run_episode(task, ScriptedPolicy(error_rates={}), rollout=0, round_id="r", batch_id="b", created_at=WHEN)
    out = rec.outcome
    assert out.success and out.progress == 1.0 and out.failure is None
    assert out.termination == "finished" and out.finish_status == "completed"
    assert out.steps == task.optimal_steps and out.efficiency == 1.0
    assert out.tool_calls == task.optimal_steps - 1
    assert all(s.cost.prompt_tokens == 0 for s in rec.steps)
    assert any(s.feedback.state_delta for s in rec.steps)


def test_failures_are_attributed():
    seen = set()
    for fid, family in sorted(FAMILIES.items()):
        for seed in range(30):
            task = family.make_task(seed, 2)
            rec = run_episode(task, ScriptedPolicy(error_rates={"tool_use": 1.0}), rollout=0, round_id="r",
                              batch_id="b", created_at=WHEN)
            if not rec.outcome.success:
                assert rec.outcome.failure is not None and rec.outcome.failure.side == "model"
                seen.add(rec.outcome.failure.type)
    assert {"wrong_argument", "early_finish"} <= seen
