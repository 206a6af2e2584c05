"""Pure CPU-bound work spread over worker processes, results in input order.

Used where one stage of a round would otherwise run on one core (the generation gate
while tasks are written, replay in curation). Processes are spawned, not forked: the
caller may hold threads (Prefect's, DuckDB's) that a fork would copy mid-lock. Starting
one costs about a second of CPU (it imports the project), so small inputs stay in the
calling process.

A worker's imports (the project, pandas, pydantic: a few hundred thousand objects) live as long
as it does, and every full collection of the cyclic garbage collector would walk them all
again: once its first chunk's function is loaded, a worker freezes what is alive then
(``gc.freeze``), which took replay's CPU time down by about a twelfth.

A round that runs on a Dask cluster hands its executor (``Client.get_executor()``): the chunks
go to the cluster's workers instead, which have the project imported already.
"""

from __future__ import annotations

import gc
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from functools import partial
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")


def spreads(items: int, workers: int, least: int, executor: Executor | None = None) -> bool:
    """Whether :func:`map_chunks` spreads ``items`` over worker processes (or ``executor``'s)."""
    return (workers > 1 or executor is not None) and items >= max(least, 2)


def map_chunks(fn: Callable[[list[In]], list[Out]], items: Sequence[In], *, workers: int, chunk: int,
               least: int, executor: Executor | None = None) -> list[Out]:
    """``fn`` over ``items`` in chunks of ``chunk``, concatenated in input order: in ``workers``
    spawned processes (or through ``executor``, a cluster's) when there are at least ``least``
    items and more than one worker, else here.

    ``fn`` takes a list and returns one result per item; it must be picklable (a module-level
    function or a ``functools.partial`` of one) and should not raise for one bad item."""
    items = list(items)
    if not spreads(len(items), workers, least, executor):
        return fn(items)
    chunks = [items[i:i + chunk] for i in range(0, len(items), chunk)]
    if executor is not None:
        futures = [executor.submit(_in_worker, fn, part) for part in chunks]
        return [out for future in futures for out in future.result()]

    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        return [out for part in pool.map(partial(_in_worker, fn), chunks) for out in part]


_settled = [False]  # whether this worker froze its imports


def _in_worker(fn: Callable[[list[In]], list[Out]], items: list[In]) -> list[Out]:
    """``fn(items)`` in a worker process; the first call freezes what the worker holds (see the module note)."""
    if not _settled[0]:
        _settled[0] = True
        if gc.isenabled():
            gc.freeze()
    return fn(items)
