"""Worlds the phone keeps and copies instead of rebuilding are the worlds a build gives, and stay so.

A kept world (a family's initial world, a held-out instance for a saved skill) is handed out as
copies; a copy must equal a fresh build in everything a step reads, and changing a copy must
never reach the kept world or a later copy.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from generators.phone import heldout
from generators.phone.families import FAMILIES
from generators.phone.services.skills import run_macro
from generators.phone.tools import TOOLS, call_tool
from generators.phone.world import World
from tests.phone_calls import HOSTILE, plausible_arguments


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
    assert twin.table("notes").shares(kept) and template.table("notes").shares(kept)
    twin.table("notes").rows
    assert not twin.table("notes").shares(kept) and template.table("notes").shares(kept)
    twin.table("contacts").rows
    assert not twin.table("contacts").shares(template.table("contacts").readable())
    assert twin.table("mails").shares(template.table("mails").readable())  # nothing copied until used
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


def _reading_tools() -> list[str]:
    """Every tool that is not a write: reads, and meta tools such as list_skills and load_skill."""
    return sorted(name for name, t in TOOLS.items() if t.kind != "write")


def _calls_to_try(task: Any, family: Any, rng: random.Random) -> list[tuple[str, Any]]:
    """Per reading tool of the task, its calls in the reference solution and a few plausible ones, whose
    arguments name the world's own keys and values (made from a world of its own, so nothing is copied here)."""
    reference = family.reference_actions(task)
    world = family.build_world(task)
    out = [(a.tool, a.arguments) for a in reference if a.kind == "tool_call" and a.tool in _reading_tools()]
    for name in _reading_tools():
        if name in task.tools or rng.random() < 0.3:  # the task's own tools, and some it does not expose
            out += [(name, plausible_arguments(name, world, reference, rng)) for _ in range(3)]
    return out


def test_a_reading_tool_copies_only_the_tables_it_changes():
    """A read (or meta) tool leaves every table it does not change shared with the kept world: reading never
    copies rows. Only a tool that writes an incidental field (contacts_get's last_viewed, mail_read's read) may
    copy a table, and then the table differs. The kept world stays as it was."""
    rng, checked, changed = random.Random(12), 0, 0
    for family in FAMILIES.values():
        for seed in range(2):
            task = family.make_task(seed, family.max_difficulty)
            kept = family.build_world(task)
            calls = _calls_to_try(task, family, rng)
            pristine = fingerprint(kept)
            for name, arguments in calls:
                world = kept.copy()
                rows_at_copy = {n: t.readable() for n, t in kept.tables.items()}
                reply = call_tool(world, name, arguments)
                for table_name, table in world.tables.items():
                    if table.shares(rows_at_copy[table_name]):
                        continue
                    changed += 1
                    assert table.rows != rows_at_copy[table_name], (
                        f"{family.id} {name}({arguments}) -> ok={reply['ok']} copied {table_name} "
                        "without changing it")
                checked += 1
            assert fingerprint(kept) == pristine, f"{family.id}: a read changed the kept world"
    assert checked > 500 and changed > 0  # enough calls, and some did write an incidental field


def _macro_changes_by_definition(skill: dict[str, Any], p: dict[str, Any]) -> Any:
    """What a saved skill's re-run changes, by the definition: a fresh build, a snapshot, a full diff (or the error)."""
    world = heldout.build_heldout_world(p)
    before = world.snapshot()
    try:
        run_macro(world, skill, dict(p["arguments"]))
    except Exception as e:  # compared with what the kept world's copy raises
        return type(e).__name__, str(e)
    return world.diff(before)


def test_a_saved_skill_rerun_diffs_only_the_tables_it_used_and_equals_a_full_diff():
    """The held-out re-run compares only the tables the macro used; its changes (or error) equal a full diff of a
    fresh build, for the F11 reference's saved skills, their mutants and hostile arguments."""
    family, rng, compared = FAMILIES["F11"], random.Random(11), 0
    for seed in range(6):
        for difficulty in range(1, family.max_difficulty + 1):
            task = family.make_task(seed, difficulty)
            p = next((r.params for r in task.requirements if r.kind == "skill_reruns"), None)
            if p is None:
                continue
            for actions in (family.reference_actions(task), family.wrong_argument(task, family.reference_actions(task),
                                                                                 rng)):
                _, changes = family.simulate(task, actions)
                for c in changes:
                    if c["table"] != "skills" or c["op"] != "added":
                        continue
                    skill = c["after"]
                    for arguments in (p["arguments"], {}, {k: rng.choice(HOSTILE) for k in p["arguments"]}):
                        q = {**p, "arguments": arguments}
                        try:
                            got: Any = heldout.macro_changes(skill, q)
                        except Exception as e:
                            got = type(e).__name__, str(e)
                        assert got == _macro_changes_by_definition(skill, q), (task.task_id, arguments)
                        compared += 1
    assert compared >= 20


def test_a_kept_world_is_per_task_and_per_what_it_is_built_from():
    """Rollouts of a task share its kept world; the same task with other faults planned gets its own."""
    family = FAMILIES["F04"]
    task = family.make_task(1, 3)
    fault = {"tool": task.tools[0], "code": "TIMEOUT", "times": 1}
    faulty = task.model_copy(update={"faults": [*task.faults, fault]}, deep=True)
    first, other, again = family.initial_world(task), family.initial_world(faulty), family.initial_world(task)
    assert first.baseline is again.baseline and first.baseline is not other.baseline
    assert first.world.faults == task.faults and other.world.faults == faulty.faults != task.faults


def test_a_kept_rerun_verdict_is_the_verdict_of_a_fresh_run_and_follows_the_skill_and_the_requirement():
    """Re-run verdicts are kept by the skill's row and the requirement: asking again gives what a fresh run gives,
    and a skill or requirement changed in any way (in place too) is run again, never answered from the kept one."""
    family, verdicts = FAMILIES["F11"], set()
    task = next(t for t in (family.make_task(s, 2) for s in range(20))
                if any(r.kind == "skill_reruns" for r in t.requirements))
    p = next(r.params for r in task.requirements if r.kind == "skill_reruns")
    _, changes = family.simulate(task, family.reference_actions(task))
    skill = next(c["after"] for c in changes if c["table"] == "skills" and c["op"] == "added")
    original = copy.deepcopy(skill)
    assert heldout.rerun_saved_skill(skill, p) == heldout._rerun(skill, p) == (True, "")
    assert heldout.rerun_saved_skill(skill, p) == (True, "")  # kept
    for step in skill["macro"]:  # the same row changed in place: a macro that calls nothing real
        step["tool"] = "no_such_tool"
    verdicts.add(heldout.rerun_saved_skill(skill, p))
    assert verdicts == {heldout._rerun(skill, p)} and not next(iter(verdicts))[0]
    wrong = {**p, "expect": {**p["expect"], "added": [{"no_such_field": "x"}]}}
    skill = original
    assert not heldout.rerun_saved_skill(skill, wrong)[0] and heldout.rerun_saved_skill(skill, p) == (True, "")
