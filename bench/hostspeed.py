"""How fast this core is right now, so that runs on a busy and a quiet machine can be told apart.

This machine is shared: the same code's CPU time moves by a factor of 1.7 between spells of
the host (other tenants take its cores, caches and clock). Each benchmark prints this probe
beside its figures; a slow probe means the machine was slow, not the code.
"""

from __future__ import annotations

import time

QUIET_MS = "22-29"  # the probe in the quiet spells the README's figures come from


def loop_ms() -> float:
    """CPU milliseconds of a plain Python loop of a million additions (best of three)."""
    best = float("inf")
    for _ in range(3):
        start, x = time.process_time(), 0
        for i in range(1_000_000):
            x += i
        best = min(best, time.process_time() - start)
    return 1000 * best


def probe_line(before: float, after: float | None = None) -> str:
    """One line that says how fast this core was (at the start and, when given, at the end of a run)."""
    at = f"{before:.1f} ms" if after is None else f"{before:.1f} ms at the start, {after:.1f} ms at the end"
    return f"this core: a million-addition Python loop takes {at} (quiet host: {QUIET_MS} ms)"
