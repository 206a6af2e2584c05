"""F07: act on what memory says ("my usual order", "the usual time").

The instruction names a habit, never its value: the value lives in memory, among a
friend's record under the same key, the user's own superseded value and a similar key.
The agent must search memory, pick the user's active record, and act with its value.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from warehouse.contract import Action, Requirement, TaskSpec

from generators.phone import seeddata
from generators.phone.apps.contacts import add_contact
from generators.phone.families import noise
from generators.phone.families.base import Family, call, finish
from generators.phone.families.memory_seed import plant
from generators.phone.world import DEFAULT_START, World

NOISE = {1: 4, 2: 8, 3: 14}
VARIANTS = ("usual_coffee", "usual_alarm", "usual_restaurant")
COFFEES = ["oat flat white", "double espresso", "iced latte", "cortado", "chai latte", "mocha with soy"]
TIMES = ["06:15", "06:45", "07:00", "07:20", "05:50", "07:40"]
RESTAURANTS = ["Noodle Bar", "Cafe Rio", "Trattoria Sole", "Green Curry House", "Taqueria Luna", "Sushi Go"]
SPEC = {  # variant -> (memory type, key, values, the similar key)
    "usual_coffee": ("preference", "coffee order", COFFEES, "coffee beans"),
    "usual_alarm": ("routine", "weekday wake-up time", TIMES, "weekend wake-up time"),
    "usual_restaurant": ("preference", "favourite restaurant", RESTAURANTS, "favourite takeaway"),
}


class MemoryAct(Family):
    """Look a habit up in memory, pick the user's current value, act with it."""

    id = "F07"
    title = "act on what memory says"
    capability = "memory"
    tags = ("memory_recall",)
    templates = tuple(f"{v}.{w}" for v in VARIANTS for w in ("direct", "casual", "terse"))
    splits = {"usual_coffee": "train", "usual_alarm": "train", "usual_restaurant": "dev"}
    tools = ("memory_search", "memory_get", "memory_add", "memory_update", "contacts_search", "messages_send",
             "alarms_create", "alarms_list", "calendar_create_event", "calendar_list_events")
    knobs = {"distractors": "1: a friend's record under the same key; 2: + the user's superseded value; "
                            "3: + a similar key", "noise": "rows 4/8/14"}

    def sample_params(self, rng: random.Random, variant: str, levels: dict[str, int]) -> tuple[dict, dict]:
        mtype, key, values, similar = SPEC[variant]
        value, old, other_value, similar_value = rng.sample(values, 4)
        (f, la), other = rng.choice([(f, la) for f in seeddata.FIRST_NAMES for la in seeddata.LAST_NAMES[:8]]), \
            rng.choice(seeddata.FIRST_NAMES)
        while other == f:
            other = rng.choice(seeddata.FIRST_NAMES)
        day = (DEFAULT_START.date() + timedelta(days=rng.randint(1, 6))).isoformat()
        private = {"variant": variant, "type": mtype, "key": key, "value": value, "old_value": old,
                   "other": other, "other_value": other_value, "similar_key": similar, "similar_value": similar_value,
                   "friend": [f, la], "day": day, "user_facts": {}}
        public = {"friend": f"{f} {la}", "day": day, "time": rng.choice(["19:00", "19:30", "20:00"])}
        return public, private

    def populate(self, world: World, rng: random.Random, task: TaskSpec) -> None:
        p = task.private_params
        plant(world, rng, type=p["type"], key=p["key"], value=p["value"], old_value=p["old_value"], other=p["other"],
              other_value=p["other_value"], similar_key=p["similar_key"], similar_value=p["similar_value"],
              level=self.level(task, "distractors"))
        ids = noise.contacts(world, rng, NOISE[self.level(task, "noise")], {tuple(p["friend"])})
        add_contact(world, *p["friend"], phone=seeddata.phone_number(rng))
        noise.messages(world, rng, ids, NOISE[self.level(task, "noise")])
        noise.events(world, rng, NOISE[self.level(task, "noise")] // 2)

    def facts(self, task: TaskSpec, world: World) -> dict[str, Any]:
        p = task.private_params
        rows = world.table("contacts").rows.values()
        return {"friend_id": next(r["id"] for r in rows if [r["first_name"], r["last_name"]] == p["friend"])}

    def solve(self, task: TaskSpec) -> list[Action]:
        p, q = task.private_params, task.public_params
        recall = call("memory_search", query=p["key"])
        if p["variant"] == "usual_coffee":
            return [recall, call("contacts_search", query=q["friend"]),
                    call("messages_send", contact_id=p["friend_id"], text=f"My usual coffee order: {p['value']}"),
                    finish(summary=f"Texted {q['friend']} the usual order.")]
        if p["variant"] == "usual_alarm":
            return [recall, call("alarms_create", time=p["value"], label="Wake up"),
                    finish(summary=f"Alarm set for {p['value']}.")]
        return [recall, call("calendar_create_event", title=f"Dinner at {p['value']}", date=q["day"], start=q["time"],
                             location=p["value"]),
                finish(summary=f"Dinner at {p['value']} is in the calendar.")]

    def requirements(self, task: TaskSpec, changes: list[dict[str, Any]]) -> list[Requirement]:
        p, q = task.private_params, task.public_params
        if p["variant"] == "usual_coffee":
            goal = {"table": "messages", "field_match": {"text": "contains"},
                    "added": [{"contact_id": p["friend_id"], "text": p["value"]}]}
        elif p["variant"] == "usual_alarm":
            goal = {"table": "alarms", "added": [{"time": p["value"]}]}
        else:
            goal = {"table": "events", "added": [{"date": q["day"], "start": q["time"], "location": p["value"]}]}
        return [
            Requirement(id="acted_on_memory", kind="state_diff", weight=2.0, dimension="memory", params=goal,
                        description="acted with the user's current remembered value"),
            Requirement(id="looked_in_memory", kind="called", dimension="memory", params={"tool": "memory_search"},
                        description="searched memory rather than guessing"),
            Requirement(id="no_collateral", kind="allowed_changes", noop_passes=True,
                        description="one row added, memory unchanged",
                        params={"allow": [{"table": goal["table"], "ops": ["added"], "max": 1}]}),
        ]

    def wrong_argument(self, task: TaskSpec, actions: list[Action], rng: random.Random) -> list[Action]:
        # the slips memory invites: the superseded value, or the friend's value under the same key
        p, out = task.private_params, [a.model_copy(deep=True) for a in actions]
        wrong = p["old_value"] if self.level(task, "distractors") >= 2 and rng.random() < 0.5 else p["other_value"]
        for k, v in out[-2].arguments.items():
            if isinstance(v, str) and p["value"] in v:
                out[-2].arguments[k] = v.replace(p["value"], wrong)
        return out
