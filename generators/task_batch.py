"""Writing one planned task: seeds the gate rejects are replaced by the next seed, and a slot
takes only its variants and splits. Pure: a family and a slot in, a task out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from generators.batch_plan import TaskSlot
from generators.phone.families.base import Family
from generators.phone.gate import scenario_gate_reason
from generators.writers.template import TemplateWriter
from warehouse.contract import TaskSpec, variant_of

MAX_SEED_TRIES = 8  # gate rejections in a row before the family is reported broken
SEARCH_SEEDS = 1024  # seeds a slot of some variants or splits looks through (one may be 1 template in 25)
SEED_STRIDE = 1_000_000_007  # between the seeds a slot tries


@dataclass
class SlotResult:
    task: TaskSpec | None
    tried: int = 0  # tasks put through the gate
    rejections: Counter = field(default_factory=Counter)


def seed_for(slot: TaskSlot, attempt: int) -> int:
    return slot.seed + attempt * SEED_STRIDE


def slot_seeds(slot: TaskSlot) -> list[int]:
    """Every seed :func:`write_slot` may have written the slot's task from."""
    return [seed_for(slot, a) for a in range(SEARCH_SEEDS if slot.splits or slot.variants else MAX_SEED_TRIES)]


def seeds_to_try(family: Family, slot: TaskSlot) -> Iterator[int]:
    """The seeds :func:`write_slot` tries, in order, told from the seed alone (no task made): of the slot's
    seeds, those whose template is of one of ``slot.variants`` and of one of ``slot.splits`` (either
    empty: any). When none of them is of the variants (a stale curriculum), those of the splits:
    a variant never stops a round, and a held-out template never slips into one."""
    splits, wanted = set(slot.splits), set(slot.variants)

    def fits(seed: int, variants: set[str]) -> bool:
        template = family.template_for(seed)
        return (not splits or family.split_of(template) in splits) and (not variants or variant_of(template) in variants)

    found = False
    for seed in slot_seeds(slot):
        if fits(seed, wanted):
            found = True
            yield seed
    if wanted and not found:
        yield from (seed for seed in slot_seeds(slot) if fits(seed, set()))


def of_slots(seeds: np.ndarray, slots: Iterable[TaskSlot]) -> np.ndarray:
    """Whether each of ``seeds`` is one a slot of ``slots`` may write from (a slot's seeds are its own
    plus multiples of SEED_STRIDE, and the seeds of a round's slots are consecutive, so they never meet)."""
    residues = np.fromiter(sorted({slot.seed % SEED_STRIDE for slot in slots}), dtype=np.int64)
    return np.isin(np.mod(seeds.astype(np.int64), SEED_STRIDE), residues)


def tasks_of_slots(slots: dict[int, TaskSlot], tasks: Iterable[TaskSpec]) -> dict[int, TaskSpec]:
    """Slot index -> the first session written for that slot, found by family and seed (see :func:`of_slots`)."""
    index = {(slot.family, slot.seed % SEED_STRIDE): i for i, slot in slots.items()}
    out: dict[int, TaskSpec] = {}
    for task in tasks:
        i = index.get((task.family, task.seed % SEED_STRIDE)) if task.session == 1 else None
        if i is not None and 0 <= (task.seed - slots[i].seed) // SEED_STRIDE < len(slot_seeds(slots[i])):
            out.setdefault(i, task)
    return out


def write_slots(slots: list[TaskSlot], families: Mapping[str, Family]) -> list[SlotResult]:
    """:func:`write_slot` for each slot, in order, with the template writer: a worker process's
    unit of work (``families`` is the caller's registry, so a worker gates with the same families)."""
    writer = TemplateWriter()
    return [write_slot(families[slot.family], slot, writer) for slot in slots]


def write_slot(family: Family, slot: TaskSlot, writer: TemplateWriter | None = None) -> SlotResult:
    """The slot's task from the first of :func:`seeds_to_try` the generation gate keeps, or ``task=None``
    after MAX_SEED_TRIES gate rejections in a row."""
    found = gated_tasks(family, seeds_to_try(family, slot), slot.difficulty, writer, max_rejections=MAX_SEED_TRIES)
    return SlotResult(task=found.tasks[0] if found.tasks else None, tried=found.tried, rejections=found.rejections)


@dataclass
class Gated:
    tasks: list[TaskSpec]
    tried: int = 0  # tasks put through the gate
    rejections: Counter = field(default_factory=Counter)


def gated_tasks(family: Family, seeds: Iterable[int], difficulty: int, writer: TemplateWriter | None = None, *,
                wanted: int = 1, passed_over: Callable[[int, TaskSpec], bool] | None = None,
                max_rejections: int | None = None) -> Gated:
    """The first ``wanted`` tasks the family writes from ``seeds`` (in order) at ``difficulty`` that the
    generation gate keeps: the one task writer of rounds and evals. A task ``passed_over(attempt, task)``
    is skipped without a gate (not a rejection); after ``max_rejections`` gate rejections the search stops."""
    writer = writer or TemplateWriter()
    result = Gated(tasks=[])
    for attempt, seed in enumerate(seeds):
        if len(result.tasks) >= wanted:
            break
        task = family.make_task(seed, difficulty, writer)
        if passed_over is not None and passed_over(attempt, task):
            continue
        result.tried += 1
        reason = scenario_gate_reason(family, task)
        if reason is None:
            result.tasks.append(task)
            continue
        result.rejections[reason] += 1
        if max_rejections is not None and sum(result.rejections.values()) >= max_rejections:
            break
    return result


SEEDS_PER_TASK = 40  # seeds scanned per wanted held-out task before a family is declared to have none of the split


def held_out_tasks(families: Mapping[str, Family], levels: Mapping[str, int], *, split: str, episodes: int,
                   first_seed: int) -> tuple[list[TaskSpec], list[str]]:
    """``episodes`` gated tasks of ``split``, spread evenly over ``families`` (round-robin), each at its
    family's level (default 1), drawn from seeds ``first_seed`` on; and the families that have no task of
    that split."""
    writer = TemplateWriter()
    names = list(families)
    want = {f: episodes // len(names) + (1 if i < episodes % len(names) else 0) for i, f in enumerate(names)}
    per: dict[str, list[TaskSpec]] = {}
    for fam, family in families.items():
        per[fam] = gated_tasks(family, range(first_seed, first_seed + max(1, want[fam]) * SEEDS_PER_TASK),
                               levels.get(fam, 1), writer, wanted=want[fam],
                               passed_over=lambda _, task: task.split != split).tasks
    missing = [f for f in names if want[f] and not per[f]]
    order = [t for i in range(max(want.values(), default=0)) for f in names for t in per[f][i:i + 1]]
    return order, missing
