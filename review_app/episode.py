"""Everything the episode view shows, read in a few point queries."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from review_app.data import warehouse_cursor
from warehouse.contract import REFERENCE_POLICY, CurationMark, Episode, Outcome, Step, TaskSpec, is_subagent
from warehouse.errors import InputError
from warehouse.query import iter_records
from warehouse.store import Store

# What a reviewer is told about a reference demonstration (the review app and Label Studio say the same).
REFERENCE_NOTE = ("Reference demonstration: the family's reference solution followed exactly, not the model's "
                  "attempt (the model fails this family). Approve it only if it is worth training on; it is never "
                  "paired with the model's attempts nor counted as the model's success.")


def step_position(step: int, n: int) -> str:
    """Where the step cursor is, counted from 0 as everything else counts steps: the step table,
    the step panel, the first wrong step, exports and ``flywheel decide --first-wrong-step``."""
    return f"step {step} of steps 0–{n - 1}" if n else "no steps"


def is_reference(episode: Episode) -> bool:
    """Whether the episode is a reference demonstration (see REFERENCE_NOTE)."""
    return episode.policy == REFERENCE_POLICY


@dataclass
class EpisodeView:
    episode: Episode
    task: TaskSpec | None
    steps: list[Step]
    outcome: Outcome | None
    marks: list[CurationMark] = field(default_factory=list)

    @property
    def first_failed_step(self) -> int | None:
        """The first step with an error or a non-ok label: a hint, not a decision."""
        failed = self.failed_steps
        return failed[0] if failed else None

    @property
    def failed_steps(self) -> list[int]:
        """Every step with an error, a minefield or a label other than ok or redundant, in order."""
        return [s.index for s in self.steps
                if not s.feedback.ok or s.verification.label not in ("ok", "redundant") or s.verification.minefields]


def next_failed_step(failed: list[int], cursor: int) -> int | None:
    """The first failed step after ``cursor``, else the first of all (wrapping); None if none failed."""
    return next((i for i in failed if i > cursor), failed[0] if failed else None)


def steps_calling(view: EpisodeView, text: str) -> list[int]:
    """The steps whose tool's name holds ``text`` (any case), in order."""
    want = text.strip().lower()
    if not want:
        return []
    return [s.index for s in view.steps if want in (s.action.tool or s.action.kind or "").lower()]


def table_window(n: int, cursor: int, size: int = 10) -> tuple[int, int]:
    """The rows [start, stop) of an ``n``-step table to show so that ``cursor`` is among them: the
    table follows the cursor, with a few steps before it in view."""
    if n <= size:
        return 0, n
    start = max(0, min(cursor - size // 3, n - size))
    return start, start + size


def load_episode(store: Store, episode_id: str, round_id: str | None = None) -> EpisodeView:
    """The episode with its task, steps, outcome and curation marks; InputError if unknown."""
    con = warehouse_cursor(store, [round_id] if round_id else None)
    eps = list(iter_records(con, "episodes", "episode_id = ?", [episode_id]))
    if not eps:
        raise InputError(f"no episode {episode_id!r}" + (f" in round {round_id}" if round_id else ""))
    ep = eps[0]
    tasks = list(iter_records(con, "tasks", "task_id = ?", [ep.task_id]))
    steps = list(iter_records(con, "steps", "episode_id = ?", [episode_id]))
    outcomes = list(iter_records(con, "outcomes", "episode_id = ?", [episode_id]))
    marks = list(iter_records(con, "marks", "episode_id = ?", [episode_id]))
    return EpisodeView(ep, tasks[0] if tasks else None, steps, outcomes[0] if outcomes else None, marks)


def short_json(value: Any, limit: int = 400) -> str:
    """Compact JSON for a table cell, cut at ``limit`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_rows(view: EpisodeView) -> list[dict[str, Any]]:
    """One row per step for the timeline table."""
    rows = []
    for s in view.steps:
        err = s.feedback.error
        rows.append(
            {
                "step": s.index,
                "actor": s.actor,
                # a sub-agent's own step sits under the planner's step that delegated it
                "action": ("↳ " if is_subagent(s.actor) else "") + (s.action.tool or s.action.kind),
                "arguments": short_json(s.action.arguments, 160),
                "ok": s.feedback.ok,
                "error": f"{err.code}: {err.message}" if err else "",
                "label": s.verification.label,
                "milestones": ", ".join(s.verification.milestones),
                "minefields": ", ".join(s.verification.minefields),
                "progress": round(s.verification.progress, 3),
            }
        )
    return rows


def requirement_rows(view: EpisodeView) -> list[dict[str, Any]]:
    """The task's requirements with the outcome's result for each."""
    results = {r.id: r for r in (view.outcome.requirement_results if view.outcome else [])}
    rows = []
    for req in view.task.requirements if view.task else []:
        res = results.get(req.id)
        rows.append(
            {
                "requirement": req.id,
                "description": req.description,
                "hard": req.hard,
                "weight": req.weight,
                "passed": None if res is None else res.passed,
                "detail": res.detail if res else "",
            }
        )
    return rows
