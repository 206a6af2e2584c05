"""Cascade step 1: does every record match the contract?

Vectorised over the episode and step frames. The allowed values come from the
contract's own Literal types, so the check cannot drift from the contract.
"""

from __future__ import annotations

from typing import get_args

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from warehouse import contract

CHECK = "schema"
_REQUIRED = ("episode_id", "task_id", "round_id", "instruction", "policy", "template", "family")


def _bad_literal(values: pd.Series, literal) -> pd.Series:
    return ~values.isin(list(get_args(literal)))


def schema_problems(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.Series:
    """Per episode, the list of contract problems found (empty list: none)."""
    checks: list[tuple[str, pd.Series]] = []
    for col in _REQUIRED:
        checks.append((f"{col} missing", episodes[col].isna() | (episodes[col].astype(str) == "")))
    checks += [
        ("no outcome", ~episodes["has_outcome"].astype(bool)),
        ("task not in the warehouse", ~episodes["has_task"].astype(bool)),
        ("unknown split", _bad_literal(episodes["split"], contract.Split)),
        ("unknown source", ~episodes["source"].isin(["collected", "external"])),
        ("unknown schema version", ~episodes["schema_version"].isin(list(contract.KNOWN_SCHEMA_VERSIONS))),
        ("unknown termination", episodes["has_outcome"].astype(bool) & _bad_literal(episodes["termination"], contract.Termination)),
        ("progress outside [0, 1]", ~episodes["progress"].between(0.0, 1.0) & episodes["has_outcome"].astype(bool)),
        ("no steps", episodes["n_steps"].fillna(0) == 0),
    ]
    n = episodes["n_steps"].fillna(0)
    gaps = (n > 0) & ((episodes["min_index"] != 0) | (episodes["max_index"] != n - 1) | (episodes["n_distinct_index"] != n))
    checks.append(("step indices not 0..n-1", gaps))
    checks.append(("outcome step count differs from the steps recorded",
                   episodes["has_outcome"].astype(bool) & (episodes["outcome_steps"] != n) & (n > 0)))
    step_bad = (
        _bad_literal(steps["action_kind"], contract.ActionKind)
        | ~steps["actor"].fillna("").astype(str).str.fullmatch(contract.ACTOR_PATTERN.strip("^$"))
        | _bad_literal(steps["verification_label"], contract.StepLabel)
        | ((steps["action_kind"] == "tool_call") & (steps["action_tool"].fillna("") == ""))
    )
    bad_eps = set(steps.loc[step_bad, "episode_id"])
    checks.append(("a step has an unknown kind, actor or label, or a call without a tool",
                   episodes["episode_id"].isin(bad_eps)))
    problems: list[list[str]] = [[] for _ in range(len(episodes))]
    for text, mask in checks:
        for i in np.flatnonzero(mask.to_numpy(dtype=bool)):
            problems[i].append(text)
    return pd.Series(problems, index=episodes.index)


def schema_marks(episodes: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """A ``schema`` mark per episode: valid, or broken with the reasons."""
    problems = schema_problems(episodes, steps)
    ok = problems.map(len).to_numpy() == 0
    return marks_frame(
        episodes, CHECK,
        np.where(ok, "valid", "broken"), ok,
        ["; ".join(p) for p in problems],
        [{"problems": p} if p else None for p in problems],
    )
