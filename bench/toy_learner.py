"""A toy learner for the flywheel bench: a model whose competence moves with what it is trained on.

Per family a latent skill s. Success on a task of level d is sigmoid(SLOPE * (s - d)):
about one half at d = s. Each approved training episode of level d raises s by
RATE * exp(-(d - s)^2 / WIDTH), so a model learns most from tasks near its frontier,
little from what it has mastered and little from what is far too hard. A family with no
approved episodes in a round forgets a little. Deterministic from the seed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

SLOPE = 3.0
RATE = 0.06
WIDTH = 0.6
FORGET = 0.03


class ToyLearner:
    def __init__(self, skills: dict[str, float], seed: int = 0) -> None:
        self.skill = dict(skills)
        self.rng = random.Random(seed)

    def p_success(self, family: str, level: int) -> float:
        return 1.0 / (1.0 + math.exp(-SLOPE * (self.skill[family] - level)))

    def train(self, episodes: Iterable[tuple[str, int]]) -> dict[str, int]:
        """Train on approved episodes given as (family, level); returns how many per family."""
        seen: dict[str, int] = {}
        gains: dict[str, float] = {}
        for fam, level in episodes:
            if fam not in self.skill:
                continue
            seen[fam] = seen.get(fam, 0) + 1
            gains[fam] = gains.get(fam, 0.0) + RATE * math.exp(-((level - self.skill[fam]) ** 2) / WIDTH)
        for fam in self.skill:
            self.skill[fam] += gains.get(fam, 0.0) if fam in seen else -FORGET
        return seen

    def attempt(self, family: str, level: int) -> bool:
        """One evaluated attempt at a task: a draw from the learner's success probability."""
        return self.rng.random() < self.p_success(family, level)
