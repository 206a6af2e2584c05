"""Feedback in: a trainer's per-task results (``flywheel feedback``; an eval in the phone
is ``flows.stages.evaluate``). Each import is one committed unit whose key comes from its
content, so importing the same file twice changes nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from curation.export_source import has_column
from warehouse.contract import REFERENCE_POLICY, FeedbackRecord, TaskSpec
from warehouse.errors import InputError
from warehouse.ids import digest
from warehouse.jsonfile import read_records
from warehouse.query import iter_records
from warehouse.store import Store

FEEDBACK_ROUND = "feedback"  # feedback shards are filed under this pseudo-round


@dataclass
class FeedbackImport:
    batch: str
    imported: int
    already: bool = False
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why): "line 3" / "record 3"


def demonstrated_tasks(store: Store) -> set[str]:
    """Tasks with a reference demonstration: a result on one measures what the model was shown
    (the reference solution), not what it can do, so competence never counts it."""
    con = store.duck()
    if not has_column(con, "episodes", "policy"):
        return set()
    return {t for (t,) in con.execute("SELECT DISTINCT task_id FROM episodes WHERE policy = ?",
                                      [REFERENCE_POLICY]).fetchall()}


def _feedback_row(
    value: Any, tasks: dict[str, TaskSpec], *, model: str, threshold: float, batch: str, now: datetime,
    demonstrated: set[str] | frozenset[str] = frozenset(),
) -> FeedbackRecord:
    if not isinstance(value, dict):
        raise ValueError("not an object")
    tid = value.get("task_id")
    if not isinstance(tid, str) or not tid:
        raise ValueError("task_id missing")
    task = tasks.get(tid)
    if task is None:
        raise ValueError(f"unknown task id {tid!r}")
    if tid in demonstrated:
        raise ValueError(f"task {tid} has a reference demonstration: not a measure of the model")
    reward = value.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, int | float)):
        raise ValueError("reward is not a number")
    if reward is not None and not math.isfinite(reward):  # NaN compares false with everything: no verdict at all
        raise ValueError(f"reward is {reward} (not a finite number)")
    success = value.get("success")
    if success is None:
        if reward is None:
            raise ValueError("needs success (true/false) or reward")
        success = reward >= threshold
    if not isinstance(success, bool):
        raise ValueError("success is not true/false")
    return FeedbackRecord(
        task_id=tid,
        family=task.family,
        difficulty=task.difficulty,
        capabilities=task.capabilities,
        model=str(value.get("model") or model),
        success=success,
        reward=None if reward is None else float(reward),
        source="trainer",
        batch=batch,
        recorded_at=now,
        template=task.template,
        split=task.split,
    )


def import_feedback(store: Store, path: Path, *, model: str, threshold: float = 1.0) -> FeedbackImport:
    """Import a trainer's per-task results; malformed records are reported by line."""
    if not math.isfinite(threshold):
        raise InputError(f"--success-threshold must be a finite number, not {threshold}")
    records = read_records(path)
    batch = "fb-" + digest([path.read_bytes().hex(), model, threshold], 16)
    tasks = {t.task_id: t for t in iter_records(store.duck(), "tasks")}
    demonstrated = demonstrated_tasks(store)
    now = datetime.now(UTC)
    rows: list[FeedbackRecord] = []
    skipped: list[tuple[str, str]] = []
    for rec in records:
        if rec.problem:
            skipped.append((rec.where, rec.problem))
            continue
        try:
            rows.append(_feedback_row(rec.value, tasks, model=model, threshold=threshold, batch=batch, now=now,
                                      demonstrated=demonstrated))
        except ValueError as exc:
            skipped.append((rec.where, str(exc)))
    if not rows:
        first = f" ({skipped[0][0]}: {skipped[0][1]})" if skipped else ""
        raise InputError(f"{path}: no usable feedback records{first}")
    # Under the writer lock: a concurrent run's orphan cleaning must not see this shard renamed but unrecorded.
    with store.run_lock():
        store.clean_orphans()  # a shard of an import killed before recording it
        if batch in store.done_keys(FEEDBACK_ROUND, "feedback"):
            return FeedbackImport(batch=batch, imported=0, already=True)
        store.commit_unit(FEEDBACK_ROUND, batch, {"feedback": rows})
    return FeedbackImport(batch=batch, imported=len(rows), skipped=skipped)
