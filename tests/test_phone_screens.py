"""Screens: valid SVG for every step of an episode, with the changed row drawn as changed."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime

from generators.collect import run_episode
from generators.phone.families import get_family
from generators.phone.screens import render_step
from generators.policies import ScriptedPolicy

NS = "{http://www.w3.org/2000/svg}"


def episode(fid: str, seed: int = 2, difficulty: int = 1):
    family = get_family(fid)
    if fid == "F01":  # the contact variants, whose screens these tests read
        seed = next(s for s in range(seed, 300) if family.make_task(s, difficulty).template.startswith(
            ("update_phone", "delete_contact", "create_contact")))
    task = family.make_task(seed, difficulty)
    rec = run_episode(task, ScriptedPolicy(error_rates={}), rollout=0, round_id="r", batch_id="b",
                      created_at=datetime(2026, 3, 1))
    return task, rec


def changed_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [" ".join(t.text or "" for t in g.iter(f"{NS}text"))
            for g in root.iter(f"{NS}g") if "changed" in (g.get("class") or "").split()]


def test_every_step_is_valid_svg_and_the_write_shows_its_change():
    task, rec = episode("F01")
    for step in rec.steps:
        root = ET.fromstring(render_step(step, task.instruction))
        assert root.tag == f"{NS}svg" and root.get("width")
    write = next(s for s in rec.steps if s.feedback.state_delta)
    rows = changed_texts(render_step(write))
    assert rows, "the changed row is drawn"
    change = write.feedback.state_delta[0]
    row = change["after"] or change["before"]
    assert f"{row['first_name']} {row['last_name']}" in rows[0]
    if change["op"] == "updated":  # the new value itself is on the screen
        assert change["after"]["phone"] in rows[0]
    assert ET.fromstring(render_step(write)).get("data-app") == "contacts"


def test_read_steps_show_rows_and_errors_show_a_toast():
    _, rec = episode("F04", seed=0)
    failed = next(s for s in rec.steps if not s.feedback.ok)
    svg = render_step(failed)
    assert failed.feedback.error.code in svg and not changed_texts(svg)
    read = next(s for s in rec.steps if isinstance(s.feedback.result, dict) and s.feedback.result.get("items"))
    root = ET.fromstring(render_step(read))
    assert len([g for g in root.iter(f"{NS}g") if g.get("class") == "row"]) >= 1


def test_markup_in_data_is_escaped():
    _, rec = episode("F01")
    step = rec.steps[0].model_copy(deep=True)
    step.feedback.result = {"items": [{"id": "x", "name": "<script>alert(1)</script> & co"}]}
    svg = render_step(step)
    ET.fromstring(svg)
    assert "<script>" not in svg
