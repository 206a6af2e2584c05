"""The RL task set: one row per task with what a trainer needs to roll it out and score it.

``task_spec`` is the full contract TaskSpec (with the private parameters the verifier
needs to rebuild the world from the seed), ``verifier`` names the reference (family,
template, seed, difficulty, requirements), and ``group`` holds the success statistics
of the task's rollouts so far, for competence-aware rewards (e.g. down-weight tasks
the policy always or never solves). Reference demonstrations (the reference solution
followed, not the model's attempts) are never in those statistics; ``group`` only counts
them apart.
"""

from __future__ import annotations

import json
from typing import Any

from warehouse.schemas import TABLES, from_row


def to_rl_row(row: dict[str, Any]) -> dict[str, Any]:
    """A task-set record from a task row with ``rollouts``, ``successes``, ``mean_progress``."""
    spec = from_row(TABLES["tasks"], {k: v for k, v in row.items() if k in {c.name for c in TABLES["tasks"].columns}})
    n, ok = int(row["rollouts"]), int(row["successes"])
    rate = ok / n if n else 0.0
    return {
        "task_id": spec.task_id,
        "split": spec.split,
        "family": spec.family,
        "template": spec.template,
        "instruction": spec.instruction,
        "tools": spec.tools,
        "task_spec": json.loads(spec.model_dump_json()),
        "verifier": {"family": spec.family, "template": spec.template, "seed": spec.seed, "difficulty": spec.difficulty,
                     "requirements": [r.id for r in spec.requirements], "optimal_steps": spec.optimal_steps,
                     "step_budget": spec.step_budget},
        "group": {"rollouts": n, "successes": ok, "success_rate": round(rate, 4),
                  "mean_progress": round(float(row["mean_progress"] or 0.0), 4),
                  "solved_by_all": bool(n) and ok == n, "solved_by_none": bool(n) and ok == 0,
                  "reference_demonstrations": int(row.get("reference_demonstrations") or 0),
                  "policies": list(row.get("policies") or []), "rounds": list(row.get("rounds") or [])},
    }
