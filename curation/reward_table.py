"""What each kind of rollout earns on an export's tasks, for its manifest (see :mod:`curation.rewards`)."""

from __future__ import annotations

from typing import Any

from curation.rewards import Call, baseline_table
from generators.phone.families import get_family
from warehouse.contract import TaskSpec

SAMPLE = 50  # tasks the table is computed on (the first ones, in task order): enough for a stable mean


def reference_calls(task: TaskSpec) -> list[Call]:
    """The reference solution of ``task`` as (tool, arguments) calls."""
    return [(a.tool, a.arguments) for a in get_family(task.family).reference_actions(task)]


def reward_table(specs: list[dict[str, Any]], sample: int = SAMPLE) -> dict[str, Any]:
    """Mean reward of empty, no-op, random and reference rollouts on up to ``sample`` of ``specs``."""
    tasks = [TaskSpec.model_validate(s) for s in specs[:sample]]
    table = baseline_table([(t, reference_calls(t)) for t in tasks])
    return {"function": "curation.rewards.reward (verl.reward.py's compute_score)", **table}
