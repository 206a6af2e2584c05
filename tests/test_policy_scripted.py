"""The scripted policy makes realistic mistakes at its configured rates, deterministically."""

from collections import defaultdict
from datetime import datetime

from generators.collect import run_episode
from generators.phone.families import FAMILIES
from generators.policies import DEFAULT_ERROR_RATES, ScriptedPolicy

CAPABILITIES = ("tool_use", "memory", "skills", "subagents")


def test_name_version_and_zero_rates_follow_reference():
    policy = ScriptedPolicy(error_rates={}, seed=1)
    assert policy.name == "scripted" and policy.version
    family = FAMILIES["F01"]
    task = family.make_task(3, 2)
    policy.start(task, rollout=0)
    actions = [policy.next_action([]) for _ in family.reference_actions(task)]
    assert [(a.tool, a.arguments) for a in actions] == [(a.tool, a.arguments) for a in family.reference_actions(task)]
    assert policy.mistake is None


def test_plans_are_deterministic_per_seed_task_rollout():
    task = FAMILIES["F03"].make_task(2, 3)
    plans = []
    for _ in range(2):
        policy = ScriptedPolicy(error_rates={"tool_use": 0.5}, seed=9)
        for rollout in range(5):
            policy.start(task, rollout)
            plans.append((policy.mistake, [a.model_dump_json() for a in policy.plan]))
    assert plans[:5] == plans[5:]


def test_default_rates_give_successes_and_failures_that_differ_by_family():
    assert DEFAULT_ERROR_RATES
    policy = ScriptedPolicy(seed=0)
    # The chance of a mistake comes from each family's capability tags (and a task's difficulty: a
    # challenge variant is made at the highest), so it differs by family...
    risks: dict[str, list[float]] = defaultdict(list)
    wins: dict[str, list[bool]] = defaultdict(list)
    by_capability: dict[str, list[bool]] = defaultdict(list)
    for fid, family in sorted(FAMILIES.items()):
        for seed in range(300):
            task = family.make_task(seed, 1)
            risks[fid].append(policy.mistake_rate(task))
            rec = run_episode(task, policy, rollout=0, round_id="r", batch_id="b", created_at=datetime(2026, 3, 1))
            wins[fid].append(rec.outcome.success)
            for cap in set(task.capabilities) & set(CAPABILITIES):
                by_capability[cap].append(rec.outcome.success)
    risk = {fid: sum(rs) / len(rs) for fid, rs in risks.items()}
    assert len(set(risk.values())) > 1, risk
    every = [w for ws in wins.values() for w in ws]
    assert 0.1 <= 1 - sum(every) / len(every) <= 0.5
    rates = {fid: sum(ws) / len(ws) for fid, ws in wins.items()}
    # ...and so does what is observed: the riskiest family succeeds least often.
    assert min(rates, key=rates.get) == max(risk, key=risk.get), (rates, risk)
    # Of the four capabilities a planner is judged on, memory is the weakest by default (as in MobilePA-Bench).
    observed = {cap: sum(ws) / len(ws) for cap, ws in by_capability.items()}
    assert set(observed) == set(CAPABILITIES) and min(observed, key=observed.get) == "memory", observed

def test_success_differs_by_family_and_falls_as_difficulty_rises():
    policy = ScriptedPolicy(seed=3)
    rate: dict[tuple[str, int], float] = {}
    for fid, family in sorted(FAMILIES.items()):
        for difficulty in (1, 3):
            wins = [run_episode(family.make_task(seed, difficulty), policy, rollout=0, round_id="r", batch_id="b",
                                created_at=datetime(2026, 3, 1)).outcome.success for seed in range(80)]
            rate[fid, difficulty] = sum(wins) / len(wins)
    easy = sum(rate[f, 1] for f in FAMILIES) / len(FAMILIES)
    hard = sum(rate[f, 3] for f in FAMILIES) / len(FAMILIES)
    assert hard < easy - 0.04, rate
    assert sum(rate[f, 3] <= rate[f, 1] for f in FAMILIES) >= len(FAMILIES) - 1, rate  # per family too, nearly always
    by_family = [rate[f, 1] + rate[f, 3] for f in FAMILIES]
    assert max(by_family) - min(by_family) >= 0.15, rate
