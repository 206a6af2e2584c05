"""Success per capability and family, pass^1 and pass^k over rollouts, and failure attribution.

Pure over rows of ``(round_id, task_id, family, rollout, success, capabilities, scenario_id,
failure_side, failure_category)``. A scenario counts as one unit: its rollout succeeds only if
every session of that rollout does. pass^k is tau-bench's: per unit with n rollouts of which c
succeeded, C(c, k) / C(n, k), averaged over units with at least k rollouts.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from math import comb
from typing import Any

Row = dict[str, Any]


def _units(rows: list[Row]) -> dict[str, dict[int, bool]]:
    """unit (scenario or task) -> rollout -> success (all sessions of a scenario)."""
    out: dict[str, dict[int, bool]] = defaultdict(dict)
    for r in rows:
        unit = r.get("scenario_id") or r["task_id"]
        out[unit][r["rollout"]] = out[unit].get(r["rollout"], True) and bool(r["success"])
    return out


def pass_at(rows: list[Row], k: int) -> float | None:
    """pass^k over the units of ``rows`` (None when no unit has k rollouts)."""
    scores = [comb(sum(v.values()), k) / comb(len(v), k) for v in _units(rows).values() if len(v) >= k]
    return round(sum(scores) / len(scores), 4) if scores else None


def _summary(rows: list[Row], k: int) -> dict[str, Any]:
    return {"episodes": len(rows), "success_rate": round(sum(bool(r["success"]) for r in rows) / len(rows), 4),
            "pass1": pass_at(rows, 1), "passk": pass_at(rows, k) if k > 1 else None, "k": k}


def capability_report(rows: Iterable[Row]) -> dict[str, Any]:
    """Per round: ``capabilities`` and ``families`` (episodes, success rate, pass^1, pass^k with k the most
    rollouts of a task), ``scenarios`` (how many, share that succeeded), ``attribution`` ("side:category" counts)."""
    by_round: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_round[r["round_id"]].append(r)
    report = {}
    for rid, rs in by_round.items():
        k = max(Counter((r.get("scenario_id") or r["task_id"], r.get("session", 1)) for r in rs).values())
        caps: dict[str, list[Row]] = defaultdict(list)
        fams: dict[str, list[Row]] = defaultdict(list)
        for r in rs:
            fams[r["family"]].append(r)
            for c in dict.fromkeys(r.get("capabilities") or ["unknown"]):
                caps[c].append(r)
        scen = _units([r for r in rs if r.get("scenario_id")])
        outcomes = [ok for v in scen.values() for ok in v.values()]
        report[rid] = {
            "k": k,
            "capabilities": {c: _summary(v, k) for c, v in sorted(caps.items())},
            "families": {f: _summary(v, k) for f, v in sorted(fams.items())},
            "scenarios": {"rollouts": len(outcomes), "success_rate": round(sum(outcomes) / len(outcomes), 4)
                          if outcomes else None},
            "attribution": dict(sorted(Counter(f"{r['failure_side']}:{r['failure_category'] or 'unclassified'}"
                                               for r in rs if not r["success"] and r.get("failure_side")).items())),
        }
    return report
