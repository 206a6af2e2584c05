"""The release gate: a lead approves a dataset version and the next round's sampling plan.

The release records which rounds, the selection rules and the moment of approval; the
episodes it holds are those whose counting decision was "approve" at that moment. A
digest of their ids is stored and checked again at export, so an export of a release is
exactly what the lead approved, however many decisions come later.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import IntegrityError

from review_app.accounts import User, require_user
from review_app.data import Overlap
from review_app.final import FinalDecision, final_decisions
from warehouse import review_tables as rt
from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store

_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def digest_ids(ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


def release_candidate(
    store: Store, round_ids: list[str], overlap: Overlap, *, as_of: datetime | None = None
) -> dict[str, Any]:
    """What a release of these rounds would hold (now, or as of a moment): counts by status."""
    finals = final_decisions(store, round_ids, overlap, as_of=as_of)
    con = store.duck(round_ids)
    episodes = con.execute("SELECT count(*) FROM episodes").fetchone()[0]
    approved = sorted(e for e, f in finals.items() if f.decision == "approve")
    counts: dict[str, int] = {}
    for f in finals.values():
        key = f.decision or f.status
        counts[key] = counts.get(key, 0) + 1
    return {
        "rounds": round_ids,
        "episodes": episodes,
        "approved": len(approved),
        "rejected": counts.get("reject", 0),
        "needs_fix": counts.get("needs_fix", 0),
        "disputed": counts.get("disputed", 0),
        "partial": counts.get("partial", 0),
        "unreviewed": episodes - len(finals),
        "digest": digest_ids(approved),
    }


def check_plan(plan: Any) -> dict[str, Any]:
    """The sampling plan if well formed: episodes > 0 and family shares summing to about 1."""
    if not isinstance(plan, dict):
        raise InputError("the sampling plan must be a JSON object")
    eps = plan.get("episodes")
    if not isinstance(eps, int) or eps <= 0:
        raise InputError("sampling plan: 'episodes' must be a positive whole number")
    fams = plan.get("families")
    if not isinstance(fams, dict) or not fams:
        raise InputError("sampling plan: 'families' must map family ids to shares")
    if any(not isinstance(v, (int, float)) or v < 0 for v in fams.values()):
        raise InputError("sampling plan: every family share must be a number >= 0")
    if abs(sum(fams.values()) - 1.0) > 0.01:
        raise InputError(f"sampling plan: family shares sum to {sum(fams.values()):.3f}, not 1")
    if "external" in fams:
        raise InputError("sampling plan: 'external' (imported conversations) is not a family a round can generate")
    levels = plan.get("difficulties", {})
    if not isinstance(levels, dict) or any(not isinstance(v, int) or isinstance(v, bool) or v < 1 for v in levels.values()):
        raise InputError("sampling plan: 'difficulties' must map family ids to levels >= 1")
    return plan


def approve_release(
    store: Store,
    *,
    lead: User | str,
    dataset_version: str,
    round_ids: list[str],
    sampling_plan: Any,
    overlap: Overlap,
    notes: str = "",
) -> rt.Release:
    """Record the lead's approval; InputError if anything is missing or wrong. ``sampling_plan=None``
    releases the data without fixing the next round's mix: the planner's feedback decides it."""
    user = require_user(store, lead.name if isinstance(lead, User) else lead)
    if not user.is_lead:
        raise InputError(f"{user.name} is not a lead; only leads approve releases")
    if not _VERSION.match(dataset_version or ""):
        raise InputError("dataset version must be 1-64 letters, digits, '.', '_' or '-'")
    with store.session() as s:
        known = {r.id for r in state.list_rounds(session=s)}
        taken = {r.dataset_version for r in rt.list_releases(session=s)}
    if not round_ids or set(round_ids) - known:
        raise InputError(f"unknown or no rounds: {', '.join(sorted(set(round_ids) - known)) or 'none given'}")
    if dataset_version in taken:
        raise InputError(f"dataset version {dataset_version} was already released")
    plan = {} if sampling_plan is None else check_plan(sampling_plan)
    moment = datetime.now(UTC)  # the release holds the decisions made up to this moment
    cand = release_candidate(store, round_ids, overlap, as_of=moment)
    if cand["approved"] == 0:
        raise InputError("nothing is approved in these rounds yet")
    with store.session() as s:
        last = rt.latest_release(session=s)
        number = 1 if last is None else last.number + 1
        release = rt.Release(
            id=f"rel-{number:04d}",
            number=number,
            dataset_version=dataset_version,
            round_ids=sorted(round_ids),
            episodes=cand["approved"],
            episodes_digest=cand["digest"],
            sampling_plan=plan,
            selection={"overlap_share": overlap.share, "overlap_reviewers": overlap.reviewers},
            notes=notes,
            approved_by=user.name,
            approved_at=moment,
        )
        try:
            return rt.add_release(session=s, release=release)
        except IntegrityError as exc:  # another lead took this number a moment ago
            raise InputError("another release was approved at the same moment; look again and retry") from exc


def release_overlap(release: rt.Release) -> Overlap:
    sel = release.selection or {}
    return Overlap(sel.get("overlap_share", 0.1), sel.get("overlap_reviewers", 2))


def release_decisions(store: Store, release: rt.Release) -> dict[str, FinalDecision]:
    """The counting decisions as they stood when the release was approved."""
    return final_decisions(store, release.round_ids, release_overlap(release), as_of=release.approved_at)


def release_episode_ids(store: Store, release: rt.Release) -> list[str] | None:
    """The approved episode ids of the release, or None if they no longer match its digest."""
    ids = sorted(e for e, f in release_decisions(store, release).items() if f.decision == "approve")
    return ids if digest_ids(ids) == release.episodes_digest else None


def get_approved_release(store: Store, release_id: str) -> rt.Release:
    """The release ``release_id`` (or the latest for 'latest'); InputError if there is none."""
    with store.session() as s:
        rel = rt.latest_release(session=s) if release_id == "latest" else rt.get_release(session=s, release_id=release_id)
        known = [r.id for r in rt.list_releases(session=s)]
    if rel is None:
        raise InputError(
            f"no approved release {release_id!r} (known: {', '.join(known) or 'none'}; a lead approves one in the review app)"
        )
    return rel
