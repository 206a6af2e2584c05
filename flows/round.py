"""One round as a Prefect flow: open or resume, then each stage once, in order.

    plan (stages/plan.py) ─► write tasks (stages/write.py) ─► collect (stages/collect.py)
    ─► curate (stages/curate.py) ─► finish

Coarse tasks: one to plan, one to write the batch, one per collection shard (submitted
concurrently through the task runner, see flows.runners), one to curate. Tasks take ids
and the settings as plain values and open what they need. Every task reads what is
already committed and does only what is missing, so a killed round rerun finishes with
no duplicate and no missing episode.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from prefect import flow
from prefect.settings import PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS

from curation.costs import NO_COSTS, round_costs
from curation.export_source import MODEL_ATTEMPT
from flows.interrupt import keep_stopping_at_once
from flows.planning import refresh_proposal
from flows.prefect_window import publish, rename_this_run, round_markdown
from flows.progress import RoundProgress
from flows.runners import cluster_executor, cluster_lost, collects_inline, runner_kind, task_runner, workers
from flows.stages.collect import collect_shards, shard_keys, shard_slots
from flows.stages.context import open_store, run_log, settings_doc
from flows.stages.curate import curate_task
from flows.stages.plan import finish_round, plan_task, selected_families
from flows.stages.sync import sync_task
from flows.stages.write import write_tasks_task
from flows.temp_server import start_guarded_server
from flows.views import status_rows
from warehouse import killpoints, state
from warehouse.errors import OrchestratorError
from warehouse.settings import Settings
from warehouse.store import Store


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


def round_counts(store: Store, round_id: str, prices: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a round made: episodes, successes, tasks, what its model calls cost (every role's), and
    the ways the model cut episodes off."""
    con = store.duck([round_id])
    episodes, successes, references = con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE success AND {MODEL_ATTEMPT}), count(*) FILTER (WHERE NOT "
        f"{MODEL_ATTEMPT}) FROM outcomes o JOIN episodes e USING (episode_id)"
    ).fetchone()
    costs = round_costs(store, con, prices).get(round_id, NO_COSTS)
    # once per way a round's episodes were cut off, with the server's messages (an episode whose task
    # was already done when it was cut off succeeded, so it has no failure detail of its own)
    model_errors = [{"termination": t, "message": " | ".join(m[:3]) + (f" (+{len(m) - 3} more)" if len(m) > 3 else ""),
                     "episodes": n} for t, m, n in con.execute(
        "SELECT o.termination, list_sort(list_distinct(list(json_extract_string(o.failure, '$.detail')) "
        "FILTER (WHERE o.failure IS NOT NULL AND json_extract_string(o.failure, '$.detail') <> ''))), count(*) "
        "FROM outcomes o WHERE o.termination IN ('request_rejected', 'endpoint_error') GROUP BY 1 ORDER BY 3 DESC"
    ).fetchall()]
    with store.session() as s:
        batches = state.batches_of(session=s, round_id=round_id)
        plan = s.get(state.Round, round_id).plan or {}
    writers = dict(con.execute("SELECT writer, count(*) FROM tasks GROUP BY 1").fetchall())
    judge_errors = con.execute("SELECT count(*) FROM marks WHERE \"check\" = 'judges' AND mark = 'judge_error'"
                               ).fetchone()[0]
    return {
        # with the model writer: tasks it worded (the template's wording stood for the others)
        "tasks_worded": (sum(writers.values()) - writers.get("template", 0)) if plan.get("writer") == "openai" else None,
        "tasks_written": sum(writers.values()),
        "judge_errors": judge_errors,
        "model_errors": model_errors,
        "user_fallbacks": user_fallback_counts(con),
        "episodes": episodes,
        "successes": successes,
        "reference_demonstrations": references,
        "tasks_kept": sum(b.tasks_kept for b in batches),
        "tasks_tried": sum(b.tasks_tried for b in batches),
        **{k: costs[k] for k in ("prompt_tokens", "completion_tokens", "cost_usd", "model_usage")},
    }


def user_fallback_counts(con: Any) -> list[dict[str, Any]]:
    """How often the model user's replies were replaced by the scripted answer, per reason (the
    reason's own words, without the fact it named or the server's message), most frequent first."""
    replies: Counter = Counter()
    episodes: dict[str, set[str]] = defaultdict(set)
    rows = con.execute("SELECT episode_id, user_fallbacks FROM outcomes "
                       "WHERE user_fallbacks IS NOT NULL AND user_fallbacks <> '[]'").fetchall()
    for eid, text in rows:
        for item in json.loads(text):
            reason = str(item.get("reason", "")).split(" (")[0].split(":")[0]
            replies[reason] += 1
            episodes[reason].add(eid)
    return [{"reason": r, "replies": n, "episodes": len(episodes[r])} for r, n in replies.most_common()]


@flow(name="flywheel-round", validate_parameters=False, log_prints=False, persist_result=False)
def _round(settings: Settings, show_progress: bool = True) -> dict[str, Any]:
    keep_stopping_at_once()
    doc = settings_doc(settings)
    store = open_store(settings)
    with store.run_lock():
        orphans = store.clean_orphans()
        round_id, resumed = plan_task(doc)
        rename_this_run(round_id)
        write_tasks_task(round_id, doc)
        with store.session() as s:
            plan = s.get(state.Round, round_id).plan
        keys = shard_keys(plan)
        done = store.done_keys(round_id, "episodes")
        todo = [k for k in keys if k not in done]
        inline = collects_inline(settings, len(todo), sum(len(shard_slots(plan, k)) for k in todo))
        runner, n_workers = ("inline", 1) if inline else (runner_kind(settings), workers(settings))
        log = run_log()
        log.info(f"{round_id}: {len(todo)} shards to collect ({len(keys) - len(todo)} already committed), "
                 + ("in the round's own process" if inline else f"{n_workers} workers, {runner} runner"))
        with RoundProgress(enabled=show_progress, total=len(keys), done=len(keys) - len(todo),
                            round_id=round_id) as bar:
            collect_shards(store, round_id, todo, doc, bar.advance, n_workers=n_workers, inline=inline,
                           model=plan.get("policy", {}).get("name") == "openai")
        with cluster_executor(runner) as executor:
            curate_task(round_id, doc, show_progress, executor)
        killpoints.reached("round.curated")
        finish_round(store, round_id)
        refresh_proposal(store, settings, selected_families(settings))  # for the release page
        counts = round_counts(store, round_id, settings.openai.prices)
        log.info(f"{round_id} finished: {counts['episodes']} episodes, {counts['successes']} verified successes")
    synced = sync_task(round_id, doc) if settings.label_studio.configured else None
    summary = RoundSummary(
        round_id=round_id,
        resumed=resumed,
        episodes=counts["episodes"],
        successes=counts["successes"],
        shards_written=len(todo),
        shards_skipped=len(keys) - len(todo),
        orphans_removed=len(orphans),
        tasks_kept=counts["tasks_kept"],
        tasks_tried=counts["tasks_tried"],
        prompt_tokens=counts.get("prompt_tokens", 0),
        completion_tokens=counts.get("completion_tokens", 0),
        cost_usd=counts["cost_usd"],
        model_usage=counts["model_usage"],
        model_errors=counts.get("model_errors", []),
        user_fallbacks=counts.get("user_fallbacks", []),
        runner=runner,
        workers=n_workers,
        reference_demonstrations=counts.get("reference_demonstrations", 0),
        tasks_worded=counts["tasks_worded"],
        tasks_written=counts["tasks_written"],
        judge_errors=counts["judge_errors"],
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
