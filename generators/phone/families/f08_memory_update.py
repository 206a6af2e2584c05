"""F08: change memory the right way: correct in place, supersede, forget, and sync downstream.

A correction ("you have it wrong") is fixed in place; a change of habit ("I switched
to ...") supersedes the old record so its history stays; "forget" tombstones it; a
changed routine must also change what depends on it (the alarm set from it). The
friend's record under the same key must stay as it is.
"""

from __future__ import annotations

import random
from typing import Any

from generators.phone import seeddata
from generators.phone.apps.calendar import add_alarm, add_event
from generators.phone.families.base import Family, call, finish
from generators.phone.families.memory_seed import plant
from generators.phone.world import World
from warehouse.contract import Action, Requirement, TaskSpec

VARIANTS = ("correct_in_place", "switch_habit", "sync_alarm", "forget", "sync_event", "forget_alarm", "sync_school_run")
TIMES = ["06:15", "06:30", "06:45", "07:00", "07:15", "05:45"]
SPEC = {  # variant -> (memory type, key, values, similar key)
    "correct_in_place": ("profile", "shoe size", ["41", "42", "43", "44", "45", "39"], "shirt size"),
    "switch_habit": ("preference", "milk in coffee", ["oat", "soy", "almond", "whole", "none", "lactose-free"],
                     "milk for cereal"),
    "sync_alarm": ("routine", "weekday wake-up time", TIMES, "weekend wake-up time"),
    "forget": ("routine", "gym days", ["Monday and Wednesday", "Tuesday and Thursday", "weekends", "Friday",
                                       "every day", "Monday"], "gym membership"),
    "sync_event": ("routine", "team call time", ["09:30", "10:00", "10:30", "11:00", "14:00", "15:30"],
                   "client call time"),
    "forget_alarm": ("routine", "medication time", ["08:00", "08:30", "12:00", "13:00", "20:00", "21:30"],
                     "vitamin time"),
    "sync_school_run": ("routine", "school run time", ["07:40", "07:45", "08:00", "08:10", "08:15", "08:25"],
                        "school pickup time"),
}
# what follows memory: the row's id among the facts, and the alarm's label (the one alarm moved or deleted)
SYNCED = {"sync_alarm": "alarm_id", "sync_event": "event_id", "forget_alarm": "alarm_id", "sync_school_run": "alarm_id"}
ALARMS = {"sync_alarm": ("Wake up", "Pills"), "forget_alarm": ("Medication", "Water the plants"),
          "sync_school_run": ("School run", "Gym")}  # variant -> (its alarm, one the user keeps)


def _half_hour_later(hhmm: str) -> str:
    minutes = int(hhmm[:2]) * 60 + int(hhmm[3:]) + 30
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


class MemoryUpdate(Family):
    """Correct, supersede, forget or sync a remembered fact, touching nothing else."""

    id = "F08"
    title = "update memory in place; supersede; sync downstream"
    capability = "memory"
    tags = ("memory_write",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"correct_in_place": "train", "switch_habit": "train", "sync_event": "train", "sync_school_run": "train",
              "sync_alarm": "dev",
              "forget": "test", "forget_alarm": "challenge"}
    tools = ("memory_search", "memory_get", "memory_add", "memory_update", "memory_delete", "memory_list_intents",
             "alarms_list", "alarms_update", "alarms_create", "alarms_delete", "calendar_list_events",
             "calendar_update_event")
    knobs = {"distractors": "1: a friend's record under the same key; 2: + the user's superseded value; "
                            "3: + a similar key"}
    revision = 1  # 1: a second train variant (a seed draws from seven variants, not six)

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        mtype, key, values, similar = SPEC[variant]
        value, new, old, other_value, similar_value = rng.sample(values, 5)
        other = rng.choice(seeddata.FIRST_NAMES)
        private = {"variant": variant, "type": mtype, "key": key, "value": value, "new_value": new,
                   "old_value": old, "other": other, "other_value": other_value, "similar_key": similar,
                   "similar_value": similar_value, "user_facts": {}}
        return {"new_value": new}, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        plant(world, rng, type=p["type"], key=p["key"], value=p["value"], old_value=p["old_value"], other=p["other"],
              other_value=p["other_value"], similar_key=p["similar_key"], similar_value=p["similar_value"],
              level=self.level(task, "distractors"))
        if p["variant"] in ALARMS:  # the alarm set from the routine, and one the user keeps
            mine, kept = ALARMS[p["variant"]]
            add_alarm(world, p["value"], mine)
            add_alarm(world, p["other_value"], kept)
        if p["variant"] == "sync_event":  # next Monday's call and another meeting
            add_event(world, "Team call", "2026-03-09", p["value"], _half_hour_later(p["value"]))
            add_event(world, "Client call", "2026-03-10", p["similar_value"], _half_hour_later(p["similar_value"]))

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        rows = world.table("memories").rows.values()
        target = next(r["id"] for r in rows if r["key"] == p["key"] and r["subject"] == "user"
                      and r["status"] == "active")
        out = {"memory_id": target}
        if p["variant"] in ALARMS:
            label = ALARMS[p["variant"]][0]
            out["alarm_id"] = next(r["id"] for r in world.table("alarms").rows.values() if r["label"] == label)
        if p["variant"] == "sync_event":
            out["event_id"] = next(r["id"] for r in world.table("events").rows.values() if r["title"] == "Team call")
        return out

    def solve(self, task: TaskSpec) -> list[Action]:
        p = task.private_params
        look = call("memory_search", query=p["key"])
        if p["variant"] == "correct_in_place":
            return [look, call("memory_update", memory_id=p["memory_id"], value=p["new_value"]),
                    finish(summary=f"Corrected: {p['key']} is {p['new_value']}.")]
        if p["variant"] == "switch_habit":
            return [look, call("memory_update", memory_id=p["memory_id"], value=p["new_value"], keep_history=True),
                    finish(summary=f"Noted the switch to {p['new_value']}.")]
        if p["variant"] == "forget":
            return [look, call("memory_delete", memory_id=p["memory_id"]), finish(summary="Forgotten.")]
        if p["variant"] == "forget_alarm":
            return [look, call("memory_delete", memory_id=p["memory_id"]), call("alarms_list"),
                    call("alarms_delete", alarm_id=p["alarm_id"]), finish(summary="Forgotten, and the alarm is gone.")]
        if p["variant"] == "sync_event":
            return [look, call("memory_update", memory_id=p["memory_id"], value=p["new_value"], keep_history=True),
                    call("calendar_list_events", query="Team call"),
                    call("calendar_update_event", event_id=p["event_id"], start=p["new_value"]),
                    finish(summary=f"Team call moved to {p['new_value']}, in memory and in the calendar.")]
        what = "School run" if p["variant"] == "sync_school_run" else "Wake-up time"
        return [look, call("memory_update", memory_id=p["memory_id"], value=p["new_value"], keep_history=True),
                call("alarms_list"), call("alarms_update", alarm_id=p["alarm_id"], time=p["new_value"]),
                finish(summary=f"{what} and its alarm moved to {p['new_value']}.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p = task.private_params
        new = {"value": p["new_value"], "key": p["key"]}
        diff: dict[str, Any] = {
            "correct_in_place": {"updated": [{"id": p["memory_id"], "fields": {"value": p["new_value"]}}]},
            "switch_habit": {"superseded": [{"id": p["memory_id"], "fields": new}]},
            "sync_alarm": {"superseded": [{"id": p["memory_id"], "fields": new}]},
            "sync_school_run": {"superseded": [{"id": p["memory_id"], "fields": new}]},
            "sync_event": {"superseded": [{"id": p["memory_id"], "fields": new}]},
            "forget": {"deleted": [p["memory_id"]]},
            "forget_alarm": {"deleted": [p["memory_id"]]},
        }[p["variant"]]
        reqs = [Requirement(id="memory_changed", kind="memory_diff", weight=2.0, dimension="memory", params=diff,
                            description="memory changed exactly as asked (in place, superseded or deleted)")]
        allow = [{"table": "memories"}]
        alarm_moved = ("alarms", "alarms_update", {"updated": [{"key": p.get("alarm_id"), "fields": {"time": p["new_value"]}}]})
        synced = {  # variant -> (table, the write that follows memory, what it changes)
            "sync_alarm": alarm_moved,
            "sync_school_run": alarm_moved,
            "sync_event": ("events", "calendar_update_event", {"updated": [{"key": p.get("event_id"),
                                                                            "fields": {"start": p["new_value"]}}]}),
            "forget_alarm": ("alarms", "alarms_delete", {"removed": [p.get("alarm_id")]}),
        }.get(p["variant"])
        if synced:
            table, tool, change = synced
            reqs.append(Requirement(id="downstream_synced", kind="state_diff", weight=1.5, params={
                "table": table, **change}, description="what was set from the routine followed it"))
            allow.append({"table": table, "keys": [p[SYNCED[p["variant"]]]],
                          "ops": ["removed" if "removed" in change else "updated"]})
            reqs.append(Requirement(id="memory_first", kind="partial_order", dimension="memory", params={
                "before": [[{"tool": "memory_delete" if "forget" in p["variant"] else "memory_update"},
                            {"tool": tool}]]},
                description="memory, the source of truth, changed first; then what follows from it"))
        reqs.append(Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True, params={"allow": allow},
                                description="nothing but the record (and its alarm) changed"))
        return reqs

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the realistic slip: the friend's record under the same key is the one changed
        out = [a.model_copy(deep=True) for a in actions]
        out[1].arguments["memory_id"] = self._other_id(task)
        return out

    def _other_id(self, task: TaskSpec) -> str:
        world = self.build_world(task)
        p = task.private_params
        return next(r["id"] for r in world.table("memories").rows.values() if r["subject"] == p["other"])
