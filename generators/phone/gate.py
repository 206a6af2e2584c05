"""The generation gate: keep a task only if its checks can tell right from wrong.

A task passes when the reference scores 1.0, two reference runs, each on a world
built from scratch, end in the same state, doing nothing fails with every requirement's no-op label as observed, and
every mutant of the reference (a wrong argument, one extra write, two writes
swapped) fails. Otherwise the reason names the first broken rule.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import pairwise

from generators.phone.env import PhoneEnv
from generators.phone.families.base import Family, finish
from generators.phone.families.mutants import first_write_index
from generators.phone.tools import tool_kind
from warehouse.contract import Action, TaskSpec
from warehouse.ids import digest

REASONS = ("reference_fails", "nondeterministic", "noop_passes", "noop_label_mismatch",
           "mutant_passes:wrong_argument", "mutant_passes:extra_write", "mutant_passes:wrong_order")


def _run(family: Family, task: TaskSpec, actions: list[Action],
         fresh: bool = False) -> tuple[bool, float, dict[str, bool], str]:
    env = PhoneEnv(task, family)
    env.reset(fresh=fresh)
    for action in actions:
        if env.step(action)[2]:
            break
    results, success, progress, _ = env.evaluate()
    return success, progress, {r.id: r.passed for r in results}, env.world.state_hash()


def mutants(family: Family, task: TaskSpec) -> dict[str, list[Action]]:
    """The broken versions of the reference that must all fail, by kind."""
    ref = family.reference_actions(task)
    rng = random.Random(int(digest([task.task_id, "mutants"], 12), 16))
    wrong = family.mistake(task, ref, rng)
    out = {"wrong_argument": wrong}
    i = first_write_index(wrong)
    if i is not None:  # the right writes plus one more: the mistaken one
        out["extra_write"] = ref[:-1] + [wrong[i], ref[-1]]
    writes = [j for j, a in enumerate(ref) if a.kind == "tool_call" and tool_kind(a.tool) == "write"]
    # the last two writes that differ: swapping two equal calls (a retry) changes nothing
    pairs = [(a, b) for a, b in pairwise(writes) if ref[a] != ref[b]]
    if pairs:
        a, b = pairs[-1]
        swapped = list(ref)
        swapped[a], swapped[b] = ref[b], ref[a]
        out["wrong_order"] = swapped
    return out


def gate_reason(family: Family, task: TaskSpec) -> str | None:
    """None if the task is kept, else the rejection reason (one of REASONS)."""
    # both reference runs build their world from scratch: a copy of one cached world could
    # never show that a build depends on something besides the seed
    ok, progress, _, first_hash = _run(family, task, family.reference_actions(task), fresh=True)
    if not ok or progress < 1.0:
        return "reference_fails"
    if _run(family, task, family.reference_actions(task), fresh=True)[3] != first_hash:
        return "nondeterministic"
    ok, _, passed, _ = _run(family, task, [finish()])
    if ok:
        return "noop_passes"
    if passed != {r.id: r.noop_passes for r in task.requirements}:
        return "noop_label_mismatch"
    for kind, actions in mutants(family, task).items():
        if _run(family, task, actions)[0]:
            return f"mutant_passes:{kind}"
    return None


def scenario_gate_reason(family: Family, task: TaskSpec) -> str | None:
    """None if the task (every session of its scenario, for the first) passes the generation gate,
    else why it is rejected (see :func:`gate_reason`)."""
    if family.sessions > 1 and task.session == 1:  # a scenario is kept only if every session passes
        return next((r for r in (gate_reason(family, t) for t in family.scenario(task)) if r), None)
    return gate_reason(family, task)


def knobs_for(family: Family, knobs: dict[str, int] | None) -> dict[str, int]:
    """The subset of ``knobs`` this family has (a knob is set only where it exists)."""
    return {k: v for k, v in (knobs or {}).items() if k in family.knobs}


def gate_report(families: list[Family], seeds: int, difficulty: int | None = None,
                knobs: dict[str, int] | None = None,
                on_task: Callable[[str], None] | None = None) -> dict[str, dict[str, object]]:
    """Run the gate on seeds 0..seeds-1 of each family: per family tried, kept, rejections by reason.

    Difficulty cycles 1..max over the seeds unless fixed; ``on_task`` is called after
    each instance (for a progress bar).
    """
    report: dict[str, dict[str, object]] = {}
    for family in families:
        own = knobs_for(family, knobs)
        kept, rejections = 0, {}
        for seed in range(seeds):
            level = difficulty or 1 + seed % family.max_difficulty
            reason = scenario_gate_reason(family, family.make_task(seed, level, knobs=own))
            if reason is None:
                kept += 1
            else:
                rejections[reason] = rejections.get(reason, 0) + 1
            if on_task:
                on_task(family.id)
        report[family.id] = {"tried": seeds, "kept": kept, "kept_share": round(kept / seeds, 4) if seeds else 0.0,
                             "rejections": dict(sorted(rejections.items()))}
    return report
