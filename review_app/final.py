"""The decision that counts for each episode, as of a moment (for exports and releases)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import select

from review_app.agreement import in_overlap, resolve
from review_app.data import Overlap
from warehouse import review_tables as rt
from warehouse import state
from warehouse.store import Store


@dataclass(frozen=True)
class FinalDecision:
    """Duck-compatible with ``state.Review`` where exports read it (decision, reviewer)."""

    episode_id: str
    decision: str | None  # None while pending or disputed
    status: str
    reviewer: str  # everyone who decided, comma-separated (for lineage)
    first_wrong_step: int | None = None  # the earliest wrong step marked by those who agree with it


def final_decisions(
    store: Store, round_ids: list[str] | None, overlap: Overlap, *, as_of: datetime | None = None
) -> dict[str, FinalDecision]:
    """Every reviewed episode's status and counting decision under the overlap rules."""
    with store.session() as s:
        rstmt = select(state.Review).order_by(state.Review.id)
        astmt = select(rt.Adjudication).order_by(rt.Adjudication.id)
        if round_ids:
            rstmt = rstmt.where(state.Review.round_id.in_(round_ids))
            astmt = astmt.where(rt.Adjudication.round_id.in_(round_ids))
        if as_of is not None:
            rstmt = rstmt.where(state.Review.decided_at <= as_of)
            astmt = astmt.where(rt.Adjudication.decided_at <= as_of)
        reviews = s.exec(rstmt).all()
        adjs = {a.episode_id: a.decision for a in s.exec(astmt).all()}  # ordered by id: latest wins
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    wrong: dict[str, dict[str, int | None]] = defaultdict(dict)
    for r in reviews:
        votes[r.episode_id][r.reviewer] = r.decision  # ordered by id: a reviewer's latest wins
        wrong[r.episode_id][r.reviewer] = r.first_wrong_step
    out = {}
    for eid in set(votes) | set(adjs):
        required = overlap.reviewers if in_overlap(eid, overlap.share) else 1
        res = resolve(votes.get(eid, {}), required, adjs.get(eid))
        marked = [
            step
            for who, step in wrong.get(eid, {}).items()
            if step is not None and votes[eid].get(who) == res.decision
        ]
        out[eid] = FinalDecision(eid, res.decision, res.status, ",".join(res.reviewers), min(marked, default=None))
    return out
