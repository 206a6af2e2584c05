"""Every app is put to work: each tool that changes the world appears in the reference
solution of some task of some registered family (whoever adds families, theirs count too);
only read-only helpers may be left to the agent's own judgement."""

from __future__ import annotations

from functools import cache

from generators.phone.families import FAMILIES
from generators.phone.tools import TOOLS
from warehouse.contract import variant_of

SEEDS = 400  # enough to draw every variant of every family at every difficulty


@cache
def tools_in_references() -> frozenset[str]:
    used, variants = set(), {}
    for fid, family in sorted(FAMILIES.items()):
        seen: set[str] = set()
        for seed in range(SEEDS):
            task = family.make_task(seed, 1 + seed % family.max_difficulty)
            seen.add(variant_of(task.template))
            used |= {a.tool for a in family.reference_actions(task) if a.kind == "tool_call"}
        variants[fid] = seen
    for fid, family in FAMILIES.items():  # the seeds reached every variant, so the list below is complete
        assert variants[fid] == {variant_of(t) for t in family.all_templates()}, fid
    return frozenset(used)


def test_only_read_only_helpers_are_left_out_of_every_reference_solution():
    unused = sorted(set(TOOLS) - tools_in_references())
    print("tools no reference solution uses:", ", ".join(unused))
    assert [t for t in unused if TOOLS[t].kind == "write"] == []
    assert all(TOOLS[t].kind in ("read", "meta") for t in unused)
    assert {TOOLS[t].app for t in TOOLS} == {TOOLS[t].app for t in TOOLS if t not in unused}  # every app is used


def _world_with_a_row_for_every_reader():
    """A world where each left-out reader has something to read (a contact, a mail, a text, a note, a
    transaction, a memory and an intent, a sub-agent session that ran)."""
    from generators.phone.apps import install_all
    from generators.phone.apps.contacts import add_contact
    from generators.phone.apps.mail import add_mail
    from generators.phone.apps.messages import add_message
    from generators.phone.apps.notes import add_note
    from generators.phone.apps.wallet import add_transaction
    from generators.phone.services.memory import add_memory
    from generators.phone.services.subagents import add_kb
    from generators.phone.tools import call_tool
    from generators.phone.world import World

    w = World(3)
    install_all(w)
    contact = add_contact(w, "Ann", "Lee", phone="+1 555 0101")["id"]
    add_mail(w, "bo@example.com", "Lunch", "At noon.")
    add_message(w, contact, "See you soon")
    add_note(w, "Groceries", "milk")
    add_transaction(w, "Cafe", -4.5, "dining", "2026-01-01")
    memory = add_memory(w, "preference", "coffee order", "cortado")["id"]
    add_memory(w, "prospective", "call Bo", "call Bo back", due="2026-03-03")
    add_kb(w, "gym opening hours", "6:00 to 22:00")
    session = call_tool(w, "start_subagent", {"agent": "qa", "instruction": "x",
                                              "inputs": {"question": "gym opening hours?"}})["data"]["session_id"]
    assert call_tool(w, "run_subagent", {"session_id": session})["ok"]
    return w, {"contacts_get": {"contact_id": contact}, "memory_get": {"memory_id": memory},
               "get_subagent_result": {"session_id": session}}


def test_every_left_out_tool_changes_nothing_when_it_works():
    """Its kind is not taken on trust: each left-out tool is called with real arguments on a world
    with rows to read, must succeed, and must leave every table's rows as they were (its digest)."""
    from generators.phone.tools import call_tool

    unused = sorted(set(TOOLS) - tools_in_references())
    for name in unused:
        world, arguments = _world_with_a_row_for_every_reader()
        before = world.state_hash()
        reply = call_tool(world, name, arguments.get(name, {}))
        assert reply["ok"], (name, reply)
        assert reply["data"], f"{name} returned nothing to read"
        assert world.state_hash() == before, f"{name} is left out of every reference solution but changes the world"
