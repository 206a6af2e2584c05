"""Failure attribution in the team's taxonomy, and pass^k per capability, from traces alone."""

from datetime import datetime

from curation.capabilities import capability_report, pass_at
from generators.collect import run_episode
from generators.phone.attribution import classify
from generators.phone.families import get_family
from tests.fixed_policy import FixedActions
from warehouse.contract import FailureAttribution

WHEN = datetime(2026, 1, 1)


def f07(variant, level=2):
    family = get_family("F07")
    task = next(t for t in (family.make_task(s, level) for s in range(80)) if t.private_params["variant"] == variant)
    return family, task


def play(task, actions):
    return run_episode(task, FixedActions(actions), rollout=0, round_id="r", batch_id="b", created_at=WHEN)


def test_using_the_superseded_value_is_state_tracking():
    family, task = f07("usual_alarm")
    actions = family.reference_actions(task)
    actions[1].arguments["time"] = task.private_params["old_value"]  # it was in the search results
    failure = play(task, actions).outcome.failure
    assert (failure.side, failure.type, failure.category) == ("model", "wrong_argument", "state_tracking")


def test_an_invented_value_is_argument_grounding():
    family, task = f07("usual_alarm")
    actions = family.reference_actions(task)
    actions[1].arguments["time"] = "03:33"  # nowhere on screen
    assert play(task, actions).outcome.failure.category == "argument_grounding"


def test_a_store_that_misses_or_ranks_stale_first_is_the_harness():
    family, task = f07("usual_alarm")
    actions = family.reference_actions(task)
    actions[1].arguments["time"] = task.private_params["old_value"]
    rec = play(task, actions)
    search = rec.steps[0]
    items = search.feedback.result["items"]
    active = next(i for i in items if i["status"] == "active" and i["value"] == task.private_params["value"])
    stale = next(i for i in items if i["status"] == "superseded")
    ref = family.reference_actions(task)
    search.feedback.result = {"items": [stale, active]}  # the store ranked the old value first
    assert classify(task, ref, rec.steps, rec.outcome.failure).category == "stale_memory"
    search.feedback.result = {"items": [stale]}  # the store never returned the active record
    assert classify(task, ref, rec.steps, rec.outcome.failure).side == "harness"
    assert classify(task, ref, rec.steps, rec.outcome.failure).category == "retrieval_miss"
    search.action.arguments["query"] = "weather"  # but a query that never named the key is the model's miss
    assert classify(task, ref, rec.steps, rec.outcome.failure).side == "model"


def test_skill_and_tool_exposure_failures():
    family = get_family("F10")
    task = next(t for t in (family.make_task(s, 1) for s in range(60))
                if t.private_params["variant"] == "expense_batch")
    skipped = [a for a in family.reference_actions(task) if a.tool != "load_skill"]
    rec = play(task, skipped)
    assert (rec.outcome.failure.side, rec.outcome.failure.category) == ("model", "routing")
    hidden = task.model_copy(deep=True)
    hidden.tools = [t for t in hidden.tools if t != "load_skill"]
    failure = classify(hidden, family.reference_actions(task), rec.steps, FailureAttribution(type="skipped_step"))
    assert failure.side == "harness"  # the reference needs load_skill, which the task never offered
    assert failure.category == "tool_not_exposed"
    # a gated tool refused on a task that never offers load_skill, whose reference needs no skill:
    # nothing told the agent how to unlock it (the harness's gap)
    unguided = classify(hidden, skipped, rec.steps, FailureAttribution(type="skipped_step"))
    assert (unguided.side, unguided.category) == ("harness", "missing_skill_guidance")
    assert rec.steps[unguided.step].feedback.error.code == "SKILL_NOT_LOADED"


def test_pass_k_counts_a_scenario_as_one_unit():
    rows = [  # task a: 2 of 2; task b: 1 of 2; scenario s: rollout 0 both sessions ok, rollout 1 session 2 fails
        {"round_id": "r", "task_id": "a", "family": "F01", "rollout": 0, "success": True, "capabilities": ["tool_use"]},
        {"round_id": "r", "task_id": "a", "family": "F01", "rollout": 1, "success": True, "capabilities": ["tool_use"]},
        {"round_id": "r", "task_id": "b", "family": "F01", "rollout": 0, "success": True, "capabilities": ["tool_use"]},
        {"round_id": "r", "task_id": "b", "family": "F01", "rollout": 1, "success": False, "capabilities": ["tool_use"],
         "failure_side": "model", "failure_category": "recovery"},
        *[{"round_id": "r", "task_id": f"s-{n}", "scenario_id": "s", "session": n, "family": "F09", "rollout": r,
           "success": not (r == 1 and n == 2), "capabilities": ["memory"],
           **({"failure_side": "model", "failure_category": "state_tracking"} if r == 1 and n == 2 else {})}
          for n in (1, 2) for r in (0, 1)],
    ]
    assert pass_at(rows[:4], 1) == 0.75 and pass_at(rows[:4], 2) == 0.5
    rep = capability_report(rows)["r"]
    assert rep["k"] == 2
    assert rep["capabilities"]["memory"]["pass1"] == 0.5 and rep["capabilities"]["memory"]["passk"] == 0.0
    assert rep["scenarios"] == {"rollouts": 2, "success_rate": 0.5}
    assert rep["attribution"] == {"model:recovery": 1, "model:state_tracking": 1}


def test_status_prints_pass_k_per_capability_and_per_family_and_the_attribution():
    from rich.console import Console

    from flows.views import print_capabilities

    rows = [{"round_id": "r", "task_id": t, "family": fam, "rollout": r, "success": ok, "capabilities": caps,
             **({} if ok else {"failure_side": side, "failure_category": cat})}
            for t, fam, caps, outcomes, side, cat in (
                ("a", "F01", ["tool_use"], (True, True), "", ""),
                ("b", "F07", ["memory", "memory_recall"], (True, False), "harness", "stale_memory"),
                ("c", "F07", ["memory", "memory_recall"], (False, False), "model", "state_tracking"))
            for r, ok in enumerate(outcomes)]
    console = Console(record=True, width=160)
    print_capabilities(console, [{"round": "r", **capability_report(rows)["r"]}])
    text = console.export_text()
    assert "r: by capability (k = 2)" in text and "r: by family (k = 2)" in text
    lines = {ln.split()[0]: ln.split()[1:] for ln in text.splitlines() if ln.strip()}
    assert lines["memory"] == ["4", "25%", "0.25", "0.00"] and lines["tool_use"] == ["2", "100%", "1.00", "1.00"]
    assert lines["F07"] == ["4", "25%", "0.25", "0.00"] and lines["F01"] == ["2", "100%", "1.00", "1.00"]
    assert "failures: harness:stale_memory 1, model:state_tracking 2" in text
    # one rollout a task: pass^1 is the only pass column (it was printed twice, both headed pass^1)
    single = [dict(r, rollout=0) for r in rows if r["rollout"] == 0]
    console = Console(record=True, width=160)
    print_capabilities(console, [{"round": "r", **capability_report(single)["r"]}])
    text = console.export_text()
    assert "(k = 1)" in text and text.count("pass^1") == 2  # one column in each of the two tables
    lines = {ln.split()[0]: ln.split()[1:] for ln in text.splitlines() if ln.strip()}
    assert lines["memory"] == ["2", "50%", "0.50"]
