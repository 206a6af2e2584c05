"""Named points where a test can have the process killed (SIGKILL), deterministically.

The kill tests run a real ``flywheel`` subprocess with ``FLYWHEEL_KILL_AT=NAME[:N]``; the
command line arms this module once at the edge (:func:`arm`), and the N-th time the
process passes ``reached(NAME)`` it kills itself with SIGKILL: no cleanup, no ``finally``,
exactly as ``kill -9`` would. Unarmed (every normal run), ``reached`` is a dict lookup.

``FLYWHEEL_HOLD_AT=NAME[:N]`` with ``FLYWHEEL_HOLD_FILE=PATH`` holds instead: the N-th pass
writes PATH and waits there until the test deletes it, so a test can act (start a second
writer, record review decisions, restart the state database) while the command stands at
a known point, with no race.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

_armed: dict[str, int] = {}
_held: dict[str, int] = {}
_seen: dict[str, int] = {}
_hold_file: list[Path] = []


def _points(spec: str | None) -> dict[str, int]:
    points = {}
    for part in (spec or "").split(","):
        name, _, count = part.strip().partition(":")
        if name:
            points[name] = int(count) if count.isdigit() and int(count) > 0 else 1
    return points


def arm(spec: str | None, hold: str | None = None, hold_file: str | None = None) -> None:
    """Arm kills from ``NAME[:N][,NAME[:N]...]`` (N defaults to 1), and holds from ``hold``
    (same form) that wait while ``hold_file`` exists; empty or None disarms."""
    _seen.clear()
    _armed.clear()
    _armed.update(_points(spec))
    _held.clear()
    _hold_file.clear()
    if hold and hold_file:
        _held.update(_points(hold))
        _hold_file.append(Path(hold_file))


def reached(name: str) -> None:
    """Kill this process with SIGKILL (or hold it) if it is armed at the N-th pass of ``name``."""
    if name not in _armed and name not in _held:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] == _armed.get(name):
        os.kill(os.getpid(), signal.SIGKILL)
    if _seen[name] == _held.get(name):
        marker = _hold_file[0]
        marker.write_text(f"{os.getpid()} {name}")
        while marker.exists():
            time.sleep(0.02)  # a test hook: released when the test deletes the marker
