"""``flywheel import --format tau2``: τ²-bench results, on a sample written in τ²-bench's documented
shape (tests/data/tau2/SOURCE.md)."""

from __future__ import annotations

import json

import pytest

from flows.stages.importing import prepare_import
from tests.conftest import cli_env, flywheel
from tests.format_roundtrip import DATA, approve, export_rows, facts, import_file
from warehouse.errors import InputError
from warehouse.query import iter_records

RESULTS = DATA / "tau2" / "airline_results.json"
TASK = "tau2:airline:7"


def test_simulations_become_episodes_with_their_trial_reward_and_breakdown(tmp_path):
    store, summary = import_file(tmp_path / "d", RESULTS, "tau2")
    assert summary.imported == 2
    assert summary.skipped == [("simulation 3 (task 8, trial 0)", "message 0 has no known role")]
    got = facts(store)
    won, lost = got[(TASK, 0)], got[(TASK, 1)]
    # text turns stay text turns (the agent's and the user's answer), no question or finish invented
    assert [s[:3] for s in won["steps"]] == [
        ("message", "", ""), ("tool_call", "get_reservation_details", "call_t1"),
        ("tool_call", "cancel_reservation", "call_t2"), ("message", "", ""), ("message", "", ""),
        ("tool_call", "cancel_reservation", "call_t3"), ("message", "", "")]
    assert won["steps"][2][4:] == (False, {"code": "TOOL_ERROR", "message": "Error: Reservation ABC12 not found"})
    assert won["steps"][5][5] == {"reservation_id": "ABC123", "status": "cancelled"}
    steps = sorted((s for s in iter_records(store.duck(), "steps")), key=lambda s: (s.episode_id, s.index))
    texts = [(s.actor, s.action.text) for s in steps if s.action.kind == "message"]
    assert ("planner", "Your reservation ABC123 is eligible; shall I cancel it?") in texts
    assert any(actor == "planner" and text.startswith("Done: ABC123 is cancelled") for actor, text in texts)
    assert not any("###STOP###" in text for _, text in texts)  # the user's stop turn is dropped
    # the simulated user's own tool call is not the agent's; a multi-tool message answers both calls
    assert [s[2] for s in lost["steps"]] == ["", "call_t1", "call_t4", "call_t5"]
    assert lost["steps"][3][4:] == (False, {"code": "TOOL_ERROR", "message": "quota exceeded"})
    assert (won["reward"], won["success"], lost["reward"], lost["success"]) == (1.0, True, 0.0, False)
    outcomes = {o.episode_id: o for o in iter_records(store.duck(), "outcomes")}
    episodes = {e.rollout: e.episode_id for e in iter_records(store.duck(), "episodes")}
    results = {r.id: (r.passed, json.loads(r.detail)) for r in outcomes[episodes[1]].requirement_results}
    assert {k: (p, d["reward"]) for k, (p, d) in results.items() if k in ("DB", "COMMUNICATE")} == {
        "DB": (False, 0.0), "COMMUNICATE": (True, 1.0)}
    # all of reward_info is kept: every check as the source said it, and the whole object
    source = json.loads(RESULTS.read_text())["simulations"][1]["reward_info"]
    assert results["reward_info"] == (False, source)
    assert results["db_check"] == (False, source["db_check"])
    assert results["env_assertion:0"] == (False, source["env_assertions"][0])
    assert results["action_check:0"] == (False, source["action_checks"][0])
    assert results["nl_assertion:0"] == (True, source["nl_assertions"][0])
    assert results["communicate_check:0"] == (True, source["communicate_checks"][0])
    assert len(results) == 8
    assert outcomes[episodes[1]].termination == "budget_exhausted" and outcomes[episodes[0]].termination == "external"


def test_import_then_export_keeps_steps_call_ids_results_and_reward(tmp_path):
    store, _ = import_file(tmp_path / "d", RESULTS, "tau2")
    rows, _ = export_rows(store, tmp_path / "out", "adp", approve(store))
    row = next(r for r in rows if r["details"]["rollout"] == 0)
    calls = [c["tool_call_id"] for c in row["content"] if c["class_"] == "api_action"]
    assert calls == ["call_t1", "call_t2", "call_t3"]
    error = next(c["content"] for c in row["content"] if c.get("tool_call_id") == "call_t2" and c["class_"] == "text_observation")
    assert error == "Error: Reservation ABC12 not found"  # as the tool said it
    assert row["details"]["reward"] == 1.0 and row["details"]["success"] is True


def test_a_file_that_is_no_results_file_is_one_clear_error(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps([{"simulations": []}, {}]))
    with pytest.raises(InputError, match="not τ²-bench results"):
        prepare_import(tmp_path / "x.json", "tau2")
    (tmp_path / "y.json").write_text(json.dumps({"tasks": []}))
    with pytest.raises(InputError, match="not τ²-bench results"):
        prepare_import(tmp_path / "y.json", "tau2")


def test_cli_import_names_the_malformed_simulation(tmp_path):
    proc = flywheel("import", str(RESULTS), "--format", "tau2", env=cli_env(None), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Imported 2 episodes" in proc.stdout
    assert "simulation 3 (task 8, trial 0): skipped: message 0 has no known role" in proc.stderr
