"""``flywheel import``: a file of trajectories recorded elsewhere, read and checked
(flows.stages.importing), then walked through the import's stages (flows.pipeline)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli_shared import ConfigOpt, DataDirOpt, JsonOpt, StateUrlOpt, cli_settings, err, open_store, out, print_json


def import_(
    file: Annotated[Path, typer.Argument(help="The file to import (see --format).", show_default=False)],
    fmt: Annotated[
        str,
        typer.Option("--format", help="openai-chat (JSON list or JSONL of conversations), inspect (Inspect AI .eval or "
                     ".json log), tau2 (τ²-bench results JSON), otel (OTLP JSON GenAI spans) or adp (Agent Data "
                     "Protocol trajectories)."),
    ] = "openai-chat",
    scorer: Annotated[
        str | None, typer.Option("--scorer", help="inspect: the scorer whose value is the reward; otel: the evaluation "
                                          "(gen_ai.evaluation.name) whose score is (default: the first).")
    ] = None,
    tools: Annotated[
        Path | None,
        typer.Option("--tools", help="OpenAI function schemas (a JSON list) for the records that carry no `tools` "
                                     "of their own; without it, schemas are inferred from the calls.", show_default=False),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="The name task ids are scoped by (`NAME:ID`), so two files that number their "
                                      "tasks alike stay apart (default: the file's name without its suffix).",
                     show_default=False),
    ] = None,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Import trajectories recorded elsewhere as a curated round (source=external, no replay); malformed records are skipped."""
    from flows import pipeline, views  # deferred: Prefect, DuckDB and Arrow, which --help never needs
    from flows.stages import importing  # deferred: DuckDB and Arrow, which --help never needs

    settings = cli_settings(config, data_dir, state_url)
    prepared = importing.prepare_import(file, fmt.strip().lower(), tools, scorer=scorer, source=source)  # a file that is not JSON fails here, before anything is written
    pre = prepared.summary
    if pre.without_schemas and not as_json:
        given = f"schemas from {tools}" if tools else "no --tools file"
        inferred = (f"; schemas inferred from the calls for {len(pre.inferred_tools)} tool(s): "
                    f"{', '.join(pre.inferred_tools)}" if pre.inferred_tools else "")
        out.print(f"{pre.without_schemas} of {pre.records} records have no tool schemas ({given}){inferred}",
                  markup=False, highlight=False, soft_wrap=True)
    summary = pipeline.import_prepared(open_store(settings), prepared, settings)
    if as_json:
        print_json({"file": str(file), "source": prepared.source, "round": summary.round_id, "imported": summary.imported,
                     "already": summary.already, "file_already_imported": summary.file_already_imported,
                     "marks": summary.marks, "skipped": [{"where": w, "why": y} for w, y in summary.skipped],
                     "without_schemas": pre.without_schemas, "inferred_tools": list(pre.inferred_tools)})
        return
    views.print_skipped(err, str(file), summary.skipped)
    if summary.file_already_imported:
        out.print(f"{file} was already imported as round {summary.round_id}; nothing changed"
                  + (f" (curated it: {summary.marks} marks)" if summary.marks else ""), markup=False, highlight=False)
        return
    where = f" as round {summary.round_id}" if summary.round_id else ""
    out.print(f"Imported {summary.imported} episodes from {file}{where} ({summary.already} already there, "
              f"{len(summary.skipped)} malformed skipped; {summary.marks} curation marks)",
              markup=False, highlight=False)
