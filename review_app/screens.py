"""The phone screens of a step in the episode view (the phone's renderer, via curation).

A step has two screens: the phone before it (the screen the step before it left, none for
the first step) and after it (what the step itself showed and changed)."""

from __future__ import annotations

from dataclasses import dataclass

from curation.screens import render_step
from warehouse.contract import Step, TaskSpec


def step_screen(task: TaskSpec | None, steps: list[Step], index: int) -> tuple[str | None, str]:
    """(SVG text or None, a note saying why there is none) for the screen after step ``index``."""
    try:
        return render_step(steps[index], task.instruction if task else ""), ""
    except Exception as exc:  # a step the renderer cannot draw must not take the review page down  # noqa: BLE001
        return None, f"screen could not be drawn: {type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Screen:
    """One screen shown beside a step: what it is (``before`` or ``after``), its caption, its SVG
    (None when there is none) and why there is none."""

    which: str
    caption: str
    svg: str | None
    note: str = ""


def before_and_after(task: TaskSpec | None, steps: list[Step], index: int) -> list[Screen]:
    """The phone before step ``index`` (after the step before it) and after it."""
    if index > 0:
        svg, note = step_screen(task, steps, index - 1)
        before = Screen("before", f"before step {index} (after step {index - 1})", svg, note)
    else:
        before = Screen("before", "before step 0", None, "the episode starts here: no earlier screen")
    svg, note = step_screen(task, steps, index)
    return [before, Screen("after", f"after step {index}", svg, note)]
