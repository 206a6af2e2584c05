"""The plan of a batch: which tasks, how many rollouts each. Pure, no I/O.

With no feedback the mix is even across the chosen families. The plan is stored
with its round, so a resumed round runs exactly the plan it started with.

A family in a failure curriculum gives a share of its episodes to *reference
demonstrations*: slots of one rollout each, collected by the reference policy (the
family's reference solution followed exactly) rather than the round's policy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace

from generators.phone.families import FAMILIES
from warehouse.contract import REFERENCE_POLICY


@dataclass(frozen=True)
class TaskSlot:
    """One task to write: a family, a difficulty and a seed."""

    family: str
    difficulty: int
    seed: int
    rollouts: int
    variants: list[str] = field(default_factory=list)  # draw only these variants (empty: any)
    curriculum: str = ""  # "failure": a failure curriculum slot (see generators.mix)
    policy: str = ""  # who collects it: "" the round's policy, "reference" a reference demonstration
    splits: list[str] = field(default_factory=list)  # draw only tasks of these splits (empty: any)


@dataclass(frozen=True)
class Plan:
    episodes: int
    rollouts: int
    seed: int
    slots: list[TaskSlot] = field(default_factory=list)
    weights: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)  # why each family got its share
    source: str = ""  # what decided the mix: "even", "feedback <batch>", "release <id>"
    curricula: dict[str, dict] = field(default_factory=dict)  # family -> {"kind", "variants"}
    reports: list[str] = field(default_factory=list)  # what the plan cannot fix with data (harness-side)
    competence: dict[str, str] = field(default_factory=dict)  # family -> the estimate behind its share
    demonstrations: dict[str, dict] = field(default_factory=dict)  # family -> {"episodes", "reason"}

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Plan:
        slots = [TaskSlot(**s) for s in data.get("slots", [])]
        return cls(
            episodes=data["episodes"],
            rollouts=data["rollouts"],
            seed=data["seed"],
            slots=slots,
            weights=dict(data.get("weights", {})),
            reasons=dict(data.get("reasons", {})),
            source=str(data.get("source", "")),
            curricula=dict(data.get("curricula", {})),
            reports=list(data.get("reports", [])),
            competence=dict(data.get("competence", {})),
            demonstrations=dict(data.get("demonstrations", {})),
        )

    def episode_slots(self) -> list[tuple[int, int]]:
        """(task index, rollout index) for every episode, in a fixed order."""
        return [(i, r) for i, slot in enumerate(self.slots) for r in range(slot.rollouts)]


def round_seed(base_seed: int, round_number: int) -> int:
    """Each round draws fresh seeds, reproducibly, from the base seed."""
    return base_seed * 1_000_003 + round_number * 100_003


def plan_round(
    *,
    episodes: int,
    rollouts: int,
    families: list[str],
    difficulty: int,
    seed: int,
    weights: dict[str, float] | None = None,
    difficulties: dict[str, int] | None = None,
    reasons: dict[str, str] | None = None,
    source: str = "",
    curricula: dict[str, dict] | None = None,
    reports: list[str] | None = None,
    competence: dict[str, str] | None = None,
    reference_share: float = 0.0,
    splits: list[str] | None = None,
) -> Plan:
    """Spread ``episodes`` over tasks of ``families`` (by ``weights``, default even),
    ``rollouts`` per task; the last task of the plan takes the remainder. A family's
    difficulty is ``difficulties[family]`` if given, else ``difficulty``; a family with a
    curriculum draws only its curriculum's variants, and a failure curriculum gives
    ``reference_share`` of its episodes to reference demonstrations (see
    :func:`with_demonstrations`). With ``splits``, every slot draws only tasks of those splits."""
    if not families:
        raise ValueError("a plan needs at least one family")
    w = {f: float((weights or {}).get(f, 1.0)) for f in families}
    total = sum(w.values()) or 1.0
    n_tasks = math.ceil(episodes / rollouts)
    counts = _largest_remainder({f: n_tasks * w[f] / total for f in families}, n_tasks)
    order = _interleave(counts)
    slots: list[TaskSlot] = []
    left = episodes
    turns = {f: _variant_turns(f, (curricula or {}).get(f, {}).get("variants"), splits or [], seed) for f in families}
    for i, fam in enumerate(order):
        k = min(rollouts, left)
        level = (difficulties or {}).get(fam, difficulty)
        cur = (curricula or {}).get(fam, {})
        slots.append(TaskSlot(family=fam, difficulty=level, seed=seed + i, rollouts=k,
                              variants=[v for v in [next(turns[fam], "")] if v], curriculum=str(cur.get("kind", "")),
                              splits=list(splits or [])))
        left -= k
    failing = [f for f in families if (curricula or {}).get(f, {}).get("kind") == "failure"]
    slots, demonstrations = with_demonstrations(slots, failing, reference_share, seed + len(slots))
    return Plan(
        episodes=episodes,
        rollouts=rollouts,
        seed=seed,
        slots=slots,
        weights={f: round(w[f] / total, 6) for f in w},
        reasons=dict(reasons or {}),
        source=source,
        curricula=dict(curricula or {}),
        reports=list(reports or []),
        competence=dict(competence or {}),
        demonstrations=demonstrations,
    )


def reference_episodes(episodes: int, share: float) -> int:
    """How many of a failure curriculum family's ``episodes`` are reference demonstrations:
    ``share`` of them rounded, at least one when the share is above zero, and always at least
    one left for the model's own attempts (a family of one episode keeps it)."""
    if share <= 0 or episodes < 2:
        return 0
    return min(episodes - 1, max(1, round(episodes * share)))


def with_demonstrations(slots: list[TaskSlot], families: list[str], share: float,
                        first_seed: int) -> tuple[list[TaskSlot], dict[str, dict]]:
    """The slots with :func:`reference_episodes` of each family's episodes moved to reference
    demonstrations, and per family their count and reason.

    The episodes are taken off the family's last slots; each demonstration is a slot of one
    rollout on a task of its own (seeds from ``first_seed`` on, so no other slot's task), in
    the family's curriculum but of any variant: the solution is shown where the model fails,
    not only where it is closest."""
    out = list(slots)
    extra: list[TaskSlot] = []
    notes: dict[str, dict] = {}
    for fam in families:
        total = sum(s.rollouts for s in out if s.family == fam)
        n = reference_episodes(total, share)
        if not n:
            continue
        take = n
        for i in reversed(range(len(out))):
            if take and out[i].family == fam:
                cut = min(take, out[i].rollouts)
                out[i] = replace(out[i], rollouts=out[i].rollouts - cut)
                take -= cut
        level = next(s.difficulty for s in slots if s.family == fam)
        kinds = next(s.splits for s in slots if s.family == fam)
        extra += [TaskSlot(family=fam, difficulty=level, seed=first_seed + len(extra) + j, rollouts=1,
                           curriculum="failure", policy=REFERENCE_POLICY, splits=list(kinds)) for j in range(n)]
        notes[fam] = {"episodes": n, "reason": (
            f"failure curriculum: {n} of {total} episodes are reference demonstrations (round.reference_share "
            f"{share:.0%}): the family's reference solution followed exactly, to show what the model fails at; "
            "never paired or measured as the model's, trained on only when people approve")}
    return [s for s in out if s.rollouts > 0] + extra, notes


def _variant_turns(family: str, variants: list[str] | None, splits: list[str], seed: int) -> Iterator[str]:
    """The variant of each of a family's slots in turn: round-robin over ``variants`` (a curriculum's), else
    over every variant of the family with a template of ``splits`` (any split when empty), from a place the
    round's ``seed`` picks, so every variant gets its share of a round rather than what the seeds happen to
    draw, and a round smaller than the family starts where the last one did not. Nothing for a family
    the registry does not know."""
    if not variants:
        known = FAMILIES.get(family)
        variants = known.variants(splits) if known is not None else []
    if not variants:
        return iter(())
    start = seed % len(variants)
    return itertools.cycle(variants[start:] + variants[:start])


def _largest_remainder(quotas: dict[str, float], n: int) -> dict[str, int]:
    counts = {k: int(math.floor(v)) for k, v in quotas.items()}
    rest = n - sum(counts.values())
    for k in sorted(quotas, key=lambda k: quotas[k] - counts[k], reverse=True)[:rest]:
        counts[k] += 1
    return counts


def _interleave(counts: dict[str, int]) -> list[str]:
    """Round-robin over families so any prefix of the plan is already mixed."""
    left = dict(counts)
    out: list[str] = []
    while any(left.values()):
        for fam in sorted(left):
            if left[fam] > 0:
                out.append(fam)
                left[fam] -= 1
    return out
