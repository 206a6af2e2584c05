"""Worlds the phone keeps and copies instead of rebuilding are the worlds a build gives, and stay so.

A kept world (a family's initial world, a held-out instance for a saved skill) is handed out as
copies; a copy must equal a fresh build in everything a step reads, and changing a copy must
never reach the kept world or a later copy.
"""

from __future__ import annotations

from typing import Any

from generators.phone import heldout
from generators.phone.tools import call_tool
from generators.phone.world import World


def fingerprint(world: World) -> tuple[Any, ...]:
    """Everything of a world a step can read or a hash can see."""
    return (world.state_hash(), world.snapshot(), world.events, world.counters, world.now, world.faults,
            world.next_due, world.wide, world.copy().rng.getstate())


SETUP = {"seed": 4242, "setup": {"contacts": [{"first_name": "Hal", "last_name": "Heldout", "phone": "555-0100"}]}}


def test_a_held_out_world_is_a_copy_equal_to_a_fresh_build_and_changing_it_reaches_no_other():
    first = heldout.heldout_world(SETUP)
    assert fingerprint(first) == fingerprint(heldout.build_heldout_world(SETUP))
    contact = next(iter(first.table("contacts").rows))
    call_tool(first, "contacts_delete", {"contact_id": contact})
    first.table("contacts").rows.clear()
    first.counters["x"] = 1
    assert fingerprint(heldout.heldout_world(SETUP)) == fingerprint(heldout.build_heldout_world(SETUP))
