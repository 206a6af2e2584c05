"""One round as a Prefect flow: open or resume, then each stage once, in order.

    plan (stages/plan.py) ─► write tasks (stages/write.py) ─► collect (stages/collect.py)
    ─► curate (stages/curate.py) ─► finish

The stages are declared in flows.pipeline (with an eval's and an import's); this module walks
them under the data directory's writer lock and sums the round up.

Coarse tasks: one to plan, one to write the batch, one per collection shard (submitted
concurrently through the task runner, see flows.runners), one to curate. Tasks take ids
and the settings as plain values and open what they need. Every task reads what is
already committed and does only what is missing, so a killed round rerun finishes with
no duplicate and no missing episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefect import flow
from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

from curation.report import round_counts
from flows.interrupt import keep_stopping_at_once
from flows.pipeline import AFTER_ROUND, ROUND, Run, walk
from flows.prefect_window import publish, round_markdown
from flows.runners import cluster_lost, task_runner
from flows.stages.context import open_store, run_log
from flows.temp_server import start_guarded_server
from flows.views import status_rows
from warehouse.errors import OrchestratorError
from warehouse.settings import Settings


@dataclass
class RoundSummary:
    round_id: str
    resumed: bool
    episodes: int
    successes: int
    shards_written: int
    shards_skipped: int
    orphans_removed: int
    tasks_kept: int
    tasks_tried: int
    prompt_tokens: int = 0  # every model call of the round: planner, simulated user, task writer, judges
    completion_tokens: int = 0
    cost_usd: float | None = None  # where the models have prices (openai.prices)
    model_usage: list[dict[str, Any]] = field(default_factory=list)  # {role, model, calls, tokens, cost_usd}
    model_errors: list[dict[str, Any]] = field(default_factory=list)  # refusals and outages, once per message
    # model-user replies replaced by the scripted answer, per reason: {reason, replies, episodes}
    user_fallbacks: list[dict[str, Any]] = field(default_factory=list)
    runner: str = ""  # threads, processes or dask: how the shards ran (inline: in the round's own process)
    workers: int = 0
    reference_demonstrations: int = 0  # episodes of the reference policy (not in ``successes``: not the model's)
    tasks_worded: int | None = None  # with the model writer: tasks it worded, of ``tasks_written``
    tasks_written: int = 0
    judge_errors: int = 0  # episodes with no usable judge reply (the judges' endpoint failed or gave no verdict)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@flow(name="flywheel-round", validate_parameters=False, log_prints=False, persist_result=False)
def _round(settings: Settings, show_progress: bool = True) -> dict[str, Any]:
    keep_stopping_at_once()
    store = open_store(settings)
    run = Run(store, settings, in_flow=True, show_progress=show_progress)
    with store.run_lock():
        orphans = store.clean_orphans()
        walk(ROUND, run)
        round_id = run.run_id
        counts = round_counts(store, round_id, settings.openai.prices)
        run_log().info(f"{round_id} finished: {counts['episodes']} episodes, {counts['successes']} verified successes")
    synced = walk(AFTER_ROUND, run).out["sync"]
    runner, n_workers = run.out["collect"]
    written = len(run.todo["collect"])
    summary = RoundSummary(
        round_id=round_id, resumed=run.out["plan"], shards_written=written,
        shards_skipped=len(run.units["collect"]) - written, orphans_removed=len(orphans), runner=runner,
        workers=n_workers, **counts,  # what the round made: curation.report.round_counts
    ).as_dict() | ({"label_studio": synced} if synced is not None else {})
    row = next((r for r in status_rows(store, settings.openai.prices) if r["round"] == round_id), None)
    publish(f"round-{round_id}", round_markdown(summary, row), f"agent-flywheel round {round_id}")
    return summary


EPHEMERAL_TIMEOUT = "Timed out while attempting to connect to ephemeral Prefect API server"


def round_flow(settings: Settings, show_progress: bool = True) -> dict[str, Any]:
    """Run (or resume) one round on ``settings`` with its task runner, and return its summary."""
    try:
        start_guarded_server()  # stopped when this process is gone, even killed outright
        return _round.with_options(task_runner=task_runner(settings))(settings, show_progress)
    except Exception as exc:
        clear = orchestrator_error(settings, exc)
        if clear is None:
            raise
        raise clear from exc


def orchestrator_error(settings: Settings, exc: Exception) -> OrchestratorError | None:
    """``exc`` as one line when what runs the round failed it (Prefect's temporary server, the Dask
    cluster), else None."""
    if isinstance(exc, RuntimeError) and EPHEMERAL_TIMEOUT in str(exc):
        # before the round's first task: nothing was written

        return OrchestratorError(
            f"Prefect's temporary server did not start within {PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS.value()} s "
            "(a busy machine?): rerun, or start one with 'prefect server start' and set PREFECT_API_URL")
    return cluster_lost(settings, exc)
