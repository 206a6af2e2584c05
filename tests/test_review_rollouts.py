"""Rollouts of one task side by side: aligned by step, the first step where they part ways found,
over real rollouts of a policy that errs and hand-made edge cases."""

from __future__ import annotations

from review_app.episode import load_episode
from review_app.rollouts import action_of, aligned_rows, column_name, divergence, load_rollouts
from tests.review_fixtures import import_long_episode, make_rollouts
from warehouse.store import Store


def test_real_rollouts_of_a_task_are_aligned_and_their_parting_step_is_marked(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_rollouts(store, n_tasks=2, k=3)
    seen = 0
    for eid in ids:
        view = load_episode(store, eid)
        views, more = load_rollouts(store, view)
        assert more == 0 and len(views) == 3 and eid in [v.episode.episode_id for v in views]
        assert {v.episode.task_id for v in views} == {view.episode.task_id}
        assert [v.episode.rollout for v in views] == [0, 1, 2]
        at = divergence(views)
        # before it every rollout did the same; at it they did not
        assert at is not None
        for i in range(at):
            assert len({action_of(v.steps[i]) for v in views}) == 1
        assert len({action_of(v.steps[at]) if at < len(v.steps) else None for v in views}) > 1
        rows = aligned_rows(views)
        assert len(rows) == max(len(v.steps) for v in views)
        assert [r["step"] for r in rows if r[""]] == [at]
        for v in views:
            col = [r[column_name(v)] for r in rows]
            assert col[len(v.steps):] == [""] * (len(rows) - len(v.steps))  # a shorter rollout ends blank
            assert all((v.steps[i].action.tool or v.steps[i].action.kind) in col[i] for i in range(len(v.steps)))
        seen += 1
    assert seen == 6


def test_identical_and_single_rollouts_have_no_parting_step(tmp_path):
    store = Store(tmp_path / "d")
    view = load_episode(store, import_long_episode(store, tmp_path, n_calls=4))
    assert divergence([view]) is None
    assert divergence([view, view]) is None
    views, _ = load_rollouts(store, view)
    assert [v.episode.episode_id for v in views] == [view.episode.episode_id]  # its own task only
    cut = type(view)(view.episode, view.task, view.steps[:2], view.outcome)
    assert divergence([view, cut]) == 2  # one stopped where the other went on
    changed = view.steps[1].model_copy(update={"action": view.steps[1].action.model_copy(
        update={"arguments": {**view.steps[1].action.arguments, "photo": "p-999"}})})
    other = type(view)(view.episode, view.task, [view.steps[0], changed, *view.steps[2:]], view.outcome)
    assert divergence([view, other]) == 1
