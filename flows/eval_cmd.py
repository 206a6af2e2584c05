"""``flywheel eval``: run a model in the phone on fresh tasks of a split and record what it did (the eval's
stages are declared in flows.pipeline; parse, call, print here)."""

from __future__ import annotations

from typing import Annotated

import typer

from flows.cli_shared import (
    ConfigOpt,
    DataDirOpt,
    JsonOpt,
    ProgressOpt,
    StateUrlOpt,
    cli_settings,
    err,
    open_store,
    out,
)
from flows.progress import RoundProgress


def eval_(
    split: Annotated[str, typer.Option("--split", help="dev (held out, feeds the planner), test (held out, reported only) or train (new tasks of the "
                                                          "variants trained on: did the model learn them? reported only).")] = "dev",
    episodes: Annotated[int, typer.Option("--episodes", "-n", min=1, help="Tasks to evaluate, spread over families.")] = 60,
    families: Annotated[str | None, typer.Option("--families", help="Comma-separated family ids (default: all).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model to evaluate at the endpoint (implies --policy openai).")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible endpoint of the model.")] = None,
    tag: Annotated[str, typer.Option("--tag", help="Measure again (e.g. a new checkpoint under the same model name).")] = "",
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Run a model (or the offline scripted policy) in the phone on fresh dev, test or train tasks and record
    the results as feedback; dev results steer the next plan, test and train results are reported only."""
    from flows import model_setup, pipeline, planning, views  # deferred: Prefect, DuckDB and SQLAlchemy

    openai_over = {k: v for k, v in {"model": model, "base_url": base_url}.items() if v is not None}
    round_over = {"families": [f.strip().upper() for f in families.split(",") if f.strip()]} if families else None
    settings = cli_settings(config, data_dir, state_url, policy="openai" if model else None,
                         openai=openai_over or None, round=round_over)
    store = open_store(settings, create=False)
    fams = planning.selected_families(settings)
    if settings.policy == "openai":
        model_setup.probe(settings)
    plan = pipeline.plan_eval(store, settings, fams, split=split, episodes=episodes, tag=tag)
    with RoundProgress(enabled=progress and not as_json, total=len(plan.shard_keys), done=0, round_id=f"eval {split}") as bar:
        result = pipeline.run_eval(store, settings, plan, advance=bar.advance)
    if split == "dev":
        planning.refresh_proposal(store, settings, fams)
    views.print_eval(out, err, store, plan, result, as_json=as_json)
