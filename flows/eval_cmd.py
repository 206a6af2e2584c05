"""``flywheel eval``: run a model in the phone on held-out tasks and record what it did (the eval's
stages: flows.stages.evaluate, declared in flows.pipeline)."""

from __future__ import annotations

from collections.abc import Callable

from flows.feedback_cmd import FeedbackImport
from flows.pipeline import EVAL, Run, walk
from flows.stages.evaluate import EvalPlan
from warehouse.settings import Settings
from warehouse.store import Store


def plan_eval(store: Store, settings: Settings, families: list[str], *, split: str, episodes: int,
              tag: str = "") -> EvalPlan:
    """The eval's plan and tasks (its first two stages: plan-eval, write); nothing is committed."""
    run = Run(store, settings, params={"families": families, "split": split, "episodes": episodes, "tag": tag})
    return walk(EVAL[:2], run).out["write"]


def run_eval(store: Store, settings: Settings, plan: EvalPlan, *,
             advance: Callable[[], object] | None = None) -> FeedbackImport:
    """Collect what is missing of ``plan`` and record its results as one feedback batch (the eval's last
    two stages: collect, record), ``advance`` called once per shard.

    All of it under the data directory's writer lock: a round starting meanwhile would
    otherwise take the eval's shard, renamed but not yet recorded, for an orphan and delete it."""
    with store.run_lock():
        store.clean_orphans()  # shards of an eval killed before recording them
        run = Run(store, settings, run_id=plan.batch, params={"eval": plan, "advance": advance})
        return walk(EVAL[2:], run).out["record"]
