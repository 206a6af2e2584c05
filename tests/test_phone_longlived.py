"""Kept worlds are frozen out of the cyclic GC's walks, and what a freeze holds back is reclaimed in time
(generators/phone/longlived.py)."""

from __future__ import annotations

import gc
import weakref

import pytest

from generators.phone import longlived
from generators.phone.families import FAMILIES


class Node:
    """An object that can sit in a reference cycle and be watched through a weak reference."""

    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def fresh_count(monkeypatch):
    monkeypatch.setattr(longlived, "_settled", [0])
    monkeypatch.setattr(longlived, "REFREEZE", 3)
    gc.unfreeze()  # what earlier tests froze
    yield
    gc.unfreeze()  # leave the collector as other tests expect it


def _tracked_ids() -> set[int]:
    return {id(o) for o in gc.get_objects()}  # the permanent (frozen) generation is not listed


def test_a_new_kept_world_is_frozen_and_a_cached_one_costs_nothing(fresh_count):
    family = FAMILIES["F01"]
    task = family.make_task(987_654, 2)  # a task no other test keeps a world for
    start = family.initial_world(task)
    kept, _ = family.__dict__["_worlds"][next(reversed(family.__dict__["_worlds"]))]
    assert kept is not start.world and gc.get_freeze_count() > 0
    tracked = _tracked_ids()
    assert not any(id(t) in tracked for t in kept.tables.values())  # the collector no longer walks them
    assert id(start.world) in tracked  # the episode's own copy is walked as usual
    frozen = gc.get_freeze_count()
    family.initial_world(task)  # cached: no freeze (nothing settled again, nothing added to the frozen)
    # (the count may fall: a frozen object whose last reference goes is freed, e.g. by another test's leftovers)
    assert gc.get_freeze_count() <= frozen and longlived._settled[0] == 1


def test_a_garbage_cycle_a_freeze_held_back_is_reclaimed_at_the_next_refreeze(fresh_count):
    a, b = Node(), Node()
    a.other, b.other = b, a
    watch = weakref.ref(a)
    del a, b  # garbage now, but only the cyclic collector can reclaim it
    longlived.settle_kept_world()  # frozen with everything else alive
    gc.collect()
    assert watch() is not None  # held back by the freeze
    longlived.settle_kept_world()
    assert watch() is not None
    longlived.settle_kept_world()  # the third: everything is unfrozen and collected first
    assert watch() is None


def test_a_process_without_the_collector_is_left_alone(fresh_count):
    gc.disable()
    try:
        longlived.settle_kept_world()
        assert gc.get_freeze_count() == 0 and longlived._settled[0] == 0
    finally:
        gc.enable()
