"""Competence per family, variant and difficulty, merged over feedback batches. Pure, no I/O.

Each batch of results (a trainer's file, an eval) is evidence about one model at one
moment. The estimate is a beta posterior over success whose counts decay with a batch's
age: the newest batch counts in full, the one before it by ``decay``, and so on, and a
batch that measured another model than the newest counts ``model_decay`` less again. So a
newer batch that omits a family does not erase what an older one measured, it only makes
it less certain. Too little (decayed) evidence is reported as such, never as mastery or
failure; mastery needs the high rate in several batches, not one lucky one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from warehouse.contract import FeedbackRecord, variant_of

MIN_EVIDENCE = 5.0  # decayed results needed before a level is called anything but uncertain
MASTERED = 0.85
FAILING = 0.15
MASTERED_BATCHES = 2  # batches (newest first, each with enough results) at or above MASTERED
DECAY = 0.5  # weight of a batch per newer batch after it
MODEL_DECAY = 0.5  # extra weight factor for a batch that measured another model than the newest


@dataclass(frozen=True)
class Competence:
    """What is known of one (family, difficulty), or one variant of it."""

    family: str
    difficulty: int
    n: int  # raw results behind the estimate
    successes: int
    variant: str = ""  # "" for the family as a whole
    alpha: float | None = None  # decayed successes; None: not decayed (every result counts fully)
    beta: float | None = None  # decayed failures
    batches: int = 1
    mastered_batches: int = 0  # newest batches in a row with a mastered rate
    models: tuple[str, ...] = ()

    @property
    def wins(self) -> float:
        return float(self.successes) if self.alpha is None else self.alpha

    @property
    def losses(self) -> float:
        return float(self.n - self.successes) if self.beta is None else self.beta

    @property
    def evidence(self) -> float:
        """The decayed number of results: how much the estimate rests on."""
        return self.wins + self.losses

    @property
    def mean(self) -> float:
        """Posterior mean success under a uniform prior (so two results do not look certain)."""
        return (self.wins + 1.0) / (self.evidence + 2.0)

    @property
    def sd(self) -> float:
        """Posterior standard deviation: the uncertainty shown beside the mean."""
        a, b = self.wins + 1.0, self.losses + 1.0
        return math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))

    @property
    def zone(self) -> str:
        """unexplored, uncertain, mastered, failing or learning."""
        if self.n == 0:
            return "unexplored"
        if self.evidence < MIN_EVIDENCE:
            return "uncertain"
        if self.mean >= MASTERED and self.mastered_batches >= MASTERED_BATCHES:
            return "mastered"
        if self.mean <= FAILING:
            return "failing"
        return "learning"

    def describe(self) -> str:
        """``62% ±9 over 14.5 results (3 batches)``: the number and what it rests on."""
        return (f"{self.mean:.0%} ±{self.sd * 100:.0f} over {self.evidence:.3g} results "
                f"({self.batches} batch{'es' if self.batches != 1 else ''})")


@dataclass
class _Acc:
    n: int = 0
    successes: int = 0
    alpha: float = 0.0
    beta: float = 0.0
    models: set[str] = field(default_factory=set)
    per_batch: list[tuple[int, int]] = field(default_factory=list)  # (n, successes), newest first


REPORTED_SPLITS = ("test", "train")


def is_report(rec: FeedbackRecord) -> bool:
    """An eval that is reported, never planned from: on held-out test tasks (the test split stays unseen),
    or on new tasks of the train variants (they say whether a model learned what it was trained on, not
    how it does on what it never saw: only dev evals steer the plan)."""
    return rec.source == "eval" and rec.split in REPORTED_SPLITS


def batch_order(records: Iterable[FeedbackRecord]) -> list[tuple[str, str]]:
    """(batch, model) newest first, by when each batch was recorded."""
    seen: dict[str, tuple] = {}
    for rec in records:
        key = (rec.recorded_at, rec.batch)
        if rec.batch not in seen or key > seen[rec.batch][0]:
            seen[rec.batch] = (key, rec.model)
    return [(b, m) for b, (_, m) in sorted(seen.items(), key=lambda kv: kv[1][0], reverse=True)]


def competence_table(
    records: Iterable[FeedbackRecord],
    *,
    decay: float = DECAY,
    model_decay: float = MODEL_DECAY,
    by_variant: bool = False,
) -> dict[tuple, Competence]:
    """Competence keyed by (family, difficulty), or (family, variant, difficulty) with
    ``by_variant``. Results of evals on the ``test`` or ``train`` split are reports, not evidence for the planner."""
    rows = [r for r in records if not is_report(r)]
    order = batch_order(rows)
    age = {b: i for i, (b, _) in enumerate(order)}
    newest_model = order[0][1] if order else ""
    weight = {
        b: decay ** age[b] * (1.0 if m == newest_model else model_decay) for b, m in order
    }
    accs: dict[tuple, _Acc] = {}
    batch_counts: dict[tuple, dict[str, list[int]]] = {}
    for rec in rows:
        key = (rec.family, variant_of(rec.template), rec.difficulty) if by_variant else (rec.family, rec.difficulty)
        acc = accs.setdefault(key, _Acc())
        w = weight[rec.batch]
        acc.n += 1
        acc.successes += int(rec.success)
        acc.alpha += w * rec.success
        acc.beta += w * (not rec.success)
        acc.models.add(rec.model)
        c = batch_counts.setdefault(key, {}).setdefault(rec.batch, [0, 0])
        c[0] += 1
        c[1] += int(rec.success)
    table: dict[tuple, Competence] = {}
    for key in sorted(accs):
        acc = accs[key]
        counts = batch_counts[key]
        per_batch = [counts[b] for b, _ in order if b in counts]
        table[key] = Competence(
            family=key[0],
            difficulty=key[-1],
            variant=key[1] if by_variant else "",
            n=acc.n,
            successes=acc.successes,
            alpha=round(acc.alpha, 9),
            beta=round(acc.beta, 9),
            batches=len(per_batch),
            mastered_batches=_mastered_streak(per_batch),
            models=tuple(sorted(acc.models)),
        )
    return table


def _mastered_streak(per_batch: list[list[int]]) -> int:
    """Newest batches in a row whose own success rate is at the mastered threshold. The
    pooled estimate must be confident as well (see ``zone``), so a small batch (a family
    already down to a small share) can confirm mastery without carrying it alone."""
    streak = 0
    for n, ok in per_batch:
        if ok < MASTERED * n:
            break
        streak += 1
    return streak


def capability_competence(table: dict[tuple, Competence], capabilities: dict[str, list[str]]) -> dict[str, Competence]:
    """Competence per capability (tool use, memory, ...) pooled over the families that test it."""
    pooled: dict[str, list[float]] = {}
    for c in table.values():
        for cap in capabilities.get(c.family, []):
            p = pooled.setdefault(cap, [0.0, 0.0, 0, 0])
            p[0] += c.wins
            p[1] += c.losses
            p[2] += c.n
            p[3] += c.successes
    return {
        cap: Competence(family=cap, difficulty=0, n=int(n), successes=int(ok), alpha=a, beta=b, batches=0)
        for cap, (a, b, n, ok) in sorted(pooled.items())
    }


def competence_history(records: Iterable[FeedbackRecord], **kw) -> list[dict]:
    """Competence per family as it stood after each batch (oldest first): the estimate at
    the family's hardest measured level, merged over that batch and the ones before it."""
    rows = [r for r in records if not is_report(r)]
    order = list(reversed(batch_order(rows)))
    out: list[dict] = []
    for i, (batch, model) in enumerate(order):
        upto = {b for b, _ in order[: i + 1]}
        table = competence_table([r for r in rows if r.batch in upto], **kw)
        top: dict[str, Competence] = {}
        for (fam, level), c in table.items():
            if fam not in top or level > top[fam].difficulty:
                top[fam] = c
        out += [{"batch": batch, "order": i + 1, "model": model, "family": fam, "difficulty": c.difficulty,
                 "mean": round(c.mean, 4), "sd": round(c.sd, 4), "evidence": round(c.evidence, 3), "zone": c.zone}
                for fam, c in sorted(top.items())]
    return out
