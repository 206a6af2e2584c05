"""The episode view draws a step's phone screen when generators.phone.screens can, and
shows the step without one when it cannot (the module missing, or a drawing error)."""

from __future__ import annotations

import sys
import types

import pytest

from review_app import screens
from review_app.episode import load_episode
from tests.review_fixtures import make_round
from warehouse.store import Store


@pytest.fixture
def view(tmp_path):
    store = Store(tmp_path / "d")
    ids = make_round(store, n_tasks=2)
    return load_episode(store, ids[0])


def _install(monkeypatch, **fns):
    module = types.ModuleType("generators.phone.screens")
    for name, fn in fns.items():
        setattr(module, name, fn)
    monkeypatch.setitem(sys.modules, "generators.phone.screens", module)


def test_no_renderer_means_no_screen_and_a_note(view, monkeypatch):
    monkeypatch.setitem(sys.modules, "generators.phone.screens", None)  # import fails
    svg, note = screens.step_screen(view.task, view.steps, 0)
    assert svg is None and "not available" in note


def test_a_renderer_is_called_with_the_arguments_it_names(view, monkeypatch):
    seen = {}

    def render_step(step, instruction=""):
        seen.update(step=step.index, instruction=instruction)
        return "<svg>ok</svg>"

    _install(monkeypatch, render_step=render_step)
    svg, note = screens.step_screen(view.task, view.steps, 0)
    assert (svg, note) == ("<svg>ok</svg>", "")
    assert seen == {"step": 0, "instruction": view.task.instruction}


def test_a_renderer_that_fails_leaves_a_note(view, monkeypatch):
    def render_step_svg(task, steps, index):
        raise KeyError("no such app")

    _install(monkeypatch, render_step_svg=render_step_svg)
    svg, note = screens.step_screen(view.task, view.steps, 0)
    assert svg is None and "KeyError" in note
