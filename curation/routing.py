"""Cascade step 8: what needs human eyes.

Routed for a reason: the verifier passed an episode the heuristics flagged; a tool
whose spec declares a sensitive side effect (``Tool.sensitive``: spends money, places an
order, sends to new recipients, deletes, grants a permission) was called; an external import (no replay); a failure type not
seen in earlier rounds (the first few of each); model judges that disagree with the
verifier (when judges ran); a family the round drew for a failure curriculum (the model
fails it at the lowest level: people check or fix those demonstrations first); a reference
demonstration (the reference solution followed: it trains only once a person approves it). Plus a stratified random sample of the
rest: ``rate`` of each (family, success) stratum, at least one each, chosen by a hash
of the episode id so the sample is stable across reruns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from curation.marking import marks_frame, reference_demonstrations
from generators.phone.tools import TOOLS
from warehouse.ids import digest

CHECK = "routing"
REFERENCE_REASON = "reference demonstration: the reference solution followed, not the model's attempt"
NOVEL_PER_TYPE = 3


def sensitive_tools() -> dict[str, str]:
    """Tool name -> the sensitive side effect its spec declares (only tools that declare one)."""
    return {name: tool.sensitive for name, tool in TOOLS.items() if tool.sensitive}


def sensitive_calls(steps: pd.DataFrame) -> dict[str, list[str]]:
    """Episode id -> the sensitive tools it called, each once, as ``tool (side effect)``."""
    sensitive = sensitive_tools()
    calls = steps.loc[steps["action_tool"].isin(list(sensitive)) & (steps["action_kind"] == "tool_call"),
                      ["episode_id", "action_tool"]]
    touched: dict[str, list[str]] = {}
    for eid, name in zip(calls["episode_id"].tolist(), calls["action_tool"].tolist()):
        effects = touched.setdefault(eid, [])
        if f"{name} ({sensitive[name]})" not in effects:
            effects.append(f"{name} ({sensitive[name]})")
    return touched


def routing_marks(
    episodes: pd.DataFrame,
    touched: dict[str, list[str]],
    heuristics_passed: np.ndarray,
    known_failure_types: set[str],
    rate: float = 0.05,
    *,
    judges_disagree: np.ndarray | None = None,
    curriculum_families: frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """A ``routing`` mark per episode: needs_review (with reasons), sampled, or auto (``touched``: the
    sensitive calls of each episode, :func:`sensitive_calls`)."""
    success = episodes["success"].fillna(False).to_numpy(dtype=bool)
    ftype = episodes["failure_type"].fillna("").to_numpy()
    eids = episodes["episode_id"].to_numpy()
    # the first NOVEL_PER_TYPE episodes (in stable hash order) of each never-seen failure type
    order = np.argsort([digest(["novel", e], 12) for e in eids], kind="stable")
    seen: dict[str, int] = {}
    novel = np.zeros(len(eids), dtype=bool)
    for i in order:
        t = ftype[i]
        if t and t not in known_failure_types and seen.get(t, 0) < NOVEL_PER_TYPE:
            novel[i] = True
            seen[t] = seen.get(t, 0) + 1
    reasons: list[list[str]] = [[] for _ in eids]
    rules = {
        "verifier passed what the heuristics flagged": success & ~heuristics_passed,
        "sensitive tool called": pd.Series(eids).isin(touched.keys()).to_numpy(),  # hashed: np.isin on strings is n*m
        "external import without replay": (episodes["source"] == "external").to_numpy(),
        "novel failure type": novel,
        "model judges disagree with the verifier": (
            judges_disagree if judges_disagree is not None else np.zeros(len(eids), dtype=bool)
        ),
        "failure curriculum: the model fails this family at the lowest level": (
            episodes["family"].isin(list(curriculum_families)).to_numpy()
        ),
        REFERENCE_REASON: reference_demonstrations(episodes),
    }
    for text, mask in rules.items():
        for i in np.flatnonzero(mask):
            reasons[i].append(f"{text}: {', '.join(touched[eids[i]])}" if text == "sensitive tool called" else text)
    flagged = np.array([bool(r) for r in reasons], dtype=bool)
    # stratified sample of the rest
    u = np.array([int(digest(["sample", e], 8), 16) / 16**8 for e in eids])
    strata = pd.DataFrame({"s": episodes["family"].astype(str) + "/" + success.astype(str), "u": u, "rest": ~flagged})
    rest = strata[strata["rest"]]
    rank = rest.groupby("s")["u"].rank(method="first").reindex(strata.index).to_numpy()
    size = rest.groupby("s")["u"].transform("size").reindex(strata.index).to_numpy()
    quota = np.maximum(1, np.ceil(rate * np.nan_to_num(size)))
    sampled = ~flagged & (rank <= quota)
    mark = np.where(flagged, "needs_review", np.where(sampled, "sampled", "auto"))
    reason = ["; ".join(r) if r else ("stratified sample" if s else "") for r, s in zip(reasons, sampled)]
    detail = [{"reasons": r} if r else ({"stratum": st} if s else None) for r, s, st in zip(reasons, sampled, strata["s"])]
    return marks_frame(episodes, CHECK, mark, ~(flagged | sampled), reason, detail)
