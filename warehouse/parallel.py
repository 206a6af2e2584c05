"""Pure CPU-bound work spread over worker processes, results in input order.

Used where one stage of a round would otherwise run on one core (the generation gate
while tasks are written, replay in curation). Processes are spawned, not forked: the
caller may hold threads (Prefect's, DuckDB's) that a fork would copy mid-lock. Starting
one costs about a second of CPU (it imports the project), so small inputs stay in the
calling process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def spreads(items: int, workers: int, least: int) -> bool:
    """Whether :func:`map_chunks` spreads ``items`` over worker processes."""
    return workers > 1 and items >= max(least, 2)


def map_chunks(fn: Callable[[list[In]], list[Out]], items: Sequence[In], *, workers: int, chunk: int,
               least: int) -> list[Out]:
    """``fn`` over ``items`` in chunks of ``chunk``, concatenated in input order: in ``workers``
    spawned processes when there are at least ``least`` items and more than one worker, else here.

    ``fn`` takes a list and returns one result per item; it must be picklable (a module-level
    function or a ``functools.partial`` of one) and should not raise for one bad item."""
    items = list(items)
    if not spreads(len(items), workers, least):
        return fn(items)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunks = [items[i:i + chunk] for i in range(0, len(items), chunk)]
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        return [out for part in pool.map(fn, chunks) for out in part]
