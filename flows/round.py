"""One round as a Prefect flow: plan, write tasks, collect, stage, curate.

Coarse tasks: one to write the batch, one per collection shard, one to curate.
Every task reads what is already committed and does only what is missing, so a
killed round rerun finishes with no duplicate and no missing episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE

from flows import stages
from flows.planning import refresh_proposal
from flows.progress import RoundProgress
from warehouse import killpoints
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
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_errors: list[dict[str, Any]] = field(default_factory=list)  # refusals and outages, once per message

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@task(name="write-tasks", cache_policy=NO_CACHE)
def write_tasks_task(store: Store, round_id: str, plan: dict, settings: Settings) -> int:
    return len(stages.write_tasks(store, round_id, plan, settings))


@task(name="collect-shard", cache_policy=NO_CACHE)
def collect_shard_task(store: Store, round_id: str, key: str, settings: Settings) -> int:
    return stages.collect_shard(store, round_id, key, settings, started=datetime.now(UTC))


@task(name="curate", cache_policy=NO_CACHE)
def curate_task(store: Store, round_id: str, settings: Settings) -> int:
    return stages.curate_round(store, round_id, settings)


@task(name="label-studio-sync", cache_policy=NO_CACHE)
def label_studio_sync_task(store: Store, round_id: str, settings: Settings) -> dict[str, Any]:
    """Push the round's queue to Label Studio and pull decisions back; a Label Studio that is
    down does not undo the round: the error is reported and the next sync repairs."""
    from flows.label_studio_cmd import label_studio_client, run_sync
    from warehouse.errors import FlywheelError

    try:
        return run_sync(settings, store, label_studio_client(settings), round_id=round_id, everything=False,
                        progress=False)
    except FlywheelError as exc:
        return {"error": str(exc)}


@flow(name="flywheel-round", validate_parameters=False, log_prints=False, persist_result=False)
def round_flow(settings: Settings, show_progress: bool = True) -> dict[str, Any]:
    """Run (or resume) one round on ``settings`` and return its summary."""
    store = Store(Path(settings.data_dir), settings.state_url)
    with store.run_lock():
        orphans = store.clean_orphans()
        rnd, resumed = stages.open_or_resume_round(store, settings)
        write_tasks_task(store, rnd.id, rnd.plan, settings)
        keys = stages.shard_keys(rnd.plan)
        done = store.done_keys(rnd.id, "episodes")
        todo = [k for k in keys if k not in done]
        with RoundProgress(enabled=show_progress, total=len(keys), done=len(keys) - len(todo), round_id=rnd.id) as bar:
            for key in todo:
                collect_shard_task(store, rnd.id, key, settings)
                bar.advance()
        curate_task(store, rnd.id, settings)
        killpoints.reached("round.curated")
        stages.finish_round(store, rnd.id)
        refresh_proposal(store, settings, stages.selected_families(settings))  # for the release page
        counts = stages.round_counts(store, rnd.id)
    synced = label_studio_sync_task(store, rnd.id, settings) if settings.label_studio.configured else None
    return RoundSummary(
        round_id=rnd.id,
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
        model_errors=counts.get("model_errors", []),
    ).as_dict() | ({"label_studio": synced} if synced is not None else {})
