"""warehouse.parallel: chunks over spawned workers, results in input order, workers' imports frozen."""

from __future__ import annotations

import gc
import os

from warehouse.parallel import map_chunks


def _squares_where(items: list[int]) -> list[tuple[int, int, int]]:
    return [(x * x, os.getpid(), gc.get_freeze_count()) for x in items]


def test_chunks_over_workers_come_back_in_input_order():
    out = map_chunks(_squares_where, range(40), workers=2, chunk=3, least=2)
    assert [sq for sq, _, _ in out] == [x * x for x in range(40)]
    assert os.getpid() not in {pid for _, pid, _ in out}  # all of it ran in the workers


def test_workers_freeze_their_imports_out_of_the_collectors_walks():
    out = map_chunks(_squares_where, range(8), workers=2, chunk=1, least=2)
    assert all(frozen > 10_000 for _, _, frozen in out)  # the project's imports, frozen before the first chunk ran


def test_small_inputs_stay_here_and_freeze_nothing():
    before = gc.get_freeze_count()
    out = map_chunks(_squares_where, range(5), workers=2, chunk=1, least=10)
    assert {pid for _, pid, _ in out} == {os.getpid()}
    assert gc.get_freeze_count() == before
