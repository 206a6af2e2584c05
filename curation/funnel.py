"""The funnel of one or more rounds, read back from the committed marks: episodes in,
what each cascade step marked, and how many passed every gating step."""

from __future__ import annotations

from typing import Any

import duckdb

from curation.steps import GATING, STEPS


def funnel(con: duckdb.DuckDBPyConnection, round_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Per round: ``{"in": n, "steps": {check: {mark: n}}, "out": n}`` (curated rounds only)."""
    if not round_ids:
        return {}
    params = {"rounds": round_ids}
    ins = dict(con.execute("SELECT round_id, count(*) FROM episodes WHERE round_id IN (SELECT unnest($rounds)) GROUP BY 1",
                           params).fetchall())
    out: dict[str, dict[str, Any]] = {}
    for rid, check, mark, n in con.execute(
        'SELECT round_id, "check", mark, count(*) FROM marks WHERE round_id IN (SELECT unnest($rounds)) GROUP BY ALL',
        params,
    ).fetchall():
        entry = out.setdefault(rid, {"in": ins.get(rid, 0), "steps": {}, "out": 0})
        entry["steps"].setdefault(check, {})[mark] = n
    gating = "(" + ", ".join(f"'{g}'" for g in GATING) + ")"
    for rid, n in con.execute(
        f"""SELECT round_id, count(*) FROM (
                SELECT round_id, episode_id FROM marks
                WHERE round_id IN (SELECT unnest($rounds)) AND "check" IN {gating}
                GROUP BY ALL HAVING bool_and(passed)) GROUP BY 1""",
        params,
    ).fetchall():
        out[rid]["out"] = n
    for entry in out.values():
        entry["steps"] = {s: entry["steps"][s] for s in STEPS if s in entry["steps"]}
    return out


def total(funnels: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Several rounds' funnels added up."""
    acc: dict[str, Any] = {"in": 0, "steps": {}, "out": 0}
    for f in funnels.values():
        acc["in"] += f["in"]
        acc["out"] += f["out"]
        for check, marks in f["steps"].items():
            for mark, n in marks.items():
                acc["steps"].setdefault(check, {}).setdefault(mark, 0)
                acc["steps"][check][mark] += n
    return acc
