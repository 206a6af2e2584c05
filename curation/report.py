"""What a round holds, counted once: episodes, success, curation, reviews, splits, tokens and cost.

``flywheel status`` and a round's Prefect artifact read :func:`round_rows`, a round's summary
:func:`round_counts`, the review app's dashboard :func:`round_sizes`: the counts they share are
counted in one place (:func:`round_sizes`). Review
decisions come in already final (the review rules decide what counts as approved), so this module
counts them without knowing where they came from.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
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


NO_SIZES = {"episodes": 0, "successes": 0, "reference_demonstrations": 0, "curated": 0, "tasks_tried": 0,
            "tasks_kept": 0}


def round_sizes(store: Store, con: Any, round_ids: list[str]) -> dict[str, dict[str, int]]:
    """Per round (``round_ids``, and any other round ``con`` has episodes of): episodes, the model's
    verified successes (reference demonstrations left out: they are the reference solution, not its
    attempts), reference demonstrations, episodes curated, and tasks the gate tried and kept. The one
    count of these that status, the dashboard and a round's summary all show."""
    sizes: dict[str, dict[str, int]] = {rid: dict(NO_SIZES) for rid in round_ids}
    for rid, n, ok, ref in con.execute(
        f"SELECT e.round_id, count(*), count(*) FILTER (WHERE o.success AND {MODEL_ATTEMPT}), "
        f"count(*) FILTER (WHERE NOT {MODEL_ATTEMPT}) "
        "FROM episodes e JOIN outcomes o USING (episode_id) GROUP BY e.round_id"
    ).fetchall():
        sizes.setdefault(rid, dict(NO_SIZES)).update(episodes=n, successes=ok, reference_demonstrations=ref)
    for rid, n in con.execute("SELECT round_id, count(DISTINCT episode_id) FROM marks GROUP BY 1").fetchall():
        if rid in sizes:
            sizes[rid]["curated"] = n
    with store.session() as s:
        for rid in round_ids:
            batches = state.batches_of(session=s, round_id=rid)
            sizes[rid].update(tasks_tried=sum(b.tasks_tried for b in batches),
                              tasks_kept=sum(b.tasks_kept for b in batches))
    return sizes


def round_counts(store: Store, round_id: str, prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a round made (its summary at the end of ``flywheel run``): :func:`round_sizes`, what its model
    calls cost (every role's), the tasks the model writer worded, the judges' errors and the ways the
    model cut episodes off."""
    con = store.duck([round_id])
    size = round_sizes(store, con, [round_id])[round_id]
    costs = round_costs(store, con, prices).get(round_id, NO_COSTS)
    # once per way a round's episodes were cut off, with the server's messages (an episode whose task
    # was already done when it was cut off succeeded, so it has no failure detail of its own)
    model_errors = [{"termination": t, "message": " | ".join(m[:3]) + (f" (+{len(m) - 3} more)" if len(m) > 3 else ""),
                     "episodes": n} for t, m, n in con.execute(
        "SELECT o.termination, list_sort(list_distinct(list(json_extract_string(o.failure, '$.detail')) "
        "FILTER (WHERE o.failure IS NOT NULL AND json_extract_string(o.failure, '$.detail') <> ''))), count(*) "
        "FROM outcomes o WHERE o.termination IN ('request_rejected', 'endpoint_error') GROUP BY 1 ORDER BY 3 DESC"
    ).fetchall()]
    with store.session() as s:
        plan = s.get(state.Round, round_id).plan or {}
    writers = dict(con.execute("SELECT writer, count(*) FROM tasks GROUP BY 1").fetchall())
    judge_errors = con.execute("SELECT count(*) FROM marks WHERE \"check\" = 'judges' AND mark = 'judge_error'"
                               ).fetchone()[0]
    return {
        # with the model writer: tasks it worded (the template's wording stood for the others)
        "tasks_worded": (sum(writers.values()) - writers.get("template", 0)) if plan.get("writer") == "openai" else None,
        "tasks_written": sum(writers.values()),
        "judge_errors": judge_errors,
        "model_errors": model_errors,
        "user_fallbacks": user_fallback_counts(con),
        **{k: size[k] for k in ("episodes", "successes", "reference_demonstrations", "tasks_kept", "tasks_tried")},
        **{k: costs[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd", "model_usage")},
    }


def user_fallback_counts(con: Any) -> list[dict[str, Any]]:
    """How often the model user's replies were replaced by the scripted answer, per reason (the
    reason's own words, without the fact it named or the server's message), most frequent first."""
    replies: Counter = Counter()
    episodes: dict[str, set[str]] = defaultdict(set)
    rows = con.execute("SELECT episode_id, user_fallbacks FROM outcomes "
                       "WHERE user_fallbacks IS NOT NULL AND user_fallbacks <> '[]'").fetchall()
    for eid, text in rows:
        for item in json.loads(text):
            reason = str(item.get("reason", "")).split(" (")[0].split(":")[0]
            replies[reason] += 1
            episodes[reason].add(eid)
    return [{"reason": r, "replies": n, "episodes": len(episodes[r])} for r, n in replies.most_common()]


def round_rows(store: Store, decisions: Mapping[str, FinalDecision],
               prices: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per round: episodes, successes, marks, review decisions (``decisions``: episode id ->
    its final decision), tokens and cost."""
    with store.session() as s:
        rounds = state.list_rounds(session=s)
    con = store.duck()
    sizes = round_sizes(store, con, [r.id for r in rounds])
    dups = dict(
        con.execute(
            "SELECT round_id, count(*) FILTER (WHERE NOT passed) FROM marks "
            "WHERE \"check\" = 'exact_duplicate' GROUP BY round_id"
        ).fetchall()
    )
    by_capability = capability_report(outcome_rows(con))
    splits: dict[str, dict[str, int]] = {}
    for rid, split, n_split in con.execute(
        "SELECT round_id, split, count(*) FROM episodes GROUP BY round_id, split ORDER BY round_id, split"
    ).fetchall():
        splits.setdefault(rid, {})[split] = n_split
    costs = round_costs(store, con, prices)
    # imported trajectories of old data directories have no round row; an eval's episodes are kept under
    # its batch id, never a round (feedback, not training data), so they are no row here
    orphans = sorted(rid for rid in set(sizes) - {r.id for r in rounds} if not rid.startswith(EVAL_PREFIX))
    funnels = curation_funnel(con, [r.id for r in rounds] + orphans)
    judged: dict[str, dict[str, bool]] = {}
    for rid, eid, mark in con.execute(
        "SELECT round_id, episode_id, mark FROM marks WHERE \"check\" = 'judges' AND mark IN ('judge_pass', 'judge_fail')"
    ).fetchall():
        judged.setdefault(rid, {})[eid] = mark == "judge_pass"
    rows = []
    for rnd in [*rounds, *orphans]:
        rid = rnd if isinstance(rnd, str) else rnd.id
        size = sizes.get(rid, NO_SIZES)
        n, ok, ref = size["episodes"], size["successes"], size["reference_demonstrations"]
        votes = [d.decision or d.status for d in decisions.values() if d.round_id == rid]
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
                "tasks_kept": size["tasks_kept"],
                "tasks_tried": size["tasks_tried"],
                "curated": size["curated"] > 0,
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
