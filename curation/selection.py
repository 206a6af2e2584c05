"""What goes into an export, and why the rest stays out. Pure."""

from __future__ import annotations

from typing import Any, Protocol


class Decision(Protocol):
    decision: str
    reviewer: str
    first_wrong_step: int | None
    recovered: bool  # with first_wrong_step: only that step is masked (see curation.masks)


def sound_reason(ep: dict[str, Any]) -> str | None:
    """Why an episode cannot be used at all (broken, replay mismatch, duplicate), or None.

    ``ep`` is a row of :func:`curation.export_source.episode_sql` (marks pivoted to
    ``m_<check>`` / ``p_<check>`` columns). An episode the cascade never saw is
    ``not_curated``."""
    if ep.get("m_schema") is None:
        return "not_curated"
    if ep.get("p_schema") is False:
        return "schema_broken"
    if ep.get("m_replay") == "mismatch":
        return "replay_mismatch"
    if ep.get("p_exact_duplicate") is False:
        return "duplicate"
    if ep.get("p_near_duplicate") is False:
        return "near_duplicate"
    return None


def sft_exclusion(ep: dict[str, Any], review: Decision | None, *, include_verified: bool) -> str | None:
    """None when the episode goes into an SFT export; otherwise the reason it is left out.

    People decide first: a rejection always wins, an approval beats the cascade's
    preferences (not its soundness). Without a decision, an episode is exported only
    with ``include_verified``, only when verified and the preferred rollout of its task."""
    why = sound_reason(ep)
    if why:
        return why
    decision = review.decision if review else None
    if decision == "reject":
        return "rejected"
    if decision == "needs_fix":
        return "needs_fix"
    if decision == "approve":
        return None
    status = getattr(review, "status", None)
    if status in ("disputed", "partial"):
        # Reviewers have started and not settled it (a vote may be a rejection): wait for them.
        return f"review_{status}"
    if not include_verified:
        return "not_reviewed"
    if not ep.get("success"):
        return "not_verified"
    if ep.get("m_selection") == "alternative":
        return "costlier_alternative"
    return None


def preference_role(ep: dict[str, Any], review: Decision | None, *, include_verified: bool) -> str | None:
    """``chosen``, ``rejected_failure``, ``rejected_costlier`` or None (not usable in a pair)."""
    if sound_reason(ep) and sound_reason(ep) != "near_duplicate":
        return None
    decision = review.decision if review else None
    if not ep.get("success") or decision == "reject":
        return "rejected_failure" if sound_reason(ep) is None else None
    if ep.get("m_selection") == "alternative":
        return "rejected_costlier"
    unsettled = getattr(review, "status", None) in ("disputed", "partial")
    if sound_reason(ep) is None and (decision == "approve" or (include_verified and decision is None and not unsettled)):
        return "chosen"
    return None
