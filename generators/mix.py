"""The mix of the next batch from competence: the plan's rules, each number with its reason. Pure.

- Learning: weight by learnability p(1-p), scaled so p = 1/2 weighs 1, never below a floor.
- Mastered (high rate over several batches): up a difficulty level where there is one, else
  down to a keep-alive share (enough to notice forgetting). A high rate in fewer batches
  probes the next level up while that level is unmeasured (cheap to undo: failing there
  brings the family back down).
- Failing: down a level where there is one; at the lowest level, a failure curriculum
  rather than more of the same: a smaller share drawn from the family's easier variants.
- Too little evidence, or none: explore at full weight, said as such.
- A capability (tool use, memory, ...) well below the others gets its families boosted.
- Model-side failure types add targeted tasks to the families they came from; harness-side
  ones are a report for the people who run the harness, not more data.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from generators.competence import MASTERED, MASTERED_BATCHES, Competence, capability_competence

FLOOR = 0.15  # the least a family still being learned gets
KEEP_ALIVE = 0.1  # a family mastered at its hardest level
FAILURE_WEIGHT = 0.6  # a failure curriculum: targeted, not a flood of the same failures
GAP = 0.15  # a capability this far below the mean of the others is a gap
GAP_BOOST = 1.5
TARGETED = 0.5  # weight added in proportion to a family's share of model-side failures


@dataclass(frozen=True)
class FamilyMix:
    """One family's place in the next batch."""

    family: str
    weight: float
    difficulty: int
    reason: str
    curriculum: str = ""  # "failure" for a failure curriculum
    variants: tuple[str, ...] = ()  # variants to draw from (empty: any)
    competence: str = ""  # the estimate behind the decision, as shown to people


@dataclass(frozen=True)
class FailureCount:
    family: str
    side: str  # "model" or "harness"
    type: str
    count: int


@dataclass
class MixInputs:
    """What the rules read besides competence."""

    max_difficulty: dict[str, int]
    capabilities: dict[str, str] = field(default_factory=dict)  # family -> its capability
    variants: dict[tuple, Competence] = field(default_factory=dict)  # (family, variant, level) -> competence
    failures: list[FailureCount] = field(default_factory=list)


def learnability(p: float) -> float:
    """4 p (1 - p), floored: 1 at p = 1/2, small for what is mastered or hopeless."""
    return max(FLOOR, round(4.0 * p * (1.0 - p), 4))


def _family_rule(fam: str, table: dict[tuple, Competence], inputs: MixInputs, base: int) -> FamilyMix:
    top = inputs.max_difficulty.get(fam, base)
    levels = sorted(d for (f, d) in table if f == fam)
    if not levels:
        return FamilyMix(fam, 1.0, min(base, top), "no feedback yet: explore")
    level = decision_level(fam, levels, table)
    c = table[(fam, level)]
    seen = c.describe()
    if c.zone == "uncertain":
        return FamilyMix(fam, 1.0, level, f"too little evidence at level {level} ({seen}): measure more", competence=seen)
    if c.zone == "mastered" and level < top:
        return FamilyMix(fam, 1.0, level + 1,
                         f"mastered level {level} ({seen}, {c.mastered_batches} batches): up to level {level + 1}",
                         competence=seen)
    if c.zone == "mastered":
        return FamilyMix(fam, KEEP_ALIVE, level,
                         f"mastered the hardest level ({seen}, {c.mastered_batches} batches): keep-alive share",
                         competence=seen)
    if c.zone == "learning" and c.mean >= MASTERED and level < top and _unknown(table.get((fam, level + 1))):
        return FamilyMix(fam, 1.0, level + 1,
                         f"looks mastered at level {level} ({seen}) but not yet over {MASTERED_BATCHES} batches: "
                         f"probe level {level + 1}", competence=seen)
    if c.zone == "failing" and level > 1:
        return FamilyMix(fam, 1.0, level - 1, f"failing level {level} ({seen}): down to level {level - 1}",
                         competence=seen)
    if c.zone == "failing":
        easy = easier_variants(fam, level, inputs.variants)
        which = f"easier variants {', '.join(easy)}" if easy else "any variant (no train variant measured easier)"
        return FamilyMix(fam, FAILURE_WEIGHT, level,
                         f"failing at the lowest level ({seen}): failure curriculum: {which}",
                         curriculum="failure", variants=easy, competence=seen)
    w = learnability(c.mean)
    return FamilyMix(fam, w, level, f"learning at level {level} ({seen}): learnability {w:.2f}", competence=seen)


def _unknown(c: Competence | None) -> bool:
    return c is None or c.zone in ("unexplored", "uncertain")


def decision_level(fam: str, levels: list[int], table: dict[tuple, Competence]) -> int:
    """The level to decide at: the hardest one it holds (learning or mastered); if it fails
    every level it is known at, the lowest of them (so a failing family keeps stepping
    down). Levels with too little evidence count only when nothing else is known."""
    known = [d for d in levels if table[(fam, d)].zone != "uncertain"]
    if not known:
        return levels[-1]
    holding = [d for d in known if table[(fam, d)].zone != "failing"]
    return max(holding) if holding else min(known)


def easier_variants(fam: str, level: int, variants: dict[tuple, Competence]) -> tuple[str, ...]:
    """The family's variants at ``level`` that the model does measurably best on: the upper
    half by mean, keeping only those above the family's average there (when every variant
    fails alike, none is easier, and the order of their names must not pretend one is)."""
    rated = sorted(((c.mean, v) for (f, v, d), c in variants.items() if f == fam and d == level and v),
                   key=lambda mv: (-mv[0], mv[1]))
    if len(rated) < 2:
        return ()
    average = sum(m for m, _ in rated) / len(rated)
    return tuple(sorted(v for m, v in rated[: max(1, len(rated) // 2)] if m > average + 1e-9))


def next_mix(
    families: list[str],
    competence: dict[tuple, Competence],
    *,
    base_difficulty: int,
    max_difficulty: dict[str, int],
    inputs: MixInputs | None = None,
) -> list[FamilyMix]:
    """Weight and difficulty of each family in the next batch, each with its reason."""
    inputs = inputs or MixInputs(max_difficulty=max_difficulty)
    inputs.max_difficulty = max_difficulty
    mix = {f: _family_rule(f, competence, inputs, base_difficulty) for f in families}
    mix = _capability_gaps(mix, competence, inputs)
    return [_model_failures(m, inputs.failures) for m in mix.values()]


def _capability_gaps(mix: dict[str, FamilyMix], table: dict[tuple, Competence], inputs: MixInputs) -> dict[str, FamilyMix]:
    caps = capability_competence(table, {f: [c] for f, c in inputs.capabilities.items()})
    known = {cap: c for cap, c in caps.items() if c.zone not in ("unexplored", "uncertain")}
    if len(known) < 2:
        return mix
    out = dict(mix)
    for cap, c in known.items():
        others = [o.mean for k, o in known.items() if k != cap]
        rest = sum(others) / len(others)
        if c.mean > rest - GAP:
            continue
        for fam, m in mix.items():
            if inputs.capabilities.get(fam) == cap and m.curriculum != "failure":
                out[fam] = _with(m, round(m.weight * GAP_BOOST, 4),
                                 f"capability gap: {cap} at {c.mean:.0%} vs {rest:.0%} for the others: x{GAP_BOOST}")
    return out


def _model_failures(m: FamilyMix, failures: list[FailureCount]) -> FamilyMix:
    model_side = [f for f in failures if f.side == "model"]
    total = sum(f.count for f in model_side)
    mine = Counter({f.type: f.count for f in model_side if f.family == m.family})
    if not total or not mine:
        return m
    share = sum(mine.values()) / total
    extra = round(TARGETED * share, 4)
    kinds = ", ".join(f"{t} {n}" for t, n in sorted(mine.items(), key=lambda tn: (-tn[1], tn[0])))
    return _with(m, round(m.weight + extra, 4), f"model-side failures ({kinds}; {share:.0%} of all): +{extra:.2f} targeted")


def _with(m: FamilyMix, weight: float, why: str) -> FamilyMix:
    return FamilyMix(m.family, weight, m.difficulty, f"{m.reason}; {why}", m.curriculum, m.variants, m.competence)


def harness_reports(failures: list[FailureCount]) -> list[str]:
    """Harness-side failures, per family: what to fix in the harness, not in the data."""
    per: dict[str, Counter] = {}
    for f in failures:
        if f.side == "harness":
            per.setdefault(f.family, Counter())[f.type] += f.count
    return [
        f"{fam}: harness-side failures ({', '.join(f'{t} {n}' for t, n in sorted(c.items()))}): "
        "fix the harness (skills, exposed tools, retrieval, memory), not the data"
        for fam, c in sorted(per.items())
    ]


@dataclass(frozen=True)
class ReleasedMix:
    """The sizes and mix a lead approved with a release, in place of the planner's own."""

    episodes: int
    weights: dict[str, float]
    families: list[str]
    difficulties: dict[str, int]
    reasons: dict[str, str]
    source: str


def released_mix(sampling_plan: dict, release: str, approved_by: str, mix: dict[str, FamilyMix], families: list[str],
                 episodes: int, difficulties: dict[str, int]) -> ReleasedMix | None:
    """What a release's approved ``sampling_plan`` makes of the next round: its episodes (else
    ``episodes``) and its family shares (only families in ``mix``, with a share above nothing), the
    levels it names, each reason prefixed by who approved it. None when it names no usable share.
    Difficulty otherwise follows competence (``difficulties``)."""
    shares = {f: float(v) for f, v in sampling_plan.get("families", {}).items() if f in mix and v > 0}
    if not shares:
        return None
    kept = [f for f in families if f in shares]
    levels = sampling_plan.get("difficulties") or {}
    return ReleasedMix(
        episodes=int(sampling_plan.get("episodes") or episodes),
        weights=shares,
        families=kept,
        difficulties=difficulties | {f: int(v) for f, v in levels.items() if f in shares and isinstance(v, int)},
        reasons={f: f"{release} approved by {approved_by}: {shares[f]:.0%}; {mix[f].reason}" for f in kept},
        source=f"release {release}",
    )
