"""The episode view's step screen is the phone's own renderer (reached through
curation.screens), drawn for real steps of a real round."""

from __future__ import annotations

import re

from generators.phone.tools import TOOLS
from review_app import screens
from review_app.episode import load_episode
from tests.review_fixtures import make_round
from warehouse.store import Store


def test_the_step_screen_draws_each_real_step_of_an_episode(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=4)
    view = max((load_episode(store, e) for e in ids), key=lambda v: len(v.steps))
    assert len(view.steps) >= 2
    drawn = []
    for i, step in enumerate(view.steps):
        svg, note = screens.step_screen(view.task, view.steps, i)
        assert note == "" and svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
        tool = TOOLS.get(step.action.tool)
        assert re.search(r'data-app="([^"]+)"', svg).group(1) == (tool.app if tool else "assistant")
        assert f"step {step.index} ·" in svg
        drawn.append(svg)
    assert len(set(drawn)) == len(drawn)  # each step gets its own screen
    assert view.task.instruction[:20] in drawn[0].replace("&amp;", "&")


def test_a_step_the_renderer_cannot_draw_leaves_a_note(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=2)
    view = load_episode(store, ids[0])
    broken = view.steps[0].model_copy(update={"action": None})  # e.g. a malformed imported step
    svg, note = screens.step_screen(view.task, [broken], 0)
    assert svg is None and note.startswith("screen could not be drawn: AttributeError")


def test_before_a_step_is_the_screen_after_the_one_before_it(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=4)
    view = max((load_episode(store, e) for e in ids), key=lambda v: len(v.steps))
    first = screens.before_and_after(view.task, view.steps, 0)
    assert [s.which for s in first] == ["before", "after"]
    assert first[0].svg is None and first[0].note and first[1].svg == screens.step_screen(view.task, view.steps, 0)[0]
    second = screens.before_and_after(view.task, view.steps, 1)
    assert second[0].svg == first[1].svg and second[0].caption == "before step 1 (after step 0)"
    assert second[1].svg == screens.step_screen(view.task, view.steps, 1)[0] != second[0].svg
