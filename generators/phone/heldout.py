"""Held-out instances for agent-authored skills: a fresh world the skill has never seen.

The verifier re-runs a saved skill here with new arguments and checks what it changed;
a skill that only replays the calls of its own episode (hard-coded ids, text) fails.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from typing import Any

from generators.phone.apps import install_all
from generators.phone.apps.contacts import add_contact
from generators.phone.checks_state import check_state_diff
from generators.phone.services.skills import run_macro
from generators.phone.tools import PhoneError
from generators.phone.world import World, row_json

HELDOUT_CACHE = 256  # held-out worlds kept (one a task; a task's rollouts and steps re-run its skill)
RERUN_CACHE = 1024  # verdicts of re-runs kept, by the skill and the requirement (see rerun_saved_skill)
_reruns: OrderedDict[str, tuple[bool, str]] = OrderedDict()
_reruns_lock = threading.Lock()


def heldout_world(p: dict[str, Any]) -> World:
    """A fresh world from ``p["seed"]`` with the rows ``p["setup"]`` lists (contacts for now).

    Built once per seed and setup, then copied: a copy is the same world (rows, clock, generator,
    counters) at a fraction of a build, and the kept one is never changed."""
    return _heldout_template(_key(p)).copy()


def _key(p: dict[str, Any]) -> str:
    return row_json([int(p["seed"]), p.get("setup", {})])


@functools.lru_cache(maxsize=HELDOUT_CACHE)
def _heldout_template(key: str) -> World:
    seed, setup = json.loads(key)
    return build_heldout_world({"seed": seed, "setup": setup})


def build_heldout_world(p: dict[str, Any]) -> World:
    """:func:`heldout_world` built from scratch (the definition its copies must equal)."""
    world = World(seed=int(p["seed"]))
    install_all(world)
    for c in p.get("setup", {}).get("contacts", []):
        add_contact(world, c["first_name"], c["last_name"], phone=c.get("phone", ""), email=c.get("email", ""))
    return world


def macro_changes(skill: dict[str, Any], p: dict[str, Any]) -> list[dict[str, Any]]:
    """The row changes ``skill``'s macro makes on the held-out world with ``p["arguments"]`` (what a full diff
    of the world before and after gives); raises what the macro raises."""
    template = _heldout_template(_key(p))
    world = template.copy()
    before = {name: t.readable() for name, t in template.tables.items()}  # the rows the copy shares
    run_macro(world, skill, dict(p["arguments"]))
    # only the tables the macro used can have changed: the others still share the held-out world's rows
    used = [name for name, t in world.tables.items() if not t.shares(before[name])]
    return world.diff({n: before[n] for n in used}, {n: world.tables[n].rows for n in used})


def rerun_saved_skill(skill: dict[str, Any], p: dict[str, Any]) -> tuple[bool, str]:
    """Run ``skill``'s macro on the held-out world with ``p["arguments"]``; check ``p["expect"]`` (a state diff).

    The verdict follows from the skill's row and ``p`` alone (the held-out world is built from ``p``), so it is
    kept by their canonical JSON: the steps and rollouts that verify the same saved skill run it once."""
    key = row_json([skill, p])
    with _reruns_lock:
        hit = _reruns.get(key)
        if hit is not None:
            _reruns.move_to_end(key)
            return hit
    hit = _rerun(skill, p)  # what it raises beyond the errors it reports is raised again next time, never kept
    with _reruns_lock:
        _reruns[key] = hit
        if len(_reruns) > RERUN_CACHE:
            _reruns.popitem(last=False)
    return hit


def _rerun(skill: dict[str, Any], p: dict[str, Any]) -> tuple[bool, str]:
    try:
        changes = macro_changes(skill, p)
    except PhoneError as e:
        return False, f"the saved skill fails on a fresh instance: {e.code}: {e.message}"
    except (KeyError, TypeError, ValueError) as e:  # a malformed macro is the agent's mistake, reported as such
        return False, f"the saved skill cannot run on a fresh instance: {type(e).__name__}: {e}"
    ok, detail = check_state_diff(p["expect"], changes=changes)
    return ok, "" if ok else f"on a fresh instance: {detail}"
