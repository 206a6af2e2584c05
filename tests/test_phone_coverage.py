"""Every app is put to work: each tool that changes the world appears in the reference
solution of some task of some registered family (whoever adds families, theirs count too);
only read-only helpers may be left to the agent's own judgement."""

from __future__ import annotations

from generators.phone.families import FAMILIES
from generators.phone.families.base import variant_of
from generators.phone.tools import TOOLS

SEEDS = 400  # enough to draw every variant of every family at every difficulty


def tools_in_references() -> set[str]:
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
    return used


def test_only_read_only_helpers_are_left_out_of_every_reference_solution():
    unused = sorted(set(TOOLS) - tools_in_references())
    print("tools no reference solution uses:", ", ".join(unused))
    assert [t for t in unused if TOOLS[t].kind == "write"] == []
    assert all(TOOLS[t].kind in ("read", "meta") for t in unused)
    assert {TOOLS[t].app for t in TOOLS} == {TOOLS[t].app for t in TOOLS if t not in unused}  # every app is used
