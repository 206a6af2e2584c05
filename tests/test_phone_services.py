"""The agent services' rules: memory, skills, sub-agents, the simulated user, and their checks."""

import random
from datetime import datetime

from generators.collect import run_episode
from generators.phone.apps import install_all
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.files import add_file
from generators.phone.checks_services import SERVICE_CHECKS
from generators.phone.env import PhoneEnv
from generators.phone.families import get_family
from generators.phone.services.memory import add_memory
from generators.phone.services.subagents import add_kb, add_ui_setting, subagent_steps
from generators.phone.tools import call_tool
from generators.phone.user import scripted_user_reply
from generators.phone.world import World
from tests.fixed_policy import FixedActions
from warehouse.contract import Action


def world() -> World:
    w = World(7)
    install_all(w)
    return w


def run(task, actions):
    env = PhoneEnv(task, get_family(task.family))
    env.reset()
    for a in actions:
        if env.step(a)[2]:
            break
    return env


# -- memory -----------------------------------------------------------------------------------------------------

def test_search_ranks_the_users_active_record_above_its_distractors():
    w = world()
    old = add_memory(w, "preference", "coffee order", "latte", status="superseded")
    mine = add_memory(w, "preference", "coffee order", "cortado", at="2026-01-01T09:00")
    add_memory(w, "relationship", "coffee order", "mocha", subject="Dana")  # someone else's, newer
    add_memory(w, "preference", "coffee beans", "dark roast")  # a similar key
    items = call_tool(w, "memory_search", {"query": "my usual coffee order"})["data"]["items"]
    assert [i["id"] for i in items][:1] == [mine["id"]]
    assert {i["value"] for i in items} == {"cortado", "latte", "mocha", "dark roast"}  # distractors are shown
    status = {i["id"]: i["status"] for i in items}
    assert status[old["id"]] == "superseded"
    # asking about Dana puts Dana's record first
    assert call_tool(w, "memory_search", {"query": "Dana coffee order"})["data"]["items"][0]["value"] == "mocha"


def test_update_in_place_supersede_delete_and_intents():
    w = world()
    m = add_memory(w, "profile", "shoe size", "42")
    assert call_tool(w, "memory_update", {"memory_id": m["id"], "value": "43"})["data"]["id"] == m["id"]
    new = call_tool(w, "memory_update", {"memory_id": m["id"], "value": "44", "keep_history": True})["data"]
    assert new["id"] != m["id"] and w.table("memories").get(m["id"])["status"] == "superseded"
    stale = call_tool(w, "memory_update", {"memory_id": m["id"], "value": "45"})
    assert stale["error"]["code"] == "INVALID_ARGUMENT" and new["id"] in stale["error"]["hint"]
    call_tool(w, "memory_delete", {"memory_id": new["id"]})
    assert w.table("memories").get(new["id"])["status"] == "deleted"  # a tombstone, not a removal
    assert call_tool(w, "memory_get", {"memory_id": new["id"]})["error"]["code"] == "NOT_FOUND"
    bad = call_tool(w, "memory_add", {"type": "prospective", "key": "call Bo", "value": "call Bo back"})
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
    call_tool(w, "memory_add", {"type": "prospective", "key": "call Bo", "value": "call Bo back", "due": "2026-03-03"})
    intents = call_tool(w, "memory_list_intents", {})["data"]["items"]
    assert [i["value"] for i in intents] == ["call Bo back"]


def test_superseded_memory_is_not_used_by_a_passing_episode():
    family = get_family("F07")
    task = next(t for t in (family.make_task(s, 2) for s in range(40)) if t.private_params["variant"] == "usual_alarm")
    ok = run(task, family.reference_actions(task)).evaluate()
    assert ok[1]
    stale = [a.model_copy(deep=True) for a in family.reference_actions(task)]
    stale[1].arguments["time"] = task.private_params["old_value"]  # the superseded wake-up time
    results, success, _, _ = run(task, stale).evaluate()
    assert not success and not next(r for r in results if r.id == "acted_on_memory").passed


# -- skills -----------------------------------------------------------------------------------------------------

def test_gated_tool_before_load_is_skill_not_loaded():
    w = world()
    cid = add_contact(w, "Ann", "Lee", phone="+1 555 0101")["id"]
    before = call_tool(w, "messages_send_bulk", {"contact_ids": [cid], "text": "hi"})
    assert before["error"]["code"] == "SKILL_NOT_LOADED" and "load_skill" in before["error"]["hint"]
    assert not [r for r in w.table("messages").rows.values() if r["direction"] == "out"]
    assert call_tool(w, "load_skill", {"name": "group_messaging"})["data"]["gated_tools"] == ["messages_send_bulk"]
    assert call_tool(w, "messages_send_bulk", {"contact_ids": [cid], "text": "hi"})["ok"]


def test_skill_gating_check_fails_a_gated_call_before_the_load():
    check = SERVICE_CHECKS["skill_gating"]
    p = {"skill": "group_messaging", "tools": ["messages_send_bulk"]}
    load = {"index": 1, "tool": "load_skill", "arguments": {"name": "group_messaging"}, "ok": True}
    used = {"index": 2, "tool": "messages_send_bulk", "arguments": {}, "ok": True}
    early = {"index": 0, "tool": "messages_send_bulk", "arguments": {}, "ok": False}
    assert check(p, calls=[load, used])[0]
    assert not check(p, calls=[early, load, used])[0]
    assert not check(p, calls=[load])[0]


def test_run_skill_has_its_own_sub_trace():
    w = world()
    out = call_tool(w, "run_skill", {"name": "focus_mode", "arguments": {"level": 15}})["data"]
    assert [s["tool"] for s in out["trace"]] == ["device_set_do_not_disturb", "device_set_volume"]
    assert all(s["actor"] == "skill:focus_mode" for s in out["trace"])
    assert w.table("device").get("volume_media")["value"] == 15
    missing = call_tool(w, "run_skill", {"name": "focus_mode"})
    assert missing["error"]["code"] == "INVALID_ARGUMENT" and "level" in missing["error"]["message"]


def _authored(steps, parameters):
    return {"name": "log_coffee", "source": "agent", "macro": steps, "parameters": parameters}


def test_an_authored_skill_reruns_on_a_held_out_instance_and_a_hard_coded_one_does_not():
    p = {"seed": 99, "arguments": {"amount": 5.25},
         "expect": {"table": "transactions", "added": [{"amount": -5.25, "category": "dining"}]}}
    good = [{"tool": "expenses_add", "arguments": {"amount": "{amount}", "category": "dining", "note": "coffee"}}]
    hard = [{"tool": "expenses_add", "arguments": {"amount": 4.5, "category": "dining", "note": "coffee"}}]
    change = lambda skill: [{"table": "skills", "op": "added", "key": "log_coffee", "after": skill}]  # noqa: E731
    assert SERVICE_CHECKS["skill_reruns"](p, changes=change(_authored(good, ["amount"])))[0]
    ok, detail = SERVICE_CHECKS["skill_reruns"](p, changes=change(_authored(hard, [])))
    assert not ok and "fresh instance" in detail
    assert not SERVICE_CHECKS["skill_reruns"](p, changes=[])[0]


def test_save_skill_rejects_undeclared_placeholders_and_service_tools():
    w = world()
    steps = [{"tool": "expenses_add", "arguments": {"amount": "{amount}", "category": "dining"}}]
    assert call_tool(w, "save_skill", {"name": "log_it", "description": "x", "steps": steps})["error"]["code"] == \
        "INVALID_ARGUMENT"
    nested = [{"tool": "run_skill", "arguments": {"name": "focus_mode"}}]
    assert "not a phone tool" in call_tool(w, "save_skill", {"name": "loop_it", "description": "x",
                                                             "steps": nested})["error"]["message"]
    assert call_tool(w, "save_skill", {"name": "log_it", "description": "x", "steps": steps,
                                       "parameters": ["amount"]})["ok"]
    assert call_tool(w, "run_skill", {"name": "log_it", "arguments": {"amount": 3}})["ok"]


# -- sub-agents -------------------------------------------------------------------------------------------------

def start_and_run(w, agent, inputs):
    sid = call_tool(w, "start_subagent", {"agent": agent, "instruction": "x", "inputs": inputs})["data"]["session_id"]
    return call_tool(w, "run_subagent", {"session_id": sid})


def test_qa_answers_only_from_its_knowledge_base():
    w = world()
    add_kb(w, "gym opening hours", "6:00 to 22:00")
    known = start_and_run(w, "qa", {"question": "What are the opening hours of the gym?"})  # a paraphrase
    assert known["data"]["result"]["answer"] == "6:00 to 22:00"
    assert "trace" not in known["data"]  # the planner gets the result; the sub-agent's steps are its own rows
    assert subagent_steps(w.events)[-1] == ("subagent:qa", "qa.lookup",
                                            {"question": "What are the opening hours of the gym?"}, True, "")
    near = start_and_run(w, "qa", {"question": "What are the pool opening hours?"})  # a near miss
    assert near["error"]["code"] == "NOT_FOUND" and "do not guess" in near["error"]["hint"]


def test_no_fabrication_check_refuses_an_invented_answer():
    check = SERVICE_CHECKS["no_fabrication"]
    assert check({}, finish_args={"status": "infeasible"}, calls=[])[0]
    assert check({}, finish_args={"status": "infeasible", "answer": "Unknown"}, calls=[])[0]
    assert not check({}, finish_args={"status": "completed", "answer": "9:00 to 21:00"}, calls=[])[0]
    family = get_family("F12")
    task = next(t for t in (family.make_task(s, 1) for s in range(60)) if t.private_params["variant"] == "qa_unknown")
    assert run(task, family.reference_actions(task)).evaluate()[1]
    invented = family.wrong_argument(task, family.reference_actions(task), random.Random(1))
    assert not run(task, invented).evaluate()[1]


def test_gui_and_vision_fail_typed_with_hints():
    w = world()
    add_ui_setting(w, "gallery", "grid_size", "small", ["small", "large"])
    bad_app = start_and_run(w, "gui", {"app": "banking", "setting": "theme", "value": "dark"})
    assert bad_app["error"]["code"] == "UNSUPPORTED_APP" and "gallery" in bad_app["error"]["hint"]
    ok = start_and_run(w, "gui", {"app": "gallery", "setting": "grid_size", "value": "large"})
    assert ok["ok"] and w.table("ui_settings").get("gallery.grid_size")["value"] == "large"
    missing = start_and_run(w, "vision", {"file_id": "f-9999"})
    assert missing["error"]["code"] == "ARTIFACT_NOT_FOUND" and "files_search" in missing["error"]["hint"]
    photo = add_file(w, "r.jpg", "Camera", "photo", "Total 9.10")["id"]
    assert start_and_run(w, "vision", {"file_id": photo})["data"]["result"]["text"] == "Total 9.10"
    wrong_inputs = call_tool(w, "start_subagent", {"agent": "vision", "instruction": "x", "inputs": {"photo": photo}})
    assert wrong_inputs["error"]["code"] == "INVALID_ARGUMENT" and "file_id" in wrong_inputs["error"]["hint"]


def test_a_seeded_gui_failure_is_unsupported_app_and_its_hint_leads_to_the_apps_own_name():
    family = get_family("F12")
    task = next(t for t in (family.make_task(s, 1, knobs={"faults": 2}) for s in range(60))
                if t.private_params["variant"] == "gui_setting")
    p = task.private_params
    assert task.public_params["app"] == p["said_app"] != p["app"]  # the user's name for the app
    ref = family.reference_actions(task)
    rec = run_episode(task, FixedActions(ref), rollout=0, round_id="r", batch_id="b", created_at=datetime(2026, 1, 1))
    first_run = next(s for s in rec.steps if s.action.tool == "run_subagent")
    assert first_run.feedback.error.code == "UNSUPPORTED_APP" and p["app"] in first_run.feedback.error.hint
    failed = [s for s in rec.steps if s.actor == "subagent:gui" and not s.feedback.ok]
    assert [(s.action.tool, s.feedback.error.code) for s in failed] == [("gui.open_app", "UNSUPPORTED_APP")]
    assert rec.outcome.success and run(task, ref).evaluate()[1]
    # the real name at once passes; giving up after the failure, or retrying the same name, does not
    direct = [a.model_copy(deep=True) for a in ref[2:]]
    direct[1].arguments["session_id"] = "sa-0001"
    assert run(task, direct).evaluate()[1]
    assert not run(task, [*ref[:2], ref[-1]]).evaluate()[1]
    again = [a.model_copy(deep=True) for a in ref]
    again[2].arguments["inputs"]["app"] = p["said_app"]
    assert not run(task, again).evaluate()[1]
    # below the knob's level 2 the user says the app's own name: no failure is seeded
    plain = family.make_task(task.seed, 1)
    assert "said_app" not in plain.private_params and len(family.reference_actions(plain)) == 3


def _automation(w, tool_name):
    return next(r for r in w.table("automations").rows.values() if r["tool"] == tool_name)


def test_automation_fires_when_the_clock_passes_its_time():
    w = world()
    assert w.table("device").get("flashlight")["value"] is False
    assert w.table("device").get("do_not_disturb")["value"] is False
    start_and_run(w, "automation", {"at": "in 5 minutes", "tool": "device_set_flashlight",
                                    "arguments": {"enabled": True}})
    # a near miss: a second automation due a minute after the first must not fire with it
    start_and_run(w, "automation", {"at": "in 5 minutes", "tool": "device_set_do_not_disturb",
                                    "arguments": {"enabled": True}})
    first, second = _automation(w, "device_set_flashlight"), _automation(w, "device_set_do_not_disturb")
    assert first["at"] < second["at"]
    ticks = 0
    while w.now + w.tick < w.next_due:
        call_tool(w, "device_get_settings", {})
        ticks += 1
        assert w.table("device").get("flashlight")["value"] is False, "fired early"
    assert ticks >= 6  # five minutes of 30-second ticks, less the ticks the second start took
    call_tool(w, "device_get_settings", {})  # this tick passes the first one's time
    assert first["status"] == "fired" and w.table("device").get("flashlight")["value"] is True
    assert second["status"] == "scheduled" and w.table("device").get("do_not_disturb")["value"] is False
    while w.now + w.tick < w.next_due:
        call_tool(w, "device_get_settings", {})
        assert second["status"] == "scheduled", "the second fired before its time"
    call_tool(w, "device_get_settings", {})  # this tick passes the second one's time
    assert second["status"] == "fired" and w.table("device").get("do_not_disturb")["value"] is True
    assert w.next_due is None  # nothing left to fire
    past = start_and_run(w, "automation", {"at": "06:00", "tool": "device_set_flashlight",
                                           "arguments": {"enabled": False}})
    assert past["error"]["code"] == "INVALID_ARGUMENT"  # 06:00 today is already over


def test_an_automation_firing_during_a_step_shows_in_its_state_delta():
    family = get_family("F12")
    task = next(t for t in (family.make_task(s, 1) for s in range(60))
                if t.private_params["variant"] == "automation_later")
    env = PhoneEnv(task, get_family(task.family))
    env.reset()
    for a in family.reference_actions(task)[:-1]:
        env.step(a)
    row = next(iter(env.world.table("automations").rows.values()))
    row["at"] = env.world.now.isoformat(timespec="minutes")  # bring it due on the next tick
    env.world.next_due = env.world.now
    feedback, _, _ = env.step(Action(kind="tool_call", tool="contacts_search", arguments={"query": "x"}))
    assert any(c["table"] == "messages" and c["op"] == "added" for c in feedback.state_delta)


# -- the simulated user ------------------------------------------------------------------------------------------

def _task(facts, policy=None):
    task = get_family("F01").make_task(1, 1)
    task.private_params["user_facts"] = facts
    if policy is not None:
        task.private_params["user_policy"] = policy
    return task


def test_user_answers_only_what_it_knows_and_confirms_by_policy():
    task = _task({"meeting_time|time": "10:30", "room": "4B"}, {"confirm": False})
    assert scripted_user_reply(task, "What time should the meeting be?") == "10:30"
    assert scripted_user_reply(task, "Which room?") == "4B"
    assert scripted_user_reply(task, "What is your budget?") == "I don't know."
    assert "4B" not in scripted_user_reply(task, "What time?")  # never volunteers the other fact
    assert scripted_user_reply(task, "Should I go ahead and book it?") == "No, please don't."
    assert scripted_user_reply(_task({}, {"confirm": True}), "Can you confirm the payment?") == "Yes, go ahead."
    assert scripted_user_reply(_task({}), "Can you confirm the payment?") == "I don't know."  # no policy


