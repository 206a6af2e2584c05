"""F12: delegate to a sub-agent with the exact inputs, after its prerequisites.

A GUI setting no tool covers, a receipt photo only the vision agent reads (after the
photo's id was found), an automation for later (after the contact's id was found),
and a question for the QA agent, which either knows the answer or says NOT_FOUND, in
which case the agent must say it is unknown, never invent one.

A seeded sub-agent failure (the ``faults`` knob): from level 2 the user names the GUI
setting's app as people do ("Photos", "home screen"), not as the GUI agent knows it; its
first run is ``UNSUPPORTED_APP`` and the hint lists the apps it operates, so the agent
must start a new session with the app's own name.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.apps.files import add_file
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.services.subagents import add_kb, add_ui_setting
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

VARIANTS = ("gui_setting", "vision_receipt", "automation_later", "qa_known", "qa_unknown", "vision_wifi")
WIFI_WORDS = ["latte", "harbor", "maple", "orbit", "cobalt", "pepper", "violet", "summit"]
UI = [("gallery", "grid_size", ["small", "medium", "large"]), ("keyboard", "vibration", ["on", "off"]),
      ("launcher", "icon_shape", ["circle", "square", "squircle"]), ("camera", "shutter_sound", ["on", "off"]),
      ("clock", "alarm_ramp", ["off", "30s", "60s"])]
# what people call the apps the GUI agent operates (never a name it operates: its first run fails)
SAID = {"gallery": "Photos", "keyboard": "on-screen keyboard", "launcher": "home screen", "camera": "camera app",
        "clock": "alarm clock"}
KB = [("gym opening hours", "6:00 to 22:00 on weekdays"), ("parcel room code", "4471"),
      ("guest parking", "level B2, bays 40-55"), ("recycling day", "Thursday morning"),
      ("laundry room hours", "7:00 to 21:00"), ("rooftop booking", "through the concierge, 48 hours ahead")]
UNKNOWN = [("pool opening hours", "What are the pool opening hours?"),
           ("bike room code", "What is the code of the bike room?"),
           ("visitor parking fee", "How much is the visitor parking fee?")]
TEXTS = ["Don't forget the tickets tonight", "Dinner's ready at eight", "Call me when you're out",
         "Leaving the office now"]
MERCHANTS = ["CAFE RIO", "NOODLE BAR", "TRATTORIA SOLE", "SUSHI GO"]


class Delegate(Family):
    """Hand the right sub-agent the right inputs, run it, and use (or honestly report) what it returns."""

    id = "F12"
    title = "delegate to a sub-agent with the exact inputs, after its prerequisites"
    capability = "subagents"
    tags = ("delegation",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"gui_setting": "train", "vision_receipt": "train", "qa_unknown": "train", "automation_later": "dev",
              "qa_known": "test", "vision_wifi": "challenge"}
    tools = ("start_subagent", "run_subagent", "get_subagent_result", "files_list", "files_search",
             "contacts_search", "expenses_add", "messages_send", "notes_create")
    hidden_tools = ("photos_read_text",)
    knobs = {"distractors": "2+: an older receipt, a contact with the same first name; 3: more of them",
             "faults": "2+: the user calls the GUI setting's app by another name (its first run is UNSUPPORTED_APP, "
                       "whose hint lists the apps it operates)"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        private: dict[str, Any] = {"variant": variant, "user_facts": {}, "kb": rng.sample(KB, 4)}
        if variant == "gui_setting":
            app, setting, options = rng.choice(UI)
            value = rng.choice(options[1:])
            private.update(app=app, setting=setting, options=options, value=value)
            if levels["faults"] >= 2:  # the seeded failure: the GUI agent does not know the app by this name
                private["said_app"] = SAID[app]
            return {"app": private.get("said_app", app), "setting": setting.replace("_", " "), "value": value}, private
        if variant == "vision_receipt":
            total, merchant = round(rng.uniform(8, 60), 2), rng.choice(MERCHANTS)
            private.update(total=total, merchant=merchant, older=round(total + rng.uniform(3, 9), 2))
            return {}, private
        if variant == "vision_wifi":
            password, older = (f"{w}{rng.randint(100, 999)}" for w in rng.sample(WIFI_WORDS, 2))
            private.update(password=password, older_password=older)
            return {}, private
        if variant == "automation_later":
            f, la = rng.choice([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:8]])
            at = rng.choice(["17:30", "18:00", "19:15", "20:45"])
            text = rng.choice(TEXTS)
            private.update(person=[f, la], at=at, text=text)
            return {"name": f"{f} {la}", "at": at, "text": text}, private
        if variant == "qa_known":
            topic, answer = private["kb"][0]
            question = f"What about the {topic}?"
            private.update(question=question, answer=answer)
            return {"question": question}, private
        topic, question = rng.choice(UNKNOWN)
        private.update(question=question)
        return {"question": question}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, d = task.private_params, self.level(task, "distractors")
        for topic, answer in p["kb"]:
            add_kb(world, topic, answer)
        for app, setting, options in UI[:4] if p.get("app") != "clock" else UI[1:]:
            add_ui_setting(world, app, setting, options[0], options)
        taken = {tuple(p["person"])} if "person" in p else set()
        ids = noise.contacts(world, rng, 8, taken)
        noise.messages(world, rng, ids, 5)
        if "person" in p:
            add_contact(world, *p["person"], phone=seeddata.phone_number(rng))
            if d >= 2:
                add_contact(world, p["person"][0], seeddata.NEAR_LAST[p["person"][1]], phone=seeddata.phone_number(rng))
        if p["variant"] == "vision_receipt":
            if d >= 2:  # an older receipt with another total
                add_file(world, "receipt_old.jpg", "Camera", "photo", f"{p['merchant']}  Total {p['older']:.2f}",
                         at=(world.now - timedelta(days=1)).isoformat(timespec="minutes"))
            add_file(world, "receipt_new.jpg", "Camera", "photo", f"{p['merchant']}  Total {p['total']:.2f}",
                     at=(world.now - timedelta(minutes=1)).isoformat(timespec="minutes"))
        if p["variant"] == "vision_wifi":
            if d >= 2:  # last week's card, from another cafe
                add_file(world, "wifi_old.jpg", "Camera", "photo", f"GUEST WIFI  password: {p['older_password']}",
                         at=(world.now - timedelta(days=6)).isoformat(timespec="minutes"))
            add_file(world, "wifi_card.jpg", "Camera", "photo", f"CAFE WIFI  password: {p['password']}",
                     at=(world.now - timedelta(minutes=3)).isoformat(timespec="minutes"))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        if p["variant"] in ("vision_receipt", "vision_wifi"):
            files = world.table("files").rows.values()
            new, old = ("receipt_new.jpg", "receipt_old.jpg") if p["variant"] == "vision_receipt" else \
                ("wifi_card.jpg", "wifi_old.jpg")
            return {"file_id": next(r["id"] for r in files if r["name"] == new),
                    "old_file_id": next((r["id"] for r in files if r["name"] == old), "f-0001")}
        if p["variant"] == "automation_later":
            return {"person_id": next(r["id"] for r in world.table("contacts").rows.values()
                                      if [r["first_name"], r["last_name"]] == p["person"])}
        return {}

    def _inputs(self, task: TaskSpec) -> tuple[str, dict[str, Any]]:
        p = task.private_params
        return {
            "gui_setting": lambda: ("gui", {"app": p["app"], "setting": p["setting"], "value": p["value"]}),
            "vision_receipt": lambda: ("vision", {"file_id": p["file_id"]}),
            "vision_wifi": lambda: ("vision", {"file_id": p["file_id"]}),
            "automation_later": lambda: ("automation", {"at": p["at"], "tool": "messages_send", "arguments": {
                "contact_id": p["person_id"], "text": p["text"]}}),
            "qa_known": lambda: ("qa", {"question": p["question"]}),
            "qa_unknown": lambda: ("qa", {"question": p["question"]}),
        }[p["variant"]]()

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        agent, inputs = self._inputs(task)
        start = call("start_subagent", agent=agent, instruction=task.instruction, inputs=inputs)
        run = call("run_subagent", session_id="sa-0001")
        if p["variant"] == "gui_setting":
            if "said_app" in p:  # tried with the user's name for the app; the hint names the GUI agent's
                said = call("start_subagent", agent=agent, instruction=task.instruction,
                            inputs={**inputs, "app": p["said_app"]})
                start.arguments["instruction"] = f"Set {p['app']} {p['setting'].replace('_', ' ')} to {p['value']}."
                return [said, run, start, call("run_subagent", session_id="sa-0002"),
                        finish(summary=f"{q['app']} {q['setting']} set to {q['value']}.")]
            return [start, run, finish(summary=f"{q['app']} {q['setting']} set to {q['value']}.")]
        if p["variant"] == "vision_receipt":
            return [call("files_list", kind="photo"), start, run,
                    call("expenses_add", amount=p["total"], category="dining", note=p["merchant"].title()),
                    finish(summary=f"Logged {p['total']:.2f}.")]
        if p["variant"] == "vision_wifi":
            return [call("files_list", kind="photo"), start, run,
                    call("notes_create", title="Cafe Wi-Fi", body=f"Password: {p['password']}"),
                    finish(summary="The Wi-Fi password is in a note.")]
        if p["variant"] == "automation_later":
            return [call("contacts_search", query=q["name"]), start, run,
                    finish(summary=f"{q['name']} will get the text at {q['at']}.")]
        if p["variant"] == "qa_known":
            return [start, run, finish(answer=p["answer"], summary=f"The help desk says: {p['answer']}.")]
        return [start, run, finish(status="infeasible", summary="The help desk does not know; I won't guess.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        agent, inputs = self._inputs(task)
        prereq = {"vision_receipt": "files_list", "vision_wifi": "files_list",
                  "automation_later": "contacts_search"}.get(p["variant"])
        handoff = {"agent": agent, "inputs": inputs if agent != "automation" else
                   {"tool": "messages_send", "arguments": inputs["arguments"]},
                   **({"after": prereq} if prereq else {}),
                   **({"run_ok": False} if p["variant"] == "qa_unknown" else {})}
        reqs = [Requirement(id="handoff", kind="handoff", weight=2.0, dimension="subagents", params=handoff,
                            description=f"the {agent} agent got the exact inputs and was run")]
        # exact inputs the first time (a second time after the seeded failure)
        sessions = {"table": "agent_sessions", "ops": ["added"], "max": 2 if "said_app" in p else 1}
        if p["variant"] == "gui_setting":
            reqs.append(Requirement(id="setting_changed", kind="state_diff", params={
                "table": "ui_settings",
                "updated": [{"key": f"{p['app']}.{p['setting']}", "fields": {"value": p["value"]}}]},
                description="the setting has the new value"))
            allow = [sessions, {"table": "ui_settings", "keys": [f"{p['app']}.{p['setting']}"]}]
        elif p["variant"] == "vision_receipt":
            reqs.append(Requirement(id="logged", kind="state_diff", weight=1.5, params={
                "table": "transactions", "added": [{"amount": -p["total"], "category": "dining"}]},
                description="the receipt's total is logged"))
            allow = [sessions, {"table": "transactions", "ops": ["added"], "max": 1}]
            reqs.append(Requirement(id="read_then_logged", kind="partial_order", dimension="subagents", params={
                "before": [[{"tool": "run_subagent"}, {"tool": "expenses_add"}]]},
                description="the total was read by the vision agent before it was logged"))
        elif p["variant"] == "vision_wifi":
            reqs.append(Requirement(id="noted", kind="state_diff", weight=1.5, params={
                "table": "notes", "field_match": {"body": "contains"}, "added": [{"body": p["password"]}]},
                description="the password read off the newest photo is in a note"))
            allow = [sessions, {"table": "notes", "ops": ["added"], "max": 1}]
            reqs.append(Requirement(id="read_then_noted", kind="partial_order", dimension="subagents", params={
                "before": [[{"tool": "run_subagent"}, {"tool": "notes_create"}]]},
                description="the photo was read by the vision agent before the note was written"))
        elif p["variant"] == "automation_later":
            at = task_day_time(p["at"])
            reqs.append(Requirement(id="scheduled", kind="state_diff", params={"table": "automations", "added": [
                {"at": at, "tool": "messages_send", "status": "scheduled"}]}, description="the text is scheduled"))
            allow = [sessions, {"table": "automations", "ops": ["added"], "max": 1}]
        elif p["variant"] == "qa_known":
            reqs.append(Requirement(id="answered", kind="answer", params={"expected": p["answer"]},
                                    description="the help desk's answer, as given"))
            allow = [sessions]
        else:
            reqs += [Requirement(id="no_fabrication", kind="no_fabrication", dimension="subagents", noop_passes=True,
                                 params={}, description="said it is unknown rather than inventing an answer"),
                     Requirement(id="reported_unknown", kind="finish_status", params={"status": ["infeasible",
                                                                                                  "needs_user"]},
                                 description="finished as infeasible (or back to the user)")]
            allow = [sessions]
        reqs.append(Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={"allow": allow},
                                description="nothing else changed"))
        return reqs

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        start = [a for a in out if a.tool == "start_subagent"][-1]  # the session that counts (after a seeded failure)
        inputs = start.arguments["inputs"]
        if p["variant"] == "gui_setting":
            inputs["value"] = next(o for o in p["options"] if o != p["value"])
        elif p["variant"] == "vision_receipt":
            inputs["file_id"] = p["old_file_id"]  # the older receipt
            out[-2].arguments["amount"] = p["older"]
        elif p["variant"] == "vision_wifi":
            inputs["file_id"] = p["old_file_id"]  # last week's card
            out[-2].arguments["body"] = f"Password: {p['older_password']}"
        elif p["variant"] == "automation_later":
            inputs["arguments"] = {**inputs["arguments"], "contact_id": "c-0001" if p["person_id"] != "c-0001"
                                   else "c-0002"}
        elif p["variant"] == "qa_known":
            inputs["question"] = "What about the pool opening hours?"
            out[-1].arguments.update(answer=p["answer"])
        else:  # the fabricated answer
            out[-1].arguments.update(status="completed", answer=rng.choice([a for _, a in KB]))
        return out


def task_day_time(hhmm: str) -> str:
    """The ISO minute of ``hh:mm`` on the task's first day (the automation agent's reading of a clock time)."""
    return DEFAULT_START.replace(hour=int(hhmm[:2]), minute=int(hhmm[3:])).isoformat(timespec="minutes")
