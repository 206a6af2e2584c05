"""The nightly deployment: a scheduled round served by a Prefect runner.

``flywheel serve --cron "0 2 * * *"`` registers the deployment with the Prefect
server at PREFECT_API_URL and runs each scheduled round as it comes due; the Prefect
UI shows the runs. Parameters are plain strings so the server can store them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger

from flows.planning import nightly_episodes
from flows.round import round_flow
from warehouse.settings import load_settings
from warehouse.store import Store

DEPLOYMENT_NAME = "nightly"


@flow(name="flywheel-scheduled-round", log_prints=False, persist_result=False)
def scheduled_round(data_dir: str, state_url: str | None = None, config: str | None = None) -> dict[str, Any]:
    """One round with the settings found at run time (so edits to flywheel.toml apply
    to the next night without re-deploying)."""
    settings = load_settings(Path(config) if config else None, data_dir=data_dir, state_url=state_url)
    episodes, why = nightly_episodes(Store.from_settings(settings), settings)
    logger = get_run_logger()
    if episodes == 0:
        logger.warning("Nightly round skipped: %s", why)
        return {"skipped": True, "reason": why}
    logger.info("Nightly round: %s", why)
    if episodes != settings.round.episodes:
        settings = settings.model_copy(update={"round": settings.round.model_copy(update={"episodes": episodes})})
    return round_flow(settings, show_progress=False)


def serve_nightly(*, data_dir: str, state_url: str | None, config: Path | None, cron: str, timezone: str) -> None:
    """Register the deployment and serve it until interrupted.

    The state URL may hold a password, and a deployment's parameters are shown in the Prefect
    UI: it reaches the runs through FLYWHEEL_STATE_URL in the environment they inherit, never
    as a parameter."""
    import os

    from prefect.client.schemas.schedules import CronSchedule
    from prefect.deployments.runner import EntrypointType

    if state_url:
        os.environ["FLYWHEEL_STATE_URL"] = state_url

    scheduled_round.serve(
        name=DEPLOYMENT_NAME,
        schedules=[CronSchedule(cron=cron, timezone=timezone)],
        parameters={
            "data_dir": data_dir,  # an absolute path, or s3://bucket/prefix
            "config": str(config.resolve()) if config else None,
        },
        description="A nightly agent-flywheel round: plan, write tasks, collect, stage, curate.",
        tags=["agent-flywheel"],
        print_starting_message=False,
        entrypoint_type=EntrypointType.MODULE_PATH,
    )
