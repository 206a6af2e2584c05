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

import asyncio
import socket
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from urllib.parse import urlsplit

from prefect.task_runners import ProcessPoolTaskRunner, TaskRunner, ThreadPoolTaskRunner

from flows.stages.context import die_with_parent, workers
from warehouse.errors import ConfigError, OrchestratorError, first_line, one_line
from warehouse.settings import Settings

# Below this many episodes left to collect, a scripted round on the automatic runner collects in
# its own process: spawning worker processes (each imports Prefect and the project, seconds of
# CPU) costs more than the second core saves (see bench/bench_round.py).
PROCESSES_PAY_FROM = 2_000
# From this many episodes a model round's workers are processes: at 600 episodes (about 2,500 calls at
# concurrency 128) processes made the round as quick as threads end to end and its calls 1.4 times as
# fast (bench/bench_model_round.py, --runner threads against --runner processes).
MODEL_PROCESSES_FROM = 500
# How long a round waits for the scheduler at round.dask_address to accept a connection before it
# starts (a refused connection fails at once; Dask's own client would retry for 30 s and more).
DASK_CONNECT_TIMEOUT_S = 5.0
DASK_PORT = 8786


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
        return ProcessPoolTaskRunner(max_workers=n, initializer=die_with_parent)
    try:
        from prefect_dask import DaskTaskRunner  # deferred: the dask extra, optional
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



def _dask_address(settings: Settings) -> str:
    return f"round.dask_address={one_line(settings.round.dask_address or '', 200)} (FLYWHEEL_ROUND__DASK_ADDRESS)"


def check_dask_scheduler(settings: Settings) -> None:
    """One line (OrchestratorError) when the round's shards would go to the Dask scheduler at
    ``round.dask_address`` and no scheduler answers there within :data:`DASK_CONNECT_TIMEOUT_S`;
    checked before anything is written, as the state database is. Transports other than TCP
    are left to Dask."""
    address = settings.round.dask_address
    if not address or runner_kind(settings) != "dask":
        return
    scheme, sep, location = address.partition("://")
    scheme, location = (scheme, location) if sep else ("tcp", address)
    if scheme not in ("tcp", "tls", "ws", "wss"):
        return
    try:
        parts = urlsplit(f"//{location}")
        # a refused connection or an unknown host fails here at once (Dask's own connect retries)
        with socket.create_connection((parts.hostname, parts.port or DASK_PORT), timeout=DASK_CONNECT_TIMEOUT_S):
            pass
        if scheme == "tcp":  # and what accepted it must answer as Dask (not a proxy, not another server)
            _dask_handshake(f"tcp://{location}")
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise OrchestratorError(f"cannot reach the Dask scheduler at {_dask_address(settings)}: {reason}") from exc


def _dask_handshake(address: str) -> None:
    """OSError unless a Dask scheduler completes Dask's handshake at ``address`` in time."""
    from distributed.comm import connect  # deferred: the dask extra, optional

    async def handshake() -> None:
        comm = await asyncio.wait_for(connect(address, timeout=DASK_CONNECT_TIMEOUT_S), DASK_CONNECT_TIMEOUT_S)
        await comm.close()

    with ThreadPoolExecutor(1) as pool:  # an event loop of its own, whatever runs in this thread
        try:
            pool.submit(asyncio.run, handshake()).result()
        except TimeoutError as exc:
            raise OSError(f"no answer as a Dask scheduler within {DASK_CONNECT_TIMEOUT_S:g} s") from exc
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001  (another server's reply read as Dask's: MemoryError, ...)
            raise OSError(f"what answers there is not a Dask scheduler ({type(exc).__name__})") from exc


def cluster_lost(settings: Settings, exc: BaseException) -> OrchestratorError | None:
    """``exc`` as one line when it says the round's Dask cluster went away (the scheduler's
    connection lost, its workers killed), else None."""
    if runner_kind(settings) != "dask":
        return None
    from distributed import KilledWorker  # deferred: the dask extra, optional
    from distributed.client import FutureCancelledError  # deferred: the dask extra, optional
    from distributed.comm import CommClosedError  # deferred: the dask extra, optional

    if not (isinstance(exc, (FutureCancelledError, CommClosedError, KilledWorker))
            or (isinstance(exc, OSError) and str(exc).startswith("Timed out trying to connect"))):
        return None
    where = _dask_address(settings) if settings.round.dask_address else "(the local cluster)"
    return OrchestratorError(f"lost the Dask cluster at {where} mid-round ({first_line(exc).rstrip('.')}); the "
                             "shards committed so far are kept: rerun to finish the round")


@contextmanager
def cluster_executor(runner: str) -> Iterator[Executor | None]:
    """The flow's Dask cluster as an executor (None when the round does not run on Dask): a large
    round's replay and near-duplicate search go to the workers that collected it. Call it inside
    the flow, whose task runner holds the cluster."""
    if runner != "dask":
        yield None
        return
    from prefect_dask import get_dask_client  # deferred: the dask extra, optional

    with get_dask_client() as client:
        yield client.get_executor()
