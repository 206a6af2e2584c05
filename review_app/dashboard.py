"""Numbers for the dashboard: funnel, success by family and capability, cost, throughput, agreement."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from curation.capabilities import capability_report
from curation.report import outcome_rows, round_sizes
from review_app.agreement import PairAgreement, Vote, agreement_by_family, agreement_by_pair
from review_app.data import Overlap, review_connection
from warehouse import state
from warehouse.state import WITHDRAWN
from warehouse.store import Store


def funnel(store: Store, round_id: str, overlap: Overlap) -> list[dict[str, Any]]:
    """The round's funnel, stage by stage (tasks first, then episodes)."""
    con = review_connection(store, [round_id], overlap)
    size = round_sizes(store, con, [round_id])[round_id]
    reviewed, approved = con.execute(
        "SELECT (SELECT count(*) FROM status), (SELECT count(*) FROM status WHERE final = 'approve')").fetchone()
    return [
        {"stage": "1 tasks generated", "count": size["tasks_tried"]},
        {"stage": "2 tasks kept by gate", "count": size["tasks_kept"]},
        {"stage": "3 episodes collected", "count": size["episodes"]},
        {"stage": "4 episodes curated", "count": size["curated"]},
        {"stage": "5 episodes reviewed", "count": reviewed},
        {"stage": "6 episodes approved", "count": approved},
    ]


def success_by(store: Store, round_id: str, by: str) -> list[dict[str, Any]]:
    """Episodes and success rate per family (``by='family'``) or capability, as ``flywheel status``
    counts them (:func:`curation.capabilities.capability_report`: the model's attempts, reference
    demonstrations left out)."""
    if by not in ("family", "capability"):
        raise ValueError(f"unknown grouping {by!r}")
    report = capability_report(outcome_rows(store.duck([round_id]))).get(round_id, {})
    groups = report.get("families" if by == "family" else "capabilities", {})
    return [{by: g, "episodes": v["episodes"], "success_rate": round(v["success_rate"], 3)} for g, v in groups.items()]


def cost(store: Store, round_id: str, overlap: Overlap) -> dict[str, Any]:
    """Tokens and model time of the whole round, per episode and per approved episode."""
    con = review_connection(store, [round_id], overlap)
    n, tokens, latency, approved = con.execute(
        """
        SELECT count(*), coalesce(sum(prompt_tokens + completion_tokens), 0), coalesce(sum(latency_ms), 0),
               (SELECT count(*) FROM status WHERE final = 'approve')
        FROM outcomes
        """
    ).fetchone()
    per = (lambda x: round(x / approved, 1) if approved else None)
    return {
        "episodes": n,
        "approved": approved,
        "tokens": int(tokens),
        "tokens_per_episode": round(tokens / n, 1) if n else None,
        "tokens_per_approved": per(tokens),
        "model_seconds_per_approved": per(latency / 1000.0),
    }


def throughput(store: Store, round_id: str) -> list[dict[str, Any]]:
    """Decisions per reviewer per hour of the day they were made."""
    with store.session() as s:
        rows = s.exec(
            select(state.Review.reviewer, state.Review.decided_at).where(
                state.Review.round_id == round_id, state.Review.decision != WITHDRAWN
            )
        ).all()
    counts: dict[tuple[str, str], int] = {}
    for reviewer, when in rows:
        key = (reviewer, when.strftime("%Y-%m-%d %H:00"))
        counts[key] = counts.get(key, 0) + 1
    return [{"reviewer": r, "hour": h, "decisions": c} for (r, h), c in sorted(counts.items())]


def agreement(store: Store, round_id: str, overlap: Overlap) -> tuple[list[PairAgreement], list[PairAgreement]]:
    """Agreement per reviewer pair and per family over episodes with two or more reviewers."""
    con = review_connection(store, [round_id], overlap)
    rows = con.execute(
        "SELECT v.episode_id, v.reviewer, v.decision, e.family FROM votes v JOIN episodes e USING (episode_id)"
    ).fetchall()
    votes = [Vote(*r) for r in rows]
    return agreement_by_pair(votes), agreement_by_family(votes)


def disputed(store: Store, round_ids: list[str] | None, overlap: Overlap, limit: int = 50) -> list[dict[str, Any]]:
    """The adjudication queue: episodes whose reviewers disagree, oldest round first."""
    con = review_connection(store, round_ids, overlap)
    rows = con.execute(
        """
        SELECT s.episode_id, e.round_id, e.family, e.instruction, s.reviewers
        FROM status s JOIN episodes e USING (episode_id)
        WHERE s.status = 'disputed' ORDER BY e.round_id, s.episode_id LIMIT ?
        """,
        [limit],
    ).fetchall()
    return [dict(zip(["episode_id", "round_id", "family", "instruction", "reviewers"], r, strict=True)) for r in rows]


def competence_history(store: Store) -> list[dict[str, Any]]:
    """Competence per family after each feedback batch, as the flows last stored it with the plan proposal."""
    with store.session() as s:
        row = state.get_proposal(session=s)
    return list((row.data if row else {}).get("history", []))


def round_mixes(store: Store) -> list[dict[str, Any]]:
    """Each round's planned share per family (long form: round, family, share)."""
    with store.session() as s:
        rounds = state.list_rounds(session=s)
    return [{"round": r.id, "family": f, "share": float(w)}
            for r in rounds for f, w in sorted(r.plan.get("weights", {}).items())]
