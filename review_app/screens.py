"""The phone screen of a step, if the phone can draw one.

The renderer lives in ``generators.phone.screens`` (``render_step_svg``); until it
exists, or if it cannot draw a step, the episode view shows the step without a screen.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from warehouse.contract import Step, TaskSpec


def _renderer() -> Callable | None:
    try:
        module = importlib.import_module("generators.phone.screens")
    except ImportError:
        return None
    return getattr(module, "render_step_svg", None)


def screens_available() -> bool:
    return _renderer() is not None


def step_screen(task: TaskSpec | None, steps: list[Step], index: int) -> tuple[str | None, str]:
    """(SVG text or None, a note saying why there is none)."""
    render = _renderer()
    if render is None:
        return None, "phone screens are not available in this install"
    if task is None:
        return None, "the task of this episode is missing"
    params = inspect.signature(render).parameters
    kwargs = {"task": task, "steps": steps, "index": index}
    try:
        svg = render(**{k: v for k, v in kwargs.items() if k in params}) if set(params) & set(kwargs) else render(
            task, steps, index
        )
    except Exception as exc:  # a drawing problem must not take the review page down  # noqa: BLE001
        return None, f"screen could not be drawn: {type(exc).__name__}: {exc}"
    return (svg, "") if isinstance(svg, str) and svg.lstrip().startswith("<") else (None, "no screen for this step")
