"""What a round holds, counted once: episodes, success, curation, reviews, splits, tokens and cost.

``flywheel status``, a round's summary and its Prefect artifact all read :func:`round_rows`. Review
decisions come in already final (the review rules decide what counts as approved), so this module
counts them without knowing where they came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from curation.capabilities import capability_report
from curation.costs import NO_COSTS, round_costs
from curation.export_source import MODEL_ATTEMPT, has_column
from curation.funnel import funnel as curation_funnel
from curation.judges import agreement_with_people
from warehouse import state
from warehouse.contract import EVAL_PREFIX
from warehouse.store import Store

SPLIT_ORDER = ("train", "dev", "test", "challenge")


class FinalDecision(Protocol):
    """An episode's final review state (see ``review_app.final``): what the counts read of it."""

    round_id: str
    decision: str | None
    status: str


def split_counts(counts: dict[str, int]) -> dict[str, int]:
    """Episodes per split, every split named (challenge is held out: reported apart, never trained on)."""
    return {s: counts.get(s, 0) for s in SPLIT_ORDER} | {s: n for s, n in sorted(counts.items()) if s not in SPLIT_ORDER}


def round_rows(store: Store, decisions: Mapping[str, FinalDecision],
               prices: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per round: episodes, successes, marks, review decisions (``decisions``: episode id ->
    its final decision), tokens and cost."""
    with store.session() as s:
        rounds = state.list_rounds(session=s)
        batches = {r.id: state.batches_of(session=s, round_id=r.id) for r in rounds}
    con = store.duck()
    # the model's success leaves reference demonstrations out: they are the reference solution, not its attempts
    per_round = {
        rid: (n, ok, ref)
        for rid, n, ok, ref in con.execute(
            f"SELECT e.round_id, count(*), count(*) FILTER (WHERE o.success AND {MODEL_ATTEMPT}), "
            f"count(*) FILTER (WHERE NOT {MODEL_ATTEMPT}) "
            "FROM episodes e JOIN outcomes o USING (episode_id) GROUP BY e.round_id"
        ).fetchall()
    }
    dups = dict(
        con.execute(
            "SELECT round_id, count(*) FILTER (WHERE NOT passed) FROM marks "
            "WHERE \"check\" = 'exact_duplicate' GROUP BY round_id"
        ).fetchall()
    )
    curated = {r for (r,) in con.execute("SELECT DISTINCT round_id FROM marks").fetchall()}
    by_capability = capability_report(outcome_rows(con))
    splits: dict[str, dict[str, int]] = {}
    for rid, split, n_split in con.execute(
        "SELECT round_id, split, count(*) FROM episodes GROUP BY round_id, split ORDER BY round_id, split"
    ).fetchall():
        splits.setdefault(rid, {})[split] = n_split
    costs = round_costs(store, con, prices)
    # imported trajectories of old data directories have no round row; an eval's episodes are kept under
    # its batch id, never a round (feedback, not training data), so they are no row here
    orphans = sorted(rid for rid in set(per_round) - {r.id for r in rounds} if not rid.startswith(EVAL_PREFIX))
    funnels = curation_funnel(con, [r.id for r in rounds] + orphans)
    judged: dict[str, dict[str, bool]] = {}
    for rid, eid, mark in con.execute(
        "SELECT round_id, episode_id, mark FROM marks WHERE \"check\" = 'judges' AND mark IN ('judge_pass', 'judge_fail')"
    ).fetchall():
        judged.setdefault(rid, {})[eid] = mark == "judge_pass"
    rows = []
    for rnd in [*rounds, *orphans]:
        rid = rnd if isinstance(rnd, str) else rnd.id
        n, ok, ref = per_round.get(rid, (0, 0, 0))
        votes = [d.decision or d.status for d in decisions.values() if d.round_id == rid]
        kept = batches.get(rid, [])
        plan = {"import": True} if isinstance(rnd, str) else (rnd.plan or {})
        rows.append(
            {
                "round": rid,
                "status": "imported" if isinstance(rnd, str) else rnd.status,
                "created_at": rnd.created_at.isoformat() if not isinstance(rnd, str) and rnd.created_at else None,
                "requested": n if isinstance(rnd, str) else rnd.requested_episodes,
                "episodes": n,
                "successes": ok,
                "success_rate": round(ok / (n - ref), 3) if n > ref else None,
                "reference_demonstrations": ref,
                "demonstrations": plan.get("demonstrations", {}),
                "tasks_kept": sum(b.tasks_kept for b in kept),
                "tasks_tried": sum(b.tasks_tried for b in kept),
                "curated": rid in curated,
                "import": bool(plan.get("import")),
                "import_source": plan["import"].get("source") if isinstance(plan.get("import"), dict) else None,
                "duplicates": dups.get(rid, 0),
                "approved": votes.count("approve"),
                "rejected": votes.count("reject"),
                "needs_fix": votes.count("needs_fix"),
                "disputed": votes.count("disputed"),
                "partial": votes.count("partial"),
                **costs.get(rid, NO_COSTS),
                "splits": split_counts(splits.get(rid, {})),
                "funnel": funnels.get(rid),
                **by_capability.get(rid, {}),
                "judge_agreement": agreement_with_people(
                    judged[rid], {e: d.decision for e, d in decisions.items() if d.round_id == rid and d.decision}
                ) if rid in judged else None,
            }
        )
        cost, approved = rows[-1]["cost_usd"], rows[-1]["approved"]
        rows[-1]["cost_per_approved_usd"] = round(cost / approved, 6) if cost is not None and approved else None
    return rows


def outcome_rows(con) -> list[dict[str, Any]]:
    """Per episode of the model (reference demonstrations left out): round, task, family, rollout, success, the task's capabilities, scenario and the failure's
    side and category (columns older shards lack read as empty)."""
    scen = ("e.scenario_id, e.session" if has_column(con, "episodes", "scenario_id")
            else "'' AS scenario_id, 1 AS session")
    caps = "t.capabilities" if has_column(con, "tasks", "capabilities") else "NULL AS capabilities"
    try:
        cur = con.execute(
            f"SELECT e.round_id, e.task_id, e.family, e.rollout, o.success, {caps}, {scen}, "
            "json_extract_string(o.failure, '$.side') AS failure_side, "
            "json_extract_string(o.failure, '$.category') AS failure_category "
            "FROM episodes e JOIN outcomes o USING (episode_id) LEFT JOIN tasks t USING (task_id) "
            f"WHERE {MODEL_ATTEMPT}")
    except Exception:  # no tasks table (an import-only warehouse): no per-capability view
        return []
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
