"""The phone screen of a step, if the phone can draw one.

The renderer lives in ``generators.phone.screens`` (``render_step_svg``, or
``render_step``); it is looked up when a step is shown and called with whichever of
``step``, ``instruction``, ``task``, ``steps`` and ``index`` it names. Until the module
exists, or if it cannot draw a step, the episode view shows the step without a screen.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable

from warehouse.contract import Step, TaskSpec

_NAMES = ("render_step_svg", "render_step")


def _renderer() -> Callable | None:
    try:
        module = importlib.import_module("generators.phone.screens")
    except ImportError:
        return None
    for name in _NAMES:
        fn = getattr(module, name, None)
        if callable(fn):
            return fn
    return None


def screens_available() -> bool:
    return _renderer() is not None


def step_screen(task: TaskSpec | None, steps: list[Step], index: int) -> tuple[str | None, str]:
    """(SVG text or None, a note saying why there is none)."""
    render = _renderer()
    if render is None:
        return None, "phone screens are not available in this install"
    offer = {
        "step": steps[index],
        "instruction": task.instruction if task else "",
        "task": task,
        "steps": steps,
        "index": index,
    }
    params = inspect.signature(render).parameters
    required = [n for n, p in params.items() if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if any(n not in offer for n in required):
        return None, f"the screen renderer wants {', '.join(n for n in required if n not in offer)}"
    try:
        svg = render(**{n: v for n, v in offer.items() if n in params})
    except Exception as exc:  # a drawing problem must not take the review page down  # noqa: BLE001
        return None, f"screen could not be drawn: {type(exc).__name__}: {exc}"
    if isinstance(svg, str) and svg.lstrip().startswith("<"):
        return svg, ""
    return None, "no screen for this step"
