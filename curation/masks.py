"""Which steps of an exported episode get no loss. Pure.

A reviewer's first wrong step k masks k and every later step, since what follows a
mistake is rarely worth imitating; a reviewer who saw the agent recover says so
("recovered"), and then only k is masked. Steps the heuristics marked wrong are masked
as well, one by one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# the manifest's statement of the rule, and the names of its counts
RULE = ("a reviewer's first wrong step k: no loss on step k and every later assistant turn; "
        "marked recovered: no loss on step k only; steps the heuristics marked wrong: no loss on those steps")
FROM_STEP = "from_first_wrong_step"
STEP_ONLY = "first_wrong_step_only_recovered"


def review_mask(review: Any, steps: Iterable[int]) -> tuple[set[int], str | None]:
    """(step indices the review masks, which kind of mask or None) for an episode with ``steps``."""
    k = getattr(review, "first_wrong_step", None) if review is not None else None
    if k is None:
        return set(), None
    if getattr(review, "recovered", False):
        return {k}, STEP_ONLY
    return {k} | {i for i in steps if i >= k}, FROM_STEP
