"""The task runner a round's shards are submitted through.

Scripted rounds are CPU-bound: processes, so each worker gets a core. Model rounds wait
on the endpoint, but each call still costs milliseconds of CPU (building the request,
the HTTP stack, staging the step): small ones run on threads, which cost nothing to start,
larger ones on processes too, so the calls are not held to one core (the rate limits are
shared through the state database or Redis either way). Dask when asked, on a running
cluster (``round.dask_address``) or on a local one with ``round.workers`` worker
processes. ``round.workers`` defaults to the machine's cores.
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
# From this many episodes a model round's workers are processes: at 600 episodes (about 2,500 calls at
# concurrency 128) processes made the round as quick as threads end to end and its calls 1.4 times as
# fast (bench/bench_model_round.py, --runner threads against --runner processes).
MODEL_PROCESSES_FROM = 500


def runner_kind(settings: Settings) -> str:
    """threads, processes or dask: what ``round.runner`` asks for, or what suits the policy."""
    kind = settings.round.runner
    if kind != "auto":
        return kind
    if settings.round.dask_address:
        return "dask"
    if workers(settings) == 1 or (settings.policy == "openai" and settings.round.episodes < MODEL_PROCESSES_FROM):
        return "threads"
    return "processes"


def collects_inline(settings: Settings, shards: int, episodes: int) -> bool:
    """Whether a round's ``shards`` left (``episodes`` in all) run one after another in the round's own
    process: a lone shard always; a scripted round's automatic choice of processes when there is too
    little work to pay for starting them. A runner set explicitly is always used."""
    if shards <= 1:
        return True
    return (settings.round.runner == "auto" and settings.policy != "openai" and runner_kind(settings) == "processes"
            and episodes < PROCESSES_PAY_FROM)


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
    # No dashboard. dashboard_address=None turns the dashboard's pages off, but the scheduler still
    # serves its HTTP endpoints (health, metrics) on 8787, and warns on stderr when 8787 is taken:
    # those go to a free port of this machine instead.
    return DaskTaskRunner(cluster_kwargs={"n_workers": n, "threads_per_worker": 1, "processes": True,
                                          "dashboard_address": None,
                                          "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}})

