"""The ``flywheel`` command line. Thin: parse, build settings, call a flow or a view."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.table import Table

from flows import eval_cmd, feedback_cmd, import_cmd, label_studio_cmd, phone_cmd, run_cmd
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
    out,
    print_json,
)
from flows.prefect_env import quiet_prefect
from warehouse import killpoints
from warehouse.errors import FlywheelError, InputError, first_line

app = typer.Typer(
    name="flywheel",
    help="A human-gated data flywheel for planner agents: plan, write tasks, collect, curate, review, export.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command and subcommand inherits it
)
for _command in (run_cmd.run, run_cmd.serve, run_cmd.deploy, run_cmd.status):
    app.command()(_command)


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


app.command()(feedback_cmd.feedback)
app.command(name="eval")(eval_cmd.eval_)
app.command()(run_cmd.plan)
app.command("import")(import_cmd.import_)


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
