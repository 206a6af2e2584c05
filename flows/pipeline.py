"""One declared pipeline for every kind of run: a round, an eval and an import are lists of the
same kind of stage, walked by one runner (:func:`walk`).

    ROUND    plan ─► write ─► collect ─► curate ─► finish      (then sync, out of the writer lock)
    EVAL     plan-eval ─► write ─► collect ─► record
    IMPORT   import ─► curate

Each stage declares what it reads and writes (warehouse tables, or rows of the state database),
its units of work (the keys it commits under, each committed once) and its function. The runner
asks a stage for its units, leaves out those already committed, and calls the function with the
rest (maybe none: a stage may still report on what is there). A run killed anywhere and run again
does only what is missing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from flows.prefect_window import rename_this_run
from flows.progress import RoundProgress
from flows.runners import cluster_executor, collects_inline, runner_kind, workers
from flows.stages import evaluate, importing
from flows.stages.collect import collect_shards, shard_keys, shard_slots
from flows.stages.context import run_log, settings_doc
from flows.stages.curate import CURATE_KEY, curate_round_logged, curate_task
from flows.stages.feedback import FEEDBACK_ROUND, FeedbackImport
from flows.stages.plan import finish_round, plan_task
from flows.stages.sync import sync_task
from flows.stages.write import TASKS_KEY, write_tasks_task
from generators.importers.scan import ImportSummary
from warehouse import killpoints, state
from warehouse.settings import Settings
from warehouse.store import Store

EPISODE_TABLES = ("episodes", "steps", "outcomes")
ONCE = "once"  # the unit of a stage that runs once per run, and whose function is its own check


@dataclass
class Run:
    """What the stages of one run share: where they read and write, the run's id (the round, or the
    eval's batch, once the first stage names it), options, and what each stage handed on."""

    store: Store
    settings: Settings
    run_id: str = ""
    in_flow: bool = False  # inside the round's Prefect flow: curation runs as its task, on its cluster
    show_progress: bool = False
    params: dict[str, Any] = field(default_factory=dict)  # what a stage needs beyond the above
    units: dict[str, list[str]] = field(default_factory=dict)  # stage name -> every unit it has
    todo: dict[str, list[str]] = field(default_factory=dict)  # stage name -> the units it had left to do
    out: dict[str, Any] = field(default_factory=dict)  # stage name -> what its function returned

    @property
    def doc(self) -> dict[str, Any]:
        return settings_doc(self.settings)


@dataclass(frozen=True)
class Stage:
    """One declared stage: its name, what it reads and writes, its units and its function."""

    name: str
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    units: Callable[[Run], list[str]]
    work: Callable[[Run, list[str]], Any]  # called with the units not yet committed
    committed: Callable[[Run], set[str]] | None = None  # default: the keys of writes[0] under the run's id


def walk(stages: Sequence[Stage], run: Run) -> Run:
    """Run each stage once, in order, on what is not committed yet."""
    for stage in stages:
        keys = run.units[stage.name] = stage.units(run)
        done = stage.committed(run) if stage.committed else run.store.done_keys(run.run_id, stage.writes[0])
        todo = run.todo[stage.name] = [k for k in keys if k not in done]
        run.out[stage.name] = stage.work(run, todo)
    return run


def once(_: Run) -> list[str]:
    return [ONCE]


def nothing_committed(_: Run) -> set[str]:
    return set()


# --- a round -----------------------------------------------------------------------------------

def _plan(run: Run, _: list[str]) -> bool:
    run.run_id, resumed = plan_task(run.doc)
    rename_this_run(run.run_id)
    with run.store.session() as s:
        run.params["plan"] = s.get(state.Round, run.run_id).plan
    return resumed


def _write(run: Run, _: list[str]) -> None:
    write_tasks_task(run.run_id, run.doc)  # called when committed too: it logs the gate's counts


def _collect(run: Run, todo: list[str]) -> tuple[str, int]:
    """The round's shards ``todo`` through the flow's task runner, or in this process when there is too
    little work to pay for workers (see flows.runners), with a progress bar on a terminal. Returns how
    they ran: (runner, workers)."""
    plan, total, settings = run.params["plan"], len(run.units["collect"]), run.settings
    inline = collects_inline(settings, len(todo), sum(len(shard_slots(plan, k)) for k in todo))
    runner, n_workers = ("inline", 1) if inline else (runner_kind(settings), workers(settings))
    run_log().info(f"{run.run_id}: {len(todo)} shards to collect ({total - len(todo)} already committed), "
                   + ("in the round's own process" if inline else f"{n_workers} workers, {runner} runner"))
    with RoundProgress(enabled=run.show_progress, total=total, done=total - len(todo), round_id=run.run_id) as bar:
        collect_shards(run.store, run.run_id, todo, run.doc, bar.advance, n_workers=n_workers, inline=inline,
                       model=plan.get("policy", {}).get("name") == "openai")
    return runner, n_workers


def _curate(run: Run, todo: list[str]) -> int:
    if not run.run_id or not todo:
        return 0
    if not run.in_flow:
        return curate_round_logged(run.store, run.run_id, run.settings)["marks"]
    runner = run.out.get("collect", ("", 0))[0]
    with cluster_executor(runner) as executor:
        return curate_task(run.run_id, run.doc, run.show_progress, executor)


def _finish(run: Run, _: list[str]) -> None:
    killpoints.reached("round.curated")
    finish_round(run.store, run.run_id)


def _sync(run: Run, todo: list[str]) -> dict[str, Any] | None:
    return sync_task(run.run_id, run.doc) if todo else None


PLAN = Stage("plan", reads=("feedback", "releases", "rounds"), writes=("rounds",), units=once, work=_plan,
             committed=nothing_committed)
WRITE = Stage("write", reads=("rounds",), writes=("tasks",), units=lambda run: [TASKS_KEY], work=_write)
COLLECT = Stage("collect", reads=("rounds", "tasks"), writes=EPISODE_TABLES,
                units=lambda run: shard_keys(run.params["plan"]), work=_collect)
CURATE = Stage("curate", reads=("tasks", *EPISODE_TABLES), writes=("marks",),
               units=lambda run: [CURATE_KEY] if run.run_id else [], work=_curate)
FINISH = Stage("finish", reads=("marks",), writes=("rounds",), units=once, work=_finish, committed=nothing_committed)
SYNC = Stage("sync", reads=("marks", "reviews"), writes=("reviews",),
             units=lambda run: [run.run_id] if run.settings.label_studio.configured else [], work=_sync,
             committed=nothing_committed)

ROUND = (PLAN, WRITE, COLLECT, CURATE, FINISH)  # under the data directory's writer lock
AFTER_ROUND = (SYNC,)  # a Label Studio that is slow or down holds no lock


# --- an eval -----------------------------------------------------------------------------------

def _plan_eval(run: Run, _: list[str]) -> evaluate.EvalPlan:
    p = run.params
    plan = evaluate.plan_levels(run.store, run.settings, p["families"], split=p["split"], episodes=p["episodes"],
                                tag=p.get("tag", ""))
    run.run_id, p["eval"] = plan.batch, plan
    return plan


def _write_eval(run: Run, _: list[str]) -> evaluate.EvalPlan:
    p = run.params
    return evaluate.write_eval_tasks(p["eval"], p["families"], episodes=p["episodes"], seed=run.settings.round.seed)


def _collect_eval(run: Run, todo: list[str]) -> None:
    advance = run.params.get("advance")
    for _ in range(len(run.units["collect"]) - len(todo)):  # committed by an earlier run
        if advance:
            advance()
    evaluate.collect_eval(run.store, run.settings, run.params["eval"], todo, advance)


def _record_eval(run: Run, todo: list[str]) -> FeedbackImport:
    if not todo:
        return FeedbackImport(batch=run.run_id, imported=0, already=True)
    return evaluate.record_eval(run.store, run.params["eval"])


PLAN_EVAL = Stage("plan-eval", reads=("feedback",), writes=(), units=once, work=_plan_eval,
                  committed=nothing_committed)
# an eval's tasks are kept in memory, not committed: the same seeds write the same tasks again
WRITE_EVAL = Stage("write", reads=(), writes=(), units=once, work=_write_eval, committed=nothing_committed)
COLLECT_EVAL = Stage("collect", reads=(), writes=EPISODE_TABLES, units=lambda run: run.params["eval"].shard_keys,
                     work=_collect_eval)
RECORD_EVAL = Stage("record", reads=EPISODE_TABLES, writes=("feedback",), units=lambda run: [run.run_id],
                    work=_record_eval, committed=lambda run: run.store.done_keys(FEEDBACK_ROUND, "feedback"))

EVAL = (PLAN_EVAL, WRITE_EVAL, COLLECT_EVAL, RECORD_EVAL)


# --- an import ---------------------------------------------------------------------------------

def _import(run: Run, todo: list[str]) -> None:
    prepared = run.params["prepared"]
    summary = prepared.summary
    rnd = importing.import_round(run.store, prepared.sha256)
    if rnd is not None:
        summary.file_already_imported = True
        summary.already = len(prepared.task_of)
    else:
        rnd = importing.commit_import(run.store, prepared)
        killpoints.reached("import.recorded")
    run.run_id = rnd.id if rnd is not None else ""
    summary.round_id = rnd.id if rnd is not None else summary.round_id


IMPORT_FILE = Stage("import", reads=("file",), writes=("rounds", "tasks", *EPISODE_TABLES), units=once,
                    work=_import, committed=nothing_committed)  # the file's digest finds an earlier import

IMPORT = (IMPORT_FILE, CURATE)


# --- the walks an eval and an import make ------------------------------------------------------

def plan_eval(store: Store, settings: Settings, families: list[str], *, split: str, episodes: int,
              tag: str = "") -> evaluate.EvalPlan:
    """The eval's plan and tasks (its first two stages: plan-eval, write); nothing is committed."""
    run = Run(store, settings, params={"families": families, "split": split, "episodes": episodes, "tag": tag})
    return walk(EVAL[:2], run).out["write"]


def run_eval(store: Store, settings: Settings, plan: evaluate.EvalPlan, *,
             advance: Callable[[], object] | None = None) -> FeedbackImport:
    """Collect what is missing of ``plan`` and record its results as one feedback batch (the eval's last
    two stages: collect, record), ``advance`` called once per shard.

    All of it under the data directory's writer lock: a round starting meanwhile would
    otherwise take the eval's shard, renamed but not yet recorded, for an orphan and delete it."""
    with store.run_lock():
        store.clean_orphans()  # shards of an eval killed before recording them
        run = Run(store, settings, run_id=plan.batch, params={"eval": plan, "advance": advance})
        return walk(EVAL[2:], run).out["record"]


def import_prepared(store: Store, prepared: importing.PreparedImport,
                    settings: Settings | None = None) -> ImportSummary:
    """Commit the import as its own round (once per file) and curate it."""
    with store.run_lock():
        store.clean_orphans()  # shards of an import killed before its transaction
        run = walk(IMPORT, Run(store, settings, params={"prepared": prepared}))
        prepared.summary.marks = run.out["curate"]  # keyed: 0 once done
    return prepared.summary
