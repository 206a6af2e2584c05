"""The incremental step (state delta, state hash, verification) equals the full recomputation.

Random trajectories over every family F01-F13 (every session of a multi-session scenario,
planned faults and extra ones, sub-agents, memory, skills, automations, tool errors, bad
arguments, repeats, questions, early and malformed finishes) run side by side in an incremental
environment and a full one (``incremental=False``: the whole world copied, diffed and hashed,
every check re-run). After every step the feedback, verification, end flag and sub-agent steps
must be equal, and the incremental hash must equal :meth:`World.state_hash` computed from
scratch; at the end the scores and the replayed final hash must agree too. Two tests break
the incremental code on purpose and check that the comparison catches it.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from generators.phone import env as env_module
from generators.phone import stepplan
from generators.phone.digests import StateDigest
from generators.phone.env import ERROR_FIELDS, PhoneEnv
from generators.phone.families import FAMILIES
from generators.phone.tools import TOOLS
from generators.phone.trusted import trusted
from tests.phone_calls import plausible_arguments
from tests.world_hashes import replay_final_hash
from warehouse.contract import Action, TaskSpec, ToolError, Verification
from warehouse.ids import digest

SEEDS = 4  # per family and difficulty; every session of a scenario and two trajectories each
STATUSES = ["completed", "needs_user", "infeasible", "partial"]


def random_action(task: TaskSpec, env: PhoneEnv, reference: list[Action], cursor: list[int], last: Action | None,
                  rng: random.Random) -> Action:
    """The next action of a clumsy agent: mostly the reference in order, with detours of every kind."""
    r = rng.random()
    if cursor[0] < len(reference) and reference[cursor[0]].kind == "finish" and rng.random() < 0.6:
        r = 0.6 + 0.4 * rng.random()  # not done yet: a detour first
    if r < 0.45 and cursor[0] < len(reference):
        cursor[0] += 1
        return reference[cursor[0] - 1].model_copy(deep=True)
    if r < 0.52 and last is not None:
        return last.model_copy(deep=True)  # a repeat: redundant, or a failure twice (stop guessing)
    if r < 0.57:
        options = rng.choice([None, ["yes", "no"], "not a list"])
        args = {"question": rng.choice(["Which one?", "What is their email?", "Should I pay?", ""])}
        if options is not None:
            args["options"] = options
        return Action(kind=rng.choice(["ask_user", "tool_call"]), tool="ask_user", arguments=args)
    if r < 0.59:
        args = {"status": rng.choice(STATUSES + ["done?"]), "answer": rng.choice([None, "unknown", 3, "x"]),
                "claims": rng.choice([[], [{"fact": "x", "call_id": "step-0"}], "bad"])}
        return Action(kind="finish", tool="finish", arguments=args)
    if r < 0.62:
        return Action(kind="invalid", raw="garbled")
    if r < 0.64:
        return Action(kind="tool_call", tool=rng.choice(["no_such_tool", *sorted(set(TOOLS) - set(task.tools))]),
                      arguments={})
    tool = rng.choice([t for t in task.tools if t in TOOLS])
    return Action(kind="tool_call", tool=tool, arguments=plausible_arguments(tool, env.world, reference, rng),
                  call_id=f"call-{rng.randrange(1000)}")


def with_extra_faults(task: TaskSpec, rng: random.Random) -> TaskSpec:
    """The task with transient faults planned on a few of its tools (on top of its own)."""
    tools = [t for t in task.tools if t in TOOLS]
    extra = [{"tool": rng.choice(tools), "code": rng.choice(["TIMEOUT", "NETWORK_UNAVAILABLE"]),
              "times": rng.randint(1, 2), "skip": rng.randint(0, 2)} for _ in range(rng.randint(1, 3))]
    return task.model_copy(update={"faults": [*task.faults, *extra]}, deep=True)


def reference_hash(world: Any) -> str:
    """The state hash by its definition, spelled out with the plain canonical JSON."""
    tables = {name: digest([t.essential(t.rows[k]) for k in sorted(t.rows)]) for name, t in world.tables.items()}
    return digest(sorted(tables.items()))


def run_side_by_side(task: TaskSpec, rng: random.Random) -> int:
    """Steps one trajectory in both environments, asserting equality after every step; returns its length."""
    family = FAMILIES[task.family]
    fast, full = PhoneEnv(task, family), PhoneEnv(task, family, incremental=False)
    assert fast.reset() == full.reset()
    reference, cursor, last, actions = family.reference_actions(task), [0], None, []
    done, where = False, task.task_id
    while not done:
        action = random_action(task, fast, reference, cursor, last, rng)
        actions.append(action)
        got, want = fast.step(action), full.step(action.model_copy(deep=True))
        at = f"{where} step {len(actions) - 1} {action.kind} {action.tool}"
        assert got[0].model_dump() == want[0].model_dump(), at
        assert got[1].model_dump() == want[1].model_dump(), at
        assert got[2] == want[2] and fast.delegated == full.delegated, at
        assert got[0].state_hash == fast.world.state_hash() == reference_hash(full.world), at
        done, last = got[2], action
    assert fast.evaluate() == full.evaluate(), where
    assert fast.state_hash() == full.state_hash() == replay_final_hash(task, actions, family), where
    return len(actions)


def _tasks(family_id: str) -> list[TaskSpec]:
    family = FAMILIES[family_id]
    out = []
    for seed in range(SEEDS):
        for difficulty in range(1, family.max_difficulty + 1):
            out += family.scenario(family.make_task(seed, difficulty))
    return out


@pytest.mark.parametrize("family_id", sorted(FAMILIES))
def test_incremental_step_equals_full_recomputation(family_id):
    assert family_id in {f"F{n:02d}" for n in range(1, 14)}
    steps = 0
    for n, task in enumerate(_tasks(family_id)):
        rng = random.Random(f"{family_id}-{n}")
        steps += run_side_by_side(task, rng)
        steps += run_side_by_side(with_extra_faults(task, rng), rng)
    assert steps >= 5 * 2 * len(_tasks(family_id))  # the trajectories were not all cut short


def test_every_family_is_covered():
    assert sorted(FAMILIES) == [f"F{n:02d}" for n in range(1, 14)]
    assert any(FAMILIES[f].sessions > 1 for f in FAMILIES)  # a multi-session scenario is among them


def _mismatch_found(family_ids: list[str]) -> bool:
    for family_id in family_ids:
        for n, task in enumerate(_tasks(family_id)):
            try:
                run_side_by_side(task, random.Random(f"{family_id}-{n}"))
            except AssertionError:
                return True
    return False


def test_a_table_not_marked_changed_is_caught(monkeypatch):
    """Forget to re-encode the rows of the first table an episode changes: the comparison must fail."""
    real = StateDigest.rows_changed

    def forgetful(self, name, keys):
        if self.__dict__.setdefault("forgotten", name) != name:
            real(self, name, keys)

    monkeypatch.setattr(StateDigest, "rows_changed", forgetful)
    assert _mismatch_found(["F01"])


def test_a_check_not_rerun_is_caught(monkeypatch):
    """Declare that the call checks read no tool's calls: the comparison must fail."""
    monkeypatch.setattr(stepplan, "calls_read", lambda req: frozenset())
    monkeypatch.setattr(env_module, "plan_for", lambda reqs, kept: stepplan.VerifierPlan(reqs))  # none kept from before
    assert _mismatch_found(["F01", "F03"])


def test_trusted_records_equal_model_construct():
    values = {"milestones": ["r1"], "minefields": [], "progress": 0.5, "label": "ok"}
    fast, slow = trusted(Verification, **values), Verification.model_construct(**values)
    assert fast == slow and fast.model_fields_set == slow.model_fields_set and repr(fast) == repr(slow)
    assert fast.model_dump_json() == slow.model_dump_json()
    reordered = trusted(Verification, label="ok", progress=0.5, minefields=[], milestones=["r1"])
    assert list(reordered.__dict__) == list(slow.__dict__)
    fast.label = "harmful"  # records stay assignable after the fact (the collector relabels steps)
    assert fast.label == "harmful" and "label" in fast.model_fields_set
    with pytest.raises(TypeError, match="exactly its fields"):
        trusted(Verification, milestones=[])
    error = {"code": "NOT_FOUND", "message": "no contact", "retryable": False, "hint": "search first"}
    fast_error, slow_error = trusted(ToolError, **error), ToolError.model_construct(**error)  # as a step builds it
    assert fast_error == slow_error and fast_error.model_fields_set == slow_error.model_fields_set
    assert fast_error.model_dump_json() == slow_error.model_dump_json() and ERROR_FIELDS == error.keys()
