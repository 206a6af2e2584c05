"""The verifier's plan (what the requirements alone give) is made once per kept world and made again
when the requirements are not the ones it was made from, even when changed in place."""

from __future__ import annotations

from generators.phone.env import PhoneEnv
from generators.phone.families import FAMILIES, get_family
from generators.phone.stepplan import VerifierPlan


def _task():
    return FAMILIES["F01"].make_task(3, 2)


def _same_plan(a: VerifierPlan, b: VerifierPlan) -> bool:
    names = ["ids", "weights", "total", "hard", "hard_ids", "noop", "state", "other", "by_tool", "any_call",
             "settles", "forbidden", "reads", "source", "own", "flags", "passing"]
    return all(getattr(a, n) == getattr(b, n) for n in names)


def test_the_rollouts_of_a_task_share_one_plan():
    task = _task()
    first, second = PhoneEnv(task, get_family(task.family)), PhoneEnv(task, get_family(task.family))
    first.reset()
    second.reset()
    assert first.verifier.reqs is second.verifier.reqs
    plan = first.family.initial_world(task).baseline.kept["plan"]
    assert _same_plan(plan, VerifierPlan(task.requirements))


def test_requirements_changed_in_place_get_a_new_plan():
    task = _task()
    env = PhoneEnv(task, get_family(task.family))
    env.reset()
    kept = env.family.initial_world(task).baseline.kept
    kept.clear()  # a plan made from this very task's requirements (an equal task's may be kept already)
    env.reset()
    old = kept["plan"]
    state = next(r for r in task.requirements if r.kind == "state_diff")
    state.params["table"] = "notes"  # a state check now reads another table
    env.reset()
    assert kept["plan"] is not old and _same_plan(kept["plan"], VerifierPlan(task.requirements))
    assert env.verifier.reads != old.reads
    task.requirements[0].weight += 1  # a field beside the params
    env.reset()
    assert env.verifier.weights == [r.weight for r in task.requirements]
