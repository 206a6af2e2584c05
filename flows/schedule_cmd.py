"""``flywheel serve``: checks first, then hand over to the Prefect runner."""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console

from flows.prefect_env import configure_prefect
from warehouse.errors import ConfigError
from warehouse.settings import Settings
from warehouse.store import Store


def check_schedule(cron: str, timezone: str) -> None:
    """One line for a cron expression or time zone that Prefect would refuse."""
    # deferred: Prefect reads PREFECT_HOME at import; configure_prefect sets it first
    from prefect.client.schemas.schedules import CronSchedule

    try:
        CronSchedule(cron=cron, timezone=timezone)
    except ValidationError as exc:
        where = "--timezone" if any("timezone" in str(e.get("loc")) for e in exc.errors()) else "--cron"
        value = timezone if where == "--timezone" else cron
        raise ConfigError(f"{where} {value!r} is not valid (e.g. --cron '0 2 * * *' --timezone UTC)") from exc


def check_server(api: str) -> None:
    try:
        with urllib.request.urlopen(f"{api.rstrip('/')}/health", timeout=10) as resp:
            if resp.status == 200:
                return
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot reach the Prefect server at PREFECT_API_URL={api}: {exc}") from exc
    raise ConfigError(f"the Prefect server at PREFECT_API_URL={api} is not healthy")


def _ready(settings: Settings, *, command: str, cron: str, timezone: str) -> None:
    """What serving and deploying both need: a healthy Prefect server, a usable data
    directory and state database, and a schedule Prefect accepts (one line if not)."""
    api = os.environ.get("PREFECT_API_URL")
    if not api:
        raise ConfigError(
            f"flywheel {command} needs a Prefect server: start one with 'prefect server start' "
            "and set PREFECT_API_URL=http://127.0.0.1:4200/api"
        )
    check_server(api)
    Store.from_settings(settings)  # a bad data directory or state URL fails here

    configure_prefect(settings.local_root())
    check_schedule(cron, timezone)


def serve_command(settings: Settings, *, config: Path | None, cron: str, timezone: str, console: Console) -> None:
    _ready(settings, command="serve", cron=cron, timezone=timezone)
    from flows.schedule import DEPLOYMENT_NAME, serve_nightly  # deferred: Prefect, after configure_prefect

    console.print(
        f"Serving deployment flywheel-scheduled-round/{DEPLOYMENT_NAME} on '{cron}' ({timezone}); "
        f"data in {settings.data_location()}. Ctrl+C to stop."
    )
    serve_nightly(data_dir=settings.data_location(), state_url=settings.state_url, config=config, cron=cron, timezone=timezone)


def deploy_command(settings: Settings, *, pool: str, config: Path | None, cron: str, timezone: str,
                   console: Console) -> None:
    """Register the nightly round to the work pool ``pool`` (a process pool is created if
    there is none of that name) and say how to start its workers."""
    if not pool.strip():
        raise ConfigError("--pool needs the name of a Prefect work pool")
    _ready(settings, command="deploy", cron=cron, timezone=timezone)
    from flows.schedule import DEPLOYMENT_NAME, deploy_nightly  # deferred: Prefect, after configure_prefect

    created = ensure_work_pool(pool)
    deploy_nightly(pool=pool, data_dir=settings.data_location(), state_url=settings.state_url, config=config,
                   cron=cron, timezone=timezone)
    made = " (a new process pool)" if created else ""
    console.print(
        f"Deployed flywheel-scheduled-round/{DEPLOYMENT_NAME} to work pool '{pool}'{made} on '{cron}' ({timezone}); "
        f"data in {settings.data_location()}.\nStart a worker on each machine that should run rounds "
        f"(the project installed, the same config path): prefect worker start --pool '{pool}'"
    )


def ensure_work_pool(name: str) -> bool:
    """Create a process work pool ``name`` unless one exists (of any type); True if created."""
    from prefect.client.orchestration import get_client  # deferred: Prefect, after configure_prefect
    from prefect.client.schemas.actions import WorkPoolCreate  # deferred: as above
    from prefect.exceptions import ObjectNotFound  # deferred: as above

    with get_client(sync_client=True) as client:
        try:
            client.read_work_pool(name)
            return False
        except ObjectNotFound:
            client.create_work_pool(WorkPoolCreate(name=name, type="process"))
            return True
