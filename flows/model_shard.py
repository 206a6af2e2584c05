"""Collect one shard's episodes over the model endpoint (asyncio inside one Prefect task)."""

from __future__ import annotations

import asyncio
from datetime import datetime

from flows.model_setup import StateJournal, make_engine, model_policy
from generators.model_collect import run_model_episodes
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
            await engine.close()

    return asyncio.run(run())
