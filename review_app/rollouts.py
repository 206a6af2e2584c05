"""Rollouts of one task side by side: aligned by step, with the step where they part ways.

That step is where preference pairs come from (the same state, two different actions), so
reviewers see it marked. Pure, apart from :func:`load_rollouts`'s reads."""

from __future__ import annotations

from typing import Any

from review_app.data import warehouse_cursor
from review_app.episode import EpisodeView, load_episode, short_json
from warehouse.contract import Step
from warehouse.ids import canonical_json
from warehouse.store import Store

MAX_ROLLOUTS = 8  # columns side by side; more are left out and counted


def load_rollouts(store: Store, view: EpisodeView) -> tuple[list[EpisodeView], int]:
    """The episodes of ``view``'s task (its own included) in rollout order, at most MAX_ROLLOUTS,
    and how many more there are. Rounds are kept apart: a task id is the same in every round."""
    con = warehouse_cursor(store, [view.episode.round_id])
    rows = con.execute(
        "SELECT episode_id FROM episodes WHERE task_id = ? ORDER BY rollout, policy, episode_id",
        [view.episode.task_id],
    ).fetchall()
    ids = [r[0] for r in rows]
    if view.episode.episode_id in ids[MAX_ROLLOUTS:]:  # the one being reviewed is always shown
        ids.remove(view.episode.episode_id)
        ids.insert(MAX_ROLLOUTS - 1, view.episode.episode_id)
    shown = [view if e == view.episode.episode_id else load_episode(store, e, view.episode.round_id)
             for e in ids[:MAX_ROLLOUTS]]
    return shown, max(0, len(ids) - MAX_ROLLOUTS)


def action_of(step: Step) -> str:
    """What the agent did at a step, as a comparable string: the kind, tool and arguments."""
    return canonical_json([step.action.kind, step.action.tool, step.action.arguments])


def divergence(views: list[EpisodeView]) -> int | None:
    """The first step at which the rollouts do not all do the same (one did something else, or
    stopped while another went on); None when they all did the same throughout, or there is one."""
    if len(views) < 2:
        return None
    longest = max(len(v.steps) for v in views)
    for i in range(longest):
        here = {action_of(v.steps[i]) if i < len(v.steps) else None for v in views}
        if len(here) > 1:
            return i
    return None


def column_name(view: EpisodeView) -> str:
    """The heading of a rollout's column: which rollout, by what, and how it ended."""
    ep, out = view.episode, view.outcome
    verdict = "verified" if out and out.success else "unknown" if out and out.success is None else "not verified"
    return f"rollout {ep.rollout} · {ep.policy} · {verdict} · {ep.episode_id[-6:]}"


def cell(step: Step | None) -> str:
    """One step of one rollout in the table: the call, and what went wrong if anything did."""
    if step is None:
        return ""
    act = step.action
    call = f"{act.tool or act.kind}({short_json(act.arguments, 80)})"
    err = step.feedback.error
    bad = (not step.feedback.ok or step.verification.label not in ("ok", "redundant")
           or bool(step.verification.minefields))
    return ("✗ " if bad else "✓ ") + call + (f" → {err.code}" if err else "")


def aligned_rows(views: list[EpisodeView]) -> list[dict[str, Any]]:
    """One row per step index: each rollout's step there, side by side; the diverging row says so."""
    at = divergence(views)
    names = [column_name(v) for v in views]
    rows = []
    for i in range(max((len(v.steps) for v in views), default=0)):
        row: dict[str, Any] = {"step": i, "": "◆ diverge" if i == at else ""}
        for name, v in zip(names, views, strict=True):
            row[name] = cell(v.steps[i] if i < len(v.steps) else None)
        rows.append(row)
    return rows
