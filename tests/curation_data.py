"""A small real round (plan, tasks, collection, cascade) written without Prefect, for
curation and export tests."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from flows import stages
from warehouse.settings import load_settings
from warehouse.store import Store


def build_round(data_dir: Path, episodes: int = 200, rollouts: int = 3, seed: int = 0,
                curation: dict | None = None, families: list[str] | None = None) -> tuple[Store, str]:
    """A curated round of ``episodes`` in ``data_dir`` (of ``families``, default all); returns the store
    and round id."""
    shape = {"episodes": episodes, "rollouts": rollouts, "seed": seed, **({"families": families} if families else {})}
    settings = load_settings(None, data_dir=data_dir, round=shape, curation=curation)
    store = Store(data_dir)
    rnd, _ = stages.open_or_resume_round(store, settings)
    stages.write_tasks(store, rnd.id, rnd.plan)
    for key in stages.shard_keys(rnd.plan):
        stages.collect_shard(store, rnd.id, key, settings, started=datetime(2026, 3, 1, tzinfo=UTC))
    stages.curate_round(store, rnd.id, settings)
    stages.finish_round(store, rnd.id)
    return store, rnd.id
