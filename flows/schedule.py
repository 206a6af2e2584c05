"""The nightly deployment: a scheduled round, served here or run by a work pool's workers.

``flywheel serve --cron "0 2 * * *"`` registers the deployment with the Prefect
server at PREFECT_API_URL and runs each scheduled round as it comes due in this process.
``flywheel deploy --pool NAME`` registers it to a Prefect work pool instead: any machine
with the project installed runs it with ``prefect worker start --pool NAME``. The
Prefect UI shows the runs either way. Parameters are plain strings so the server can
store them, and never hold a password (the UI shows them).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.client.schemas.schedules import CronSchedule
from prefect.deployments.runner import EntrypointType
from prefect.states import Completed
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from flows.planning import nightly_episodes
from flows.prefect_window import rename_this_run
from flows.round import round_flow
from flows.runners import check_dask_scheduler
from warehouse.settings import load_settings
from warehouse.store import Store

DEPLOYMENT_NAME = "nightly"


@flow(name="flywheel-scheduled-round", log_prints=False, persist_result=False)
def scheduled_round(data_dir: str, state_url: str | None = None, config: str | None = None) -> Any:
    """One round with the settings found at run time (so edits to flywheel.toml apply
    to the next night without re-deploying). ``state_url`` (a work pool's deployment: the
    URL without its password) gives way to FLYWHEEL_STATE_URL where the worker sets it.

    The run is named ``nightly rNNNN`` after its round; a night with nothing to do ends in a
    Completed state named ``Skipped`` that says why. One line on stdout as a run starts and ends
    (``flywheel serve`` and a worker show them)."""
    if os.environ.get("FLYWHEEL_STATE_URL"):
        state_url = None  # the worker's own, password and all
    _say("nightly run started")
    try:
        settings = load_settings(Path(config) if config else None, data_dir=data_dir, state_url=state_url)
        check_dask_scheduler(settings)  # before the round opens
        episodes, why = nightly_episodes(Store.from_settings(settings), settings)
        logger = get_run_logger()
        if episodes == 0:
            logger.warning("Nightly round skipped: %s", why)
            rename_this_run("nightly skipped")
            _say(f"nightly run skipped: {why}")
            return Completed(name="Skipped", message=f"Nightly round skipped: {why}",
                             data={"skipped": True, "reason": why})
        logger.info("Nightly round: %s", why)
        if episodes != settings.round.episodes:
            settings = settings.model_copy(update={"round": settings.round.model_copy(update={"episodes": episodes})})
        summary = round_flow(settings, show_progress=False)
    except BaseException as exc:
        _say(f"nightly run failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        raise
    rename_this_run(f"nightly {summary['round_id']}")
    _say(f"nightly {summary['round_id']} finished: {summary['episodes']} episodes, "
         f"{summary['successes']} verified successes")
    return summary


def _say(line: str) -> None:
    print(f"{datetime.now().astimezone():%Y-%m-%d %H:%M:%S} {line}", flush=True)


def serve_nightly(*, data_dir: str, state_url: str | None, config: Path | None, cron: str, timezone: str) -> None:
    """Register the deployment and serve it until interrupted.

    The state URL may hold a password, and a deployment's parameters are shown in the Prefect
    UI: it reaches the runs through FLYWHEEL_STATE_URL in the environment they inherit, never
    as a parameter."""
    if state_url:
        os.environ["FLYWHEEL_STATE_URL"] = state_url
    scheduled_round.serve(**_deployment(data_dir=data_dir, config=config, cron=cron, timezone=timezone),
                          print_starting_message=False)


def deploy_nightly(*, pool: str, data_dir: str, state_url: str | None, config: Path | None, cron: str,
                   timezone: str) -> None:
    """Register the deployment to the work pool ``pool``; its workers run the rounds.

    Workers load the flow by module path from the installed project and read the config
    file at the same path. The state URL is stored without its password: a worker gets
    that from PGPASSWORD or ~/.pgpass (libpq's own), or sets FLYWHEEL_STATE_URL whole."""
    deployment = scheduled_round.to_deployment(**_deployment(data_dir=data_dir, config=config, cron=cron,
                                                             timezone=timezone))
    deployment.parameters["state_url"] = url_without_password(state_url) if state_url else None
    deployment.apply(work_pool_name=pool)


def url_without_password(url: str) -> str:
    """``url`` with its password left out (a database URL; anything else as it is)."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url
    # URL.set(password=None) keeps the password (None means "unchanged" there)
    return parsed._replace(password=None).render_as_string(hide_password=False) if parsed.password else url


def _deployment(*, data_dir: str, config: Path | None, cron: str, timezone: str) -> dict[str, Any]:
    """What the served and the pooled deployment share: name, schedule, parameters, description."""
    return {
        "name": DEPLOYMENT_NAME,
        "schedules": [CronSchedule(cron=cron, timezone=timezone)],
        "parameters": {
            "data_dir": data_dir,  # an absolute path, or s3://bucket/prefix
            "config": str(config.resolve()) if config else None,
        },
        "description": "A nightly agent-flywheel round: plan, write tasks, collect, stage, curate.",
        "tags": ["agent-flywheel"],
        "entrypoint_type": EntrypointType.MODULE_PATH,
    }
