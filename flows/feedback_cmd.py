"""``flywheel feedback``: a trainer's per-task results in (flows.stages.feedback); parse, call, print."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli_shared import ConfigOpt, DataDirOpt, JsonOpt, StateUrlOpt, err, existing_store, out, print_json


def feedback(
    file: Annotated[Path, typer.Argument(help="JSON list or JSON Lines of {task_id, success or reward, model?}.")],
    model: Annotated[str, typer.Option("--model", help="Model the results belong to (unless a record names one).")] = "",
    threshold: Annotated[
        float, typer.Option("--success-threshold", help="A record with only a reward succeeds at or above this.")
    ] = 1.0,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Import a trainer's per-task results; the next round's mix follows them."""
    from flows import planning, views  # deferred: DuckDB and SQLAlchemy, which --help never needs
    from flows.stages import feedback  # deferred: DuckDB, which --help never needs

    settings, store = existing_store(config, data_dir, state_url)
    result = feedback.import_feedback(store, file, model=model, threshold=threshold)
    planning.refresh_proposal(store, settings, planning.selected_families(settings))
    if as_json:
        print_json(views.feedback_json(result))
        return
    views.print_feedback_import(out, err, result, str(file))
