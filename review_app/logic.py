"""What the review page shows and records. Importable and tested without a browser."""

from __future__ import annotations

import json
from typing import Any

from warehouse import state
from warehouse.contract import Decision
from warehouse.errors import InputError
from warehouse.store import Store

DECISIONS: tuple[Decision, ...] = ("approve", "reject", "needs_fix")


def round_ids(store: Store) -> list[str]:
    with store.session() as s:
        return [r.id for r in reversed(state.list_rounds(session=s))]


def episode_rows(store: Store, round_id: str, *, limit: int = 50, offset: int = 0) -> list[dict[str, Any]]:
    """A page of the round's episodes with outcome, marks and the latest decision."""
    con = store.duck([round_id])
    rows = con.execute(
        """
        SELECT e.episode_id, e.family, e.instruction, e.rollout, o.success, o.progress, o.steps,
               o.termination, o.failure
        FROM episodes e JOIN outcomes o USING (episode_id)
        WHERE e.round_id = ?
        ORDER BY e.family, e.episode_id
        LIMIT ? OFFSET ?
        """,
        [round_id, limit, offset],
    ).fetchall()
    cols = ["episode_id", "family", "instruction", "rollout", "success", "progress", "steps", "termination", "failure"]
    with store.session() as s:
        decisions = state.latest_decisions(session=s, round_ids=[round_id])
    marks: dict[str, list[str]] = {}
    for eid, check, mark in con.execute('SELECT episode_id, "check", mark FROM marks').fetchall():
        marks.setdefault(eid, []).append(mark)
    out = []
    for row in rows:
        item = dict(zip(cols, row, strict=True))
        item["failure"] = json.loads(item["failure"]) if item["failure"] else None
        item["marks"] = sorted(marks.get(item["episode_id"], []))
        d = decisions.get(item["episode_id"])
        item["decision"] = d.decision if d else None
        item["reviewer"] = d.reviewer if d else None
        out.append(item)
    return out


def episode_count(store: Store, round_id: str) -> int:
    con = store.duck([round_id])
    return con.execute("SELECT count(*) FROM episodes WHERE round_id = ?", [round_id]).fetchone()[0]


def episode_steps(store: Store, round_id: str, episode_id: str) -> list[dict[str, Any]]:
    con = store.duck([round_id])
    rows = con.execute(
        """SELECT index, action_kind, action_tool, action_arguments, feedback_ok, feedback_error,
                  verification_label, verification_progress
           FROM steps WHERE episode_id = ? ORDER BY index""",
        [episode_id],
    ).fetchall()
    out = []
    for idx, kind, tool, args, ok, error, label, progress in rows:
        err = json.loads(error) if error else None
        out.append(
            {
                "step": idx,
                "action": tool or kind,
                "arguments": args,
                "ok": ok,
                "error": f"{err['code']}: {err['message']}" if err else "",
                "label": label,
                "progress": progress,
            }
        )
    return out


def record_decision(
    store: Store, *, round_id: str, episode_id: str, reviewer: str, decision: str, reason: str = ""
) -> state.Review:
    """Save one decision at once. Nobody decides anonymously."""
    reviewer = reviewer.strip()
    if not reviewer:
        raise InputError("a decision needs a reviewer name")
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r} (one of {', '.join(DECISIONS)})")
    with store.session() as s:
        return state.add_review(
            session=s,
            review=state.Review(
                episode_id=episode_id, round_id=round_id, reviewer=reviewer, decision=decision, reason=reason
            ),
        )
