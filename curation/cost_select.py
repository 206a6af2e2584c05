"""Cascade step 5: cost-aware selection among the successful rollouts of each task.

Cost = steps + tool calls + tokens / 1000. Every successful, sound, non-duplicate
rollout within ``tolerance`` of its task's cheapest is ``preferred``; costlier ones are
``alternative`` (kept, and the costlier side of a preference pair); failures are
``evidence`` (negatives for preference pairs, and the failure triage). Nothing is
dropped here. A task's reference demonstrations are compared only among themselves: the
reference solution is no yardstick for the model's own rollouts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from curation.marking import marks_frame, reference_demonstrations

CHECK = "selection"


def rollout_cost(episodes: pd.DataFrame) -> np.ndarray:
    """The cost the selection compares."""
    tokens = episodes["prompt_tokens"].fillna(0) + episodes["completion_tokens"].fillna(0)
    return (episodes["n_steps"].fillna(0) + episodes["tool_calls"].fillna(0) + tokens / 1000.0).to_numpy(dtype=float)


def selection_marks(episodes: pd.DataFrame, eligible: np.ndarray, tolerance: float = 0.25) -> pd.DataFrame:
    """A ``selection`` mark per episode: preferred, alternative, evidence, unknown or not_eligible."""
    cost = rollout_cost(episodes)
    success = episodes["success"].fillna(False).to_numpy(dtype=bool)
    candidate = eligible & success
    group = episodes["task_id"].astype(str).to_numpy() + np.where(reference_demonstrations(episodes), "\x00ref", "")
    frame = pd.DataFrame({"task": group, "cost": np.where(candidate, cost, np.inf)})
    cheapest = frame.groupby("task")["cost"].transform("min").to_numpy()
    preferred = candidate & (cost <= cheapest * (1.0 + tolerance) + 1e-9)
    unknown = episodes["success"].isna().to_numpy()  # no reward reported: neither a success nor evidence of failure
    mark = np.where(preferred, "preferred", np.where(candidate, "alternative", np.where(
        success, "not_eligible", np.where(unknown, "unknown", "evidence"))))
    reason = []
    for m, c, low in zip(mark, cost, cheapest):
        if m == "unknown":
            reason.append("outcome unknown (no reward reported): for people to judge")
        elif m == "alternative":
            reason.append(f"costs {c:g}, cheapest success of the task costs {low:g}")
        elif m == "evidence":
            reason.append("failed rollout: kept as evidence")
        elif m == "not_eligible":
            reason.append("broken or duplicate")
        else:
            reason.append("")
    detail = [{"cost": round(float(c), 3), "cheapest": (round(float(low), 3) if np.isfinite(low) else None)}
              for c, low in zip(cost, cheapest)]
    return marks_frame(episodes, CHECK, mark, preferred, reason, detail)
