"""A toy learner for the flywheel bench: a model whose competence moves with what it is trained on.

Per family a latent skill s. A task's effective difficulty is its level plus its variant's
offset (variants of one family and level are not equally hard: a fixed offset in
[-SPREAD, SPREAD] per variant, drawn from a hash of its name). Success on a task of
effective difficulty e is sigmoid(SLOPE * (s - e)): about one half at e = s. Each approved
training episode raises s by RATE * exp(-(e - s)^2 / WIDTH), so a model learns most from
tasks near its frontier, little from what it has mastered and little from what is far too
hard. A family with no approved episodes in a round forgets a little. The score of a family
at a level is that of a typical variant there (offset 0). Deterministic from the seed.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable

SLOPE = 3.0
RATE = 0.06
WIDTH = 0.6
FORGET = 0.03
SPREAD = 0.6


def offset(family: str, variant: str) -> float:
    """How much harder (or easier, below 0) a variant is than its level says; 0 for none."""
    if not variant:
        return 0.0
    h = int.from_bytes(hashlib.sha256(f"{family}/{variant}".encode()).digest()[:8], "big") / 2**64
    return round(SPREAD * (2 * h - 1), 4)


class ToyLearner:
    def __init__(self, skills: dict[str, float], seed: int = 0) -> None:
        self.skill = dict(skills)
        self.rng = random.Random(seed)

    def p_success(self, family: str, level: int, variant: str = "") -> float:
        e = level + offset(family, variant)
        return 1.0 / (1.0 + math.exp(-SLOPE * (self.skill[family] - e)))

    def train(self, episodes: Iterable[tuple[str, str, int]]) -> dict[str, int]:
        """Train on approved episodes given as (family, variant, level); returns how many per family."""
        seen: dict[str, int] = {}
        gains: dict[str, float] = {}
        for fam, variant, level in episodes:
            if fam not in self.skill:
                continue
            seen[fam] = seen.get(fam, 0) + 1
            e = level + offset(fam, variant)
            gains[fam] = gains.get(fam, 0.0) + RATE * math.exp(-((e - self.skill[fam]) ** 2) / WIDTH)
        for fam in self.skill:
            self.skill[fam] += gains.get(fam, 0.0) if fam in seen else -FORGET
        return seen

    def attempt(self, family: str, variant: str, level: int) -> bool:
        """One evaluated attempt at a task: a draw from the learner's success probability."""
        return self.rng.random() < self.p_success(family, level, variant)
