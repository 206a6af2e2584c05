"""Bulk approve: a lead approves, in one go, the verified successes the queue's filters select
(say every verified success of a family, after a spot check). Each is recorded as that lead's
own decision, in a transaction of its own, with a note saying it was bulk; a rerun (after a
kill, or a second click) records nothing twice."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from review_app import decisions, queue
from review_app.accounts import User, require_user
from review_app.agreement import Overlap
from warehouse.errors import InputError
from warehouse.store import Store
from warehouse.timestamps import utcnow

NOTE_PREFIX = "bulk approve"  # every bulk decision's note starts so
_FOREVER = timedelta(days=365 * 1000)  # the same bulk note on the same episode, however long ago: one decision


def bulk_note(note: str) -> str:
    """The note recorded with each bulk decision: says it was bulk, and what the lead checked."""
    note = " ".join(note.split())
    return f"{NOTE_PREFIX}: {note}" if note else NOTE_PREFIX


def candidates(store: Store, lead: User, flt: queue.QueueFilter, overlap: Overlap | None = None) -> list[dict]:
    """What a bulk approve under ``flt`` would approve: the verified successes the filters select
    that ``lead`` has not decided, reference demonstrations left out (each is judged on its own)."""
    rows = queue.matching_episodes(store, lead, flt, overlap)
    return [r for r in rows if r["success"] is True and not r["reference"] and not r["mine"]]


@dataclass
class BulkResult:
    recorded: int = 0
    already: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)  # (episode id, why)


def approve_all(store: Store, *, lead: str, episodes: list[dict], note: str, on_each=None) -> BulkResult:
    """Approve ``episodes`` (rows of :func:`candidates`) as ``lead``, one transaction each. Only an
    active lead may; an episode that cannot be approved is named in ``refused`` and the rest go on."""
    user = require_user(store, lead)
    if not user.is_lead:
        raise InputError(f"bulk approve is for leads; {user.name} is a {user.role}")
    reason = bulk_note(note)
    result = BulkResult()
    for row in episodes:
        started = utcnow()
        try:
            saved = decisions.record_decision(store, reviewer=user.name, round_id=row["round_id"],
                                              episode_id=row["episode_id"], decision="approve", reason_text=reason,
                                              repeat_window=_FOREVER)
        except InputError as exc:
            result.refused.append((row["episode_id"], str(exc)))
            continue
        if saved.decided_at is not None and saved.decided_at.replace(tzinfo=None) < started.replace(tzinfo=None):
            result.already += 1  # recorded before this run: by a run that was cut off, or a second click
        else:
            result.recorded += 1
        if on_each is not None:
            on_each()
    return result
