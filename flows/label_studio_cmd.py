"""``flywheel label-studio push|pull|sync``: the review queue in Label Studio, its
annotations back as review decisions. Thin: settings, a client, review_app's sync, print."""


import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from flows.cli_shared import ConfigOpt, DataDirOpt, JsonOpt, ProgressOpt, StateUrlOpt, existing_store, out
from review_app.agreement import Overlap
from warehouse.errors import ConfigError, InputError
from warehouse.settings import Settings


def label_studio_client(settings: Settings):
    """The real client for the configured server, its token checked (one line if not)."""
    from review_app.label_studio.sdk_client import connect  # deferred: the Label Studio SDK, which --help never needs

    ls = settings.label_studio
    if not ls.configured:
        raise ConfigError("Label Studio is not configured; set FLYWHEEL_LABEL_STUDIO__URL (and __TOKEN) or "
                          "[label_studio] url in flywheel.toml")
    return connect(ls.url, ls.checked_token(), timeout_s=ls.timeout_s, page_size=ls.page_size)


@contextmanager
def _bar(enabled: bool, what: str, total: int | None) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    with Progress(TextColumn(f"[bold]{what}[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(what, total=total)
        yield lambda n: bar.advance(task, n)


def round_ids_for(store, round_id: str | None) -> list[str] | None:
    """``--round``: one round, ``all``, or (default) the latest round."""
    from warehouse import state  # deferred: SQLAlchemy, which --help never needs

    with store.session() as s:
        rounds = [r.id for r in state.list_rounds(session=s)]
    if round_id == "all":
        return None
    if round_id is None:
        if not rounds:
            raise InputError("no rounds yet; run `flywheel run` or `flywheel import` first")
        return [rounds[-1]]
    if round_id not in rounds:
        raise InputError(f"no round {round_id!r} (rounds: {', '.join(rounds[-5:]) or 'none'})")
    return [round_id]


def run_push(settings: Settings, store, client, *, round_id: str | None, everything: bool, progress: bool):
    from review_app.label_studio.sync import (  # deferred: DuckDB and the SDK, which --help never needs
        episodes_to_push,
        push,
    )

    rids = round_ids_for(store, round_id)
    total = len(episodes_to_push(store, rids, everything=everything))
    with _bar(progress, "pushing", total) as advance:
        return push(store, client, settings.label_studio, round_ids=rids, everything=everything, progress=advance)


def run_pull(settings: Settings, store, client, *, progress: bool):
    from review_app.label_studio.sync import pull  # deferred: as in run_push

    with _bar(progress, "pulling", None) as advance:
        return pull(store, client, settings.label_studio, progress=advance)


def run_sync(settings: Settings, store, client, *, round_id: str | None, everything: bool, progress: bool) -> dict:
    """Push, pull, then the differences between Label Studio and the state database."""
    from review_app.label_studio.sync import differences  # deferred: as in run_push

    pushed = run_push(settings, store, client, round_id=round_id, everything=everything, progress=progress)
    pulled = run_pull(settings, store, client, progress=progress)
    diffs = differences(store, client, settings.label_studio, Overlap.from_settings(settings))
    return {"push": asdict(pushed), "pull": asdict(pulled), "differences": [asdict(d) for d in diffs]}


def push_line(p) -> str:
    restored = "; restored the project's labeling config" if p.config_restored else ""
    return (f"Label Studio project {p.project_id}: {p.selected} episodes selected, {p.created} tasks created, "
            f"{p.updated} updated, {p.unchanged} unchanged{restored}")


def pull_line(p) -> str:
    created = f"; new reviewer accounts: {', '.join(p.reviewers_created)}" if p.reviewers_created else ""
    foreign = f"; {p.foreign} tasks not in the warehouse were left alone" if p.foreign else ""
    return (f"Label Studio project {p.project_id}: {p.tasks} tasks, {p.annotations} annotations: {p.new} new "
            f"decisions, {p.edited} edited, {p.withdrawn} withdrawn, {p.unchanged} unchanged, {p.undecided} without "
            f"a decision{created}{foreign}")


app = typer.Typer(help="Review in Label Studio: push the queue as tasks, pull annotations as decisions.",
                  no_args_is_help=True, rich_markup_mode=None)
RoundOpt = Annotated[str | None, typer.Option("--round", help="Round to push: an id, or 'all' (default: the latest).")]
AllOpt = Annotated[bool, typer.Option("--all", help="Push every episode, not only those curation routed to people.")]



def _emit(as_json: bool, payload: dict, line: str) -> None:
    if as_json:
        out.print_json(json.dumps(payload, default=str))
    else:
        out.print(line, markup=False, highlight=False)


@app.command("push")
def push_cmd(round_id: RoundOpt = None, everything: AllOpt = False, progress: ProgressOpt = True,
             as_json: JsonOpt = False, config: ConfigOpt = None, data_dir: DataDirOpt = None,
             state_url: StateUrlOpt = None) -> None:
    """Create or update the project and its tasks (one per episode; pushing twice creates nothing twice)."""
    settings, store = existing_store(config, data_dir, state_url)
    summary = run_push(settings, store, label_studio_client(settings), round_id=round_id, everything=everything,
                       progress=progress)
    _emit(as_json, asdict(summary), push_line(summary))


@app.command("pull")
def pull_cmd(progress: ProgressOpt = True, as_json: JsonOpt = False, config: ConfigOpt = None,
             data_dir: DataDirOpt = None, state_url: StateUrlOpt = None) -> None:
    """Annotations to review decisions: new, edited and deleted ones, all or nothing."""
    settings, store = existing_store(config, data_dir, state_url)
    summary = run_pull(settings, store, label_studio_client(settings), progress=progress)
    _emit(as_json, asdict(summary), pull_line(summary))


@app.command("sync")
def sync_cmd(round_id: RoundOpt = None, everything: AllOpt = False, progress: ProgressOpt = True,
             as_json: JsonOpt = False, config: ConfigOpt = None, data_dir: DataDirOpt = None,
             state_url: StateUrlOpt = None) -> None:
    """Push, pull, and report where Label Studio and the state database differ."""
    from review_app.label_studio.sync import PullSummary, PushSummary  # deferred: as in run_push

    settings, store = existing_store(config, data_dir, state_url)
    result = run_sync(settings, store, label_studio_client(settings), round_id=round_id, everything=everything,
                      progress=progress)
    kinds = Counter(d["kind"] for d in result["differences"])
    lines = [push_line(PushSummary(**result["push"])), pull_line(PullSummary(**result["pull"]))]
    if kinds:
        lines.append("Differences: " + ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in sorted(kinds.items())))
        lines += [f"  {d['kind']}: {d['episode_id']} {d['detail']}" for d in result["differences"][:10]]
    else:
        lines.append("No differences between Label Studio and the state database")
    _emit(as_json, result, "\n".join(lines))


@app.command("screens")
def screens_cmd(
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to serve on.")] = 8090,
    host: Annotated[str, typer.Option("--host", help="Address to bind (default: this machine only).")] = "127.0.0.1",
    config: ConfigOpt = None, data_dir: DataDirOpt = None, state_url: StateUrlOpt = None,
) -> None:
    """Serve the step screens tasks link to (point label_studio.screens_url at this address)."""
    import uvicorn  # deferred: the testserver extra; only this command serves

    from review_app.label_studio.screens_server import screens_app  # deferred: Starlette, of the same extra

    _, store = existing_store(config, data_dir, state_url)
    out.print(f"Serving step screens at http://{host}:{port}/EPISODE/STEP.svg (Ctrl+C stops)", markup=False,
              highlight=False)
    uvicorn.run(screens_app(store), host=host, port=port, log_level="warning")
