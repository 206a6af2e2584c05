"""The task runner a round's shards are submitted through.

Model rounds wait on the endpoint: threads, sharing one process's limiter (and the
shared rate-limit store). Scripted rounds are CPU-bound: processes, so each shard gets a
core. Dask when asked, on a running cluster (``round.dask_address``) or on a local one
with ``round.workers`` worker processes. ``round.workers`` defaults to the machine's cores.
"""

from __future__ import annotations

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows.stages.context import die_with_parent, workers
from warehouse.errors import ConfigError
from warehouse.settings import Settings

# Below this many episodes left to collect, a scripted round on the automatic runner collects in
# its own process: spawning worker processes (each imports Prefect and the project, seconds of
# CPU) costs more than the second core saves (see bench/bench_round.py).
PROCESSES_PAY_FROM = 2_000


def runner_kind(settings: Settings) -> str:
    """threads, processes or dask: what ``round.runner`` asks for, or what suits the policy."""
    kind = settings.round.runner
    if kind != "auto":
        return kind
    if settings.round.dask_address:
        return "dask"
    return "threads" if settings.policy == "openai" or workers(settings) == 1 else "processes"


def collects_inline(settings: Settings, shards: int, episodes: int) -> bool:
    """Whether a round's ``shards`` left (``episodes`` in all) run one after another in the round's own
    process: a lone shard always; an automatic choice of processes when there is too little work to pay
    for starting them. A runner set explicitly is always used."""
    if shards <= 1:
        return True
    return settings.round.runner == "auto" and runner_kind(settings) == "processes" and episodes < PROCESSES_PAY_FROM


def task_runner(settings: Settings) -> TaskRunner:
    n, kind = workers(settings), runner_kind(settings)
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=n)
    if kind == "processes":
        from prefect.task_runners import ProcessPoolTaskRunner

        return ProcessPoolTaskRunner(max_workers=n, initializer=die_with_parent)
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:
        raise ConfigError("round.runner = 'dask' needs prefect-dask: pip install 'agent-flywheel[dask]'") from exc
    if settings.round.dask_address:
        return DaskTaskRunner(address=settings.round.dask_address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": n, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None})

