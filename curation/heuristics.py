"""Cascade step 3: heuristics over the steps of each episode, and per-step labels.

Flags (each names its rule):
- ``loop``: the same call (tool and arguments) three or more times;
- ``redundant_read``: a read repeated with the same arguments and no write between;
- ``error_storm``: three or more failed steps in a row;
- ``over_budget``: the step budget ran out, or more steps than the budget;
- ``finish_without_evidence``: finished as completed without one successful call;
- ``ungrounded_claim``: a claim cites a call that did not happen, failed, or whose
  result does not contain the stated value.

A step is *masked* (left out of the SFT loss) when the verifier labelled it anything
but ok, or when it is a repeat in a loop, a redundant read, or part of an error storm.
Vectorised with pandas over all steps of a round at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pandas as pd

from curation.marking import marks_frame
from generators.phone.tools import TOOLS

CHECK = "heuristics"
LOOP_REPEATS = 3
STORM_LENGTH = 3


def _tool_kind(name: str) -> str:
    tool = TOOLS.get(name)
    return tool.kind if tool else "unknown"


def step_flags(steps: pd.DataFrame, calls: pd.DataFrame) -> pd.DataFrame:
    """Per step: loop_repeat, redundant_read, in_storm and masked (booleans)."""
    ep = pd.factorize(steps["episode_id"])[0]
    sig = pd.factorize(calls["exact_call"])[0]
    is_call = (steps["action_kind"] == "tool_call").to_numpy()
    kind = steps["action_tool"].fillna("").map(_tool_kind).to_numpy()
    frame = pd.DataFrame({"ep": ep, "sig": sig})
    # loop: every occurrence of a call after the first, in episodes where it occurs >= LOOP_REPEATS times
    occurrences = frame.groupby(["ep", "sig"])["sig"].transform("size").to_numpy()
    nth = frame.groupby(["ep", "sig"]).cumcount().to_numpy()
    loop_repeat = is_call & (occurrences >= LOOP_REPEATS) & (nth >= 1)
    # redundant read: the same read again with no write since (writes open a new epoch)
    writes = pd.Series(is_call & (kind == "write")).groupby(ep).cumsum().to_numpy()
    frame["epoch"] = writes
    nth_in_epoch = frame.groupby(["ep", "sig", "epoch"]).cumcount().to_numpy()
    redundant_read = is_call & (kind == "read") & (nth_in_epoch >= 1)
    # error storm: runs of failed steps of length >= STORM_LENGTH
    failed = ~steps["feedback_ok"].fillna(False).to_numpy(dtype=bool)
    run_start = np.r_[True, (ep[1:] != ep[:-1]) | (failed[1:] != failed[:-1])]
    run_id = np.cumsum(run_start)
    run_len = pd.Series(run_id).map(pd.Series(run_id).value_counts()).to_numpy()
    in_storm = failed & (run_len >= STORM_LENGTH)
    label_bad = (steps["verification_label"].fillna("ok") != "ok").to_numpy()
    return pd.DataFrame(
        {
            "loop_repeat": loop_repeat,
            "redundant_read": redundant_read,
            "in_storm": in_storm,
            "masked": label_bad | loop_repeat | redundant_read | in_storm,
        },
        index=steps.index,
    )


def _claim_problems(claims_text: str, results: pd.DataFrame | None) -> list[str]:
    try:
        claims = json.loads(claims_text or "[]")
    except ValueError:
        return ["claims are not JSON"]
    if not claims:
        return []
    by_call: dict[str, tuple[bool, str]] = {}
    if results is not None:
        for idx, cid, ok, res in zip(results["index"], results["action_call_id"], results["feedback_ok"], results["feedback_result"]):
            text = res or ""
            by_call[f"call_{idx}"] = (bool(ok), text)
            if cid:
                by_call[cid] = (bool(ok), text)
    problems = []
    for claim in claims:
        cid = str(claim.get("call_id", "")) if isinstance(claim, dict) else ""
        if cid not in by_call:
            problems.append(f"claim cites unknown call {cid!r}")
            continue
        ok, text = by_call[cid]
        value = claim.get("value") if isinstance(claim, dict) else None
        if not ok:
            problems.append(f"claim cites failed call {cid}")
        elif value is not None and json.dumps(value, ensure_ascii=False).strip('"').lower() not in text.lower():
            problems.append(f"claimed value {value!r} not in the result of {cid}")
    return problems


def heuristic_marks(
    episodes: pd.DataFrame,
    steps: pd.DataFrame,
    calls: pd.DataFrame,
    fetch_results: Callable[[list[str]], pd.DataFrame] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(a ``heuristics`` mark per episode, the per-step flags).

    ``fetch_results(episode_ids)`` returns the step results of the few episodes that
    make claims; results are large, so they are not read for every episode."""
    flags = step_flags(steps, calls)
    eid = steps["episode_id"]
    per_ep = pd.DataFrame({"episode_id": eid, **{c: flags[c] for c in flags.columns},
                           "ok_call": (steps["action_kind"] == "tool_call") & steps["feedback_ok"].fillna(False)})
    agg = per_ep.groupby("episode_id", sort=False).agg(
        loop=("loop_repeat", "any"), redundant=("redundant_read", "any"), storm=("in_storm", "any"),
        ok_calls=("ok_call", "sum"),
    )
    agg = agg.reindex(episodes["episode_id"]).fillna({"loop": False, "redundant": False, "storm": False, "ok_calls": 0})
    hit = flags["masked"].to_numpy()
    masked_by_ep: dict[str, list[int]] = {}
    for e, i in zip(eid.to_numpy()[hit].tolist(), steps["index"].to_numpy()[hit].tolist()):
        masked_by_ep.setdefault(e, []).append(int(i))
    for m in masked_by_ep.values():
        m.sort()
    over = ((episodes["termination"] == "budget_exhausted") | (episodes.get("n_planner_steps", episodes["n_steps"]).fillna(0) > episodes["step_budget"].fillna(1e9))).to_numpy()
    no_evidence = ((episodes["finish_status"] == "completed") & (agg["ok_calls"].to_numpy() == 0)).to_numpy()
    has_claims = episodes["claims"].fillna("[]").to_numpy() != "[]"
    claim_ids = episodes.loc[has_claims, "episode_id"].tolist()
    results = fetch_results(claim_ids) if (fetch_results and claim_ids) else None
    grouped = dict(tuple(results.groupby("episode_id"))) if results is not None and len(results) else {}
    claim_problems = {e: _claim_problems(c, grouped.get(e)) for e, c in
                      zip(claim_ids, episodes.loc[has_claims, "claims"])}
    rules = {
        "loop": agg["loop"].to_numpy(dtype=bool),
        "redundant_read": agg["redundant"].to_numpy(dtype=bool),
        "error_storm": agg["storm"].to_numpy(dtype=bool),
        "over_budget": over,
        "finish_without_evidence": no_evidence,
        "ungrounded_claim": np.array([bool(claim_problems.get(e)) for e in episodes["episode_id"]], dtype=bool),
    }
    names = list(rules)
    matrix = np.column_stack([rules[n] for n in names]) if len(episodes) else np.zeros((0, len(names)), bool)
    flagged = matrix.any(axis=1)
    reasons, details = [], []
    for row, e in zip(matrix, episodes["episode_id"]):
        hit = [n for n, on in zip(names, row) if on]
        m = masked_by_ep.get(e, [])
        reasons.append(", ".join(hit))
        d: dict = {}
        if hit:
            d["flags"] = hit
        if m:
            d["masked_steps"] = m
        if claim_problems.get(e):
            d["claims"] = claim_problems[e]
        details.append(d or None)
    marks = marks_frame(episodes, CHECK, np.where(flagged, "flagged", "clean"), ~flagged, reasons, details)
    return marks, flags
