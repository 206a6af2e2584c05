"""Kept worlds out of the cyclic garbage collector's way.

A family keeps up to WORLD_CACHE initial worlds, each with its rows, digests and verifier plan: tens of
thousands of objects that never change and never become garbage while kept. Every full collection of the
cyclic garbage collector walks all of them, and while many episodes are live (a model round runs a shard's
episodes at once; so does bench/bench_phone.py) a full collection came every few hundred steps and took about
a quarter of the steps' CPU time. ``gc.freeze()`` moves every object alive at that moment to a generation the
collector never walks again (reference counting still frees each one when it is dropped).

Its price: a garbage cycle alive at the moment of a freeze is not reclaimed while frozen. So every REFREEZE
kept worlds, everything frozen is handed back and collected once before the next freeze: what a freeze can
hold back stays bounded. A process that switched the collector off is left alone.
"""

from __future__ import annotations

import gc
import threading

REFREEZE = 256  # kept worlds between two full collections of what was frozen (one family's cache)

_lock = threading.Lock()
_settled = [0]  # kept worlds settled in this process


def settle_kept_world() -> None:
    """Called once a new kept world is built and cached: freeze what is alive now (see the module note)."""
    if not gc.isenabled():
        return
    with _lock:
        _settled[0] += 1
        if _settled[0] % REFREEZE == 0:  # reclaim the garbage earlier freezes held back
            gc.unfreeze()
            gc.collect()
        gc.freeze()
