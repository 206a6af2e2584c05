"""What goes into an export, and why the rest stays out. Pure."""

from __future__ import annotations

from warehouse.contract import CurationMark


def exclusion_reason(
    marks: dict[str, CurationMark], decision: str | None, *, include_verified: bool
) -> str | None:
    """None when the episode is exported; otherwise the reason it is left out.

    People decide first: a rejection always wins. Without a decision, an episode is
    exported only when ``include_verified`` asks for verified, unreviewed episodes.
    """
    dup = marks.get("exact_duplicate")
    if dup is not None and not dup.passed:
        return "duplicate"
    if decision == "reject":
        return "rejected"
    if decision == "needs_fix":
        return "needs_fix"
    if decision == "approve":
        return None
    verified = marks.get("verified")
    if not include_verified:
        return "not_reviewed"
    if verified is None or not verified.passed:
        return "not_verified"
    return None
