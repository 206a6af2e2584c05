"""The round's commands: ``flywheel run``, ``serve``, ``deploy``, ``status`` and ``plan``
(parse, call a flow or a view, print; registered on the app in flows.cli)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from flows.cli_shared import (
    ConfigOpt,
    DataDirOpt,
    JsonOpt,
    ProgressOpt,
    StateUrlOpt,
    cli_settings,
    existing_store,
    open_store,
    out,
)
from flows.interrupt import stop_at_once_on_interrupt
from flows.prefect_env import configure_prefect
from review_app.agreement import Overlap
from warehouse.settings import config_in_use

CronOpt = Annotated[str, typer.Option("--cron", help="When to run a round (cron syntax).")]
TimezoneOpt = Annotated[str, typer.Option("--timezone", help="Time zone of the cron schedule.")]


def run(
    episodes: Annotated[int | None, typer.Option("--episodes", "-n", min=1, help="Episodes in the round.")] = None,
    rollouts: Annotated[int | None, typer.Option("--rollouts", "-k", min=1, help="Rollouts per task.")] = None,
    families: Annotated[
        str | None, typer.Option("--families", help="Comma-separated family ids (default: all).")
    ] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Base seed of the task draws.")] = None,
    policy: Annotated[
        str | None, typer.Option("--policy", help="Who acts in the phone: scripted (offline) or openai (a model endpoint).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model name at the endpoint (openai policy or writer).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (key from FLYWHEEL_OPENAI__API_KEY or OPENAI_API_KEY).")
    ] = None,
    writer: Annotated[
        str | None, typer.Option("--writer", help="Who words the instructions: template (offline) or openai.")
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", "-w", min=1, help="Shards collected at once (default: round.workers, or the machine's cores).")
    ] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Run a full round (plan, write tasks, collect, stage, curate), or resume an unfinished one."""
    round_over: dict[str, Any] = {}
    if episodes is not None:
        round_over["episodes"] = episodes
    if rollouts is not None:
        round_over["rollouts"] = rollouts
    if seed is not None:
        round_over["seed"] = seed
    if workers is not None:
        round_over["workers"] = workers
    if families:
        round_over["families"] = [f.strip().upper() for f in families.split(",") if f.strip()]
    openai_over = {k: v for k, v in {"model": model, "base_url": base_url}.items() if v is not None}
    settings = cli_settings(config, data_dir, state_url, round=round_over or None, policy=policy, writer=writer,
                         openai=openai_over or None)
    from flows import model_setup, planning, runners, views  # deferred: DuckDB and SQLAlchemy, slow to import
    from flows.round import round_flow  # deferred: Prefect, a second to import

    planning.selected_families(settings)  # an unknown family fails here, before anything starts
    if "openai" in (settings.policy, settings.writer):  # a wrong URL, key or model fails before any work
        model_setup.probe(settings)
    if settings.user.enabled:  # so does the model user's
        model_setup.probe_user(settings)
    runners.check_dask_scheduler(settings)  # so does a Dask scheduler that does not answer
    open_store(settings)  # so does a bad data directory or state URL
    configure_prefect(settings.local_root())
    stop_at_once_on_interrupt()
    summary = round_flow(settings, show_progress=progress and not as_json)
    if as_json:
        out.print_json(json.dumps(summary))
        return
    views.print_round_summary(out, summary, settings)


def serve(
    cron: CronOpt = "0 2 * * *",
    timezone: TimezoneOpt = "UTC",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Serve the nightly round on a schedule (needs a Prefect server at PREFECT_API_URL)."""
    from flows.schedule_cmd import serve_command  # deferred: Prefect, a second to import

    serve_command(cli_settings(config, data_dir, state_url), config=config_in_use(config), cron=cron, timezone=timezone,
                  console=out)


def deploy(
    pool: Annotated[str, typer.Option("--pool", help="The Prefect work pool whose workers run the rounds.")],
    cron: CronOpt = "0 2 * * *",
    timezone: TimezoneOpt = "UTC",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Register the nightly round to a Prefect work pool; `prefect worker start --pool NAME` runs it anywhere."""
    from flows.schedule_cmd import deploy_command  # deferred: Prefect, a second to import

    deploy_command(cli_settings(config, data_dir, state_url), pool=pool, config=config_in_use(config), cron=cron,
                   timezone=timezone, console=out)


def status(
    history: Annotated[
        bool, typer.Option("--history", help="Competence per family after each feedback batch, and each round's mix.")
    ] = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Show the rounds: episodes, success, curation marks and reviews (--history: how competence and the mix moved)."""
    from flows import planning, views  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings, store = existing_store(config, data_dir, state_url)
    if history:
        data = planning.history_data(store)
        if as_json:
            out.print_json(json.dumps(data))
        else:
            views.print_history(out, data)
        return
    rows = views.status_rows(store, settings.openai.prices, Overlap.from_settings(settings))
    if as_json:
        out.print_json(json.dumps({"data_dir": settings.data_location(), "rounds": rows}))
    else:
        views.print_status(out, rows, settings)


def plan(
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Show competence per family (every feedback batch, newest weighing most) and exactly the plan the next
    round would run, each number with its reason; stores the planner's proposal for the release page."""
    from flows import planning, views  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings, store = existing_store(config, data_dir, state_url)
    families = planning.selected_families(settings)
    data = planning.shown_plan(store, settings, families)
    if as_json:
        out.print_json(json.dumps(data))
    else:
        views.print_plan(out, data)
