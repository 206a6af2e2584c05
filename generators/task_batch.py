"""Writing one planned task: seeds the gate rejects are replaced by the next seed, and a
curriculum slot takes only its variants. Pure: a family and a slot in, a task out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from generators.batch_plan import TaskSlot
from generators.phone.families.base import Family
from generators.phone.gate import scenario_gate_reason
from generators.writers.template import TemplateWriter
from warehouse.contract import TaskSpec, variant_of

MAX_SEED_TRIES = 8  # gate rejections in a row before the family is reported broken
MAX_VARIANT_SEEDS = 64  # seeds scanned for one of a curriculum's variants
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
    return [seed_for(slot, a) for a in range(MAX_VARIANT_SEEDS + MAX_SEED_TRIES)]


def tasks_of_slots(slots: dict[int, TaskSlot], tasks: Iterable[TaskSpec]) -> dict[int, TaskSpec]:
    """Slot index -> the first session written for that slot, found by family and seed (the seeds
    of a round's slots never meet: they are the round's seed plus the slot's place)."""
    index = {(slot.family, seed): i for i, slot in slots.items() for seed in slot_seeds(slot)}
    found = ((index.get((t.family, t.seed)), t) for t in tasks if t.session == 1)
    return {i: t for i, t in found if i is not None}


def write_slots(slots: list[TaskSlot], families: Mapping[str, Family]) -> list[SlotResult]:
    """:func:`write_slot` for each slot, in order, with the template writer: a worker process's
    unit of work (``families`` is the caller's registry, so a worker gates with the same families)."""
    writer = TemplateWriter()
    return [write_slot(families[slot.family], slot, writer) for slot in slots]


def write_slot(family: Family, slot: TaskSlot, writer: TemplateWriter | None = None) -> SlotResult:
    """The slot's task, or ``task=None`` after MAX_SEED_TRIES gate rejections in a row.

    With ``slot.variants`` set, seeds whose task is another variant are passed over (they are
    not rejections); if none of the first MAX_VARIANT_SEEDS seeds gives one of them, any
    variant is taken, so a stale curriculum never stops a round."""
    result = SlotResult(task=None)
    wanted = set(slot.variants)
    for attempt in range(MAX_VARIANT_SEEDS + MAX_SEED_TRIES):
        task = family.make_task(seed_for(slot, attempt), slot.difficulty, writer)
        if wanted and attempt < MAX_VARIANT_SEEDS and variant_of(task.template) not in wanted:
            continue
        result.tried += 1
        reason = scenario_gate_reason(family, task)
        if reason is None:
            result.task = task
            return result
        result.rejections[reason] += 1
        if sum(result.rejections.values()) >= MAX_SEED_TRIES:
            return result
    return result
