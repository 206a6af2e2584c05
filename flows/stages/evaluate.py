"""The stages of an eval: plan-eval, write, collect, record (see flows.pipeline).

Tasks are drawn fresh from the ``dev`` split (fed to the planner), the ``test`` split
(reported, never planned from) or the ``train`` split: new tasks of the variants a model was
trained on, which say whether it learned them (reported, never planned from: they are not
held out, so they never stand in for a held-out measure). Each
family is evaluated at the level the planner would train it at next. The eval's
episodes are committed shard by shard under the eval's own id (never a round, so never
training data), model replies are journaled, so a killed eval rerun repeats no committed
call; its results are committed as one feedback batch at the end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from flows.planning import mix_for
from flows.stages.collect import CollectRun, collect_units
from flows.stages.feedback import FEEDBACK_ROUND, FeedbackImport
from generators.phone.families import get_family
from generators.task_batch import held_out_tasks
from warehouse import killpoints
from warehouse.contract import EVAL_PREFIX, FeedbackRecord, TaskSpec
from warehouse.errors import InputError
from warehouse.ids import digest, shard_keys, shard_span
from warehouse.query import iter_records
from warehouse.settings import Settings
from warehouse.store import Store

EVAL_SPLITS = ("dev", "test", "train")
EVAL_SEED = 9_100_003  # eval seeds live apart from the rounds' seeds


@dataclass
class EvalPlan:
    batch: str
    split: str
    model: str
    tasks: list[TaskSpec]
    missing: list[str] = field(default_factory=list)  # families with no task of the split
    levels: dict[str, int] = field(default_factory=dict)

    @property
    def shard_keys(self) -> list[str]:
        """The eval's collection units."""
        return shard_keys(len(self.tasks))


def eval_model_name(settings: Settings) -> str:
    return f"openai:{settings.openai.model}" if settings.policy == "openai" else "scripted"


def plan_levels(store: Store, settings: Settings, families: list[str], *, split: str, episodes: int,
                tag: str = "") -> EvalPlan:
    """Stage plan-eval: the eval's batch id and each family's level (its tasks are not written yet)."""
    if split not in EVAL_SPLITS:
        raise InputError(f"--split {split!r}: evaluate on dev (feeds the planner), test (held out, reported only) "
                         "or train (new tasks of the trained variants, reported only)")
    model = eval_model_name(settings)
    seed = settings.round.seed
    # The same eval (model, split, size, seed, families, tag) planned again -- a rerun after a kill, or
    # once more after it finished -- must find the same batch: its levels come from every result
    # except its own, so its own results cannot move them.
    same = EVAL_PREFIX + digest([model, split, episodes, seed, families, tag], 12)
    levels = {m.family: m.difficulty for m in mix_for(store, settings, families, skip_batches=same)[0]}
    return EvalPlan(batch=f"{same}-{digest([levels], 6)}", split=split, model=model, tasks=[], levels=levels)


def write_eval_tasks(plan: EvalPlan, families: list[str], *, episodes: int, seed: int) -> EvalPlan:
    """Stage write: the eval's gated tasks of its split (kept in memory: the same seeds write them again)."""
    plan.tasks, plan.missing = held_out_tasks({f: get_family(f) for f in families}, plan.levels, split=plan.split,
                                              episodes=episodes, first_seed=EVAL_SEED + seed * 100_003)
    if not plan.tasks:
        raise InputError(f"no {plan.split} task could be written for {', '.join(families)}")
    return plan


def collect_eval(store: Store, settings: Settings, plan: EvalPlan, keys: list[str],
                 advance: Callable[[], object] | None = None) -> None:
    """Stage collect: the shards ``keys`` of the eval, each committed at once, one after another."""
    if not keys:
        return
    run = CollectRun(plan.batch, plan.batch, settings.round.seed, settings.policy == "openai")

    def jobs(key: str) -> dict[str, list[tuple[TaskSpec, int]]]:
        return {settings.policy: [(t, 0) for t in plan.tasks[shard_span(key)]]}

    asyncio.run(collect_units(store, run, keys, jobs, settings, started=datetime.now(UTC),
                              done=(lambda *_: advance()) if advance else None))


def record_eval(store: Store, plan: EvalPlan) -> FeedbackImport:
    """Stage record: the eval's results as one feedback batch."""
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
