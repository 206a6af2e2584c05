"""F04: recover from a missing prerequisite or a typed error.

The instruction never names the obstacle: airplane mode still on after a flight, a
permission that was never granted, a folder that does not exist, a service that
times out once. The reference tries, reads the typed error, fixes the cause and
retries, as a careful person would.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.families import f04_apps, noise
from generators.phone.families.base import Family, call, finish
from generators.phone.families.mutants import with_wrong_argument_in_last_write
from generators.phone.timeparse import WEEKDAYS, resolve_date
from generators.phone.world import DEFAULT_START, World
from warehouse.contract import Action, Requirement, TaskSpec

NOISE = {1: 6, 2: 12, 3: 20}
GOAL = {"offline_text": "messages_send", "event_permission": "calendar_create_event", "missing_folder": "notes_create"}


class RecoverPrerequisite(Family):
    """Do one thing whose prerequisite is missing; fix exactly that, then do it."""

    id = "F04"
    title = "recover from a missing prerequisite or a typed error"
    tags = ("recovery",)
    templates = tuple(f"{v}.{w}" for v in GOAL for w in ("direct", "casual", "terse"))
    tools = ("contacts_search", "messages_send", "messages_list", "device_get_settings", "device_check_connectivity",
             "device_set_airplane_mode", "device_set_wifi", "device_grant_permission", "calendar_list_events",
             "calendar_create_event", "notes_list_folders", "notes_create_folder", "notes_create", "notes_search",
             "todos_create")
    splits = {"offline_text": "train", "event_permission": "train", "cancel_or_return": "train",
              "missing_folder": "dev", "call_back": "test", "photo_text": "challenge"}
    apart = f04_apps.VARIANTS  # the variants that put other apps to work
    knobs = {"faults": "1 missing prerequisite; 2: plus a one-off TIMEOUT; "
                       "3: plus a second prerequisite for texts", "noise": "rows 6/12/20"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        private: dict[str, Any] = {"variant": variant, "user_facts": {}, "faults": []}
        if levels["faults"] >= 2:
            # for notes the folder service times out: a timeout on the note itself would hide a wrong order
            flaky = "notes_create_folder" if variant == "missing_folder" else GOAL[variant]
            private["faults"].append({"tool": flaky, "code": "TIMEOUT", "times": 1})
        if variant == "offline_text":
            first, last = rng.choice(seeddata.FIRST_NAMES), rng.choice(seeddata.LAST_NAMES)
            private["device_settings"] = {"airplane_mode": True, "wifi": False, "bluetooth": False}
            private["denied_permissions"] = ["sms"] if levels["faults"] >= 3 else []
            return {"name": f"{first} {last}", "text": rng.choice(seeddata.REQUESTS)}, private
        if variant == "event_permission":
            offset = rng.randint(1, 6)
            day = (DEFAULT_START.weekday() + offset) % 7
            private.update(denied_permissions=["calendar"], day_arg="tomorrow" if offset == 1 else WEEKDAYS[day])
            slot = rng.randrange(16, 36)
            return {"title": rng.choice(seeddata.EVENT_TITLES), "start": f"{slot // 2:02d}:{30 * (slot % 2):02d}",
                    "day_phrase": "tomorrow" if offset == 1 else f"on {WEEKDAYS[day].capitalize()}"}, private
        body = f"{rng.choice(seeddata.MESSAGE_TEXTS)} Ref {rng.randint(1000, 9999)}"
        return {"title": rng.choice(seeddata.NOTE_TITLES), "folder": rng.choice(seeddata.NOTE_FOLDERS),
                "body": body}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p, n = task.private_params, NOISE[self.level(task, "noise")]
        name = task.public_params.get("name", "")
        taken = {tuple(name.split(" ", 1))} if name else set()
        ids = noise.contacts(world, rng, n, taken)
        if p["variant"] == "offline_text":
            first, last = name.split(" ", 1)
            ids.append(add_contact(world, first, last, phone=seeddata.phone_number(rng))["id"])
        noise.messages(world, rng, ids, n)
        noise.events(world, rng, n)
        for folder in rng.sample([f for f in seeddata.NOTE_FOLDERS if f != task.public_params.get("folder")], 2):
            world.table("folders").insert({"name": folder})
        noise.notes(world, rng, n // 2)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        if task.private_params["variant"] != "offline_text":
            return {}
        first, last = task.public_params["name"].split(" ", 1)
        rows = world.table("contacts").rows.values()
        return {"target_id": next(r["id"] for r in rows if (r["first_name"], r["last_name"]) == (first, last))}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        retry = 2 if task.faults else 1  # a one-off TIMEOUT means the same call once more
        if p["variant"] == "offline_text":
            send = call("messages_send", contact_id=p["target_id"], text=q["text"])
            fixes = [call("device_grant_permission", permission="sms")] if p["denied_permissions"] else []
            fixes.append(call("device_set_airplane_mode", enabled=False))
            steps = [call("contacts_search", query=q["name"]), send]
            for fix in fixes:  # each failed send names the next missing piece
                steps += [fix, send]
            return steps + [send] * (retry - 1) + [finish(summary=f"Sent your message to {q['name']}.")]
        if p["variant"] == "event_permission":
            create = call("calendar_create_event", title=q["title"], date=p["day_arg"], start=q["start"])
            return [create, call("device_grant_permission", permission="calendar")] + [create] * retry + [
                finish(summary=f"Added {q['title']}.")]
        create = call("notes_create", title=q["title"], body=q["body"], folder=q["folder"])
        return [create] + [call("notes_create_folder", name=q["folder"])] * retry + [create] + [
            finish(summary=f"Saved the note in {q['folder']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "offline_text":
            goal = {"table": "messages", "added": [{"contact_id": p["target_id"], "text": q["text"],
                                                    "direction": "out"}], "field_match": {"text": "fuzzy"}}
            fixes = [("back_online", {"table": "device", "match": "exact",
                                      "updated": [{"key": "airplane_mode", "fields": {"value": False}}]})]
            allow = [{"table": "messages", "ops": ["added"], "max": 1},
                     {"table": "device", "keys": ["airplane_mode"]}]
            if p["denied_permissions"]:
                fixes.append(("sms_granted", _granted("sms")))
                allow.append({"table": "permissions", "keys": ["sms"]})
        elif p["variant"] == "event_permission":
            day = resolve_date(p["day_arg"], DEFAULT_START).isoformat()
            goal = {"table": "events", "added": [{"title": q["title"], "date": day, "start": q["start"]}],
                    "field_match": {"title": "fuzzy"}}
            fixes = [("calendar_granted", _granted("calendar"))]
            allow = [{"table": "events", "ops": ["added"], "max": 1}, {"table": "permissions", "keys": ["calendar"]}]
        else:
            goal = {"table": "notes", "added": [{"title": q["title"], "body": q["body"], "folder": q["folder"]}]}
            fixes = [("folder_created", {"table": "folders", "added": [{"name": q["folder"]}]})]
            allow = [{"table": "notes", "ops": ["added"], "max": 1}, {"table": "folders", "ops": ["added"], "max": 1}]
        reqs = [Requirement(id="goal_done", kind="state_diff", description="the thing asked for is done", weight=2.0,
                            params=goal)]
        reqs += [Requirement(id=rid, kind="state_diff", description=f"prerequisite fixed: {rid}", params=prm)
                 for rid, prm in fixes]
        reqs.append(Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                                description="only the prerequisite and the goal changed", params={"allow": allow}))
        return reqs

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the fix is rarely where agents slip; the final write (with the user's content) is
        # a valid but wrong value (an hour off), not one the tool would refuse
        return with_wrong_argument_in_last_write(task, actions, rng, prefer=("start",))


def _granted(permission: str) -> dict[str, Any]:
    return {"table": "permissions", "match": "exact",
            "updated": [{"key": permission, "fields": {"granted": True}}]}
