"""Competence per family and difficulty, and the mix of the next batch. Pure, no I/O.

The rule: more of what the model is still learning, less of what it has mastered,
and new (harder) tasks where it has mastered a level; where it fails nearly always,
step down to a level it can learn from. A family with no feedback yet is explored at
full weight.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from warehouse.contract import FeedbackRecord

MIN_EVIDENCE = 5  # results needed before a level counts as mastered or failing
MASTERED = 0.85
FAILING = 0.15
MASTERED_WEIGHT = 0.2  # mastered at the hardest level: keep a little, to notice forgetting


@dataclass(frozen=True)
class Competence:
    family: str
    difficulty: int
    n: int
    successes: int

    @property
    def mean(self) -> float:
        """Posterior mean success under a uniform prior (so two results do not look certain)."""
        return (self.successes + 1) / (self.n + 2)

    @property
    def zone(self) -> str:
        if self.n < MIN_EVIDENCE:
            return "learning" if self.n else "unexplored"
        if self.mean >= MASTERED:
            return "mastered"
        if self.mean <= FAILING:
            return "failing"
        return "learning"


@dataclass(frozen=True)
class FamilyMix:
    family: str
    weight: float
    difficulty: int
    reason: str


def competence_table(records: Iterable[FeedbackRecord]) -> dict[tuple[str, int], Competence]:
    counts: dict[tuple[str, int], list[int]] = {}
    for rec in records:
        c = counts.setdefault((rec.family, rec.difficulty), [0, 0])
        c[0] += 1
        c[1] += int(rec.success)
    return {k: Competence(k[0], k[1], n, ok) for k, (n, ok) in sorted(counts.items())}


def next_mix(
    families: list[str],
    competence: dict[tuple[str, int], Competence],
    *,
    base_difficulty: int,
    max_difficulty: dict[str, int],
) -> list[FamilyMix]:
    """Weight and difficulty of each family in the next batch, with the reason."""
    mix: list[FamilyMix] = []
    for fam in families:
        top = max_difficulty.get(fam, base_difficulty)
        levels = sorted(d for (f, d) in competence if f == fam)
        if not levels:
            mix.append(FamilyMix(fam, 1.0, min(base_difficulty, top), "no feedback yet: explore"))
            continue
        level = levels[-1]  # the hardest level the model has been measured on
        c = competence[(fam, level)]
        if c.zone == "mastered" and level < top:
            mix.append(FamilyMix(fam, 1.0, level + 1, f"mastered level {level} ({c.mean:.0%}): harder tasks"))
        elif c.zone == "mastered":
            mix.append(FamilyMix(fam, MASTERED_WEIGHT, level, f"mastered the hardest level ({c.mean:.0%}): fewer"))
        elif c.zone == "failing" and level > 1:
            mix.append(FamilyMix(fam, 1.0, level - 1, f"failing level {level} ({c.mean:.0%}): a level it can learn"))
        else:
            # Most to learn where success is near one half: p(1-p) peaks there.
            weight = 0.25 + 3.0 * c.mean * (1.0 - c.mean)
            mix.append(FamilyMix(fam, round(weight, 4), level, f"learning at level {level} ({c.mean:.0%})"))
    return mix
