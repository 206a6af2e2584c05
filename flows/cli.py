"""The ``flywheel`` command line. Thin: parse, build settings, call a flow or a view."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.table import Table

from flows import label_studio_cmd, phone_cmd
from flows.cli_shared import (
    ConfigOpt,
    DataDirOpt,
    JsonOpt,
    PasswordStdinOpt,
    ProgressOpt,
    StateUrlOpt,
    cli_settings,
    err,
    existing_store,
    open_store,
    out,
    print_json,
)
from flows.interrupt import stop_at_once_on_interrupt
from flows.prefect_env import configure_prefect, quiet_prefect
from flows.progress import RoundProgress
from review_app.agreement import Overlap
from warehouse import killpoints
from warehouse.errors import FlywheelError, InputError, first_line
from warehouse.settings import config_in_use

app = typer.Typer(
    name="flywheel",
    help="A human-gated data flywheel for planner agents: plan, write tasks, collect, curate, review, export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command and subcommand inherits it
)
CronOpt = Annotated[str, typer.Option("--cron", help="When to run a round (cron syntax).")]
TimezoneOpt = Annotated[str, typer.Option("--timezone", help="Time zone of the cron schedule.")]


@app.command()
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


@app.command()
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


@app.command()
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


@app.command()
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


@app.command()
def review(
    port: Annotated[int | None, typer.Option("--port", min=1, max=65535, help="Port of the review app.")] = None,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (default: this machine only; 0.0.0.0 for a team).")
    ] = "127.0.0.1",
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Serve the review app (Streamlit) where reviewers approve or reject episodes."""
    from flows import planning, review_cmd  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings, _ = existing_store(config, data_dir, state_url)  # a mistyped data directory is refused, not made
    planning.refresh_stored_proposal(settings)  # the release page shows the planner's current proposal
    raise typer.Exit(review_cmd.launch_review_app(settings, port or settings.review_port, err, config, host))


@app.command()
def export(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory to write the export into: its files go into DIR/NAME (e.g. exports/openai-chat/).")] = Path("exports"),
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="openai (chat JSONL), sharegpt (with per-turn loss flags), hf (Parquet for datasets), "
            "dpo (preference pairs), rl (task set with group success stats), trl (TRL prompt/completion rows "
            "for tool calling), adp (Agent Data Protocol trajectories) or verl (verl multi-turn RL Parquet, "
            "tools and interaction YAML, reward module).",
        ),
    ] = "openai",
    verified: Annotated[
        bool, typer.Option("--verified", help="Also export verified episodes nobody has reviewed yet (a first look).")
    ] = False,
    round_ids: Annotated[
        str | None, typer.Option("--round", help="Comma-separated round ids (default: every round).")
    ] = None,
    scrub: Annotated[
        bool, typer.Option("--scrub/--no-scrub", help="Replace PII in free text with placeholders (default: on).")
    ] = True,
    release: Annotated[
        str | None,
        typer.Option("--release", help="Export exactly an approved release (its id, e.g. rel-0001, or 'latest')."),
    ] = None,
    pairs: Annotated[
        str | None,
        typer.Option("--pairs", help="dpo only: episode (whole rollouts), step (at the turn two rollouts diverge) "
                                     "or both (default: episode)."),
    ] = None,
    progress: ProgressOpt = True,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Export curated episodes (one file per split) with a manifest of what, why and from where."""
    from flows import export_cmd  # deferred: DuckDB, Arrow and pandas, which --help never needs

    settings, store = existing_store(config, data_dir, state_url)
    rounds = [r.strip() for r in round_ids.split(",") if r.strip()] if round_ids is not None else None
    if rounds == []:  # "--round ''" or "--round ,": no round named, which is not every round
        raise typer.BadParameter("--round names no round (ids separated by commas, e.g. r0001,r0002)")
    if release is not None:
        if verified or rounds:
            raise typer.BadParameter("--release exports exactly the release; drop --verified and --round")
        result, manifest = export_cmd.export_release(
            store, out_dir, release, fmt=fmt.strip().lower(), scrub=scrub, settings=settings,
            pairs=pairs.strip().lower() if pairs else None, progress=progress and not as_json,
        )
    else:
        result, manifest = export_cmd.export(
            store, out_dir, fmt=fmt.strip().lower(), include_verified=verified,
            round_ids=rounds, scrub=scrub, settings=settings, pairs=pairs.strip().lower() if pairs else None,
            progress=progress and not as_json,
        )
    approved_out = manifest["approved_left_out"]["count"]
    if approved_out:  # on stderr, with --json too: it is no part of the document
        err.print(f"warning: {approved_out} approved episode(s) left out of this export; each is named with its "
                  f"first problem under 'approved_left_out' in {result.manifest_path}", markup=False, highlight=False)
    if as_json:
        print_json({"rows": result.rows, "unit": manifest["unit"], "splits": manifest["splits"],
                     "excluded": manifest["excluded"], "out": str(result.manifest_path.parent),
                     "manifest": str(result.manifest_path)})
        return
    excluded = ", ".join(f"{k} {v}" for k, v in sorted(manifest["excluded"].items())) or "none"
    splits = ", ".join(f"{k} {v}" for k, v in manifest["splits"].items()) or "nothing"
    out.print(f"Exported {result.rows} {manifest['unit']} rows ({splits}) to {result.manifest_path.parent}",
              markup=False, highlight=False)
    out.print(f"Left out: {excluded}")
    out.print(f"Manifest: {result.manifest_path}", markup=False, highlight=False)


@app.command()
def decide(
    episode_id: Annotated[
        str | None, typer.Argument(help="The episode to decide on (or --file for many).", show_default=False)
    ] = None,
    reviewer: Annotated[str, typer.Option("--reviewer", help="Your reviewer account (signs in with its password).")] = "",
    decision: Annotated[
        str | None, typer.Option("--decision", help="approve, reject or needs_fix (with --file: for lines without one).")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", help="A JSON Lines file of decisions, one an episode: "
                                  '{"episode_id": ..., "decision": ..., "reason": ..., "note": ..., '
                                  '"first_wrong_step": ..., "recovered": ..., "round": ...}; one sign-in for all.',
                                  show_default=False)
    ] = None,
    round_id: Annotated[
        str | None, typer.Option("--round", help="The episode's round (default: the round that holds it).")
    ] = None,
    reason: Annotated[str, typer.Option("--reason", help="Reason code (needed to reject), e.g. wrong_result.")] = "",
    note: Annotated[str, typer.Option("--note", help="Free text with the reason.")] = "",
    first_wrong_step: Annotated[
        int | None, typer.Option("--first-wrong-step", min=0, help="Step from which the agent went wrong (no loss from it on).")
    ] = None,
    recovered: Annotated[
        bool, typer.Option("--recovered", help="The agent recovered after the first wrong step: no loss on that step only.")
    ] = False,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Record a review decision, as the review app does (an unknown episode or round is refused), or a
    file of them with --file."""
    from flows import decide_cmd  # deferred: DuckDB and SQLAlchemy, which --help never needs

    if not reviewer:
        raise InputError("--reviewer is needed (the account that decides)")
    if (episode_id is None) == (file is None):
        raise InputError("give an episode id or --file FILE (one of the two)")
    if file is not None:
        if round_id or reason or note or first_wrong_step is not None or recovered:
            raise InputError("with --file, --round, --reason, --note, --first-wrong-step and --recovered go in each line")
        _decide_file(file, reviewer=reviewer, decision=decision, password_stdin=password_stdin, as_json=as_json,
                     config=config, data_dir=data_dir, state_url=state_url)
        return
    if decision is None:
        raise InputError("--decision is needed (approve, reject or needs_fix)")
    _, store = existing_store(config, data_dir, state_url)
    saved = decide_cmd.decide(store, episode_id, reviewer=reviewer, decision=decision.strip().lower(), round_id=round_id,
                reason=reason, note=note, first_wrong_step=first_wrong_step, recovered=recovered,
                password_stdin=password_stdin)
    if as_json:
        print_json({"episode_id": saved.episode_id, "round": saved.round_id, "reviewer": saved.reviewer,
                     "decision": saved.decision, "reason": saved.reason,
                     "first_wrong_step": saved.first_wrong_step, "recovered": saved.recovered})
        return
    mark = "" if saved.first_wrong_step is None else f", first wrong step {saved.first_wrong_step}" + (
        " (recovered)" if saved.recovered else "")
    out.print(f"Recorded {saved.decision} by {saved.reviewer} on {saved.episode_id} (round {saved.round_id}{mark})",
              markup=False, highlight=False)


def _decide_file(file: Path, *, reviewer: str, decision: str | None, password_stdin: bool, as_json: bool,
                 config: Path | None, data_dir: str | None, state_url: str | None) -> None:
    from flows import decide_cmd, views  # deferred: DuckDB and SQLAlchemy, which --help never needs

    _, store = existing_store(config, data_dir, state_url)
    result = decide_cmd.decide_file(store, file, reviewer=reviewer, decision=decision, password_stdin=password_stdin)
    if as_json:
        print_json({"file": str(file), "reviewer": result.reviewer, "recorded": result.recorded,
                     "already": result.already, "skipped": [{"where": w, "why": y} for w, y in result.skipped]})
    else:
        views.print_skipped(err, str(file), result.skipped, limit=20)
        out.print(f"Recorded {result.recorded} decision(s) by {result.reviewer} from {file} ({result.already} already "
                  f"recorded, {len(result.skipped)} line(s) skipped)", markup=False, highlight=False)
    if result.skipped and not (result.recorded or result.already):
        raise typer.Exit(1)  # nothing in the file could be recorded


@app.command()
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
    from flows import feedback_cmd, planning, views  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings, store = existing_store(config, data_dir, state_url)
    result = feedback_cmd.import_feedback(store, file, model=model, threshold=threshold)
    planning.refresh_proposal(store, settings, planning.selected_families(settings))
    if as_json:
        print_json(views.feedback_json(result))
        return
    views.print_feedback_import(out, err, result, str(file))


@app.command(name="eval")
def eval_(
    split: Annotated[str, typer.Option("--split", help="dev (feeds the planner) or test (reported only).")] = "dev",
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
    """Run a model (or the offline scripted policy) in the phone on held-out dev or test tasks and record the
    results as feedback; dev results steer the next plan, test results are reported only."""
    from flows import eval_cmd, model_setup, planning, views  # deferred: Prefect, DuckDB and SQLAlchemy

    openai_over = {k: v for k, v in {"model": model, "base_url": base_url}.items() if v is not None}
    round_over = {"families": [f.strip().upper() for f in families.split(",") if f.strip()]} if families else None
    settings = cli_settings(config, data_dir, state_url, policy="openai" if model else None,
                         openai=openai_over or None, round=round_over)
    store = open_store(settings, create=False)
    fams = planning.selected_families(settings)
    if settings.policy == "openai":
        model_setup.probe(settings)
    plan = eval_cmd.plan_eval(store, settings, fams, split=split, episodes=episodes, tag=tag)
    with RoundProgress(enabled=progress and not as_json, total=len(plan.shard_keys), done=0, round_id=f"eval {split}") as bar:
        result = eval_cmd.run_eval(store, settings, plan, advance=bar.advance)
    if split == "dev":
        planning.refresh_proposal(store, settings, fams)
    views.print_eval(out, err, store, plan, result, as_json=as_json)


@app.command()
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


@app.command("import")
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
    from flows import import_cmd, views  # deferred: Prefect, DuckDB and Arrow, which --help never needs
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
    summary = import_cmd.import_prepared(open_store(settings), prepared, settings)
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


reviewer_app = typer.Typer(help="Reviewer accounts of the review app.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(reviewer_app, name="reviewer")


EmailOpt = Annotated[str | None, typer.Option(
    "--email", help="The person's full Label Studio e-mail: pulled annotations by that user count as this "
                    "reviewer's (\"\" removes it).", show_default=False)]


@reviewer_app.command("add")
def reviewer_add(
    name: Annotated[str, typer.Argument(help="Reviewer name (letters, digits, '.', '_' or '-').")],
    role: Annotated[str, typer.Option("--role", help="reviewer or lead (leads adjudicate and approve releases).")] = "reviewer",
    email: EmailOpt = None,
    password_stdin: PasswordStdinOpt = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Create a reviewer account (the password is stored as a salted scrypt hash)."""
    from flows.reviewer_cmd import add_reviewer_account  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings = cli_settings(config, data_dir, state_url)
    user = add_reviewer_account(settings, name, role, password_stdin=password_stdin, email=email)
    if as_json:
        print_json({"name": user.name, "role": user.role, "active": True})
        return
    out.print(f"Added {user.role} {user.name}")


@reviewer_app.command("set")
def reviewer_set(
    name: Annotated[str, typer.Argument(help="The reviewer account to change.", show_default=False)],
    role: Annotated[
        str | None, typer.Option("--role", help="reviewer or lead (leads adjudicate and approve releases).",
                                 show_default=False)
    ] = None,
    active: Annotated[
        bool | None, typer.Option("--active/--inactive", help="Let the account sign in, or not (signed out at once).",
                                  show_default=False)
    ] = None,
    email: EmailOpt = None,
    password: Annotated[bool, typer.Option("--password", help="Set a new password, typed at a prompt (twice).")] = False,
    password_stdin: Annotated[
        bool, typer.Option("--password-stdin", help="Set a new password, read from the first line of stdin.")
    ] = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """Change a reviewer account: its role, whether it may sign in, its password. The app reads the
    account on every page: a deactivated account is signed out and a demoted lead loses the lead's
    pages at once; a new password signs out the sessions opened with the old one. The only active
    lead is neither demoted nor deactivated (make another lead first)."""
    from flows.reviewer_cmd import set_reviewer_account  # deferred: DuckDB and SQLAlchemy, which --help never needs

    settings = cli_settings(config, data_dir, state_url)
    row = set_reviewer_account(settings, name, role=role, active=active, password_prompt=password,
                               password_stdin=password_stdin, email=email)
    reset = password or password_stdin
    if as_json:
        print_json({"name": row.name, "role": row.role, "active": bool(row.active), "password_reset": reset})
        return
    out.print(f"Updated {row.name}: {row.role}, {'active' if row.active else 'inactive'}"
              + (", new password" if reset else ""), markup=False, highlight=False)


@reviewer_app.command("list")
def reviewer_list(
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
    data_dir: DataDirOpt = None,
    state_url: StateUrlOpt = None,
) -> None:
    """List reviewer accounts and their roles."""
    from flows.reviewer_cmd import reviewer_rows  # deferred: DuckDB and SQLAlchemy, which --help never needs

    rows = reviewer_rows(cli_settings(config, data_dir, state_url))
    if as_json:
        print_json({"reviewers": [{"name": r["name"], "role": r["role"], "active": bool(r["active"])} for r in rows]})
        return
    if not rows:
        out.print("No reviewer accounts yet; create one with: flywheel reviewer add NAME --role lead")
        return
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("name", "role", "status", "Label Studio e-mail"):
        table.add_column(col, no_wrap=True)
    for row in rows:
        table.add_row(row["name"], row["role"], "active" if row["active"] else "inactive", row["email"])
    out.print(table)


app.command()(phone_cmd.families)
app.command()(phone_cmd.gate)
app.add_typer(label_studio_cmd.app, name="label-studio")


from flows.learner_cmd import register as _register_learner_commands  # noqa: E402

_register_learner_commands(app, out, err)


def main(argv: list[str] | None = None) -> None:
    """Entry point: user mistakes become one line on stderr and a non-zero exit."""
    command = typer.main.get_command(app)
    quiet_prefect()  # before any command imports Prefect
    # the kill and fault tests' hooks; unset in normal runs
    killpoints.arm(os.environ.get("FLYWHEEL_KILL_AT"), os.environ.get("FLYWHEEL_HOLD_AT"),
                   os.environ.get("FLYWHEEL_HOLD_FILE"))
    try:
        # Without standalone mode click returns a typer.Exit's code instead of raising it.
        code = command.main(args=argv, prog_name="flywheel", standalone_mode=False)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # Typer's copy of Click raises these; only their base class is public
        ctx = getattr(exc, "ctx", None)  # a usage error carries the command it was made in; other errors do not
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group given no sub-command: its help, as --help shows it
            out.print(ctx.get_help() if ctx else exc.format_message(), markup=False, highlight=False)
            sys.exit(0)
        hint = f" (see 'flywheel {ctx.info_name} --help')" if ctx is not None and ctx.parent else ""
        err.print(f"error: {exc.format_message()}{hint}", markup=False, highlight=False)
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("interrupted; rerun the same command to continue where it stopped", highlight=False)
        sys.exit(130)
    except FlywheelError as exc:
        err.print(f"error: {first_line(exc)}", markup=False, highlight=False)
        sys.exit(1)
    except Exception as exc:  # a bug, not a user mistake: still one line, traceback on request
        if os.environ.get("FLYWHEEL_DEBUG"):
            raise
        err.print(
            f"error: internal error: {type(exc).__name__}: {first_line(exc)} (set FLYWHEEL_DEBUG=1 for the traceback)",
            markup=False,
            highlight=False,
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
