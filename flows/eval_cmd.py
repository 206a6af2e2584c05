"""``flywheel eval``: run a model in the phone on held-out tasks and record what it did.

Tasks are drawn fresh from the ``dev`` split (fed to the planner) or the ``test`` split
(reported, never planned from); train tasks are never evaluated as if held out. Each
family is evaluated at the level the planner would train it at next. The eval's
episodes are committed shard by shard under the eval's own id (never a round, so never
training data), model replies are journaled, so a killed eval rerun repeats no committed
call; its results are committed as one feedback batch at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from flows.feedback_cmd import FEEDBACK_ROUND, FeedbackImport
from flows.planning import mix_for
from flows.stages.collect import collect_records, commit_records
from generators.phone.families import get_family
from generators.phone.gate import scenario_gate_reason
from generators.writers.template import TemplateWriter
from warehouse import killpoints
from warehouse.contract import EVAL_PREFIX, EpisodeRecord, FeedbackRecord, TaskSpec
from warehouse.errors import InputError
from warehouse.ids import digest
from warehouse.query import iter_records
from warehouse.settings import Settings
from warehouse.store import Store

EVAL_SPLITS = ("dev", "test")
SEEDS_PER_TASK = 40  # seeds scanned per wanted task before a family is declared to have none of the split
SHARD = 16
EVAL_SEED = 9_100_003  # eval seeds live apart from the rounds' seeds


@dataclass
class EvalPlan:
    batch: str
    split: str
    model: str
    tasks: list[TaskSpec]
    missing: list[str] = field(default_factory=list)  # families with no task of the split


def eval_model_name(settings: Settings) -> str:
    return f"openai:{settings.openai.model}" if settings.policy == "openai" else "scripted"


def eval_tasks(settings: Settings, families: list[str], levels: dict[str, int], *, split: str, episodes: int,
               seed: int) -> tuple[list[TaskSpec], list[str]]:
    """``episodes`` gated tasks of ``split``, spread evenly over ``families`` (round-robin),
    each at its family's level; and the families that have no task of that split."""
    writer = TemplateWriter()
    per: dict[str, list[TaskSpec]] = {f: [] for f in families}
    want = {f: episodes // len(families) + (1 if i < episodes % len(families) else 0) for i, f in enumerate(families)}
    missing = []
    for fam in families:
        family = get_family(fam)
        for i in range(max(1, want[fam]) * SEEDS_PER_TASK):
            if len(per[fam]) >= want[fam]:
                break
            task = family.make_task(EVAL_SEED + seed * 100_003 + i, levels.get(fam, 1), writer)
            if task.split == split and scenario_gate_reason(family, task) is None:
                per[fam].append(task)
        if want[fam] and not per[fam]:
            missing.append(fam)
    order = [t for i in range(max(want.values(), default=0)) for f in families for t in per[f][i:i + 1]]
    return order, missing


def plan_eval(store: Store, settings: Settings, families: list[str], *, split: str, episodes: int,
              tag: str = "") -> EvalPlan:
    if split not in EVAL_SPLITS:
        raise InputError(f"--split {split!r}: evaluate on dev (feeds the planner) or test (reported only); "
                         "train tasks are never evaluated as if held out")
    model = eval_model_name(settings)
    seed = settings.round.seed
    # The same eval (model, split, size, seed, families, tag) planned again -- a rerun after a kill, or
    # once more after it finished -- must find the same batch: its levels come from every result
    # except its own, so its own results cannot move them.
    same = EVAL_PREFIX + digest([model, split, episodes, seed, families, tag], 12)
    levels = {m.family: m.difficulty for m in mix_for(store, settings, families, skip_batches=same)[0]}
    tasks, missing = eval_tasks(settings, families, levels, split=split, episodes=episodes, seed=seed)
    if not tasks:
        raise InputError(f"no {split} task could be written for {', '.join(families)}")
    batch = f"{same}-{digest([levels], 6)}"
    return EvalPlan(batch=batch, split=split, model=model, tasks=tasks, missing=missing)


def _collect(store: Store, plan: EvalPlan, settings: Settings, jobs: list[tuple[TaskSpec, int]],
             started: datetime) -> list[EpisodeRecord]:
    return collect_records(store, plan.batch, jobs, settings, started, policy=settings.policy,
                           seed=settings.round.seed, batch_id=plan.batch)


def run_eval(store: Store, settings: Settings, plan: EvalPlan, *, advance=None) -> FeedbackImport:
    """Collect what is missing of ``plan`` and record its results as one feedback batch.

    All of it under the data directory's writer lock: a round starting meanwhile would
    otherwise take the eval's shard, renamed but not yet recorded, for an orphan and delete it."""
    with store.run_lock():
        if plan.batch in store.done_keys(FEEDBACK_ROUND, "feedback"):
            return FeedbackImport(batch=plan.batch, imported=0, already=True)
        store.clean_orphans()  # shards of an eval killed before recording them
        started = datetime.now(UTC)
        done = store.done_keys(plan.batch, "episodes")
        for i in range(0, len(plan.tasks), SHARD):
            key = f"s{i // SHARD:05d}"
            if key not in done:
                commit_records(store, plan.batch, key,
                               _collect(store, plan, settings, [(t, 0) for t in plan.tasks[i:i + SHARD]], started))
            if advance:
                advance()
        rows = feedback_of(store, plan)
        killpoints.reached("eval.collected")
        store.commit_unit(FEEDBACK_ROUND, plan.batch, {"feedback": rows})
    return FeedbackImport(batch=plan.batch, imported=len(rows))


def feedback_of(store: Store, plan: EvalPlan) -> list[FeedbackRecord]:
    """One feedback record per evaluated episode, with why a failure failed."""
    con = store.duck([plan.batch])
    tasks = {t.task_id: t for t in plan.tasks}
    outcomes = {o.episode_id: o for o in iter_records(con, "outcomes")}
    now = datetime.now(UTC)
    rows = []
    for ep in sorted(iter_records(con, "episodes"), key=lambda e: e.episode_id):
        task, out = tasks[ep.task_id], outcomes[ep.episode_id]
        rows.append(FeedbackRecord(
            task_id=task.task_id, family=task.family, difficulty=task.difficulty, capabilities=task.capabilities,
            model=plan.model, success=out.success, reward=out.progress, source="eval", batch=plan.batch,
            recorded_at=now, template=task.template, split=plan.split,
            failure_side=out.failure.side if out.failure and not out.success else None,
            failure_type=out.failure.type if out.failure and not out.success else None,
        ))
    return rows
