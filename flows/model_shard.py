"""Collect one shard's episodes over the model endpoint (asyncio inside one Prefect task)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from flows.model_setup import StateJournal, log_refusals, make_engine, model_policy
from generators.model_collect import run_model_episodes
from generators.writers.model_writer import word_with_model
from warehouse.contract import EpisodeRecord, TaskSpec
from warehouse.settings import Settings
from warehouse.store import Store


def collect_model_shard(store: Store, round_id: str, jobs: list[tuple[TaskSpec, int]], settings: Settings,
                        started: datetime) -> list[EpisodeRecord]:
    """Run the shard's (task, rollout) jobs concurrently; replies already journaled are replayed, not requested."""
    journal = StateJournal(store, round_id)
    policy = model_policy(settings.openai)

    async def run() -> list[EpisodeRecord]:
        engine = make_engine(settings.openai)
        try:
            return await run_model_episodes(jobs, policy, engine, journal, round_id=round_id,
                                            batch_id=f"{round_id}-b0", created_at=started)
        finally:
            log_refusals(engine, "the planner")
            await engine.close()

    return asyncio.run(run())


def word_tasks_with_model(store: Store, round_id: str, tasks: list[TaskSpec], settings: Settings) -> list[TaskSpec]:
    """The tasks with model-worded instructions (template wording where the model's is rejected)."""
    journal = StateJournal(store, round_id)
    cfg = settings.openai

    async def run() -> list[TaskSpec]:
        engine = make_engine(cfg)
        try:
            return list(await asyncio.gather(*(word_with_model(t, engine, journal, rounds=cfg.writer_rounds,
                                                               writer_name=f"openai:{cfg.model}") for t in tasks)))
        finally:
            log_refusals(engine, "the task writer")
            await engine.close()

    return asyncio.run(run())
