"""The next round's plan on the release page: the competence planner's proposal as rows a
lead edits in place, and the edited rows back as the sampling plan a release approves.

The proposal is computed by the flows (the review app does not import the planner) and
stored in the state database; this module only shapes it. Pure apart from reading it."""

from __future__ import annotations

from typing import Any

from warehouse import state
from warehouse.errors import InputError
from warehouse.store import Store


def stored_proposal(store: Store) -> dict[str, Any] | None:
    """The planner's latest proposal (what ``flywheel plan --json`` printed), if any."""
    with store.session() as s:
        row = state.get_proposal(session=s)
    return None if row is None else dict(row.data)


def proposal_rows(proposal: dict[str, Any]) -> list[dict[str, Any]]:
    """One editable row per family the rounds can generate (imports have no generator)."""
    return [
        {"family": m["family"], "difficulty": int(m["difficulty"] or 1), "share": float(m["share"]),
         "episodes": int(m.get("episodes", 0)), "competence": m.get("competence", ""),
         # a failure curriculum's reference demonstrations are part of its episodes: say how many, and why
         "reason": "; ".join(r for r in (m.get("reason", ""), m.get("reference_reason", "")) if r)}
        for m in proposal.get("mix", [])
        if m["family"] != "external"
    ]


def plan_from_rows(rows: list[dict[str, Any]], episodes: int, proposal: dict[str, Any]) -> dict[str, Any]:
    """The sampling plan a release records: shares normalised to sum to 1 (families at 0 are
    left out), each family's level, and whether the lead changed the planner's proposal."""
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes <= 0:
        raise InputError("the next round needs a positive whole number of episodes")
    kept: dict[str, tuple[float, int]] = {}
    for row in rows:
        fam = str(row.get("family") or "").strip()
        share, level = row.get("share"), row.get("difficulty")
        if not fam or fam == "external":
            raise InputError(f"row {fam or '?'}: not a family a round can generate")
        if not isinstance(share, int | float) or share != share or share < 0:
            raise InputError(f"{fam}: share must be a number >= 0")
        if not isinstance(level, int) or isinstance(level, bool) or level < 1:
            raise InputError(f"{fam}: difficulty must be a whole number >= 1")
        if share > 0:
            kept[fam] = (float(share), level)
    total = sum(share for share, _ in kept.values())
    if total <= 0:
        raise InputError("every family's share is 0: give at least one family a share")
    plan = {
        "episodes": episodes,
        "families": {f: round(share / total, 6) for f, (share, _) in sorted(kept.items())},
        "difficulties": {f: level for f, (_, level) in sorted(kept.items())},
    }
    proposed = {r["family"]: (round(r["share"], 4), r["difficulty"]) for r in proposal_rows(proposal)}
    mine = {f: (round(share / total, 4), level) for f, (share, level) in kept.items()}
    plan["edited"] = mine != {f: v for f, v in proposed.items() if v[0] > 0} or episodes != proposal.get("episodes")
    plan["proposed_by"] = f"competence planner ({proposal.get('source', 'even')})"
    return plan
