"""The generation gate: it keeps good families, catches planted broken ones, and the
``flywheel gate`` / ``flywheel families`` commands report it."""

from __future__ import annotations

import json
import random

import pytest

from generators.phone.families import FAMILIES, UnknownKnobError, get_family
from generators.phone.families.f01_crud import ContactCrud
from generators.phone.gate import gate_reason, gate_report, mutants
from tests.conftest import cli_env, flywheel
from warehouse.contract import Requirement


class NoopPassesFamily(ContactCrud):
    """Broken on purpose: its verifier only checks what doing nothing already satisfies."""

    apart = ()  # only the contact variants, whose hooks this class overrides

    def requirements(self, task, changes):
        return [r for r in super().requirements(task, changes) if r.noop_passes]


class AnyValueFamily(ContactCrud):
    """Broken on purpose: it checks which contact changed, never to what."""

    apart = ()  # only the contact variants, whose hooks this class overrides

    def requirements(self, task, changes):
        target = next(r for r in super().requirements(task, changes) if r.kind == "state_diff")
        loose = {"table": "contacts", "updated": [{"key": u["key"], "fields": {}} for u in target.params.get("updated", [])],
                 "added": [{} for _ in target.params.get("added", [])]}
        return [target.model_copy(update={"params": loose}),
                Requirement(id="contacts_only", kind="allowed_changes", description="only contacts changed",
                            noop_passes=True, params={"allow": [{"table": "contacts"}]})]


def test_gate_rejects_every_instance_of_a_family_whose_verifier_noop_passes():
    report = gate_report([NoopPassesFamily()], seeds=6)["F01"]
    assert report["kept"] == 0 and report["rejections"] == {"noop_passes": 6}


def test_gate_catches_a_verifier_that_cannot_tell_a_wrong_argument():
    family = AnyValueFamily()
    tasks = [t for t in (family.make_task(seed, 1) for seed in range(12)) if t.template.startswith("update_phone")]
    assert tasks
    reasons = {gate_reason(family, t) for t in tasks}
    assert reasons and all(r is not None and r.startswith("mutant_passes:") for r in reasons), reasons


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_every_family_is_kept_at_every_difficulty(fid):
    report = gate_report([get_family(fid)], seeds=9)[fid]  # difficulty cycles 1, 2, 3
    assert report["kept"] >= 8, report


@pytest.mark.parametrize("fid", sorted(FAMILIES))
def test_every_variant_is_kept_by_the_gate(fid):
    """A round takes a family's variants in turn, so a variant the gate mostly rejects would stop it
    (F01's song added was kept 1 time in 8: its wrong song was a playlist that did not exist)."""
    family = get_family(fid)
    for variant in family.variants():
        seeds = [s for s in range(2000) if family.template_for(s).split(".")[0] == variant][:6]
        reasons = [gate_reason(family, family.make_task(seed, 1 + i % 3)) for i, seed in enumerate(seeds)]
        assert len(seeds) == 6 and sum(r is None for r in reasons) >= 5, (variant, reasons)


def test_mutants_include_wrong_order_where_writes_can_be_swapped():
    family = get_family("F04")
    task = family.make_task(4, 1)
    kinds = mutants(family, task)
    assert {"wrong_argument", "extra_write", "wrong_order"} <= set(kinds)
    assert kinds["wrong_order"] != family.reference_actions(task)


def test_knobs_change_the_world_and_are_checked():
    family = get_family("F01")
    seed = next(s for s in range(200) if family.make_task(s, 1).template.startswith(("update_phone", "delete_contact")))
    base, noisy = family.make_task(seed, 1), family.make_task(seed, 1, knobs={"noise": 3})
    assert base.task_id != noisy.task_id and base.template == noisy.template
    rows = lambda t: len(family.build_world(t).table("contacts").rows)  # noqa: E731
    assert rows(noisy) > rows(base)
    with pytest.raises(UnknownKnobError):
        family.make_task(3, 1, knobs={"horizon": 2})
    with pytest.raises(UnknownKnobError):
        family.make_task(3, 1, knobs={"noise": 9})


def _one_line_error(proc, needle):
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode != 0 and len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_cli_families_and_gate(tmp_path):
    env = cli_env(None)
    rows = json.loads(flywheel("families", "--json", env=env, cwd=tmp_path).stdout)
    assert [r["id"] for r in rows] == sorted(FAMILIES)
    assert all(r["knobs"] and 8 <= r["tools"] <= 15 for r in rows)
    capability = {r["id"]: r["capability"] for r in rows}
    assert {capability[f] for f in ("F01", "F02", "F03", "F04", "F05", "F06")} == {"tool_use"}
    assert [capability[f] for f in ("F07", "F08", "F09", "F10", "F11", "F12", "F13")] == \
        ["memory", "memory", "memory", "skills", "skills", "subagents", "all"]

    proc = flywheel("gate", "--family", "F02,F05", "--seeds", "3", "--json", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert set(report) == {"F02", "F05"}
    assert all(r["tried"] == 3 and r["kept"] + sum(r["rejections"].values()) == 3 for r in report.values())

    table = flywheel("gate", "--family", "F03", "--seeds", "2", env=env, cwd=tmp_path)
    assert table.returncode == 0 and "F03" in table.stdout and "rejections by reason" in table.stdout

    _one_line_error(flywheel("gate", "--family", "F42", env=env, cwd=tmp_path), "F42")
    _one_line_error(flywheel("gate", "--family", "F03", "--knob", "noise=2", env=env, cwd=tmp_path), "noise")
    _one_line_error(flywheel("gate", "--knob", "noise", env=env, cwd=tmp_path), "NAME=LEVEL")


class UnseededWorldFamily(ContactCrud):
    """Broken on purpose: its world draws one value from an unseeded generator."""

    apart = ()  # only the contact variants, whose hooks this class overrides

    def populate(self, world, rng, task):
        super().populate(world, rng, task)
        world.table("notes").insert({"id": "n-unseeded", "title": "scratch", "folder": "Home",
                                     "body": f"{random.SystemRandom().random():.12f}", "updated_at": ""})


def test_gate_rejects_a_family_whose_world_is_not_a_function_of_its_seed():
    family = UnseededWorldFamily()
    task = family.make_task(3, 1)
    assert gate_reason(family, task) == "nondeterministic"
    assert gate_report([family], seeds=4)["F01"]["rejections"] == {"nondeterministic": 4}
    assert gate_reason(get_family("F01"), get_family("F01").make_task(3, 1)) is None  # the honest family is kept
