"""The decision that counts for each episode: the one rule used by exports, releases,
``flywheel status`` and the dashboard.

An episode's latest decision per reviewer is resolved under the overlap rules
(review_app.agreement.resolve): an episode in the overlap share needs that many
agreeing reviewers, disagreement is ``disputed`` until a lead adjudicates, and a lead's
adjudication settles the decisions it saw. A rejection always wins: a rejection recorded after
the lead's latest adjudication (unless that adjudication rejects) reopens the episode, and the
reviewers' latest decisions resolve it again (all rejecting: rejected; disagreeing: disputed,
back in the lead's queue), until a lead adjudicates again. Only a ``decided`` or
``adjudicated`` episode has a decision; a partial or disputed one counts as not reviewed yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlmodel import select

from review_app.agreement import Overlap, in_overlap, resolve
from warehouse import review_tables as rt
from warehouse import state
from warehouse.state import WITHDRAWN
from warehouse.store import Store


@dataclass(frozen=True)
class FinalDecision:
    """Duck-compatible with ``state.Review`` where exports read it (decision, reviewer, first_wrong_step)."""

    episode_id: str
    decision: str | None  # None while unreviewed, partial or disputed
    status: str
    reviewer: str  # everyone who decided, comma-separated (for lineage)
    first_wrong_step: int | None = None  # the lead's when adjudicated, else the earliest of those who agree
    round_id: str = ""
    reason: str = ""  # the lead's reason when adjudicated
    reviewers: tuple[str, ...] = ()
    recovered: bool = False  # with first_wrong_step: mask only that step, not every later one


def first_wrong(marks: list[tuple[int, bool]]) -> tuple[int | None, bool]:
    """The step to mask from and whether the agent recovered, from (step, recovered) marks
    of the reviewers who agree: the earliest step; recovered only if everyone who marked
    that step said so (when in doubt, less is trained on)."""
    if not marks:
        return None, False
    step = min(k for k, _ in marks)
    return step, all(rec for k, rec in marks if k == step)


def resolve_all(
    reviews: Iterable[state.Review], adjudications: Iterable[rt.Adjudication], overlap: Overlap
) -> dict[str, FinalDecision]:
    """Every reviewed or adjudicated episode's final decision, from rows in id order (later wins)."""
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    wrong: dict[str, dict[str, tuple[int | None, bool]]] = defaultdict(dict)
    rounds: dict[str, str] = {}
    rejected_at: dict[str, dict[str, datetime]] = defaultdict(dict)  # when each reviewer's standing rejection was made
    for r in reviews:
        rounds[r.episode_id] = r.round_id
        if r.decision == WITHDRAWN:  # the reviewer took their decision back (deleted in Label Studio)
            votes[r.episode_id].pop(r.reviewer, None)
            wrong[r.episode_id].pop(r.reviewer, None)
            rejected_at[r.episode_id].pop(r.reviewer, None)
            continue
        votes[r.episode_id][r.reviewer] = r.decision  # a reviewer's latest wins
        if r.decision == "reject":
            rejected_at[r.episode_id][r.reviewer] = r.decided_at
        else:
            rejected_at[r.episode_id].pop(r.reviewer, None)
        wrong[r.episode_id][r.reviewer] = (r.first_wrong_step, bool(r.recovered))
        rounds[r.episode_id] = r.round_id
    adjs: dict[str, rt.Adjudication] = {}
    for a in adjudications:
        adjs[a.episode_id] = a  # the latest adjudication wins
        rounds.setdefault(a.episode_id, a.round_id)
    out = {}
    for eid in {e for e, v in votes.items() if v} | set(adjs):
        required = overlap.reviewers if in_overlap(eid, overlap.share) else 1
        adj = adjs.get(eid)
        if adj is not None and adj.decision != "reject" and any(
                _after(at, adj.decided_at) for at in rejected_at.get(eid, {}).values()):
            adj = None  # a rejection made after the lead's word reopens the episode
        res = resolve(votes.get(eid, {}), required, adj.decision if adj else None)
        marked = [
            (step, rec) for who, (step, rec) in wrong.get(eid, {}).items()
            if step is not None and votes[eid].get(who) == res.decision
        ]
        step, recovered = first_wrong(marked)
        if adj is not None and adj.first_wrong_step is not None:
            # the lead looked again; their step (and whether the agent recovered) is the one to mask from
            step, recovered = adj.first_wrong_step, bool(adj.recovered)
        out[eid] = FinalDecision(
            eid, res.decision, res.status, ",".join(res.reviewers), step, rounds[eid],
            adj.reason if adj else "", res.reviewers, recovered,
        )
    return out


def _after(a: datetime, b: datetime) -> bool:
    """``a`` later than ``b`` (a database may hand back either without its UTC zone)."""
    a = a if a.tzinfo else a.replace(tzinfo=UTC)
    b = b if b.tzinfo else b.replace(tzinfo=UTC)
    return a > b


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
        adjs = s.exec(astmt).all()
    return resolve_all(reviews, adjs, overlap)
