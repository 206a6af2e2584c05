"""What goes into an export, and why the rest stays out. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from warehouse.contract import REFERENCE_POLICY


class Decision(Protocol):
    decision: str
    reviewer: str
    first_wrong_step: int | None
    recovered: bool  # with first_wrong_step: only that step is masked (see curation.masks)


# what each reason to leave an episode out means, for the manifest's list of approved episodes left out
PROBLEMS: dict[str, str] = {
    "not_curated": "the curation cascade has not looked at it yet",
    "schema_broken": "its records break the schema",
    "replay_mismatch": "replaying its actions does not reach the state it recorded",
    "duplicate": "an exact duplicate of another episode",
    "near_duplicate": "a near duplicate of another episode",
    "needs_fix": "marked 'needs fix'",
    "review_disputed": "reviewers disagree and no lead has settled it",
    "review_partial": "waits for more reviewers",
    "no_counterpart": "no rollout of the same task to pair it with",
    "held_out_split": "its task is in a held-out split (never trained on)",
    "reference_demonstration": "a reference demonstration (the reference solution followed), not the model's own "
                               "attempt: never in a preference pair",
    "reference_unapproved": "a reference demonstration no person approved (one trains only with an approval)",
}


def problem_text(reason: str) -> str:
    return PROBLEMS.get(reason, reason)


def is_reference(ep: dict[str, Any]) -> bool:
    """A reference demonstration (the ``reference`` policy), not an attempt of the model."""
    return ep.get("policy") == REFERENCE_POLICY


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
    with ``include_verified``, only when verified and the preferred rollout of its task; a
    reference demonstration only with an approval."""
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
    if is_reference(ep):  # a demonstration trains only when people vouched for it, never on the verifier's word
        return "reference_unapproved"
    if not include_verified:
        return "not_reviewed"
    if not ep.get("success"):
        return "not_verified"
    if ep.get("m_selection") == "alternative":
        return "costlier_alternative"
    return None


@dataclass(frozen=True)
class Role:
    """An episode's place in preference pairs: ``side`` chosen or rejected, who said so
    (``source`` human or verifier), and for a rejected one whether it ``failed`` or is a
    costlier success (``costlier``)."""

    side: str
    source: str
    kind: str = ""


def preference_role(ep: dict[str, Any], review: Decision | None, *, include_verified: bool) -> Role | str:
    """The episode's :class:`Role` in pairs, or the reason it has none.

    People first: an approved episode is only ever chosen and a rejected one only ever
    rejected. Without a decision the verifier speaks: a failure is rejected, a costlier
    success is rejected (as costlier), and a preferred success is chosen (only with
    ``include_verified``, as for SFT). A reference demonstration has no role: it is not the
    model's attempt, so it says nothing about which of the model's attempts is better."""
    if is_reference(ep):
        return "reference_demonstration"
    why = sound_reason(ep)
    paired = why in (None, "near_duplicate")  # near copies still make pairs: they differ where it counts
    decision = review.decision if review else None
    if decision == "reject":
        return Role("rejected", "human", "failure") if paired else why
    if decision == "approve":
        return Role("chosen", "human") if paired else why
    if decision == "needs_fix":
        return "needs_fix"
    status = getattr(review, "status", None)
    if status in ("disputed", "partial"):
        return f"review_{status}"
    if why and why != "near_duplicate":
        return why
    if ep.get("success") is None:  # unknown outcome (no reward) and no one decided: in no pair
        return "unknown_outcome"
    if not ep.get("success"):
        return Role("rejected", "verifier", "failure") if why is None else why
    if ep.get("m_selection") == "alternative":
        return Role("rejected", "verifier", "costlier")
    if why:
        return why
    return Role("chosen", "verifier") if include_verified else "not_reviewed"
