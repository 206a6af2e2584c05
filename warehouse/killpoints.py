"""Named points where a test can have the process killed (SIGKILL), deterministically.

The kill tests run a real ``flywheel`` subprocess with ``FLYWHEEL_KILL_AT=NAME[:N]``; the
command line arms this module once at the edge (:func:`arm`), and the N-th time the
process passes ``reached(NAME)`` it kills itself with SIGKILL: no cleanup, no ``finally``,
exactly as ``kill -9`` would. Unarmed (every normal run), ``reached`` is a dict lookup.
"""

from __future__ import annotations

import os
import signal

_armed: dict[str, int] = {}
_seen: dict[str, int] = {}


def arm(spec: str | None) -> None:
    """Arm from ``NAME[:N][,NAME[:N]...]`` (N defaults to 1); empty or None disarms."""
    _armed.clear()
    _seen.clear()
    for part in (spec or "").split(","):
        name, _, count = part.strip().partition(":")
        if name:
            _armed[name] = int(count) if count.isdigit() and int(count) > 0 else 1


def reached(name: str) -> None:
    """Kill this process with SIGKILL if it is armed at the N-th pass of ``name``."""
    if name not in _armed:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] == _armed[name]:
        os.kill(os.getpid(), signal.SIGKILL)
