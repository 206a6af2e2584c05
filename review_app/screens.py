"""The phone screen of a step in the episode view (the phone's renderer, via curation)."""

from __future__ import annotations

from curation.screens import render_step
from warehouse.contract import Step, TaskSpec


def step_screen(task: TaskSpec | None, steps: list[Step], index: int) -> tuple[str | None, str]:
    """(SVG text or None, a note saying why there is none) for step ``index``."""
    try:
        return render_step(steps[index], task.instruction if task else ""), ""
    except Exception as exc:  # a step the renderer cannot draw must not take the review page down  # noqa: BLE001
        return None, f"screen could not be drawn: {type(exc).__name__}: {exc}"
