"""Stage 5, sync (when Label Studio is configured): push the round's review queue to Label
Studio and pull the decisions made there back as review decisions."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from flows.label_studio_cmd import label_studio_client, run_sync
from flows.stages.context import SettingsDoc, open_settings, open_store, run_log
from warehouse.errors import FlywheelError
from warehouse.settings import Settings
from warehouse.store import Store


def sync_round(store: Store, round_id: str, settings: Settings) -> dict[str, Any]:
    """Push ``round_id``'s queue and pull decisions back. A Label Studio that is down does not undo
    the round: the error is returned (``{"error": ...}``) and the next sync repairs."""
    try:
        return run_sync(settings, store, label_studio_client(settings), round_id=round_id, everything=False,
                        progress=False)
    except FlywheelError as exc:
        return {"error": str(exc)}


@task(name="label-studio-sync", cache_policy=NO_CACHE)
def sync_task(round_id: str, settings: SettingsDoc) -> dict[str, Any]:
    """Sync one round with Label Studio; logs what moved (or why nothing did) to the run."""
    cfg = open_settings(settings)
    result = sync_round(open_store(cfg), round_id, cfg)
    run_log().info(f"{round_id}: Label Studio sync: {result}")
    return result
