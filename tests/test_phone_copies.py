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


def _world() -> World:
    world = heldout.build_heldout_world(SETUP)
    world.table("contacts").insert({"id": "c-9", "first_name": "Ann", "last_name": "Lee", "phone": "1"})
    return world


def test_copy_on_write_tables_keep_a_world_and_its_copies_apart_both_ways():
    template, pristine = _world(), fingerprint(_world())
    twin = template.copy()
    assert fingerprint(twin) == pristine
    twin.table("contacts").rows["c-9"]["first_name"] = "Changed"  # a row changed in place
    twin.table("contacts").rows.pop(next(k for k in twin.table("contacts").rows if k != "c-9"))
    call_tool(twin, "contacts_create", {"first_name": "Cy", "last_name": "Z", "phone": "3"})
    assert fingerprint(template) == pristine
    third = template.copy()  # a later copy of the kept world: as it was built
    assert fingerprint(third) == pristine
    unused = template.copy()  # its rows are still the template's, shared
    template.table("contacts").rows["c-9"]["first_name"] = "Template"  # the source changed after copies
    template.table("notes").rows.clear()
    assert fingerprint(third) == pristine and fingerprint(unused) == pristine
    assert twin.table("contacts").rows["c-9"]["first_name"] == "Changed"
    assert fingerprint(third.copy()) == pristine  # a copy of a copy that never used its rows


def test_copies_share_untouched_tables_and_copy_only_the_tables_used():
    template = _world()
    kept = template.table("notes").rows
    twin = template.copy()
    assert "rows" not in vars(twin.table("notes"))  # nothing copied until used
    assert twin.table("notes").shares(kept) and template.table("notes").shares(kept)
    twin.table("notes").rows
    assert not twin.table("notes").shares(kept) and template.table("notes").shares(kept)
    twin.table("contacts").rows
    assert "rows" in vars(twin.table("contacts")) and "rows" not in vars(twin.table("mails"))
    assert twin.table("contacts") == template.table("contacts")  # a dataclass's equality sees the rows


def test_reading_a_shared_table_copies_nothing_and_sees_the_rows():
    template = _world()
    kept = template.table("device").rows
    twin = template.copy()
    assert twin.table("device").readable() is kept
    assert twin.table("device").shares(kept)  # still shared after the read
    call_tool(twin, "device_set_wifi", {"enabled": False})
    assert twin.table("device").readable()["wifi"]["value"] is False
    assert template.table("device").readable()["wifi"]["value"] is not False
